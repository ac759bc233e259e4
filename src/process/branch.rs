//! A branch: a fork of the channel's history plus a question, thought through
//! by the model on its own (at most [`MAX_BRANCH_MODEL_CALLS`] calls), ending in
//! a conclusion the channel takes in.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::channel::turn::{ChatModel, HistoryEntry, HistoryRole};
use crate::inbound::InboundEvent;
use crate::llm::{ChatMessage, ChatRequest, LlmError, Role};
use crate::prompt;

pub const MAX_BRANCH_MODEL_CALLS: u32 = 10;
/// Branches one channel may have running at once.
pub const MAX_CONCURRENT_BRANCHES: usize = 3;

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
}

/// The branch's first messages: its own system prompt, the forked history, the question.
pub fn compose_messages(job: &BranchJob, bot_name: &str) -> Result<Vec<ChatMessage>, minijinja::Error> {
    let mut messages =
        vec![ChatMessage::new(Role::System, prompt::render("branch_system", json!({ "bot_name": bot_name }))?)];
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
    messages
        .push(ChatMessage::new(Role::User, prompt::render("branch_question", json!({ "question": job.question }))?));
    Ok(messages)
}

/// Thinks until the model answers in plain text (the conclusion) or the call
/// budget runs out (then the last thing it said stands).
pub async fn run_branch(
    model: &impl ChatModel,
    model_name: &str,
    mut messages: Vec<ChatMessage>,
) -> Result<String, LlmError> {
    let mut last_words = String::new();
    for _ in 0..MAX_BRANCH_MODEL_CALLS {
        let request = ChatRequest { model: model_name.to_string(), messages: messages.clone(), tools: Vec::new() };
        let completion = model.complete(&request).await?;
        if let Some(content) = completion.content.clone() {
            last_words = content;
        }
        if completion.tool_calls.is_empty() {
            break;
        }
        // Branch tools arrive with the memory issue; until then every call is
        // answered so the model concludes instead of waiting.
        let mut assistant = ChatMessage::new(Role::Assistant, completion.content.unwrap_or_default());
        assistant.tool_calls = completion.tool_calls.clone();
        messages.push(assistant);
        for call in &completion.tool_calls {
            messages.push(ChatMessage::tool_result(&call.id, "error: no tools are available; answer in plain text"));
        }
    }
    if last_words.trim().is_empty() {
        return Err(LlmError::Malformed("the branch reached no conclusion".into()));
    }
    Ok(last_words)
}
