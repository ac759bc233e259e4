-- People on the D1 shards (docs/scale.md, "D1 shards"; issue 37): each
-- `person_ids` row lives on the shard of its platform id, each `people` row
-- on the shard of its home key, the platform id that made it. `home_key`
-- names that key on both: on an id row, where its person's record is (a
-- linked id's record may be on another shard); on a record, which shard
-- holds it, so the mover (src/cron/reshard_people.rs) places it by the
-- bucket of its key. NULL: a row from before this migration, in the shared
-- database; the mover fills it in (the platform id whose hash is the
-- record's id, else one of its ids) as it moves the row to its shard.
ALTER TABLE people ADD COLUMN home_key TEXT;
ALTER TABLE person_ids ADD COLUMN home_key TEXT;
