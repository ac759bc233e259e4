//! The plain webhook (pure): how any system without an adapter talks to the
//! agent. It POSTs signed JSON to `/webhooks/plain` (a message, or a press of
//! a button it was sent); replies go back, signed the same way, as JSON
//! POSTed to the operator's callback URL, each with its piece id as the
//! `Idempotency-Key` so the receiver can drop a repeat.
//!
//! The signature is `X-Edgebot-Signature: t={unix seconds},v1={hex
//! HMAC-SHA256 of "{t}.{body}" keyed with WEBHOOK_SECRET}` (Stripe's scheme,
//! hand-rolled in a few lines over the `hmac` crate: no crate offers it alone).

use hmac::{Hmac, Mac};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::Sha256;
use thiserror::Error;

use crate::approvals::rules::{button_data, Choice, Click, Clicker};
use crate::inbound::{Attachment, Author, Heard, HeardEvent, InboundEvent, ReplyAddress};
use crate::platforms::Platform;
use crate::security::{decode_hex, encode_hex, is_fresh};

/// Replies are split at this many characters.
pub const MESSAGE_LIMIT: usize = 8_000;
/// A longer inbound text is cut on arrival.
pub const INBOUND_TEXT_LIMIT: usize = 32_000;
pub const SIGNATURE_HEADER: &str = "X-Edgebot-Signature";
pub const IDEMPOTENCY_HEADER: &str = "Idempotency-Key";
/// The longest id (delivery, conversation, sender) taken.
pub const ID_LIMIT: usize = 128;
/// Attachments one message may carry.
pub const ATTACHMENTS_LIMIT: usize = 4;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PlainError {
    #[error("missing webhook signature")]
    MissingSignature,
    #[error("stale webhook request")]
    Stale,
    #[error("invalid webhook signature")]
    WrongSignature,
    #[error("malformed webhook request: {0}")]
    Malformed(String),
}

fn mac(secret: &str, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The signature header for `body` sent at `timestamp` (Unix seconds).
pub fn sign(body: &[u8], timestamp: i64, secret: &str) -> String {
    let timestamp = timestamp.to_string();
    format!("t={timestamp},v1={}", encode_hex(mac(secret, &timestamp, body).finalize().into_bytes()))
}

/// Checks a signature header: present, fresh (five minutes either way),
/// and the HMAC of this body, compared in constant time. An unset secret
/// accepts nothing.
pub fn verify(header: Option<&str>, body: &[u8], secret: &str, now_secs: i64) -> Result<(), PlainError> {
    let header = header.ok_or(PlainError::MissingSignature)?;
    let field = |name: &str| header.split(',').find_map(|part| part.trim().strip_prefix(name));
    let (Some(timestamp), Some(signature)) = (field("t="), field("v1=")) else {
        return Err(PlainError::MissingSignature);
    };
    if !is_fresh(timestamp, now_secs) {
        return Err(PlainError::Stale);
    }
    let presented = decode_hex(signature).ok_or(PlainError::WrongSignature)?;
    if secret.is_empty() {
        return Err(PlainError::WrongSignature);
    }
    // `verify_slice` compares in constant time.
    mac(secret, timestamp, body).verify_slice(&presented).map_err(|_| PlainError::WrongSignature)
}

#[derive(Debug, Deserialize)]
struct Request {
    id: String,
    conversation: String,
    sender: Sender,
    #[serde(default)]
    text: String,
    #[serde(default)]
    attachments: Vec<RequestAttachment>,
    /// A press of a button the callback was sent: its id.
    #[serde(default)]
    button: Option<String>,
    /// The sender changed the text of their message `message` (its `id`).
    #[serde(default)]
    edit: Option<Change>,
    /// The sender's message `message` was deleted.
    #[serde(default)]
    delete: Option<Change>,
    /// The sender reacted to the bot's message `message` (a reply's id) with `emoji`.
    #[serde(default)]
    reaction: Option<Change>,
}

#[derive(Debug, Deserialize)]
struct Change {
    message: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    emoji: String,
}

#[derive(Debug, Deserialize)]
struct Sender {
    id: String,
    #[serde(default)]
    name: String,
}

#[derive(Debug, Deserialize)]
struct RequestAttachment {
    url: String,
    /// The sending system's id for the file (else one made from the delivery's).
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    size: Option<u64>,
}

/// What a request asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plain {
    Message(Box<InboundEvent>),
    Press(Click),
    /// An edit, a deletion or a reaction.
    Heard(HeardEvent),
}

