-- When the conversation's oldest acknowledged inbound still without an outcome
-- (answered, observed, apologised, skipped) arrived; NULL when none waits.
-- Written with the index by the channel object; the cron's sweeper wakes
-- conversations whose wait passed its bound (src/edge/sweep.rs).
ALTER TABLE conversations ADD COLUMN awaiting_since INTEGER;
CREATE INDEX IF NOT EXISTS conversations_awaiting ON conversations (awaiting_since) WHERE awaiting_since IS NOT NULL;
