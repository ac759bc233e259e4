//! The configured embedder: the deterministic local one (offline default), an
//! OpenAI-compatible embeddings endpoint, or Workers AI through its binding.
//! Texts for the remote two are redacted first (secrets and key shapes).

use serde_json::Value;
use worker::Env;

use crate::config::Config;
use crate::memory::embed::{
    openai_embeddings_body, parse_openai_embeddings, parse_workers_ai_embeddings, workers_ai_embeddings_body,
    EmbedError, Embedder, LocalEmbedder, DIMENSIONS,
};
use crate::ops::Op;
use crate::runtime::http::post_json;

/// The Workers AI binding's name in wrangler.toml.
pub const AI_BINDING: &str = crate::bindings::AI.name;
const EMBED_TIMEOUT_MS: u64 = 20_000;

pub enum EdgeEmbedder<'a> {
    Local(LocalEmbedder),
    OpenAi { config: &'a Config, model: String },
    WorkersAi { env: &'a Env, model: String },
}

/// The embedder `EMBEDDING_MODEL` names (`local`, `openai/<model>`, `workers-ai/<model>`).
pub fn embedder<'a>(config: &'a Config, env: &'a Env) -> EdgeEmbedder<'a> {
    match config.embedding_model.split_once('/') {
        Some(("openai", model)) => EdgeEmbedder::OpenAi { config, model: model.to_string() },
        Some(("workers-ai", model)) => EdgeEmbedder::WorkersAi { env, model: model.to_string() },
        _ => EdgeEmbedder::Local(LocalEmbedder::default()),
    }
}

impl Embedder for EdgeEmbedder<'_> {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if let EdgeEmbedder::Local(local) = self {
            return local.embed(texts).await;
        }
        // Text sent to an embeddings API leaves the Worker: no secret goes with it.
        let redactor = crate::runtime::config::redactor();
        let texts: Vec<String> = texts.iter().map(|text| redactor.redact(text).into_owned()).collect();
        let texts = texts.as_slice();
        match self {
            EdgeEmbedder::Local(local) => local.embed(texts).await,
            EdgeEmbedder::OpenAi { config, model } => {
                let url = format!("{}/embeddings", config.openai_base_url.trim_end_matches('/'));
                let authorization = format!("Bearer {}", config.openai_api_key.expose());
                let body = openai_embeddings_body(model, texts);
                let answer =
                    post_json(Op::EmbeddingCall, &url, &[("authorization", &authorization)], &body, EMBED_TIMEOUT_MS)
                        .await
                        .map_err(|failure| EmbedError::Transport(format!("{failure:?}")))?;
                if !(200..300).contains(&answer.status) {
                    return Err(EmbedError::Status(answer.status));
                }
                let response: Value = serde_json::from_slice(&answer.body).unwrap_or_default();
                parse_openai_embeddings(&response)
            }
            EdgeEmbedder::WorkersAi { env, model } => {
                let ai = env.ai(AI_BINDING).map_err(|error| EmbedError::Transport(error.to_string()))?;
                let response: Value = ai
                    .run(model, workers_ai_embeddings_body(texts))
                    .await
                    .map_err(|error| EmbedError::Provider(error.to_string()))?;
                parse_workers_ai_embeddings(&response)
            }
        }
    }

    fn dimensions(&self) -> usize {
        match self {
            EdgeEmbedder::Local(local) => local.dimensions(),
            // The remote models' width is whatever the model gives (bge-small: 384).
            _ => DIMENSIONS,
        }
    }
}

/// One text embedded with the configured embedder.
pub async fn embed_one(config: &Config, env: &Env, text: &str) -> worker::Result<Vec<f32>> {
    let vectors = embedder(config, env).embed(&[text.to_string()]).await.map_err(|error| error.to_string())?;
    vectors.into_iter().next().ok_or_else(|| "the embedder returned nothing".into())
}
