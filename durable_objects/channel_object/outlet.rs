//! What a turn sends through: the channel's settings and storage, the chat's
//! platform, and the chat's pace, which delivery and the drafts share so a
//! rate limit holds every call.

use std::cell::Cell;

use worker::Env;

use crate::config::Config;
use crate::platforms::messenger::{Messenger, Streaming};
use crate::platforms::outbound::Outbound;
use crate::reply::pace::Pace;
use crate::runtime::durable::Sql;
use crate::runtime::http::{now_ms, sleep_ms};

/// A hold this short (or shorter) is slept here; a longer one ends the
/// alarm and resumes the turn when it is over.
const SLEEP_THROUGH_MS: u64 = 1_000;

/// What delivery works with: the channel's settings and storage, the chat's
/// platform, and the chat's pace (shared with the drafts).
pub(super) struct Outlet<'a> {
    pub config: &'a Config,
    pub env: &'a Env,
    pub platform: &'a Outbound<'a>,
    pub sql: &'a Sql,
    pub pace: &'a Cell<Pace>,
    /// The turn answers an inbound an earlier turn answered (a worker's or a
    /// branch's outcome): its pieces are follow-ups (see [`Piece::follow_up`]).
    pub follow_up: bool,
}

impl Outlet<'_> {
    /// Waits until the chat may be called: None when it may go now (after a
    /// short sleep), or when to resume the turn.
    pub(super) async fn clear_to_call(&self) -> Option<i64> {
        let wait = self.pace.get().wait_ms(now_ms());
        if wait > SLEEP_THROUGH_MS {
            return Some(self.pace.get().not_before_ms());
        }
        if wait > 0 {
            sleep_ms(wait).await;
        }
        None
    }

    /// A call was refused with a rate limit: the chat waits from now; returns when it may go again.
    pub(super) fn refused(&self, retry_after_ms: u64) -> i64 {
        let mut pace = self.pace.get();
        pace.refused(now_ms(), retry_after_ms);
        self.pace.set(pace);
        pace.not_before_ms()
    }

    /// An edit (or a draft's post) went out: the next one keeps the platform's edit pace.
    pub(super) fn edited(&self) {
        if let Streaming::Messages { edit_every_ms } = self.platform.streaming() {
            let mut pace = self.pace.get();
            pace.edited(now_ms(), edit_every_ms);
            self.pace.set(pace);
        }
    }
}
