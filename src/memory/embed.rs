//! Embeddings: the [`Embedder`] trait, the deterministic [`LocalEmbedder`] that
//! needs no network (the offline default and the tests' embedder), and the pure
//! request and response shapes of the remote embedders (an OpenAI-compatible
//! `/embeddings` endpoint and Workers AI), whose HTTP calls live in the edge.

use serde_json::{json, Value};
use thiserror::Error;

/// The local embedder's default vector length (the size of common small models,
/// so a store can switch embedders without changing its column layout).
pub const DIMENSIONS: usize = 384;
/// A whole word's weight in the local embedding.
const WORD_WEIGHT: f32 = 1.0;
/// A character trigram's weight: enough to match inflections and typos, less than a word.
const TRIGRAM_WEIGHT: f32 = 0.5;

/// Why texts could not be embedded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EmbedError {
    /// The provider answered with a non-success HTTP status.
    #[error("embedding provider answered HTTP {0}")]
    Status(u16),
    /// The request did not reach the provider or its answer did not arrive.
    #[error("embedding request failed: {0}")]
    Transport(String),
    /// The provider reported an error in its body.
    #[error("embedding provider error: {0}")]
    Provider(String),
    /// The answer is not in the expected shape.
    #[error("malformed embedding response: {0}")]
    Malformed(String),
}

/// Anything that turns texts into vectors, one per text, in order.
#[allow(async_fn_in_trait)] // Workers are single-threaded; futures need not be Send.
pub trait Embedder {
    /// Embeds `texts`; the result has one vector per text, in the same order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// The length of every vector this embedder returns.
    fn dimensions(&self) -> usize;
}

/// A deterministic bag-of-features embedder: each lower-cased word and each
/// character trigram of the space-padded word is hashed (FNV-1a, stable across
/// builds and platforms, unlike std's randomly seeded hasher) into a signed
/// bucket, and the sum is L2-normalised. Texts sharing words or word pieces get a
/// high cosine; it knows nothing of synonyms. Changing the hashing changes every
/// stored vector, so the tests pin it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalEmbedder {
    /// The vector length; 0 gives empty vectors.
    pub dimensions: usize,
}

impl Default for LocalEmbedder {
    fn default() -> Self {
        LocalEmbedder { dimensions: DIMENSIONS }
    }
}

impl LocalEmbedder {
    /// Embeds one text; text without letters or digits gives the zero vector.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0.0_f32; self.dimensions];
        if self.dimensions == 0 {
            return vector;
        }
        let lowered = text.to_lowercase();
        let mut padded: Vec<char> = Vec::new();
        for word in lowered.split(|character: char| !character.is_alphanumeric()).filter(|word| !word.is_empty()) {
            self.add_feature(&mut vector, fnv1a(b'w', word.as_bytes()), WORD_WEIGHT);
            padded.clear();
            padded.push(' ');
            padded.extend(word.chars());
            padded.push(' ');
            for trigram in padded.windows(3) {
                let mut bytes = [0_u8; 12];
                let mut length = 0;
                for character in trigram {
                    length += character.encode_utf8(&mut bytes[length..]).len();
                }
                self.add_feature(&mut vector, fnv1a(b't', &bytes[..length]), TRIGRAM_WEIGHT);
            }
        }
        normalise(&mut vector);
        vector
    }

    fn add_feature(&self, vector: &mut [f32], hash: u64, weight: f32) {
        // The remainder picks the bucket and the top bit the sign, so colliding features
        // cancel out as often as they add up.
        let bucket = (hash % self.dimensions as u64) as usize;
        let sign = if hash >> 63 == 1 { -1.0 } else { 1.0 };
        vector[bucket] += sign * weight;
    }
}

impl Embedder for LocalEmbedder {
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|text| self.embed_one(text)).collect())
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }
}

/// 64-bit FNV-1a of a one-byte tag followed by `bytes`; the tag keeps a word and
/// a trigram with the same letters apart.
fn fnv1a(tag: u8, bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    std::iter::once(&tag).chain(bytes).fold(OFFSET_BASIS, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(PRIME))
}

