//! Bot Framework activities as Teams sends them: an inbound activity read
//! into an [`InboundEvent`] (mentions, threads, files) or an approval press
//! (an Adaptive Card's `Action.Submit`), and the bodies of outbound calls
//! (messages, edits, typing, the approval card).

use serde::Deserialize;
use serde_json::{json, Value};
use thiserror::Error;

use crate::approvals::rules::{button_data, Choice, Click, Clicker};
use crate::inbound::{Attachment, Author, Heard, HeardEvent, InboundEvent, ReplyAddress};
use crate::platforms::Platform;

/// Teams takes activities up to about 28 KB; replies are split well before.
pub const MESSAGE_LIMIT: usize = 4_000;
/// A longer inbound text is cut on arrival.
pub const INBOUND_TEXT_LIMIT: usize = 28_000;
/// The `channelId` of Teams activities.
pub const TEAMS_CHANNEL: &str = "msteams";
/// The key in an approval card's `Action.Submit` data that carries the press.
pub const APPROVAL_FIELD: &str = "edgebot_approval";
/// Where Teams serves files people share in a chat (`downloadUrl`, pre-authorised: no token).
pub const FILE_HOSTS: &[&str] = &["sharepoint.com"];
/// Teams' copy of a message's text as HTML, and cards: not files.
const NOT_FILES: &[&str] = &["text/html", "application/vnd.microsoft.card."];
/// A file shared in a chat: its bytes are at `content.downloadUrl`.
const FILE_DOWNLOAD_INFO: &str = "application/vnd.microsoft.teams.file.download.info";

#[derive(Debug, Error, PartialEq, Eq)]
pub enum TeamsError {
    #[error("malformed Teams activity: {0}")]
    Malformed(String),
}

/// What a verified activity turned into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParsedTeams {
    Message(Box<InboundEvent>),
    /// An edit, a deletion or a reaction (`messageUpdate`, `messageDelete`, `messageReaction`).
    Heard(Box<HeardEvent>),
    /// An approval card's button, and where a private note to the presser goes.
    Click(Box<(Click, ReplyAddress)>),
    /// Acknowledged and dropped, with the reason.
    Ignored(&'static str),
}

/// The fields the token check needs before anything else is read.
#[derive(Debug, Deserialize)]
pub struct Route {
    #[serde(rename = "serviceUrl")]
    pub service_url: String,
    #[serde(rename = "channelId")]
    pub channel_id: String,
}

/// Reads the connector and channel an activity names.
pub fn route(body: &[u8]) -> Result<Route, TeamsError> {
    serde_json::from_slice(body).map_err(|error| TeamsError::Malformed(error.to_string()))
}

