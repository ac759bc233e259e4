//! Automatic associations: when a memory is saved, its nearest neighbours by
//! vector similarity decide which graph edges it gets.

use serde::{Deserialize, Serialize};

use super::types::RelationType;

/// Above this similarity the new memory is taken as a newer version of the neighbour.
pub const UPDATES_THRESHOLD: f32 = 0.9;
/// Above this (and up to [`UPDATES_THRESHOLD`]) the two are merely related.
pub const RELATED_THRESHOLD: f32 = 0.75;
/// At most this many edges per new memory, so a popular topic does not become a hairball.
pub const MAX_LINKS: usize = 5;

/// An edge to create from the new memory to `target`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Link {
    /// The neighbour's memory id.
    pub target: String,
    /// `Updates` or `RelatedTo`.
    pub relation: RelationType,
    /// The similarity that earned the edge.
    pub weight: f32,
}

/// The edges for the memory `new_id`, given its neighbours' `(id, similarity)`
/// pairs (e.g. [`super::vector::scan`]'s output): strictly above
/// [`UPDATES_THRESHOLD`] an `Updates` edge, strictly above [`RELATED_THRESHOLD`]
/// a `RelatedTo` edge, nothing below. The memory itself and repeated neighbours
/// (kept at their highest similarity) are ignored. At most [`MAX_LINKS`],
/// strongest first, equal weights by id.
pub fn plan_links(new_id: &str, neighbours: &[(String, f32)]) -> Vec<Link> {
    let mut links: Vec<Link> = Vec::new();
    for (id, similarity) in neighbours {
        let relation = if *similarity > UPDATES_THRESHOLD {
            RelationType::Updates
        } else if *similarity > RELATED_THRESHOLD {
            RelationType::RelatedTo
        } else {
            continue; // Also drops NaN, which compares false.
        };
        if id == new_id {
            continue;
        }
        match links.iter_mut().find(|link| link.target == *id) {
            Some(existing) if existing.weight >= *similarity => {}
            Some(existing) => {
                existing.relation = relation;
                existing.weight = *similarity;
            }
            None => links.push(Link { target: id.clone(), relation, weight: *similarity }),
        }
    }
    crate::sorting::sort_by(&mut links, |a, b| b.weight.total_cmp(&a.weight).then_with(|| a.target.cmp(&b.target)));
    links.truncate(MAX_LINKS);
    links
}

#[cfg(test)]
mod tests {
    use super::*;

    fn neighbours(pairs: &[(&str, f32)]) -> Vec<(String, f32)> {
        pairs.iter().map(|(id, similarity)| (id.to_string(), *similarity)).collect()
    }

    #[test]
    fn similarity_picks_the_relation_with_strict_thresholds() {
        let cases = [
            (0.97, Some(RelationType::Updates)),
            (0.9001, Some(RelationType::Updates)),
            (0.9, Some(RelationType::RelatedTo)),
            (0.8, Some(RelationType::RelatedTo)),
            (0.75, None),
            (0.2, None),
            (f32::NAN, None),
        ];
        for (similarity, expected) in cases {
            let links = plan_links("new", &neighbours(&[("old", similarity)]));
            assert_eq!(links.first().map(|link| link.relation), expected, "{similarity}");
            if let Some(link) = links.first() {
                assert_eq!((link.target.as_str(), link.weight), ("old", similarity));
            }
        }
    }

    #[test]
    fn at_most_five_links_strongest_first() {
        let found = neighbours(&[
            ("a", 0.80),
            ("b", 0.95),
            ("c", 0.76),
            ("d", 0.85),
            ("e", 0.85),
            ("f", 0.99),
            ("g", 0.78),
            ("h", 0.50),
        ]);
        let links = plan_links("new", &found);
        let targets: Vec<&str> = links.iter().map(|link| link.target.as_str()).collect();
        assert_eq!(targets, ["f", "b", "d", "e", "a"]);
    }

    #[test]
    fn the_memory_itself_and_repeats_are_not_linked_twice() {
        let links = plan_links("new", &neighbours(&[("new", 1.0), ("old", 0.8), ("old", 0.93)]));
        assert_eq!(links, vec![Link { target: "old".into(), relation: RelationType::Updates, weight: 0.93 }]);
    }
}
