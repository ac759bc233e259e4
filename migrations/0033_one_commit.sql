-- One D1 commit per engaged turn, no hot spend row (issue 37; docs/scale.md,
-- "One commit per turn").

-- The conversation index row is each channel object's commit marker: every
-- commit (src/budget/usage.rs `unsent_statement`, durable_objects/channel_object/commit.rs)
-- adds the spend its object held only where the spend's sequence number is
-- above this mark, and sets the mark last, in the same batch (a D1 batch is
-- one transaction). A commit sent again after a crash adds nothing twice.
ALTER TABLE conversations ADD COLUMN flush_seq INTEGER NOT NULL DEFAULT 0;

-- The daily spend rollups, split in buckets: a wide scope's row (the
-- deployment, an agent, a Slack workspace) is one row per bucket, chosen by a
-- stable hash of the spending conversation (src/budget/rules.rs `bucket_of`),
-- so no single row takes every conversation's writes; the budget's read and
-- the admin views sum the buckets. A person's and a conversation's rows stay
-- in bucket 0. The rows from before are bucket 0: every figure is kept.
CREATE TABLE spend_daily_buckets (
    day TEXT NOT NULL,
    scope TEXT NOT NULL,
    subject TEXT NOT NULL,
    bucket INTEGER NOT NULL DEFAULT 0,
    -- A person's display name (as last seen); empty for other scopes.
    name TEXT NOT NULL DEFAULT '',
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    -- Millionths of a US dollar, from the model price table (src/budget/prices.rs).
    micro_usd INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (day, scope, subject, bucket)
);
INSERT INTO spend_daily_buckets (day, scope, subject, bucket, name, input_tokens, output_tokens, micro_usd, calls)
SELECT day, scope, subject, 0, name, input_tokens, output_tokens, micro_usd, calls FROM spend_daily;
DROP TABLE spend_daily;
ALTER TABLE spend_daily_buckets RENAME TO spend_daily;
