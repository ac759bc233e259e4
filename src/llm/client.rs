//! The models, reached over HTTP: a chain of `provider/model` entries tried in
//! order, each with bounded retries, rate-limited ones cooling down.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use futures_util::future::{select, Either};
use worker::{Delay, Env};

use crate::budget::rules::Spend;
use crate::config::Config;
use crate::llm::routing::{falls_back, parse_chain, Cooldowns};
use crate::llm::stream::{Assembler, Wire};
use crate::llm::ChatModel;
use crate::llm::{anthropic, openai, workers_ai, ChatRequest, Completion, LlmError, ModelSpec, Provider};
use crate::log_line::LogLine;

use crate::memory::embedder::AI_BINDING;
use crate::ops::Op;
use crate::runtime::config;
use crate::runtime::http::now_ms;
use crate::runtime::http::post_events;
use crate::runtime::http::post_json;
use crate::runtime::http::read_events;
use crate::runtime::http::sleep_ms;
use crate::runtime::http::HttpFailure;
use crate::runtime::log::Emit;

thread_local! {
    /// Cooldowns live as long as the isolate: every object and job in it shares them.
    static COOLDOWNS: RefCell<Cooldowns> = RefCell::new(Cooldowns::default());
}

/// A configured model chain.
pub struct HttpModel<'a> {
    config: &'a Config,
    /// For the Workers AI binding.
    env: &'a Env,
    chain: Vec<ModelSpec>,
    /// What the calls through this chain cost so far, each priced by the model that answered.
    spent: Cell<Spend>,
}

impl<'a> HttpModel<'a> {
    /// `chain` is a process's model setting, e.g. `openai/gpt-4o,anthropic/claude-3-5-haiku-latest`.
    pub fn new(config: &'a Config, env: &'a Env, chain: &str) -> Result<Self, LlmError> {
        Ok(HttpModel { config, env, chain: parse_chain(chain)?, spent: Cell::new(Spend::default()) })
    }

    /// Tokens and price of every successful call made through this chain.
    pub fn spent(&self) -> Spend {
        self.spent.get()
    }

    /// Workers AI runs through the binding, not over HTTP; watched, it streams
    /// (`stream: true` makes the binding answer with server-sent events).
    async fn complete_on_workers_ai(
        &self,
        request: &ChatRequest,
        watch: Option<&dyn Fn(&Assembler)>,
    ) -> Result<Completion, LlmError> {
        let ai = self.env.ai(AI_BINDING).map_err(|error| LlmError::Config(format!("Workers AI: {error}")))?;
        let mut body = scrubbed(workers_ai::request_body(request), &request.model);
        crate::ops::count(Op::ModelCall);
        // The binding's errors carry no status; treat them as transient.
        let failed = |error: worker::Error| LlmError::Network(error.to_string());
        let deadline = || Delay::from(Duration::from_millis(self.config.llm_timeout_ms));
        let Some(watch) = watch else {
            let run = ai.run::<_, serde_json::Value>(&request.model, body);
            return match select(Box::pin(run), deadline()).await {
                Either::Left((answer, _)) => workers_ai::parse_response(&answer.map_err(failed)?),
                Either::Right(_) => Err(LlmError::Timeout),
            };
        };
        body["stream"] = true.into();
        let run = ai.run_bytes(&request.model, body);
        let stream = match select(Box::pin(run), deadline()).await {
            Either::Left((stream, _)) => stream.map_err(failed)?,
            Either::Right(_) => return Err(LlmError::Timeout),
        };
        let mut assembling = Assembling::new(Wire::WorkersAi, watch);
        read_events(stream, self.config.llm_timeout_ms, &mut |data| assembling.take(data))
            .await
            .map_err(model_failure)?;
        assembling.finish()
    }

    /// The primary model's name (requests are re-addressed per model tried).
    pub fn model_name(&self) -> &str {
        &self.chain[0].model
    }

    async fn complete_once(
        &self,
        spec: &ModelSpec,
        request: &ChatRequest,
        watch: Option<&dyn Fn(&Assembler)>,
    ) -> Result<Completion, LlmError> {
        let request = ChatRequest { model: spec.model.clone(), ..request.clone() };
        let (url, authorization, body) = match spec.provider {
            Provider::WorkersAi => return self.complete_on_workers_ai(&request, watch).await,
            Provider::OpenAi => (
                openai::endpoint(&self.config.openai_base_url),
                ("authorization", format!("Bearer {}", self.config.openai_api_key.expose())),
                openai::request_body(&request),
            ),
            Provider::Anthropic => (
                anthropic::endpoint(&self.config.anthropic_base_url),
                ("x-api-key", self.config.anthropic_api_key.expose().to_string()),
                anthropic::request_body(&request),
            ),
        };
        let body = scrubbed(body, &request.model);
        let headers = [(authorization.0, authorization.1.as_str()), ("anthropic-version", anthropic::API_VERSION)];
        let headers = if spec.provider == Provider::Anthropic { &headers[..] } else { &headers[..1] };
        if let Some(watch) = watch {
            return self.stream_once(spec.provider, &url, headers, body, watch).await;
        }
        let answer =
            post_json(Op::ModelCall, &url, headers, &body, self.config.llm_timeout_ms).await.map_err(model_failure)?;
        if !(200..300).contains(&answer.status) {
            return Err(LlmError::Status(answer.status));
        }
        match spec.provider {
            Provider::Anthropic => anthropic::parse_response(&answer.body),
            _ => openai::parse_response(&answer.body),
        }
    }
}

