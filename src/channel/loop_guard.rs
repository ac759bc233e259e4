//! The peer-bot loop guard: bots may talk to bots, but not forever.

use serde::{Deserialize, Serialize};

/// Engaged peer-bot turns since the last human that trip the guard.
pub const MAX_CONSECUTIVE_PEER_BOT_TURNS: u32 = 5;
/// Engaged peer-bot turns within [`PEER_BOT_WINDOW_MS`] that trip the guard.
pub const MAX_PEER_BOT_TURNS_IN_WINDOW: usize = 5;
pub const PEER_BOT_WINDOW_MS: i64 = 60_000;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopGuard {
    pub consecutive_peer_bot_turns: u32,
    /// When recent engaged peer-bot turns happened (inside the window).
    pub recent_peer_bot_turns_ms: Vec<i64>,
    pub active: bool,
}

impl LoopGuard {
    /// A human spoke: the conversation is grounded again, so the notice clears
    /// and the consecutive count restarts. The one-minute window is kept, so a
    /// fast bot storm with humans interjecting still trips the guard.
    /// Returns whether anything changed.
    pub fn on_human(&mut self) -> bool {
        let changed = self.active || self.consecutive_peer_bot_turns > 0;
        self.active = false;
        self.consecutive_peer_bot_turns = 0;
        changed
    }

    /// A peer bot's message engaged the channel.
    pub fn on_engaged_peer_bot(&mut self, now_ms: i64) {
        self.consecutive_peer_bot_turns += 1;
        self.recent_peer_bot_turns_ms.retain(|&at| now_ms - at < PEER_BOT_WINDOW_MS);
        self.recent_peer_bot_turns_ms.push(now_ms);
        self.active = self.consecutive_peer_bot_turns >= MAX_CONSECUTIVE_PEER_BOT_TURNS
            || self.recent_peer_bot_turns_ms.len() >= MAX_PEER_BOT_TURNS_IN_WINDOW;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_consecutive_peer_bot_turns_trip_the_guard_and_a_human_resets_it() {
        let mut guard = LoopGuard::default();
        // Spread out, so only the consecutive rule can trip.
        for turn in 0..4 {
            guard.on_engaged_peer_bot(turn * PEER_BOT_WINDOW_MS * 2);
            assert!(!guard.active, "turn {turn}");
        }
        guard.on_engaged_peer_bot(10 * PEER_BOT_WINDOW_MS);
        assert!(guard.active);
        assert!(guard.on_human());
        assert!(!guard.active && guard.consecutive_peer_bot_turns == 0);
        assert!(!guard.on_human());
    }

    #[test]
    fn five_in_a_minute_trip_the_guard_even_with_humans_in_between() {
        let mut guard = LoopGuard::default();
        for second in 0..5 {
            guard.on_human();
            guard.on_engaged_peer_bot(second * 1_000);
        }
        assert_eq!(guard.consecutive_peer_bot_turns, 1);
        assert!(guard.active);

        let mut slow = LoopGuard::default();
        for minute in 0..5 {
            slow.on_human();
            slow.on_engaged_peer_bot(minute * PEER_BOT_WINDOW_MS);
        }
        assert!(!slow.active);
    }
}
