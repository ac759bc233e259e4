-- What GET /api/status reports about things that happen elsewhere: the last
-- cron tick and the last dead-letter event (JSON, by key), and the unsent
-- outbox pieces of each conversation (outboxes live in the channel objects,
-- which write their count here only when it changes; a row of 0 is removed).
CREATE TABLE IF NOT EXISTS status_events (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS pending_sends (
    conversation_key TEXT PRIMARY KEY,
    pending INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
