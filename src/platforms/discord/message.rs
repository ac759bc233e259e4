//! Discord channel messages heard over the Gateway (MESSAGE_CREATE) as
//! [`InboundEvent`]s, their edits, deletions and reactions as
//! [`HeardEvent`]s, and the REST calls that answer them.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::wire::{DiscordError, INBOUND_TEXT_LIMIT};
use crate::inbound::{Attachment, Author, Heard, HeardEvent, InboundEvent, ReplyAddress};

/// Discord's epoch (2015-01-01) in Unix milliseconds: snowflakes count from it.
const DISCORD_EPOCH_MS: i64 = 1_420_070_400_000;
/// Message types that are someone saying something: DEFAULT and REPLY.
const SPEECH_TYPES: [u64; 2] = [0, 19];

/// Turns a MESSAGE_CREATE into an inbound, or None for what is not someone
/// speaking (the bot's own messages, joins, pins, empty messages).
/// `threads` are the thread channel ids the Gateway has seen created.
pub fn parse_message_create(
    data: &Value,
    bot_user_id: &str,
    threads: &[String],
) -> Result<Option<InboundEvent>, DiscordError> {
    let field = |name: &str| data[name].as_str().map(str::to_string);
    let (Some(id), Some(channel_id)) = (field("id"), field("channel_id")) else {
        return Err(DiscordError::Malformed("MESSAGE_CREATE without id or channel_id".into()));
    };
    let author = &data["author"];
    let Some(author_id) = author["id"].as_str() else {
        return Err(DiscordError::Malformed("MESSAGE_CREATE without author".into()));
    };
    let kind = data["type"].as_u64().unwrap_or(0);
    if author_id == bot_user_id || !SPEECH_TYPES.contains(&kind) {
        return Ok(None);
    }
    let text = field("content").unwrap_or_default();
    let attachments: Vec<Attachment> = data["attachments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|file| {
            let kind = file["content_type"].as_str().unwrap_or("file").to_string();
            Some(Attachment {
                kind,
                platform_file_id: file["id"].as_str()?.to_string(),
                name: file["filename"].as_str().map(str::to_string),
                size: file["size"].as_u64(),
                url: file["url"].as_str().map(str::to_string),
            })
        })
        .collect();
    if text.trim().is_empty() && attachments.is_empty() {
        return Ok(None);
    }
    let guild_id = field("guild_id");
    let mentioned: Vec<&str> =
        data["mentions"].as_array().into_iter().flatten().filter_map(|user| user["id"].as_str()).collect();
    let replied_to = data["message_reference"]["message_id"].as_str().map(str::to_string);
    let replied_author = data["referenced_message"]["author"]["id"].as_str();
    let reply_to_bot = replied_author == Some(bot_user_id);
    // A reply pings its author by default, which lists them in `mentions`: that is the reply, not a mention.
    let mentions_others = mentioned.iter().any(|user| *user != bot_user_id && Some(*user) != replied_author);
    let is_thread = data.get("position").is_some_and(|position| !position.is_null()) || threads.contains(&channel_id);
    let name = author["global_name"].as_str().or(author["username"].as_str()).unwrap_or(author_id).to_string();
    let scope = guild_id.clone().unwrap_or_else(|| "dm".into());
    let event = InboundEvent::new(
        format!("discord:{scope}:{channel_id}"),
        id.clone(),
        id.clone(),
        Author { id: author_id.to_string(), name, is_bot: author["bot"].as_bool().unwrap_or(false) },
        text,
        ReplyAddress::DiscordChannel { channel_id: channel_id.clone(), guild_id: guild_id.clone() },
    );
    Ok(Some(
        InboundEvent {
            is_dm: guild_id.is_none(),
            is_bot_mention: mentioned.contains(&bot_user_id),
            mentions_others,
            reply_to_bot_message_id: replied_to.clone().filter(|_| reply_to_bot),
            reply_to_other_message_id: replied_to.filter(|_| !reply_to_bot),
            thread: is_thread.then_some(channel_id),
            attachments,
            timestamp_ms: snowflake_ms(&id),
            ..event
        }
        .with_text_capped(INBOUND_TEXT_LIMIT),
    ))
}

