//! The first pass of the local vector search: a 4-bit sketch of every vector,
//! read for all memories in a few D1 rows and ranked here, so that only a short
//! list of candidates is read in full and re-ranked exactly
//! ([`super::vector::scan`]).
//!
//! A sketch stores each component as a signed 4-bit step (the vector scaled so
//! its largest magnitude is 7), two to a byte, after a 3-byte header holding the
//! steps' squared norm; the bytes are zero-padded to a multiple of 3 and written
//! as base64 without padding characters. 384 dimensions take 195 bytes, 260
//! characters, half the stored 8-bit vector. The rounding error is at most half a
//! step, 1/14 of the largest component: scores move by a few hundredths, so the
//! short list is a few times longer than the results it must contain, and the
//! local embedder's vectors (few distinct magnitudes) come out nearly exact.
//!
//! Ranking does not decode anything: a sketch's score is linear in its bits, so
//! a query is turned into one table per base64 character position giving each
//! of the 64 characters' share of the dot product ([`SketchQuery`]); a sketch is
//! then scored with one table look-up and one addition per character. Memories
//! arrive as `seq:sketch` records joined by commas, as SQLite's
//! `group_concat(seq || ':' || sketch)` returns them: a D1 read costs the Worker
//! per row as well as per byte, and 10,000 rows of two strings each cost more to
//! hand to Rust than the five long strings that pack their sketches.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::vector::{decode_base64_into, encode_base64, BASE64_ALPHABET, BASE64_VALUES};

/// The largest step magnitude (4-bit two's complement, kept symmetric).
const MAX_STEP: f32 = 7.0;
/// Bytes of the header (the squared norm of the steps, big-endian) and the
/// base64 characters that encode it.
const HEADER_BYTES: usize = 3;
const HEADER_CHARS: usize = 4;
/// What each bit of a step is worth, most significant bit first.
const BIT_WEIGHTS: [f32; 4] = [-8.0, 4.0, 2.0, 1.0];

/// The sketch of `vector` as stored text. Non-finite components count as 0; an
/// all-zero vector gives an all-zero sketch (which scores 0 against anything).
pub fn encode_sketch(vector: &[f32]) -> String {
    let largest =
        vector.iter().filter(|value| value.is_finite()).fold(0.0_f32, |largest, value| largest.max(value.abs()));
    let scale = if largest > 0.0 { MAX_STEP / largest } else { 0.0 };
    let steps: Vec<i8> = vector
        .iter()
        .map(|value| if value.is_finite() { (value * scale).round().clamp(-MAX_STEP, MAX_STEP) as i8 } else { 0 })
        .collect();
    let norm_squared: u32 = steps.iter().map(|step| (i32::from(*step) * i32::from(*step)) as u32).sum();
    let mut bytes = norm_squared.min(0xff_ffff).to_be_bytes()[1..].to_vec();
    bytes.extend(steps.chunks(2).map(|pair| {
        let high = (pair[0] as u8) << 4;
        let low = pair.get(1).map_or(0, |step| *step as u8 & 0x0f);
        high | low
    }));
    bytes.resize(bytes.len().div_ceil(3) * 3, 0);
    encode_base64(&bytes)
}

/// The steps a sketch holds, `dimensions` of them, with their squared norm;
/// `None` when the text is not a sketch of that many dimensions.
pub fn decode_sketch(text: &str, dimensions: usize) -> Option<(Vec<i8>, u32)> {
    if text.len() != sketch_chars(dimensions) {
        return None;
    }
    let mut bytes = Vec::new();
    if !decode_base64_into(text, &mut bytes) {
        return None;
    }
    let norm_squared = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]);
    let steps = (0..dimensions)
        .map(|index| {
            let byte = bytes[HEADER_BYTES + index / 2];
            let nibble = if index % 2 == 0 { byte >> 4 } else { byte & 0x0f };
            ((nibble << 4) as i8) >> 4
        })
        .collect();
    Some((steps, norm_squared))
}

