//! Telegram Bot API calls.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use serde_json::{json, Value};
use worker::Method;

use crate::runtime::http::download;

use crate::runtime::http::post_json;

use crate::runtime::http::send_form;

use crate::runtime::http::HttpAnswer;

use crate::channel::participants::MembershipCount;
use crate::config::Config;
use crate::files::rules::{Kind, Refusal};
use crate::inbound::{Attachment, InboundEvent, ReplyAddress};
use crate::ops::Op;
use crate::platforms::messenger::{
    Buttons, FileBody, Interrupted, Messenger, Piece, SendFailure, Streaming, API_TIMEOUT_MS, UPLOAD_TIMEOUT_MS,
};
use crate::platforms::telegram::wire::{
    approval_keyboard, is_not_modified, message_ref, send_message_body, sent_message_id, MESSAGE_LIMIT,
};
use crate::platforms::Platform;
use crate::reply::markup::{shown, Flavor};
use crate::reply::reaction::Reaction;
use crate::runtime::http::HttpFailure;

/// The reaction that shows a turn is still at work on a message: put on at
/// the first renewal of "typing" (a turn that outlasts a few seconds), so a
/// quick answer costs two calls (typing, the reply), not four.
const WORKING_REACTION: &str = "👀";
/// A streamed reply is edited about once a second: Telegram's pace for one chat.
const EDIT_EVERY_MS: u64 = 1_000;
/// Telegram takes photos up to 10 MB; a larger image goes as a document.
const PHOTO_LIMIT_BYTES: usize = 10 * 1024 * 1024;

/// Sends to Telegram with the deployment's settings: the default agent's
/// bot is `TELEGRAM_BOT_TOKEN`, another agent's its own (see `crate::agents`).
pub struct Telegram<'a> {
    pub config: &'a Config,
    /// The last agent's token looked up (a turn stays with one agent).
    tokens: RefCell<Option<(String, Rc<str>)>>,
    /// Whether this turn put [`WORKING_REACTION`] on: `None` until it
    /// started here (a turn resumed from an earlier run may have), so the
    /// reaction is cleared unless it is known to be off.
    reacted: Cell<Option<bool>>,
}

/// The agent whose own bot answers at `address` (None: the default agent's).
fn agent_in(address: &ReplyAddress) -> Option<&str> {
    match address {
        ReplyAddress::Telegram { agent, .. } => agent.as_deref(),
        _ => None,
    }
}

impl<'a> Telegram<'a> {
    /// The messenger for a reply ([`crate::platforms::outbound`]'s one way to
    /// make each); Telegram needs only the settings, not the conversation's object.
    pub fn new(config: &'a Config, _state: &'a worker::State) -> Self {
        Telegram::for_buttons(config)
    }

    /// The messenger for answering a button press (each answer names its agent's bot).
    pub fn for_buttons(config: &'a Config) -> Self {
        Telegram { config, tokens: RefCell::new(None), reacted: Cell::new(None) }
    }
}

