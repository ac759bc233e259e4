//! The task board's tools as types: `task_create`, `task_list` and
//! `task_update`, with their documented arguments. Their calls (`tools.rs`)
//! keep to the conversation's own board.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::rules::Priority;
use crate::llm::tool::NoArguments;

crate::tool! {
    /// `task_create`: propose a task, which waits for a person's approval.
    pub TaskCreate = "task_create",
    /// `task_create`'s arguments.
    struct TaskCreateArguments {
        /// What needs doing.
        pub title: String,
        /// Everything a worker needs to do it without this conversation.
        pub description: Option<String>,
        pub priority: Option<Priority>,
    }
}

crate::tool! {
    /// `task_list`: this conversation's tasks.
    pub TaskList = "task_list", NoArguments
}

crate::tool! {
    /// `task_update`: change a task by its number.
    pub TaskUpdate = "task_update",
    /// `task_update`'s arguments.
    struct TaskUpdateArguments {
        /// The task's number.
        pub id: TaskNumber,
        /// Branches only: move parked work to ready.
        pub status: Option<Move>,
        pub priority: Option<Priority>,
        /// Steps and whether each is done.
        pub subtasks: Option<Subtasks>,
        /// What changed.
        pub note: Option<String>,
    }
}

// Where a branch may move parked work (the field says it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Move {
    Backlog,
    Ready,
}

crate::words_schema!(Priority);

/// A task's number as a model writes it: `7` or `"7"` (its schema says a string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskNumber(pub i64);

impl<'de> Deserialize<'de> for TaskNumber {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let number = match Value::deserialize(deserializer)? {
            Value::Number(number) => number.as_i64(),
            Value::String(text) => text.trim().parse().ok(),
            _ => None,
        };
        number.map(TaskNumber).ok_or_else(|| serde::de::Error::custom("`id` must be a task id"))
    }
}

impl JsonSchema for TaskNumber {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TaskNumber".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string" })
    }
}

/// A task's steps, each an object (its text and whether it is done), kept as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Subtasks(pub Vec<Value>);

impl JsonSchema for Subtasks {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Subtasks".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "array", "items": { "type": "object" } })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::tool::Tool;

    #[test]
    fn a_task_number_may_be_written_as_a_number_or_a_string_and_nothing_else() {
        for id in [json!(7), json!("7"), json!(" 7 ")] {
            assert_eq!(TaskUpdate::parse(&json!({ "id": id })).unwrap().id, TaskNumber(7), "{id}");
        }
        for id in [json!("seven"), json!(7.5), json!(null), json!([7])] {
            let error = TaskUpdate::parse(&json!({ "id": id })).unwrap_err();
            assert!(error.contains("`id` must be a task id"), "{id}: {error}");
        }
        let update = TaskUpdate::parse(&json!({ "id": 1, "status": "ready", "subtasks": [{ "step": "a" }] })).unwrap();
        assert_eq!((update.status, update.subtasks.map(|steps| steps.0.len())), (Some(Move::Ready), Some(1)));
        assert!(
            TaskUpdate::parse(&json!({ "id": 1, "status": "done" })).is_err(),
            "a branch moves only to backlog or ready"
        );
        let created = TaskCreate::parse(&json!({ "title": "report", "priority": "high" })).unwrap();
        assert_eq!(created.priority, Some(Priority::High));
        assert!(TaskCreate::parse(&json!({ "title": "report", "priority": "urgent" })).is_err());
    }
}