/// The length of a sketch of `dimensions` components, in characters.
pub fn sketch_chars(dimensions: usize) -> usize {
    (HEADER_BYTES + dimensions.div_ceil(2)).div_ceil(3) * 4
}

/// A query made ready for scoring sketches: per character position after the
/// header, each byte's share of the dot product with the query (NaN for bytes
/// outside the base64 alphabet, so a damaged sketch scores NaN and is dropped).
pub struct SketchQuery {
    tables: Vec<f32>,
    positions: usize,
}

impl SketchQuery {
    /// Prepares `query` (any length; normalised here) for sketches of its length.
    pub fn new(query: &[f32]) -> SketchQuery {
        let norm = query.iter().filter(|value| value.is_finite()).map(|value| value * value).sum::<f32>().sqrt();
        let unit: Vec<f32> =
            query.iter().map(|value| if value.is_finite() && norm > 0.0 { value / norm } else { 0.0 }).collect();
        let positions = sketch_chars(query.len()) - HEADER_CHARS;
        let mut tables = vec![f32::NAN; positions * 256];
        for position in 0..positions {
            // The bits of the step stream this character holds, and what each is worth.
            let mut bit_values = [0.0_f32; 6];
            for (offset, bit_value) in bit_values.iter_mut().enumerate() {
                let bit = position * 6 + offset;
                *bit_value = unit.get(bit / 4).map_or(0.0, |component| component * BIT_WEIGHTS[bit % 4]);
            }
            let table = &mut tables[position * 256..(position + 1) * 256];
            for (value, character) in BASE64_ALPHABET.iter().enumerate() {
                table[usize::from(*character)] =
                    (0..6).filter(|offset| value >> (5 - offset) & 1 == 1).map(|offset| bit_values[offset]).sum();
            }
        }
        SketchQuery { tables, positions }
    }

    /// The cosine of the query with a sketch's steps; `None` when the text is not
    /// a sketch of the query's length or is damaged; 0 for an all-zero sketch.
    pub fn score(&self, sketch: &str) -> Option<f32> {
        let bytes = sketch.as_bytes();
        if bytes.len() != self.positions + HEADER_CHARS {
            return None;
        }
        let (header, body) = bytes.split_at(HEADER_CHARS);
        let norm_squared = decode_header(header)?;
        // Four sums, so the additions overlap (see the note in `vector.rs`).
        let mut sums = [0.0_f32; 4];
        let tables = self.tables.chunks_exact(256 * 4);
        let characters = body.chunks_exact(4);
        let rest = characters.remainder();
        for (group, tables) in characters.zip(tables) {
            sums[0] += tables[usize::from(group[0])];
            sums[1] += tables[256 + usize::from(group[1])];
            sums[2] += tables[512 + usize::from(group[2])];
            sums[3] += tables[768 + usize::from(group[3])];
        }
        let start = body.len() - rest.len();
        let tail: f32 = rest
            .iter()
            .enumerate()
            .map(|(offset, byte)| self.tables[(start + offset) * 256 + usize::from(*byte)])
            .sum();
        let dot = sums[0] + sums[1] + sums[2] + sums[3] + tail;
        if dot.is_nan() {
            return None;
        }
        Some(if norm_squared == 0 { 0.0 } else { dot / (norm_squared as f32).sqrt() })
    }
}

/// The squared norm in a sketch's first four characters.
fn decode_header(header: &[u8]) -> Option<u32> {
    header.iter().try_fold(0_u32, |value, character| {
        let digit = BASE64_VALUES[usize::from(*character)];
        (digit < 64).then_some(value << 6 | u32::from(digit))
    })
}

