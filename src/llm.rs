//! Talking to language models: the provider-neutral chat types, model strings,
//! and what makes a failure worth retrying. Providers live in submodules.

pub mod anthropic;
pub mod openai;
pub mod readiness;
pub mod routing;
pub mod stream;
pub mod tool;
pub mod vision;
pub mod workers_ai;

#[cfg(target_arch = "wasm32")]
pub mod client;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

/// A model named as `<provider>/<model>`, e.g. `openai/gpt-4o-mini`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    pub provider: Provider,
    pub model: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Any OpenAI-compatible chat-completions endpoint.
    OpenAi,
    /// The Anthropic Messages API.
    Anthropic,
    /// Workers AI, through the Worker's `AI` binding.
    WorkersAi,
}

impl ModelSpec {
    /// `provider/model`, as configured.
    pub fn key(&self) -> String {
        let provider = match self.provider {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::WorkersAi => "workers-ai",
        };
        format!("{provider}/{}", self.model)
    }

    pub fn parse(spec: &str) -> Result<Self, LlmError> {
        let (provider, model) = spec
            .split_once('/')
            .filter(|(_, model)| !model.is_empty())
            .ok_or_else(|| LlmError::Config(format!("model '{spec}' is not <provider>/<model>")))?;
        let provider = match provider {
            "openai" => Provider::OpenAi,
            "anthropic" => Provider::Anthropic,
            "workers-ai" => Provider::WorkersAi,
            other => return Err(LlmError::Config(format!("unknown model provider '{other}'"))),
        };
        Ok(ModelSpec { provider, model: model.to_string() })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One message of a conversation with the model (serialisable, so a worker's
/// conversation can rest in D1 between its segments).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
    /// Tool calls the assistant made in this message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the call this message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Images that go with a user message (to models that see them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// An image for the model: its type and its bytes, base64-encoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub media_type: String,
    pub base64: String,
}

impl ChatMessage {
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        ChatMessage { role, content: content.into(), tool_calls: Vec::new(), tool_call_id: None, images: Vec::new() }
    }

    pub fn tool_result(call_id: &str, content: impl Into<String>) -> Self {
        ChatMessage { tool_call_id: Some(call_id.to_string()), ..ChatMessage::new(Role::Tool, content) }
    }
}

/// A tool the model may call; `parameters` is a JSON Schema object.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

impl ToolSpec {
    /// A tool whose description is the template `prompts/tools/<name>.md`.
    pub fn new(name: &str, parameters: Value) -> Self {
        ToolSpec { name: name.to_string(), description: crate::prompt::text(&format!("tools/{name}")), parameters }
    }
}

/// A call the model asked for; `arguments` is already parsed JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// What one model call produced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
}

impl Completion {
    /// The answer, if it says anything: one with neither text nor a tool call
    /// is no answer at all (a provider's empty message, a body with no
    /// choices), and is treated as a garbled one, so it is retried.
    pub fn checked(self) -> Result<Completion, LlmError> {
        match self.content.is_none() && self.tool_calls.is_empty() {
            true => Err(LlmError::Malformed("the answer holds neither text nor a tool call".into())),
            false => Ok(self),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A request to a model, in provider-neutral terms.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
}

#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum LlmError {
    #[error("model configuration: {0}")]
    Config(String),
    #[error("model answered HTTP {0}")]
    Status(u16),
    #[error("model did not answer in time")]
    Timeout,
    #[error("network error reaching the model: {0}")]
    Network(String),
    #[error("model answer could not be understood: {0}")]
    Malformed(String),
}

impl LlmError {
    /// Whether trying again (or another model) may help: rate limits, server
    /// errors, timeouts and garbled answers; never bad requests or bad keys.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Status(status) => *status == 429 || *status >= 500,
            LlmError::Timeout | LlmError::Network(_) | LlmError::Malformed(_) => true,
            LlmError::Config(_) => false,
        }
    }
}

/// How often and how patiently a failing model call is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub base_backoff_ms: u64,
}

impl RetryPolicy {
    /// The wait before attempt `attempt` (1-based; the first attempt waits nothing).
    pub fn backoff_before(&self, attempt: u32) -> u64 {
        match attempt {
            0 | 1 => 0,
            n => self.base_backoff_ms.saturating_mul(1 << (n - 2).min(16)),
        }
    }
}

/// Anything that completes a chat request: the real provider or a test script.
#[allow(async_fn_in_trait)] // Workers are single-threaded; futures need not be Send.
pub trait ChatModel {
    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError>;

    /// Completes as [`ChatModel::complete`] does, telling `watch` what the
    /// answer holds each time more of it arrives, where the model streams
    /// (a model that does not answers whole, and `watch` is never told).
    async fn complete_watched(
        &self,
        request: &ChatRequest,
        _watch: &dyn Fn(&stream::Assembler),
    ) -> Result<Completion, LlmError> {
        self.complete(request).await
    }
}

/// One stored message of the conversation, oldest first when in a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub role: HistoryRole,
    pub author_name: String,
    pub content: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistoryRole {
    User,
    Assistant,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_strings_name_provider_and_model() {
        let spec = ModelSpec::parse("openai/gpt-4o-mini").unwrap();
        assert_eq!(spec.provider, Provider::OpenAi);
        assert_eq!(spec.model, "gpt-4o-mini");
        // Model names may themselves contain slashes (OpenRouter-style).
        assert_eq!(ModelSpec::parse("openai/meta/llama-3").unwrap().model, "meta/llama-3");
        let workers_ai = ModelSpec::parse("workers-ai/@cf/meta/llama-3.1-8b-instruct").unwrap();
        assert_eq!(
            (workers_ai.provider, workers_ai.model.as_str()),
            (Provider::WorkersAi, "@cf/meta/llama-3.1-8b-instruct")
        );
        assert_eq!(workers_ai.key(), "workers-ai/@cf/meta/llama-3.1-8b-instruct");
        assert!(ModelSpec::parse("gpt-4o").is_err());
        assert!(ModelSpec::parse("openai/").is_err());
        assert!(ModelSpec::parse("mystery/x").is_err());
    }

    #[test]
    fn backoff_doubles_after_the_first_retry() {
        let policy = RetryPolicy { max_attempts: 4, base_backoff_ms: 200 };
        let waits: Vec<u64> = (1..=4).map(|attempt| policy.backoff_before(attempt)).collect();
        assert_eq!(waits, vec![0, 200, 400, 800]);
    }
}