/// The Gateway events heard besides new messages.
pub const HEARD_EVENTS: [&str; 4] =
    ["MESSAGE_UPDATE", "MESSAGE_DELETE", "MESSAGE_REACTION_ADD", "MESSAGE_REACTION_REMOVE"];

/// A MESSAGE_UPDATE, MESSAGE_DELETE or MESSAGE_REACTION_ADD/REMOVE as a
/// [`HeardEvent`], or None for what is not one (an update without new
/// content, such as an embed unfurled; the bot's own edits and reactions).
/// The delivery id names the change, so a RESUME's replay is a repeat.
pub fn parse_heard(kind: &str, data: &Value, bot_user_id: &str) -> Result<Option<HeardEvent>, DiscordError> {
    let field = |name: &str| data[name].as_str().map(str::to_string);
    let message_field = if kind.starts_with("MESSAGE_REACTION") { "message_id" } else { "id" };
    let (Some(message_id), Some(channel_id)) = (field(message_field), field("channel_id")) else {
        return Err(DiscordError::Malformed(format!("{kind} without its message or channel")));
    };
    let scope = field("guild_id").unwrap_or_else(|| "dm".into());
    let user = |user: &Value| {
        let id = user["id"].as_str()?.to_string();
        let name = user["global_name"].as_str().or(user["username"].as_str()).unwrap_or(&id).to_string();
        Some(Author { name, id, is_bot: user["bot"].as_bool().unwrap_or(false) })
    };
    let (delivery_id, author, heard) = match kind {
        "MESSAGE_UPDATE" => {
            let (Some(text), Some(author)) = (field("content"), user(&data["author"])) else { return Ok(None) };
            if author.id == bot_user_id {
                return Ok(None);
            }
            let edited = field("edited_timestamp").unwrap_or_default();
            let text: String = text.chars().take(INBOUND_TEXT_LIMIT).collect();
            (format!("edit:{message_id}:{edited}"), Some(author), Heard::Edit { text })
        }
        "MESSAGE_DELETE" => (format!("delete:{message_id}"), None, Heard::Delete),
        "MESSAGE_REACTION_ADD" | "MESSAGE_REACTION_REMOVE" => {
            let Some(user_id) = field("user_id").filter(|user_id| user_id != bot_user_id) else { return Ok(None) };
            let author = user(&data["member"]["user"]).unwrap_or(Author {
                name: user_id.clone(),
                id: user_id.clone(),
                is_bot: false,
            });
            let emoji = data["emoji"]["name"].as_str().unwrap_or("?").to_string();
            let added = kind == "MESSAGE_REACTION_ADD";
            let change = if added { "add" } else { "remove" };
            (format!("react:{message_id}:{user_id}:{emoji}:{change}"), Some(author), Heard::Reaction { emoji, added })
        }
        _ => return Ok(None),
    };
    let conversation_key = format!("discord:{scope}:{channel_id}");
    Ok(Some(HeardEvent { conversation_key, delivery_id, message_id, author, heard }))
}

/// When a snowflake id was made, in Unix milliseconds.
fn snowflake_ms(id: &str) -> i64 {
    id.parse::<u64>().map_or(0, |snowflake| (snowflake >> 22) as i64 + DISCORD_EPOCH_MS)
}

/// The body of `POST /channels/{id}/messages` for one reply piece. Its nonce
/// (derived from the piece id) with `enforce_nonce` makes Discord return the
/// first message instead of posting a second when a piece is sent again
/// within a few minutes.
pub fn create_message_body(text: &str, reply_to: Option<&str>, piece_id: &str) -> Value {
    let mut body = json!({
        "content": text,
        "allowed_mentions": { "parse": [] },
        "nonce": nonce(piece_id),
        "enforce_nonce": true,
    });
    if let Some(message_id) = reply_to {
        body["message_reference"] = json!({ "message_id": message_id, "fail_if_not_exists": false });
    }
    body
}

