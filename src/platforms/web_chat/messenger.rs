//! The web platform: a browser talks to the conversation's channel object
//! over a hibernatable WebSocket, and replies are pushed back over it. The
//! outbox stays the record of what was said: a page that reconnects asks for
//! the conversation again and keeps one copy of each message by its id.

use worker::{Response, Result, State, WebSocket, WebSocketPair};

use crate::channel::participants::MembershipCount;
use crate::config::Config;
use crate::inbound::{InboundEvent, ReplyAddress};

use crate::platforms::messenger::Buttons;
use crate::platforms::messenger::Interrupted;
use crate::platforms::messenger::Messenger;
use crate::platforms::messenger::Piece;
use crate::platforms::messenger::SendFailure;
use crate::platforms::messenger::Streaming;
use crate::platforms::Platform;
use crate::runtime::http::now_ms;

// The page's message shapes live in `wire` (pure); the channel object reaches them here.
pub use crate::platforms::web_chat::wire::{chat_message, reply_id, with_buttons, CHAT, MESSAGE_LIMIT, WATCH};

/// Accepts a browser's socket with the hibernation API (an idle open page
/// costs the object no time) and answers the upgrade.
pub fn accept(state: &State, tags: &[&str]) -> Result<Response> {
    let pair = WebSocketPair::new()?;
    state.accept_websocket_with_tags(&pair.server, tags);
    Response::from_websocket(pair.client)
}

/// Sends a message to every socket with the tag; a socket that is gone is
/// skipped (its page catches up when it reconnects).
pub fn push(state: &State, tag: &str, message: &serde_json::Value) {
    let sockets = state.get_websockets_with_tag(tag);
    if sockets.is_empty() {
        return;
    }
    let text = message.to_string();
    for socket in sockets {
        let _ = socket.send_with_str(&text);
    }
}

/// Tells dashboards watching the conversation that `what` changed. Every
/// inbound calls this, mostly with no dashboard watching: the message is
/// made only for a socket that is there.
pub fn changed(state: &State, what: &str) {
    let sockets = state.get_websockets_with_tag(WATCH);
    if sockets.is_empty() {
        return;
    }
    let text = serde_json::json!({ "type": "changed", "what": what }).to_string();
    for socket in sockets {
        let _ = socket.send_with_str(&text);
    }
}

/// Sends one message to one socket (a reply to its hello).
pub fn send_to(socket: &WebSocket, message: &serde_json::Value) {
    let _ = socket.send_with_str(message.to_string());
}

/// Sends to the browser sockets of the conversation's object.
pub struct WebChat<'a> {
    pub state: &'a State,
    pub bot_name: &'a str,
    /// Replies show over the socket while the model writes them.
    pub streams: bool,
}

impl<'a> WebChat<'a> {
    /// The messenger for a reply ([`crate::platforms::outbound`]'s one way to make each).
    pub fn new(config: &'a Config, state: &'a State) -> Self {
        WebChat { state, bot_name: &config.bot_name, streams: config.streams(Platform::Web.as_str()) }
    }
}

impl Messenger for WebChat<'_> {
    fn message_limit(&self) -> usize {
        MESSAGE_LIMIT
    }

    /// A file is a message with its (signed, expiring) download link.
    async fn send(&self, _address: &ReplyAddress, piece: &Piece<'_>) -> std::result::Result<String, SendFailure> {
        let id = reply_id(piece.id);
        let text = match piece.file {
            None => piece.text.to_string(),
            Some(file) => match &file.link {
                Some(link) => format!("{}\n{link}", piece.text),
                None => return Err(SendFailure::permanent("no download link can be made (no signing key)".into())),
            },
        };
        let mut line = chat_message(&id, "assistant", self.bot_name, &text, now_ms());
        if let Buttons::Approval(approval) = piece.buttons {
            with_buttons(&mut line, approval);
        }
        push(self.state, CHAT, &line);
        Ok(id)
    }

    /// The page replaces the line with this id (an approval's, once decided).
    async fn edit(&self, _address: &ReplyAddress, message_id: &str, piece: &Piece<'_>) -> Result<(), SendFailure> {
        let mut line = chat_message(message_id, "assistant", self.bot_name, piece.text, now_ms());
        if piece.buttons == Buttons::Cleared {
            line["approval"] = serde_json::json!({ "open": false });
        }
        push(self.state, CHAT, &line);
        Ok(())
    }

    /// Pushing again is harmless: the page keeps one copy per id.
    async fn interrupted(&self, _address: &ReplyAddress, _piece: &Piece<'_>, _since_ms: i64) -> Interrupted {
        Interrupted::Resend
    }

    async fn show_working(&self, _event: &InboundEvent) {
        push(self.state, CHAT, &serde_json::json!({ "type": "working", "on": true }));
    }

    /// The page's indicator does not fade.
    async fn renew_working(&self, _event: &InboundEvent) {}

    fn streaming(&self) -> Streaming {
        match self.streams {
            true => Streaming::Socket,
            false => Streaming::Off,
        }
    }

    /// The page shows it below the conversation until the reply (or the end of the turn) replaces it.
    async fn show_draft(&self, _event: &InboundEvent, text: &str) {
        push(self.state, CHAT, &serde_json::json!({ "type": "draft", "author": self.bot_name, "text": text }));
    }

    async fn clear_working(&self, _event: &InboundEvent) {
        push(self.state, CHAT, &serde_json::json!({ "type": "working", "on": false }));
    }

    /// A web chat is one person and the bot.
    async fn member_count(&self, _event: &InboundEvent, _now_ms: i64) -> Option<MembershipCount> {
        None
    }

    async fn react(&self, event: &InboundEvent, reaction: &crate::reply::reaction::Reaction) {
        let Some(emoji) = reaction.emoji() else {
            return;
        };
        let message =
            serde_json::json!({ "type": "reaction", "id": format!("in:{}", event.delivery_id), "emoji": emoji });
        push(self.state, CHAT, &message);
    }
}
