//! A post from outside the conversation (the MCP server's `post` tool): sent
//! as the agent through the outbox, exactly once per id. The entry is written
//! before it is sent; a repeat finds it and answers what became of it, and
//! one found mid-send (another request sending it, or a crash) is never sent
//! again.

use serde::Deserialize;
use serde_json::json;
use worker::{Request, Response, Result};

use super::{json_body, outbox, ChannelObject};
use crate::inbound::ReplyAddress;
use crate::log_line::LogLine;
use crate::platforms::messenger::{Buttons, Messenger, Piece};
use crate::platforms::outbound;
use crate::platforms::web_chat::messenger as web_chat;
use crate::reply::outbox::OutboxStatus;
use crate::reply::pieces::prepare;
use crate::runtime::config::redactor;
use crate::runtime::durable::MeteredStorage;
use crate::runtime::http::{now_ms, sleep_ms};
use crate::runtime::log::Emit;

/// Wait between attempts (a rate limit waits longer, up to the cap).
const BACKOFF_MS: u64 = 500;
const MAX_WAIT_MS: u64 = 5_000;

/// What the Worker asks for.
#[derive(Debug, Deserialize)]
pub struct ExternalPost {
    pub conversation_key: String,
    /// The outbox id: one per client and idempotency key.
    pub entry_id: String,
    pub text: String,
}

/// `POST /external/post`: answers `{ status, message_id, repeat }`.
pub(super) async fn post(object: &ChannelObject, mut request: Request) -> Result<Response> {
    let Ok(post) = json_body::<ExternalPost>(&mut request).await else {
        return Response::error("malformed post", 400);
    };
    let Some(address) = ReplyAddress::for_conversation(&post.conversation_key) else {
        return Response::error("no address for this conversation", 400);
    };
    let platform = outbound::for_address(&object.config, &object.state, &address);
    let prepared = prepare(std::slice::from_ref(&post.text), platform.flavor(), platform.message_limit(), &redactor());
    let [text] = prepared.pieces.as_slice() else {
        return Response::error("the text does not fit one message on this platform", 400);
    };
    let sql = object.state.storage().counted_sql();
    let entry = outbox::enqueue_external(&sql, &post.entry_id, text, now_ms())?;
    let answer = |status: &str, message_id: Option<&str>, repeat: bool| {
        Response::from_json(&json!({ "status": status, "message_id": message_id, "repeat": repeat }))
    };
    match entry.status {
        OutboxStatus::Pending => {}
        status => return answer(status.as_str(), entry.platform_message_id.as_deref(), true),
    }
    let repeat = entry.attempts > 0;
    let piece_id = format!("{}/{}", post.conversation_key, entry.id);
    // Never the first piece of a reply: on Discord that would replace a deferred answer.
    let piece = Piece {
        id: &piece_id,
        index: 1,
        text: &entry.text,
        reply_to: None,
        file: None,
        buttons: Buttons::None,
        follow_up: true,
    };
    for attempt in 1..=object.config.send_max_attempts {
        outbox::mark_sending(&sql, &entry.id)?;
        let failure = match platform.send(&address, &piece).await {
            Ok(message_id) => {
                outbox::mark_sent(&sql, &entry.id, &message_id)?;
                web_chat::changed(&object.state, "outbox");
                return answer(OutboxStatus::Sent.as_str(), Some(&message_id), repeat);
            }
            Err(failure) => failure,
        };
        let give_up = !failure.retryable || attempt == object.config.send_max_attempts;
        outbox::mark_attempt_failed(&sql, &entry.id, &failure.message, give_up)?;
        LogLine::warn("external_post_not_sent").conversation(&post.conversation_key).reason(&failure.message).emit();
        if give_up {
            break;
        }
        sleep_ms(failure.retry_after_ms.unwrap_or(BACKOFF_MS).min(MAX_WAIT_MS)).await;
    }
    web_chat::changed(&object.state, "outbox");
    answer(OutboxStatus::Failed.as_str(), None, repeat)
}
