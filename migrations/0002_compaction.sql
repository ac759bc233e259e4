-- Compaction: summaries stack at the top of a conversation's history; the
-- messages they replace stay here as the archive, flagged `compacted`
-- (1 = summarised, 2 = dropped by an emergency cut).
ALTER TABLE messages ADD COLUMN compacted INTEGER NOT NULL DEFAULT 0;

CREATE TABLE IF NOT EXISTS summaries (
    id TEXT PRIMARY KEY,
    conversation_key TEXT NOT NULL,
    content TEXT NOT NULL,
    covers INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE INDEX IF NOT EXISTS summaries_by_conversation ON summaries (conversation_key, created_at);
