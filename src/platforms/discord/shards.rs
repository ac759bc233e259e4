//! The Discord Gateway sharded, as pure rules: how many shards (K) to run,
//! which shard hears a guild, each shard's object name, the IDENTIFY gate's
//! grants (one IDENTIFY per rate-limit key `shard % max_concurrency` every
//! 5 s and a margin, lower shards of a key first), when a resharding K→K′ hands over, and
//! when a shard saves its `seq`.
//!
//! The Gateway objects carry these out: one object per shard `[i, K]`, plus
//! one gate object (the same class under [`GATE_NAME`]) that plans the shards
//! and grants their IDENTIFYs.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The spacing between two IDENTIFYs of one rate-limit key: Discord's 5 s,
/// plus a margin for a grant's IDENTIFY reaching Discord later than the next
/// one's (Discord counts when they arrive).
pub const IDENTIFY_SPACING_MS: i64 = 5_500;
/// A shard saves its `seq` at most this often (and when its socket closes):
/// a replay after a restart is at most this much, and the inbox dedupes it.
pub const SEQ_SAVE_EVERY_MS: i64 = 5_000;
/// A shard asking for an IDENTIFY holds back higher shards of its key for at
/// most this long (a shard that died while waiting stops blocking the others).
pub const WANT_EXPIRES_MS: i64 = 30_000;
/// The most shards edgebot runs (Discord's large bots use more; one
/// deployment's objects and sockets are bounded here).
pub const MAX_SHARDS: u32 = 256;
/// The one-shard object keeps the name of the unsharded Gateway, so an
/// upgraded deployment RESUMEs its held session instead of identifying.
pub const SINGLE_NAME: &str = "discord-gateway";
/// The gate object's name (same class as the shards).
pub const GATE_NAME: &str = "discord-gateway-gate";

/// How many shards run, and how many IDENTIFYs may run at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub count: u32,
    pub max_concurrency: u32,
}

impl Plan {
    /// `setting` (DISCORD_SHARDS; 0: unset) wins; else Discord's
    /// recommendation in `GET /gateway/bot` (`shards`); else one shard.
    /// `max_concurrency` comes from the answer's `session_start_limit` (1 without).
    pub fn from(setting: u32, answer: Option<&Value>) -> Plan {
        let field = |value: &Value| value.as_u64().filter(|number| *number >= 1).map(|number| number as u32);
        let recommended = answer.and_then(|answer| field(&answer["shards"])).unwrap_or(1);
        let max_concurrency = answer.and_then(|answer| field(&answer["session_start_limit"]["max_concurrency"]));
        let count = if setting >= 1 { setting } else { recommended };
        Plan { count: count.min(MAX_SHARDS), max_concurrency: max_concurrency.unwrap_or(1).min(MAX_SHARDS) }
    }
}

/// The shard that hears a guild: Discord's `(guild_id >> 22) % K`. DMs (no
/// guild) come to shard 0.
pub fn shard_of(guild_id: Option<&str>, count: u32) -> u32 {
    match guild_id.and_then(|id| id.parse::<u64>().ok()) {
        Some(id) => ((id >> 22) % u64::from(count.max(1))) as u32,
        None => 0,
    }
}

/// Shard `[shard, count]`'s object name.
pub fn object_name(shard: u32, count: u32) -> String {
    match count {
        0 | 1 => SINGLE_NAME.to_string(),
        count => format!("shard-{shard}-of-{count}"),
    }
}

/// A shard's rate-limit key: shards of one key IDENTIFY [`IDENTIFY_SPACING_MS`] apart.
pub fn bucket(shard: u32, max_concurrency: u32) -> u32 {
    shard % max_concurrency.max(1)
}

/// The gate's answer to a shard that wants to IDENTIFY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    Now,
    /// Ask again after this many ms.
    Wait(i64),
}

/// The IDENTIFY gate: when each key last granted, and who is waiting.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gate {
    /// Rate-limit key → when it last granted an IDENTIFY.
    granted_at: BTreeMap<u32, i64>,
    /// Shard → when it last asked (and has not been granted yet).
    wanting: BTreeMap<u32, i64>,
}

impl Gate {
    /// Shard `shard` asks to IDENTIFY at `now`: granted when its key's last
    /// grant is [`IDENTIFY_SPACING_MS`] old and no lower shard of its key waits (`held_back`: a
    /// lower shard of the plan has not started yet).
    pub fn ask(&mut self, shard: u32, max_concurrency: u32, now: i64, held_back: bool) -> Grant {
        self.wanting.retain(|_, asked| now - *asked < WANT_EXPIRES_MS);
        self.wanting.insert(shard, now);
        let key = bucket(shard, max_concurrency);
        let free_at = self.granted_at.get(&key).map_or(i64::MIN, |at| at + IDENTIFY_SPACING_MS);
        if now < free_at {
            return Grant::Wait(free_at - now);
        }
        let lower_waits = self.wanting.keys().any(|other| *other < shard && bucket(*other, max_concurrency) == key);
        if held_back || lower_waits {
            return Grant::Wait(IDENTIFY_SPACING_MS / 5);
        }
        self.granted_at.insert(key, now);
        self.wanting.remove(&shard);
        Grant::Now
    }
}

