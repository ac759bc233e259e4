//! Reciprocal rank fusion: merges the ranked lists of the hybrid search (vector,
//! full-text, graph) by rank alone, so their incomparable raw scores need no
//! normalising.

use std::collections::HashMap;

/// The rank offset: larger values flatten the advantage of the very top ranks.
pub const RRF_K: f64 = 60.0;

/// Fuses ranked lists of ids, best first, into one: each id scores
/// Σ 1 / ([`RRF_K`] + rank) over the lists it appears in (rank 1-based). An id
/// repeated within one list counts once, at its best rank. The result is sorted
/// by score, highest first; equal scores keep the order in which the ids first
/// appeared (earlier lists first).
pub fn fuse<S: AsRef<str>>(ranked_lists: &[Vec<S>]) -> Vec<(String, f64)> {
    let mut fused: Vec<(String, f64)> = Vec::new();
    let mut position_of: HashMap<&str, usize> = HashMap::new();
    // The list in which each id last scored, to skip repeats within a list.
    let mut scored_in_list: Vec<usize> = Vec::new();
    for (list_index, list) in ranked_lists.iter().enumerate() {
        for (offset, id) in list.iter().enumerate() {
            let id = id.as_ref();
            let contribution = 1.0 / (RRF_K + (offset + 1) as f64);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(fused: &[(String, f64)]) -> Vec<&str> {
        fused.iter().map(|(id, _)| id.as_str()).collect()
    }

    #[test]
    fn scores_sum_reciprocal_ranks_across_lists() {
        let fused = fuse(&[vec!["a", "b", "c"], vec!["b", "d"]]);
        assert_eq!(ids(&fused), ["b", "a", "d", "c"]);
        let score_of = |id: &str| fused.iter().find(|(candidate, _)| candidate == id).map(|(_, score)| *score);
        assert_eq!(score_of("b"), Some(1.0 / 62.0 + 1.0 / 61.0));
        assert_eq!(score_of("a"), Some(1.0 / 61.0));
        assert_eq!(score_of("d"), Some(1.0 / 62.0));
        assert_eq!(score_of("c"), Some(1.0 / 63.0));
    }

    #[test]
    fn agreement_beats_a_single_first_place() {
        let fused = fuse(&[vec!["solo", "shared"], vec!["other", "shared"], vec!["shared"]]);
        assert_eq!(fused[0].0, "shared");
    }

    #[test]
    fn equal_scores_keep_first_appearance_order() {
        let fused = fuse(&[vec!["x", "y"], vec!["y", "x"]]);
        assert_eq!(ids(&fused), ["x", "y"]);
        let fused = fuse(&[vec!["q"], vec!["p"]]);
        assert_eq!(ids(&fused), ["q", "p"]);
    }

    #[test]
    fn a_repeat_within_a_list_counts_once_at_its_best_rank() {
        let fused = fuse(&[vec!["a".to_string(), "b".to_string(), "a".to_string()], vec!["b".to_string()]]);
        assert_eq!(fused, vec![("b".to_string(), 1.0 / 62.0 + 1.0 / 61.0), ("a".to_string(), 1.0 / 61.0)]);
    }

    #[test]
    fn no_lists_or_empty_lists_fuse_to_nothing() {
        assert!(fuse::<&str>(&[]).is_empty());
        assert!(fuse::<&str>(&[vec![], vec![]]).is_empty());
    }
}
