-- Rooms an agent answers (docs/agents.md): a Slack workspace (team id) or a
-- Discord channel, each claimed by at most one agent (the primary key); a
-- room no agent claims is the default agent's.
CREATE TABLE IF NOT EXISTS agent_rooms (
    -- 'slack' (a team id) or 'discord' (a channel id)
    platform TEXT NOT NULL,
    room TEXT NOT NULL,
    agent TEXT NOT NULL,
    PRIMARY KEY (platform, room)
);
CREATE INDEX IF NOT EXISTS agent_rooms_by_agent ON agent_rooms (agent);

-- An agent's own web-chat invitation, sealed with SLACK_TOKEN_KEY like its
-- Telegram bot's token (AES-256-GCM, `{agent}:invitation` as associated
-- data): opened to check a guest's sign-in, derive its sessions' key and
-- keep it out of logs; shown once, when it is made.
CREATE TABLE IF NOT EXISTS agent_invitations (
    agent TEXT PRIMARY KEY,
    sealed_invitation TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
