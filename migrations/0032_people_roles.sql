-- A person's role and bio (docs/people-and-identity.md, the specification's
-- `[[humans]]`): written by an operator only (the admin API and the People
-- page; never a person's own messages or the profile tools), shown in the
-- prompts of turns the person writes in as the operator's facts about them.
-- NULL: none set.
ALTER TABLE people ADD COLUMN role TEXT;
ALTER TABLE people ADD COLUMN bio TEXT;
