-- Files (docs/files.md): every file a person sent that was
-- kept, by conversation. The bytes live in R2 (the FILES bucket) at `r2_key`;
-- this row is what tools list and open, always within one conversation.

CREATE TABLE IF NOT EXISTS files (
    -- 'f' and 16 hex digits: the hash of the conversation and the platform's file id.
    id TEXT PRIMARY KEY,
    conversation_key TEXT NOT NULL,
    -- The platform's id for the file (one file is kept once per conversation).
    platform_file_id TEXT NOT NULL,
    -- The name it was sent with (made safe), and what its bytes say it is.
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    r2_key TEXT NOT NULL,
    -- A voice note's transcript, a document's text (converted once, when first read).
    text TEXT,
    -- The message it came with.
    message_id TEXT NOT NULL DEFAULT '',
    -- UTC day (YYYY-MM-DD) it was kept, for the per-day caps.
    day TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE INDEX IF NOT EXISTS files_by_conversation ON files (conversation_key, created_at);
CREATE INDEX IF NOT EXISTS files_by_conversation_day ON files (conversation_key, day);
