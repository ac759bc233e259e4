//! Exact vector search for the embedded default, where vectors live in a D1
//! TEXT column beside their memory: cosine similarity, a compact text encoding,
//! and an exact top-k scan over candidate vectors (the short list that the
//! sketches of [`super::sketch`] pick from all memories).
//!
//! The encoding stores one signed byte per component, base64 (standard alphabet,
//! padded): 384 dimensions take 512 characters instead of 4–7 KB of JSON. Each
//! vector is scaled so its largest component becomes ±127 before rounding, not
//! multiplied by a fixed 127: a unit vector of 384 dimensions has components near
//! ±0.05, which a fixed scale would squeeze into about ±6 steps. Cosine ignores
//! length, so the scale is not stored and decoding returns a unit vector. The
//! rounding error is at most half a step, 1/254 of the largest component, per
//! component; for 384-dimensional embeddings the decoded vector's cosine with the
//! original stays above 0.999, so a score moves by about ±0.001 (the tests hold it
//! to that), below the gaps between the thresholds that act on it (0.75, 0.9, 0.95).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Cosine similarity in [-1, 1]; 0 when either vector is all zeros, empty, or
/// the lengths differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut norm_a, mut norm_b) = (0.0_f32, 0.0_f32, 0.0_f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        norm_a += x * x;
        norm_b += y * y;
    }
    if norm_a == 0.0 || norm_b == 0.0 {
        return 0.0;
    }
    (dot / (norm_a.sqrt() * norm_b.sqrt())).clamp(-1.0, 1.0)
}

/// Σ a·b over the common length, summed four ways (see [`dot_and_norm_plain`]):
/// for callers that compare many pairs and have the norms already.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0_f32; 4];
    let (a_chunks, b_chunks) = (a.chunks_exact(4), b.chunks_exact(4));
    let (a_rest, b_rest) = (a_chunks.remainder(), b_chunks.remainder());
    for (x, y) in a_chunks.zip(b_chunks) {
        sums[0] += x[0] * y[0];
        sums[1] += x[1] * y[1];
        sums[2] += x[2] * y[2];
        sums[3] += x[3] * y[3];
    }
    let sum = sums[0] + sums[1] + sums[2] + sums[3];
    sum + a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum::<f32>()
}

/// Encodes a vector as base64 of one signed byte per component, scaled so the
/// largest magnitude is 127 (see the module doc for the precision). Non-finite
/// components are stored as 0.
pub fn encode_vector(vector: &[f32]) -> String {
    let largest =
        vector.iter().filter(|value| value.is_finite()).fold(0.0_f32, |largest, value| largest.max(value.abs()));
    let scale = if largest > 0.0 { 127.0 / largest } else { 0.0 };
    let bytes: Vec<u8> = vector
        .iter()
        .map(|value| if value.is_finite() { (value * scale).round().clamp(-127.0, 127.0) as i8 as u8 } else { 0 })
        .collect();
    encode_base64(&bytes)
}

/// Decodes [`encode_vector`]'s text to a unit vector (all zeros stays all zeros);
/// `None` for text that is not valid padded base64.
pub fn decode_vector(encoded: &str) -> Option<Vec<f32>> {
    let mut bytes = Vec::new();
    if !decode_base64_into(encoded, &mut bytes) {
        return None;
    }
    let norm = bytes.iter().map(|byte| i64::from(*byte as i8).pow(2)).sum::<i64>() as f32;
    let scale = if norm > 0.0 { 1.0 / norm.sqrt() } else { 0.0 };
    Some(bytes.iter().map(|byte| f32::from(*byte as i8) * scale).collect())
}

/// A candidate's vector as the scan receives it: in memory, or as stored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StoredVector<'a> {
    /// Plain floats, e.g. from Vectorize or a fresh embedding.
    Plain(&'a [f32]),
    /// [`encode_vector`]'s text, straight from the D1 column.
    Encoded(&'a str),
}

impl<'a> From<&'a [f32]> for StoredVector<'a> {
    fn from(vector: &'a [f32]) -> Self {
        StoredVector::Plain(vector)
    }
}

impl<'a> From<&'a Vec<f32>> for StoredVector<'a> {
    fn from(vector: &'a Vec<f32>) -> Self {
        StoredVector::Plain(vector)
    }
}

