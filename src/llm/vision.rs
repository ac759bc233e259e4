//! Which models see images: the model table the channel asks before it sends
//! an image along with a prompt. A model not listed is treated as blind (the
//! image is described by `VISION_MODEL`, or the person is told).

use super::{ModelSpec, Provider};

/// Model-name prefixes that take image input, per provider.
const OPENAI: &[&str] = &["gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4-turbo", "gpt-5", "o1", "o3", "o4"];
const ANTHROPIC: &[&str] = &["claude-3", "claude-opus-4", "claude-sonnet-4", "claude-haiku-4"];

/// Whether `spec` takes images with its prompt. Workers AI's vision models
/// take them in their own input shape, which edgebot does not send: they
/// count as blind here.
pub fn sees_images(spec: &ModelSpec) -> bool {
    let model = spec.model.to_ascii_lowercase();
    let prefixes = match spec.provider {
        Provider::OpenAi => OPENAI,
        Provider::Anthropic => ANTHROPIC,
        Provider::WorkersAi => return false,
    };
    // `o1-mini` and `o3-mini` read text only.
    prefixes.iter().any(|prefix| model.starts_with(prefix))
        && !model.starts_with("o1-mini")
        && !model.starts_with("o3-mini")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::routing::parse_chain;

    fn sees(chain: &str) -> bool {
        sees_images(&parse_chain(chain).unwrap()[0])
    }

    #[test]
    fn the_table_knows_the_vision_models_and_calls_the_rest_blind() {
        for model in ["openai/gpt-4o-mini", "openai/gpt-4.1", "openai/gpt-5-nano", "anthropic/claude-3-5-haiku-latest"]
        {
            assert!(sees(model), "{model}");
        }
        assert!(sees("anthropic/claude-sonnet-4-5"));
        for model in [
            "openai/gpt-3.5-turbo",
            "openai/o3-mini",
            "openai/scripted-model",
            "workers-ai/@cf/meta/llama-3.2-11b-vision-instruct",
        ] {
            assert!(!sees(model), "{model}");
        }
    }
}
