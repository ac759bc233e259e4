//! What a channel object holds for its next D1 commit, kept as ONE row of its
//! storage (durable_objects/channel_object/held.rs): the spend its steps made
//! and how far its history has gone to D1.
//!
//! An object's storage is billed per row written. Held apart, a step's spend
//! was a row and its AUTOINCREMENT counter another, and a commit then deleted
//! the spend and marked each history row it sent: about five rows a turn.
//! In one row, holding a step's spend is one row written, and forgetting what
//! a commit sent (spend and history alike) is one more.
//!
//! - **Spend** is held under sequence numbers that only grow ([`Held::next_seq`]):
//!   D1 adds a step's spend only above the conversation's `flush_seq`, so a
//!   commit sent again after a crash counts nothing twice.
//! - **History** rows carry a change stamp, set on every write D1 must see
//!   (their insert, a flag, an edit); a row is in D1 once its stamp is at or
//!   under [`Held::mirrored_through`].
//!
//! While D1 is down the row grows by about 200 bytes a step. Past storage's
//! 2 MB a value (some 10,000 steps of one conversation), a hold fails: it is
//! logged (`usage_not_recorded`) and the reply still goes.

use serde::{Deserialize, Serialize};

use crate::budget::rules::{Person, Spend, Unsent};

/// The one row's content.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Held {
    /// The number the next held step takes: above every number handed out.
    pub next_seq: i64,
    /// The steps' spend not yet in D1, oldest first.
    #[serde(default)]
    pub spend: Vec<HeldSpend>,
    /// The highest history change stamp D1 holds (0: none yet).
    #[serde(default)]
    pub mirrored_through: i64,
}

/// One step's spend, as the commit sends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldSpend {
    pub seq: i64,
    pub conversation_key: String,
    pub day: String,
    pub person: Option<Person>,
    pub spend: Spend,
}

impl Held {
    /// Reads a stored row; none is a new object (numbers from 1). A row that
    /// does not read is an error: starting again could hand out numbers D1
    /// already took, and that spend would not count.
    pub fn parse(body: Option<&str>) -> serde_json::Result<Held> {
        match body {
            Some(body) => serde_json::from_str(body),
            None => Ok(Held { next_seq: 1, ..Held::default() }),
        }
    }

    /// Holds a step's spend under the next number (nothing for a step that spent nothing).
    pub fn hold(&mut self, conversation_key: &str, day: &str, person: Option<&Person>, spend: Spend) -> bool {
        if spend == Spend::default() {
            return false;
        }
        let seq = self.next_seq.max(1);
        self.next_seq = seq + 1;
        self.spend.push(HeldSpend {
            seq,
            conversation_key: conversation_key.to_string(),
            day: day.to_string(),
            person: person.cloned(),
            spend,
        });
        true
    }

    /// `day`'s spend held unsent, and what of it `person` spent.
    pub fn unsent(&self, day: &str, person: Option<&str>) -> Unsent {
        let mut unsent = Unsent::default();
        for held in self.spend.iter().filter(|held| held.day == day) {
            unsent.all.add(held.spend);
            if person.is_some() && held.person.as_ref().map(|person| person.key.as_str()) == person {
                unsent.person.add(held.spend);
            }
        }
        unsent
    }

    /// The oldest `most` held steps, for one commit.
    pub fn to_send(&self, most: usize) -> &[HeldSpend] {
        &self.spend[..self.spend.len().min(most)]
    }

    /// D1 took the spend through `seq` and the history through `stamp`:
    /// forgets that spend and moves the mark. False when nothing changed.
    pub fn sent(&mut self, seq: Option<i64>, stamp: Option<i64>) -> bool {
        let before = (self.spend.len(), self.mirrored_through);
        if let Some(seq) = seq {
            self.spend.retain(|held| held.seq > seq);
        }
        self.mirrored_through = self.mirrored_through.max(stamp.unwrap_or(0));
        before != (self.spend.len(), self.mirrored_through)
    }

    /// Whether anything waits for a commit besides history.
    pub fn has_spend(&self) -> bool {
        !self.spend.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spend(micro_usd: u64) -> Spend {
        Spend { input_tokens: 10, output_tokens: 5, micro_usd }
    }

    fn ada() -> Person {
        Person { key: "telegram:1".into(), name: "Ada".into() }
    }

    #[test]
    fn a_new_object_numbers_from_one_and_numbers_only_grow_across_commits() {
        let mut held = Held::parse(None).unwrap();
        assert!(held.hold("telegram:1", "2026-11-28", Some(&ada()), spend(7)));
        assert!(held.hold("telegram:1", "2026-11-28", None, spend(3)));
        assert_eq!(held.spend.iter().map(|held| held.seq).collect::<Vec<_>>(), [1, 2]);
        assert!(held.sent(Some(2), None));
        assert!(!held.has_spend());
        held.hold("telegram:1", "2026-11-28", None, spend(1));
        assert_eq!(held.spend[0].seq, 3, "a number D1 took is never handed out again");
    }

    #[test]
    fn nothing_spent_holds_nothing() {
        let mut held = Held::parse(None).unwrap();
        assert!(!held.hold("telegram:1", "2026-11-28", None, Spend::default()));
        assert_eq!(held, Held { next_seq: 1, ..Held::default() });
    }

    #[test]
    fn a_commit_forgets_only_what_it_sent_and_the_mark_never_goes_back() {
        let mut held = Held::parse(None).unwrap();
        for micro_usd in [1, 2, 3] {
            held.hold("telegram:1", "2026-11-28", None, spend(micro_usd));
        }
        let sent: Vec<i64> = held.to_send(2).iter().map(|held| held.seq).collect();
        assert_eq!(sent, [1, 2]);
        assert!(held.sent(Some(2), Some(9)));
        assert_eq!((held.spend.len(), held.mirrored_through), (1, 9));
        assert!(!held.sent(None, Some(4)), "an older stamp does not move the mark back");
        assert_eq!(held.mirrored_through, 9);
        assert!(!held.sent(None, None), "nothing sent changes nothing");
    }

    #[test]
    fn unsent_spend_is_todays_and_the_persons_share_is_theirs() {
        let mut held = Held::parse(None).unwrap();
        held.hold("telegram:1", "2026-11-27", Some(&ada()), spend(100));
        held.hold("telegram:1", "2026-11-28", Some(&ada()), spend(7));
        held.hold("telegram:1", "2026-11-28", None, spend(3));
        let unsent = held.unsent("2026-11-28", Some("telegram:1"));
        assert_eq!((unsent.all.micro_usd, unsent.person.micro_usd), (10, 7));
        assert_eq!(held.unsent("2026-11-28", None).person, Spend::default());
    }

    #[test]
    fn a_stored_row_reads_back_and_an_unreadable_one_is_an_error() {
        let mut held = Held::parse(None).unwrap();
        held.hold("telegram:1", "2026-11-28", Some(&ada()), spend(7));
        held.sent(None, Some(4));
        let body = serde_json::to_string(&held).unwrap();
        assert_eq!(Held::parse(Some(&body)).unwrap(), held);
        assert!(Held::parse(Some("{not json")).is_err());
    }
}
