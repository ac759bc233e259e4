-- What a worker may reach. Containment (src/process/containment.rs): a worker that has read the
-- conversation's private material sends to a host the conversation has not
-- used only after a person's yes.
-- Why a call waits, when containment (not the tool's own rule) asks.
ALTER TABLE approvals ADD COLUMN why TEXT;
-- The hosts each conversation has used: fetched by its workers, or allowed by a person.
CREATE TABLE IF NOT EXISTS conversation_hosts (
  conversation_key TEXT NOT NULL,
  host TEXT NOT NULL,
  first_used_at INTEGER NOT NULL,
  PRIMARY KEY (conversation_key, host)
);

-- Runs of the metered tools (src/budget/metered.rs: run_code, browse) per
-- UTC day, conversation and worker: each is capped per worker and per
-- conversation per day.
CREATE TABLE IF NOT EXISTS tool_runs (
  day TEXT NOT NULL,
  conversation_key TEXT NOT NULL,
  worker_id TEXT NOT NULL,
  tool TEXT NOT NULL,
  runs INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (day, conversation_key, worker_id, tool)
);
CREATE INDEX IF NOT EXISTS tool_runs_by_worker ON tool_runs (worker_id, tool);