/// Scales `vector` to unit length; a zero vector stays zero.
fn normalise(vector: &mut [f32]) {
    let norm = vector.iter().map(|value| value * value).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|value| *value /= norm);
    }
}

/// The body of an OpenAI-compatible `POST /embeddings` request. Floats are asked
/// for explicitly: some clients default to base64 and some servers follow suit.
pub fn openai_embeddings_body(model: &str, texts: &[String]) -> Value {
    json!({ "model": model, "input": texts, "encoding_format": "float" })
}

/// The vectors of an OpenAI-compatible embeddings response
/// (`{"data": [{"index": 0, "embedding": [...]}, ...]}`), in input order: the
/// items are sorted by `index` (their position when it is absent), which must
/// then count 0, 1, 2, ….
pub fn parse_openai_embeddings(response: &Value) -> Result<Vec<Vec<f32>>, EmbedError> {
    let Some(items) = response.get("data").and_then(Value::as_array) else {
        return Err(provider_error(response.get("error")).unwrap_or_else(|| malformed("no `data` array")));
    };
    let mut indexed = Vec::with_capacity(items.len());
    for (position, item) in items.iter().enumerate() {
        let index = match item.get("index") {
            None => position as u64,
            Some(index) => index.as_u64().ok_or_else(|| malformed("an `index` is not a whole number"))?,
        };
        let embedding = item.get("embedding").ok_or_else(|| malformed("an item has no `embedding`"))?;
        indexed.push((index, numbers(embedding)?));
    }
    crate::sorting::sort_by(&mut indexed, |a, b| a.0.cmp(&b.0));
    if indexed.iter().enumerate().any(|(position, (index, _))| *index != position as u64) {
        return Err(malformed("the `index` values are not 0..n"));
    }
    uniform(indexed.into_iter().map(|(_, vector)| vector).collect())
}

/// The body of a Workers AI text-embedding request (e.g. `@cf/baai/bge-small-en-v1.5`).
pub fn workers_ai_embeddings_body(texts: &[String]) -> Value {
    json!({ "text": texts })
}

/// The vectors of a Workers AI embedding response, `{"shape": [n, d], "data":
/// [[...], ...]}`, as the binding returns it or wrapped in the REST API's
/// `{"result": {...}, "success": true}`. A `shape` that disagrees with `data`
/// is an error.
pub fn parse_workers_ai_embeddings(response: &Value) -> Result<Vec<Vec<f32>>, EmbedError> {
    if response.get("success").and_then(Value::as_bool) == Some(false) {
        let first_error = response.get("errors").and_then(|errors| errors.get(0));
        return Err(provider_error(first_error).unwrap_or_else(|| EmbedError::Provider("request failed".into())));
    }
    let body = response.get("result").filter(|result| result.is_object()).unwrap_or(response);
    let rows = body.get("data").and_then(Value::as_array).ok_or_else(|| malformed("no `data` array"))?;
    let vectors = uniform(rows.iter().map(numbers).collect::<Result<Vec<_>, _>>()?)?;
    if let Some(shape) = body.get("shape") {
        let width = vectors.first().map(|vector| vector.len() as u64);
        let agrees = match shape.as_array().map(Vec::as_slice) {
            Some([rows, columns]) => {
                rows.as_u64() == Some(vectors.len() as u64) && width.is_none_or(|width| columns.as_u64() == Some(width))
            }
            _ => false,
        };
        if !agrees {
            return Err(malformed("`shape` does not match `data`"));
        }
    }
    Ok(vectors)
}

fn malformed(reason: &str) -> EmbedError {
    EmbedError::Malformed(reason.to_string())
}

/// An `{"message": "..."}` object (or a bare string) as a provider error.
fn provider_error(error: Option<&Value>) -> Option<EmbedError> {
    let error = error?;
    let message = error.get("message").and_then(Value::as_str).or_else(|| error.as_str())?;
    Some(EmbedError::Provider(message.to_string()))
}

