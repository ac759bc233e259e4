-- Remote MCP servers an operator added, and the approvals people decide in
-- their conversations.

-- One row per server. `settings` is the operator's JSON (URL, how to
-- authenticate by secret *names*, exposed tools, approvals per tool); the
-- rest is what edgebot learned: the cached tool list, whether the server
-- said it changed, when it was last unreachable, and an OAuth access token
-- until it expires (never shown by the admin API).
CREATE TABLE IF NOT EXISTS mcp_servers (
    name TEXT PRIMARY KEY,
    settings TEXT NOT NULL,
    tools TEXT,
    tools_at INTEGER,
    stale INTEGER NOT NULL DEFAULT 0,
    down_until INTEGER,
    last_error TEXT,
    calls INTEGER NOT NULL DEFAULT 0,
    access_token TEXT,
    token_expires_at INTEGER,
    updated_at INTEGER NOT NULL
);

-- A wait for a person's yes: a worker's tool call (subject: the worker's id,
-- call_id: the call) or a proposed task (subject: its number). `status` is
-- waiting, then approved, denied or timed_out, set once (a conditional
-- update), with who decided and when.
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY,
    conversation_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    call_id TEXT,
    what TEXT NOT NULL,
    arguments TEXT NOT NULL DEFAULT '',
    asker_platform TEXT,
    asker_id TEXT,
    asker_name TEXT,
    status TEXT NOT NULL DEFAULT 'waiting',
    expires_at INTEGER,
    decided_by TEXT,
    decided_at INTEGER,
    created_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS approvals_by_time ON approvals (created_at);
