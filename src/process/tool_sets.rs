//! The process tools as types: a worker's `set_status` (its runner answers
//! it) and a branch's `worker_inspect` and `channel_recall` (the branch's
//! world answers them).

use schemars::JsonSchema;
use serde::Deserialize;

crate::tool! {
    /// `set_status`: a worker's progress line or its outcome.
    pub SetStatus = "set_status", SetStatusArguments
}

// What a `set_status` reports (no doc comment: it would become the
// argument's description, which the prompt file gives).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusKind {
    Progress,
    Outcome,
}

/// `set_status`'s arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SetStatusArguments {
    pub kind: StatusKind,
    /// The progress line, or the complete result.
    pub text: String,
}

crate::tool! {
    /// `worker_inspect`: this conversation's workers.
    pub WorkerInspect = "worker_inspect",
    /// `worker_inspect`'s arguments.
    #[derive(Default)]
    struct WorkerInspectArguments {
        /// A worker's id; leave out for all.
        pub id: Option<String>,
    }
}

crate::tool! {
    /// `channel_recall`: search this conversation's stored history.
    pub ChannelRecall = "channel_recall",
    /// `channel_recall`'s arguments.
    struct ChannelRecallArguments {
        /// Words to find in this conversation.
        pub query: String,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::tool::Tool;

    #[test]
    fn process_tool_arguments_parse_and_refuse_what_does_not_fit() {
        let status = SetStatus::parse(&json!({ "kind": "outcome", "text": "done" })).unwrap();
        assert_eq!(status.kind, StatusKind::Outcome);
        assert!(SetStatus::parse(&json!({ "kind": "finished", "text": "done" })).is_err());
        assert!(SetStatus::parse(&json!({ "text": "done" })).unwrap_err().contains("missing field `kind`"));
        assert_eq!(WorkerInspect::parse(&json!({})).unwrap().id, None);
        assert!(ChannelRecall::parse(&json!({ "query": 3 })).is_err());
    }
}
