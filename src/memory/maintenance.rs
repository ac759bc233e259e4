//! The cortex's memory maintenance as one pure pass: importance decays daily,
//! faded old memories are pruned, near-duplicates are merged. The edge loads the
//! memories with their vectors, calls [`plan_maintenance`], and writes the plan
//! in one D1 batch together with the plan's `decayed_through_ms`.
//!
//! Decay is counted in whole days against a watermark, `decayed_through_ms`,
//! which only ever advances by whole days. A run decays each memory by
//! [`DECAY_PER_DAY`] per whole day between the later of the watermark and the
//! memory's last access or update, and the new watermark. So running twice in a
//! day decays once, hourly runs lose no time to rounding, and a missed day is
//! caught up by the next run. A memory read or updated during a day is not
//! decayed for that day. Writing the watermark in the same batch as the
//! importances keeps a redelivered run from decaying twice; decay must not touch
//! `updated_at` or `last_accessed_at`.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::types::Memory;
use super::vector::dot;

/// Importance lost per whole day without a read or an update.
pub const DECAY_PER_DAY: f64 = 0.05;
/// Below this importance an old memory is deleted.
pub const PRUNE_FLOOR: f64 = 0.1;
/// A memory younger than this is never pruned, however unimportant.
pub const PRUNE_MIN_AGE_DAYS: i64 = 30;
/// Memories at least this similar (cosine) are merged into one.
pub const MERGE_SIMILARITY: f32 = 0.95;
/// One day in milliseconds.
pub const DAY_MS: i64 = 86_400_000;

/// The span a maintenance run decays over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecayWindow {
    /// The previous watermark; `None` on the first run, when each memory decays
    /// from its own last access or update.
    pub from_ms: Option<i64>,
    /// The new watermark: `from_ms` plus the whole days elapsed since it.
    pub to_ms: i64,
}

impl DecayWindow {
    /// The window of a run at `now_ms` after the watermark `decayed_through_ms`.
    /// Less than a day after the watermark (or a clock behind it) the window is
    /// empty and the watermark stays put.
    pub fn new(now_ms: i64, decayed_through_ms: Option<i64>) -> DecayWindow {
        match decayed_through_ms {
            None => DecayWindow { from_ms: None, to_ms: now_ms },
            Some(through) => {
                let whole_days = now_ms.saturating_sub(through).max(0) / DAY_MS;
                DecayWindow { from_ms: Some(through), to_ms: through.saturating_add(whole_days * DAY_MS) }
            }
        }
    }
}

/// The memory's importance after decaying over `window`: [`DECAY_PER_DAY`] per
/// whole day from the latest of the window's start, the last access and the
/// last update, to the window's end; never below 0. Identity memories keep
/// theirs.
pub fn decayed_importance(memory: &Memory, window: &DecayWindow) -> f64 {
    if memory.memory_type.is_exempt_from_decay() {
        return memory.importance;
    }
    let start = memory.last_accessed_at.max(memory.updated_at).max(window.from_ms.unwrap_or(i64::MIN));
    let whole_days = window.to_ms.saturating_sub(start).max(0) / DAY_MS;
    (memory.importance - DECAY_PER_DAY * whole_days as f64).max(0.0)
}

/// Whether a memory is to be deleted at `now_ms`: importance below
/// [`PRUNE_FLOOR`], created at least [`PRUNE_MIN_AGE_DAYS`] ago, not an Identity.
pub fn should_prune(memory: &Memory, now_ms: i64) -> bool {
    !memory.memory_type.is_exempt_from_decay()
        && memory.importance < PRUNE_FLOOR
        && now_ms.saturating_sub(memory.created_at) >= PRUNE_MIN_AGE_DAYS * DAY_MS
}

/// One near-duplicate to fold into another: the edge deletes `absorb` and points
/// its associations at `keep`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Merge {
    /// The surviving memory's id.
    pub keep: String,
    /// The memory folded into it.
    pub absorb: String,
}

