-- Long-term memory, shared by every conversation of the agent.
-- `vector` holds the embedding (quantised, base64) when the D1 vector
-- backend is in use (the local default); with Vectorize it stays NULL.
CREATE TABLE IF NOT EXISTS memories (
    id TEXT PRIMARY KEY,
    memory_type TEXT NOT NULL,
    content TEXT NOT NULL,
    importance REAL NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    last_accessed_at INTEGER NOT NULL,
    access_count INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL DEFAULT '',
    vector TEXT
);

CREATE INDEX IF NOT EXISTS memories_by_created ON memories (created_at);
CREATE INDEX IF NOT EXISTS memories_by_importance ON memories (importance);
CREATE INDEX IF NOT EXISTS memories_by_type ON memories (memory_type, created_at);

-- Graph edges between memories (RelatedTo, Updates, Contradicts, CausedBy, ResultOf, PartOf).
CREATE TABLE IF NOT EXISTS associations (
    source_id TEXT NOT NULL,
    target_id TEXT NOT NULL,
    relation TEXT NOT NULL,
    weight REAL NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (source_id, target_id, relation)
);

CREATE INDEX IF NOT EXISTS associations_by_target ON associations (target_id);

-- Full-text index over memory contents, kept in step by the store's batches.
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(id UNINDEXED, content);

-- Small state of the memory system: the store version (bumped by every change
-- of content), the bulletin and the version it was built from, routine health.
CREATE TABLE IF NOT EXISTS memory_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
