//! Reciprocal rank fusion: merges the ranked lists of the hybrid search (vector,
//! full-text, graph) by rank alone, so their incomparable raw scores need no
//! normalising.
//!
//! Plain RRF rewards agreement: a memory that both retrievers rank tenth beats
//! one that only full text ranks first (2/70 > 1/61). That loses the strongest
//! evidence a search has, the one memory holding a query's rare word, whenever
//! many memories share the query's other words and so appear in both lists. So
//! the direct retrievers' podium earns a bonus ([`FIRST_PLACE_BONUS`],
//! [`PODIUM_BONUS`]) and graph neighbours, context rather than hits, count half:
//! a first place in the vector or the full-text list then outranks every memory
//! that is first in neither (the tests hold the fusion to that), while below the
//! first places agreement still counts (fifth in both lists beats a lone second).

use std::collections::HashMap;

/// The rank offset: larger values flatten the advantage of the very top ranks.
pub const RRF_K: f64 = 60.0;
/// Added for a first place in a list that earns podium bonuses. It exceeds the
/// most a memory without a first place can score (two second places and the
/// graph's first: 2 × (1/62 + [`PODIUM_BONUS`]) + 0.5/61 ≈ 0.061).
pub const FIRST_PLACE_BONUS: f64 = 0.05;
/// Added for a second or third place in a list that earns podium bonuses.
pub const PODIUM_BONUS: f64 = 0.01;
/// Candidates each retriever hands to the fusion, at least: more than the
/// results asked for, so agreement below the top can still be found.
pub const MIN_CANDIDATES_PER_LIST: usize = 20;

/// How much one retriever's ranks count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weighting {
    /// Multiplies the list's reciprocal ranks.
    pub weight: f64,
    /// Whether its first three places earn [`FIRST_PLACE_BONUS`] / [`PODIUM_BONUS`].
    pub podium_bonus: bool,
}

/// A retriever that finds memories for the query itself (vector, full text).
pub const DIRECT: Weighting = Weighting { weight: 1.0, podium_bonus: true };
/// A retriever that finds memories near other hits (graph neighbours).
pub const CONTEXT: Weighting = Weighting { weight: 0.5, podium_bonus: false };

/// The candidates each retriever should hand over for `limit` results: twice
/// the limit, and never fewer than [`MIN_CANDIDATES_PER_LIST`].
pub fn candidates_per_list(limit: usize) -> usize {
    limit.saturating_mul(2).max(MIN_CANDIDATES_PER_LIST)
}

/// Fuses ranked lists of ids, best first, into one: each id scores, over the
/// lists it appears in, weight / ([`RRF_K`] + rank) (rank 1-based) plus the
/// list's podium bonus. An id repeated within one list counts once, at its best
/// rank. The result is sorted by score, highest first; equal scores keep the
/// order in which the ids first appeared (earlier lists first).
pub fn fuse<S: AsRef<str>>(ranked_lists: &[(&[S], Weighting)]) -> Vec<(String, f64)> {
    let mut fused: Vec<(String, f64)> = Vec::new();
    let mut position_of: HashMap<&str, usize> = HashMap::new();
    // The list in which each id last scored, to skip repeats within a list.
    let mut scored_in_list: Vec<usize> = Vec::new();
    for (list_index, (list, weighting)) in ranked_lists.iter().enumerate() {
        for (offset, id) in list.iter().enumerate() {
            let id = id.as_ref();
            let contribution = weighting.weight / (RRF_K + (offset + 1) as f64) + bonus(*weighting, offset + 1);
            match position_of.get(id) {
                Some(&position) if scored_in_list[position] == list_index => {}
                Some(&position) => {
                    fused[position].1 += contribution;
                    scored_in_list[position] = list_index;
                }
                None => {
                    position_of.insert(id, fused.len());
                    fused.push((id.to_string(), contribution));
                    scored_in_list.push(list_index);
                }
            }
        }
    }
    // A stable sort keeps first-appearance order among equal scores.
    crate::sorting::sort_by(&mut fused, |a, b| b.1.total_cmp(&a.1));
    fused
}

