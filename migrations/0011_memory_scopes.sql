-- Every memory gets a scope: who may see it (src/memory/scope.rs).
-- * a conversation's scope (its key, with a Slack thread folded into its
--   channel and a Telegram forum topic into its group): that conversation
--   sees, writes and deletes it;
-- * 'shared': an operator shared it; every conversation sees it, only
--   operators change it;
-- * 'operators': where it was learned is unknown; only operators see it until
--   one shares it.
-- Existing memories stay private to the conversation recorded in `source`
-- (every saved memory recorded one); imports and rows with no conversation
-- recorded become operators-only. New memories' ids also hash their scope, so
-- the same words saved in two conversations are two memories; existing ids
-- are kept.
ALTER TABLE memories ADD COLUMN scope TEXT NOT NULL DEFAULT 'operators';
-- The scope the Vectorize index holds in the memory's metadata (NULL: none yet,
-- or the D1 backend, which filters on `scope` itself). The cron re-writes the
-- vectors whose metadata lags behind (src/edge/cortex.rs).
ALTER TABLE memories ADD COLUMN vector_scope TEXT;

UPDATE memories SET scope = CASE
    -- slack:T:C:thread -> slack:T:C (the thread's readers are the channel's)
    WHEN source LIKE 'slack:_%:_%:_%' THEN
        'slack:' || substr(substr(source, 7), 1, instr(substr(source, 7), ':'))
        || substr(substr(source, 7 + instr(substr(source, 7), ':')), 1,
                  instr(substr(source, 7 + instr(substr(source, 7), ':')), ':') - 1)
    WHEN source LIKE 'slack:_%' THEN source
    -- telegram:chat:topic -> telegram:chat (a forum topic's readers are the group's)
    WHEN source LIKE 'telegram:_%:_%' THEN 'telegram:' || substr(substr(source, 10), 1, instr(substr(source, 10), ':') - 1)
    WHEN source LIKE 'telegram:_%' THEN source
    WHEN source LIKE 'discord:_%' OR source LIKE 'web:_%' THEN source
    ELSE 'operators'
END;

-- Searches read only the scopes a conversation sees: scope first, so a
-- conversation's search reads its own and the shared sketches, not all.
DROP INDEX IF EXISTS memories_sketches;
CREATE INDEX memories_sketches ON memories (scope, seq >> 11, memory_type, sketch);
CREATE INDEX memories_by_scope ON memories (scope, created_at);
