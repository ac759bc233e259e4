//! Sticky credits: once the bot has answered someone, that person's next
//! message engages without a mention, for a while.

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

    /// Spends the author's credit (one-shot); returns whether one was there.
    pub fn consume(&mut self, author_id: &str) -> bool {
        self.expires_at_ms.remove(author_id).is_some()
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
    fn credits_expire_and_are_one_shot() {
        let mut ledger = StickyLedger::default();
        ledger.grant(["ada"], 0, 1_000);
        assert!(ledger.has_credit("ada", 999));
        assert!(!ledger.has_credit("ada", 1_000));
        assert!(!ledger.has_credit("bo", 0));
        assert!(ledger.consume("ada"));
        assert!(!ledger.has_credit("ada", 0));
        assert!(!ledger.consume("ada"));
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
