-- "Add to Slack": one row per workspace that installed the app (its bot token
-- sealed with SLACK_TOKEN_KEY: base64 of nonce, AES-256-GCM ciphertext and tag,
-- the team id as associated data), and the install links not yet used.
CREATE TABLE slack_workspaces (
    team_id TEXT PRIMARY KEY,
    team_name TEXT NOT NULL DEFAULT '',
    bot_user_id TEXT NOT NULL DEFAULT '',
    -- NULL once the workspace uninstalled the app or revoked its token.
    sealed_token TEXT,
    installed_at INTEGER NOT NULL,
    uninstalled_at INTEGER
);

-- One-time OAuth states: consumed by a DELETE (one caller wins), expired ones pruned.
CREATE TABLE slack_install_states (
    state TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
);
CREATE INDEX slack_install_states_expiry ON slack_install_states (expires_at);
