//! Who has spoken in the conversation lately, and how many of them are human.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Speakers older than this no longer count.
pub const PARTICIPANT_WINDOW_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// At most this many speakers are remembered (the least recent go first).
pub const MAX_PARTICIPANTS: usize = 50;
/// A membership read younger than this is ground truth.
pub const MEMBERSHIP_FRESHNESS_MS: i64 = 60_000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Participant {
    pub name: String,
    pub is_bot: bool,
    pub last_seen_ms: i64,
}

/// Speakers seen in the last seven days, by author id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Participants {
    pub by_id: BTreeMap<String, Participant>,
}

impl Participants {
    /// Records a speaker; returns whether the set changed in a way readers care
    /// about (a new speaker, a new name, or one that had aged out).
    pub fn record(&mut self, id: &str, name: &str, is_bot: bool, now_ms: i64) -> bool {
        let pruned = self.prune(now_ms);
        let changed = match self.by_id.get_mut(id) {
            Some(known) => {
                let renamed = known.name != name;
                known.name = name.to_string();
                known.last_seen_ms = now_ms;
                renamed
            }
            None => {
                self.by_id.insert(id.to_string(), Participant { name: name.to_string(), is_bot, last_seen_ms: now_ms });
                true
            }
        };
        while self.by_id.len() > MAX_PARTICIPANTS {
            let oldest = self.by_id.iter().min_by_key(|(_, p)| p.last_seen_ms).map(|(id, _)| id.clone());
            match oldest {
                Some(id) => self.by_id.remove(&id),
                None => break,
            };
        }
        changed || pruned
    }

    fn prune(&mut self, now_ms: i64) -> bool {
        let before = self.by_id.len();
        self.by_id.retain(|_, participant| now_ms - participant.last_seen_ms <= PARTICIPANT_WINDOW_MS);
        self.by_id.len() != before
    }

    pub fn is_known(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    /// Distinct human speakers (peer bots never count).
    pub fn human_count(&self) -> usize {
        self.by_id.values().filter(|participant| !participant.is_bot).count()
    }

    /// Display names of the peer bots seen speaking.
    pub fn peer_bot_names(&self) -> impl Iterator<Item = &str> {
        self.by_id.values().filter(|participant| participant.is_bot).map(|participant| participant.name.as_str())
    }
}

/// A read of the platform's member list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MembershipCount {
    /// Humans among the members (bots excluded).
    pub humans: usize,
    /// The platform gave only part of the list.
    pub truncated: bool,
    pub fetched_at_ms: i64,
}

impl MembershipCount {
    /// Whether this read can be trusted as ground truth right now.
    pub fn is_fresh_and_complete(&self, now_ms: i64) -> bool {
        !self.truncated && now_ms - self.fetched_at_ms < MEMBERSHIP_FRESHNESS_MS
    }
}

/// The human count the engagement ladder uses: a fresh complete membership
/// read is ground truth (it sees lurkers and prunes leavers); a stale or
/// truncated one can only raise the count above the speakers seen lately.
pub fn effective_humans(seen_humans: usize, membership: Option<&MembershipCount>, now_ms: i64) -> usize {
    match membership {
        Some(read) if read.is_fresh_and_complete(now_ms) => read.humans,
        Some(read) => seen_humans.max(read.humans),
        None => seen_humans,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn humans_are_counted_and_bots_are_not() {
        let mut participants = Participants::default();
        assert!(participants.record("1", "Ada", false, 0));
        assert!(participants.record("2", "PeerBot", true, 0));
        assert!(!participants.record("1", "Ada", false, 10), "a known speaker changes nothing readers see");
        assert_eq!(participants.human_count(), 1);
        assert_eq!(participants.peer_bot_names().collect::<Vec<_>>(), vec!["PeerBot"]);
    }

    #[test]
    fn speakers_age_out_after_seven_days_and_the_set_is_capped() {
        let mut participants = Participants::default();
        participants.record("old", "Old", false, 0);
        participants.record("new", "New", false, PARTICIPANT_WINDOW_MS + 1);
        assert!(!participants.is_known("old"));
        for index in 0..60 {
            participants.record(&format!("u{index}"), "x", false, PARTICIPANT_WINDOW_MS + 2 + index);
        }
        assert_eq!(participants.by_id.len(), MAX_PARTICIPANTS);
        assert!(participants.is_known("u59") && !participants.is_known("u0"));
    }

    #[test]
    fn fresh_complete_reads_are_truth_and_others_only_raise_the_count() {
        let now = 1_000_000;
        let fresh = MembershipCount { humans: 1, truncated: false, fetched_at_ms: now - 1_000 };
        let stale = MembershipCount { humans: 1, truncated: false, fetched_at_ms: now - MEMBERSHIP_FRESHNESS_MS };
        let truncated = MembershipCount { humans: 4, truncated: true, fetched_at_ms: now };
        assert_eq!(effective_humans(3, Some(&fresh), now), 1, "a fresh read prunes leavers");
        assert_eq!(effective_humans(3, Some(&stale), now), 3, "a stale read cannot lower the count");
        assert_eq!(effective_humans(2, Some(&truncated), now), 4, "a truncated read can raise it");
        assert_eq!(effective_humans(2, None, now), 2);
    }
}