/// What the gate keeps: the shards running, the ones being handed over from,
/// which new shards are READY, and the IDENTIFY grants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shards {
    pub plan: Option<Plan>,
    /// The plan being replaced: its shards keep running until every shard of
    /// the new plan is READY (the inbox dedupes what both hear meanwhile).
    pub retiring: Option<Plan>,
    pub ready: BTreeSet<u32>,
    /// Shards of the plan granted an IDENTIFY or READY (or RESUMED) since it began.
    pub started: BTreeSet<u32>,
    /// When the plan began: for [`WANT_EXPIRES_MS`] after, shards start in order.
    pub planned_at: i64,
    pub gate: Gate,
}

impl Shards {
    /// Takes the plan wanted now; returns true when the shard count changed
    /// (a resharding K→K′: start the new shards, keep the old until handed over).
    pub fn replan(&mut self, wanted: Plan, now: i64) -> bool {
        let current = self.plan.replace(wanted);
        if current.map(|plan| plan.count) != Some(wanted.count) {
            self.started.clear();
            self.planned_at = now;
        }
        match current {
            Some(current) if current.count != wanted.count => {
                // Still handing over from an older plan: that one's shards retire too
                // (the caller stops them at once; this keeps the latest only).
                self.retiring = Some(current);
                self.ready.clear();
                true
            }
            Some(_) => false,
            None => {
                self.ready.clear();
                true
            }
        }
    }

    /// Shard `[shard, count]` is READY: returns the plan to retire now when
    /// this completes the handover.
    pub fn on_ready(&mut self, shard: u32, count: u32) -> Option<Plan> {
        let plan = self.plan?;
        if plan.count != count || shard >= count {
            return None;
        }
        self.ready.insert(shard);
        self.started.insert(shard);
        if self.ready.len() as u32 >= plan.count {
            return self.retiring.take();
        }
        None
    }
}

impl Shards {
    /// Shard `[shard, count]` asks to IDENTIFY at `now`. Shards of the plan
    /// start in order of their key: shard `i` waits for every lower shard of
    /// its key to start, for at most [`WANT_EXPIRES_MS`] after the plan began.
    pub fn ask(&mut self, shard: u32, count: u32, now: i64) -> Grant {
        let plan = self.plan.unwrap_or(Plan { count, max_concurrency: 1 });
        let max_concurrency = plan.max_concurrency;
        if plan.count != count {
            // A retiring shard (a new session while being handed over): keys only.
            return self.gate.ask(shard, max_concurrency, now, false);
        }
        let key = bucket(shard, max_concurrency);
        let starting = now - self.planned_at < WANT_EXPIRES_MS;
        let held_back =
            starting && (0..shard).any(|other| bucket(other, max_concurrency) == key && !self.started.contains(&other));
        let grant = self.gate.ask(shard, max_concurrency, now, held_back);
        if grant == Grant::Now {
            self.started.insert(shard);
        }
        grant
    }
}

