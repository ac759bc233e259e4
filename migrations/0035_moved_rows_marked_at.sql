-- D1 shards (docs/scale.md, "D1 shards"): when each `moved_rows` mark was
-- written (ms), so the mover's cron deletes marks older than a day (a move
-- retries only until it has deleted its source, within minutes). The marks
-- already there count from this migration: they stay a day more.
ALTER TABLE moved_rows ADD COLUMN marked_at INTEGER NOT NULL DEFAULT 0;
UPDATE moved_rows SET marked_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000;
-- The prune reads only the marks it deletes.
CREATE INDEX IF NOT EXISTS moved_rows_marked_at ON moved_rows (marked_at);
