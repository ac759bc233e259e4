-- Memories get an integer key, `seq`, and everything that indexes them is keyed
-- by it, so writes cost the same however large the store grows:
-- * the full-text index's rowid is the memory's seq: a memory's words are
--   replaced or deleted by rowid, where 0004's table could only find them by
--   scanning its unindexed `id` column;
-- * `sketch` holds a 4-bit sketch of the vector (src/memory/sketch.rs) that
--   vector search reads for every memory, through a covering index whose first
--   column groups rows into packs of 2,048 (`GROUP BY seq >> 11` then reads the
--   index in order). Rows from before this migration get their sketch from the
--   cron (src/edge/cortex.rs); until then search scores them exactly.
-- The table is rebuilt because only an INTEGER PRIMARY KEY is a stable rowid
-- (VACUUM may renumber the implicit one).
CREATE TABLE memories_keyed (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    memory_type TEXT NOT NULL,
    content TEXT NOT NULL,
    importance REAL NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    last_accessed_at INTEGER NOT NULL,
    access_count INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL DEFAULT '',
    vector TEXT,
    sketch TEXT
);

INSERT INTO memories_keyed (id, memory_type, content, importance, created_at, updated_at, last_accessed_at,
                            access_count, source, vector)
SELECT id, memory_type, content, importance, created_at, updated_at, last_accessed_at, access_count, source, vector
FROM memories ORDER BY created_at, id;

DROP TABLE memories;
ALTER TABLE memories_keyed RENAME TO memories;

CREATE INDEX memories_by_created ON memories (created_at);
CREATE INDEX memories_by_importance ON memories (importance);
CREATE INDEX memories_by_type ON memories (memory_type, created_at);
CREATE INDEX memories_sketches ON memories (seq >> 11, memory_type, sketch);
CREATE INDEX memories_unsketched ON memories (seq) WHERE sketch IS NULL AND vector IS NOT NULL;

DROP TABLE memories_fts;
CREATE VIRTUAL TABLE memories_fts USING fts5(content);
INSERT INTO memories_fts (rowid, content) SELECT seq, content FROM memories;
