//! Versioned slots (the seed calls them "versioned channels"): typed pieces
//! of a conversation's state that say whether the world changed.
//!
//! Each slot has update semantics, a version that moves only on a real
//! change, and a checkpoint form (its serde representation). Actors remember
//! the versions they have seen ([`VersionsSeen`]) and run only when a slot
//! they read moved past it: that rule stops self-retrigger loops and makes
//! crash recovery exact.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};

use serde::ser::{Error as _, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// Anything with a version.
pub trait Versioned {
    fn version(&self) -> u64;
}

/// Only the current value matters; every update overwrites.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound(serialize = "T: Serialize", deserialize = "T: Deserialize<'de>"))]
pub struct LastValue<T> {
    value: Option<T>,
    version: u64,
}

impl<T> Default for LastValue<T> {
    fn default() -> Self {
        LastValue { value: None, version: 0 }
    }
}

impl<T: PartialEq> LastValue<T> {
    /// Takes the last of `values`; the version moves only if the value changed.
    pub fn update(&mut self, values: impl IntoIterator<Item = T>) -> bool {
        let Some(last) = values.into_iter().last() else {
            return false;
        };
        if self.value.as_ref() == Some(&last) {
            return false;
        }
        self.value = Some(last);
        self.version += 1;
        true
    }

    pub fn clear(&mut self) -> bool {
        if self.value.take().is_some() {
            self.version += 1;
            true
        } else {
            false
        }
    }

    pub fn get(&self) -> Option<&T> {
        self.value.as_ref()
    }
}

/// Items that de-duplicate by a key.
pub trait Keyed {
    fn key(&self) -> &str;
}

/// How many keys a [`Topic`] remembers for de-duplication after items leave it.
pub const TOPIC_SEEN_LIMIT: usize = 256;

/// Accumulates items, never the same key twice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound(serialize = "T: Serialize", deserialize = "T: Deserialize<'de>"))]
pub struct Topic<T> {
    items: Vec<T>,
    seen: VecDeque<String>,
    version: u64,
}

impl<T> Default for Topic<T> {
    fn default() -> Self {
        Topic { items: Vec::new(), seen: VecDeque::new(), version: 0 }
    }
}

impl<T: Keyed> Topic<T> {
    /// Appends the items not seen before; the version moves if any was added.
    pub fn update(&mut self, values: impl IntoIterator<Item = T>) -> bool {
        let mut added = false;
        for value in values {
            if self.seen.iter().any(|key| key == value.key()) {
                continue;
            }
            self.seen.push_back(value.key().to_string());
            if self.seen.len() > TOPIC_SEEN_LIMIT {
                self.seen.pop_front();
            }
            self.items.push(value);
            added = true;
        }
        if added {
            self.version += 1;
        }
        added
    }

    /// Removes the items with these keys (they were handled); their keys stay
    /// seen, so a late duplicate is still refused.
    pub fn remove(&mut self, keys: &[String]) -> bool {
        let before = self.items.len();
        self.items.retain(|item| !keys.iter().any(|key| key == item.key()));
        let removed = self.items.len() != before;
        if removed {
            self.version += 1;
        }
        removed
    }

    pub fn items(&self) -> &[T] {
        &self.items
    }

    /// Changes items in place (an edit heard); `change` says whether it
    /// changed one, and the version moves if any changed.
    pub fn edit(&mut self, mut change: impl FnMut(&mut T) -> bool) -> bool {
        let changed = self.items.iter_mut().fold(false, |changed, item| change(item) | changed);
        if changed {
            self.version += 1;
        }
        changed
    }
}

/// Combines values with one associative operation.
pub trait Monoid: Default {
    fn combine(&mut self, other: Self);
}

impl Monoid for u64 {
    fn combine(&mut self, other: Self) {
        *self = self.saturating_add(other);
    }
}

impl Monoid for crate::llm::Usage {
    fn combine(&mut self, other: Self) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
    }
}

/// Reduces every update into one value (a sum, a union, a max).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BinaryOperatorAggregate<T> {
    value: T,
    version: u64,
}

impl<T: Monoid + PartialEq + Clone> BinaryOperatorAggregate<T> {
    pub fn update(&mut self, values: impl IntoIterator<Item = T>) -> bool {
        let before = self.value.clone();
        for value in values {
            self.value.combine(value);
        }
        let changed = self.value != before;
        if changed {
            self.version += 1;
        }
        changed
    }

    pub fn get(&self) -> &T {
        &self.value
    }
}

/// Keeps the last `capacity` items.
///
/// Its checkpoint form is written from each item's JSON, kept from the last
/// checkpoint: a new item costs its own encoding, not the whole buffer's (an
/// observed message moves this slot, and the buffer is most of its bytes).
/// The kept forms are `RawValue`s, so this form is for `serde_json` only,
/// which is the checkpoint's encoding.
#[derive(Debug, Clone)]
pub struct RingBuffer<T> {
    items: VecDeque<T>,
    capacity: usize,
    version: u64,
    /// The JSON of the newest `forms.len()` items, once encoded (a shorter
    /// list lines up with the newest items: older ones are encoded anew).
    forms: RefCell<VecDeque<Option<Box<RawValue>>>>,
}

