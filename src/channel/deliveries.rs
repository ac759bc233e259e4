//! The delivery ids a channel's inbox holds, with each row's number: the
//! webhook dedupe, kept in the object's memory
//! (durable_objects/channel_object/inbox.rs).
//!
//! An object's storage is billed per row written, and a `UNIQUE` index on the
//! delivery id made every inbound two rows: half of all an observed message
//! writes. The object is the only writer of its SQLite and runs one event at a
//! time, so a map read from the table on the first inbound after a start, and
//! kept in step by every insert and delete after it, answers "taken before?"
//! as the index did, and gives each row's number for the updates by key.
//!
//! The retention sweep that forgets old rows runs at most once an hour
//! ([`Deliveries::sweep_due`]): rows are kept seven days, and a sweep after
//! every turn and every index flush deleted nothing nearly every time.
//!
//! The same memory keeps the conversation's counts as the newest counted row
//! holds them (stats.rs in the object), once read: each counted row filed
//! after that passes its counts here, so an inbound reads none from storage.

use std::collections::HashMap;

use crate::channel::counts::Counts;

/// The inbox's retention sweep runs at most this often per object's life.
pub const SWEEP_EVERY_MS: i64 = 60 * 60 * 1000;

/// The inbox's delivery ids and the numbers (`seq`) their rows took.
#[derive(Debug, Default)]
pub struct Deliveries {
    seqs: HashMap<String, i64>,
    /// The highest number handed out: rows are numbered in arrival order, and
    /// the inbox's retention keeps the newest row, so the table's highest
    /// number is this one after a start.
    last: i64,
    /// The conversation's counts after its newest counted row (`Some(None)`:
    /// none counted yet); `None` until read, or after a write that may not
    /// have counted what it was given.
    latest: Option<Option<Counts>>,
    /// When this memory last asked for a sweep (None: not since the start).
    swept_at: Option<i64>,
}

impl Deliveries {
    /// The map of the inbox's rows, as `(delivery_id, seq)`.
    pub fn from_rows(rows: impl IntoIterator<Item = (String, i64)>) -> Deliveries {
        let mut deliveries = Deliveries::default();
        for (delivery_id, seq) in rows {
            deliveries.filed(delivery_id, seq);
        }
        deliveries
    }

    pub fn contains(&self, delivery_id: &str) -> bool {
        self.seqs.contains_key(delivery_id)
    }

    /// The number of the row that holds `delivery_id`.
    pub fn seq(&self, delivery_id: &str) -> Option<i64> {
        self.seqs.get(delivery_id).copied()
    }

    /// The number the next row takes: above every number handed out, even
    /// one whose row is gone.
    pub fn next_seq(&self) -> i64 {
        self.last + 1
    }

    /// A row written under `seq`.
    pub fn filed(&mut self, delivery_id: String, seq: i64) {
        self.last = self.last.max(seq);
        self.seqs.insert(delivery_id, seq);
    }

    /// Rows deleted (a retention sweep): their ids are new again, as they
    /// were to the index; their numbers are not handed out again.
    pub fn forget<'a>(&mut self, delivery_ids: impl IntoIterator<Item = &'a str>) {
        for delivery_id in delivery_ids {
            self.seqs.remove(delivery_id);
        }
    }

    /// Whether a retention sweep is due at `now` (the first since a start
    /// always is); a sweep that is due counts as made from `now`.
    pub fn sweep_due(&mut self, now: i64) -> bool {
        let due = self.swept_at.is_none_or(|swept_at| !(0..SWEEP_EVERY_MS).contains(&(now - swept_at)));
        if due {
            self.swept_at = Some(now);
        }
        due
    }

    /// The counts after the newest counted row, when known.
    pub fn latest(&self) -> Option<&Option<Counts>> {
        self.latest.as_ref()
    }

    /// The counts as storage holds them, read while unknown.
    pub fn read_latest(&mut self, latest: Option<Counts>) {
        self.latest = Some(latest);
    }

    /// A row that carries `counts` was filed: they are the latest now.
    pub fn counted(&mut self, counts: Counts) {
        self.latest = Some(Some(counts));
    }

    /// A write that counts a row only where it was not counted before (a
    /// held message decided again): the counts are read afresh next time.
    pub fn forget_latest(&mut self) {
        self.latest = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_numbers_on_above_the_newest_row_and_knows_every_id() {
        let deliveries = Deliveries::from_rows([("telegram:7".to_string(), 9), ("telegram:5".to_string(), 4)]);
        assert_eq!(deliveries.next_seq(), 10);
        assert!(deliveries.contains("telegram:7") && deliveries.contains("telegram:5"));
        assert!(!deliveries.contains("telegram:6"));
        assert_eq!((deliveries.seq("telegram:5"), deliveries.seq("telegram:6")), (Some(4), None));
        assert_eq!(Deliveries::default().next_seq(), 1, "an empty inbox numbers from 1");
    }

    #[test]
    fn a_row_filed_is_a_repeat_until_it_is_forgotten_and_its_number_is_never_reused() {
        let mut deliveries = Deliveries::default();
        let seq = deliveries.next_seq();
        deliveries.filed("slack:Ev1".into(), seq);
        assert!(deliveries.contains("slack:Ev1"));
        assert_eq!(deliveries.next_seq(), 2);
        deliveries.forget(["slack:Ev1"]);
        assert!(!deliveries.contains("slack:Ev1"));
        assert_eq!(deliveries.next_seq(), 2, "the forgotten row's number stays taken");
    }

    #[test]
    fn a_sweep_is_due_first_after_a_start_then_once_an_hour() {
        let mut deliveries = Deliveries::default();
        let start = 1_000_000;
        assert!(deliveries.sweep_due(start), "the first since a start");
        assert!(!deliveries.sweep_due(start + 1), "a moment later");
        assert!(!deliveries.sweep_due(start + SWEEP_EVERY_MS - 1), "just under the hour");
        assert!(deliveries.sweep_due(start + SWEEP_EVERY_MS), "the hour is up");
        assert!(!deliveries.sweep_due(start + SWEEP_EVERY_MS + 5));
        assert!(deliveries.sweep_due(start), "a clock that went back");
    }

    #[test]
    fn the_counts_are_unknown_until_read_then_each_counted_row_s_until_forgotten() {
        let counts = |messages| Counts {
            conversation_key: "telegram:-5".into(),
            title: None,
            messages,
            engaged: 0,
            observed: messages,
            last_activity: 7,
        };
        let mut deliveries = Deliveries::from_rows([("telegram:1".to_string(), 1)]);
        assert_eq!(deliveries.latest(), None, "a start has not read them");
        deliveries.read_latest(None);
        assert_eq!(deliveries.latest(), Some(&None), "read: nothing counted yet");
        deliveries.counted(counts(1));
        deliveries.counted(counts(2));
        assert_eq!(deliveries.latest(), Some(&Some(counts(2))));
        deliveries.forget(["telegram:1"]);
        assert_eq!(deliveries.latest(), Some(&Some(counts(2))), "a sweep keeps the newest counted row");
        deliveries.forget_latest();
        assert_eq!(deliveries.latest(), None);
    }
}