fn bonus(weighting: Weighting, rank: usize) -> f64 {
    match (weighting.podium_bonus, rank) {
        (false, _) => 0.0,
        (true, 1) => FIRST_PLACE_BONUS,
        (true, 2 | 3) => PODIUM_BONUS,
        (true, _) => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(fused: &[(String, f64)]) -> Vec<&str> {
        fused.iter().map(|(id, _)| id.as_str()).collect()
    }

    fn score_of(fused: &[(String, f64)], id: &str) -> Option<f64> {
        fused.iter().find(|(candidate, _)| candidate == id).map(|(_, score)| *score)
    }

    const PLAIN: Weighting = Weighting { weight: 1.0, podium_bonus: false };

    #[test]
    fn scores_sum_weighted_reciprocal_ranks_and_podium_bonuses() {
        let plain = fuse(&[(&["a", "b", "c"][..], PLAIN), (&["b", "d"][..], PLAIN)]);
        assert_eq!(ids(&plain), ["b", "a", "d", "c"]);
        assert_eq!(score_of(&plain, "b"), Some(1.0 / 62.0 + 1.0 / 61.0));
        assert_eq!(score_of(&plain, "c"), Some(1.0 / 63.0));

        let vector = ["a", "b", "c", "d"];
        let fused = fuse(&[(&vector[..], DIRECT), (&["e", "a"][..], CONTEXT)]);
        let cases = [
            ("a", 1.0 / 61.0 + FIRST_PLACE_BONUS + 0.5 / 62.0),
            ("b", 1.0 / 62.0 + PODIUM_BONUS),
            ("c", 1.0 / 63.0 + PODIUM_BONUS),
            ("d", 1.0 / 64.0),
            ("e", 0.5 / 61.0),
        ];
        for (id, expected) in cases {
            assert!((score_of(&fused, id).unwrap() - expected).abs() < 1e-12, "{id}");
        }
        assert_eq!(ids(&fused), ["a", "b", "c", "d", "e"]);
    }

    /// The rare-word case: full text ranks first the one memory holding the
    /// query's rare word; the vectors do not find it, and every other candidate
    /// shares the query's common words, so both lists hold them in about the same
    /// order, and the graph adds their neighbours.
    #[test]
    fn a_full_text_first_place_is_not_buried_by_agreement() {
        let near: Vec<String> = (1..=40).map(|index| format!("near-{index}")).collect();
        let mut words: Vec<&str> = vec!["rare"];
        words.extend(near.iter().take(19).map(String::as_str));
        let vector: Vec<&str> = near.iter().take(20).map(String::as_str).collect();
        let graph: Vec<&str> = near.iter().skip(2).take(20).map(String::as_str).collect();

        let plain = fuse(&[(&vector[..], PLAIN), (&words[..], PLAIN), (&graph[..], PLAIN)]);
        let plain_rank = ids(&plain).iter().position(|id| *id == "rare").unwrap();
        assert!(plain_rank >= 10, "plain RRF drops it out of the top 10: {plain_rank}");

        let fused = fuse(&[(&vector[..], DIRECT), (&words[..], DIRECT), (&graph[..], CONTEXT)]);
        let rank = ids(&fused).iter().position(|id| *id == "rare").unwrap();
        assert!(rank <= 1, "only the vectors' first place may precede it: {:?}", &ids(&fused)[..3]);
        assert_eq!(ids(&fused)[..2], ["near-1", "rare"]);
    }

    /// The promise behind the bonus values: any first place in a direct list
    /// beats the best a memory with no first place can do.
    #[test]
    fn any_direct_first_place_outranks_every_memory_without_one() {
        let lone_first = 1.0 / (RRF_K + 1.0) + FIRST_PLACE_BONUS;
        let best_without = 2.0 * (1.0 / (RRF_K + 2.0) + PODIUM_BONUS) + CONTEXT.weight / (RRF_K + 1.0);
        assert!(lone_first > best_without, "{lone_first} vs {best_without}");
        let fused = fuse(&[(&["v1", "both"][..], DIRECT), (&["w1", "both"][..], DIRECT), (&["both"][..], CONTEXT)]);
        assert_eq!(ids(&fused), ["v1", "w1", "both"]);
    }

    #[test]
    fn below_the_first_places_agreement_still_counts() {
        let vector = ["v1", "v2", "v3", "v4", "shared", "v6"];
        let words = ["w1", "w2", "w3", "w4", "w5", "shared"];
        let fused = fuse(&[(&vector[..], DIRECT), (&words[..], DIRECT)]);
        assert_eq!(ids(&fused)[..3], ["v1", "w1", "shared"]);
    }

    #[test]
    fn equal_scores_keep_first_appearance_order() {
        let fused = fuse(&[(&["x", "y"][..], DIRECT), (&["y", "x"][..], DIRECT)]);
        assert_eq!(ids(&fused), ["x", "y"]);
        let fused = fuse(&[(&["q"][..], DIRECT), (&["p"][..], DIRECT)]);
        assert_eq!(ids(&fused), ["q", "p"]);
    }

    #[test]
    fn a_repeat_within_a_list_counts_once_at_its_best_rank() {
        let repeated = ["a".to_string(), "b".to_string(), "a".to_string()];
        let fused = fuse(&[(&repeated[..], PLAIN), (&["b".to_string()][..], PLAIN)]);
        assert_eq!(fused, vec![("b".to_string(), 1.0 / 62.0 + 1.0 / 61.0), ("a".to_string(), 1.0 / 61.0)]);
    }

    #[test]
    fn no_lists_or_empty_lists_fuse_to_nothing() {
        assert!(fuse::<&str>(&[]).is_empty());
        assert!(fuse::<&str>(&[(&[][..], DIRECT), (&[][..], CONTEXT)]).is_empty());
    }

    #[test]
    fn candidates_grow_with_the_limit() {
        let cases = [(1, 20), (10, 20), (11, 22), (50, 100), (usize::MAX, usize::MAX)];
        for (limit, expected) in cases {
            assert_eq!(candidates_per_list(limit), expected, "{limit}");
        }
    }
}
