//! When the next call to one chat may go out. A platform that refuses a call
//! with a rate limit (Telegram's `retry_after`, Slack's `Retry-After`,
//! Discord's `retry_after`) means the chat, not the call: nothing goes to that
//! chat, draft, edit or final message, before the wait is over, counted from
//! when the refusal arrived. Edits of a streamed reply also keep the
//! platform's edit pace between them, the final edit included.

/// A chat's pace: the earliest time its next call may go out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pace {
    not_before_ms: i64,
}

impl Pace {
    /// How long to wait before the next call (0: it may go now).
    pub fn wait_ms(&self, now_ms: i64) -> u64 {
        (self.not_before_ms - now_ms).max(0) as u64
    }

    /// When the next call may go out.
    pub fn not_before_ms(&self) -> i64 {
        self.not_before_ms
    }

    /// The platform refused a call with a rate limit at `now_ms`: the chat
    /// waits `retry_after_ms` from then. A shorter wait never shortens a longer one.
    pub fn refused(&mut self, now_ms: i64, retry_after_ms: u64) {
        self.not_before_ms = self.not_before_ms.max(now_ms + retry_after_ms as i64);
    }

    /// An edit went out at `now_ms`: the next one waits the platform's edit pace.
    pub fn edited(&mut self, now_ms: i64, edit_every_ms: u64) {
        self.not_before_ms = self.not_before_ms.max(now_ms + edit_every_ms as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_holds_every_call_until_its_wait_is_over_from_when_it_arrived() {
        let mut pace = Pace::default();
        assert_eq!(pace.wait_ms(1_000), 0, "a new chat may be called at once");
        pace.refused(1_000, 2_000);
        assert_eq!(pace.wait_ms(1_000), 2_000);
        assert_eq!(pace.wait_ms(2_920), 80, "1.92 s later is still too early");
        assert_eq!(pace.wait_ms(3_000), 0);
        assert_eq!(pace.not_before_ms(), 3_000);
    }

    #[test]
    fn a_shorter_wait_never_cuts_a_longer_one() {
        let mut pace = Pace::default();
        pace.refused(0, 5_000);
        pace.refused(1_000, 1_000);
        pace.edited(1_000, 1_000);
        assert_eq!(pace.not_before_ms(), 5_000);
    }

    #[test]
    fn edits_keep_the_platforms_pace_the_last_one_too() {
        let mut pace = Pace::default();
        pace.edited(10_000, 1_000);
        assert_eq!(pace.wait_ms(10_720), 280, "a final edit 0.72 s after the one before waits");
        assert_eq!(pace.wait_ms(11_000), 0);
        pace.refused(11_000, 1_000);
        pace.edited(11_500, 1_000);
        assert_eq!(pace.not_before_ms(), 12_500);
    }
}
