//! A reply shown as platform messages while the model writes it
//! ([`Streaming::Messages`](crate::edge::messenger::Streaming)): each piece is
//! posted once it has words, then edited as it grows. The drafts are outbox
//! rows (see `outbox.rs`), so delivery finishes each one with a last edit
//! rather than a second message, and a turn resumed after a crash edits the
//! drafts it had posted instead of posting them again.

use worker::Result;

use super::outbox;
use crate::edge::durable::Sql;
use crate::edge::http::now_ms;
use crate::edge::log::Emit;
use crate::edge::messenger::{Buttons, Interrupted, Messenger, Piece};
use crate::edge::outbound::Platform;
use crate::inbound::InboundEvent;
use crate::log_line::LogLine;

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
    /// A post of it was under way when the Worker stopped: it may have landed.
    unsettled_since: Option<i64>,
}

/// The draft messages of one turn.
pub(super) struct MessageDrafts<'a> {
    platform: &'a Platform<'a>,
    sql: &'a Sql,
    event: &'a InboundEvent,
    turn: i64,
    edit_every_ms: u64,
    drafts: Vec<Draft>,
}

impl<'a> MessageDrafts<'a> {
    /// The turn's drafts so far: none, or those an earlier run of it posted.
    pub(super) fn resume(
        platform: &'a Platform<'a>,
        sql: &'a Sql,
        event: &'a InboundEvent,
        turn: i64,
        edit_every_ms: u64,
    ) -> Result<Self> {
        let mut drafts: Vec<Draft> = Vec::new();
        for row in outbox::drafts(sql, turn)? {
            let index = row.piece.max(0) as usize;
            if drafts.len() <= index {
                drafts.resize_with(index + 1, Draft::default);
            }
            drafts[index] = Draft {
                unsettled_since: (row.status == "drafting").then_some(row.created_at),
                message_id: row.platform_message_id,
                shown: row.text,
            };
        }
        Ok(MessageDrafts { platform, sql, event, turn, edit_every_ms, drafts })
    }

    /// Brings the first draft that differs from `pieces` (the reply so far,
    /// ready to show) up to date with one platform call: a post for a piece
    /// not yet shown, else an edit. Returns how long to wait before the next
    /// call: the platform's edit pace, or what its rate limit asked.
    pub(super) async fn update(&mut self, pieces: &[String]) -> Result<u64> {
        let differs =
            |(index, text): &(usize, &String)| self.drafts.get(*index).is_none_or(|draft| draft.shown != **text);
        let Some((index, text)) = pieces.iter().enumerate().find(differs) else {
            return Ok(0);
        };
        if self.drafts.len() <= index {
            self.drafts.resize_with(index + 1, Draft::default);
        }
        let row = format!("{}:{index}", self.turn);
        let id = piece_id(self.event, &row);
        let reply_to = if index == 0 { quoted(self.event) } else { None };
        let piece = Piece { id: &id, index, text, reply_to, file: None, buttons: Buttons::None };
        let address = &self.event.reply_address;
        let draft = &mut self.drafts[index];
        let failure = match draft.message_id.clone() {
            Some(message_id) => match self.platform.edit(address, &message_id, &piece).await {
                Ok(()) => {
                    draft.shown = text.clone();
                    return Ok(self.edit_every_ms);
                }
                // The next edit, or the final one, tries again.
                Err(failure) => failure,
            },
            None => {
                if let Some(since) = draft.unsettled_since.take() {
                    // Posted before a crash? Then edit that message, never post twice.
                    if let Interrupted::Landed(message_id) = self.platform.interrupted(address, &piece, since).await {
                        outbox::mark_drafted(self.sql, &row, &message_id)?;
                        draft.message_id = Some(message_id);
                        return Ok(0);
                    }
                }
                let started = now_ms();
                outbox::start_draft(self.sql, self.turn, index as i64, text, reply_to, started)?;
                match self.platform.send(address, &piece).await {
                    Ok(message_id) => {
                        outbox::mark_drafted(self.sql, &row, &message_id)?;
                        *draft = Draft { message_id: Some(message_id), shown: text.clone(), unsettled_since: None };
                        return Ok(self.edit_every_ms);
                    }
                    // No answer: it may have landed. Asked before the next post.
                    Err(failure) if failure.ambiguous => {
                        draft.unsettled_since = Some(started);
                        failure
                    }
                    Err(failure) => {
                        outbox::drop_draft(self.sql, &row)?;
                        failure
                    }
                }
            }
        };
        LogLine::warn("draft_failed")
            .conversation(&self.event.conversation_key)
            .id(&row)
            .field("retry_after_ms", failure.retry_after_ms.unwrap_or_default())
            .reason(&failure.message)
            .emit();
        Ok(failure.retry_after_ms.unwrap_or(self.edit_every_ms).max(self.edit_every_ms))
    }
}