impl Telegram<'_> {
    /// The bot token `agent`'s messages go out with (None: `TELEGRAM_BOT_TOKEN`).
    async fn token(&self, agent: Option<&str>) -> Result<Rc<str>, SendFailure> {
        let Some(agent) = agent else { return Ok(self.config.telegram_bot_token.expose().into()) };
        if let Some((known, token)) = self.tokens.borrow().as_ref() {
            if known == agent {
                return Ok(token.clone());
            }
        }
        let env = crate::runtime::config::bindings();
        let directory = crate::agents::directory::get(&env)
            .await
            .map_err(|_| SendFailure::from_status("Telegram", 503, "the agent's bot could not be read", None))?;
        let token: Rc<str> = match directory.bot(agent) {
            Some(bot) => bot.token.as_str().into(),
            None => return Err(SendFailure::permanent("the agent has no Telegram bot".into())),
        };
        *self.tokens.borrow_mut() = Some((agent.to_string(), token.clone()));
        Ok(token)
    }

    /// A Bot API method's URL. The token is part of it: never log it.
    async fn url(&self, agent: Option<&str>, method: &str) -> Result<String, SendFailure> {
        Ok(format!("{}/bot{}/{method}", self.config.telegram_api_base, self.token(agent).await?))
    }

    /// Calls a Bot API method as `agent`'s bot.
    async fn call(&self, agent: Option<&str>, method: &str, body: &Value) -> Result<Value, SendFailure> {
        let answer = post_json(Op::PlatformCall, &self.url(agent, method).await?, &[], body, API_TIMEOUT_MS).await;
        Self::answer(answer)
    }

    /// Answers a pressed button (`answerCallbackQuery`), so its spinner
    /// stops: a short note, an alert when the press was refused; best effort.
    /// It goes out as `agent`'s bot (None: the default's), the one pressed.
    pub async fn answer_button(&self, agent: Option<&str>, query_id: &str, text: &str, alert: bool) {
        let body = json!({ "callback_query_id": query_id, "text": text, "show_alert": alert });
        let _ = self.call(agent, "answerCallbackQuery", &body).await;
    }

    /// Sends a file piece: a photo as a photo, anything else as a document,
    /// the piece's text as its caption.
    async fn send_file(
        &self,
        address: &ReplyAddress,
        piece: &Piece<'_>,
        body: &FileBody,
    ) -> Result<Value, SendFailure> {
        let photo = body.file.kind == Kind::Image && body.bytes.len() <= PHOTO_LIMIT_BYTES;
        let (method, field) = if photo { ("sendPhoto", "photo") } else { ("sendDocument", "document") };
        let described = send_message_body(address, piece.text, piece.reply_to);
        let mut fields: Vec<(String, String)> = Vec::new();
        for (name, value) in described.as_object().into_iter().flatten() {
            let value = match (name.as_str(), value) {
                ("text", Value::String(text)) => ("caption".to_string(), text.clone()),
                (_, Value::String(text)) => (name.clone(), text.clone()),
                _ => (name.clone(), value.to_string()),
            };
            fields.push(value);
        }
        let fields: Vec<(&str, &str)> = fields.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect();
        let file = (field, body.file.name.as_str(), body.bytes.as_slice());
        let url = self.url(agent_in(address), method).await?;
        Self::answer(send_form(Op::PlatformCall, Method::Post, &url, &[], &fields, file, UPLOAD_TIMEOUT_MS).await)
    }

    /// Reads a Bot API answer: `ok` or a failure that says whether to retry.
    fn answer(answer: Result<HttpAnswer, HttpFailure>) -> Result<Value, SendFailure> {
        let answer = answer.map_err(|failure| SendFailure::network("Telegram", failure))?;
        let parsed: Value = serde_json::from_slice(&answer.body).unwrap_or_default();
        if answer.status == 200 && parsed["ok"] == true {
            return Ok(parsed);
        }
        let retry_after_ms = parsed.pointer("/parameters/retry_after").and_then(Value::as_u64).map(|secs| secs * 1000);
        let detail = parsed["description"].as_str().unwrap_or("no description");
        Err(SendFailure::from_status("Telegram", answer.status, detail, retry_after_ms))
    }
}

impl Telegram<'_> {
    /// Calls a method that carries `text` (`body` builds the call around it)
    /// as Telegram HTML; if Telegram cannot parse it, calls again with what a
    /// reader would have seen, as plain text.
    async fn call_html(
        &self,
        agent: Option<&str>,
        method: &str,
        text: &str,
        body: impl Fn(&str) -> Value,
    ) -> Result<Value, SendFailure> {
        let mut formatted = body(text);
        formatted["parse_mode"] = json!("HTML");
        match self.call(agent, method, &formatted).await {
            Err(failure) if failure.message.contains("can't parse entities") => {
                let plain = shown(Flavor::TelegramHtml, text);
                let plain = crate::runtime::config::redactor().redact(&plain).into_owned();
                self.call(agent, method, &body(&plain)).await
            }
            other => other,
        }
    }

    /// "typing" in the message's chat (and topic).
    async fn typing(&self, event: &InboundEvent) {
        let ReplyAddress::Telegram { chat_id, topic_id, .. } = &event.reply_address else {
            return;
        };
        let mut typing = json!({ "chat_id": chat_id, "action": "typing" });
        if let Some(topic) = topic_id {
            typing["message_thread_id"] = json!(topic);
        }
        let _ = self.call(agent_in(&event.reply_address), "sendChatAction", &typing).await;
    }

    async fn set_reaction(&self, event: &InboundEvent, reaction: Value) {
        let (ReplyAddress::Telegram { chat_id, .. }, Ok(message_id)) =
            (&event.reply_address, event.message_id.parse::<i64>())
        else {
            return;
        };
        let body = json!({ "chat_id": chat_id, "message_id": message_id, "reaction": reaction });
        let _ = self.call(agent_in(&event.reply_address), "setMessageReaction", &body).await;
    }
}

