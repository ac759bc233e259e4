-- The message a memory was learned from (a branch's origin), so that deleting
-- the message on its platform takes the memory with it (docs/heard.md).
-- Empty for memories from before, from imports and from the cortex.
ALTER TABLE memories ADD COLUMN source_message TEXT NOT NULL DEFAULT '';
CREATE INDEX memories_by_source_message ON memories (source, source_message) WHERE source_message != '';
