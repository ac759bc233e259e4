//! WhatsApp Cloud API (pure): the webhook's verification handshake and
//! `X-Hub-Signature-256`, the notifications it carries (messages, button
//! replies, media, reactions, statuses), the Graph API bodies the bot sends,
//! how a Graph error is read, and the 24-hour customer-service window.

use hmac::{Hmac, Mac};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::Sha256;
use thiserror::Error;

use crate::approvals::rules::{button_data, Choice, Click, Clicker};
use crate::inbound::{Attachment, Author, Heard, HeardEvent, InboundEvent, ReplyAddress};
use crate::platforms::Platform;
use crate::security::{constant_time_eq, decode_hex};

/// A text message's body holds at most 4,096 characters.
pub const MESSAGE_LIMIT: usize = 4_096;
/// An interactive message's body holds at most 1,024 characters.
pub const INTERACTIVE_BODY_LIMIT: usize = 1_024;
/// A reply button's title holds at most 20 characters; a message at most 3 buttons.
pub const BUTTON_TITLE_LIMIT: usize = 20;
pub const SIGNATURE_HEADER: &str = "X-Hub-Signature-256";
/// A business may answer a person only within 24 hours of the person's last
/// message (the customer-service window); after it, only templates.
pub const WINDOW_MS: i64 = 24 * 60 * 60 * 1000;
/// Meta retries an unacknowledged notification for up to 7 days, and the
/// inbox remembers a delivery id 7 days: a message older than this can only
/// be a replay, and is refused.
pub const STALE_AFTER_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// Graph error codes that mean "slow down": throughput (130429), pair rate
/// (131056), business use-case rate limit (80007), application rate limit (4).
pub const RATE_LIMIT_CODES: [i64; 4] = [130429, 131056, 80007, 4];
/// Graph's "re-engagement message": the 24-hour window has closed.
pub const OUTSIDE_WINDOW_CODE: i64 = 131047;
/// How long to wait after a rate limit when Graph says nothing (it rarely does).
pub const RATE_LIMIT_WAIT_MS: u64 = 2_000;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum WhatsAppError {
    #[error("missing WhatsApp signature")]
    MissingSignature,
    #[error("invalid WhatsApp signature")]
    WrongSignature,
    #[error("wrong or missing verify token")]
    WrongVerifyToken,
    #[error("stale WhatsApp message")]
    Stale,
    #[error("malformed WhatsApp payload: {0}")]
    Malformed(String),
}

/// Checks `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body,
/// keyed with the app secret>` in constant time. An unset secret accepts nothing.
pub fn verify_signature(signature: Option<&str>, body: &[u8], app_secret: &str) -> Result<(), WhatsAppError> {
    let signature = signature.ok_or(WhatsAppError::MissingSignature)?;
    let presented = signature.strip_prefix("sha256=").and_then(decode_hex).ok_or(WhatsAppError::WrongSignature)?;
    if app_secret.is_empty() {
        return Err(WhatsAppError::WrongSignature);
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(app_secret.as_bytes()).map_err(|_| WhatsAppError::WrongSignature)?;
    mac.update(body);
    // `verify_slice` compares in constant time.
    mac.verify_slice(&presented).map_err(|_| WhatsAppError::WrongSignature)
}

/// The signature Meta puts on `body` (for tools and tests).
pub fn sign(body: &[u8], app_secret: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(app_secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(body);
    format!("sha256={}", crate::security::encode_hex(mac.finalize().into_bytes()))
}

/// The verification handshake (`GET ?hub.mode=subscribe&hub.verify_token=…&
/// hub.challenge=…`): the challenge to answer when the token is the
/// configured one (compared in constant time; an unset token accepts nothing).
pub fn verify_handshake(query: &[(String, String)], verify_token: &str) -> Result<String, WhatsAppError> {
    let field = |name: &str| query.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str());
    let token = field("hub.verify_token").unwrap_or_default();
    let matches = !verify_token.is_empty() && constant_time_eq(token.as_bytes(), verify_token.as_bytes());
    if field("hub.mode") != Some("subscribe") || !matches {
        return Err(WhatsAppError::WrongVerifyToken);
    }
    match field("hub.challenge") {
        // Meta's challenge is a number; nothing else is echoed back.
        Some(challenge)
            if !challenge.is_empty()
                && challenge.len() <= 64
                && challenge.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            Ok(challenge.to_string())
        }
        _ => Err(WhatsAppError::Malformed("no usable hub.challenge".into())),
    }
}

