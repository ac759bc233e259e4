-- Who runs up the bill (docs/security.md, "Who runs up the bill").

-- Who created each job: the author of the message the creating turn answered
-- (platform user id and name); NULL for jobs made before this migration.
-- 'operator' for jobs made through the admin API.
ALTER TABLE schedules ADD COLUMN created_by_id TEXT;
ALTER TABLE schedules ADD COLUMN created_by_name TEXT;

-- Daily spend rollups (UTC days), one row per scope and subject: a person
-- ('{platform}:{user id}'), a conversation (its key), or the deployment ('*').
-- Each model-calling step adds to its rows in one batched upsert.
CREATE TABLE IF NOT EXISTS spend_daily (
    day TEXT NOT NULL,
    scope TEXT NOT NULL,
    subject TEXT NOT NULL,
    -- A person's display name (as last seen); empty for other scopes.
    name TEXT NOT NULL DEFAULT '',
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    -- Millionths of a US dollar, from the model price table (src/budget/prices.rs).
    micro_usd INTEGER NOT NULL DEFAULT 0,
    calls INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (day, scope, subject)
);

-- Daily limits an operator set for one person, one conversation, or the
-- deployment ('*'); they replace the configured limit every day until removed.
-- NULL: no limit of that kind.
CREATE TABLE IF NOT EXISTS spend_limits (
    scope TEXT NOT NULL,
    subject TEXT NOT NULL,
    tokens INTEGER,
    micro_usd INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (scope, subject)
);

-- Who was told that a budget ran out, once per day and scope.
CREATE TABLE IF NOT EXISTS spend_notices (
    day TEXT NOT NULL,
    scope TEXT NOT NULL,
    recipient TEXT NOT NULL,
    told_at INTEGER NOT NULL,
    PRIMARY KEY (day, scope, recipient)
);

-- Guest web-chat sessions started per client address per UTC day.
CREATE TABLE IF NOT EXISTS web_chat_starts (
    day TEXT NOT NULL,
    client TEXT NOT NULL,
    sessions INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (day, client)
);
