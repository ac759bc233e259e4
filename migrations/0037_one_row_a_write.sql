-- One D1 row written per row a turn writes (issue 37; docs/scale.md, "One row
-- a write"). D1 bills every b-tree a write touches: a rowid table whose key is
-- TEXT keeps that key in a second index, and each secondary index is one more.
-- A history row cost 4 rows written (the row, its id's index, the
-- conversation index, the platform-id index); an index row's new activity 2;
-- a new spend, usage or unsent-count row 2. Rebuilt WITHOUT ROWID, each table
-- is its key's one b-tree, and a write is one row.
--
-- * messages: keyed (conversation_key, created_at, id), the order every read
--   of a conversation's history takes (the newest window, the archive, a
--   search), with the id as the tie-break rowid was. A message's created_at
--   is fixed when its channel object files it, so a mirror sent again meets
--   the same key and changes nothing. The platform-id index is gone: an edit
--   or a deletion heard (rare) scans its one conversation's rows.
-- * conversations: the dashboard's list sorts by activity without an index
--   (a read of the shard's rows, at D1's read price, on an operator's page
--   view, instead of a write on every flush); the awaiting sweep keeps its
--   partial index, which a quiet conversation's row is not in.
-- * spend_daily, usage, pending_sends: the same keys, one b-tree.
--
-- Each table is copied in full and renamed: idempotent as a migration is
-- applied once per database, and nothing is lost (tested on a populated
-- database: tests/commit.rs, a_database_from_before_one_row_a_write_...).

CREATE TABLE messages_v37 (
    id TEXT NOT NULL,
    conversation_key TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    author_id TEXT NOT NULL,
    author_name TEXT NOT NULL,
    content TEXT NOT NULL,
    platform_message_id TEXT,
    created_at INTEGER NOT NULL,
    compacted INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (conversation_key, created_at, id)
) WITHOUT ROWID;
INSERT OR IGNORE INTO messages_v37
    (id, conversation_key, role, author_id, author_name, content, platform_message_id, created_at, compacted)
SELECT id, conversation_key, role, author_id, author_name, content, platform_message_id, created_at, compacted
FROM messages;
DROP TABLE messages;
ALTER TABLE messages_v37 RENAME TO messages;

CREATE TABLE conversations_v37 (
    conversation_key TEXT NOT NULL PRIMARY KEY,
    platform TEXT NOT NULL,
    title TEXT,
    last_activity_at INTEGER NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0,
    engaged_count INTEGER NOT NULL DEFAULT 0,
    observed_count INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL,
    awaiting_since INTEGER,
    flush_seq INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT INTO conversations_v37
    (conversation_key, platform, title, last_activity_at, message_count, engaged_count, observed_count,
     updated_at, awaiting_since, flush_seq)
SELECT conversation_key, platform, title, last_activity_at, message_count, engaged_count, observed_count,
       updated_at, awaiting_since, flush_seq
FROM conversations;
DROP TABLE conversations;
ALTER TABLE conversations_v37 RENAME TO conversations;
CREATE INDEX conversations_awaiting ON conversations (awaiting_since) WHERE awaiting_since IS NOT NULL;

CREATE TABLE spend_daily_v37 (
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
) WITHOUT ROWID;
INSERT INTO spend_daily_v37 (day, scope, subject, bucket, name, input_tokens, output_tokens, micro_usd, calls)
SELECT day, scope, subject, bucket, name, input_tokens, output_tokens, micro_usd, calls FROM spend_daily;
DROP TABLE spend_daily;
ALTER TABLE spend_daily_v37 RENAME TO spend_daily;

CREATE TABLE usage_v37 (
    conversation_key TEXT NOT NULL,
    process TEXT NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (conversation_key, process)
) WITHOUT ROWID;
INSERT INTO usage_v37 (conversation_key, process, input_tokens, output_tokens, calls)
SELECT conversation_key, process, input_tokens, output_tokens, calls FROM usage;
DROP TABLE usage;
ALTER TABLE usage_v37 RENAME TO usage;

CREATE TABLE pending_sends_v37 (
    conversation_key TEXT NOT NULL PRIMARY KEY,
    pending INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO pending_sends_v37 (conversation_key, pending, updated_at)
SELECT conversation_key, pending, updated_at FROM pending_sends;
DROP TABLE pending_sends;
ALTER TABLE pending_sends_v37 RENAME TO pending_sends;
