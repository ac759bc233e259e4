//! Sends a turn's outbox, each piece at most once: bounded retries, rate
//! limits that resume the turn later, and sends a crash interrupted.
//!
//! Every call goes out under the chat's [`Pace`]: a platform's rate limit
//! holds the whole chat until its wait is over (a short wait is slept here,
//! a longer one resumes the turn from the alarm), and a final edit keeps the
//! platform's edit pace after the drafts. `SEND_MAX_ATTEMPTS` bounds every
//! failed call a piece makes, its draft's included.

use worker::Result;

use super::drafts::piece_id;
use super::outbox;
use super::outlet::Outlet;
use crate::config::Config;
use crate::conversations::archive::StoredMessage;
use crate::files::store as files;
use crate::inbound::InboundEvent;
use crate::llm::HistoryRole;
use crate::log_line::LogLine;
use crate::platforms::messenger::{Buttons, FileBody, Interrupted, Messenger, Piece};
use crate::platforms::outbound::Outbound;
use crate::prompt;
use crate::reply::markup::{escape, shown};
use crate::reply::outbox::OutboxStatus;
use crate::runtime::durable::Sql;
use crate::runtime::http::sleep_ms;
use crate::runtime::log::Emit;

/// Wait between attempts at one platform send.
const SEND_BACKOFF_MS: u64 = 500;

/// How a turn's delivery ended.
pub(super) enum Delivery {
    /// Every piece was sent or has failed for good: these were sent.
    Done(Vec<StoredMessage>),
    /// The platform asked to wait: resume the turn at this time.
    RateLimited { resume_at: i64 },
}

/// Sends the turn's unsent pieces in order; returns every piece sent so far, as history.
pub(super) async fn deliver(outlet: &Outlet<'_>, event: &InboundEvent, turn: i64) -> Result<Delivery> {
    let Outlet { config, platform, sql, .. } = *outlet;
    let mut sent = Vec::new();
    let resend_note = resend_note(platform);
    for mut entry in outbox::entries(sql, turn)? {
        let piece_id = piece_id(event, &entry.id);
        // A file piece still to send brings its bytes; one whose file is gone is given up.
        let body = match (&entry.file_id, entry.status) {
            (Some(file_id), OutboxStatus::Pending | OutboxStatus::Sending) => {
                let Some(body) = file_of(outlet, event, &entry.id, file_id).await? else { continue };
                Some(body)
            }
            _ => None,
        };
        let piece = Piece {
            id: &piece_id,
            index: entry.piece.max(0) as usize,
            text: &entry.text,
            reply_to: entry.reply_to.as_deref(),
            file: body.as_ref(),
            buttons: Buttons::None,
            follow_up: outlet.follow_up,
        };
        // A streamed piece is finished by editing its draft; a draft the reply
        // did not need is deleted; a draft that cannot be edited is sent anew.
        match entry.status {
            OutboxStatus::Withdraw => {
                withdraw(outlet, event, &entry, &piece).await?;
                continue;
            }
            OutboxStatus::Draft | OutboxStatus::Drafting => match finish_draft(outlet, event, &entry, &piece).await? {
                Finishing::Edited(message_id) => {
                    sent.push(history_row(config, platform, event, &entry, &resend_note, message_id));
                    continue;
                }
                Finishing::RetryAt(resume_at) => return Ok(Delivery::RateLimited { resume_at }),
                Finishing::GaveUp => continue,
                Finishing::SendAnew { attempts } => {
                    // finish_draft moved the row (checked there): the entry follows.
                    entry.status = OutboxStatus::Pending;
                    entry.attempts = attempts as i64;
                }
            },
            _ => {}
        }
        // Nothing, not even asking after an interrupted send, goes to a chat that is held.
        if OutboxStatus::UNSENT.contains(&entry.status) {
            if let Some(resume_at) = outlet.clear_to_call().await {
                return Ok(Delivery::RateLimited { resume_at });
            }
        }
        // Found mid-send: the Worker stopped during the call. Ask the platform.
        let interrupted = match entry.status {
            OutboxStatus::Sending => Some(platform.interrupted(&event.reply_address, &piece, entry.created_at).await),
            _ => None,
        };
        let (attempts, text) = settle_interrupted(sql, event, &entry, interrupted.as_ref(), &resend_note)?;
        let platform_message_id = match (entry.status, interrupted) {
            (OutboxStatus::Sent, _) => entry.platform_message_id.clone(),
            (_, Some(Interrupted::Landed(id))) => {
                outbox::mark_sent(sql, &entry.id, &id)?;
                Some(id)
            }
            (OutboxStatus::Pending, _) | (_, Some(Interrupted::Resend | Interrupted::Unsure)) => {
                let piece = Piece { text: &text, ..piece };
                let unsent = Unsent { id: &entry.id, created_at: entry.created_at, attempts, note: &resend_note };
                match send_with_retries(outlet, event, unsent, &piece).await? {
                    Sending::Sent(id) => Some(id),
                    Sending::Failed => None,
                    Sending::RetryAt(resume_at) => return Ok(Delivery::RateLimited { resume_at }),
                }
            }
            _ => None,
        };
        sent.extend(platform_message_id.map(|id| history_row(config, platform, event, &entry, &resend_note, id)));
    }
    Ok(Delivery::Done(sent))
}

