-- People (docs/people-and-identity.md): every human (and peer bot) the bot answers is a
-- person record; each platform id it is known by points to one record, so an
-- operator can link one person across Slack, Discord, Telegram and the web.

CREATE TABLE IF NOT EXISTS people (
    -- 'p' and 16 hex digits: the hash of the first platform id seen.
    id TEXT PRIMARY KEY,
    display_name TEXT NOT NULL DEFAULT '',
    -- An IANA time zone: the default of the schedules this person creates.
    time_zone TEXT,
    language TEXT,
    is_bot INTEGER NOT NULL DEFAULT 0,
    -- JSON array of {text, at_ms, by}: at most 20 notes of 200 characters
    -- (src/people.rs), shown only in turns this person writes in.
    notes TEXT NOT NULL DEFAULT '[]',
    -- Bumped by every write: two writers of one profile cannot lose a note.
    version INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

-- A platform id ('{platform}:{user id}', as the budgets key a person) and the
-- record it belongs to; the name it was last seen with.
CREATE TABLE IF NOT EXISTS person_ids (
    platform_key TEXT PRIMARY KEY,
    person_id TEXT NOT NULL,
    display_name TEXT NOT NULL DEFAULT '',
    first_seen_at INTEGER,
    last_seen_at INTEGER
);

CREATE INDEX IF NOT EXISTS person_ids_by_person ON person_ids (person_id);
