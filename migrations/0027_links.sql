-- Links between agents (issue 36, src/links/): which agent may message which.
-- `from_agent` and `to_agent` are agent ids ([a-z][a-z0-9-]{0,31}); a link
-- belongs to both agents it names.
CREATE TABLE IF NOT EXISTS links (
    from_agent TEXT NOT NULL,
    to_agent TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('hierarchical', 'peer')),
    direction TEXT NOT NULL CHECK (direction IN ('one_way', 'two_way')),
    created_at INTEGER NOT NULL,
    PRIMARY KEY (from_agent, to_agent)
);

-- One exchange between two agents (`pair`: the two ids, sorted, joined by |):
-- who opened it from which conversation (where its outcome goes), the
-- messages sent over it (capped), and when it closed.
CREATE TABLE IF NOT EXISTS link_exchanges (
    pair TEXT PRIMARY KEY,
    agent TEXT NOT NULL DEFAULT 'default',
    opened_by TEXT NOT NULL,
    origin_key TEXT NOT NULL,
    origin_address TEXT NOT NULL,
    turns INTEGER NOT NULL DEFAULT 0,
    opened_at INTEGER NOT NULL,
    closed_at INTEGER,
    outcome TEXT
);

-- Each message sent over a link, once: a retried send is not counted twice.
CREATE TABLE IF NOT EXISTS link_sends (
    id TEXT PRIMARY KEY,
    pair TEXT NOT NULL,
    sent_at INTEGER NOT NULL
);
