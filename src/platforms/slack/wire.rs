//! Slack Events API and slash commands: v0 signatures, event parsing, outbound calls.

use hmac::{Hmac, Mac};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::Sha256;
use thiserror::Error;

use crate::approvals::rules::{Click, Clicker};
use crate::inbound::{Author, InboundEvent, ReplyAddress};
use crate::platforms::Platform;
use crate::security::{decode_hex, is_fresh};

/// Slack truncates very long messages; replies are split well before that.
pub const MESSAGE_LIMIT: usize = 12_000;
/// Slack truncates messages past 40,000 characters; a longer text is cut on arrival.
pub const INBOUND_TEXT_LIMIT: usize = 40_000;
pub const SIGNATURE_HEADER: &str = "X-Slack-Signature";
pub const TIMESTAMP_HEADER: &str = "X-Slack-Request-Timestamp";
/// The reaction that shows a turn has started on a message.
pub const WORKING_REACTION: &str = "eyes";

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SlackError {
    #[error("missing Slack signature or timestamp")]
    MissingSignature,
    #[error("stale Slack request timestamp")]
    Stale,
    #[error("invalid Slack signature")]
    WrongSignature,
    #[error("malformed Slack payload: {0}")]
    Malformed(String),
}

/// Checks `X-Slack-Signature` (`v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{body}`)
/// in constant time, and refuses timestamps more than five minutes off.
pub fn verify_signature(
    signature: Option<&str>,
    timestamp: Option<&str>,
    body: &[u8],
    signing_secret: &str,
    now_secs: i64,
) -> Result<(), SlackError> {
    let (Some(signature), Some(timestamp)) = (signature, timestamp) else {
        return Err(SlackError::MissingSignature);
    };
    if !is_fresh(timestamp, now_secs) {
        return Err(SlackError::Stale);
    }
    let presented = signature.strip_prefix("v0=").and_then(decode_hex).ok_or(SlackError::WrongSignature)?;
    if signing_secret.is_empty() {
        return Err(SlackError::WrongSignature);
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(signing_secret.as_bytes()).map_err(|_| SlackError::WrongSignature)?;
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    // `verify_slice` compares in constant time.
    mac.verify_slice(&presented).map_err(|_| SlackError::WrongSignature)
}

/// The signature a request with this body and timestamp must carry (for tools and tests).
pub fn sign(body: &[u8], timestamp: &str, signing_secret: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(signing_secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(format!("v0:{timestamp}:").as_bytes());
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    format!("v0={}", crate::security::encode_hex(digest))
}

/// What a Slack request turned into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParsedSlack {
    /// `url_verification`: answer with the challenge.
    Challenge(String),
    Message(Box<InboundEvent>),
    /// Acknowledged and dropped, with the reason.
    Ignored(&'static str),
}

#[derive(Debug, Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    challenge: Option<String>,
    #[serde(default)]
    team_id: Option<String>,
    #[serde(default)]
    event: Option<Event>,
    #[serde(default)]
    authorizations: Vec<Authorization>,
}

#[derive(Debug, Deserialize)]
struct Authorization {
    #[serde(default)]
    user_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    subtype: Option<String>,
    #[serde(default)]
    channel: Option<String>,
    #[serde(default)]
    channel_type: Option<String>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    bot_id: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    bot_profile: Option<BotProfile>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    ts: Option<String>,
    #[serde(default)]
    thread_ts: Option<String>,
    #[serde(default)]
    parent_user_id: Option<String>,
    #[serde(default)]
    files: Vec<File>,
}

#[derive(Debug, Deserialize)]
struct BotProfile {
    #[serde(default)]
    name: Option<String>,
}

#[derive(Debug, Deserialize)]
struct File {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    filetype: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    url_private_download: Option<String>,
}

/// Message subtypes that are someone saying something; all others (edits,
/// deletions, joins, topic changes) are acknowledged and ignored.
const SPEECH_SUBTYPES: &[&str] = &["bot_message", "thread_broadcast", "file_share", "me_message"];

/// Parses an Events API body. `bot_user_id` is the configured bot user; the
/// payload's own `authorizations` entry wins when present.
pub fn parse_event(body: &[u8], bot_user_id: &str) -> Result<ParsedSlack, SlackError> {
    let envelope: Envelope = serde_json::from_slice(body).map_err(|error| SlackError::Malformed(error.to_string()))?;
    match envelope.kind.as_str() {
        "url_verification" => {
            let challenge = envelope.challenge.ok_or_else(|| SlackError::Malformed("no challenge".into()))?;
            return Ok(ParsedSlack::Challenge(challenge));
        }
        "event_callback" => {}
        _ => return Ok(ParsedSlack::Ignored("not an event callback")),
    }
    let event = envelope.event.ok_or_else(|| SlackError::Malformed("event_callback without event".into()))?;
    let bot_user = envelope.authorizations.iter().find_map(|auth| auth.user_id.clone()).unwrap_or(bot_user_id.into());
    if event.kind != "message" && event.kind != "app_mention" {
        return Ok(ParsedSlack::Ignored("event type is not a message"));
    }
    if event.subtype.as_deref().is_some_and(|subtype| !SPEECH_SUBTYPES.contains(&subtype)) {
        return Ok(ParsedSlack::Ignored("message edit, deletion or membership change"));
    }
    let (Some(channel), Some(ts)) = (event.channel.clone(), event.ts.clone()) else {
        return Err(SlackError::Malformed("message without channel or ts".into()));
    };
    let is_bot = event.bot_id.is_some() || event.subtype.as_deref() == Some("bot_message");
    let author_id = event.user.clone().or(event.bot_id.clone()).unwrap_or_default();
    if !bot_user.is_empty() && author_id == bot_user {
        return Ok(ParsedSlack::Ignored("the bot's own message"));
    }
    let team = envelope.team_id.unwrap_or_default();
    let text = event.text.clone().unwrap_or_default();
    let (is_bot_mention, mentions_others) = classify_mentions(&text, &bot_user);
    let thread = event.thread_ts.clone().filter(|thread| *thread != ts);
    let (reply_to_bot_message_id, reply_to_other_message_id) = match (&thread, &event.parent_user_id) {
        (Some(root), Some(parent)) if *parent == bot_user => (Some(root.clone()), None),
        // Continuing a thread under one's own message is not talking to someone else.
        (Some(_), Some(parent)) if *parent == author_id => (None, None),
        (Some(root), Some(_)) => (None, Some(root.clone())),
        _ => (None, None),
    };
    let conversation_key = match &thread {
        Some(root) => format!("slack:{team}:{channel}:{root}"),
        None => format!("slack:{team}:{channel}"),
    };
    let name = event
        .bot_profile
        .as_ref()
        .and_then(|profile| profile.name.clone())
        .or(event.username.clone())
        .unwrap_or_else(|| author_id.clone());
    let attachments = event.files.iter().filter_map(attachment_of).collect();
    let timestamp_ms = ts.split('.').next().and_then(|secs| secs.parse::<i64>().ok()).unwrap_or(0) * 1000;
    Ok(ParsedSlack::Message(Box::new(
        InboundEvent {
            conversation_key,
            // The message's identity, not the event id: the `message` and
            // `app_mention` events for one message, and every retry of either,
            // share it, so one message is answered once.
            delivery_id: format!("{channel}:{ts}"),
            message_id: ts.clone(),
            author: Author { id: author_id, name, is_bot },
            text,
            is_dm: event.channel_type.as_deref() == Some("im"),
            is_command: false,
            is_bot_mention: is_bot_mention || event.kind == "app_mention",
            mentions_others,
            reply_to_bot_message_id,
            reply_to_other_message_id,
            reply_is_thread_root: true,
            thread: thread.clone(),
            attachments,
            conversation_title: None,
            timestamp_ms,
            reply_address: address(channel, thread, team),
        }
        .with_text_capped(INBOUND_TEXT_LIMIT),
    )))
}

/// Where replies go: the channel, the thread and the workspace (whose token answers).
fn address(channel: String, thread_ts: Option<String>, team: String) -> ReplyAddress {
    ReplyAddress::Slack { channel, thread_ts, team: Some(team).filter(|team| !team.is_empty()) }
}

/// A shared file as an attachment (a file without an id is left out).
fn attachment_of(file: &File) -> Option<crate::inbound::Attachment> {
    Some(crate::inbound::Attachment {
        kind: file.filetype.clone().unwrap_or_else(|| "file".into()),
        platform_file_id: file.id.clone()?,
        name: file.name.clone(),
        size: file.size,
        url: file.url_private_download.clone(),
    })
}

/// Returns (mentions the bot, mentions someone else) from `<@U…>` tokens.
fn classify_mentions(text: &str, bot_user: &str) -> (bool, bool) {
    let mut mentions_bot = false;
    let mut mentions_others = false;
    for token in text.split("<@").skip(1) {
        let Some(end) = token.find('>') else { continue };
        let id = token[..end].split('|').next().unwrap_or_default();
        if !bot_user.is_empty() && id == bot_user {
            mentions_bot = true;
        } else if !id.is_empty() {
            mentions_others = true;
        }
    }
    (mentions_bot, mentions_others && !mentions_bot)
}

/// A slash command (`application/x-www-form-urlencoded`) as an inbound event.
pub fn parse_command(body: &[u8]) -> Result<InboundEvent, SlackError> {
    let fields: Vec<(String, String)> = form_fields(body);
    let field = |name: &str| fields.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone());
    let require = |name: &'static str| field(name).ok_or_else(|| SlackError::Malformed(format!("no {name}")));
    let channel = require("channel_id")?;
    let team = field("team_id").unwrap_or_default();
    let trigger = require("trigger_id")?;
    let user = require("user_id")?;
    let text = field("text").unwrap_or_default();
    let author = Author { name: field("user_name").unwrap_or_else(|| user.clone()), id: user, is_bot: false };
    let is_dm = channel.starts_with('D');
    let event = InboundEvent::new(
        format!("slack:{team}:{channel}"),
        format!("command:{trigger}"),
        trigger,
        author,
        text,
        address(channel, None, team),
    );
    Ok(InboundEvent { is_dm, is_command: true, ..event }.with_text_capped(INBOUND_TEXT_LIMIT))
}