/// What became of a message the bot sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusUpdate {
    pub message_id: String,
    /// `sent`, `delivered`, `read` or `failed`.
    pub status: String,
    pub recipient: String,
    /// Graph's error code and title, for a failed one.
    pub error: Option<(i64, String)>,
}

/// One thing a notification carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    Message(Box<InboundEvent>),
    Click(Click),
    /// A reaction a person put on a message (heard by the channel).
    Heard(HeardEvent),
    Status(StatusUpdate),
    /// Acknowledged and dropped, with the reason.
    Ignored(&'static str),
}

#[derive(Debug, Deserialize)]
struct Notification {
    object: String,
    #[serde(default)]
    entry: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(default)]
    changes: Vec<Change>,
}

#[derive(Debug, Deserialize)]
struct Change {
    field: String,
    #[serde(default)]
    value: ChangeValue,
}

#[derive(Debug, Deserialize, Default)]
struct ChangeValue {
    #[serde(default)]
    metadata: Metadata,
    #[serde(default)]
    contacts: Vec<Contact>,
    #[serde(default)]
    messages: Vec<Value>,
    #[serde(default)]
    statuses: Vec<Value>,
}

#[derive(Debug, Deserialize, Default)]
struct Metadata {
    #[serde(default)]
    phone_number_id: String,
}

#[derive(Debug, Deserialize)]
struct Contact {
    #[serde(default)]
    wa_id: String,
    #[serde(default)]
    profile: Option<Profile>,
}

#[derive(Debug, Deserialize)]
struct Profile {
    #[serde(default)]
    name: String,
}

/// The conversation key of a person's chat with one business number.
pub fn conversation_key(phone_number_id: &str, wa_id: &str) -> String {
    format!("{}:{phone_number_id}:{wa_id}", Platform::WhatsApp.as_str())
}

/// Reads a notification into what it carries, in order. Messages older than
/// [`STALE_AFTER_MS`] (by their own timestamp) are refused: when every
/// message a notification carries is stale, the whole is [`WhatsAppError::Stale`].
pub fn parse_notification(body: &[u8], now_ms: i64) -> Result<Vec<Notice>, WhatsAppError> {
    let notification: Notification =
        serde_json::from_slice(body).map_err(|error| WhatsAppError::Malformed(error.to_string()))?;
    if notification.object != "whatsapp_business_account" {
        return Err(WhatsAppError::Malformed(format!("object {:?}", notification.object)));
    }
    let (mut notices, mut stale) = (Vec::new(), 0);
    for change in notification.entry.into_iter().flat_map(|entry| entry.changes) {
        if change.field != "messages" {
            notices.push(Notice::Ignored("not a messages change"));
            continue;
        }
        let value = change.value;
        let phone = value.metadata.phone_number_id.as_str();
        if phone.is_empty() {
            return Err(WhatsAppError::Malformed("no metadata.phone_number_id".into()));
        }
        for message in &value.messages {
            let notice = parse_message(message, phone, &value.contacts)?;
            if now_ms - seconds(&message["timestamp"]).saturating_mul(1000) > STALE_AFTER_MS {
                stale += 1;
                continue;
            }
            notices.push(notice);
        }
        notices.extend(value.statuses.iter().map(parse_status).map(Notice::Status));
    }
    if stale > 0 && notices.is_empty() {
        return Err(WhatsAppError::Stale);
    }
    Ok(notices)
}

/// Unix seconds written as text (Graph's way) or as a number.
fn seconds(value: &Value) -> i64 {
    value.as_str().and_then(|text| text.parse().ok()).or_else(|| value.as_i64()).unwrap_or(0)
}