impl<'a> From<&'a str> for StoredVector<'a> {
    fn from(encoded: &'a str) -> Self {
        StoredVector::Encoded(encoded)
    }
}

impl<'a> From<&'a String> for StoredVector<'a> {
    fn from(encoded: &'a String) -> Self {
        StoredVector::Encoded(encoded)
    }
}

/// The `k` candidates most similar to `query` with a cosine of at least
/// `min_score`, best first, equal scores by id. Exact: every candidate is
/// scored. Candidates whose vector does not decode, whose length differs from
/// the query's, or that hold a non-finite number are skipped (they belong to
/// another embedder or are damaged).
///
/// Per candidate it allocates nothing: encoded vectors are decoded into one
/// reused byte buffer and scored against the float query directly, and only the
/// `k` kept ids are copied at the end.
pub fn scan<'a, V: Into<StoredVector<'a>>>(
    query: &[f32],
    candidates: impl IntoIterator<Item = (&'a str, V)>,
    k: usize,
    min_score: f32,
) -> Vec<(String, f32)> {
    if k == 0 {
        return Vec::new();
    }
    let query_norm = query.iter().map(|value| value * value).sum::<f32>().sqrt();
    let mut kept: BinaryHeap<Reverse<Scored<'a>>> = BinaryHeap::with_capacity(k.min(1024));
    let mut buffer = Vec::with_capacity(query.len());
    for (id, vector) in candidates {
        let Some((dot, norm_squared)) = dot_and_norm(query, vector.into(), &mut buffer) else {
            continue;
        };
        let score = if query_norm > 0.0 && norm_squared > 0.0 {
            (dot / (query_norm * norm_squared.sqrt())).clamp(-1.0, 1.0)
        } else {
            0.0
        };
        if score.is_nan() || score < min_score {
            continue;
        }
        let candidate = Scored { score, id };
        if kept.len() < k {
            kept.push(Reverse(candidate));
        } else if let Some(mut worst) = kept.peek_mut() {
            if candidate > worst.0 {
                *worst = Reverse(candidate);
            }
        }
    }
    let mut best: Vec<Scored<'a>> = kept.into_iter().map(|Reverse(scored)| scored).collect();
    crate::sorting::sort_by(&mut best, |a, b| b.cmp(a));
    best.into_iter().map(|scored| (scored.id.to_string(), scored.score)).collect()
}

/// The dot product with `query` and the squared norm of `vector`, or `None` when
/// it does not decode, its length differs from the query's, or it has a
/// non-finite component.
fn dot_and_norm(query: &[f32], vector: StoredVector<'_>, buffer: &mut Vec<u8>) -> Option<(f32, f32)> {
    match vector {
        StoredVector::Plain(vector) => {
            if vector.len() != query.len() {
                return None;
            }
            let (dot, norm) = dot_and_norm_plain(query, vector);
            // A NaN or infinite component would otherwise score as a zero vector.
            (dot.is_finite() && norm.is_finite()).then_some((dot, norm))
        }
        StoredVector::Encoded(encoded) => {
            if !decode_base64_into(encoded, buffer) || buffer.len() != query.len() {
                return None;
            }
            Some(dot_and_norm_quantised(query, buffer))
        }
    }
}

// The two loops below are unrolled by hand into four independent sums: the
// release build optimises for size (opt-level "z"), which neither unrolls nor
// vectorises, and four sums let the additions overlap instead of waiting on
// each other. Measured natively at opt-level "z", an encoded scan of 10,000
// vectors of 384 dimensions (decoding included) went from ~65 ms with iterator
// sums and a growing buffer to ~12 ms; plain vectors take ~5 ms.

/// Σ q·v and Σ v² of two float vectors of equal length.
fn dot_and_norm_plain(query: &[f32], vector: &[f32]) -> (f32, f32) {
    let (mut dot, mut norm) = ([0.0_f32; 4], [0.0_f32; 4]);
    let (query_chunks, vector_chunks) = (query.chunks_exact(4), vector.chunks_exact(4));
    let (query_rest, vector_rest) = (query_chunks.remainder(), vector_chunks.remainder());
    for (q, v) in query_chunks.zip(vector_chunks) {
        dot[0] += q[0] * v[0];
        dot[1] += q[1] * v[1];
        dot[2] += q[2] * v[2];
        dot[3] += q[3] * v[3];
        norm[0] += v[0] * v[0];
        norm[1] += v[1] * v[1];
        norm[2] += v[2] * v[2];
        norm[3] += v[3] * v[3];
    }
    let (mut dot, mut norm) = (dot[0] + dot[1] + dot[2] + dot[3], norm[0] + norm[1] + norm[2] + norm[3]);
    for (q, v) in query_rest.iter().zip(vector_rest) {
        dot += q * v;
        norm += v * v;
    }
    (dot, norm)
}

/// Σ q·v and Σ v² of a float query and a stored vector of signed bytes; the
/// squares are summed exactly, as integers (wide enough for any length).
fn dot_and_norm_quantised(query: &[f32], bytes: &[u8]) -> (f32, f32) {
    let mut dot = [0.0_f32; 4];
    let mut norm = 0_i64;
    let (query_chunks, byte_chunks) = (query.chunks_exact(4), bytes.chunks_exact(4));
    let (query_rest, byte_rest) = (query_chunks.remainder(), byte_chunks.remainder());
    for (q, b) in query_chunks.zip(byte_chunks) {
        let c = [i64::from(b[0] as i8), i64::from(b[1] as i8), i64::from(b[2] as i8), i64::from(b[3] as i8)];
        dot[0] += q[0] * c[0] as f32;
        dot[1] += q[1] * c[1] as f32;
        dot[2] += q[2] * c[2] as f32;
        dot[3] += q[3] * c[3] as f32;
        norm += c[0] * c[0] + c[1] * c[1] + c[2] * c[2] + c[3] * c[3];
    }
    let mut dot = dot[0] + dot[1] + dot[2] + dot[3];
    for (q, b) in query_rest.iter().zip(byte_rest) {
        let component = i64::from(*b as i8);
        dot += q * component as f32;
        norm += component * component;
    }
    (dot, norm as f32)
}

/// A scored candidate; greater means better: higher score, then smaller id.
#[derive(Debug, Clone, Copy)]
struct Scored<'a> {
    score: f32,
    id: &'a str,
}