/// What a copy that may be a repeat begins with: plain text, escaped for the
/// platform like any text.
fn resend_note(platform: &Outbound<'_>) -> String {
    format!("{}\n\n", escape(platform.flavor(), prompt::text("resend_note").trim_end(), false))
}

/// A file piece's bytes; None when its file is gone (the piece is given up).
async fn file_of(outlet: &Outlet<'_>, event: &InboundEvent, entry_id: &str, file_id: &str) -> Result<Option<FileBody>> {
    let Outlet { config, env, sql, .. } = *outlet;
    match files::outgoing(config, env, &event.conversation_key, file_id).await {
        Some(body) => Ok(Some(body)),
        None => {
            outbox::mark_attempt_failed(sql, entry_id, "the file is gone", true)?;
            Ok(None)
        }
    }
}

/// A piece found mid-send that the platform did not get, or may have got, is
/// sent again: its attempts (the interrupted call counted) and its text (with
/// the note that it may be a repeat, when it may be).
fn settle_interrupted(
    sql: &Sql,
    event: &InboundEvent,
    entry: &outbox::Entry,
    interrupted: Option<&Interrupted>,
    resend_note: &str,
) -> Result<(u32, String)> {
    let mut attempts = entry.attempts.max(0) as u32;
    let mut text = entry.text.clone();
    if let Some(unsettled @ (Interrupted::Resend | Interrupted::Unsure)) = interrupted {
        // A copy that may be a repeat says so, in the outbox too, so a
        // later retry (after a rate limit) still carries the note.
        let unsure = *unsettled == Interrupted::Unsure;
        if unsure && !text.starts_with(resend_note) {
            text = format!("{resend_note}{text}");
        }
        // The interrupted call counts as an attempt: a piece that keeps
        // taking its sender down is given up on, like a failing one.
        attempts = outbox::mark_interrupted(sql, &entry.id, &text)?.max(0) as u32;
        let line = LogLine::warn("send_interrupted").conversation(&event.conversation_key).id(&entry.id);
        line.field("resent", true).field("marked_as_possible_repeat", unsure).emit();
    }
    Ok((attempts, text))
}

