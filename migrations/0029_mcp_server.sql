-- edgebot as a remote MCP server (docs/mcp-server.md): the clients an operator
-- issued a token to, their per-minute and per-day counters, and a log of
-- every call.
CREATE TABLE mcp_clients (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    agent TEXT NOT NULL DEFAULT 'default',
    -- sha256 (hex) of the token's secret; the token itself is shown once.
    token_hash TEXT NOT NULL,
    tools TEXT NOT NULL,
    conversations TEXT NOT NULL,
    rate_per_minute INTEGER NOT NULL,
    daily_budget_micro_usd INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER,
    calls INTEGER NOT NULL DEFAULT 0,
    last_call_at INTEGER
);

-- Requests per client per minute (the rate limit).
CREATE TABLE mcp_client_minutes (
    client_id TEXT NOT NULL,
    minute INTEGER NOT NULL,
    requests INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (client_id, minute)
);

-- Spend per client per UTC day (the budget).
CREATE TABLE mcp_client_days (
    client_id TEXT NOT NULL,
    day TEXT NOT NULL,
    micro_usd INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (client_id, day)
);

-- Every tools/call: who, which tool, the outcome, what it cost.
CREATE TABLE mcp_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    client_id TEXT NOT NULL,
    agent TEXT NOT NULL DEFAULT 'default',
    tool TEXT NOT NULL,
    outcome TEXT NOT NULL,
    micro_usd INTEGER NOT NULL DEFAULT 0,
    at INTEGER NOT NULL
);
CREATE INDEX mcp_calls_by_client ON mcp_calls (client_id, at);