/// The `count` best candidates for `query` among packed `seq:sketch` records
/// (comma-separated, in any number of texts), best first, equal scores by
/// smaller seq. Records that do not parse, whose sketch is damaged, or whose
/// length differs from the query's (another embedder's) are skipped.
pub fn coarse_rank<'a>(query: &SketchQuery, packed: impl IntoIterator<Item = &'a str>, count: usize) -> Vec<i64> {
    if count == 0 {
        return Vec::new();
    }
    let mut kept: BinaryHeap<Reverse<Candidate>> = BinaryHeap::with_capacity(count.min(4096));
    for text in packed {
        for record in text.split(',') {
            let Some((seq, sketch)) = record.split_once(':') else { continue };
            let (Ok(seq), Some(score)) = (seq.parse::<i64>(), query.score(sketch)) else { continue };
            let candidate = Candidate { score, seq };
            if kept.len() < count {
                kept.push(Reverse(candidate));
            } else if let Some(mut worst) = kept.peek_mut() {
                if candidate > worst.0 {
                    *worst = Reverse(candidate);
                }
            }
        }
    }
    let mut best: Vec<Candidate> = kept.into_iter().map(|Reverse(candidate)| candidate).collect();
    crate::sorting::sort_by(&mut best, |a, b| b.cmp(a));
    best.into_iter().map(|candidate| candidate.seq).collect()
}

