//! The memory tools' calls, for a branch of the conversation `conversation_key`:
//! the answer is text for the model. A conversation's tools act as that
//! conversation, never as an operator.

use worker::{D1Database, Env, Result};

use super::arguments::{MemoryDeleteArguments, MemoryRecallArguments, MemorySaveArguments};
use super::recall::{recall, RecallRequest};
use super::scope::Viewer;
use super::store::{delete, save, Source};
use crate::config::Config;
use crate::llm::tool::given;

/// Where the memory tools act: the store, as one conversation.
pub struct MemoryTools<'a> {
    pub config: &'a Config,
    pub env: &'a Env,
    pub db: &'a D1Database,
    pub conversation_key: &'a str,
    /// The message being thought about: a memory saved is learned from it.
    pub source_message: &'a str,
}

impl MemoryTools<'_> {
    /// `memory_save`.
    pub async fn save(&self, arguments: MemorySaveArguments) -> Result<String> {
        let content = arguments.content.trim();
        if content.is_empty() {
            return Ok("error: `content` must be a non-empty string".into());
        }
        let learned = Source { conversation: self.conversation_key, message: self.source_message };
        let saved =
            save(self.config, self.env, self.db, learned, arguments.memory_type, content, arguments.importance).await?;
        if !saved.stored {
            return Ok("error: an operator has shared a memory with these words; only operators change it".into());
        }
        Ok(format!("saved memory {} ({} link(s) to related memories)", saved.id, saved.links))
    }

    /// `memory_recall`.
    pub async fn recall(&self, arguments: MemoryRecallArguments) -> Result<String> {
        let limit = arguments.limit.and_then(|limit| u64::try_from(limit).ok());
        let query = given(&arguments.query);
        let request = RecallRequest::new(query, arguments.mode, arguments.memory_type, arguments.sort, limit);
        let viewer = Viewer::Conversation(self.conversation_key);
        let found = recall(self.config, self.env, self.db, viewer, &request).await?;
        if found.is_empty() {
            return Ok("no memories found".into());
        }
        Ok(found
            .iter()
            .map(|memory| {
                format!(
                    "[{}] ({}, importance {:.2}) {}\n",
                    memory.id,
                    memory.memory_type.as_str(),
                    memory.importance,
                    memory.content
                )
            })
            .collect())
    }

    /// `memory_delete`. Another conversation's memory, or a shared one,
    /// answers as a missing one does.
    pub async fn delete(&self, arguments: MemoryDeleteArguments) -> Result<String> {
        let viewer = Viewer::Conversation(self.conversation_key);
        Ok(match delete(self.config, self.env, self.db, viewer, arguments.id.trim()).await? {
            true => "deleted".into(),
            false => "error: there is no memory with that id in this conversation".into(),
        })
    }
}