fn text_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn parse_message(message: &Value, phone: &str, contacts: &[Contact]) -> Result<Notice, WhatsAppError> {
    let (from, id) = (text_at(message, "/from"), text_at(message, "/id"));
    if from.is_empty() || id.is_empty() {
        return Err(WhatsAppError::Malformed("a message without from or id".into()));
    }
    let name = contacts
        .iter()
        .find(|contact| contact.wa_id == from)
        .and_then(|contact| contact.profile.as_ref())
        .map(|profile| profile.name.clone())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| from.to_string());
    let key = conversation_key(phone, from);
    let kind = text_at(message, "/type");
    let pressed = match kind {
        "interactive" => Some(text_at(message, "/interactive/button_reply/id")),
        "button" => Some(text_at(message, "/button/payload")),
        _ => None,
    };
    if let Some(data) = pressed.filter(|data| !data.is_empty()) {
        let clicker = Clicker { platform: Platform::WhatsApp.as_str().into(), user_id: from.into(), name };
        return Ok(Notice::Click(Click { clicker, data: data.into(), conversation: key, answer_to: Some(id.into()) }));
    }
    let timestamp_ms = seconds(&message["timestamp"]).saturating_mul(1000);
    if kind == "reaction" {
        // A reaction taken away arrives with an empty emoji: which one went is not said.
        let emoji = text_at(message, "/reaction/emoji");
        if emoji.is_empty() {
            return Ok(Notice::Ignored("a reaction taken away names no emoji"));
        }
        return Ok(Notice::Heard(HeardEvent {
            conversation_key: key,
            delivery_id: id.to_string(),
            message_id: text_at(message, "/reaction/message_id").to_string(),
            author: Some(Author { id: from.to_string(), name, is_bot: false }),
            heard: Heard::Reaction { emoji: emoji.to_string(), added: true },
        }));
    }
    let (text, attachments) = match kind {
        "text" => (text_at(message, "/text/body").to_string(), Vec::new()),
        "image" | "document" | "audio" | "video" | "sticker" => {
            let media = &message[kind];
            let attachment = Attachment {
                kind: kind.to_string(),
                platform_file_id: text_at(media, "/id").to_string(),
                name: media["filename"].as_str().map(str::to_string),
                size: None,
                url: None,
            };
            if attachment.platform_file_id.is_empty() {
                return Err(WhatsAppError::Malformed(format!("{kind} without a media id")));
            }
            (text_at(media, "/caption").to_string(), vec![attachment])
        }
        "interactive" | "button" => (text_at(message, "/button/text").to_string(), Vec::new()),
        _ => return Ok(Notice::Ignored("a message type the bot does not read")),
    };
    let author = Author { id: from.to_string(), name, is_bot: false };
    let address = ReplyAddress::WhatsApp { phone_number_id: phone.to_string(), to: from.to_string() };
    let mut event = InboundEvent::new(key, id.to_string(), id.to_string(), author, text, address);
    event.is_dm = true;
    event.attachments = attachments;
    event.timestamp_ms = timestamp_ms;
    event.reply_to_other_message_id = message.pointer("/context/id").and_then(Value::as_str).map(str::to_string);
    Ok(Notice::Message(Box::new(event.with_text_capped(MESSAGE_LIMIT))))
}

fn parse_status(status: &Value) -> StatusUpdate {
    let error = status["errors"].get(0).map(|error| {
        let title = error["title"].as_str().or(error["message"].as_str()).unwrap_or("no title");
        (error["code"].as_i64().unwrap_or(0), title.to_string())
    });
    StatusUpdate {
        message_id: text_at(status, "/id").to_string(),
        status: text_at(status, "/status").to_string(),
        recipient: text_at(status, "/recipient_id").to_string(),
        error,
    }
}

/// Whether a reply now may still be sent, the person's last message having
/// come at `last_message_ms` (None: unknown, and Graph decides).
pub fn within_window(last_message_ms: Option<i64>, now_ms: i64) -> bool {
    last_message_ms.is_none_or(|last| now_ms - last < WINDOW_MS)
}

/// The start of every message the bot sends: to whom, quoting what.
fn envelope(to: &str, reply_to: Option<&str>) -> Value {
    let mut body = json!({ "messaging_product": "whatsapp", "recipient_type": "individual", "to": to });
    if let Some(message_id) = reply_to {
        body["context"] = json!({ "message_id": message_id });
    }
    body
}

/// A text message (`POST /{phone-number-id}/messages`); links are not previewed.
pub fn text_body(to: &str, text: &str, reply_to: Option<&str>) -> Value {
    let mut body = envelope(to, reply_to);
    body["type"] = json!("text");
    body["text"] = json!({ "preview_url": false, "body": text });
    body
}