impl<T> RingBuffer<T> {
    pub fn new(capacity: usize) -> Self {
        RingBuffer { items: VecDeque::new(), capacity: capacity.max(1), version: 0, forms: RefCell::default() }
    }

    pub fn update(&mut self, values: impl IntoIterator<Item = T>) -> bool {
        let mut added = false;
        for value in values {
            self.items.push_back(value);
            self.forms.get_mut().push_back(None);
            added = true;
        }
        while self.items.len() > self.capacity {
            self.items.pop_front();
        }
        self.forget_dropped_forms();
        if added {
            self.version += 1;
        }
        added
    }

    /// Drops the oldest `count` items (they were handed to a turn).
    pub fn drop_oldest(&mut self, count: usize) -> bool {
        let count = count.min(self.items.len());
        self.items.drain(..count);
        self.forget_dropped_forms();
        if count > 0 {
            self.version += 1;
        }
        count > 0
    }

    /// Keeps the forms of the items still held (the newest).
    fn forget_dropped_forms(&mut self) {
        let forms = self.forms.get_mut();
        let dropped = forms.len().saturating_sub(self.items.len());
        forms.drain(..dropped);
    }

    pub fn items(&self) -> impl Iterator<Item = &T> {
        self.items.iter()
    }

    /// Changes items in place, or drops those `change` answers None for (an
    /// edit or a deletion heard); the version moves if any changed.
    pub fn edit(&mut self, mut change: impl FnMut(T) -> Option<T>) -> bool
    where
        T: PartialEq + Clone,
    {
        let before = self.items.clone();
        self.items = std::mem::take(&mut self.items).into_iter().filter_map(&mut change).collect();
        let changed = self.items != before;
        if changed {
            self.version += 1;
            // Rare (an edit or a deletion heard): every item is encoded again.
            self.forms.get_mut().clear();
        }
        changed
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

impl<T: PartialEq> PartialEq for RingBuffer<T> {
    fn eq(&self, other: &Self) -> bool {
        (&self.items, self.capacity, self.version) == (&other.items, other.capacity, other.version)
    }
}

/// The stored shape: `{"items":[...],"capacity":N,"version":V}`.
#[derive(Deserialize)]
#[serde(rename = "RingBuffer")]
struct StoredRing<T> {
    items: VecDeque<T>,
    capacity: usize,
    version: u64,
}

impl<T: Serialize> Serialize for RingBuffer<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut forms = self.forms.borrow_mut();
        while forms.len() < self.items.len() {
            forms.push_front(None);
        }
        for (item, form) in self.items.iter().zip(forms.iter_mut()) {
            if form.is_none() {
                *form = Some(serde_json::value::to_raw_value(item).map_err(S::Error::custom)?);
            }
        }
        let mut ring = serializer.serialize_struct("RingBuffer", 3)?;
        ring.serialize_field("items", &*forms)?;
        ring.serialize_field("capacity", &self.capacity)?;
        ring.serialize_field("version", &self.version)?;
        ring.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for RingBuffer<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let StoredRing { items, capacity, version } = StoredRing::deserialize(deserializer)?;
        Ok(RingBuffer { items, capacity, version, forms: RefCell::default() })
    }
}

/// A slot with its own update semantics: the change function says whether it
/// really changed anything, and only then does the version move.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Custom<T> {
    value: T,
    version: u64,
}

impl<T> Custom<T> {
    pub fn update(&mut self, change: impl FnOnce(&mut T) -> bool) -> bool {
        self.apply(change, |changed| *changed)
    }

    /// Runs `change` and returns what it answers; `changed` reads from the
    /// answer whether the value changed (only then does the version move).
    pub fn apply<R>(&mut self, change: impl FnOnce(&mut T) -> R, changed: impl FnOnce(&R) -> bool) -> R {
        let answer = change(&mut self.value);
        if changed(&answer) {
            self.version += 1;
        }
        answer
    }

    pub fn get(&self) -> &T {
        &self.value
    }
}

macro_rules! versioned {
    ($($slot:ident $(<$param:ident $(: $bound:path)?>)?),* $(,)?) => {
        $(impl$(<$param $(: $bound)?>)? Versioned for $slot$(<$param>)? {
            fn version(&self) -> u64 {
                self.version
            }
        })*
    };
}
versioned!(LastValue<T>, Topic<T>, BinaryOperatorAggregate<T>, RingBuffer<T>, Custom<T>);

/// For each actor, the version of each slot it last acted on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionsSeen {
    by_actor: BTreeMap<String, BTreeMap<String, u64>>,
}

impl VersionsSeen {
    /// Whether any slot the actor reads moved past what it saw.
    pub fn should_run(&self, actor: &str, reads: &[(&str, u64)]) -> bool {
        let seen = self.by_actor.get(actor);
        reads.iter().any(|(slot, version)| seen.and_then(|slots| slots.get(*slot)).copied().unwrap_or(0) < *version)
    }