/// A button pressed in Slack (an interactivity payload: the form field
/// `payload`, a `block_actions` JSON). None for a form that is not one (a
/// slash command); an error for a payload edgebot cannot read.
pub fn parse_click(body: &[u8]) -> Option<Result<Click, SlackError>> {
    let payload = form_fields(body).into_iter().find(|(key, _)| key == "payload")?.1;
    let read = || -> Result<Click, SlackError> {
        let payload: Value =
            serde_json::from_str(&payload).map_err(|error| SlackError::Malformed(error.to_string()))?;
        let text = |pointer: &str| payload.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string();
        if text("/type") != "block_actions" {
            return Err(SlackError::Malformed(format!("unhandled interaction `{}`", text("/type"))));
        }
        let user_id = text("/user/id");
        let channel = text("/channel/id");
        if user_id.is_empty() || channel.is_empty() {
            return Err(SlackError::Malformed("a button press without its user or channel".into()));
        }
        let team = payload.pointer("/team/id").or_else(|| payload.pointer("/user/team_id"));
        let name = [text("/user/name"), text("/user/username")].into_iter().find(|name| !name.is_empty());
        Ok(Click {
            clicker: Clicker {
                platform: Platform::Slack.as_str().into(),
                name: name.unwrap_or_else(|| user_id.clone()),
                user_id,
            },
            data: text("/actions/0/value"),
            conversation: format!("slack:{}:{channel}", team.and_then(Value::as_str).unwrap_or_default()),
            answer_to: None,
        })
    };
    Some(read())
}

