//! Approvals in the conversation: the message that asks (with Approve and
//! Deny buttons), sent once per approval through the outbox; the decision
//! shown on it (the buttons taken away); and the wait the alarm times out.

use worker::Result;

use super::reply::Reply;
use super::{json_body, outbox, Channel};
use crate::approvals::store::{self as approvals, Ask, Settled};
use crate::inbound::ReplyAddress;
use crate::log_line::LogLine;
use crate::platforms::messenger::{Buttons, Messenger, Piece};
use crate::platforms::outbound::{self, Outbound};
use crate::platforms::web_chat::messenger as web_chat;
use crate::reply::outbox::OutboxStatus;
use crate::reply::pieces::prepare;
use crate::runtime::config::redactor;
use crate::runtime::durable::{MeteredStorage, Sql};
use crate::runtime::http::{now_ms, sleep_ms};
use crate::runtime::log::Emit;

/// Wait between attempts at sending the message (a rate limit waits longer, up to this).
const BACKOFF_MS: u64 = 500;
const MAX_WAIT_MS: u64 = 5_000;
/// A timeout that could not be recorded is tried again this much later.
const RETRY_TIMEOUT_MS: i64 = 5_000;

/// `POST /approvals/ask`: sends the approval's message (once; a repeat
/// finds it sent) where the waiting process's work was asked for, and
/// keeps the wait's deadline for the alarm.
pub(super) async fn ask(object: &Channel, body: &str) -> Result<Reply> {
    let Ok(ask) = json_body::<Ask>(body) else {
        return Ok(Reply::error("malformed approval", 400));
    };
    let origin = object.machine.borrow().processes.get().get(&ask.process_id).map(|process| process.origin.clone());
    let Some(address) =
        origin.map(|origin| origin.reply_address).or_else(|| ReplyAddress::for_conversation(&ask.conversation_key))
    else {
        return Ok(Reply::error("no address for this conversation", 400));
    };
    if let Some(until) = ask.until_ms {
        object.step(|machine| machine.await_approval(&ask.process_id, &ask.approval_id, until))?;
        let now = now_ms();
        let wake_at = object.machine.borrow().wake_at(&object.config.channel, now);
        if let Some(wake_at) = wake_at {
            object.state.storage().set_alarm_counted((wake_at - now).max(0)).await?;
        }
    }
    let platform = outbound::for_address(&object.config, &object.state, &address);
    let text = rendered(&platform, &ask.text);
    let sql = object.state.storage().counted_sql();
    // The address rides in the entry (an approval's message quotes nothing), for the edit later.
    let entry = outbox::enqueue_approval(&sql, &ask.approval_id, &text, &address, now_ms())?;
    object.approval_waiting.set(None);
    if entry.status == OutboxStatus::Sent {
        return Ok(Reply::done());
    }
    let buttons = match &entry.approval_id {
        Some(id) => Buttons::Approval(id),
        None => Buttons::None, // decided before it could be shown (on the board)
    };
    let piece_id = format!("{}/{}", ask.conversation_key, entry.id);
    // Never the first piece of a reply: on a Discord command that would replace the deferred answer.
    let piece =
        Piece { id: &piece_id, index: 1, text: &entry.text, reply_to: None, file: None, buttons, follow_up: true };
    let log = LogLine::warn("approval_not_sent").conversation(&ask.conversation_key).id(&ask.approval_id);
    Ok(match send_entry(object, &sql, &platform, &address, &piece, &entry.id, log).await? {
        Some(_) => Reply::done(),
        // The worker's step fails and the queue asks again.
        None => Reply::error("the approval could not be sent", 502),
    })
}

/// Sends one outbox entry that stands alone (an approval's message, a post
/// from outside): bounded attempts, a rate limit's wait (capped), each
/// failure recorded and logged with `log`. The message id, or None when it
/// was given up.
pub(super) async fn send_entry(
    object: &Channel,
    sql: &Sql,
    platform: &Outbound<'_>,
    address: &ReplyAddress,
    piece: &Piece<'_>,
    entry_id: &str,
    log: LogLine,
) -> Result<Option<String>> {
    for attempt in 1..=object.config.send_max_attempts {
        outbox::mark_sending(sql, entry_id)?;
        let failure = match platform.send(address, piece).await {
            Ok(message_id) => {
                outbox::mark_sent(sql, entry_id, &message_id)?;
                web_chat::changed(&object.state, "outbox");
                return Ok(Some(message_id));
            }
            Err(failure) => failure,
        };
        let give_up = !failure.retryable || attempt == object.config.send_max_attempts;
        outbox::mark_attempt_failed(sql, entry_id, &failure.message, give_up)?;
        log.clone().reason(&failure.message).emit();
        if give_up {
            break;
        }
        sleep_ms(failure.retry_after_ms.unwrap_or(BACKOFF_MS).min(MAX_WAIT_MS)).await;
    }
    web_chat::changed(&object.state, "outbox");
    Ok(None)
}

