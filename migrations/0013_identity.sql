-- Identity documents (docs/people-and-identity.md): SOUL, IDENTITY and USER, edited by an
-- operator on the dashboard or through the admin API.

-- Every saved version of each document ('soul', 'identity', 'user'), numbered
-- from 1 per document. The newest version is the current text; a document with
-- no row uses the default shipped in prompts/identity/. A restore saves the old
-- text again as a new version (restored_from names the version it copied), so
-- the list reads as what happened. Only the newest 50 per document are kept.
CREATE TABLE IF NOT EXISTS identity_versions (
    name TEXT NOT NULL,
    version INTEGER NOT NULL,
    text TEXT NOT NULL,
    -- Who saved it: 'admin token' or 'operator (dashboard)'.
    author TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    restored_from INTEGER,
    PRIMARY KEY (name, version)
);

-- One conversation's short override, placed after the three documents in that
-- conversation's prompts only.
CREATE TABLE IF NOT EXISTS conversation_identity (
    conversation_key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    author TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