/// The `type` of an interactivity payload (`block_actions`, `view_submission`…),
/// or None for a form that carries none (a slash command).
pub fn interaction_kind(body: &[u8]) -> Option<String> {
    let payload = form_fields(body).into_iter().find(|(key, _)| key == "payload")?.1;
    let payload: Value = serde_json::from_str(&payload).ok()?;
    payload["type"].as_str().map(str::to_string)
}

/// An `application/x-www-form-urlencoded` body's fields, `+` and `%XX` decoded.
/// A field without `=` is dropped, as before `form_urlencoded` did the decoding.
fn form_fields(body: &[u8]) -> Vec<(String, String)> {
    body.split(|&byte| byte == b'&')
        .filter(|pair| pair.contains(&b'='))
        .flat_map(form_urlencoded::parse)
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect()
}

/// The message-metadata event type that carries a reply piece's id, so a send
/// interrupted by a crash can be looked up before it is sent again.
pub const PIECE_EVENT_TYPE: &str = "edgebot_reply_piece";

/// The `chat.postMessage` body for one piece of a reply (already rendered as
/// mrkdwn, with `<`, `>` and `&` escaped), tagged with its id. `link_names`
/// off and `parse: none` keep Slack from turning names in the text into
/// mentions.
pub fn post_message_body(address: &ReplyAddress, text: &str, piece_id: &str) -> Value {
    match address {
        ReplyAddress::Slack { channel, thread_ts, .. } => {
            let metadata = json!({ "event_type": PIECE_EVENT_TYPE, "event_payload": { "piece": piece_id } });
            let mut body = json!({
                "channel": channel, "text": text, "metadata": metadata, "link_names": false, "parse": "none"
            });
            if let Some(thread) = thread_ts {
                body["thread_ts"] = json!(thread);
            }
            body
        }
        _ => json!({ "text": text }),
    }
}

