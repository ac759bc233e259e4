-- The dashboard's index of conversations, kept by each conversation's channel
-- object (at most one write a second per conversation, off the webhook's path).
CREATE TABLE IF NOT EXISTS conversations (
    conversation_key TEXT PRIMARY KEY,
    platform TEXT NOT NULL,
    title TEXT,
    last_activity_at INTEGER NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0,
    engaged_count INTEGER NOT NULL DEFAULT 0,
    observed_count INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS conversations_by_activity ON conversations (last_activity_at DESC);

-- Conversations from before the index: what their history knows.
INSERT OR IGNORE INTO conversations
    (conversation_key, platform, title, last_activity_at, message_count, engaged_count, observed_count, updated_at)
SELECT conversation_key, substr(conversation_key, 1, instr(conversation_key, ':') - 1), NULL, max(created_at),
       sum(role = 'user'), 0, 0, max(created_at)
FROM messages GROUP BY conversation_key;