/// Pairs of non-Identity memories of the same scope whose vectors have a cosine of at least
/// `threshold`. The keeper is the one with the higher importance (then the newer
/// `updated_at`, then the smaller id). A memory is absorbed at most once, and
/// never after keeping another, nor kept after being absorbed: no chains.
///
/// Memories are visited from the strongest keeper down and each absorbs every
/// still-untouched weaker duplicate. That compares all pairs, O(n²) dot products
/// (10,000 memories of 384 dimensions is ~2·10¹⁰ multiplications, too much for
/// one Worker invocation), so the edge passes a bounded set, e.g. the memories
/// changed since the last run together with their nearest neighbours.
pub fn plan_merges(memories: &[(Memory, Vec<f32>)], threshold: f32) -> Vec<Merge> {
    let candidates: Vec<(&Memory, &[f32])> =
        memories.iter().map(|(memory, vector)| (memory, vector.as_slice())).collect();
    merges_among(&candidates, threshold)
}

/// [`plan_merges`] over borrowed rows, so the maintenance pass can pass decayed copies.
fn merges_among(candidates: &[(&Memory, &[f32])], threshold: f32) -> Vec<Merge> {
    let mut order: Vec<usize> = (0..candidates.len())
        .filter(|index| !candidates[*index].0.memory_type.is_exempt_from_decay())
        .filter(|index| norm(candidates[*index].1) > 0.0)
        .collect();
    crate::sorting::sort_by(&mut order, |a, b| {
        let (a, b) = (candidates[*a].0, candidates[*b].0);
        b.importance.total_cmp(&a.importance).then(b.updated_at.cmp(&a.updated_at)).then_with(|| a.id.cmp(&b.id))
    });
    let norms: Vec<f32> = order.iter().map(|index| norm(candidates[*index].1)).collect();
    let mut touched = vec![false; order.len()];
    let mut merges = Vec::new();
    for keeper_rank in 0..order.len() {
        if touched[keeper_rank] {
            continue;
        }
        let (keeper, keeper_vector) = candidates[order[keeper_rank]];
        for other_rank in keeper_rank + 1..order.len() {
            let (other, other_vector) = candidates[order[other_rank]];
            // A merge across scopes would move one conversation's words into another's memory.
            if touched[other_rank] || other_vector.len() != keeper_vector.len() || other.scope != keeper.scope {
                continue;
            }
            if dot(keeper_vector, other_vector) / (norms[keeper_rank] * norms[other_rank]) >= threshold {
                touched[keeper_rank] = true;
                touched[other_rank] = true;
                merges.push(Merge { keep: keeper.id.clone(), absorb: other.id.clone() });
            }
        }
    }
    merges
}

fn norm(vector: &[f32]) -> f32 {
    dot(vector, vector).sqrt()
}

/// The keeper after absorbing a duplicate: the keeper's id, type, content and
/// source; the higher importance; both access counts; the later update and
/// access times.
pub fn merged_memory(keep: &Memory, absorb: &Memory) -> Memory {
    Memory {
        importance: keep.importance.max(absorb.importance),
        access_count: keep.access_count.saturating_add(absorb.access_count),
        updated_at: keep.updated_at.max(absorb.updated_at),
        last_accessed_at: keep.last_accessed_at.max(absorb.last_accessed_at),
        ..keep.clone()
    }
}

/// A memory's new importance after decay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportanceUpdate {
    /// The memory's id.
    pub id: String,
    /// Its decayed importance.
    pub importance: f64,
}

/// Everything one maintenance run changes, for the edge to write in one batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MaintenancePlan {
    /// Decayed memories that are neither pruned nor part of a merge.
    pub importance_updates: Vec<ImportanceUpdate>,
    /// Ids to delete.
    pub prunes: Vec<String>,
    /// Duplicates to delete, each with the memory that takes over its associations.
    pub merges: Vec<Merge>,
    /// Each keeper as it must be written after its merges (decay included).
    pub merged: Vec<Memory>,
    /// The watermark to store with the plan and pass to the next run.
    pub decayed_through_ms: i64,
}

