//! Sticky credits: once the bot has answered someone, that person's next
//! messages engage without a mention, for a while. Spending a credit slides
//! its window forward instead of removing it, so a second line sent before the
//! bot answered the first still engages; a full quiet window ends it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How long a credit lasts (configurable as STICKY_WINDOW_MS).
pub const DEFAULT_STICKY_WINDOW_MS: i64 = 15 * 60 * 1000;

/// Unexpired credits, by author id, with their expiry time.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StickyLedger {
    pub expires_at_ms: BTreeMap<String, i64>,
}

impl StickyLedger {
    pub fn has_credit(&self, author_id: &str, now_ms: i64) -> bool {
        self.expires_at_ms.get(author_id).is_some_and(|&expires| expires > now_ms)
    }

    /// Spends the author's credit: it now lasts a full window from this
    /// message. Returns whether an unexpired credit was there.
    pub fn spend(&mut self, author_id: &str, now_ms: i64, window_ms: i64) -> bool {
        match self.expires_at_ms.get_mut(author_id) {
            Some(expires) if *expires > now_ms => {
                *expires = now_ms + window_ms;
                true
            }
            _ => false,
        }
    }

    /// Grants a fresh credit to each author a reply targeted.
    pub fn grant<'a>(&mut self, author_ids: impl IntoIterator<Item = &'a str>, now_ms: i64, window_ms: i64) -> bool {
        let mut changed = false;
        for author in author_ids {
            changed |= self.expires_at_ms.insert(author.to_string(), now_ms + window_ms) != Some(now_ms + window_ms);
        }
        self.expires_at_ms.retain(|_, &mut expires| expires > now_ms);
        changed
    }

    /// Drops every credit (`channel_disengage`); returns whether any was there.
    pub fn clear(&mut self) -> bool {
        let had_any = !self.expires_at_ms.is_empty();
        self.expires_at_ms.clear();
        had_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credits_expire_after_a_full_quiet_window() {
        let mut ledger = StickyLedger::default();
        ledger.grant(["ada"], 0, 1_000);
        assert!(ledger.has_credit("ada", 999));
        assert!(!ledger.has_credit("ada", 1_000));
        assert!(!ledger.has_credit("bo", 0));
    }

    #[test]
    fn a_spent_credit_slides_forward_and_still_expires() {
        let mut ledger = StickyLedger::default();
        ledger.grant(["ada"], 0, 1_000);
        // Two quick lines: both spend, each pushing the window on.
        assert!(ledger.spend("ada", 400, 1_000));
        assert!(ledger.has_credit("ada", 1_399));
        assert!(ledger.spend("ada", 900, 1_000));
        assert!(ledger.has_credit("ada", 1_899));
        // A full window without a message ends it, and it cannot be spent after.
        assert!(!ledger.has_credit("ada", 1_900));
        assert!(!ledger.spend("ada", 1_900, 1_000));
        assert!(!ledger.has_credit("ada", 1_901));
        assert!(!ledger.spend("bo", 0, 1_000), "no credit, nothing to spend");
    }

    #[test]
    fn clear_drops_everyone() {
        let mut ledger = StickyLedger::default();
        ledger.grant(["ada", "bo"], 0, 1_000);
        assert!(ledger.clear());
        assert!(!ledger.has_credit("ada", 1) && !ledger.has_credit("bo", 1));
        assert!(!ledger.clear());
    }
}
