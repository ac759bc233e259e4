//! A branch: a fork of the channel's history plus a question, thought through
//! by the model on its own (at most [`MAX_BRANCH_MODEL_CALLS`] calls), ending in
//! a conclusion the channel takes in.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::inbound::InboundEvent;
use crate::llm::{object, ChatModel, HistoryEntry, HistoryRole};
use crate::llm::{ChatMessage, ChatRequest, LlmError, Role, ToolSpec, Usage};
use crate::memory::types::MemoryType;
use crate::people::rules::{Profile, MAX_NOTES_PER_PERSON, MAX_NOTE_CHARS};
use crate::prompt;

pub const MAX_BRANCH_MODEL_CALLS: u32 = 10;

/// The queue job that runs a branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchJob {
    /// Stable per (conversation, turn, call): a redelivered job has the same one.
    pub id: String,
    pub conversation_key: String,
    pub question: String,
    /// The channel's history at the moment of branching.
    pub history: Vec<HistoryEntry>,
    /// The message the branch was started for; its conclusion is answered there.
    pub origin: InboundEvent,
    /// The people writing in the turn that started it, with their profiles:
    /// the only people its `person_note` and `person_forget` may touch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub people: Vec<Profile>,
}

/// The branch's first messages: its own system prompt with the conversation's
/// identity block (a branch forks the channel's context, so it thinks as the
/// same character: [`crate::identity::rules`]), the forked history, the question.
pub fn compose_messages(job: &BranchJob, bot_name: &str, identity: &str) -> Result<Vec<ChatMessage>, prompt::Error> {
    let system = prompt::render("branch_system", json!({ "bot_name": bot_name, "identity": identity }))?;
    let mut messages = vec![ChatMessage::new(Role::System, system)];
    for entry in &job.history {
        let role = match entry.role {
            HistoryRole::User => Role::User,
            HistoryRole::Assistant => Role::Assistant,
        };
        let content = match entry.role {
            HistoryRole::User => format!("{}: {}", entry.author_name, entry.content),
            HistoryRole::Assistant => entry.content.clone(),
        };
        messages.push(ChatMessage::new(role, content));
    }
    let people: Vec<Value> = job.people.iter().map(crate::people::rules::for_prompt).collect();
    let question = prompt::render("branch_question", json!({ "question": job.question, "people": people }))?;
    messages.push(ChatMessage::new(Role::User, question));
    Ok(messages)
}

/// What a branch's tools do in the world (memory, history, tasks, workers).
#[allow(async_fn_in_trait)] // Workers are single-threaded; futures need not be Send.
pub trait BranchTools {
    /// Tools from outside (MCP servers an operator opened to branches, those
    /// that need no approval: a branch cannot wait for one).
    fn extra_tools(&self) -> Vec<ToolSpec> {
        Vec::new()
    }
    /// Runs a tool; errors are text the model reads.
    async fn call(&self, name: &str, arguments: &Value) -> String;
}

/// The tools a branch is offered.
pub fn branch_tools() -> Vec<ToolSpec> {
    let text = |description: &str| json!({ "type": "string", "description": description });
    let types =
        json!({ "type": "string", "enum": MemoryType::ALL.iter().map(|kind| kind.as_str()).collect::<Vec<_>>() });
    let mut tools = vec![
        ToolSpec::new(
            "memory_save",
            object(
                json!({
                    "content": text("The memory, self-contained."),
                    "memory_type": types,
                    "importance": { "type": "number", "description": "0 to 1; leave out for the type's default." }
                }),
                &["content", "memory_type"],
            ),
        ),
        ToolSpec::new(
            "memory_recall",
            object(
                json!({
                    "query": text("What to look for (hybrid mode)."),
                    "mode": { "type": "string", "enum": ["hybrid", "recent", "important", "typed"] },
                    "memory_type": types,
                    "sort": { "type": "string", "enum": ["recent", "importance", "most_accessed"] },
                    "limit": { "type": "integer" }
                }),
                &[],
            ),
        ),
        ToolSpec::new("memory_delete", object(json!({ "id": text("The memory's id.") }), &["id"])),
        ToolSpec::new(
            "channel_recall",
            object(json!({ "query": text("Words to find in this conversation.") }), &["query"]),
        ),
        ToolSpec::new(
            "task_create",
            object(
                json!({
                    "title": text("What needs doing."),
                    "description": text("Everything a worker needs to do it without this conversation."),
                    "priority": { "type": "string", "enum": ["critical", "high", "medium", "low"] }
                }),
                &["title"],
            ),
        ),
        ToolSpec::new("task_list", object(json!({}), &[])),
        task_update_tool(),
        ToolSpec::new("worker_inspect", object(json!({ "id": text("A worker's id; leave out for all.") }), &[])),
        ToolSpec::new(
            "person_note",
            object(
                json!({
                    "person": text("Who it is about: the name of someone writing now; leave out when only one person is."),
                    "note": text(&format!("One short fact about them, at most {MAX_NOTE_CHARS} characters.")),
                    "replaces": { "type": "integer", "description": format!("Correct note number N instead of adding one (a profile holds at most {MAX_NOTES_PER_PERSON}).") },
                    "time_zone": text("Their IANA time zone, e.g. Europe/Berlin (the default for schedules they create)."),
                    "language": text("The language they prefer, e.g. German.")
                }),
                &[],
            ),
        ),
        ToolSpec::new(
            "person_forget",
            object(
                json!({ "person": text("Who asked to be forgotten: the name of someone writing now; leave out when only one person is.") }),
                &[],
            ),
        ),
    ];
    tools.extend(attachment_tools());
    tools
}