/// A scored record; greater means better: higher score, then smaller seq.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    score: f32,
    seq: i64,
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score.total_cmp(&other.score).then_with(|| other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Candidate {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::embed::LocalEmbedder;
    use crate::memory::vector::tests::unit_vectors;
    use crate::memory::vector::{cosine, encode_vector, scan};

    fn steps_as_floats(text: &str, dimensions: usize) -> Vec<f32> {
        decode_sketch(text, dimensions).unwrap().0.iter().map(|step| f32::from(*step)).collect()
    }

    #[test]
    fn sketches_are_compact_and_keep_their_direction() {
        for dimensions in [384, 1536, 7, 1, 0] {
            for vector in unit_vectors(20, dimensions, 5) {
                let text = encode_sketch(&vector);
                assert_eq!(text.len(), sketch_chars(dimensions));
                assert!(!text.contains('='), "{text}");
                let (steps, norm_squared) = decode_sketch(&text, dimensions).unwrap();
                assert_eq!(norm_squared, steps.iter().map(|step| (i32::from(*step)).pow(2) as u32).sum::<u32>());
                assert!(steps.iter().all(|step| (-7..=7).contains(step)));
                if dimensions >= 384 {
                    let kept = cosine(&vector, &steps_as_floats(&text, dimensions));
                    assert!(kept > 0.97, "{dimensions}: {kept}");
                }
            }
        }
        assert_eq!(sketch_chars(384), 260);
        assert_eq!(decode_sketch(&encode_sketch(&[0.5, -1.0, 0.0]), 3), Some((vec![4, -7, 0], 65)));
        assert_eq!(decode_sketch(&encode_sketch(&[f32::NAN, 2.0, f32::INFINITY]), 3), Some((vec![0, 7, 0], 49)));
        assert_eq!(decode_sketch(&encode_sketch(&[0.0; 4]), 4), Some((vec![0; 4], 0)));
        assert_eq!(decode_sketch(&encode_sketch(&[1.0; 4]), 7), None, "another length");
    }

    #[test]
    fn a_sketch_scores_the_cosine_of_the_query_with_its_steps() {
        for dimensions in [384, 30, 5] {
            let vectors = unit_vectors(50, dimensions, 9);
            // An unnormalised query: scoring normalises it.
            let query: Vec<f32> = vectors[0].iter().map(|value| value * 3.0).collect();
            let prepared = SketchQuery::new(&query);
            for vector in &vectors {
                let text = encode_sketch(vector);
                let expected = cosine(&query, &steps_as_floats(&text, dimensions));
                let scored = prepared.score(&text).unwrap();
                assert!((scored - expected).abs() < 1e-4, "{dimensions}: {scored} vs {expected}");
            }
        }
        let prepared = SketchQuery::new(&[1.0, 0.0, 0.0]);
        assert_eq!(prepared.score(&encode_sketch(&[0.0; 3])), Some(0.0), "an all-zero sketch");
        assert_eq!(SketchQuery::new(&[0.0; 3]).score(&encode_sketch(&[1.0, 0.0, 0.0])), Some(0.0), "a zero query");
        let good = encode_sketch(&[1.0, 0.0, 0.0]);
        assert_eq!(prepared.score(&good), Some(1.0));
        for bad in [&good[..good.len() - 1], "AAAA%AAA", "AA=AAAAA", "AAAAAAAAAAAA", "", "AAAAAA\u{e9}"] {
            assert_eq!(prepared.score(bad), None, "{bad}");
        }
    }

    #[test]
    fn coarse_rank_keeps_the_best_with_ties_by_seq_and_skips_bad_records() {
        let sketch = |vector: &[f32]| encode_sketch(vector);
        let packed = [
            format!("4:{},7:{},2:{}", sketch(&[1.0, 0.0]), sketch(&[0.6, 0.8]), sketch(&[0.6, 0.8])),
            format!("9:{},x:{},5:AAAA,8:{}", sketch(&[0.0, 1.0]), sketch(&[1.0, 0.0]), sketch(&[-1.0, 0.0])),
            format!("11{}", sketch(&[1.0, 0.0])),
            String::new(),
        ];
        let query = SketchQuery::new(&[1.0, 0.0]);
        let ranked = |count| coarse_rank(&query, packed.iter().map(String::as_str), count);
        assert_eq!(ranked(3), [4, 2, 7]);
        assert_eq!(ranked(10), [4, 2, 7, 9, 8]);
        assert!(ranked(0).is_empty());
        assert!(coarse_rank(&query, [], 5).is_empty());
    }

    /// The promise the edge relies on: for the local embedder, the exact best 20
    /// are among the sketches' best 60 (three times as many), on memories that
    /// all share most of their words, so scores are close.
    #[test]
    fn a_short_list_three_times_longer_holds_the_exact_best_for_the_local_embedder() {
        const TOPICS: [&str; 10] =
            ["database", "tea", "deploy", "birthday", "cat", "invoice", "holiday", "release", "meeting", "garden"];
        let embedder = LocalEmbedder::default();
        let texts: Vec<String> = (0..3_000)
            .map(|index| {
                let topic = TOPICS[index % TOPICS.len()];
                let (number, person, week) = (index * 7 % 1000, index % 97, index % 52);
                format!("Note {index}: the {topic} item number {number} mentioned by person {person} in week {week}")
            })
            .collect();
        let vectors: Vec<String> = texts.iter().map(|text| encode_vector(&embedder.embed_one(text))).collect();
        let sketches: Vec<String> = texts.iter().map(|text| encode_sketch(&embedder.embed_one(text))).collect();
        let packed: Vec<String> = sketches
            .chunks(1000)
            .enumerate()
            .map(|(chunk, sketches)| {
                let records =
                    sketches.iter().enumerate().map(|(offset, sketch)| format!("{}:{sketch}", chunk * 1000 + offset));
                records.collect::<Vec<_>>().join(",")
            })
            .collect();
        let ids: Vec<String> = (0..texts.len()).map(|index| index.to_string()).collect();
        for query in ["which database did the team choose", "deploy key rotation", "item number 700 week 12", "cat"] {
            let query = embedder.embed_one(query);
            let exact = scan(&query, ids.iter().map(String::as_str).zip(&vectors), 20, -1.0);
            let short_list = coarse_rank(&SketchQuery::new(&query), packed.iter().map(String::as_str), 60);
            let candidates = short_list.iter().map(|seq| (ids[*seq as usize].as_str(), &vectors[*seq as usize]));
            let reranked = scan(&query, candidates, 20, -1.0);
            let scores = |found: &[(String, f32)]| found.iter().map(|(_, score)| *score).collect::<Vec<_>>();
            assert_eq!(scores(&reranked), scores(&exact));
        }
    }
}
