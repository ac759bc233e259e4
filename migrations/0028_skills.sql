-- Skills (docs/skills.md): a folder with a SKILL.md (name, one-line description,
-- instructions) and optional files, installed per agent by an operator (the
-- dashboard or the admin API), listed, enabled and disabled.

-- One row per installed skill of an agent: whether its name and description go
-- in the agent's prompts (enabled) and which version is current. `agent` is the
-- agent id of issue 36 ('default' is today's edgebot).
CREATE TABLE IF NOT EXISTS skills (
    agent TEXT NOT NULL DEFAULT 'default',
    name TEXT NOT NULL,
    enabled INTEGER NOT NULL DEFAULT 1,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (agent, name)
);

-- Every kept version of a skill, numbered from 1 per (agent, name); the newest is
-- current. The files live here, in D1, as one JSON object {path: text}: a skill is
-- a few small text files (capped at 256 KiB in all), so one row is one atomic
-- version (no R2 object left behind by a failed install, no second read per
-- file), and a restore copies a row. A restore saves the old files again as a new
-- version (restored_from names the version it copied). The newest 20 are kept.
CREATE TABLE IF NOT EXISTS skill_versions (
    agent TEXT NOT NULL DEFAULT 'default',
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    description TEXT NOT NULL,
    files TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    -- Who installed it: 'admin token' or 'operator (dashboard)'.
    author TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    restored_from INTEGER,
    PRIMARY KEY (agent, name, version)
);
