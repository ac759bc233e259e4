//! A branch: a fork of the channel's history plus a question, thought through
//! by the model on its own (at most [`MAX_BRANCH_MODEL_CALLS`] calls), ending in
//! a conclusion the channel takes in.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::tool_sets::{ChannelRecall, WorkerInspect};
use crate::files::arguments::{AttachmentRead, AttachmentRecall, SendFile};
use crate::inbound::InboundEvent;
use crate::llm::{ChatMessage, ChatModel, ChatRequest, HistoryEntry, HistoryRole, LlmError, Role, ToolSpec, Usage};
use crate::memory::arguments::{MemoryDelete, MemoryRecall, MemorySave};
use crate::people::arguments::{PersonForget, PersonNote};
use crate::people::rules::Profile;
use crate::prompt;
use crate::tasks::arguments::{TaskCreate, TaskList, TaskUpdate};

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

crate::tool_set! {
    /// The tools a branch is offered (besides the MCP tools opened to branches).
    pub BranchToolSet = [
        MemorySave,
        MemoryRecall,
        MemoryDelete,
        ChannelRecall,
        TaskCreate,
        TaskList,
        TaskUpdate,
        WorkerInspect,
        PersonNote,
        PersonForget,
        AttachmentRead,
        AttachmentRecall,
        SendFile,
    ]
}

/// The tools a branch is offered.
pub fn branch_tools() -> Vec<ToolSpec> {
    BranchToolSet::specs()
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
            role: None,
            bio: Some("Sales, Berlin office".into()),
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
                 `person_forget`, and nobody else's; a role and bio are the operator's and neither tool changes \
                 them.\n- Dana (telegram:7, writing as dana.w), time zone Europe/Berlin [the operator wrote this \
                 about them, not they: bio: Sales, Berlin office]:\n  1. prefers short answers"
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
