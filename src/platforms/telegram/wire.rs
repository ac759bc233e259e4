//! Telegram Bot API: webhook verification, update parsing, outbound calls.

use serde::Deserialize;
use serde_json::{json, Value};
use thiserror::Error;

use crate::approvals::rules::{Click, Clicker};
use crate::inbound::{Attachment, Author, Heard, HeardEvent, InboundEvent, ReplyAddress};
use crate::platforms::Platform;
use crate::security::constant_time_eq;

/// Telegram's limit on one message's text.
pub const MESSAGE_LIMIT: usize = 4096;
/// The longest text a Telegram message can carry; a longer one is cut on arrival.
pub const INBOUND_TEXT_LIMIT: usize = 4096;

/// The header Telegram sends with the secret given to `setWebhook`.
pub const SECRET_HEADER: &str = "X-Telegram-Bot-Api-Secret-Token";

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TelegramError {
    #[error("missing Telegram secret token")]
    MissingSecret,
    #[error("invalid Telegram secret token")]
    WrongSecret,
    #[error("malformed Telegram update: {0}")]
    Malformed(String),
}

/// Checks the webhook's secret token header. An unconfigured secret rejects
/// everything, so a forgotten setting never opens the webhook to anyone.
pub fn verify_secret(header: Option<&str>, configured_secret: &str) -> Result<(), TelegramError> {
    let presented = header.ok_or(TelegramError::MissingSecret)?;
    if configured_secret.is_empty() || !constant_time_eq(presented.as_bytes(), configured_secret.as_bytes()) {
        return Err(TelegramError::WrongSecret);
    }
    Ok(())
}

/// What the bot knows about itself: its user id (the token's prefix) and its
/// @username, used to tell mentions of the bot from mentions of others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotIdentity {
    pub user_id: i64,
    pub username: String,
}

impl BotIdentity {
    /// The bot's user id is the part of the token before the colon.
    pub fn from_token(token: &str, username: &str) -> Self {
        let user_id = token.split(':').next().and_then(|id| id.parse().ok()).unwrap_or(0);
        BotIdentity { user_id, username: username.trim_start_matches('@').to_string() }
    }
}

/// What a webhook update turned into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParsedUpdate {
    Message(Box<InboundEvent>),
    /// A button of an inline keyboard pressed (a callback query).
    Click(Box<Click>),
    /// An edit or a reaction (Telegram tells bots of no deletion).
    Heard(Box<HeardEvent>),
    /// Acknowledged and dropped, with the reason (for logs).
    Ignored(&'static str),
}

/// The updates `setWebhook` asks for (`allowed_updates`): reactions come
/// only when asked for by name.
pub const ALLOWED_UPDATES: [&str; 4] = ["message", "edited_message", "message_reaction", "callback_query"];

#[derive(Debug, Deserialize)]
struct Update {
    update_id: i64,
    #[serde(default)]
    message: Option<Message>,
    /// Read leniently: an edit of an unreadable shape is ignored, not an error.
    #[serde(default)]
    edited_message: Option<Value>,
    #[serde(default)]
    message_reaction: Option<Value>,
    #[serde(default)]
    callback_query: Option<CallbackQuery>,
}

#[derive(Debug, Deserialize)]
struct CallbackQuery {
    id: String,
    from: User,
    #[serde(default)]
    message: Option<CallbackMessage>,
    #[serde(default)]
    data: Option<String>,
}

/// The message a pressed button is under (only its chat is read).
#[derive(Debug, Deserialize)]
struct CallbackMessage {
    chat: Chat,
}

#[derive(Debug, Deserialize)]
struct Message {
    message_id: i64,
    #[serde(default)]
    from: Option<User>,
    chat: Chat,
    date: i64,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    caption: Option<String>,
    #[serde(default)]
    entities: Vec<Entity>,
    #[serde(default)]
    caption_entities: Vec<Entity>,
    #[serde(default)]
    reply_to_message: Option<Box<Message>>,
    #[serde(default)]
    message_thread_id: Option<i64>,
    #[serde(default)]
    is_topic_message: bool,
    #[serde(default)]
    photo: Vec<FileRef>,
    #[serde(default)]
    document: Option<FileRef>,
    #[serde(default)]
    voice: Option<FileRef>,
    #[serde(default)]
    audio: Option<FileRef>,
}

