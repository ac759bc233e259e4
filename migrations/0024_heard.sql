-- Edits and deletions heard from the platforms find the archived message by
-- its platform id within its conversation (src/conversations/archive.rs `hear`).
CREATE INDEX IF NOT EXISTS messages_by_platform_message ON messages (conversation_key, platform_message_id);