/// `attachment_read`, `attachment_recall` and `send_file`, which branches
/// and workers share: the conversation's files, and only its own.
pub fn attachment_tools() -> [ToolSpec; 3] {
    let text = |description: &str| json!({ "type": "string", "description": description });
    let id = text("The file's id (f and 16 hex digits).");
    let send = json!({
        "name": text("The file's name, with its extension (report.csv, notes.md)."),
        "text": text("The file's content, for a file you wrote."),
        "id": text("Or: the id of a file of this conversation, to send it again."),
        "url": text("Or: an http(s) URL to fetch the file from (an image you found, a CSV to pass on)."),
    });
    [
        ToolSpec::new("attachment_read", object(json!({ "id": id }), &["id"])),
        ToolSpec::new("attachment_recall", object(json!({}), &[])),
        ToolSpec::new("send_file", object(send, &[])),
    ]
}

/// `task_update`, which branches and workers share.
pub fn task_update_tool() -> ToolSpec {
    let text = |description: &str| json!({ "type": "string", "description": description });
    ToolSpec::new(
        "task_update",
        object(
            json!({
                "id": text("The task's number."),
                "status": { "type": "string", "enum": ["backlog", "ready"], "description": "Branches only: move parked work to ready." },
                "priority": { "type": "string", "enum": ["critical", "high", "medium", "low"] },
                "subtasks": { "type": "array", "items": { "type": "object" }, "description": "Steps and whether each is done." },
                "note": text("What changed.")
            }),
            &["id"],
        ),
    )
}

/// Thinks until the model answers in plain text (the conclusion) or the call
/// budget runs out (then the last thing it said stands). Returns the
/// conclusion and the tokens spent.
pub async fn run_branch(
    model: &impl ChatModel,
    model_name: &str,
    tools: &impl BranchTools,
    mut messages: Vec<ChatMessage>,
) -> Result<(String, Usage), LlmError> {
    let mut specs = branch_tools();
    specs.extend(tools.extra_tools());
    let mut usage = Usage::default();
    let mut last_words = String::new();
    for _ in 0..MAX_BRANCH_MODEL_CALLS {
        let request = ChatRequest { model: model_name.to_string(), messages: messages.clone(), tools: specs.clone() };
        let completion = model.complete(&request).await?;
        usage.input_tokens += completion.usage.input_tokens;
        usage.output_tokens += completion.usage.output_tokens;
        if let Some(content) = completion.content.clone() {
            last_words = content;
        }
        if completion.tool_calls.is_empty() {
            break;
        }
        let mut assistant = ChatMessage::new(Role::Assistant, completion.content.unwrap_or_default());
        assistant.tool_calls = completion.tool_calls.clone();
        messages.push(assistant);
        for call in &completion.tool_calls {
            let result = match specs.iter().any(|spec| spec.name == call.name) {
                true => tools.call(&call.name, &call.arguments).await,
                false => format!("error: there is no tool named `{}`", call.name),
            };
            messages.push(ChatMessage::tool_result(&call.id, result));
        }
    }
    if last_words.trim().is_empty() {
        return Err(LlmError::Malformed("the branch reached no conclusion".into()));
    }
    Ok((last_words, usage))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::Author;
    use crate::people::rules::Note;

    #[test]
    fn a_branch_sees_the_people_it_may_write_about_with_numbered_notes() {
        let author = Author { id: "7".into(), name: "dana.w".into(), is_bot: false };
        let dana = Profile {
            key: "telegram:7".into(),
            id: "p1".into(),
            name: "Dana".into(),
            seen_as: Some("dana.w".into()),
            time_zone: Some("Europe/Berlin".into()),
            language: None,
            is_bot: false,
            notes: vec![Note { text: "prefers short answers".into(), at_ms: 0, by: "bot".into() }],
        };
        let mut job = BranchJob {
            id: "b".into(),
            conversation_key: "telegram:7".into(),
            question: "remember she likes tea".into(),
            history: vec![],
            origin: InboundEvent::plain_text(7, "1", author, "I like tea"),
            people: vec![dana],
        };
        let question = compose_messages(&job, "edgebot", "").unwrap().pop().unwrap().content;
        assert!(
            question.ends_with(
                "## People writing in the conversation now\nYou may keep their profiles with `person_note` and \
                 `person_forget`, and nobody else's.\n- Dana (telegram:7, writing as dana.w), time zone \
                 Europe/Berlin:\n  1. prefers short answers"
            ),
            "{question}"
        );
        job.people.clear();
        let question = compose_messages(&job, "edgebot", "").unwrap().pop().unwrap().content;
        assert!(!question.contains("People writing"), "{question}");
        // A job queued before people were passed reads as one without them.
        let mut old = serde_json::to_value(&job).unwrap();
        old.as_object_mut().unwrap().remove("people");
        assert_eq!(serde_json::from_value::<BranchJob>(old).unwrap(), job);
        let tools: Vec<String> = branch_tools().into_iter().map(|tool| tool.name).collect();
        assert!(tools.contains(&"person_note".to_string()) && tools.contains(&"person_forget".to_string()));
    }
}