/// A sent piece, as the history keeps it.
fn history_row(
    config: &Config,
    platform: &Outbound<'_>,
    event: &InboundEvent,
    entry: &outbox::Entry,
    resend_note: &str,
    platform_message_id: String,
) -> StoredMessage {
    StoredMessage {
        id: format!("{}:out:{}", event.conversation_key, entry.id),
        conversation_key: event.conversation_key.clone(),
        role: HistoryRole::Assistant,
        author_id: "bot".into(),
        author_name: config.bot_name.clone(),
        // The model remembers what the reader saw, not the resend's note
        // nor the platform's escapes; a file, as a file.
        content: {
            let text = shown(platform.flavor(), entry.text.strip_prefix(resend_note).unwrap_or(&entry.text));
            match entry.file_id {
                Some(_) => format!("[sent the file {text}]"),
                None => text,
            }
        },
        platform_message_id: Some(platform_message_id),
        // When the reply was written, before its send began: a message
        // that arrives while the send is in flight comes after it.
        created_at: entry.created_at,
        compacted: 0,
    }
}

/// How finishing a draft ended.
enum Finishing {
    /// Its message shows the piece now.
    Edited(String),
    /// Rate limited: try again at this time.
    RetryAt(i64),
    /// Its calls failed `SEND_MAX_ATTEMPTS` times: given up, recorded in the outbox.
    GaveUp,
    /// No draft to edit (never posted, deleted, too old): send the piece as a
    /// new message, with what is left of its attempts.
    SendAnew { attempts: u32 },
}

/// Edits a draft to its piece's final text, with bounded retries counted
/// with its draft's failed calls. A draft whose post a crash interrupted is
/// looked up first.
async fn finish_draft(
    outlet: &Outlet<'_>,
    event: &InboundEvent,
    entry: &outbox::Entry,
    piece: &Piece<'_>,
) -> Result<Finishing> {
    let Outlet { config, platform, sql, .. } = *outlet;
    let mut attempts = entry.attempts.max(0) as u32;
    let Some(message_id) = draft_message(outlet, event, entry, piece, true).await? else {
        outbox::mark_pending(sql, &entry.id)?;
        return Ok(Finishing::SendAnew { attempts });
    };
    loop {
        if attempts >= config.send_max_attempts {
            outbox::mark_attempt_failed(sql, &entry.id, "gave up after its attempts", true)?;
            return Ok(Finishing::GaveUp);
        }
        if let Some(resume_at) = outlet.clear_to_call().await {
            return Ok(Finishing::RetryAt(resume_at));
        }
        let failure = match platform.edit(&event.reply_address, &message_id, piece).await {
            Ok(()) => {
                outlet.edited();
                outbox::mark_sent(sql, &entry.id, &message_id)?;
                return Ok(Finishing::Edited(message_id));
            }
            Err(failure) => failure,
        };
        attempts = outbox::mark_call_failed(sql, &entry.id, &failure.message)?.max(0) as u32;
        // An edit the platform will never take (the message is gone, too
        // old): the piece goes out as a new message, if attempts are left.
        let send_anew = !failure.retryable && attempts < config.send_max_attempts;
        LogLine::warn("draft_edit_failed")
            .conversation(&event.conversation_key)
            .id(&entry.id)
            .field("attempt", attempts)
            .field("sent_anew", send_anew)
            .reason(&failure.message)
            .emit();
        if send_anew {
            outbox::mark_pending(sql, &entry.id)?;
            return Ok(Finishing::SendAnew { attempts });
        }
        if !failure.retryable {
            outbox::mark_attempt_failed(sql, &entry.id, "gave up after its attempts", true)?;
            return Ok(Finishing::GaveUp);
        }
        match failure.retry_after_ms {
            Some(wait) => {
                outlet.refused(wait);
            }
            None => sleep_ms(SEND_BACKOFF_MS).await,
        }
    }
}