/// A message with Approve and Deny reply buttons whose ids carry
/// [`button_data`]. An interactive body is shorter than a text's: a longer
/// text is cut to fit, its end marked.
pub fn approval_body(to: &str, text: &str, approval_id: &str) -> Value {
    let shown = match text.char_indices().nth(INTERACTIVE_BODY_LIMIT) {
        Some(_) => format!("{}…", text.chars().take(INTERACTIVE_BODY_LIMIT - 1).collect::<String>()),
        None => text.to_string(),
    };
    let button = |title: &str, choice: Choice| json!({ "type": "reply", "reply": { "id": button_data(choice, approval_id), "title": title } });
    let mut body = envelope(to, None);
    body["type"] = json!("interactive");
    body["interactive"] = json!({
        "type": "button",
        "body": { "text": shown },
        "action": { "buttons": [button("Approve", Choice::Approve), button("Deny", Choice::Deny)] }
    });
    body
}

/// A media message naming an uploaded media id: an image as an image,
/// anything else as a document with its name; the text as its caption.
pub fn media_body(to: &str, media_id: &str, image: bool, name: &str, caption: &str, reply_to: Option<&str>) -> Value {
    let mut body = envelope(to, reply_to);
    let kind = if image { "image" } else { "document" };
    body["type"] = json!(kind);
    body[kind] = json!({ "id": media_id, "caption": caption });
    if !image {
        body[kind]["filename"] = json!(name);
    }
    body
}

/// Marks the person's message read and shows "typing…" (up to 25 seconds, or
/// until the bot answers).
pub fn typing_body(message_id: &str) -> Value {
    json!({ "messaging_product": "whatsapp", "status": "read", "message_id": message_id,
            "typing_indicator": { "type": "text" } })
}

/// A reaction on a person's message.
pub fn reaction_body(to: &str, message_id: &str, emoji: &str) -> Value {
    let mut body = envelope(to, None);
    body["type"] = json!("reaction");
    body["reaction"] = json!({ "message_id": message_id, "emoji": emoji });
    body
}

/// The id Graph gave a sent message.
pub fn sent_message_id(answer: &Value) -> Option<String> {
    answer.pointer("/messages/0/id").and_then(Value::as_str).map(str::to_string)
}

/// What a Graph answer that was not a success means for the send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Too fast: wait (this long, if Graph said) and try again.
    RateLimited(Option<u64>),
    /// The 24-hour window is closed: no text can reach the person now.
    OutsideWindow,
    /// A server-side failure: worth another try.
    Transient,
    /// Anything else: sending again will not help.
    Permanent,
}

/// Reads a failed Graph answer: HTTP 429 or a rate-limit code is a wait; the
/// re-engagement code is the closed window; 5xx is transient.
pub fn classify(status: u16, answer: &Value, retry_after_ms: Option<u64>) -> Refused {
    let code = answer.pointer("/error/code").and_then(Value::as_i64).unwrap_or(0);
    if status == 429 || RATE_LIMIT_CODES.contains(&code) {
        return Refused::RateLimited(retry_after_ms);
    }
    if code == OUTSIDE_WINDOW_CODE {
        return Refused::OutsideWindow;
    }
    if status >= 500 || answer.pointer("/error/is_transient") == Some(&Value::Bool(true)) {
        return Refused::Transient;
    }
    Refused::Permanent
}

/// Graph's description of a failure (its message and code), never the request.
pub fn error_detail(answer: &Value) -> String {
    let message = answer.pointer("/error/message").and_then(Value::as_str).unwrap_or("no error message");
    match answer.pointer("/error/code").and_then(Value::as_i64) {
        Some(code) => format!("{message} (code {code})"),
        None => message.to_string(),
    }
}

/// Where a media id's download URL is asked for: `GET /{media-id}`. Only an
/// id Graph could have issued (digits) is asked about.
pub fn media_path(media_id: &str) -> Option<String> {
    (!media_id.is_empty() && media_id.len() <= 64 && media_id.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| format!("/{media_id}"))
}