impl HttpModel<'_> {
    /// One streamed call: the chunks go to an [`Assembler`], which `watch` sees
    /// after each; the finished answer is the same as a whole one.
    async fn stream_once(
        &self,
        provider: Provider,
        url: &str,
        headers: &[(&str, &str)],
        mut body: serde_json::Value,
        watch: &dyn Fn(&Assembler),
    ) -> Result<Completion, LlmError> {
        body["stream"] = true.into();
        let wire = match provider {
            Provider::Anthropic => Wire::Anthropic,
            _ => {
                body["stream_options"] = serde_json::json!({ "include_usage": true });
                Wire::OpenAi
            }
        };
        let mut assembling = Assembling::new(wire, watch);
        let mut take = |data: &str| assembling.take(data);
        let answer = post_events(Op::ModelCall, url, headers, &body, self.config.llm_timeout_ms, &mut take)
            .await
            .map_err(model_failure)?;
        if !(200..300).contains(&answer.status) {
            return Err(LlmError::Status(answer.status));
        }
        match answer.events {
            true => assembling.finish(),
            false => match provider {
                Provider::Anthropic => anthropic::parse_response(&answer.body),
                _ => openai::parse_response(&answer.body),
            },
        }
    }

    /// Tries the chain: each model with bounded retries, rate-limited ones cooling down.
    async fn answer(&self, request: &ChatRequest, watch: Option<&dyn Fn(&Assembler)>) -> Result<Completion, LlmError> {
        let policy = self.config.llm_retry;
        let order: Vec<ModelSpec> =
            COOLDOWNS.with(|cooldowns| cooldowns.borrow().order(&self.chain, now_ms()).into_iter().cloned().collect());
        let mut last_error = LlmError::Config("no model configured".into());
        for (place, spec) in order.iter().enumerate() {
            // A rate limit moves on to the next model at once; the last one
            // has nowhere to move, so it is retried after the backoff.
            let has_fallback = place + 1 < order.len();
            let mut attempt = 1;
            loop {
                sleep_ms(policy.backoff_before(attempt)).await;
                let started = now_ms();
                let error = match self.complete_once(spec, request, watch).await.and_then(Completion::checked) {
                    Ok(completion) => {
                        let mut spent = self.spent.get();
                        spent.add(Spend::of_call(&spec.key(), completion.usage));
                        self.spent.set(spent);
                        LogLine::info("model_call")
                            .field("model", spec.key())
                            .field("attempt", attempt)
                            .duration_ms(now_ms() - started)
                            .tokens(completion.usage)
                            .emit();
                        return Ok(completion);
                    }
                    Err(error) => error,
                };
                COOLDOWNS.with(|cooldowns| cooldowns.borrow_mut().record(spec, &error, now_ms()));
                LogLine::warn("model_call_failed")
                    .field("model", spec.key())
                    .field("attempt", attempt)
                    .duration_ms(now_ms() - started)
                    .reason(&error)
                    .emit();
                let moves_on = error == LlmError::Status(429) && has_fallback;
                if error.is_retryable() && !moves_on && attempt < policy.max_attempts {
                    attempt += 1;
                    continue;
                }
                if !falls_back(&error) {
                    return Err(error);
                }
                last_error = error;
                break;
            }
        }
        Err(last_error)
    }
}

impl ChatModel for HttpModel<'_> {
    async fn complete(&self, request: &ChatRequest) -> Result<Completion, LlmError> {
        self.answer(request, None).await
    }

    /// Streams from OpenAI-compatible, Anthropic and Workers AI models.
    async fn complete_watched(
        &self,
        request: &ChatRequest,
        watch: &dyn Fn(&Assembler),
    ) -> Result<Completion, LlmError> {
        self.answer(request, Some(watch)).await
    }
}

/// A streamed answer being put together: each event's chunk goes to the
/// [`Assembler`], which `watch` sees after each; the first broken chunk ends it.
struct Assembling<'a> {
    assembler: Assembler,
    watch: &'a dyn Fn(&Assembler),
    broken: Option<LlmError>,
}

impl<'a> Assembling<'a> {
    fn new(wire: Wire, watch: &'a dyn Fn(&Assembler)) -> Self {
        Assembling { assembler: Assembler::new(wire), watch, broken: None }
    }

    fn take(&mut self, data: &str) {
        if self.broken.is_none() {
            match self.assembler.take(data) {
                Ok(()) => (self.watch)(&self.assembler),
                Err(error) => self.broken = Some(error),
            }
        }
    }

    fn finish(self) -> Result<Completion, LlmError> {
        match self.broken {
            Some(error) => Err(error),
            None => self.assembler.finish(),
        }
    }
}

fn model_failure(failure: HttpFailure) -> LlmError {
    match failure {
        HttpFailure::Timeout => LlmError::Timeout,
        HttpFailure::Network(message) => LlmError::Network(message),
    }
}

/// A prompt never carries a configured secret to a model: any found (pasted
/// by a person, fetched by a tool) is scrubbed, and the event logged.
fn scrubbed(mut body: serde_json::Value, model: &str) -> serde_json::Value {
    if config::redactor().scrub_json(&mut body) {
        LogLine::warn("prompt_scrubbed").field("model", model).emit();
    }
    body
}
