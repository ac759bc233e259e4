-- Conversation history: every inbound message a turn took up and every reply sent.
-- `id` is an idempotency key, so re-running a turn never stores a message twice.
CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY,
    conversation_key TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    author_id TEXT NOT NULL,
    author_name TEXT NOT NULL,
    content TEXT NOT NULL,
    platform_message_id TEXT,
    created_at INTEGER NOT NULL
);

CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages (conversation_key, created_at);