/// A message with Approve and Deny buttons (Block Kit): the text as a
/// section, then the buttons, whose values carry [`crate::approvals::rules::button_data`].
/// Without an id, the text alone (an edit that takes the buttons away).
pub fn approval_blocks(text: &str, approval_id: Option<&str>) -> Value {
    use crate::approvals::rules::{button_data, Choice};
    // A section's text holds at most 3,000 characters.
    let shown: String = text.chars().take(3_000).collect();
    let mut blocks = vec![json!({ "type": "section", "text": { "type": "mrkdwn", "text": shown } })];
    if let Some(id) = approval_id {
        let button = |label: &str, style: &str, choice: Choice| {
            json!({ "type": "button", "text": { "type": "plain_text", "text": label }, "style": style,
                    "action_id": button_data(choice, id), "value": button_data(choice, id) })
        };
        blocks.push(json!({ "type": "actions", "block_id": "approval", "elements": [
            button("Approve", "primary", Choice::Approve), button("Deny", "danger", Choice::Deny),
        ] }));
    }
    Value::Array(blocks)
}

/// The `chat.update` body that gives a posted piece (a draft) new text,
/// keeping its id in the metadata and the same guards as the post.
pub fn update_message_body(address: &ReplyAddress, ts: &str, text: &str, piece_id: &str) -> Value {
    let mut body = post_message_body(address, text, piece_id);
    if let Some(fields) = body.as_object_mut() {
        fields.remove("thread_ts");
        fields.insert("ts".into(), json!(ts));
    }
    body
}

/// The read that shows whether a piece landed: the thread's replies, or the
/// channel's history, since `since_secs`, with message metadata. Returns the
/// Web API method and its query string.
pub fn piece_lookup(address: &ReplyAddress, since_secs: i64) -> Option<(&'static str, String)> {
    let ReplyAddress::Slack { channel, thread_ts, .. } = address else {
        return None;
    };
    let common = format!("channel={channel}&oldest={since_secs}&include_all_metadata=true&limit=200");
    Some(match thread_ts {
        Some(thread) => ("conversations.replies", format!("{common}&ts={thread}")),
        None => ("conversations.history", common),
    })
}