/// The message of a draft: known once posted; for a post a crash
/// interrupted, whatever the platform can tell (None: not found). Where
/// posting again is harmless (a Discord nonce answers with the message that
/// landed), `post_again` does, for the message to edit.
async fn draft_message(
    outlet: &Outlet<'_>,
    event: &InboundEvent,
    entry: &outbox::Entry,
    piece: &Piece<'_>,
    post_again: bool,
) -> Result<Option<String>> {
    let Outlet { platform, sql, .. } = *outlet;
    if let Some(message_id) = entry.platform_message_id.clone() {
        return Ok(Some(message_id));
    }
    let message_id = match platform.interrupted(&event.reply_address, piece, entry.created_at).await {
        Interrupted::Landed(message_id) => message_id,
        Interrupted::Resend if post_again => match platform.send(&event.reply_address, piece).await {
            Ok(message_id) => message_id,
            Err(_) => return Ok(None),
        },
        Interrupted::Resend | Interrupted::Unsure => return Ok(None),
    };
    outbox::mark_drafted(sql, &entry.id, &message_id)?;
    Ok(Some(message_id))
}

/// Deletes a draft the finished reply did not need.
async fn withdraw(outlet: &Outlet<'_>, event: &InboundEvent, entry: &outbox::Entry, piece: &Piece<'_>) -> Result<()> {
    if let Some(message_id) = draft_message(outlet, event, entry, piece, false).await? {
        outlet.platform.withdraw(&event.reply_address, &message_id).await;
    }
    outbox::mark_withdrawn(outlet.sql, &entry.id)
}

enum Sending {
    Sent(String),
    /// Given up after bounded attempts; recorded in the outbox for the admin API.
    Failed,
    /// Rate limited: try again at this time (from the alarm, not by waiting here).
    RetryAt(i64),
}

/// A piece about to be sent: its outbox row, the attempts it has had, and the
/// note a copy that may be a repeat carries.
struct Unsent<'a> {
    id: &'a str,
    created_at: i64,
    attempts: u32,
    note: &'a str,
}

async fn send_with_retries(
    outlet: &Outlet<'_>,
    event: &InboundEvent,
    unsent: Unsent<'_>,
    piece: &Piece<'_>,
) -> Result<Sending> {
    let Outlet { config, platform, sql, .. } = *outlet;
    let Unsent { id, mut attempts, .. } = unsent;
    if attempts >= config.send_max_attempts {
        outbox::mark_attempt_failed(sql, id, "gave up after its attempts (drafts and interrupted sends count)", true)?;
        return Ok(Sending::Failed);
    }
    let mut text = piece.text.to_string();
    loop {
        if let Some(resume_at) = outlet.clear_to_call().await {
            return Ok(Sending::RetryAt(resume_at));
        }
        let piece = Piece { text: &text, ..*piece };
        outbox::mark_sending(sql, id)?;
        let failure = match platform.send(&event.reply_address, &piece).await {
            Ok(message_id) => {
                outbox::mark_sent(sql, id, &message_id)?;
                return Ok(Sending::Sent(message_id));
            }
            Err(failure) => failure,
        };
        attempts += 1;
        let give_up = !failure.retryable || attempts >= config.send_max_attempts;
        LogLine::warn("send_failed")
            .conversation(&event.conversation_key)
            .id(&id)
            .field("attempt", attempts)
            .field("gave_up", give_up)
            .reason(&failure.message)
            .emit();
        outbox::mark_attempt_failed(sql, id, &failure.message, give_up)?;
        if give_up {
            return Ok(Sending::Failed);
        }
        if let Some(wait) = failure.retry_after_ms {
            return Ok(Sending::RetryAt(outlet.refused(wait)));
        }
        sleep_ms(SEND_BACKOFF_MS).await;
        // No answer is not a no: the platform may have the message. Settle
        // it as an interrupted send before trying again.
        if failure.ambiguous {
            match platform.interrupted(&event.reply_address, &piece, unsent.created_at).await {
                Interrupted::Landed(message_id) => {
                    outbox::mark_sent(sql, id, &message_id)?;
                    return Ok(Sending::Sent(message_id));
                }
                Interrupted::Resend => {}
                Interrupted::Unsure if piece.text.starts_with(unsent.note) => {}
                Interrupted::Unsure => {
                    text = format!("{}{text}", unsent.note);
                    outbox::mark_text(sql, id, &text)?;
                }
            }
        }
    }
}