/// A change to the reactions on a message (`MessageReactionUpdated`).
#[derive(Debug, Deserialize)]
struct ReactionUpdate {
    chat: Chat,
    message_id: i64,
    /// Absent for an anonymous reaction (then `actor_chat`): not taken.
    #[serde(default)]
    user: Option<User>,
    #[serde(default)]
    old_reaction: Vec<Reaction>,
    #[serde(default)]
    new_reaction: Vec<Reaction>,
}

/// `ReactionType`: an emoji, a custom emoji or a paid star.
#[derive(Debug, Deserialize, PartialEq)]
struct Reaction {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    emoji: Option<String>,
}

#[derive(Debug, Deserialize)]
struct User {
    id: i64,
    #[serde(default)]
    is_bot: bool,
    #[serde(default)]
    first_name: String,
    #[serde(default)]
    last_name: Option<String>,
    #[serde(default)]
    username: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Chat {
    id: i64,
    #[serde(rename = "type")]
    kind: String,
    /// Groups and channels have a title; private chats name the person.
    #[serde(default)]
    title: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Entity {
    #[serde(rename = "type")]
    kind: String,
    offset: usize,
    length: usize,
    #[serde(default)]
    user: Option<User>,
}

#[derive(Debug, Deserialize)]
struct FileRef {
    file_id: String,
    #[serde(default)]
    file_name: Option<String>,
    #[serde(default)]
    file_size: Option<u64>,
}

/// Parses a webhook body into an inbound event. Only malformed JSON is an
/// error; updates without a usable message are acknowledged and ignored.
pub fn parse_update(body: &[u8], bot: &BotIdentity) -> Result<ParsedUpdate, TelegramError> {
    let update: Update = serde_json::from_slice(body).map_err(|error| TelegramError::Malformed(error.to_string()))?;
    if let Some(query) = update.callback_query {
        return Ok(click_of(query));
    }
    if let Some(reaction) = update.message_reaction {
        return Ok(match serde_json::from_value(reaction) {
            Ok(reaction) => reaction_of(update.update_id, reaction, bot),
            Err(_) => ParsedUpdate::Ignored("a reaction update edgebot cannot read"),
        });
    }
    if let Some(edited) = update.edited_message {
        return Ok(match serde_json::from_value(edited) {
            Ok(edited) => edit_of(update.update_id, edited, bot),
            Err(_) => ParsedUpdate::Ignored("an edit edgebot cannot read"),
        });
    }
    let Some(message) = update.message else {
        return Ok(ParsedUpdate::Ignored("update carries no new message"));
    };
    let Some(from) = message.from.as_ref() else {
        return Ok(ParsedUpdate::Ignored("message has no author"));
    };
    if from.id == bot.user_id {
        return Ok(ParsedUpdate::Ignored("the bot's own message"));
    }

    let (text, entities) = match (&message.text, &message.caption) {
        (Some(text), _) => (text.clone(), &message.entities),
        (None, Some(caption)) => (caption.clone(), &message.caption_entities),
        (None, None) => (String::new(), &message.entities),
    };
    let attachments = attachments_of(&message);
    if text.trim().is_empty() && attachments.is_empty() {
        return Ok(ParsedUpdate::Ignored("message has neither text nor a file"));
    }

    let (is_bot_mention, mentions_others) = classify_mentions(&text, entities, bot);
    let (reply_to_bot_message_id, reply_to_other_message_id) = match &message.reply_to_message {
        // In forums every message "replies" to the topic's first message; that is not a reply.
        Some(parent) if message.is_topic_message && Some(parent.message_id) == message.message_thread_id => {
            (None, None)
        }
        Some(parent) => match &parent.from {
            Some(author) if author.id == bot.user_id => (Some(parent.message_id.to_string()), None),
            _ => (None, Some(parent.message_id.to_string())),
        },
        None => (None, None),
    };
    let topic_id = message.message_thread_id.filter(|_| message.is_topic_message);
    let conversation_key = match topic_id {
        Some(topic) => format!("telegram:{}:{topic}", message.chat.id),
        None => format!("telegram:{}", message.chat.id),
    };

    Ok(ParsedUpdate::Message(Box::new(
        InboundEvent {
            conversation_key,
            delivery_id: update.update_id.to_string(),
            message_id: message.message_id.to_string(),
            author: Author { id: from.id.to_string(), name: display_name(from), is_bot: from.is_bot },
            text,
            is_dm: message.chat.kind == "private",
            is_command: false,
            is_bot_mention,
            mentions_others,
            reply_to_bot_message_id,
            reply_to_other_message_id,
            reply_is_thread_root: false,
            thread: topic_id.map(|topic| topic.to_string()),
            attachments,
            conversation_title: message.chat.title.clone().or_else(|| Some(display_name(from))),
            timestamp_ms: message.date.saturating_mul(1000),
            reply_address: ReplyAddress::Telegram { chat_id: message.chat.id, topic_id, agent: None },
        }
        .with_text_capped(INBOUND_TEXT_LIMIT),
    )))
}

/// The conversation a message belongs to (a forum topic is its own).
fn conversation_of(message: &Message) -> String {
    match message.message_thread_id.filter(|_| message.is_topic_message) {
        Some(topic) => format!("telegram:{}:{topic}", message.chat.id),
        None => format!("telegram:{}", message.chat.id),
    }
}

/// An edited message: its new text (or caption) replaces the old.
fn edit_of(update_id: i64, message: Message, bot: &BotIdentity) -> ParsedUpdate {
    let Some(from) = message.from.as_ref().filter(|from| from.id != bot.user_id) else {
        return ParsedUpdate::Ignored("an edit by no one or by the bot");
    };
    let Some(text) = message.text.clone().or_else(|| message.caption.clone()) else {
        return ParsedUpdate::Ignored("an edit with no text");
    };
    let capped: String = text.chars().take(INBOUND_TEXT_LIMIT).collect();
    ParsedUpdate::Heard(Box::new(HeardEvent {
        conversation_key: conversation_of(&message),
        delivery_id: update_id.to_string(),
        message_id: message.message_id.to_string(),
        author: Some(Author { id: from.id.to_string(), name: display_name(from), is_bot: from.is_bot }),
        heard: Heard::Edit { text: capped },
    }))
}

/// A reaction changed: the first emoji added (or, none added, taken back).
/// Telegram does not say whose message it is; the channel knows its own.
fn reaction_of(update_id: i64, update: ReactionUpdate, bot: &BotIdentity) -> ParsedUpdate {
    let Some(user) = update.user.as_ref().filter(|user| user.id != bot.user_id) else {
        return ParsedUpdate::Ignored("an anonymous reaction or the bot's own");
    };
    let emoji = |list: &[Reaction], other: &[Reaction]| {
        list.iter().filter(|reaction| !other.contains(reaction)).find_map(|reaction| match reaction.kind.as_str() {
            "emoji" => reaction.emoji.clone(),
            kind => Some(format!("({kind})")),
        })
    };
    let (emoji, added) = match emoji(&update.new_reaction, &update.old_reaction) {
        Some(emoji) => (emoji, true),
        None => match emoji(&update.old_reaction, &update.new_reaction) {
            Some(emoji) => (emoji, false),
            None => return ParsedUpdate::Ignored("a reaction update that changes nothing"),
        },
    };
    ParsedUpdate::Heard(Box::new(HeardEvent {
        conversation_key: format!("telegram:{}", update.chat.id),
        delivery_id: update_id.to_string(),
        message_id: update.message_id.to_string(),
        author: Some(Author { id: user.id.to_string(), name: display_name(user), is_bot: user.is_bot }),
        heard: Heard::Reaction { emoji, added },
    }))
}

/// A button pressed: who pressed it, under which chat's message.
fn click_of(query: CallbackQuery) -> ParsedUpdate {
    let Some(chat) = query.message.map(|message| message.chat) else {
        return ParsedUpdate::Ignored("a button under no message edgebot can see");
    };
    let name = [Some(query.from.first_name.clone()), query.from.username.clone()]
        .into_iter()
        .flatten()
        .find(|name| !name.is_empty())
        .unwrap_or_else(|| query.from.id.to_string());
    ParsedUpdate::Click(Box::new(Click {
        clicker: Clicker { platform: Platform::Telegram.as_str().into(), user_id: query.from.id.to_string(), name },
        data: query.data.unwrap_or_default(),
        conversation: format!("telegram:{}", chat.id),
        answer_to: Some(query.id),
    }))
}

fn display_name(user: &User) -> String {
    let full = match &user.last_name {
        Some(last) => format!("{} {last}", user.first_name),
        None => user.first_name.clone(),
    };
    match (&user.username, full.trim().is_empty()) {
        (Some(username), true) => username.clone(),
        _ => full,
    }
}

fn attachments_of(message: &Message) -> Vec<Attachment> {
    // Telegram lists photo sizes smallest first; the last is the original.
    let files = [
        ("photo", message.photo.last()),
        ("document", message.document.as_ref()),
        ("voice", message.voice.as_ref()),
        ("audio", message.audio.as_ref()),
    ];
    files
        .into_iter()
        .filter_map(|(kind, file)| {
            let file = file?;
            Some(Attachment {
                kind: kind.into(),
                platform_file_id: file.file_id.clone(),
                name: file.file_name.clone(),
                size: file.file_size,
                url: None,
            })
        })
        .collect()
}

/// Returns (mentions the bot, mentions someone else). Entity offsets count
/// UTF-16 code units, as Telegram documents.
fn classify_mentions(text: &str, entities: &[Entity], bot: &BotIdentity) -> (bool, bool) {
    let utf16: Vec<u16> = text.encode_utf16().collect();
    let mut mentions_bot = false;
    let mut mentions_others = false;
    for entity in entities {
        let is_bot = match entity.kind.as_str() {
            "mention" => {
                let end = entity.offset.saturating_add(entity.length).min(utf16.len());
                let start = entity.offset.min(end);
                let handle = String::from_utf16_lossy(&utf16[start..end]);
                !bot.username.is_empty() && handle.trim_start_matches('@').eq_ignore_ascii_case(&bot.username)
            }
            "text_mention" => entity.user.as_ref().is_some_and(|user| user.id == bot.user_id),
            _ => continue,
        };
        if is_bot {
            mentions_bot = true;
        } else {
            mentions_others = true;
        }
    }
    (mentions_bot, mentions_others && !mentions_bot)
}

/// The `sendMessage` body for one piece of a reply.
pub fn send_message_body(address: &ReplyAddress, text: &str, reply_to_message_id: Option<&str>) -> Value {
    let mut body = json!({ "text": text });
    if let ReplyAddress::Telegram { chat_id, topic_id, .. } = address {
        body["chat_id"] = json!(chat_id);
        if let Some(topic) = topic_id {
            body["message_thread_id"] = json!(topic);
        }
    }
    if let Some(message_id) = reply_to_message_id.and_then(|id| id.parse::<i64>().ok()) {
        body["reply_parameters"] = json!({ "message_id": message_id, "allow_sending_without_reply": true });
    }
    body
}

/// Approve and Deny under a message: an inline keyboard whose buttons carry
/// [`crate::approvals::rules::button_data`] back as callback queries.
pub fn approval_keyboard(approval_id: &str) -> Value {
    use crate::approvals::rules::{button_data, Choice};
    json!({ "inline_keyboard": [[
        { "text": "Approve", "callback_data": button_data(Choice::Approve, approval_id) },
        { "text": "Deny", "callback_data": button_data(Choice::Deny, approval_id) },
    ]] })
}

/// The chat and message of a message this bot sent: the body of
/// `deleteMessage`, and of `editMessageText` with the new `text` added.
pub fn message_ref(address: &ReplyAddress, message_id: &str) -> Option<Value> {
    let ReplyAddress::Telegram { chat_id, .. } = address else {
        return None;
    };
    let message_id = message_id.parse::<i64>().ok()?;
    Some(json!({ "chat_id": chat_id, "message_id": message_id }))
}

/// Telegram refuses an edit to the text a message already shows; for us the
/// edit is done.
pub fn is_not_modified(description: &str) -> bool {
    description.contains("message is not modified")
}

/// The message id Telegram gave a sent message, from its `{"ok":true,"result":{...}}` answer.
pub fn sent_message_id(answer: &Value) -> Option<String> {
    answer.get("result")?.get("message_id")?.as_i64().map(|id| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heard(body: serde_json::Value) -> ParsedUpdate {
        let bot = BotIdentity::from_token("4242:token", "edgebot");
        parse_update(body.to_string().as_bytes(), &bot).unwrap()
    }

    #[test]
    fn an_edited_message_is_heard_as_an_edit_by_its_author() {
        let body = json!({"update_id": 9, "edited_message": {"message_id": 5, "date": 1, "edit_date": 2,
            "chat": {"id": 77, "type": "private"}, "from": {"id": 7, "first_name": "Ann"}, "text": "new text"}});
        let ParsedUpdate::Heard(event) = heard(body) else { panic!("an edit is heard") };
        assert_eq!(
            (event.conversation_key.as_str(), event.delivery_id.as_str(), event.message_id.as_str()),
            ("telegram:77", "9", "5")
        );
        assert_eq!(event.author.unwrap().id, "7");
        assert_eq!(event.heard, Heard::Edit { text: "new text".into() });
        let by_bot = json!({"update_id": 10, "edited_message": {"message_id": 5, "date": 1,
            "chat": {"id": 77, "type": "private"}, "from": {"id": 4242, "first_name": "bot"}, "text": "x"}});
        assert!(matches!(heard(by_bot), ParsedUpdate::Ignored(_)));
    }

    #[test]
    fn a_reaction_update_is_heard_as_the_emoji_added_or_taken_back() {
        let reaction = |old: serde_json::Value, new: serde_json::Value| {
            json!({"update_id": 11, "message_reaction": {
            "chat": {"id": -5, "type": "group"}, "message_id": 3, "date": 1, "user": {"id": 7, "first_name": "Ann"},
            "old_reaction": old, "new_reaction": new}})
        };
        let thumbs = json!([{"type": "emoji", "emoji": "👍"}]);
        let ParsedUpdate::Heard(added) = heard(reaction(json!([]), thumbs.clone())) else { panic!("heard") };
        assert_eq!(added.heard, Heard::Reaction { emoji: "👍".into(), added: true });
        assert_eq!(added.conversation_key, "telegram:-5");
        let ParsedUpdate::Heard(removed) = heard(reaction(thumbs.clone(), json!([]))) else { panic!("heard") };
        assert_eq!(removed.heard, Heard::Reaction { emoji: "👍".into(), added: false });
        assert!(matches!(heard(reaction(thumbs.clone(), thumbs)), ParsedUpdate::Ignored(_)));
        let anonymous = json!({"update_id": 12, "message_reaction": {"chat": {"id": -5, "type": "group"},
            "message_id": 3, "date": 1, "actor_chat": {"id": -5, "type": "group"}, "old_reaction": [],
            "new_reaction": [{"type": "emoji", "emoji": "👍"}]}});
        assert!(matches!(heard(anonymous), ParsedUpdate::Ignored(_)));
    }

    #[test]
    fn the_webhook_asks_for_what_it_parses_and_deploy_asks_for_the_same() {
        let deploy = include_str!("../../../scripts/deploy.mjs");
        let quoted: Vec<String> = ALLOWED_UPDATES.iter().map(|name| format!("\"{name}\"")).collect();
        assert!(deploy.contains(&format!("const TELEGRAM_UPDATES = [{}];", quoted.join(", "))));
    }

    #[test]
    fn an_edit_names_the_chat_and_the_message_and_refuses_what_is_not_telegram() {
        let chat = ReplyAddress::Telegram { chat_id: -10042, topic_id: Some(7), agent: None };
        assert_eq!(message_ref(&chat, "512").unwrap(), json!({ "chat_id": -10042, "message_id": 512 }));
        assert_eq!(message_ref(&chat, "not-a-number"), None);
        let slack = ReplyAddress::Slack { channel: "C1".into(), thread_ts: None, team: None };
        assert_eq!(message_ref(&slack, "512"), None);
        assert!(is_not_modified(
            "Bad Request: message is not modified: specified new message content and reply markup are exactly the same"
        ));
        assert!(!is_not_modified("Bad Request: message to edit not found"));
    }

    fn bot() -> BotIdentity {
        BotIdentity::from_token("4242:secret-part", "edge_bot")
    }

    fn parse(body: Value) -> ParsedUpdate {
        parse_update(body.to_string().as_bytes(), &bot()).expect("valid JSON")
    }

    fn message_of(parsed: ParsedUpdate) -> InboundEvent {
        match parsed {
            ParsedUpdate::Message(event) => *event,
            other => panic!("not a message: {other:?}"),
        }
    }

    #[test]
    fn a_pressed_button_is_a_click_in_its_chat_and_the_keyboard_carries_the_approval() {
        let keyboard = approval_keyboard("0123456789abcdef");
        assert_eq!(keyboard["inline_keyboard"][0][0]["callback_data"], "approve:0123456789abcdef");
        assert_eq!(keyboard["inline_keyboard"][0][1]["callback_data"], "deny:0123456789abcdef");
        let update = json!({"update_id": 9, "callback_query": {"id": "cq1", "from": {"id": 42, "first_name": "Ada"},
            "message": {"message_id": 5, "date": 1, "chat": {"id": -100, "type": "group"}}, "data": "deny:0123456789abcdef"}});
        let ParsedUpdate::Click(click) = parse(update) else { panic!("not a click") };
        assert_eq!((click.clicker.platform.as_str(), click.clicker.user_id.as_str()), ("telegram", "42"));
        assert_eq!((click.data.as_str(), click.conversation.as_str()), ("deny:0123456789abcdef", "telegram:-100"));
        assert_eq!(click.answer_to.as_deref(), Some("cq1"));
        let unseen = json!({"update_id": 9, "callback_query": {"id": "cq2", "from": {"id": 42, "first_name": "Ada"}}});
        assert!(matches!(parse(unseen), ParsedUpdate::Ignored(_)));
    }

    #[test]
    fn the_secret_must_be_present_and_exact() {
        assert_eq!(verify_secret(None, "s3"), Err(TelegramError::MissingSecret));
        assert_eq!(verify_secret(Some("s4"), "s3"), Err(TelegramError::WrongSecret));
        assert_eq!(verify_secret(Some(""), ""), Err(TelegramError::WrongSecret));
        assert_eq!(verify_secret(Some("s3"), "s3"), Ok(()));
    }

    #[test]
    fn bot_identity_comes_from_the_token() {
        assert_eq!(bot().user_id, 4242);
        assert_eq!(BotIdentity::from_token("garbage", "@x").username, "x");
    }

    #[test]
    fn a_private_text_message_becomes_a_dm_event() {
        // Shaped like the Bot API's documented Update with a private Message.
        let event = message_of(parse(json!({
            "update_id": 10000,
            "message": {
                "message_id": 1365, "date": 1441645532,
                "from": {"id": 1111111, "is_bot": false, "first_name": "Ada", "last_name": "L", "username": "ada"},
                "chat": {"id": 1111111, "type": "private", "first_name": "Ada"},
                "text": "hello there"
            }
        })));
        assert_eq!(event.conversation_key, "telegram:1111111");
        assert_eq!(event.delivery_id, "10000");
        assert_eq!(event.message_id, "1365");
        assert_eq!(event.author.name, "Ada L");
        assert!(event.is_dm && !event.is_bot_mention && !event.mentions_others);
        assert_eq!(event.timestamp_ms, 1_441_645_532_000);
        assert_eq!(event.reply_address, ReplyAddress::Telegram { chat_id: 1111111, topic_id: None, agent: None });
    }

    #[test]
    fn updates_without_a_message_are_ignored_and_bad_json_is_an_error() {
        assert!(matches!(parse(json!({"update_id": 1, "edited_message": {}})), ParsedUpdate::Ignored(_)));
        assert!(matches!(parse_update(b"{not json", &bot()), Err(TelegramError::Malformed(_))));
        assert!(matches!(parse_update(b"[]", &bot()), Err(TelegramError::Malformed(_))));
    }

    #[test]
    fn group_mentions_and_replies_are_classified() {
        // "hey @edge_bot" — offsets in UTF-16 units, after an emoji that takes two.
        let event = message_of(parse(json!({
            "update_id": 2,
            "message": {
                "message_id": 7, "date": 1,
                "from": {"id": 5, "is_bot": false, "first_name": "Bo"},
                "chat": {"id": -100, "type": "supergroup"},
                "text": "😀 hey @Edge_Bot",
                "entities": [{"type": "mention", "offset": 7, "length": 9}],
                "reply_to_message": {"message_id": 6, "date": 1, "from": {"id": 4242, "is_bot": true, "first_name": "edge"}, "chat": {"id": -100, "type": "supergroup"}}
            }
        })));
        assert!(!event.is_dm);
        assert!(event.is_bot_mention);
        assert!(!event.mentions_others);
        assert_eq!(event.reply_to_bot_message_id.as_deref(), Some("6"));

        let other = message_of(parse(json!({
            "update_id": 3,
            "message": {
                "message_id": 8, "date": 1,
                "from": {"id": 5, "first_name": "Bo"},
                "chat": {"id": -100, "type": "group"},
                "text": "@carol look",
                "entities": [{"type": "mention", "offset": 0, "length": 6}],
                "reply_to_message": {"message_id": 3, "date": 1, "from": {"id": 9, "first_name": "Carol"}, "chat": {"id": -100, "type": "group"}}
            }
        })));
        assert!(other.mentions_others && !other.is_bot_mention);
        assert_eq!(other.reply_to_other_message_id.as_deref(), Some("3"));
    }

    #[test]
    fn forum_topics_are_their_own_conversations() {
        let event = message_of(parse(json!({
            "update_id": 4,
            "message": {
                "message_id": 20, "date": 1, "message_thread_id": 11, "is_topic_message": true,
                "from": {"id": 5, "first_name": "Bo"},
                "chat": {"id": -100, "type": "supergroup"},
                "text": "in a topic",
                "reply_to_message": {"message_id": 11, "date": 1, "chat": {"id": -100, "type": "supergroup"}}
            }
        })));
        assert_eq!(event.conversation_key, "telegram:-100:11");
        assert_eq!(event.reply_to_other_message_id, None);
        assert_eq!(send_message_body(&event.reply_address, "x", None)["message_thread_id"], 11);
    }

    #[test]
    fn the_bots_own_messages_and_empty_messages_are_ignored() {
        let own = json!({"update_id": 5, "message": {"message_id": 1, "date": 1, "from": {"id": 4242, "is_bot": true, "first_name": "e"}, "chat": {"id": 1, "type": "private"}, "text": "hi"}});
        assert!(matches!(parse(own), ParsedUpdate::Ignored(_)));
        let sticker = json!({"update_id": 6, "message": {"message_id": 1, "date": 1, "from": {"id": 1, "first_name": "e"}, "chat": {"id": 1, "type": "private"}, "sticker": {"file_id": "x"}}});
        assert!(matches!(parse(sticker), ParsedUpdate::Ignored(_)));
    }

    #[test]
    fn send_bodies_carry_the_chat_and_an_optional_reply() {
        let address = ReplyAddress::Telegram { chat_id: 77, topic_id: None, agent: None };
        let body = send_message_body(&address, "hi", Some("12"));
        assert_eq!(body["chat_id"], 77);
        assert_eq!(body["text"], "hi");
        assert_eq!(body["reply_parameters"]["message_id"], 12);
        assert!(send_message_body(&address, "hi", None).get("reply_parameters").is_none());
        assert_eq!(sent_message_id(&json!({"ok": true, "result": {"message_id": 99}})).as_deref(), Some("99"));
    }
}
