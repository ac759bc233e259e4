//! The memory tools as types: `memory_save`, `memory_recall` and
//! `memory_delete`, with their documented arguments. Their calls act on the
//! store (`tools.rs`), always as the conversation, never as an operator.

use super::types::{MemoryType, SearchMode, SearchSort};

/// Results a recall returns unless asked for fewer (or more, up to the max).
pub const DEFAULT_RECALL_LIMIT: usize = 10;
pub const MAX_RECALL_LIMIT: usize = 50;

crate::tool! {
    /// `memory_save`: remember something in later turns of this conversation.
    pub MemorySave = "memory_save",
    /// `memory_save`'s arguments.
    struct MemorySaveArguments {
        /// The memory, self-contained.
        pub content: String,
        pub memory_type: MemoryType,
        /// 0 to 1; leave out for the type's default.
        pub importance: Option<f64>,
    }
}

crate::tool! {
    /// `memory_recall`: search long-term memory.
    pub MemoryRecall = "memory_recall",
    /// `memory_recall`'s arguments (all optional).
    #[derive(Default)]
    struct MemoryRecallArguments {
        /// What to look for (hybrid mode).
        pub query: Option<String>,
        pub mode: Option<SearchMode>,
        pub memory_type: Option<MemoryType>,
        pub sort: Option<SearchSort>,
        #[schemars(description = format!("How many at most (default {DEFAULT_RECALL_LIMIT}, at most {MAX_RECALL_LIMIT})."))]
        pub limit: Option<i64>,
    }
}

crate::tool! {
    /// `memory_delete`: delete one of this conversation's memories.
    pub MemoryDelete = "memory_delete",
    /// `memory_delete`'s arguments.
    struct MemoryDeleteArguments {
        /// The memory's id.
        pub id: String,
    }
}

crate::words_schema!(MemoryType, SearchMode, SearchSort);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::tool::Tool;

    #[test]
    fn memory_arguments_read_their_vocabularies_and_refuse_other_words() {
        let saved = MemorySave::parse(&json!({ "content": "Ada's cat is Tom", "memory_type": "fact" })).unwrap();
        assert_eq!((saved.memory_type, saved.importance), (MemoryType::Fact, None));
        let error = MemorySave::parse(&json!({ "content": "x", "memory_type": "gossip" })).unwrap_err();
        assert!(error.contains("unknown variant `gossip`") && error.contains("`todo`"), "{error}");
        assert!(MemorySave::parse(&json!({ "memory_type": "fact" })).unwrap_err().contains("`content`"));
        let recall = MemoryRecall::parse(&json!({ "mode": "typed", "memory_type": "goal", "limit": 5 })).unwrap();
        assert_eq!(
            (recall.mode, recall.memory_type, recall.limit),
            (Some(SearchMode::Typed), Some(MemoryType::Goal), Some(5))
        );
        assert!(MemoryRecall::parse(&json!({})).is_ok(), "every argument is optional");
        assert!(MemoryRecall::parse(&json!({ "sort": "loudest" })).is_err());
        assert!(MemoryDelete::parse(&json!({ "id": 7 })).is_err());
    }
}