impl Messenger for Telegram<'_> {
    fn message_limit(&self) -> usize {
        MESSAGE_LIMIT
    }

    /// Sends the piece, rendered as Telegram HTML by us (never the model's
    /// own markup); if Telegram rejects it, sends what a reader would have
    /// seen as plain text.
    async fn send(&self, address: &ReplyAddress, piece: &Piece<'_>) -> Result<String, SendFailure> {
        let answer = match piece.file {
            Some(file) => self.send_file(address, piece, file).await?,
            None => {
                let body = |text: &str| {
                    let mut body = send_message_body(address, text, piece.reply_to);
                    if let Buttons::Approval(id) = piece.buttons {
                        body["reply_markup"] = approval_keyboard(id);
                    }
                    body
                };
                self.call_html(agent_in(address), "sendMessage", piece.text, body).await?
            }
        };
        Ok(sent_message_id(&answer).unwrap_or_default())
    }

    /// `editMessageText`, as HTML with the same plain fallback as a send.
    async fn edit(&self, address: &ReplyAddress, message_id: &str, piece: &Piece<'_>) -> Result<(), SendFailure> {
        let Some(message) = message_ref(address, message_id) else {
            return Err(SendFailure::permanent(format!("no Telegram message {message_id} to edit")));
        };
        let body = |text: &str| {
            let mut body = message.clone();
            body["text"] = json!(text);
            body
        };
        match self.call_html(agent_in(address), "editMessageText", piece.text, body).await {
            Err(failure) if is_not_modified(&failure.message) => Ok(()),
            other => other.map(|_| ()),
        }
    }

    async fn withdraw(&self, address: &ReplyAddress, message_id: &str) {
        if let Some(message) = message_ref(address, message_id) {
            let _ = self.call(agent_in(address), "deleteMessage", &message).await;
        }
    }

    /// `getFile` says where the file is; the download comes from the same
    /// Bot API host (its URL holds the token: never logged).
    async fn download(&self, address: &ReplyAddress, attachment: &Attachment) -> Result<Vec<u8>, Refusal> {
        let agent = agent_in(address);
        let answer = self.call(agent, "getFile", &json!({ "file_id": attachment.platform_file_id })).await;
        let answer = answer.map_err(|_| Refusal::Unreachable)?;
        let path = answer.pointer("/result/file_path").and_then(Value::as_str).ok_or(Refusal::Unreachable)?;
        if path.contains("..") || path.starts_with('/') {
            return Err(Refusal::Unreachable);
        }
        let token = self.token(agent).await.map_err(|_| Refusal::Unreachable)?;
        download(&format!("{}/file/bot{token}/{path}", self.config.telegram_api_base), &[]).await
    }

    fn streaming(&self) -> Streaming {
        match self.config.streams(Platform::Telegram.as_str()) {
            true => Streaming::Messages { edit_every_ms: EDIT_EVERY_MS },
            false => Streaming::Off,
        }
    }

    /// The Bot API has no idempotency key and no way for a bot to read what
    /// it sent: a resend could post a second copy, so the piece is reported.
    async fn interrupted(&self, _address: &ReplyAddress, _piece: &Piece<'_>, _since_ms: i64) -> Interrupted {
        Interrupted::Unsure
    }

    async fn show_working(&self, event: &InboundEvent) {
        self.reacted.set(Some(false));
        self.typing(event).await;
    }

    /// Telegram shows "typing" for about 5 seconds per call; a turn still at
    /// work then gets the working reaction too, once.
    async fn renew_working(&self, event: &InboundEvent) {
        self.typing(event).await;
        if self.reacted.get() != Some(true) {
            self.reacted.set(Some(true));
            self.set_reaction(event, json!([{ "type": "emoji", "emoji": WORKING_REACTION }])).await;
        }
    }

    /// Typing expires by itself; the reaction is replaced by none.
    async fn clear_working(&self, event: &InboundEvent) {
        if self.reacted.replace(Some(false)) != Some(false) {
            self.set_reaction(event, json!([])).await;
        }
    }

    async fn member_count(&self, event: &InboundEvent, now_ms: i64) -> Option<MembershipCount> {
        let ReplyAddress::Telegram { chat_id, .. } = &event.reply_address else {
            return None;
        };
        let agent = agent_in(&event.reply_address);
        let answer = self.call(agent, "getChatMemberCount", &json!({ "chat_id": chat_id })).await.ok()?;
        let members = answer["result"].as_u64()? as usize;
        // The count includes this bot (taken off here) and every peer bot
        // (taken off by the channel, which knows them).
        Some(MembershipCount { others: members.saturating_sub(1), truncated: false, fetched_at_ms: now_ms })
    }

    /// Telegram keeps one reaction per bot: this replaces the working one.
    async fn react(&self, event: &InboundEvent, reaction: &Reaction) {
        let Some(emoji) = reaction.emoji() else {
            return; // Telegram reacts by emoji only
        };
        self.set_reaction(event, json!([{ "type": "emoji", "emoji": emoji }])).await;
    }
}