/// The `ts` of the message carrying this piece id in a lookup's answer.
pub fn find_piece(answer: &Value, piece_id: &str) -> Option<String> {
    answer["messages"].as_array()?.iter().find_map(|message| {
        let metadata = &message["metadata"];
        let is_piece = metadata["event_type"] == PIECE_EVENT_TYPE && metadata["event_payload"]["piece"] == piece_id;
        is_piece.then(|| message["ts"].as_str().map(str::to_string)).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_keeps_the_piece_id_and_guards_and_names_the_message_not_the_thread() {
        let address = ReplyAddress::Slack { channel: "C1".into(), thread_ts: Some("1.2".into()), team: None };
        let body = update_message_body(&address, "1795000000.000501", "more text", "conv/7:0");
        assert_eq!(body["ts"], "1795000000.000501");
        assert_eq!(body["channel"], "C1");
        assert_eq!(body["text"], "more text");
        assert_eq!(body["metadata"]["event_payload"]["piece"], "conv/7:0");
        assert_eq!((body["link_names"].clone(), body["parse"].clone()), (json!(false), json!("none")));
        assert!(body.get("thread_ts").is_none());
    }

    #[test]
    fn form_fields_decode_plus_and_escapes_and_drop_bare_keys() {
        let fields = form_fields(b"text=a+b%20c%26d&bare&user_name=J%C3%B6rg&bad=100%25%zz&empty=");
        let expected = [("text", "a b c&d"), ("user_name", "J\u{f6}rg"), ("bad", "100%%zz"), ("empty", "")];
        let expected: Vec<(String, String)> = expected.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        assert_eq!(fields, expected);
    }

    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

    #[test]
    fn signatures_are_checked_with_a_five_minute_window() {
        let body = br#"{"type":"event_callback"}"#;
        let signature = sign(body, "1531420618", SECRET);
        let ok = verify_signature(Some(&signature), Some("1531420618"), body, SECRET, 1531420618 + 10);
        assert_eq!(ok, Ok(()));
        let cases = [
            (None, Some("1531420618"), 0, SlackError::MissingSignature),
            (Some(signature.as_str()), None, 0, SlackError::MissingSignature),
            (Some(signature.as_str()), Some("1531420618"), 301, SlackError::Stale),
            (Some("v0=00"), Some("1531420618"), 0, SlackError::WrongSignature),
            (Some("v1=abc"), Some("1531420618"), 0, SlackError::WrongSignature),
        ];
        for (signature, timestamp, skew, expected) in cases {
            let result = verify_signature(signature, timestamp, body, SECRET, 1531420618 + skew);
            assert_eq!(result, Err(expected));
        }
        let tampered = verify_signature(Some(&signature), Some("1531420618"), b"{}", SECRET, 1531420618);
        assert_eq!(tampered, Err(SlackError::WrongSignature));
        assert_eq!(
            verify_signature(Some(&sign(body, "1531420618", "")), Some("1531420618"), body, "", 1531420618),
            Err(SlackError::WrongSignature),
            "an unset secret accepts nothing"
        );
    }

    #[test]
    fn the_url_verification_challenge_is_returned() {
        let body = json!({"token": "x", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"});
        assert_eq!(
            parse_event(body.to_string().as_bytes(), "UBOT").unwrap(),
            ParsedSlack::Challenge("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P".into())
        );
    }

    fn callback(event: Value) -> Vec<u8> {
        json!({
            "token": "x", "team_id": "T061EG9R6", "api_app_id": "A0PNCHHK2", "type": "event_callback",
            "event_id": "Ev0PV52K25", "event_time": 1_515_449_522,
            "authorizations": [{"team_id": "T061EG9R6", "user_id": "UBOT", "is_bot": true}],
            "event": event
        })
        .to_string()
        .into_bytes()
    }

    fn message(parsed: ParsedSlack) -> InboundEvent {
        match parsed {
            ParsedSlack::Message(event) => *event,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    #[test]
    fn a_channel_message_mentioning_the_bot() {
        let event = message(
            parse_event(
                &callback(json!({"type": "message", "channel": "C2147483705", "user": "U2147483697",
                    "text": "Hello <@UBOT>, and <@U0LAN0Z89|bob>", "ts": "1355517523.000005", "channel_type": "channel"})),
                "",
            )
            .unwrap(),
        );
        assert_eq!(event.conversation_key, "slack:T061EG9R6:C2147483705");
        assert_eq!(event.delivery_id, "C2147483705:1355517523.000005");
        assert!(event.is_bot_mention && !event.mentions_others, "a mention of the bot wins");
        assert!(!event.is_dm && !event.author.is_bot);
        assert_eq!(event.timestamp_ms, 1_355_517_523_000);
        let address =
            ReplyAddress::Slack { channel: "C2147483705".into(), thread_ts: None, team: Some("T061EG9R6".into()) };
        assert_eq!(event.reply_address, address, "the workspace reaches the reply address");
    }

    #[test]
    fn threads_are_conversations_and_replies_go_into_them() {
        let event = message(
            parse_event(
                &callback(json!({"type": "message", "channel": "C1", "user": "U1", "text": "and <@U2>?",
                    "ts": "1700000001.000200", "thread_ts": "1700000000.000100", "parent_user_id": "U3", "channel_type": "channel"})),
                "",
            )
            .unwrap(),
        );
        assert_eq!(event.conversation_key, "slack:T061EG9R6:C1:1700000000.000100");
        assert!(event.mentions_others && !event.is_bot_mention);
        assert_eq!(event.reply_to_other_message_id.as_deref(), Some("1700000000.000100"));
        assert!(event.reply_is_thread_root, "Slack's reply field names the thread, not the message");
        assert_eq!(post_message_body(&event.reply_address, "hi", "p")["thread_ts"], "1700000000.000100");
    }

    #[test]
    fn a_piece_carries_its_id_and_a_lookup_finds_exactly_that_piece() {
        let thread =
            ReplyAddress::Slack { channel: "C1".into(), thread_ts: Some("1700000000.000100".into()), team: None };
        let body = post_message_body(&thread, "hello", "slack:T:C1/7:0");
        assert_eq!(body["metadata"]["event_payload"]["piece"], "slack:T:C1/7:0");
        assert_eq!((&body["link_names"], &body["parse"]), (&json!(false), &json!("none")), "no names become mentions");
        let (method, query) = piece_lookup(&thread, 1_700_000_000).unwrap();
        assert_eq!(method, "conversations.replies");
        assert!(query.contains("ts=1700000000.000100") && query.contains("include_all_metadata=true"), "{query}");
        let channel = ReplyAddress::Slack { channel: "C1".into(), thread_ts: None, team: None };
        assert_eq!(piece_lookup(&channel, 5).unwrap().0, "conversations.history");

        let tagged = |ts: &str, piece: &str| json!({"ts": ts, "text": "x", "metadata": {"event_type": PIECE_EVENT_TYPE, "event_payload": {"piece": piece}}});
        let answer = json!({"ok": true, "messages": [
            {"ts": "1.1", "text": "a person's message"},
            tagged("1.2", "slack:T:C1/7:1"),
            tagged("1.3", "slack:T:C1/7:0"),
            {"ts": "1.4", "metadata": {"event_type": "someone_else", "event_payload": {"piece": "slack:T:C1/7:0"}}},
        ]});
        assert_eq!(find_piece(&answer, "slack:T:C1/7:0").as_deref(), Some("1.3"));
        assert_eq!(find_piece(&answer, "slack:T:C1/8:0"), None);
        assert_eq!(find_piece(&json!({"ok": false}), "x"), None);
    }

    #[test]
    fn a_thread_under_ones_own_message_is_not_a_reply_to_someone_else() {
        let thread_reply = |parent: &str| {
            message(
                parse_event(
                    &callback(json!({"type": "message", "channel": "C1", "user": "U1", "text": "more detail",
                        "ts": "1700000001.000200", "thread_ts": "1700000000.000100", "parent_user_id": parent,
                        "channel_type": "channel"})),
                    "UBOT",
                )
                .unwrap(),
            )
        };
        let own = thread_reply("U1");
        assert_eq!((own.reply_to_other_message_id, own.reply_to_bot_message_id), (None, None));
        assert_eq!(own.thread.as_deref(), Some("1700000000.000100"));
        assert_eq!(thread_reply("U3").reply_to_other_message_id.as_deref(), Some("1700000000.000100"));
        assert_eq!(thread_reply("UBOT").reply_to_bot_message_id.as_deref(), Some("1700000000.000100"));
    }

    #[test]
    fn app_mentions_dms_and_peer_bots() {
        let mention = message(
            parse_event(
                &callback(json!({"type": "app_mention", "channel": "C1", "user": "U1", "text": "hey", "ts": "1.2"})),
                "",
            )
            .unwrap(),
        );
        assert!(mention.is_bot_mention);
        assert_eq!(mention.delivery_id, "C1:1.2", "the same identity as the message event for it");

        let dm = message(
            parse_event(&callback(json!({"type": "message", "channel": "D1", "user": "U1", "text": "hi", "ts": "1.3", "channel_type": "im"})), "")
                .unwrap(),
        );
        assert!(dm.is_dm);

        let peer = message(
            parse_event(
                &callback(json!({"type": "message", "subtype": "bot_message", "channel": "C1", "bot_id": "B9",
                    "username": "helper", "bot_profile": {"name": "HelperBot"}, "text": "ping", "ts": "1.4"})),
                "",
            )
            .unwrap(),
        );
        assert!(peer.author.is_bot);
        assert_eq!(peer.author.name, "HelperBot");
    }

    #[test]
    fn own_messages_edits_deletes_and_joins_are_ignored() {
        let ignored = [
            json!({"type": "message", "channel": "C1", "user": "UBOT", "text": "my reply", "ts": "1.1"}),
            json!({"type": "message", "subtype": "message_changed", "channel": "C1", "ts": "1.2"}),
            json!({"type": "message", "subtype": "message_deleted", "channel": "C1", "ts": "1.3"}),
            json!({"type": "message", "subtype": "channel_join", "channel": "C1", "user": "U1", "text": "joined", "ts": "1.4"}),
            json!({"type": "reaction_added", "user": "U1"}),
        ];
        for event in ignored {
            assert!(matches!(parse_event(&callback(event.clone()), "").unwrap(), ParsedSlack::Ignored(_)), "{event}");
        }
        assert!(matches!(parse_event(b"{nope", ""), Err(SlackError::Malformed(_))));
    }

    #[test]
    fn slash_commands_are_commands() {
        let body = b"token=x&team_id=T1&channel_id=C9&user_id=U1&user_name=ada&command=%2Fask&text=what+is+2%2B2%3F&response_url=https%3A%2F%2Fhooks&trigger_id=13345224609.738474920.8088930838d88f008e0";
        let event = parse_command(body).unwrap();
        assert!(event.is_command);
        assert_eq!(event.text, "what is 2+2?");
        assert_eq!(event.conversation_key, "slack:T1:C9");
        assert_eq!(event.author.name, "ada");
        assert!(parse_command(b"text=hi").is_err());
    }

    #[test]
    fn a_block_action_is_a_click_in_its_channel_and_the_blocks_carry_the_approval() {
        let blocks = approval_blocks("Approve?", Some("0123456789abcdef"));
        assert_eq!(blocks[1]["elements"][0]["value"], "approve:0123456789abcdef");
        assert_eq!(blocks[1]["elements"][1]["value"], "deny:0123456789abcdef");
        assert_eq!(approval_blocks("Approved", None).as_array().map(Vec::len), Some(1), "no buttons after");
        let payload = json!({"type": "block_actions", "user": {"id": "U1", "username": "ada", "team_id": "T1"},
            "team": {"id": "T1"}, "channel": {"id": "C1"}, "actions": [{"value": "approve:0123456789abcdef"}]});
        let body: String =
            form_urlencoded::Serializer::new(String::new()).append_pair("payload", &payload.to_string()).finish();
        let click = parse_click(body.as_bytes()).expect("a payload").expect("readable");
        assert_eq!((click.clicker.user_id.as_str(), click.conversation.as_str()), ("U1", "slack:T1:C1"));
        assert_eq!(click.data, "approve:0123456789abcdef");
        assert!(parse_click(b"command=%2Fask&text=hi").is_none(), "a slash command is not a click");
        let other = form_urlencoded::Serializer::new(String::new())
            .append_pair("payload", "{\"type\":\"view_submission\"}")
            .finish();
        assert!(parse_click(other.as_bytes()).expect("a payload").is_err());
    }
}
