//! Model routing: a process's model is a chain (`primary,fallback,...`); a call
//! falls back on rate limits, server errors and timeouts, never on bad
//! requests or bad keys, and a rate-limited model cools down for a minute.

use std::collections::BTreeMap;

use super::{LlmError, ModelSpec};

/// How long a rate-limited model is skipped.
pub const COOLDOWN_MS: i64 = 60_000;

/// Parses a chain such as `openai/gpt-4o, anthropic/claude-3-5-haiku-latest`.
pub fn parse_chain(chain: &str) -> Result<Vec<ModelSpec>, LlmError> {
    let models: Vec<ModelSpec> = chain
        .split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(ModelSpec::parse)
        .collect::<Result<_, _>>()?;
    if models.is_empty() {
        return Err(LlmError::Config("no model configured".into()));
    }
    Ok(models)
}

/// Whether a failed call should move on to the next model of the chain.
pub fn falls_back(error: &LlmError) -> bool {
    match error {
        LlmError::Status(status) => *status == 429 || *status >= 500,
        LlmError::Timeout | LlmError::Network(_) => true,
        LlmError::Malformed(_) | LlmError::Config(_) => false,
    }
}

/// Which models are cooling down after a rate limit, until when.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cooldowns {
    until_ms: BTreeMap<String, i64>,
}

impl Cooldowns {
    /// Notes a failure; a rate limit starts the model's cooldown.
    pub fn record(&mut self, model: &ModelSpec, error: &LlmError, now_ms: i64) {
        if *error == LlmError::Status(429) {
            self.until_ms.insert(model.key(), now_ms + COOLDOWN_MS);
        }
    }

    pub fn is_cooling(&self, model: &ModelSpec, now_ms: i64) -> bool {
        self.until_ms.get(&model.key()).is_some_and(|&until| until > now_ms)
    }

    /// The chain in the order to try it: models not cooling down first; if
    /// every model is cooling down, the whole chain anyway (better than nothing).
    pub fn order<'a>(&self, chain: &'a [ModelSpec], now_ms: i64) -> Vec<&'a ModelSpec> {
        let ready: Vec<&ModelSpec> = chain.iter().filter(|model| !self.is_cooling(model, now_ms)).collect();
        if ready.is_empty() {
            chain.iter().collect()
        } else {
            ready
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_parse_and_empty_ones_are_refused() {
        let chain = parse_chain("openai/a, anthropic/b").unwrap();
        assert_eq!(chain.iter().map(|model| model.model.as_str()).collect::<Vec<_>>(), vec!["a", "b"]);
        assert!(parse_chain(" , ").is_err());
        assert!(parse_chain("openai/a,nonsense").is_err());
    }

    #[test]
    fn transient_failures_are_retried_and_only_unanswered_calls_fall_back() {
        // (the failure, retried with the same model, falls back to the next model)
        let cases = [
            (LlmError::Status(429), true, true),
            (LlmError::Status(500), true, true),
            (LlmError::Status(503), true, true),
            (LlmError::Timeout, true, true),
            (LlmError::Network("reset".into()), true, true),
            (LlmError::Malformed("x".into()), true, false),
            (LlmError::Status(400), false, false),
            (LlmError::Status(401), false, false),
            (LlmError::Status(404), false, false),
            (LlmError::Config("x".into()), false, false),
        ];
        for (error, retried, next_model) in cases {
            assert_eq!((error.is_retryable(), falls_back(&error)), (retried, next_model), "{error}");
        }
    }

    #[test]
    fn a_rate_limited_model_cools_down_for_a_minute() {
        let chain = parse_chain("openai/a,openai/b").unwrap();
        let mut cooldowns = Cooldowns::default();
        cooldowns.record(&chain[0], &LlmError::Status(503), 0);
        assert_eq!(cooldowns.order(&chain, 1).len(), 2, "a server error starts no cooldown");
        cooldowns.record(&chain[0], &LlmError::Status(429), 0);
        assert_eq!(cooldowns.order(&chain, 1)[0].model, "b");
        assert_eq!(cooldowns.order(&chain, COOLDOWN_MS)[0].model, "a", "back after the cooldown");
        cooldowns.record(&chain[1], &LlmError::Status(429), 10);
        assert_eq!(cooldowns.order(&chain, 20).len(), 2, "all cooling: try them all anyway");
    }
}
