//! The member count read before deciding the messages held for it: what
//! the read came to and when, for the inbox's decision log.

use crate::channel::participants::MembershipCount;
use crate::inbound::InboundEvent;
use crate::platforms::messenger::Messenger;
use crate::platforms::outbound;
use crate::runtime::http::{now_ms, within};
use crate::time::format_utc;

use super::{Channel, MEMBER_COUNT_TIMEOUT_MS};

impl Channel {
    /// Reads the member count before a decision that depends on it, within
    /// [`MEMBER_COUNT_TIMEOUT_MS`]; returns it (if read) and what happened,
    /// for the decision log.
    pub(super) async fn read_member_count(&self, event: &InboundEvent) -> (Option<MembershipCount>, Option<CountRead>) {
        let platform = outbound::for_address(&self.config, &self.state, &event.reply_address);
        let asked_at_ms = now_ms();
        let answer = within(MEMBER_COUNT_TIMEOUT_MS, platform.member_count(event, asked_at_ms)).await;
        let outcome = match answer {
            Some(Some(_)) => CountOutcome::Read,
            Some(None) => CountOutcome::Unavailable,
            None => CountOutcome::TimedOut,
        };
        (answer.flatten(), Some(CountRead { outcome, at_ms: now_ms() }))
    }
}

/// What the alarm's member-count read came to, and when (for the decision log).
pub(super) struct CountRead {
    outcome: CountOutcome,
    at_ms: i64,
}

enum CountOutcome {
    Read,
    Unavailable,
    TimedOut,
}

impl CountRead {
    /// The inbox's membership note for a message that arrived at `received_at_ms`.
    pub(super) fn describe(&self, received_at_ms: i64, humans: Option<usize>) -> String {
        let when = format!("at {} ({} ms after the message)", format_utc(self.at_ms), self.at_ms - received_at_ms);
        match (&self.outcome, humans) {
            (CountOutcome::Read, Some(humans)) => {
                format!("member count read before deciding, {when}: {humans} human(s)")
            }
            (CountOutcome::TimedOut, _) => format!("member count timed out {when}; decided on the speakers seen"),
            _ => format!("member count unavailable {when}; decided on the speakers seen"),
        }
    }
}