/// Whether `id` may stand in a key: 1 to [`ID_LIMIT`] of `A-Z a-z 0-9 . _ -`
/// (no `:`, which separates a key's parts).
pub fn is_id(id: &str) -> bool {
    (1..=ID_LIMIT).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// The conversation key of a conversation the sending system names.
pub fn conversation_key(conversation: &str) -> String {
    format!("{}:{conversation}", Platform::Webhook.as_str())
}

/// Reads a (verified) request: a message, or a button pressed.
pub fn parse(body: &[u8], now_ms: i64) -> Result<Plain, PlainError> {
    let request: Request = serde_json::from_slice(body).map_err(|error| PlainError::Malformed(error.to_string()))?;
    for (what, id) in [("id", &request.id), ("conversation", &request.conversation), ("sender.id", &request.sender.id)]
    {
        if !is_id(id) {
            return Err(PlainError::Malformed(format!("{what} must be 1-{ID_LIMIT} of A-Z a-z 0-9 . _ -")));
        }
    }
    let key = conversation_key(&request.conversation);
    let name = if request.sender.name.trim().is_empty() { request.sender.id.clone() } else { request.sender.name };
    if let Some(data) = request.button {
        let clicker = Clicker { platform: Platform::Webhook.as_str().into(), user_id: request.sender.id, name };
        return Ok(Plain::Press(Click { clicker, data, conversation: key, answer_to: Some(request.id) }));
    }
    let author = Author { id: request.sender.id.clone(), name: name.clone(), is_bot: false };
    let heard = match (request.edit, request.delete, request.reaction) {
        (Some(edit), None, None) => Some((edit.message, Heard::Edit { text: edit.text })),
        (None, Some(delete), None) => Some((delete.message, Heard::Delete)),
        (None, None, Some(reaction)) if !reaction.emoji.trim().is_empty() => {
            Some((reaction.message, Heard::Reaction { emoji: reaction.emoji, added: true }))
        }
        (None, None, None) => None,
        _ => return Err(PlainError::Malformed("one of edit, delete or reaction (with an emoji) at a time".into())),
    };
    if let Some((message_id, heard)) = heard {
        if message_id.is_empty() || message_id.len() > ID_LIMIT {
            return Err(PlainError::Malformed(format!("the message changed must be 1-{ID_LIMIT} characters")));
        }
        let author = Some(author);
        return Ok(Plain::Heard(HeardEvent {
            conversation_key: key,
            delivery_id: request.id,
            message_id,
            author,
            heard,
        }));
    }
    if request.attachments.len() > ATTACHMENTS_LIMIT {
        return Err(PlainError::Malformed(format!("at most {ATTACHMENTS_LIMIT} attachments")));
    }
    let id = request.id.clone();
    let attachments = request.attachments.into_iter().enumerate().map(|(index, attachment)| Attachment {
        kind: "file".into(),
        platform_file_id: attachment.id.filter(|own| is_id(own)).unwrap_or_else(|| format!("{id}-{index}")),
        name: attachment.name,
        size: attachment.size,
        url: Some(attachment.url),
    });
    let address = ReplyAddress::Webhook { conversation: request.conversation };
    let mut event = InboundEvent::new(key, request.id.clone(), request.id, author, request.text, address);
    // A system that calls the webhook addresses the agent, as a direct message does.
    event.is_dm = true;
    event.attachments = attachments.collect();
    event.timestamp_ms = now_ms;
    Ok(Plain::Message(Box::new(event.with_text_capped(INBOUND_TEXT_LIMIT))))
}

/// A reply piece as the callback gets it: its id (also the
/// `Idempotency-Key`), the conversation, the text, what it answers, and an
/// approval's buttons as data (each id comes back as `button` when pressed).
pub fn message_body(
    conversation: &str,
    piece_id: &str,
    text: &str,
    reply_to: Option<&str>,
    approval: Option<&str>,
) -> Value {
    let mut body = json!({ "type": "message", "id": piece_id, "conversation": conversation, "text": text });
    if let Some(reply_to) = reply_to {
        body["reply_to"] = json!(reply_to);
    }
    if let Some(id) = approval {
        let button = |label: &str, choice: Choice| json!({ "id": button_data(choice, id), "label": label });
        body["buttons"] = json!([button("Approve", Choice::Approve), button("Deny", Choice::Deny)]);
    }
    body
}

/// A file piece: the message with the file's name, type and bytes (base64);
/// its text is the caption.
pub fn with_file(mut body: Value, name: &str, content_type: &str, bytes: &[u8]) -> Value {
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    body["file"] = json!({ "name": name, "content_type": content_type, "base64": data });
    body
}

/// A note for one sender alone (a refused press), answering their request.
pub fn note_body(conversation: &str, note_id: &str, to: &str, text: &str, answering: Option<&str>) -> Value {
    json!({ "type": "note", "id": note_id, "conversation": conversation, "to": to, "text": text, "reply_to": answering })
}

/// The message id the receiver gave (its answer's `id`), else the piece's own.
pub fn received_id(answer: &Value, piece_id: &str) -> String {
    answer["id"].as_str().filter(|id| !id.is_empty()).unwrap_or(piece_id).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "whsec-test-1";
    const NOW: i64 = 1_800_000_000;

    #[test]
    fn a_signature_covers_the_time_and_the_body_within_five_minutes() {
        let body = br#"{"id":"d1"}"#;
        let header = sign(body, NOW, SECRET);
        assert!(header.starts_with(&format!("t={NOW},v1=")), "{header}");
        assert_eq!(verify(Some(&header), body, SECRET, NOW + 299), Ok(()));
        assert_eq!(verify(Some(&header), body, SECRET, NOW + 301), Err(PlainError::Stale));
        assert_eq!(verify(Some(&header), body, SECRET, NOW - 301), Err(PlainError::Stale));
        assert_eq!(verify(None, body, SECRET, NOW), Err(PlainError::MissingSignature));
        assert_eq!(verify(Some("v1=00"), body, SECRET, NOW), Err(PlainError::MissingSignature));
        assert_eq!(verify(Some(&header), br#"{"id":"d2"}"#, SECRET, NOW), Err(PlainError::WrongSignature));
        assert_eq!(verify(Some(&sign(body, NOW, "other")), body, SECRET, NOW), Err(PlainError::WrongSignature));
        // The time is signed: moving it breaks the signature.
        let moved = header.replace(&format!("t={NOW}"), &format!("t={}", NOW + 1));
        assert_eq!(verify(Some(&moved), body, SECRET, NOW), Err(PlainError::WrongSignature));
        assert_eq!(verify(Some(&sign(body, NOW, "")), body, "", NOW), Err(PlainError::WrongSignature), "unset");
    }

    #[test]
    fn a_message_names_its_conversation_sender_and_files() {
        let body = json!({"id": "d-1", "conversation": "orders-42", "sender": {"id": "alice", "name": "Alice"},
            "text": "where is my order?", "attachments": [{"url": "https://files.example/a.csv", "name": "a.csv"}]});
        let Ok(Plain::Message(event)) = parse(body.to_string().as_bytes(), 7) else { panic!("a message") };
        assert_eq!(event.conversation_key, "webhook:orders-42");
        assert_eq!(
            (event.delivery_id.as_str(), event.author.id.as_str(), event.author.name.as_str()),
            ("d-1", "alice", "Alice")
        );
        assert!(event.is_dm);
        assert_eq!(event.reply_address, ReplyAddress::Webhook { conversation: "orders-42".into() });
        assert_eq!(event.attachments[0].url.as_deref(), Some("https://files.example/a.csv"));
        assert_eq!(event.attachments[0].platform_file_id, "d-1-0");
        assert_eq!(event.timestamp_ms, 7);
    }

    #[test]
    fn a_button_is_a_press_and_bad_ids_are_refused() {
        let body =
            json!({"id": "d-2", "conversation": "c1", "sender": {"id": "bob"}, "button": "approve:0123456789abcdef"});
        let Ok(Plain::Press(click)) = parse(body.to_string().as_bytes(), 0) else { panic!("a press") };
        assert_eq!((click.clicker.platform.as_str(), click.clicker.user_id.as_str()), ("webhook", "bob"));
        assert_eq!((click.data.as_str(), click.conversation.as_str()), ("approve:0123456789abcdef", "webhook:c1"));
        for bad in [
            json!({"id": "", "conversation": "c", "sender": {"id": "a"}}),
            json!({"id": "d", "conversation": "c:d", "sender": {"id": "a"}}),
            json!({"id": "d", "conversation": "c", "sender": {"id": "a b"}}),
            json!({"id": "d", "conversation": "x".repeat(129), "sender": {"id": "a"}}),
            json!({"conversation": "c", "sender": {"id": "a"}}),
        ] {
            assert!(matches!(parse(bad.to_string().as_bytes(), 0), Err(PlainError::Malformed(_))), "{bad}");
        }
    }

    #[test]
    fn replies_carry_their_id_and_buttons_as_data() {
        let body = message_body("c1", "webhook:c1/7:0", "Approve?", None, Some("0123456789abcdef"));
        assert_eq!(body["buttons"][0], json!({"id": "approve:0123456789abcdef", "label": "Approve"}));
        assert_eq!(body["buttons"][1]["id"], "deny:0123456789abcdef");
        assert_eq!((body["id"].clone(), body["type"].clone()), (json!("webhook:c1/7:0"), json!("message")));
        assert!(message_body("c1", "p", "hi", None, None).get("buttons").is_none());
        let file = with_file(message_body("c1", "p", "here", None, None), "s.csv", "text/csv", b"a,b");
        assert_eq!(file["file"], json!({"name": "s.csv", "content_type": "text/csv", "base64": "YSxi"}));
        assert_eq!(received_id(&json!({"id": "m9"}), "p"), "m9");
        assert_eq!(received_id(&json!({}), "p"), "p");
        assert_eq!(note_body("c1", "n", "bob", "no", Some("d-2"))["to"], "bob");
    }

    #[test]
    fn edits_deletions_and_reactions_are_heard_one_at_a_time() {
        let request = |change: Value| {
            let mut body = json!({ "id": "d9", "conversation": "orders-42", "sender": { "id": "crm", "name": "CRM" } });
            body.as_object_mut().unwrap().extend(change.as_object().unwrap().clone());
            parse(body.to_string().as_bytes(), 0)
        };
        let Ok(Plain::Heard(edit)) = request(json!({ "edit": { "message": "d1", "text": "new words" } })) else {
            panic!("an edit")
        };
        assert_eq!((edit.message_id.as_str(), edit.delivery_id.as_str()), ("d1", "d9"));
        assert_eq!(edit.heard, Heard::Edit { text: "new words".into() });
        assert_eq!(edit.conversation_key, "webhook:orders-42");
        let Ok(Plain::Heard(delete)) = request(json!({ "delete": { "message": "d2" } })) else { panic!("a deletion") };
        assert_eq!(delete.heard, Heard::Delete);
        let Ok(Plain::Heard(reaction)) = request(json!({ "reaction": { "message": "p-1", "emoji": "👍" } })) else {
            panic!("a reaction")
        };
        assert_eq!(reaction.heard, Heard::Reaction { emoji: "👍".into(), added: true });
        for bad in [
            json!({ "reaction": { "message": "p-1" } }),
            json!({ "edit": { "message": "d1" }, "delete": { "message": "d1" } }),
            json!({ "delete": { "message": "" } }),
        ] {
            assert!(matches!(request(bad.clone()), Err(PlainError::Malformed(_))), "{bad}");
        }
    }
}