    /// Records that the actor acted on these slot versions.
    pub fn mark(&mut self, actor: &str, reads: &[(&str, u64)]) {
        let slots = self.by_actor.entry(actor.to_string()).or_default();
        for (slot, version) in reads {
            slots.insert(slot.to_string(), *version);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Item(String);
    impl Keyed for Item {
        fn key(&self) -> &str {
            &self.0
        }
    }

    #[test]
    fn last_value_overwrites_and_moves_only_on_change() {
        let mut slot = LastValue::default();
        assert!(slot.update([1, 2]));
        assert_eq!((slot.get(), slot.version()), (Some(&2), 1));
        assert!(!slot.update([2]));
        assert!(!slot.update(Vec::<i32>::new()));
        assert_eq!(slot.version(), 1);
        assert!(slot.clear());
        assert_eq!((slot.get(), slot.version()), (None, 2));
    }

    #[test]
    fn topic_deduplicates_even_after_removal() {
        let mut topic = Topic::default();
        assert!(topic.update([Item("a".into()), Item("b".into()), Item("a".into())]));
        assert_eq!(topic.items().len(), 2);
        assert!(!topic.update([Item("b".into())]), "a duplicate changes nothing");
        assert_eq!(topic.version(), 1);
        assert!(topic.remove(&["a".into()]));
        assert!(!topic.update([Item("a".into())]), "a handled key stays seen");
        assert_eq!(topic.version(), 2);
    }

    #[test]
    fn aggregate_reduces_and_ring_buffer_keeps_the_last_n() {
        let mut sum = BinaryOperatorAggregate::<u64>::default();
        assert!(sum.update([3, 4]));
        assert!(!sum.update([0]));
        assert_eq!((*sum.get(), sum.version()), (7, 1));

        let mut ring = RingBuffer::new(3);
        ring.update(1..=5);
        assert_eq!(ring.items().copied().collect::<Vec<_>>(), vec![3, 4, 5]);
        assert!(ring.drop_oldest(2));
        assert_eq!(ring.items().copied().collect::<Vec<_>>(), vec![5]);
        assert_eq!(ring.version(), 2);
    }

    #[test]
    fn custom_moves_only_when_the_change_says_so() {
        let mut slot = Custom::<Vec<i32>>::default();
        assert!(!slot.update(|_| false));
        assert!(slot.update(|value| {
            value.push(1);
            true
        }));
        assert_eq!(slot.version(), 1);
    }

    #[test]
    fn checkpoints_round_trip() {
        let mut topic = Topic::default();
        topic.update([Item("x".into())]);
        let restored: Topic<Item> = serde_json::from_str(&serde_json::to_string(&topic).unwrap()).unwrap();
        assert_eq!(restored, topic);
        let mut ring = RingBuffer::new(2);
        ring.update(["a".to_string()]);
        let restored: RingBuffer<String> = serde_json::from_str(&serde_json::to_string(&ring).unwrap()).unwrap();
        assert_eq!(restored, ring);
    }

    /// The form written from kept item forms is the one a fresh encoding of
    /// the same items gives, through adds past capacity, drops, edits and a
    /// restore (which keeps no forms).
    #[test]
    fn a_ring_written_from_kept_forms_reads_as_written_afresh() {
        fn fresh(ring: &RingBuffer<String>) -> String {
            let items: Vec<&String> = ring.items().collect();
            serde_json::json!({ "items": items, "capacity": ring.capacity, "version": ring.version }).to_string()
        }
        let mut ring = RingBuffer::new(3);
        let check = |ring: &RingBuffer<String>| {
            let written = serde_json::to_string(ring).unwrap();
            let as_value: serde_json::Value = serde_json::from_str(&written).unwrap();
            assert_eq!(as_value.to_string(), fresh(ring), "after {written}");
            let restored: RingBuffer<String> = serde_json::from_str(&written).unwrap();
            assert_eq!(&restored, ring);
            restored
        };
        ring.update(["a".to_string(), "b".to_string()]);
        check(&ring);
        ring.update(["c".to_string(), "d".to_string(), "e".to_string()]);
        check(&ring);
        ring.drop_oldest(1);
        check(&ring);
        ring.edit(|item| (item != "d").then(|| item.to_uppercase()));
        check(&ring);
        let mut ring = check(&ring);
        ring.update(["f".to_string(), "g".to_string()]);
        check(&ring);
        ring.drop_oldest(5);
        check(&ring);
        ring.update(["h".to_string()]);
        assert_eq!(check(&ring).items().collect::<Vec<_>>(), ["h"]);
    }

    #[test]
    fn actors_run_only_when_what_they_read_moved() {
        let mut seen = VersionsSeen::default();
        assert!(seen.should_run("turn", &[("queue", 1)]));
        seen.mark("turn", &[("queue", 1)]);
        assert!(!seen.should_run("turn", &[("queue", 1)]), "its own reads do not retrigger it");
        assert!(seen.should_run("turn", &[("queue", 2)]));
        assert!(!seen.should_run("turn", &[("queue", 0)]));
        assert!(seen.should_run("mirror", &[("queue", 1)]), "actors are independent");
    }
}
