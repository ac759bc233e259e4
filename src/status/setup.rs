//! What a deployment still lacks before people can talk to the bot: a
//! usable model ([`crate::llm::readiness`], from the settings) and each
//! platform's credentials, for `GET /api/status`, the dashboard's banner and
//! `make dev`'s terminal.

use crate::config::Config;
use crate::llm::readiness::{self, ModelAccess, ModelProblem};
use crate::platforms::Platform;

/// Whether the channel's model can be called, from the settings alone.
pub fn model_problem(config: &Config, ai_binding: bool) -> Option<ModelProblem> {
    let access = ModelAccess {
        openai_key: config.openai_api_key.is_set(),
        openai_base_url: &config.openai_base_url,
        anthropic_key: config.anthropic_api_key.is_set(),
        ai_binding,
    };
    readiness::model_problem(&config.channel_model, &access)
}

/// The platforms with no credentials at all (a person cannot reach the bot there yet).
pub fn unconnected_platforms(config: &Config) -> Vec<&'static str> {
    Platform::ALL.into_iter().filter_map(|platform| platform.unconnected(config)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_needs_a_key_unless_it_is_a_server_of_your_own() {
        let none = model_problem(&Config::of(&[]), false).expect("OpenAI with no key");
        assert_eq!(none, ModelProblem::NotConfigured { setting: "OPENAI_API_KEY".into() });
        assert!(none.explain().contains("OPENAI_BASE_URL"), "the way without a key is named: {}", none.explain());
        assert_eq!(model_problem(&Config::of(&[("OPENAI_API_KEY", "sk-test-0123456789")]), false), None);
        let local = Config::of(&[("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")]);
        assert_eq!(model_problem(&local, false), None, "a local OpenAI-compatible server needs no key");
        let default_with_slash = Config::of(&[("OPENAI_BASE_URL", "https://api.openai.com/v1/")]);
        assert!(model_problem(&default_with_slash, false).is_some());

        let anthropic = Config::of(&[("CHANNEL_MODEL", "anthropic/claude-3-5-haiku-latest")]);
        assert_eq!(
            model_problem(&anthropic, false),
            Some(ModelProblem::NotConfigured { setting: "ANTHROPIC_API_KEY".into() })
        );
        let fallback = Config::of(&[("CHANNEL_MODEL", "anthropic/claude,openai/gpt-4o-mini"), ("OPENAI_API_KEY", "k")]);
        assert_eq!(model_problem(&fallback, false), None, "one usable model in the chain is enough");
        let workers_ai = Config::of(&[("CHANNEL_MODEL", "workers-ai/@cf/meta/llama-3.1-8b-instruct")]);
        assert!(model_problem(&workers_ai, false).is_some());
        assert_eq!(model_problem(&workers_ai, true), None);
        let garbled = Config::of(&[("CHANNEL_MODEL", "gpt-4o")]);
        assert_eq!(model_problem(&garbled, false), Some(ModelProblem::BadSetting { setting: "CHANNEL_MODEL".into() }));
    }

    #[test]
    fn a_refused_key_and_an_unreachable_server_are_setup_problems_and_a_bad_moment_is_not() {
        use crate::llm::readiness::problem_of;
        use crate::llm::LlmError;
        let openai = "openai/gpt-4o-mini";
        for status in [401, 403] {
            let problem = problem_of(&LlmError::Status(status), openai).expect("refused");
            assert_eq!(problem.setting(), "OPENAI_API_KEY");
        }
        let unreachable = problem_of(&LlmError::Network("connection refused".into()), openai).unwrap();
        assert_eq!(unreachable, ModelProblem::Unreachable { setting: "OPENAI_BASE_URL".into() });
        for passing in
            [LlmError::Status(500), LlmError::Status(429), LlmError::Timeout, LlmError::Malformed("x".into())]
        {
            assert_eq!(problem_of(&passing, openai), None, "{passing}: an apology, not a setup problem");
        }
        assert_eq!(problem_of(&LlmError::Status(401), "anthropic/claude").unwrap().setting(), "ANTHROPIC_API_KEY");
    }

    #[test]
    fn platforms_without_credentials_are_named() {
        assert_eq!(unconnected_platforms(&Config::of(&[])).len(), 7);
        let telegram = Config::of(&[("TELEGRAM_BOT_TOKEN", "1:abc")]);
        assert!(unconnected_platforms(&telegram).iter().all(|name| !name.starts_with("Telegram")));
    }
}
