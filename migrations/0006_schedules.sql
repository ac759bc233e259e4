-- Scheduled jobs: reminders and recurring work, each owned by one conversation
-- (its channel object's alarm fires them); and every run with what became of it.
CREATE TABLE IF NOT EXISTS schedules (
    id TEXT PRIMARY KEY,
    conversation_key TEXT NOT NULL,
    -- Where a run's answer goes: the conversation's reply address (JSON).
    reply_address TEXT NOT NULL,
    prompt TEXT NOT NULL,
    -- The plan (JSON): recurrence, zone, active hours, end, run cap.
    plan TEXT NOT NULL,
    -- active, paused, disabled (3 failed runs in a row)
    status TEXT NOT NULL DEFAULT 'active',
    next_run_at INTEGER,
    runs_done INTEGER NOT NULL DEFAULT 0,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    last_run_at INTEGER
);

CREATE INDEX IF NOT EXISTS schedules_due ON schedules (status, next_run_at);
CREATE INDEX IF NOT EXISTS schedules_by_conversation ON schedules (conversation_key);

-- One row per run; (schedule_id, due_at) is unique, so a run is claimed once.
CREATE TABLE IF NOT EXISTS schedule_runs (
    schedule_id TEXT NOT NULL,
    due_at INTEGER NOT NULL,
    claimed_at INTEGER NOT NULL,
    finished_at INTEGER,
    -- claimed, delivered, nothing (the run answered nothing), failed
    status TEXT NOT NULL,
    missed INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    PRIMARY KEY (schedule_id, due_at)
);
