-- Agents (docs/agents.md): several bots in one deployment. The agent
-- 'default' is the deployment as it was: every existing row stays its own.
--
-- What belongs to an agent without a column of its own: everything keyed by
-- conversation key (history, files, schedules, tasks' conversations, memory
-- scopes, spend per conversation), because a non-default agent's keys carry
-- its prefix (`agent:{id}:telegram:42`, src/agents/rules.rs), and people
-- records, whose platform keys carry the same prefix. Identity documents are
-- not keyed by conversation: they get the column here.

CREATE TABLE IF NOT EXISTS agents (
    -- [a-z][a-z0-9-]{0,31}
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    -- JSON: models, allowed tools and MCP servers, budgets (src/agents/rules.rs).
    settings TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

INSERT OR IGNORE INTO agents (id, name, settings, created_at, updated_at) VALUES ('default', 'edgebot', '{}', 0, 0);

-- An agent's own Telegram bot: its token and webhook secret sealed with
-- SLACK_TOKEN_KEY (AES-256-GCM, the agent id as associated data). Updates
-- come to /webhooks/telegram/{agent}.
CREATE TABLE IF NOT EXISTS agent_telegram_bots (
    agent TEXT PRIMARY KEY,
    username TEXT NOT NULL,
    sealed_token TEXT NOT NULL,
    sealed_secret TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);

-- Identity documents per agent: the primary key gains the agent, so the
-- table is rebuilt (SQLite cannot change a primary key in place).
CREATE TABLE identity_versions_by_agent (
    agent TEXT NOT NULL DEFAULT 'default',
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    text TEXT NOT NULL,
    author TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    restored_from INTEGER,
    PRIMARY KEY (agent, name, version)
);
INSERT INTO identity_versions_by_agent (agent, name, version, text, author, created_at, restored_from)
    SELECT 'default', name, version, text, author, created_at, restored_from FROM identity_versions;
DROP TABLE identity_versions;
ALTER TABLE identity_versions_by_agent RENAME TO identity_versions;