/// A piece's nonce: Discord takes at most 25 characters.
pub fn nonce(piece_id: &str) -> String {
    crate::security::encode_hex(&Sha256::digest(piece_id.as_bytes())[..12])
}

/// The path that adds the bot's reaction to a message.
pub fn reaction_path(channel_id: &str, message_id: &str, emoji: &str) -> String {
    let encoded: String = emoji
        .bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b':' => (byte as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect();
    format!("/channels/{channel_id}/messages/{message_id}/reactions/{encoded}/@me")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_deletions_and_reactions_are_heard_and_the_bots_own_are_not() {
        let update = json!({"id": "5", "channel_id": "C1", "guild_id": "G1", "content": "new",
            "edited_timestamp": "2026-01-01T00:00:00Z", "author": {"id": "U1", "username": "ann"}});
        let heard = parse_heard("MESSAGE_UPDATE", &update, "B").unwrap().unwrap();
        assert_eq!((heard.conversation_key.as_str(), heard.message_id.as_str()), ("discord:G1:C1", "5"));
        assert_eq!(heard.delivery_id, "edit:5:2026-01-01T00:00:00Z");
        assert_eq!(heard.heard, Heard::Edit { text: "new".into() });
        let embed_only = json!({"id": "5", "channel_id": "C1", "embeds": []});
        assert_eq!(parse_heard("MESSAGE_UPDATE", &embed_only, "B").unwrap(), None);
        let own = json!({"id": "5", "channel_id": "C1", "content": "draft", "author": {"id": "B"}});
        assert_eq!(parse_heard("MESSAGE_UPDATE", &own, "B").unwrap(), None);
        let deleted = parse_heard("MESSAGE_DELETE", &json!({"id": "5", "channel_id": "C1"}), "B").unwrap().unwrap();
        assert_eq!((deleted.conversation_key.as_str(), deleted.heard), ("discord:dm:C1", Heard::Delete));
        let reaction = json!({"user_id": "U1", "channel_id": "C1", "message_id": "6", "guild_id": "G1",
            "emoji": {"id": null, "name": "👍"}, "member": {"user": {"id": "U1", "username": "ann"}}});
        let heard = parse_heard("MESSAGE_REACTION_ADD", &reaction, "B").unwrap().unwrap();
        assert_eq!(heard.heard, Heard::Reaction { emoji: "👍".into(), added: true });
        assert_eq!((heard.message_id.as_str(), heard.author.unwrap().name.as_str()), ("6", "ann"));
        assert_eq!(
            parse_heard(
                "MESSAGE_REACTION_ADD",
                &json!({"user_id": "B", "channel_id": "C1",
            "message_id": "6", "emoji": {"name": "👍"}}),
                "B"
            )
            .unwrap(),
            None
        );
        assert!(parse_heard("MESSAGE_DELETE", &json!({"id": "5"}), "B").is_err());
    }

    const BOT: &str = "900";

    fn message(change: impl FnOnce(&mut Value)) -> Value {
        let mut data = json!({
            "id": "1200000000000000000", "channel_id": "C1", "guild_id": "G1", "type": 0,
            "author": {"id": "U1", "username": "ada", "global_name": "Ada"}, "content": "hello there",
            "mentions": []
        });
        change(&mut data);
        data
    }

    fn parse(data: &Value) -> InboundEvent {
        parse_message_create(data, BOT, &[]).unwrap().expect("a message")
    }

    #[test]
    fn a_guild_message_is_a_channel_conversation() {
        let event = parse(&message(|_| {}));
        assert_eq!(event.conversation_key, "discord:G1:C1");
        assert_eq!((event.delivery_id.as_str(), event.author.name.as_str()), ("1200000000000000000", "Ada"));
        assert!(!event.is_dm && !event.is_bot_mention && !event.mentions_others && event.thread.is_none());
        assert_eq!(
            event.reply_address,
            ReplyAddress::DiscordChannel { channel_id: "C1".into(), guild_id: Some("G1".into()) }
        );
        assert_eq!(event.timestamp_ms, (1_200_000_000_000_000_000u64 >> 22) as i64 + DISCORD_EPOCH_MS);
    }

    #[test]
    fn mentions_replies_dms_threads_and_bots() {
        let mention = parse(&message(|m| m["mentions"] = json!([{"id": BOT}, {"id": "U2"}])));
        assert!(mention.is_bot_mention && mention.mentions_others);
        let other = parse(&message(|m| m["mentions"] = json!([{"id": "U2"}])));
        assert!(!other.is_bot_mention && other.mentions_others);

        let to_bot = parse(&message(|m| {
            m["type"] = json!(19);
            m["message_reference"] = json!({"message_id": "M9"});
            m["referenced_message"] = json!({"author": {"id": BOT}});
            m["mentions"] = json!([{"id": BOT}]);
        }));
        assert_eq!(to_bot.reply_to_bot_message_id.as_deref(), Some("M9"));
        let to_human = parse(&message(|m| {
            m["type"] = json!(19);
            m["message_reference"] = json!({"message_id": "M8"});
            m["referenced_message"] = json!({"author": {"id": "U2"}});
            m["mentions"] = json!([{"id": "U2"}]);
        }));
        assert_eq!(to_human.reply_to_other_message_id.as_deref(), Some("M8"));
        assert!(!to_human.mentions_others, "the reply's own ping is not a mention of someone else");
        assert!(!to_human.reply_is_thread_root, "Discord names the exact message");

        let dm = parse(&message(|m| m.as_object_mut().unwrap().remove("guild_id").map(drop).unwrap_or(())));
        assert!(dm.is_dm);
        assert_eq!(dm.conversation_key, "discord:dm:C1");

        let in_thread = parse(&message(|m| m["position"] = json!(3)));
        assert_eq!(in_thread.thread.as_deref(), Some("C1"));
        let known = parse_message_create(&message(|_| {}), BOT, &["C1".to_string()]).unwrap().unwrap();
        assert_eq!(known.thread.as_deref(), Some("C1"), "a thread the Gateway saw created");

        let peer = parse(&message(|m| m["author"]["bot"] = json!(true)));
        assert!(peer.author.is_bot);
    }

    #[test]
    fn the_bots_own_messages_joins_and_empty_messages_are_not_inbound() {
        for data in [
            message(|m| m["author"]["id"] = json!(BOT)),
            message(|m| m["type"] = json!(7)),
            message(|m| m["content"] = json!("  ")),
        ] {
            assert_eq!(parse_message_create(&data, BOT, &[]), Ok(None), "{data}");
        }
        assert!(parse_message_create(&json!({"id": "1"}), BOT, &[]).is_err());
        let with_file = message(|m| {
            m["content"] = json!("");
            m["attachments"] = json!([{"id": "A1", "content_type": "image/png"}]);
        });
        assert_eq!(parse(&with_file).attachments[0].platform_file_id, "A1");
    }

    #[test]
    fn replies_carry_a_stable_nonce_and_quote_what_they_answer() {
        let body = create_message_body("hi", Some("M1"), "discord:G1:C1/4:0");
        assert_eq!(body["message_reference"]["message_id"], "M1");
        assert_eq!(body["enforce_nonce"], true);
        assert_eq!(body["allowed_mentions"]["parse"], json!([]));
        let nonce = body["nonce"].as_str().unwrap();
        assert_eq!(nonce.len(), 24, "Discord takes at most 25 characters");
        assert_eq!(
            nonce,
            create_message_body("hi", None, "discord:G1:C1/4:0")["nonce"],
            "the same piece, the same nonce"
        );
        assert_ne!(nonce, create_message_body("hi", None, "discord:G1:C1/4:1")["nonce"]);
        assert!(create_message_body("x", None, "p").get("message_reference").is_none());
    }

    #[test]
    fn reaction_paths_encode_the_emoji() {
        assert_eq!(reaction_path("C", "M", "👍"), "/channels/C/messages/M/reactions/%F0%9F%91%8D/@me");
        assert_eq!(reaction_path("C", "M", "party:123"), "/channels/C/messages/M/reactions/party:123/@me");
    }
}
