//! Whether the models can answer at all: a usable model is known from the
//! settings before any call, or learnt from the provider's answer (a refused
//! key, a server that cannot be reached). The chat, the dashboard, `GET
//! /api/status` and `make dev`'s terminal all say it in these words, naming
//! the setting, never its value.

use serde::Serialize;

use super::routing::parse_chain;
use super::{LlmError, Provider};

/// Why the channel's model cannot answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ModelProblem {
    /// No model in the chain has what it needs (a key, a binding): known
    /// before any call, so none is made.
    NotConfigured { setting: String },
    /// The provider refused the key (401 or 403).
    KeyRefused { setting: String },
    /// The model server could not be reached at its base URL.
    Unreachable { setting: String },
    /// The model setting itself cannot be read.
    BadSetting { setting: String },
}

impl ModelProblem {
    /// The setting that fixes it.
    pub fn setting(&self) -> &str {
        match self {
            ModelProblem::NotConfigured { setting }
            | ModelProblem::KeyRefused { setting }
            | ModelProblem::Unreachable { setting }
            | ModelProblem::BadSetting { setting } => setting,
        }
    }

    /// What is wrong and how to fix it, for an operator (the dashboard's
    /// banner, `/api/status`, the terminal).
    pub fn explain(&self) -> String {
        match self {
            ModelProblem::NotConfigured { setting } if setting == "OPENAI_API_KEY" => format!(
                "no language model is set up: set {setting}, or point OPENAI_BASE_URL at any OpenAI-compatible \
                 server (a local Ollama: OPENAI_BASE_URL=http://localhost:11434/v1 with CHANNEL_MODEL=openai/llama3.2)"
            ),
            ModelProblem::NotConfigured { setting } => {
                format!("no language model is set up: {setting} is needed by CHANNEL_MODEL")
            }
            ModelProblem::KeyRefused { setting } => {
                format!("the model provider refused the key in {setting}: check it (and that it may use CHANNEL_MODEL)")
            }
            ModelProblem::Unreachable { setting } => {
                format!("the model server at {setting} cannot be reached: check the URL and that the server runs")
            }
            ModelProblem::BadSetting { setting } => format!("{setting} is not a model chain like openai/gpt-4o-mini"),
        }
    }

    /// What the person writing is told, in plain words (the template's input).
    pub fn for_people(&self) -> &'static str {
        match self {
            ModelProblem::NotConfigured { .. } | ModelProblem::BadSetting { .. } => {
                "no language model has been connected to me"
            }
            ModelProblem::KeyRefused { .. } => "my language model refuses the key I was given",
            ModelProblem::Unreachable { .. } => "I cannot reach my language model",
        }
    }
}

/// The key a provider needs, by its setting's name.
fn key_setting(provider: Provider) -> &'static str {
    match provider {
        Provider::OpenAi => "OPENAI_API_KEY",
        Provider::Anthropic => "ANTHROPIC_API_KEY",
        Provider::WorkersAi => crate::bindings::AI.name,
    }
}

/// What the models can be reached with: which keys are set (never their
/// values), where the OpenAI-compatible server is, whether the `AI` binding is.
#[derive(Debug, Clone, Copy)]
pub struct ModelAccess<'a> {
    pub openai_key: bool,
    pub openai_base_url: &'a str,
    pub anthropic_key: bool,
    pub ai_binding: bool,
}

/// OpenAI's own API, which needs a key.
pub const OPENAI_API: &str = "https://api.openai.com/v1";

/// Whether the model chain `chain` can be called at all, from the settings
/// alone. An OpenAI-compatible server other than OpenAI's may need no key (a
/// local Ollama or llama.cpp server); OpenAI and Anthropic do. Workers AI
/// needs the `AI` binding.
pub fn model_problem(chain: &str, access: &ModelAccess<'_>) -> Option<ModelProblem> {
    let Ok(chain) = parse_chain(chain) else {
        return Some(ModelProblem::BadSetting { setting: "CHANNEL_MODEL".into() });
    };
    let usable = |provider: Provider| match provider {
        Provider::OpenAi => access.openai_key || access.openai_base_url.trim_end_matches('/') != OPENAI_API,
        Provider::Anthropic => access.anthropic_key,
        Provider::WorkersAi => access.ai_binding,
    };
    match chain.iter().any(|spec| usable(spec.provider)) {
        true => None,
        false => Some(ModelProblem::NotConfigured { setting: key_setting(chain[0].provider).into() }),
    }
}

/// What a failed call of the model chain `chain` says about the setup, if
/// anything: a refused key or an unreachable server is the operator's to
/// fix, not a moment's trouble to apologise for.
pub fn problem_of(error: &LlmError, chain: &str) -> Option<ModelProblem> {
    let provider = parse_chain(chain).ok()?.first()?.provider;
    match error {
        LlmError::Status(401 | 403) => Some(ModelProblem::KeyRefused { setting: key_setting(provider).into() }),
        LlmError::Network(_) => {
            let setting = match provider {
                Provider::Anthropic => "ANTHROPIC_BASE_URL",
                _ => "OPENAI_BASE_URL",
            };
            Some(ModelProblem::Unreachable { setting: setting.into() })
        }
        LlmError::Config(_) => Some(ModelProblem::NotConfigured { setting: key_setting(provider).into() }),
        _ => None,
    }
}
