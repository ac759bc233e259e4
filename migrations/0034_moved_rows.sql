-- D1 shards (docs/scale.md, "D1 shards"): the rows a move to a conversation's
-- shard added to sums already there (`usage`, `spend_daily`), so a move sent
-- again after a failure adds nothing twice. One row per moved row, in the shard
-- it was added to; `source` is the binding it came from.
CREATE TABLE IF NOT EXISTS moved_rows (
    source TEXT NOT NULL,
    row_key TEXT NOT NULL,
    PRIMARY KEY (source, row_key)
) WITHOUT ROWID;