/// A JSON array of numbers as floats.
fn numbers(value: &Value) -> Result<Vec<f32>, EmbedError> {
    let array = value.as_array().ok_or_else(|| malformed("an embedding is not an array"))?;
    array
        .iter()
        .map(|number| {
            number.as_f64().map(|number| number as f32).ok_or_else(|| malformed("a component is not a number"))
        })
        .collect()
}

/// Rejects answers whose vectors differ in length: cosine would quietly score them 0.
fn uniform(vectors: Vec<Vec<f32>>) -> Result<Vec<Vec<f32>>, EmbedError> {
    match vectors.first() {
        Some(first) if vectors.iter().any(|vector| vector.len() != first.len()) => {
            Err(malformed("the vectors differ in length"))
        }
        _ => Ok(vectors),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::vector::cosine;

    /// The local embedder never waits, so one poll finishes it.
    fn ready<F: std::future::Future>(future: F) -> F::Output {
        use std::task::{Context, Poll, Waker};
        let mut future = std::pin::pin!(future);
        match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(output) => output,
            Poll::Pending => panic!("the local embedder should not wait"),
        }
    }

    fn similarity(a: &str, b: &str) -> f32 {
        let embedder = LocalEmbedder::default();
        cosine(&embedder.embed_one(a), &embedder.embed_one(b))
    }

    #[test]
    fn the_hash_is_fnv1a_and_the_features_are_pinned() {
        // Published FNV-1a 64 values of "a" and "foobar" (the tag is the first byte).
        assert_eq!(fnv1a(b'a', b""), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b'f', b"oobar"), 0x8594_4171_f739_67e8);
        // Stored vectors depend on this exact hashing: a change must be deliberate.
        let vector = LocalEmbedder::default().embed_one("hello");
        let signed_buckets: Vec<(usize, bool)> =
            (0..vector.len()).filter(|index| vector[*index] != 0.0).map(|index| (index, vector[index] > 0.0)).collect();
        assert_eq!(signed_buckets, PINNED_HELLO);
    }

    /// The buckets (and whether positive) of "hello": its word and five trigrams.
    const PINNED_HELLO: [(usize, bool); 6] =
        [(36, true), (82, false), (226, false), (258, true), (262, true), (304, true)];

    #[test]
    fn vectors_are_unit_length_deterministic_and_sized() {
        let embedder = LocalEmbedder { dimensions: 64 };
        let vector = embedder.embed_one("The quick brown fox");
        assert_eq!(vector.len(), 64);
        let norm = vector.iter().map(|value| value * value).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
        assert_eq!(vector, embedder.embed_one("The quick brown fox"));
        assert_eq!(embedder.dimensions(), 64);
    }

    #[test]
    fn case_and_punctuation_do_not_matter() {
        let embedder = LocalEmbedder::default();
        assert_eq!(embedder.embed_one("Hello, World!"), embedder.embed_one("hello world"));
        assert_eq!(embedder.embed_one("Ünïcode Straße"), embedder.embed_one("ünïcode straße"));
    }

    #[test]
    fn shared_words_score_higher_than_unrelated_text() {
        let close = similarity("Ada prefers green tea in the morning", "In the morning Ada prefers green tea");
        let near = similarity("Ada prefers green tea", "Ada preferred green teas");
        let far = similarity("Ada prefers green tea", "quarterly revenue report deadline");
        assert!(close > 0.99, "{close}");
        assert!(near > 0.5 && near < close, "{near}");
        assert!(far < 0.2, "{far}");
    }

    #[test]
    fn text_without_words_embeds_to_zeros_and_zero_dimensions_do_not_panic() {
        assert_eq!(LocalEmbedder { dimensions: 8 }.embed_one(" ,.!? "), vec![0.0; 8]);
        assert_eq!(LocalEmbedder { dimensions: 0 }.embed_one("hello"), Vec::<f32>::new());
    }

    #[test]
    fn the_trait_embeds_each_text_in_order() {
        let embedder = LocalEmbedder { dimensions: 32 };
        let texts = vec!["one".to_string(), String::new(), "two".to_string()];
        let vectors = ready(embedder.embed(&texts)).unwrap();
        assert_eq!(vectors, texts.iter().map(|text| embedder.embed_one(text)).collect::<Vec<_>>());
    }

    #[test]
    fn request_bodies_carry_the_texts() {
        let texts = vec!["a".to_string(), "b".to_string()];
        assert_eq!(
            openai_embeddings_body("text-embedding-3-small", &texts),
            json!({"model": "text-embedding-3-small", "input": ["a", "b"], "encoding_format": "float"})
        );
        assert_eq!(workers_ai_embeddings_body(&texts), json!({"text": ["a", "b"]}));
    }

    #[test]
    fn openai_responses_are_put_back_in_input_order() {
        let response = json!({"object": "list", "data": [
            {"index": 1, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.5]},
        ]});
        assert_eq!(parse_openai_embeddings(&response), Ok(vec![vec![1.0, 0.5], vec![0.0, 1.0]]));
        let without_index = json!({"data": [{"embedding": [1]}, {"embedding": [2]}]});
        assert_eq!(parse_openai_embeddings(&without_index), Ok(vec![vec![1.0], vec![2.0]]));
        assert_eq!(parse_openai_embeddings(&json!({"data": []})), Ok(vec![]));
    }

    #[test]
    fn malformed_openai_responses_are_errors() {
        let cases = [
            json!({}),
            json!({"data": {}}),
            json!({"data": [{"index": 0}]}),
            json!({"data": [{"index": 0, "embedding": "AAAA"}]}),
            json!({"data": [{"index": 0, "embedding": [1, "x"]}]}),
            json!({"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [2]}]}),
            json!({"data": [{"index": -1, "embedding": [1]}]}),
            json!({"data": [{"index": 0, "embedding": [1]}, {"index": 1, "embedding": [1, 2]}]}),
        ];
        for response in cases {
            assert!(matches!(parse_openai_embeddings(&response), Err(EmbedError::Malformed(_))), "{response}");
        }
        let error = json!({"error": {"message": "model not found", "type": "invalid_request_error"}});
        assert_eq!(parse_openai_embeddings(&error), Err(EmbedError::Provider("model not found".into())));
    }

    #[test]
    fn workers_ai_responses_parse_bare_or_wrapped() {
        let bare = json!({"shape": [2, 3], "data": [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]});
        let expected = vec![vec![0.1, 0.2, 0.3], vec![0.4, 0.5, 0.6]];
        assert_eq!(parse_workers_ai_embeddings(&bare), Ok(expected.clone()));
        let wrapped = json!({"result": bare, "success": true, "errors": [], "messages": []});
        assert_eq!(parse_workers_ai_embeddings(&wrapped), Ok(expected));
        assert_eq!(parse_workers_ai_embeddings(&json!({"data": [[1.0]]})), Ok(vec![vec![1.0]]));
    }

    #[test]
    fn bad_workers_ai_responses_are_errors() {
        let cases = [
            json!({"shape": [3, 3], "data": [[0.1, 0.2, 0.3]]}),
            json!({"shape": [1, 2], "data": [[0.1, 0.2, 0.3]]}),
            json!({"shape": "1x3", "data": [[0.1, 0.2, 0.3]]}),
            json!({"data": [[0.1], [0.2, 0.3]]}),
            json!({"result": {"shape": [1, 1]}}),
            json!({"data": [["x"]]}),
        ];
        for response in cases {
            assert!(matches!(parse_workers_ai_embeddings(&response), Err(EmbedError::Malformed(_))), "{response}");
        }
        let failed = json!({"success": false, "errors": [{"code": 5007, "message": "No such model"}], "result": null});
        assert_eq!(parse_workers_ai_embeddings(&failed), Err(EmbedError::Provider("No such model".into())));
    }
}
