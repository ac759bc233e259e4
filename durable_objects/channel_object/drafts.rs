//! A reply shown as platform messages while the model writes it
//! ([`Streaming::Messages`](crate::platforms::messenger::Streaming)): each piece is
//! posted once it has words, then edited as it grows. The drafts are outbox
//! rows (see `outbox.rs`), so delivery finishes each one with a last edit
//! rather than a second message, and a turn resumed after a crash edits the
//! drafts it had posted instead of posting them again.

use worker::Result;

use super::outbox;
use super::outlet::Outlet;
use crate::inbound::InboundEvent;
use crate::log_line::LogLine;
use crate::platforms::messenger::{Buttons, Messenger, Piece};
use crate::reply::outbox::OutboxStatus;
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;

/// The message a reply quotes: in a group, the one it answers; a DM or a
/// command needs no quote.
pub(super) fn quoted(event: &InboundEvent) -> Option<&str> {
    (!event.is_dm && !event.is_command).then_some(event.message_id.as_str())
}

/// The id a piece goes by on the platform (Slack's metadata, Discord's nonce).
pub(super) fn piece_id(event: &InboundEvent, row: &str) -> String {
    format!("{}/{row}", event.conversation_key)
}

/// One piece's draft message.
#[derive(Default)]
struct Draft {
    /// Its message, once posted.
    message_id: Option<String>,
    /// What it shows.
    shown: String,
    /// Calls for it that failed (drafts and the final send count together).
    failures: u32,
}

/// The draft messages of one turn.
pub(super) struct MessageDrafts<'a> {
    /// The platform, storage and the chat's pace, shared with delivery: a rate
    /// limit holds every call.
    outlet: &'a Outlet<'a>,
    event: &'a InboundEvent,
    turn: i64,
    edit_every_ms: u64,
    /// `SEND_MAX_ATTEMPTS`: a piece's failed calls, draft or final, stop here.
    max_attempts: u32,
    drafts: Vec<Draft>,
    /// A post failed or may have landed: no more drafting this turn; delivery
    /// settles that piece (its failure counted) and sends the rest in order.
    stopped: bool,
}

impl<'a> MessageDrafts<'a> {
    /// The turn's drafts so far: none, or those an earlier run of it posted.
    /// A post a crash interrupted is left to delivery, which asks the
    /// platform whether it landed before anything is sent again.
    pub(super) fn resume(
        outlet: &'a Outlet<'a>,
        event: &'a InboundEvent,
        turn: i64,
        edit_every_ms: u64,
    ) -> Result<Self> {
        let max_attempts = outlet.config.send_max_attempts;
        let mut drafts: Vec<Draft> = Vec::new();
        let mut stopped = false;
        for row in outbox::drafts(outlet.sql, turn)? {
            let index = row.piece.max(0) as usize;
            if drafts.len() <= index {
                drafts.resize_with(index + 1, Draft::default);
            }
            stopped |= row.status == OutboxStatus::Drafting;
            drafts[index] =
                Draft { message_id: row.platform_message_id, shown: row.text, failures: row.attempts.max(0) as u32 };
        }
        Ok(MessageDrafts { outlet, event, turn, edit_every_ms, max_attempts, drafts, stopped })
    }

    /// Whether the reply has shown anything yet (or drafting stopped).
    pub(super) fn has_opened(&self) -> bool {
        self.stopped || self.drafts.iter().any(|draft| draft.message_id.is_some())
    }

    /// Brings the first draft that differs from `pieces` (the reply so far,
    /// ready to show) up to date with one platform call: a post for a piece
    /// not yet shown, else an edit. Returns how long to wait before the next
    /// call: the platform's edit pace, or what its rate limit asked. Nothing
    /// is called while the chat's pace holds, after a post that failed, or
    /// for a piece whose calls failed `SEND_MAX_ATTEMPTS` times.
    pub(super) async fn update(&mut self, pieces: &[String]) -> Result<u64> {
        let wait = self.outlet.pace.get().wait_ms(now_ms());
        if wait > 0 || self.stopped {
            return Ok(wait.max(self.edit_every_ms));
        }
        let differs =
            |(index, text): &(usize, &String)| self.drafts.get(*index).is_none_or(|draft| draft.shown != **text);
        let Some((index, text)) = pieces.iter().enumerate().find(differs) else {
            return Ok(0);
        };
        if self.drafts.len() <= index {
            self.drafts.resize_with(index + 1, Draft::default);
        }
        if self.drafts[index].failures >= self.max_attempts {
            self.stopped = true;
            return Ok(self.edit_every_ms);
        }
        let row = format!("{}:{index}", self.turn);
        let id = piece_id(self.event, &row);
        let reply_to = if index == 0 { quoted(self.event) } else { None };
        let follow_up = self.outlet.follow_up;
        let piece = Piece { id: &id, index, text, reply_to, file: None, buttons: Buttons::None, follow_up };
        let address = &self.event.reply_address;
        let draft = &mut self.drafts[index];
        let failure = match draft.message_id.clone() {
            Some(message_id) => match self.outlet.platform.edit(address, &message_id, &piece).await {
                Ok(()) => {
                    draft.shown = text.clone();
                    self.outlet.edited();
                    return Ok(self.edit_every_ms);
                }
                // The next edit, or the final one, tries again.
                Err(failure) => {
                    draft.failures = outbox::mark_call_failed(self.outlet.sql, &row, &failure.message)?.max(0) as u32;
                    failure
                }
            },
            None => {
                outbox::start_draft(self.outlet.sql, self.turn, index as i64, text, reply_to, now_ms())?;
                match self.outlet.platform.send(address, &piece).await {
                    Ok(message_id) => {
                        outbox::mark_drafted(self.outlet.sql, &row, &message_id)?;
                        *draft = Draft { message_id: Some(message_id), shown: text.clone(), failures: draft.failures };
                        self.outlet.edited();
                        return Ok(self.edit_every_ms);
                    }
                    // No answer: it may have landed; delivery asks before anything is sent again.
                    Err(failure) if failure.ambiguous => {
                        outbox::mark_call_failed(self.outlet.sql, &row, &failure.message)?;
                        self.stopped = true;
                        failure
                    }
                    // Refused: the piece is sent whole by delivery, this call counted.
                    Err(failure) => {
                        outbox::draft_refused(self.outlet.sql, &row, &failure.message)?;
                        self.stopped = true;
                        failure
                    }
                }
            }
        };
        if let Some(retry_after_ms) = failure.retry_after_ms {
            self.outlet.refused(retry_after_ms);
        }
        LogLine::warn("draft_failed")
            .conversation(&self.event.conversation_key)
            .id(&row)
            .field("retry_after_ms", failure.retry_after_ms.unwrap_or_default())
            .field("drafting_stopped", self.stopped)
            .reason(&failure.message)
            .emit();
        Ok(self.outlet.pace.get().wait_ms(now_ms()).max(self.edit_every_ms))
    }
}