/// The hosts Graph serves media downloads from.
pub const MEDIA_HOSTS: &[&str] = &["lookaside.fbsbx.com"];

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "app-secret-5f2c";
    const NOW_MS: i64 = 1_800_000_000_000;

    fn notification(messages: Value, statuses: Value) -> Vec<u8> {
        json!({ "object": "whatsapp_business_account", "entry": [{ "id": "WABA1", "changes": [{ "field": "messages",
            "value": { "messaging_product": "whatsapp",
                "metadata": { "display_phone_number": "15550001111", "phone_number_id": "PN1" },
                "contacts": [{ "profile": { "name": "Ada" }, "wa_id": "4915100" }],
                "messages": messages, "statuses": statuses } }] }] })
        .to_string()
        .into_bytes()
    }

    fn message(kind: &str, content: Value) -> Value {
        let mut message =
            json!({ "from": "4915100", "id": "wamid.A1", "timestamp": (NOW_MS / 1000 - 60).to_string(), "type": kind });
        message[kind] = content;
        message
    }

    fn one(body: &[u8]) -> Notice {
        let mut notices = parse_notification(body, NOW_MS).expect("readable");
        assert_eq!(notices.len(), 1, "{notices:?}");
        notices.remove(0)
    }

    #[test]
    fn a_signature_is_over_the_raw_body_with_the_app_secret() {
        let body = notification(json!([message("text", json!({"body": "hi"}))]), json!([]));
        let signature = sign(&body, SECRET);
        assert_eq!(verify_signature(Some(&signature), &body, SECRET), Ok(()));
        assert_eq!(verify_signature(None, &body, SECRET), Err(WhatsAppError::MissingSignature));
        let other = notification(json!([message("text", json!({"body": "hello"}))]), json!([]));
        assert_eq!(
            verify_signature(Some(&signature), &other, SECRET),
            Err(WhatsAppError::WrongSignature),
            "another body"
        );
        assert_eq!(verify_signature(Some(&sign(&body, "other")), &body, SECRET), Err(WhatsAppError::WrongSignature));
        let bare = signature.trim_start_matches("sha256=");
        assert_eq!(verify_signature(Some(bare), &body, SECRET), Err(WhatsAppError::WrongSignature), "no scheme");
        assert_eq!(verify_signature(Some("sha256=zz"), &body, SECRET), Err(WhatsAppError::WrongSignature));
        assert_eq!(verify_signature(Some(&sign(&body, "")), &body, ""), Err(WhatsAppError::WrongSignature), "unset");
    }

    #[test]
    fn the_handshake_answers_the_challenge_only_for_the_verify_token() {
        let query = |mode: &str, token: &str, challenge: &str| {
            vec![
                ("hub.mode".to_string(), mode.to_string()),
                ("hub.verify_token".to_string(), token.to_string()),
                ("hub.challenge".to_string(), challenge.to_string()),
            ]
        };
        assert_eq!(verify_handshake(&query("subscribe", "tok-1", "1158201444"), "tok-1"), Ok("1158201444".into()));
        let refused = [
            (query("subscribe", "tok-2", "1"), "tok-1"),
            (query("subscribe", "tok-1x", "1"), "tok-1"),
            (query("unsubscribe", "tok-1", "1"), "tok-1"),
            (query("subscribe", "", "1"), ""),
            (vec![("hub.mode".to_string(), "subscribe".to_string())], "tok-1"),
        ];
        for (query, token) in refused {
            assert_eq!(verify_handshake(&query, token), Err(WhatsAppError::WrongVerifyToken), "{query:?}");
        }
        assert!(matches!(
            verify_handshake(&query("subscribe", "t", "<script>"), "t"),
            Err(WhatsAppError::Malformed(_))
        ));
    }

    #[test]
    fn a_text_message_is_a_direct_conversation_with_its_sender() {
        let Notice::Message(event) =
            one(&notification(json!([message("text", json!({"body": "hi there"}))]), json!([])))
        else {
            panic!("a message")
        };
        assert_eq!(event.conversation_key, "whatsapp:PN1:4915100");
        assert_eq!((event.delivery_id.as_str(), event.message_id.as_str()), ("wamid.A1", "wamid.A1"));
        assert_eq!((event.author.id.as_str(), event.author.name.as_str()), ("4915100", "Ada"));
        assert!(event.is_dm && !event.author.is_bot);
        assert_eq!(event.text, "hi there");
        assert_eq!(event.timestamp_ms, NOW_MS - 60_000);
        assert_eq!(event.reply_address, ReplyAddress::WhatsApp { phone_number_id: "PN1".into(), to: "4915100".into() });
    }

    #[test]
    fn media_carries_its_id_and_caption_and_a_reply_its_context() {
        let mut image =
            message("image", json!({"id": "1479537139650973", "mime_type": "image/jpeg", "caption": "look"}));
        image["context"] = json!({"from": "15550001111", "id": "wamid.BOT"});
        let Notice::Message(event) = one(&notification(json!([image]), json!([]))) else { panic!("a message") };
        assert_eq!(event.text, "look");
        assert_eq!(event.attachments[0].kind, "image");
        assert_eq!(event.attachments[0].platform_file_id, "1479537139650973");
        assert_eq!(event.reply_to_other_message_id.as_deref(), Some("wamid.BOT"));
        let document = message("document", json!({"id": "77", "filename": "sales.csv", "mime_type": "text/csv"}));
        let Notice::Message(event) = one(&notification(json!([document]), json!([]))) else { panic!("a message") };
        assert_eq!(event.attachments[0].name.as_deref(), Some("sales.csv"));
        let audio = message("audio", json!({"id": "88", "mime_type": "audio/ogg", "voice": true}));
        let Notice::Message(event) = one(&notification(json!([audio]), json!([]))) else { panic!("a message") };
        assert_eq!((event.attachments[0].kind.as_str(), event.text.as_str()), ("audio", ""));
        let no_id = message("image", json!({"mime_type": "image/jpeg"}));
        assert!(matches!(
            parse_notification(&notification(json!([no_id]), json!([])), NOW_MS),
            Err(WhatsAppError::Malformed(_))
        ));
    }

    #[test]
    fn a_button_reply_is_a_click_by_its_sender_in_their_conversation() {
        let press = message(
            "interactive",
            json!({"type": "button_reply", "button_reply": {"id": "approve:0123456789abcdef", "title": "Approve"}}),
        );
        let Notice::Click(click) = one(&notification(json!([press]), json!([]))) else { panic!("a click") };
        assert_eq!(click.data, "approve:0123456789abcdef");
        assert_eq!((click.clicker.platform.as_str(), click.clicker.user_id.as_str()), ("whatsapp", "4915100"));
        assert_eq!(click.conversation, "whatsapp:PN1:4915100");
        assert_eq!(click.answer_to.as_deref(), Some("wamid.A1"));
        let body = approval_body("4915100", "Approve?", "0123456789abcdef");
        let buttons = body.pointer("/interactive/action/buttons").and_then(Value::as_array).unwrap();
        assert!(buttons.len() <= 3);
        assert_eq!(buttons[0]["reply"]["id"], "approve:0123456789abcdef");
        assert_eq!(buttons[1]["reply"]["id"], "deny:0123456789abcdef");
        assert!(buttons
            .iter()
            .all(|button| button["reply"]["title"].as_str().unwrap().chars().count() <= BUTTON_TITLE_LIMIT));
        let long = approval_body("1", &"x".repeat(5_000), "0123456789abcdef");
        assert_eq!(
            long.pointer("/interactive/body/text").and_then(Value::as_str).unwrap().chars().count(),
            INTERACTIVE_BODY_LIMIT
        );
    }

    #[test]
    fn reactions_and_statuses_are_read_and_other_types_ignored() {
        let reaction = message("reaction", json!({"message_id": "wamid.BOT", "emoji": "👍"}));
        let Notice::Heard(heard) = one(&notification(json!([reaction]), json!([]))) else { panic!("a reaction") };
        assert_eq!(heard.message_id, "wamid.BOT");
        assert_eq!(heard.heard, Heard::Reaction { emoji: "👍".into(), added: true });
        assert_eq!(heard.conversation_key, "whatsapp:PN1:4915100");
        assert_eq!(heard.author.map(|author| author.id).as_deref(), Some("4915100"));
        let removed = message("reaction", json!({"message_id": "wamid.BOT", "emoji": ""}));
        assert!(matches!(one(&notification(json!([removed]), json!([]))), Notice::Ignored(_)), "taken away");

        let failed = json!({"id": "wamid.BOT", "status": "failed", "timestamp": "1", "recipient_id": "4915100",
            "errors": [{"code": 131047, "title": "Re-engagement message"}]});
        let Notice::Status(status) = one(&notification(json!([]), json!([failed]))) else { panic!("a status") };
        assert_eq!(status.status, "failed");
        assert_eq!(status.error, Some((131047, "Re-engagement message".into())));
        let location = message("location", json!({"latitude": 1.0, "longitude": 2.0}));
        assert!(matches!(one(&notification(json!([location]), json!([]))), Notice::Ignored(_)));
        assert!(matches!(
            parse_notification(b"{\"object\":\"page\",\"entry\":[]}", NOW_MS),
            Err(WhatsAppError::Malformed(_))
        ));
        assert!(matches!(parse_notification(b"{nope", NOW_MS), Err(WhatsAppError::Malformed(_))));
    }

    #[test]
    fn a_message_older_than_metas_retries_is_a_replay() {
        let mut old = message("text", json!({"body": "hi"}));
        old["timestamp"] = json!(((NOW_MS - STALE_AFTER_MS) / 1000 - 1).to_string());
        assert_eq!(
            parse_notification(&notification(json!([old.clone()]), json!([])), NOW_MS),
            Err(WhatsAppError::Stale)
        );
        let mut day_old = old.clone();
        day_old["timestamp"] = json!(((NOW_MS - WINDOW_MS) / 1000 - 60).to_string());
        assert!(matches!(one(&notification(json!([day_old]), json!([]))), Notice::Message(_)), "late, not a replay");
    }

    #[test]
    fn the_window_closes_24_hours_after_the_persons_last_message() {
        assert!(within_window(Some(NOW_MS - WINDOW_MS + 1), NOW_MS));
        assert!(!within_window(Some(NOW_MS - WINDOW_MS), NOW_MS));
        assert!(within_window(None, NOW_MS), "unknown: Graph decides");
    }

    #[test]
    fn graph_failures_are_read_as_waits_the_closed_window_or_final() {
        let error = |code: i64| json!({"error": {"message": "m", "type": "OAuthException", "code": code}});
        assert_eq!(classify(400, &error(130429), None), Refused::RateLimited(None));
        assert_eq!(classify(400, &error(131056), Some(3_000)), Refused::RateLimited(Some(3_000)));
        assert_eq!(classify(429, &json!({}), None), Refused::RateLimited(None));
        assert_eq!(classify(400, &error(131047), None), Refused::OutsideWindow);
        assert_eq!(classify(500, &error(1), None), Refused::Transient);
        assert_eq!(classify(400, &error(100), None), Refused::Permanent);
        assert_eq!(error_detail(&error(100)), "m (code 100)");
        assert_eq!(sent_message_id(&json!({"messages": [{"id": "wamid.X"}]})).as_deref(), Some("wamid.X"));
    }

    #[test]
    fn bodies_name_the_person_and_quote_when_asked() {
        let text = text_body("4915100", "hello", Some("wamid.A1"));
        assert_eq!((text["to"].clone(), text["type"].clone()), (json!("4915100"), json!("text")));
        assert_eq!(text["text"], json!({"preview_url": false, "body": "hello"}));
        assert_eq!(text["context"]["message_id"], "wamid.A1");
        assert!(text_body("1", "x", None).get("context").is_none());
        let document = media_body("1", "M1", false, "summary.csv", "here", None);
        assert_eq!(document["document"], json!({"id": "M1", "caption": "here", "filename": "summary.csv"}));
        assert_eq!(media_body("1", "M1", true, "a.png", "", None)["type"], "image");
        assert_eq!(typing_body("wamid.A1")["typing_indicator"]["type"], "text");
        assert_eq!(reaction_body("1", "wamid.A1", "👍")["reaction"]["emoji"], "👍");
        assert_eq!(media_path("1479537139650973").as_deref(), Some("/1479537139650973"));
        assert_eq!(media_path("../me"), None);
    }

    #[test]
    fn media_is_fetched_only_from_metas_media_host_or_the_configured_api() {
        use crate::files::rules::is_platform_file_url;
        let base = "https://graph.facebook.com/v21.0";
        let url = "https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1479537139650973&ext=1";
        assert!(is_platform_file_url(url, MEDIA_HOSTS, base));
        assert!(is_platform_file_url("http://127.0.0.1:9/media-download/1", MEDIA_HOSTS, "http://127.0.0.1:9/v21.0"));
        for refused in ["https://evil.example/x", "http://lookaside.fbsbx.com/x", "https://u:p@lookaside.fbsbx.com/x"] {
            assert!(!is_platform_file_url(refused, MEDIA_HOSTS, base), "{refused}");
        }
    }
}