/// Whether a shard saves its `seq` now: it moved since the last save, and
/// that save is [`SEQ_SAVE_EVERY_MS`] old.
pub fn seq_save_due(dirty: bool, saved_at: i64, now: i64) -> bool {
    dirty && now - saved_at >= SEQ_SAVE_EVERY_MS
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_plan_follows_the_setting_else_discords_recommendation_else_one() {
        let answer = json!({"url": "wss://g", "shards": 4, "session_start_limit": {"max_concurrency": 2}});
        assert_eq!(Plan::from(0, Some(&answer)), Plan { count: 4, max_concurrency: 2 });
        assert_eq!(Plan::from(8, Some(&answer)), Plan { count: 8, max_concurrency: 2 });
        assert_eq!(Plan::from(0, None), Plan { count: 1, max_concurrency: 1 });
        assert_eq!(Plan::from(0, Some(&json!({"shards": 0}))), Plan { count: 1, max_concurrency: 1 });
        assert_eq!(Plan::from(100_000, None).count, MAX_SHARDS);
    }

    #[test]
    fn a_guild_lives_on_one_shard_and_dms_on_shard_zero() {
        let guild = |n: u64| (n << 22).to_string();
        let shards: Vec<u32> = (1000..1008).map(|n| shard_of(Some(&guild(n)), 4)).collect();
        assert_eq!(shards, [0, 1, 2, 3, 0, 1, 2, 3]);
        assert_eq!(shard_of(Some("81384788765712384"), 2), ((81_384_788_765_712_384u64 >> 22) % 2) as u32);
        assert_eq!(shard_of(None, 4), 0);
        assert_eq!(shard_of(Some(&guild(7)), 1), 0);
    }

    #[test]
    fn one_shard_keeps_the_unsharded_name_and_more_are_named_by_index() {
        assert_eq!(object_name(0, 1), "discord-gateway");
        assert_eq!(object_name(2, 4), "shard-2-of-4");
        assert_ne!(object_name(1, 2), object_name(1, 4), "a resharding makes new objects");
    }

    #[test]
    fn the_gate_grants_one_identify_per_key_every_five_seconds_lower_shards_first() {
        // max_concurrency 2: keys 0 = {0, 2}, 1 = {1, 3}. Shard 2 asks first but 0 goes first.
        let mut shards = Shards::default();
        shards.replan(Plan { count: 4, max_concurrency: 2 }, 0);
        assert!(matches!(shards.ask(2, 4, 0), Grant::Wait(_)), "shard 0 goes before shard 2");
        assert_eq!(shards.ask(0, 4, 10), Grant::Now);
        assert_eq!(shards.ask(1, 4, 10), Grant::Now, "another key at once");
        assert_eq!(shards.ask(2, 4, 20), Grant::Wait(5_490));
        assert_eq!(shards.ask(3, 4, 20), Grant::Wait(5_490));
        assert_eq!(shards.ask(2, 4, 5_510), Grant::Now);
        assert_eq!(shards.ask(3, 4, 5_510), Grant::Now);
        // max_concurrency 1: every shard one after another, whoever asks first.
        for order in [[3, 2, 1, 0], [0, 1, 2, 3]] {
            let mut shards = Shards::default();
            shards.replan(Plan { count: 4, max_concurrency: 1 }, 0);
            let mut granted = Vec::new();
            for now in (0..20_001).step_by(1_000) {
                for shard in order {
                    if !granted.iter().any(|(done, _)| *done == shard) && shards.ask(shard, 4, now) == Grant::Now {
                        granted.push((shard, now));
                    }
                }
            }
            assert_eq!(granted, [(0, 0), (1, 6_000), (2, 12_000), (3, 18_000)]);
        }
    }

    #[test]
    fn a_waiting_shard_that_went_away_stops_holding_the_others_back() {
        let mut shards = Shards::default();
        shards.replan(Plan { count: 3, max_concurrency: 1 }, 0);
        assert_eq!(shards.ask(0, 3, 0), Grant::Now);
        assert!(matches!(shards.ask(1, 3, 100), Grant::Wait(_)));
        // Shard 1 is never heard from again; shard 2 goes once 1's wish expires.
        assert!(matches!(shards.ask(2, 3, 6_000), Grant::Wait(_)));
        assert_eq!(shards.ask(2, 3, 100 + WANT_EXPIRES_MS), Grant::Now);
        // A shard that RESUMEd (READY or RESUMED) holds nobody back.
        let mut shards = Shards::default();
        shards.replan(Plan { count: 2, max_concurrency: 1 }, 0);
        shards.on_ready(0, 2);
        assert_eq!(shards.ask(1, 2, 10), Grant::Now);
    }

    #[test]
    fn a_resharding_retires_the_old_shards_only_when_every_new_one_is_ready() {
        let mut shards = Shards::default();
        assert!(shards.replan(Plan { count: 2, max_concurrency: 1 }, 0));
        assert_eq!(shards.on_ready(0, 2), None);
        assert_eq!(shards.on_ready(1, 2), None, "nothing to retire on a first start");
        assert!(!shards.replan(Plan { count: 2, max_concurrency: 1 }, 0), "same count: no change");
        assert!(shards.replan(Plan { count: 4, max_concurrency: 2 }, 0));
        assert_eq!(shards.retiring, Some(Plan { count: 2, max_concurrency: 1 }));
        for shard in 0..3 {
            assert_eq!(shards.on_ready(shard, 4), None);
        }
        assert_eq!(shards.on_ready(1, 2), None, "an old shard's READY counts for nothing");
        assert_eq!(shards.on_ready(3, 4), Some(Plan { count: 2, max_concurrency: 1 }));
        assert_eq!(shards.retiring, None);
    }

    #[test]
    fn seq_is_saved_every_few_seconds_not_every_frame() {
        assert!(!seq_save_due(false, 0, 60_000), "nothing new");
        assert!(!seq_save_due(true, 10_000, 12_000));
        assert!(seq_save_due(true, 10_000, 10_000 + SEQ_SAVE_EVERY_MS));
    }
}