#[derive(Debug, Default, Deserialize)]
struct Account {
    #[serde(default)]
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    role: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Conversation {
    #[serde(default)]
    id: String,
    #[serde(default, rename = "conversationType")]
    conversation_type: Option<String>,
    #[serde(default, rename = "tenantId")]
    tenant_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Entity {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    mentioned: Option<Account>,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct FileAttachment {
    #[serde(default, rename = "contentType")]
    content_type: String,
    #[serde(default, rename = "contentUrl")]
    content_url: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    content: Value,
}

#[derive(Debug, Deserialize)]
struct Activity {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(rename = "serviceUrl")]
    service_url: String,
    #[serde(default)]
    from: Account,
    #[serde(default)]
    recipient: Account,
    #[serde(default)]
    conversation: Conversation,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    entities: Vec<Entity>,
    #[serde(default)]
    attachments: Vec<FileAttachment>,
    #[serde(default)]
    value: Option<Value>,
    #[serde(default, rename = "replyToId")]
    reply_to_id: Option<String>,
    #[serde(default, rename = "reactionsAdded")]
    reactions_added: Vec<Reaction>,
    #[serde(default, rename = "channelData")]
    channel_data: Value,
}

#[derive(Debug, Default, Deserialize)]
struct Reaction {
    #[serde(default, rename = "type")]
    kind: String,
}

/// The conversation key of a Teams conversation id (a channel's reply chain
/// is its own: `19:…@thread.tacv2;messageid=…`).
pub fn conversation_key(conversation_id: &str) -> String {
    format!("teams:{conversation_id}")
}

/// Reads a verified activity. `app_id` is the bot's (its account is `28:{app_id}`).
pub fn parse_activity(body: &[u8], app_id: &str) -> Result<ParsedTeams, TeamsError> {
    let activity: Activity = serde_json::from_slice(body).map_err(|error| TeamsError::Malformed(error.to_string()))?;
    if activity.kind != "message" {
        return Ok(heard(&activity, app_id)
            .map_or(ParsedTeams::Ignored("not a message activity"), |heard| ParsedTeams::Heard(Box::new(heard))));
    }
    let conversation_id = activity.conversation.id.clone();
    let (Some(id), false, false) = (activity.id.clone(), conversation_id.is_empty(), activity.from.id.is_empty())
    else {
        return Err(TeamsError::Malformed("a message without its id, conversation or sender".into()));
    };
    let bot = if activity.recipient.id.is_empty() { format!("28:{app_id}") } else { activity.recipient.id.clone() };
    if activity.from.id == bot {
        return Ok(ParsedTeams::Ignored("the bot's own message"));
    }
    let address = ReplyAddress::Teams {
        service_url: activity.service_url.clone(),
        conversation_id: conversation_id.clone(),
        tenant_id: activity.conversation.tenant_id.clone(),
    };
    let name = activity.from.name.clone().filter(|name| !name.is_empty()).unwrap_or_else(|| activity.from.id.clone());
    if let Some(pressed) = activity.value.as_ref().and_then(|value| value[APPROVAL_FIELD].as_str()) {
        let clicker = Clicker { platform: Platform::Teams.as_str().into(), user_id: activity.from.id.clone(), name };
        let click = Click {
            clicker,
            data: pressed.to_string(),
            conversation: conversation_key(&conversation_id),
            answer_to: None,
        };
        return Ok(ParsedTeams::Click(Box::new((click, address))));
    }
    let (text, is_bot_mention, mentions_others) =
        read_mentions(activity.text.as_deref().unwrap_or_default(), &activity.entities, &bot);
    let attachments: Vec<Attachment> =
        activity.attachments.iter().enumerate().filter_map(|(index, file)| attachment_of(file, &id, index)).collect();
    if text.is_empty() && attachments.is_empty() {
        return Ok(ParsedTeams::Ignored("a message with no text or file"));
    }
    let is_bot = activity.from.role.as_deref() == Some("bot") || activity.from.id.starts_with("28:");
    let author = Author { id: activity.from.id.clone(), name, is_bot };
    let thread = conversation_id.split_once(";messageid=").map(|(_, root)| root.to_string());
    let event = InboundEvent::new(conversation_key(&conversation_id), id.clone(), id, author, text, address);
    Ok(ParsedTeams::Message(Box::new(
        InboundEvent {
            is_dm: activity.conversation.conversation_type.as_deref() == Some("personal"),
            is_bot_mention,
            mentions_others,
            reply_is_thread_root: thread.is_some(),
            thread,
            attachments,
            conversation_title: activity.conversation.name.clone(),
            timestamp_ms: activity.timestamp.as_deref().and_then(timestamp_ms).unwrap_or(0),
            ..event
        }
        .with_text_capped(INBOUND_TEXT_LIMIT),
    )))
}

/// An edit (`messageUpdate`, `editMessage`), a deletion (`messageDelete`,
/// `softDeleteMessage`) or a reaction added (`messageReaction`) by a person;
/// None for anything else. Teams names a reaction by its kind (`like`,
/// `heart`…), which is what the history shows.
fn heard(activity: &Activity, app_id: &str) -> Option<HeardEvent> {
    let conversation_id = &activity.conversation.id;
    let bot = format!("28:{app_id}");
    if conversation_id.is_empty() || activity.from.id.is_empty() || activity.from.id == bot {
        return None;
    }
    let event_type = activity.channel_data["eventType"].as_str().unwrap_or_default();
    let (message_id, heard) = match (activity.kind.as_str(), event_type) {
        ("messageUpdate", "editMessage") => {
            let text = read_mentions(activity.text.as_deref().unwrap_or_default(), &activity.entities, &bot).0;
            (activity.id.clone()?, Heard::Edit { text })
        }
        ("messageDelete", "softDeleteMessage") => (activity.id.clone()?, Heard::Delete),
        ("messageReaction", _) => {
            let emoji = activity.reactions_added.first().map(|reaction| reaction.kind.clone())?;
            (activity.reply_to_id.clone()?, Heard::Reaction { emoji, added: true })
        }
        _ => return None,
    };
    let name = activity.from.name.clone().filter(|name| !name.is_empty()).unwrap_or_else(|| activity.from.id.clone());
    Some(HeardEvent {
        conversation_key: conversation_key(conversation_id),
        // An edit's or a deletion's activity id is the message's: its time
        // tells two edits apart (a retried delivery carries the same).
        delivery_id: format!(
            "{}:{}:{}",
            activity.kind,
            activity.id.as_deref().unwrap_or(&message_id),
            activity.timestamp.as_deref().unwrap_or_default()
        ),
        message_id,
        author: Some(Author { id: activity.from.id.clone(), name, is_bot: false }),
        heard,
    })
}

/// The text with the bot's `<at>…</at>` mention taken out and others' shown
/// as `@name`; whether the bot was mentioned, and whether someone else was.
fn read_mentions(text: &str, entities: &[Entity], bot: &str) -> (String, bool, bool) {
    let mut text = text.to_string();
    let (mut mentions_bot, mut mentions_others) = (false, false);
    for entity in entities.iter().filter(|entity| entity.kind == "mention") {
        let Some(mentioned) = &entity.mentioned else { continue };
        let tagged = entity.text.clone().unwrap_or_default();
        if mentioned.id == bot {
            mentions_bot = true;
            if !tagged.is_empty() {
                text = text.replace(&tagged, "");
            }
        } else if !mentioned.id.is_empty() {
            mentions_others = true;
        }
    }
    // Any tag left (another person's mention) shows as the name it wraps.
    let text = text.replace("<at>", "@").replace("</at>", "");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (text, mentions_bot, mentions_others && !mentions_bot)
}

/// A file the message carries, as an attachment (Teams' HTML copy of the text and cards are not files).
fn attachment_of(file: &FileAttachment, activity_id: &str, index: usize) -> Option<Attachment> {
    if NOT_FILES.iter().any(|kind| file.content_type.starts_with(kind)) {
        return None;
    }
    if file.content_type == FILE_DOWNLOAD_INFO {
        let content = &file.content;
        return Some(Attachment {
            kind: content["fileType"].as_str().unwrap_or("file").to_string(),
            platform_file_id: content["uniqueId"].as_str().map_or(format!("{activity_id}:{index}"), str::to_string),
            name: file.name.clone(),
            size: None,
            url: Some(content["downloadUrl"].as_str()?.to_string()),
        });
    }
    // A file on the connector is named by its URL: stable across retries, and
    // known before the message is (the conformance kit names a file first).
    let url = file.content_url.clone()?;
    Some(Attachment {
        kind: file.content_type.clone(),
        platform_file_id: url.clone(),
        name: file.name.clone(),
        size: None,
        url: Some(url),
    })
}

/// An ISO 8601 timestamp in milliseconds since the epoch.
fn timestamp_ms(timestamp: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(timestamp).ok().map(|time| time.timestamp_millis())
}

/// A message activity with `text` (rendered as Teams markdown).
pub fn message_body(text: &str) -> Value {
    json!({ "type": "message", "text": text, "textFormat": "markdown" })
}

/// A message with an Adaptive Card holding the text and, for an approval,
/// Approve and Deny (`Action.Submit`, whose data carries [`button_data`]).
pub fn approval_body(text: &str, approval_id: Option<&str>) -> Value {
    let mut card = json!({
        "type": "AdaptiveCard", "version": "1.4",
        "body": [{ "type": "TextBlock", "text": text, "wrap": true }],
    });
    if let Some(id) = approval_id {
        let button = |title: &str, choice: Choice| json!({ "type": "Action.Submit", "title": title, "data": { APPROVAL_FIELD: button_data(choice, id) } });
        card["actions"] = json!([button("Approve", Choice::Approve), button("Deny", Choice::Deny)]);
    }
    json!({ "type": "message", "attachments": [{ "contentType": "application/vnd.microsoft.card.adaptive", "content": card }] })
}

/// A message carrying a file inline (a `data:` URL), its text as the caption.
pub fn file_body(text: &str, name: &str, mime: &str, bytes: &[u8]) -> Value {
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut body = message_body(text);
    body["attachments"] =
        json!([{ "contentType": mime, "name": name, "contentUrl": format!("data:{mime};base64,{data}") }]);
    body
}

/// The typing indicator.
pub fn typing_body() -> Value {
    json!({ "type": "typing" })
}

/// The connector's URL for a conversation's activities (`activity` to reply to,
/// edit or delete one), the service URL's own path kept.
pub fn activities_url(service_url: &str, conversation_id: &str, activity: Option<&str>) -> String {
    let segment = |text: &str| percent_encoding::utf8_percent_encode(text, SEGMENT).to_string();
    let base = service_url.trim_end_matches('/');
    match activity {
        Some(activity) => {
            format!("{base}/v3/conversations/{}/activities/{}", segment(conversation_id), segment(activity))
        }
        None => format!("{base}/v3/conversations/{}/activities", segment(conversation_id)),
    }
}

/// What is escaped in a path segment: everything but unreserved characters,
/// and `:`, `@` and `;`, which Teams' conversation ids hold and its
/// connector reads as written.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b':')
    .remove(b'@')
    .remove(b';')
    .remove(b'=');

#[cfg(test)]
mod tests {
    use super::*;

    const APP: &str = "app-1";

    fn activity(conversation: Value, text: &str, entities: Value) -> Vec<u8> {
        json!({
            "type": "message", "id": "1795000000001", "timestamp": "2026-11-27T05:00:00.123Z",
            "serviceUrl": "https://smba.trafficmanager.net/amer/", "channelId": "msteams",
            "from": { "id": "29:ada", "name": "Ada", "aadObjectId": "a-1" },
            "recipient": { "id": format!("28:{APP}"), "name": "edgebot" },
            "conversation": conversation, "text": text, "entities": entities,
        })
        .to_string()
        .into_bytes()
    }

    fn message(body: &[u8]) -> InboundEvent {
        match parse_activity(body, APP).unwrap() {
            ParsedTeams::Message(event) => *event,
            other => panic!("not a message: {other:?}"),
        }
    }

    #[test]
    fn a_personal_chat_message_is_a_dm_with_its_address_and_time() {
        let conversation = json!({ "id": "a:1xyz", "conversationType": "personal", "tenantId": "t-1" });
        let event = message(&activity(conversation, "hello there", json!([])));
        assert_eq!(event.conversation_key, "teams:a:1xyz");
        assert_eq!((event.delivery_id.as_str(), event.message_id.as_str()), ("1795000000001", "1795000000001"));
        assert!(event.is_dm && !event.is_bot_mention && !event.mentions_others);
        assert_eq!(event.text, "hello there");
        assert_eq!(event.author, Author { id: "29:ada".into(), name: "Ada".into(), is_bot: false });
        assert_eq!(event.timestamp_ms, 1_795_755_600_123);
        assert_eq!(
            event.reply_address,
            ReplyAddress::Teams {
                service_url: "https://smba.trafficmanager.net/amer/".into(),
                conversation_id: "a:1xyz".into(),
                tenant_id: Some("t-1".into()),
            }
        );
    }

    #[test]
    fn a_channel_reply_chain_is_its_own_conversation_and_the_bots_mention_is_taken_out() {
        let conversation = json!({ "id": "19:abc@thread.tacv2;messageid=1700", "conversationType": "channel" });
        let entities = json!([
            { "type": "mention", "mentioned": { "id": format!("28:{APP}"), "name": "edgebot" }, "text": "<at>edgebot</at>" },
            { "type": "clientInfo", "locale": "en-US" },
        ]);
        let event = message(&activity(conversation, "<at>edgebot</at> what is the plan?", entities));
        assert_eq!(event.conversation_key, "teams:19:abc@thread.tacv2;messageid=1700");
        assert_eq!(event.thread.as_deref(), Some("1700"));
        assert!(event.is_bot_mention && !event.mentions_others && !event.is_dm);
        assert_eq!(event.text, "what is the plan?");
    }

    #[test]
    fn someone_elses_mention_shows_as_their_name_and_counts_as_talking_to_them() {
        let conversation = json!({ "id": "19:chat@thread.v2", "conversationType": "groupChat" });
        let entities =
            json!([{ "type": "mention", "mentioned": { "id": "29:bob", "name": "Bob" }, "text": "<at>Bob</at>" }]);
        let event = message(&activity(conversation, "<at>Bob</at> can you look?", entities));
        assert_eq!(event.text, "@Bob can you look?");
        assert!(!event.is_bot_mention && event.mentions_others);
    }

    #[test]
    fn files_are_read_and_teams_html_copy_is_not_a_file() {
        let mut body: Value = serde_json::from_slice(&activity(json!({ "id": "a:1" }), "see this", json!([]))).unwrap();
        body["attachments"] = json!([
            { "contentType": "text/html", "content": "<p>see this</p>" },
            { "contentType": FILE_DOWNLOAD_INFO, "name": "sales.csv",
              "content": { "downloadUrl": "https://contoso.sharepoint.com/x", "uniqueId": "U1", "fileType": "csv" } },
            { "contentType": "image/png", "contentUrl": "https://smba.trafficmanager.net/amer/v3/attachments/1/views/original", "name": "shot.png" },
        ]);
        let event = message(body.to_string().as_bytes());
        let ids: Vec<&str> = event.attachments.iter().map(|file| file.platform_file_id.as_str()).collect();
        assert_eq!(ids, ["U1", "https://smba.trafficmanager.net/amer/v3/attachments/1/views/original"]);
        assert_eq!(event.attachments[0].url.as_deref(), Some("https://contoso.sharepoint.com/x"));
        assert_eq!(event.attachments[1].kind, "image/png");
    }

    #[test]
    fn an_approval_press_is_a_click_by_its_presser_and_other_activities_are_ignored() {
        let mut body: Value = serde_json::from_slice(&activity(json!({ "id": "a:1" }), "", json!([]))).unwrap();
        body["value"] = json!({ APPROVAL_FIELD: "approve:ap1" });
        let ParsedTeams::Click(pressed) = parse_activity(body.to_string().as_bytes(), APP).unwrap() else {
            panic!("a press");
        };
        let (click, _) = *pressed;
        assert_eq!((click.data.as_str(), click.conversation.as_str()), ("approve:ap1", "teams:a:1"));
        assert_eq!((click.clicker.platform.as_str(), click.clicker.user_id.as_str()), ("teams", "29:ada"));
        body["type"] = json!("conversationUpdate");
        assert_eq!(
            parse_activity(body.to_string().as_bytes(), APP),
            Ok(ParsedTeams::Ignored("not a message activity"))
        );
        let mut own: Value = serde_json::from_slice(&activity(json!({ "id": "a:1" }), "hi", json!([]))).unwrap();
        own["from"]["id"] = json!(format!("28:{APP}"));
        assert_eq!(parse_activity(own.to_string().as_bytes(), APP), Ok(ParsedTeams::Ignored("the bot's own message")));
        let mut no_id = own.clone();
        no_id["id"] = Value::Null;
        assert!(parse_activity(no_id.to_string().as_bytes(), APP).is_err());
        assert!(parse_activity(b"{}", APP).is_err());
    }

    #[test]
    fn the_approval_card_carries_both_choices_and_its_clearing_none() {
        let card = approval_body("Run it?", Some("ap1"));
        let content = &card["attachments"][0]["content"];
        assert_eq!(content["body"][0]["text"], "Run it?");
        assert_eq!(content["actions"][0]["data"][APPROVAL_FIELD], "approve:ap1");
        assert_eq!(content["actions"][1]["data"][APPROVAL_FIELD], "deny:ap1");
        assert!(approval_body("Done", None)["attachments"][0]["content"].get("actions").is_none());
    }

    #[test]
    fn activity_urls_keep_the_service_path_and_escape_only_what_must_be() {
        let base = "https://smba.trafficmanager.net/amer/";
        assert_eq!(
            activities_url(base, "19:abc@thread.tacv2;messageid=1", None),
            "https://smba.trafficmanager.net/amer/v3/conversations/19:abc@thread.tacv2;messageid=1/activities"
        );
        assert_eq!(
            activities_url(base, "a:1/../x", Some("1 2")),
            "https://smba.trafficmanager.net/amer/v3/conversations/a:1%2F..%2Fx/activities/1%202"
        );
    }

    #[test]
    fn edits_deletions_and_reactions_are_heard_and_the_bots_own_are_not() {
        let value = |text: &str| -> Value {
            serde_json::from_slice(&activity(
                json!({ "id": "a:1xyz", "conversationType": "personal" }),
                text,
                json!([]),
            ))
            .unwrap()
        };
        let mut edit = value("my name is Rob");
        edit["type"] = json!("messageUpdate");
        edit["channelData"] = json!({ "eventType": "editMessage" });
        let ParsedTeams::Heard(heard) = parse_activity(edit.to_string().as_bytes(), APP).unwrap() else {
            panic!("an edit")
        };
        assert_eq!(heard.heard, Heard::Edit { text: "my name is Rob".into() });
        assert_eq!(heard.message_id, edit["id"].as_str().unwrap());
        let mut later = edit.clone();
        later["timestamp"] = json!("2026-11-27T05:01:00.000Z");
        let ParsedTeams::Heard(again) = parse_activity(later.to_string().as_bytes(), APP).unwrap() else { panic!() };
        assert_ne!(again.delivery_id, heard.delivery_id, "a second edit is a delivery of its own");

        let mut deleted = value("");
        deleted["type"] = json!("messageDelete");
        deleted["channelData"] = json!({ "eventType": "softDeleteMessage" });
        let ParsedTeams::Heard(heard) = parse_activity(deleted.to_string().as_bytes(), APP).unwrap() else { panic!() };
        assert_eq!(heard.heard, Heard::Delete);

        let mut reaction = value("");
        reaction["type"] = json!("messageReaction");
        reaction["replyToId"] = json!("1795000000999");
        reaction["reactionsAdded"] = json!([{ "type": "like" }]);
        let ParsedTeams::Heard(heard) = parse_activity(reaction.to_string().as_bytes(), APP).unwrap() else {
            panic!("a reaction")
        };
        assert_eq!(
            (heard.message_id.as_str(), heard.heard),
            ("1795000000999", Heard::Reaction { emoji: "like".into(), added: true })
        );

        reaction["reactionsAdded"] = json!([]);
        assert!(matches!(parse_activity(reaction.to_string().as_bytes(), APP).unwrap(), ParsedTeams::Ignored(_)));
        reaction["reactionsAdded"] = json!([{ "type": "like" }]);
        reaction["from"]["id"] = json!(format!("28:{APP}"));
        assert!(matches!(parse_activity(reaction.to_string().as_bytes(), APP).unwrap(), ParsedTeams::Ignored(_)));
    }
}