/// One maintenance pass at `now_ms`: decay over the window since
/// `decayed_through_ms` (see the module doc), then prune on the decayed
/// importances, then merge among the survivors.
pub fn plan_maintenance(
    memories: &[(Memory, Vec<f32>)],
    now_ms: i64,
    decayed_through_ms: Option<i64>,
) -> MaintenancePlan {
    let window = DecayWindow::new(now_ms, decayed_through_ms);
    let mut prunes = Vec::new();
    let mut survivors: Vec<(Memory, &[f32], bool)> = Vec::new();
    for (memory, vector) in memories {
        let importance = decayed_importance(memory, &window);
        let decayed = Memory { importance, ..memory.clone() };
        if should_prune(&decayed, now_ms) {
            prunes.push(decayed.id);
        } else {
            survivors.push((decayed, vector.as_slice(), importance != memory.importance));
        }
    }
    let borrowed: Vec<(&Memory, &[f32])> = survivors.iter().map(|(memory, vector, _)| (memory, *vector)).collect();
    let merges = merges_among(&borrowed, MERGE_SIMILARITY);

    let by_id: HashMap<&str, &Memory> = borrowed.iter().map(|(memory, _)| (memory.id.as_str(), *memory)).collect();
    let mut merged: Vec<Memory> = Vec::new();
    for merge in &merges {
        let (Some(keeper), Some(absorbed)) = (by_id.get(merge.keep.as_str()), by_id.get(merge.absorb.as_str())) else {
            continue;
        };
        // Merges come grouped by keeper, so a keeper's running result is the last one.
        match merged.last_mut() {
            Some(previous) if previous.id == merge.keep => *previous = merged_memory(previous, absorbed),
            _ => merged.push(merged_memory(keeper, absorbed)),
        }
    }
    let in_merge: HashSet<&str> =
        merges.iter().flat_map(|merge| [merge.keep.as_str(), merge.absorb.as_str()]).collect();
    let importance_updates = survivors
        .iter()
        .filter(|(memory, _, changed)| *changed && !in_merge.contains(memory.id.as_str()))
        .map(|(memory, _, _)| ImportanceUpdate { id: memory.id.clone(), importance: memory.importance })
        .collect();
    MaintenancePlan { importance_updates, prunes, merges, merged, decayed_through_ms: window.to_ms }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::types::MemoryType;

    const HOUR_MS: i64 = 3_600_000;

    fn memory(id: &str, memory_type: MemoryType, importance: f64, created_day: i64) -> Memory {
        Memory { importance, ..Memory::new(id, memory_type, id, "k", created_day * DAY_MS) }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn the_window_advances_only_by_whole_days() {
        let cases = [
            (10 * DAY_MS, None, DecayWindow { from_ms: None, to_ms: 10 * DAY_MS }),
            (
                10 * DAY_MS + 5 * HOUR_MS,
                Some(10 * DAY_MS),
                DecayWindow { from_ms: Some(10 * DAY_MS), to_ms: 10 * DAY_MS },
            ),
            (
                12 * DAY_MS + 5 * HOUR_MS,
                Some(10 * DAY_MS),
                DecayWindow { from_ms: Some(10 * DAY_MS), to_ms: 12 * DAY_MS },
            ),
            (9 * DAY_MS, Some(10 * DAY_MS), DecayWindow { from_ms: Some(10 * DAY_MS), to_ms: 10 * DAY_MS }),
        ];
        for (now, through, expected) in cases {
            assert_eq!(DecayWindow::new(now, through), expected, "{now} {through:?}");
        }
    }

    #[test]
    fn decay_counts_whole_days_since_the_latest_of_watermark_access_and_update() {
        let fact = memory("f", MemoryType::Fact, 0.6, 0);
        let window = |from: Option<i64>, to_day: i64| DecayWindow { from_ms: from, to_ms: to_day * DAY_MS };
        let cases = [
            (fact.clone(), window(None, 3), 0.45),
            (Memory { last_accessed_at: 2 * DAY_MS, ..fact.clone() }, window(None, 3), 0.55),
            (Memory { updated_at: 3 * DAY_MS, ..fact.clone() }, window(None, 3), 0.6),
            (fact.clone(), window(Some(2 * DAY_MS), 3), 0.55),
            (fact.clone(), window(None, 400), 0.0),
            (memory("i", MemoryType::Identity, 1.0, 0), window(None, 400), 1.0),
        ];
        for (memory, window, expected) in cases {
            let got = decayed_importance(&memory, &window);
            assert!(close(got, expected), "{memory:?} {window:?}: {got}");
        }
        let partial = DecayWindow { from_ms: None, to_ms: 3 * DAY_MS - 1 };
        assert!(close(decayed_importance(&fact, &partial), 0.5));
    }

    #[test]
    fn hourly_runs_decay_exactly_as_much_as_daily_ones() {
        let mut stored = memory("f", MemoryType::Fact, 0.6, 0);
        let mut watermark = None;
        for hour in 0..=72 {
            let plan = plan_maintenance(&[(stored.clone(), vec![1.0])], hour * HOUR_MS, watermark);
            for update in plan.importance_updates {
                stored.importance = update.importance;
            }
            watermark = Some(plan.decayed_through_ms);
        }
        assert!(close(stored.importance, 0.45), "{}", stored.importance);
        // A second run at the same instant changes nothing.
        let again = plan_maintenance(&[(stored.clone(), vec![1.0])], 72 * HOUR_MS, watermark);
        assert!(again.importance_updates.is_empty());
        assert_eq!(Some(again.decayed_through_ms), watermark);
    }

    #[test]
    fn only_old_faded_non_identity_memories_are_pruned() {
        let now = 100 * DAY_MS;
        let cases = [
            (memory("a", MemoryType::Fact, 0.05, 0), true),
            (memory("b", MemoryType::Fact, 0.05, 70), true),
            (memory("c", MemoryType::Fact, 0.05, 71), false),
            (memory("d", MemoryType::Fact, 0.1, 0), false),
            (memory("e", MemoryType::Identity, 0.0, 0), false),
            (memory("f", MemoryType::Event, 0.0, 0), true),
        ];
        for (memory, expected) in cases {
            assert_eq!(should_prune(&memory, now), expected, "{}", memory.id);
        }
    }

    fn with_vector(memory: Memory, vector: &[f32]) -> (Memory, Vec<f32>) {
        (memory, vector.to_vec())
    }

    fn pairs(merges: &[Merge]) -> Vec<(&str, &str)> {
        merges.iter().map(|merge| (merge.keep.as_str(), merge.absorb.as_str())).collect()
    }

    #[test]
    fn the_more_important_or_newer_duplicate_is_kept() {
        let rows = [
            with_vector(memory("low", MemoryType::Fact, 0.4, 0), &[1.0, 0.0]),
            with_vector(memory("high", MemoryType::Fact, 0.7, 0), &[2.0, 0.1]),
            with_vector(memory("old", MemoryType::Goal, 0.5, 1), &[0.0, 1.0]),
            with_vector(memory("new", MemoryType::Goal, 0.5, 2), &[0.1, 1.0]),
            with_vector(memory("far", MemoryType::Fact, 0.9, 0), &[1.0, 1.0]),
        ];
        assert_eq!(pairs(&plan_merges(&rows, MERGE_SIMILARITY)), [("high", "low"), ("new", "old")]);
    }

    #[test]
    fn identity_and_zero_vectors_are_never_merged() {
        let rows = [
            with_vector(memory("me", MemoryType::Identity, 1.0, 0), &[1.0, 0.0]),
            with_vector(memory("fact", MemoryType::Fact, 0.6, 0), &[1.0, 0.0]),
            with_vector(memory("blank", MemoryType::Fact, 0.9, 0), &[0.0, 0.0]),
            with_vector(memory("other", MemoryType::Fact, 0.5, 0), &[0.0, 0.0, 1.0]),
        ];
        assert!(plan_merges(&rows, MERGE_SIMILARITY).is_empty());
    }

    #[test]
    fn merges_do_not_chain_and_absorb_each_memory_once() {
        // a ~ b and b ~ c, but a is not close enough to c.
        let chain = [
            with_vector(memory("a", MemoryType::Fact, 0.9, 0), &[1.0, 0.0]),
            with_vector(memory("b", MemoryType::Fact, 0.8, 0), &[0.97, 0.243]),
            with_vector(memory("c", MemoryType::Fact, 0.7, 0), &[0.88, 0.475]),
        ];
        assert_eq!(pairs(&plan_merges(&chain, MERGE_SIMILARITY)), [("a", "b")]);
        // c is close to both a and b, which are not close to each other.
        let shared = [
            with_vector(memory("a", MemoryType::Fact, 0.9, 0), &[1.0, 0.0]),
            with_vector(memory("b", MemoryType::Fact, 0.8, 0), &[0.88, 0.475]),
            with_vector(memory("c", MemoryType::Fact, 0.7, 0), &[0.97, 0.243]),
        ];
        assert_eq!(pairs(&plan_merges(&shared, MERGE_SIMILARITY)), [("a", "c")]);
        // One keeper may absorb several.
        let star = [
            with_vector(memory("a", MemoryType::Fact, 0.9, 0), &[1.0, 0.0]),
            with_vector(memory("b", MemoryType::Fact, 0.8, 0), &[1.0, 0.01]),
            with_vector(memory("c", MemoryType::Fact, 0.7, 0), &[1.0, -0.01]),
        ];
        assert_eq!(pairs(&plan_merges(&star, MERGE_SIMILARITY)), [("a", "b"), ("a", "c")]);
    }

    #[test]
    fn duplicates_in_different_scopes_are_never_merged() {
        let in_scope = |id: &str, scope: &str| Memory { scope: scope.into(), ..memory(id, MemoryType::Fact, 0.8, 0) };
        let memories = [
            with_vector(in_scope("dm", "telegram:1111"), &[1.0, 0.0]),
            with_vector(in_scope("guest", "web:guest"), &[1.0, 0.0]),
            with_vector(in_scope("shared", crate::memory::scope::SHARED), &[1.0, 0.0]),
            with_vector(in_scope("dm-again", "telegram:1111"), &[1.0, 0.0]),
        ];
        let merges = plan_merges(&memories, MERGE_SIMILARITY);
        assert_eq!(merges.len(), 1, "{:?}", pairs(&merges));
        let (keep, absorb) = pairs(&merges)[0];
        assert_eq!([keep.min(absorb), keep.max(absorb)], ["dm", "dm-again"]);
    }

    #[test]
    fn a_merged_memory_keeps_the_keepers_words_and_the_best_of_both() {
        let keep = Memory { access_count: 2, last_accessed_at: 5, ..memory("k", MemoryType::Fact, 0.6, 0) };
        let absorb = Memory { access_count: 3, updated_at: 9, ..memory("x", MemoryType::Event, 0.8, 0) };
        let merged = merged_memory(&keep, &absorb);
        assert_eq!((merged.id.as_str(), merged.content.as_str(), merged.memory_type), ("k", "k", MemoryType::Fact));
        assert_eq!((merged.importance, merged.access_count), (0.8, 5));
        assert_eq!((merged.updated_at, merged.last_accessed_at, merged.created_at), (9, 5, 0));
    }

    #[test]
    fn a_keeper_of_several_duplicates_is_written_once_with_all_of_them() {
        let now = 5 * DAY_MS;
        let row = |id: &str, importance: f64, access_count: u64, vector: &[f32]| {
            let memory = Memory { access_count, ..memory(id, MemoryType::Fact, importance, 5) };
            with_vector(memory, vector)
        };
        let rows = [row("a", 0.9, 1, &[1.0, 0.0]), row("b", 0.8, 2, &[1.0, 0.01]), row("c", 0.7, 3, &[1.0, -0.01])];
        let plan = plan_maintenance(&rows, now, None);
        assert_eq!(pairs(&plan.merges), [("a", "b"), ("a", "c")]);
        assert_eq!(plan.merged.len(), 1);
        assert_eq!((plan.merged[0].id.as_str(), plan.merged[0].access_count), ("a", 6));
        assert!(plan.importance_updates.is_empty() && plan.prunes.is_empty());
    }

    #[test]
    fn one_pass_decays_prunes_and_merges() {
        let now = 40 * DAY_MS;
        let rows = [
            with_vector(memory("faded", MemoryType::Observation, 0.12, 0), &[0.0, 1.0, 0.0]),
            with_vector(memory("me", MemoryType::Identity, 1.0, 0), &[0.0, 0.0, 1.0]),
            with_vector(memory("plain", MemoryType::Fact, 0.6, 38), &[1.0, 1.0, 0.0]),
            with_vector(memory("keep", MemoryType::Decision, 0.8, 39), &[1.0, 0.0, 0.0]),
            with_vector(memory("copy", MemoryType::Decision, 0.8, 38), &[1.0, 0.0, 0.01]),
        ];
        let plan = plan_maintenance(&rows, now, Some(38 * DAY_MS));
        assert_eq!(plan.prunes, ["faded"]);
        assert_eq!(plan.importance_updates, vec![ImportanceUpdate { id: "plain".into(), importance: 0.5 }]);
        assert_eq!(pairs(&plan.merges), [("keep", "copy")]);
        assert_eq!(plan.merged.len(), 1);
        assert_eq!(plan.merged[0].id, "keep");
        assert!(close(plan.merged[0].importance, 0.75), "{}", plan.merged[0].importance);
        assert_eq!(plan.decayed_through_ms, now);
    }
}
