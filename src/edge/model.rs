//! The channel's model, reached over HTTP, with bounded retries.

use crate::channel::turn::ChatModel;
use crate::config::Config;
use crate::llm::{openai, ChatRequest, Completion, LlmError, ModelSpec, Provider};

use super::http::{post_json, sleep_ms, HttpFailure};

/// A configured model endpoint.
pub struct HttpModel<'a> {
    config: &'a Config,
    spec: ModelSpec,
}

impl<'a> HttpModel<'a> {
    pub fn new(config: &'a Config, model: &str) -> Result<Self, LlmError> {
        Ok(HttpModel { config, spec: ModelSpec::parse(model)? })
    }

    pub fn model_name(&self) -> &str {
        &self.spec.model
    }

    async fn complete_once(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        match self.spec.provider {
            Provider::OpenAi => {
                let authorization = format!("Bearer {}", self.config.openai_api_key);
                let answer = post_json(
                    &openai::endpoint(&self.config.openai_base_url),
                    &[("authorization", &authorization)],
                    &openai::request_body(request),
                    self.config.llm_timeout_ms,
                )
                .await
                .map_err(|failure| match failure {
                    HttpFailure::Timeout => LlmError::Timeout,
                    HttpFailure::Network(message) => LlmError::Network(message),
                })?;
                if !(200..300).contains(&answer.status) {
                    return Err(LlmError::Status(answer.status));
                }
                openai::parse_response(&answer.body)
            }
        }
    }
}

impl ChatModel for HttpModel<'_> {
    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        let policy = self.config.llm_retry;
        let mut attempt = 1;
        loop {
            sleep_ms(policy.backoff_before(attempt)).await;
            match self.complete_once(request).await {
                Err(error) if error.is_retryable() && attempt < policy.max_attempts => {
                    worker::console_warn!("model call attempt {attempt} failed: {error}; retrying");
                    attempt += 1;
                }
                result => return result,
            }
        }
    }
}
