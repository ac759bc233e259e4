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

    /// Peer bots seen speaking (the platforms' member counts include them).
    pub fn peer_bot_count(&self) -> usize {
        self.by_id.values().filter(|participant| participant.is_bot).count()
    }

    /// Display names of the peer bots seen speaking.
    pub fn peer_bot_names(&self) -> impl Iterator<Item = &str> {
        self.by_id.values().filter(|participant| participant.is_bot).map(|participant| participant.name.as_str())
    }
}

/// A read of the platform's member list, as the platform counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MembershipCount {
    /// Members besides this bot: humans and peer bots alike (Telegram's,
    /// Slack's and Discord's counts all include bots). The peer bots are
    /// taken off when the count is used, with those known by then, so a peer
    /// bot that speaks after the read is not counted as a human.
    pub others: usize,
    /// The platform gave only part of the list.
    pub truncated: bool,
    pub fetched_at_ms: i64,
}

impl MembershipCount {
    /// Whether this read can be trusted as ground truth right now.
    pub fn is_fresh_and_complete(&self, now_ms: i64) -> bool {
        !self.truncated && now_ms - self.fetched_at_ms < MEMBERSHIP_FRESHNESS_MS
    }

    /// The humans among the members: all but the peer bots the channel knows
    /// (a bot that never spoke here cannot be told apart, and counts).
    pub fn humans(&self, participants: &Participants) -> usize {
        self.others.saturating_sub(participants.peer_bot_count())
    }
}

/// The human count the engagement ladder uses: a fresh complete membership
/// read is ground truth (it sees lurkers and prunes leavers); a stale or
/// truncated one can only raise the count above the humans seen lately.
/// Peer bots never count, whether seen speaking or in the member count.
pub fn effective_humans(participants: &Participants, membership: Option<&MembershipCount>, now_ms: i64) -> usize {
    let seen_humans = participants.human_count();
    match membership {
        Some(read) if read.is_fresh_and_complete(now_ms) => read.humans(participants),
        Some(read) => seen_humans.max(read.humans(participants)),
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
        assert_eq!(participants.peer_bot_count(), 1);
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

    fn speakers(humans: usize, bots: usize) -> Participants {
        let mut participants = Participants::default();
        for index in 0..humans {
            participants.record(&format!("h{index}"), "Human", false, 0);
        }
        for index in 0..bots {
            participants.record(&format!("b{index}"), "PeerBot", true, 0);
        }
        participants
    }

    #[test]
    fn fresh_complete_reads_are_truth_and_others_only_raise_the_count() {
        let now = 1_000_000;
        let fresh = MembershipCount { others: 1, truncated: false, fetched_at_ms: now - 1_000 };
        let stale = MembershipCount { others: 1, truncated: false, fetched_at_ms: now - MEMBERSHIP_FRESHNESS_MS };
        let truncated = MembershipCount { others: 4, truncated: true, fetched_at_ms: now };
        assert_eq!(effective_humans(&speakers(3, 0), Some(&fresh), now), 1, "a fresh read prunes leavers");
        assert_eq!(effective_humans(&speakers(3, 0), Some(&stale), now), 3, "a stale read cannot lower the count");
        assert_eq!(effective_humans(&speakers(2, 0), Some(&truncated), now), 4, "a truncated read can raise it");
        assert_eq!(effective_humans(&speakers(2, 0), None, now), 2);
    }

    #[test]
    fn peer_bots_the_channel_knows_are_taken_off_the_platforms_count() {
        let now = 1_000_000;
        // One human, one peer bot and this bot: the platform says 3, "others" 2.
        let read = MembershipCount { others: 2, truncated: false, fetched_at_ms: now - 1_000 };
        assert_eq!(effective_humans(&speakers(1, 0), Some(&read), now), 2, "a silent bot looks like a person");
        assert_eq!(effective_humans(&speakers(1, 1), Some(&read), now), 1, "once it speaks, it is known as a bot");
        let hint = MembershipCount { truncated: true, ..read };
        assert_eq!(effective_humans(&speakers(1, 1), Some(&hint), now), 1, "a hint loses its bots too");
        let stale = MembershipCount { fetched_at_ms: now - MEMBERSHIP_FRESHNESS_MS, ..read };
        assert_eq!(effective_humans(&speakers(1, 1), Some(&stale), now), 1);
    }
}