/// `POST /approvals/settled`: the approval was decided; its worker is no
/// longer waiting, and its message says so.
pub(super) async fn settled(object: &Channel, body: &str) -> Result<Reply> {
    let Ok(settled) = json_body::<Settled>(body) else {
        return Ok(Reply::error("malformed approval", 400));
    };
    object.step(|machine| machine.approval_settled(&settled.approval_id, now_ms()))?;
    show(object, &settled.approval_id, &settled.text).await?;
    Ok(Reply::done())
}

/// Times out the approvals whose wait is over (from the alarm): each is
/// recorded once in D1, its worker told, its message changed.
pub(super) async fn time_out_due(object: &Channel, now: i64) -> Result<()> {
    let due = object.machine.borrow().processes.get().approvals_due(now);
    for (process_id, approval_id) in due {
        match approvals::time_out(&object.env, &approval_id).await {
            Ok(text) => {
                object.step(|machine| machine.approval_settled(&approval_id, now_ms()))?;
                // None: someone decided first, and that decision shows it.
                if let Some(text) = text {
                    show(object, &approval_id, &text).await?;
                }
            }
            Err(error) => {
                LogLine::warn("approval_timeout_not_recorded").id(&approval_id).reason(&error).emit();
                object.step(|machine| machine.await_approval(&process_id, &approval_id, now + RETRY_TIMEOUT_MS))?;
            }
        }
    }
    Ok(())
}

/// The work waiting on `approval_id` was stopped: the approval is withdrawn
/// and its message says so.
pub(super) async fn withdraw(object: &Channel, approval_id: &str) -> Result<()> {
    match approvals::withdraw(&object.env, approval_id).await? {
        Some(text) => show(object, approval_id, &text).await,
        None => Ok(()),
    }
}

/// The approval's message shows the decision, its buttons gone (best effort:
/// the decision stands either way).
async fn show(object: &Channel, approval_id: &str, text: &str) -> Result<()> {
    let sql = object.state.storage().counted_sql();
    let Some(address) = outbox::approval_address(&sql, approval_id)? else {
        return Ok(()); // never asked here
    };
    let platform = outbound::for_address(&object.config, &object.state, &address);
    let text = rendered(&platform, text);
    let settled = outbox::settle_approval(&sql, approval_id, &text)?;
    object.approval_waiting.set(None);
    let Some(entry) = settled else {
        return Ok(());
    };
    web_chat::changed(&object.state, "outbox");
    let Some(message_id) = entry.platform_message_id.filter(|_| entry.status == OutboxStatus::Sent) else {
        return Ok(());
    };
    let piece = Piece {
        id: &entry.id,
        index: 0,
        text: &entry.text,
        reply_to: None,
        file: None,
        buttons: Buttons::Cleared,
        follow_up: true,
    };
    if let Err(failure) = platform.edit(&address, &message_id, &piece).await {
        LogLine::warn("approval_message_not_edited").id(&approval_id).reason(&failure.message).emit();
    }
    Ok(())
}

/// Markdown as the platform shows it, secrets cut, in one message.
fn rendered(platform: &Outbound<'_>, text: &str) -> String {
    let prepared = prepare(&[text.to_string()], platform.flavor(), platform.message_limit(), &redactor());
    prepared.pieces.into_iter().next().unwrap_or_default()
}

/// A message that answers its sender's waiting MCP question
/// (`crate::mcp::elicit::typed_answer`) is taken as the answer, not as a
/// message for the agent: the sender is told whether it fit (once per
/// delivery id: the inbox keeps it). Returns whether it was taken.
pub(super) async fn typed_answer(object: &Channel, event: &crate::inbound::InboundEvent) -> Result<bool> {
    let told = match crate::mcp::elicit::typed_answer(&object.config, &object.env, event).await {
        Ok(Some(told)) => told,
        Ok(None) => return Ok(false),
        Err(error) => {
            LogLine::warn("mcp_question_answer_unread").conversation(&event.conversation_key).reason(&error).emit();
            return Ok(false);
        }
    };
    let platform = outbound::for_address(&object.config, &object.state, &event.reply_address);
    let text = rendered(&platform, &told);
    let id = format!("{}/question/{}", event.conversation_key, event.delivery_id);
    let piece = Piece {
        id: &id,
        index: 1,
        text: &text,
        reply_to: Some(&event.message_id),
        file: None,
        buttons: Buttons::None,
        follow_up: true,
    };
    if let Err(failure) = platform.send(&event.reply_address, &piece).await {
        LogLine::warn("mcp_question_reply_not_sent")
            .conversation(&event.conversation_key)
            .reason(&failure.message)
            .emit();
    }
    Ok(true)
}
