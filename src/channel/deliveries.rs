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

use std::collections::HashMap;

/// The inbox's delivery ids and the numbers (`seq`) their rows took.
#[derive(Debug, Default)]
pub struct Deliveries {
    seqs: HashMap<String, i64>,
    /// The highest number handed out: rows are numbered in arrival order, and
    /// the inbox's retention keeps the newest row, so the table's highest
    /// number is this one after a start.
    last: i64,
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
}