impl Ord for Scored<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score.total_cmp(&other.score).then_with(|| other.id.cmp(self.id))
    }
}

impl PartialOrd for Scored<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Scored<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Scored<'_> {}

pub(crate) const BASE64_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/// Marks a byte outside the alphabet in [`BASE64_VALUES`].
const INVALID: u8 = 0xff;
/// Each alphabet byte's 6-bit value, [`INVALID`] elsewhere.
pub(crate) const BASE64_VALUES: [u8; 256] = {
    let mut values = [INVALID; 256];
    let mut index = 0;
    while index < 64 {
        values[BASE64_ALPHABET[index] as usize] = index as u8;
        index += 1;
    }
    values
};

/// Standard padded base64 (RFC 4648 §4).
pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let group =
            chunk.iter().enumerate().fold(0_u32, |group, (index, byte)| group | u32::from(*byte) << (16 - 8 * index));
        for position in 0..4 {
            if position <= chunk.len() {
                text.push(BASE64_ALPHABET[(group >> (18 - 6 * position) & 0x3f) as usize] as char);
            } else {
                text.push('=');
            }
        }
    }
    text
}

/// Decodes standard padded base64 into `out`, replacing its contents; false
/// (and `out` unspecified) when the text is not a whole number of 4-character
/// groups, has a character outside the alphabet, or has padding anywhere but
/// the end of the last group.
pub(crate) fn decode_base64_into(text: &str, out: &mut Vec<u8>) -> bool {
    let text = text.as_bytes();
    if !text.len().is_multiple_of(4) {
        return false;
    }
    let padding = match text {
        [.., b'=', b'='] => 2,
        [.., b'='] => 1,
        _ => 0,
    };
    // In a scan every vector has the same length: the buffer is neither
    // reallocated nor cleared, as every byte is overwritten below.
    let decoded_length = text.len() / 4 * 3 - padding;
    if out.len() != decoded_length {
        out.resize(decoded_length, 0);
    }
    let Some(body_length) = text.len().checked_sub(4) else {
        return true; // Empty text: no bytes.
    };
    let body_bytes = body_length / 4 * 3;
    // The hot loop of the scan, without a branch per group: an invalid
    // character (padding included) sets the high bit of its lookup, tested once.
    let mut seen = 0_u8;
    for (bytes, group) in out[..body_bytes].chunks_exact_mut(3).zip(text[..body_length].chunks_exact(4)) {
        let (a, b, c, d) = (
            BASE64_VALUES[usize::from(group[0])],
            BASE64_VALUES[usize::from(group[1])],
            BASE64_VALUES[usize::from(group[2])],
            BASE64_VALUES[usize::from(group[3])],
        );
        seen |= a | b | c | d;
        bytes[0] = a << 2 | b >> 4;
        bytes[1] = b << 4 | c >> 2;
        bytes[2] = c << 6 | d;
    }
    if seen & 0x80 != 0 {
        return false;
    }
    let mut bits = 0_u32;
    for character in &text[body_length..text.len() - padding] {
        let value = BASE64_VALUES[usize::from(*character)];
        if value == INVALID {
            return false;
        }
        bits = bits << 6 | u32::from(value);
    }
    bits <<= 6 * padding;
    out[body_bytes..].copy_from_slice(&[(bits >> 16) as u8, (bits >> 8) as u8, bits as u8][..3 - padding]);
    true
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Deterministic pseudo-random unit vectors (a 64-bit LCG), so tests are repeatable.
    pub(crate) fn unit_vectors(count: usize, dimensions: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        };
        (0..count)
            .map(|_| {
                let vector: Vec<f32> = (0..dimensions).map(|_| next()).collect();
                let norm = vector.iter().map(|value| value * value).sum::<f32>().sqrt();
                vector.iter().map(|value| value / norm).collect()
            })
            .collect()
    }

    #[test]
    fn cosine_measures_direction_and_is_zero_for_degenerate_input() {
        let cases: [(&[f32], &[f32], f32); 7] = [
            (&[1.0, 0.0], &[1.0, 0.0], 1.0),
            (&[1.0, 2.0], &[2.0, 4.0], 1.0),
            (&[1.0, 0.0], &[-3.0, 0.0], -1.0),
            (&[1.0, 0.0], &[0.0, 5.0], 0.0),
            (&[0.0, 0.0], &[1.0, 0.0], 0.0),
            (&[1.0, 0.0], &[1.0, 0.0, 0.0], 0.0),
            (&[], &[], 0.0),
        ];
        for (a, b, expected) in cases {
            assert!((cosine(a, b) - expected).abs() < 1e-6, "{a:?} {b:?}");
        }
        let (a, b): (Vec<f32>, Vec<f32>) =
            ((1..=7).map(|x| x as f32).collect(), (1..=7).map(|x| (8 - x) as f32).collect());
        assert_eq!(dot(&a, &b), 84.0);
    }

    #[test]
    fn base64_matches_the_rfc_test_vectors_and_rejects_bad_text() {
        let cases =
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("foobar", "Zm9vYmFy")];
        let mut out = Vec::new();
        for (plain, encoded) in cases {
            assert_eq!(encode_base64(plain.as_bytes()), encoded);
            assert!(decode_base64_into(encoded, &mut out), "{encoded}");
            assert_eq!(out, plain.as_bytes());
        }
        for bad in ["Zg=", "Zm9v*mFy", "Zg==Zm9v", "=Zm8", "Z===", "Zm9v\n", "Zm 9"] {
            assert!(!decode_base64_into(bad, &mut out), "{bad}");
        }
        // The buffer is reused: a shorter result after a longer one, and after a failure.
        for (plain, encoded) in cases.iter().rev() {
            assert!(decode_base64_into(encoded, &mut out), "{encoded}");
            assert_eq!(out, plain.as_bytes());
        }
        let all_bytes: Vec<u8> = (0..=255).collect();
        assert!(decode_base64_into(&encode_base64(&all_bytes), &mut out));
        assert_eq!(out, all_bytes);
    }

    #[test]
    fn encoded_vectors_are_compact_and_keep_their_direction() {
        for vector in unit_vectors(50, 384, 7) {
            let encoded = encode_vector(&vector);
            assert_eq!(encoded.len(), 512);
            let decoded = decode_vector(&encoded).unwrap();
            let norm = decoded.iter().map(|value| value * value).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "{norm}");
            let kept = cosine(&vector, &decoded);
            assert!(kept > 0.999, "{kept}");
        }
    }

    #[test]
    fn scores_on_encoded_vectors_stay_within_a_thousandth() {
        let vectors = unit_vectors(40, 384, 11);
        for pair in vectors.windows(2) {
            // Make a pair that is actually similar, as near-duplicates are.
            let similar: Vec<f32> = pair[0].iter().zip(&pair[1]).map(|(a, b)| a + 0.3 * b).collect();
            let exact = cosine(&pair[0], &similar);
            let stored = cosine(&pair[0], &decode_vector(&encode_vector(&similar)).unwrap());
            assert!((exact - stored).abs() < 1e-3, "{exact} vs {stored}");
        }
    }

    #[test]
    fn degenerate_vectors_encode_without_panicking() {
        assert_eq!(decode_vector(&encode_vector(&[0.0; 4])), Some(vec![0.0; 4]));
        assert_eq!(decode_vector(&encode_vector(&[])), Some(vec![]));
        let decoded = decode_vector(&encode_vector(&[f32::NAN, 2.0, f32::INFINITY])).unwrap();
        assert_eq!(decoded, vec![0.0, 1.0, 0.0]);
        assert_eq!(decode_vector("not base64!"), None);
    }

    #[test]
    fn scan_keeps_the_best_k_above_the_floor_with_ties_by_id() {
        let vectors: Vec<(&str, Vec<f32>)> = vec![
            ("d", vec![1.0, 0.0]),
            ("b", vec![0.6, 0.8]),
            ("a", vec![0.6, 0.8]),
            ("c", vec![0.0, 1.0]),
            ("e", vec![-1.0, 0.0]),
        ];
        let candidates = || vectors.iter().map(|(id, vector)| (*id, vector));
        let ids = |results: Vec<(String, f32)>| results.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
        assert_eq!(ids(scan(&[1.0, 0.0], candidates(), 3, -1.0)), ["d", "a", "b"]);
        assert_eq!(ids(scan(&[1.0, 0.0], candidates(), 10, 0.0)), ["d", "a", "b", "c"]);
        assert_eq!(ids(scan(&[1.0, 0.0], candidates(), 10, 0.7)), ["d"]);
        assert!(scan(&[1.0, 0.0], candidates(), 0, -1.0).is_empty());
        let scores: Vec<f32> = scan(&[2.0, 0.0], candidates(), 2, -1.0).into_iter().map(|(_, score)| score).collect();
        assert_eq!(scores, [1.0, 0.6]);
    }

    #[test]
    fn scan_skips_damaged_and_foreign_vectors() {
        let good = encode_vector(&[1.0, 0.0]);
        let candidates = [("good", good.as_str()), ("garbled", "%%%%"), ("three", "AAAA"), ("empty", "")];
        let results = scan(&[1.0, 0.0], candidates, 10, -1.0);
        assert_eq!(results.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["good"]);
        let plain: [(&str, &[f32]); 2] = [("nan", &[f32::NAN, 0.0]), ("short", &[1.0])];
        assert!(scan(&[1.0, 0.0], plain, 10, -1.0).is_empty());
    }

    #[test]
    fn scan_agrees_with_sorting_every_score() {
        // 30 dimensions: seven groups of four and a remainder of two.
        let vectors = unit_vectors(300, 30, 3);
        let query = &vectors[0];
        let ids: Vec<String> = (0..vectors.len()).map(|index| format!("m{index:03}")).collect();
        let plain = scan(query, ids.iter().map(String::as_str).zip(&vectors), 7, -1.0);
        let mut expected: Vec<(String, f32)> =
            ids.iter().zip(&vectors).map(|(id, vector)| (id.clone(), cosine(query, vector))).collect();
        expected.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        expected.truncate(7);
        assert_eq!(
            plain.iter().map(|(id, _)| id).collect::<Vec<_>>(),
            expected.iter().map(|(id, _)| id).collect::<Vec<_>>()
        );
        for ((_, got), (_, want)) in plain.iter().zip(&expected) {
            assert!((got - want).abs() < 1e-5);
        }

        let encoded: Vec<String> = vectors.iter().map(|vector| encode_vector(vector)).collect();
        let from_text = scan(query, ids.iter().map(String::as_str).zip(&encoded), 7, -1.0);
        assert_eq!(from_text[0].0, "m000");
        assert!((from_text[0].1 - 1.0).abs() < 1e-3);
        for (id, score) in &from_text {
            let index: usize = id[1..].parse().unwrap();
            assert!((score - cosine(query, &vectors[index])).abs() < 1e-2, "{id}");
        }
    }
}
