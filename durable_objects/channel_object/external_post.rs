//! A post from outside the conversation (the MCP server's `post` tool): sent
//! as the agent through the outbox, exactly once per id. The entry is written
//! before it is sent; a repeat finds it and answers what became of it, and
//! one found mid-send (another request sending it, or a crash) is never sent
//! again. A sent post is the agent's message in the conversation's history
//! (as a turn's reply is), under the entry's id: a repeat never writes it twice.

use serde::Deserialize;
use serde_json::json;
use worker::Result;

use super::reply::Reply;
use super::{history as history_store, json_body, outbox, Channel};
use crate::conversations::archive::StoredMessage;
use crate::inbound::ReplyAddress;
use crate::llm::HistoryRole;
use crate::log_line::LogLine;
use crate::platforms::messenger::{Buttons, Messenger, Piece};
use crate::platforms::outbound;
use crate::reply::markup::shown;
use crate::reply::outbox::OutboxStatus;
use crate::reply::pieces::prepare;
use crate::runtime::config::redactor;
use crate::runtime::durable::MeteredStorage;
use crate::runtime::http::now_ms;

/// What the Worker asks for.
#[derive(Debug, Deserialize)]
pub struct ExternalPost {
    pub conversation_key: String,
    /// The outbox id: one per client and idempotency key.
    pub entry_id: String,
    pub text: String,
}

/// `POST /external/post`: answers `{ status, message_id, repeat }`.
pub(super) async fn post(object: &Channel, body: &str) -> Result<Reply> {
    let Ok(post) = json_body::<ExternalPost>(body) else {
        return Ok(Reply::error("malformed post", 400));
    };
    let Some(address) = ReplyAddress::for_conversation(&post.conversation_key) else {
        return Ok(Reply::error("no address for this conversation", 400));
    };
    let platform = outbound::for_address(&object.config, &object.state, &address);
    let prepared = prepare(std::slice::from_ref(&post.text), platform.flavor(), platform.message_limit(), &redactor());
    let [text] = prepared.pieces.as_slice() else {
        return Ok(Reply::error("the text does not fit one message on this platform", 400));
    };
    let sql = object.state.storage().counted_sql();
    let entry = outbox::enqueue_external(&sql, &post.entry_id, text, now_ms())?;
    let answer = |status: &str, message_id: Option<&str>, repeat: bool| {
        Reply::json(&json!({ "status": status, "message_id": message_id, "repeat": repeat }))
    };
    match entry.status {
        OutboxStatus::Pending => {}
        status => {
            // A crash between the send and the history's row: the repeat writes it (once, by id).
            if let (OutboxStatus::Sent, Some(message_id)) = (status, entry.platform_message_id.as_deref()) {
                history_store::record(&sql, &[posted(object, &post, &entry, platform.flavor(), message_id)])?;
            }
            return answer(status.as_str(), entry.platform_message_id.as_deref(), true);
        }
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
    let log = LogLine::warn("external_post_not_sent").conversation(&post.conversation_key);
    match super::approvals::send_entry(object, &sql, &platform, &address, &piece, &entry.id, log).await? {
        Some(message_id) => {
            history_store::record(&sql, &[posted(object, &post, &entry, platform.flavor(), &message_id)])?;
            answer(OutboxStatus::Sent.as_str(), Some(&message_id), repeat)
        }
        None => answer(OutboxStatus::Failed.as_str(), None, repeat),
    }
}

/// The sent post as the history keeps a reply: the agent's message, as the
/// reader saw it, under the outbox entry's id (so it is stored once).
fn posted(
    object: &Channel,
    post: &ExternalPost,
    entry: &outbox::Entry,
    flavor: crate::reply::markup::Flavor,
    message_id: &str,
) -> StoredMessage {
    StoredMessage {
        id: format!("{}:out:{}", post.conversation_key, entry.id),
        conversation_key: post.conversation_key.clone(),
        role: HistoryRole::Assistant,
        author_id: "bot".into(),
        author_name: object.config.bot_name.clone(),
        content: shown(flavor, &entry.text),
        platform_message_id: Some(message_id.to_string()),
        created_at: entry.created_at,
        compacted: 0,
    }
}
