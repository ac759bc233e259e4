//! One stable sort for every element type. Each `slice::sort_by` on a new
//! element type compiles a whole merge sort into the Worker (about 8 KB of
//! wasm each); sorting positions through a `dyn` comparator compiles it once.

use std::cmp::Ordering;
use std::collections::BTreeMap;

/// Sorts `items` stably by `compare`, like `slice::sort_by`.
pub fn sort_by<T>(items: &mut [T], compare: impl Fn(&T, &T) -> Ordering) {
    let mut order: Vec<usize> = (0..items.len()).collect();
    sort_positions(&mut order, &|a, b| compare(&items[a], &items[b]));
    apply_order(items, &order);
}

#[inline(never)]
fn sort_positions(order: &mut [usize], compare: &dyn Fn(usize, usize) -> Ordering) {
    order.sort_by(|a, b| compare(*a, *b));
}

/// Puts the item at `order[k]` in place `k`, for every `k`, by swaps. Items
/// before `k` are final, so a source below `k` has moved: it is followed to
/// where the swap that moved it put it.
fn apply_order<T>(items: &mut [T], order: &[usize]) {
    for position in 0..items.len() {
        let mut source = order[position];
        while source < position {
            source = order[source];
        }
        items.swap(position, source);
    }
}

/// Builds a map by inserting each pair (a repeated key keeps its last value, as
/// with `collect`). `collect` into a `BTreeMap` sorts the pairs first, which
/// compiles a merge sort and a bulk loader for each map type.
pub fn map_from<K: Ord, V>(pairs: impl IntoIterator<Item = (K, V)>) -> BTreeMap<K, V> {
    let mut map = BTreeMap::new();
    for (key, value) in pairs {
        map.insert(key, value);
    }
    map
}

/// [`map_from`] for a JSON object.
pub fn object_from(
    pairs: impl IntoIterator<Item = (String, serde_json::Value)>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut object = serde_json::Map::new();
    for (key, value) in pairs {
        object.insert(key, value);
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_the_standard_stable_sort_on_every_permutation_of_six() {
        // Pairs (key, original place): equal keys must keep their order.
        let mut permutation: Vec<(u8, usize)> = [3u8, 1, 3, 0, 2, 1].iter().copied().zip(0..).collect();
        let mut seen = 0;
        loop {
            let mut ours = permutation.clone();
            sort_by(&mut ours, |a, b| a.0.cmp(&b.0));
            let mut expected = permutation.clone();
            expected.sort_by_key(|item| item.0);
            assert_eq!(ours, expected, "from {permutation:?}");
            seen += 1;
            if !next_permutation(&mut permutation) {
                break;
            }
        }
        assert_eq!(seen, 720);
    }

    fn next_permutation(items: &mut [(u8, usize)]) -> bool {
        let Some(pivot) = (1..items.len()).rev().find(|&index| items[index - 1].1 < items[index].1) else {
            return false;
        };
        let swap = (pivot..items.len()).rev().find(|&index| items[index].1 > items[pivot - 1].1).unwrap_or(pivot);
        items.swap(pivot - 1, swap);
        items[pivot..].reverse();
        true
    }
}
