//! What Slack tells of messages besides new ones: `message` events of subtype
//! `message_changed` and `message_deleted`, and `reaction_added` /
//! `reaction_removed` events, each as a [`HeardEvent`]; and the answer to a
//! modal submitted to the bot (`view_submission`). Pure.

use serde_json::{json, Value};

use crate::inbound::{Author, Heard, HeardEvent};

/// The Events API subscriptions these need (the manifest names them).
pub const HEARD_EVENTS: [&str; 2] = ["reaction_added", "reaction_removed"];

/// An edit, deletion or reaction in an Events API envelope, or None for any
/// other event. `bot_user` is the bot's user id: its own edits (drafts as
/// they grow) and reactions are not heard. Slack's `event_id` is the
/// delivery id (its retries carry the same one).
pub fn parse_heard(envelope: &Value, bot_user: &str) -> Option<Result<HeardEvent, &'static str>> {
    let event = &envelope["event"];
    let text = |value: &Value| value.as_str().map(str::to_string);
    let team = envelope["team_id"].as_str().unwrap_or_default();
    let delivery_id = text(&envelope["event_id"]);
    let heard = match (event["type"].as_str()?, event["subtype"].as_str()) {
        ("message", Some("message_changed")) => {
            let message = &event["message"];
            let author = text(&message["user"]);
            if message.get("bot_id").is_some_and(|bot| !bot.is_null()) || author.as_deref() == Some(bot_user) {
                return Some(Err("an edit of a bot's message"));
            }
            let Some(text) = text(&message["text"]) else { return Some(Err("an edit without text")) };
            let capped: String = text.chars().take(super::wire::INBOUND_TEXT_LIMIT).collect();
            (message, author, Heard::Edit { text: capped })
        }
        ("message", Some("message_deleted")) => {
            let previous = &event["previous_message"];
            // The bot's own (a draft it withdrew) is not heard.
            if previous.get("bot_id").is_some_and(|bot| !bot.is_null()) || previous["user"].as_str() == Some(bot_user) {
                return Some(Err("a deletion of a bot's message"));
            }
            (previous, None, Heard::Delete)
        }
        (kind @ ("reaction_added" | "reaction_removed"), _) => {
            let author = text(&event["user"]);
            if author.as_deref() == Some(bot_user) {
                return Some(Err("the bot's own reaction"));
            }
            let emoji = format!(":{}:", event["reaction"].as_str().unwrap_or("?"));
            (&event["item"], author, Heard::Reaction { emoji, added: kind == "reaction_added" })
        }
        _ => return None,
    };
    let (message, author, heard) = heard;
    let channel = event["channel"].as_str().or(message["channel"].as_str()).unwrap_or_default();
    let ts = match heard {
        Heard::Delete => event["deleted_ts"].as_str().or(message["ts"].as_str()),
        _ => message["ts"].as_str(),
    };
    let (Some(delivery_id), Some(ts)) = (delivery_id, ts) else {
        return Some(Err("an edit, deletion or reaction without its event id or message"));
    };
    if channel.is_empty() {
        return Some(Err("an edit, deletion or reaction without its channel"));
    }
    // A message in a thread belongs to the thread's conversation; a reaction
    // names no thread, so it reaches the channel's.
    let conversation_key = match message["thread_ts"].as_str().filter(|thread| *thread != ts) {
        Some(thread) => format!("slack:{team}:{channel}:{thread}"),
        None => format!("slack:{team}:{channel}"),
    };
    let author = author.map(|id| Author { name: id.clone(), id, is_bot: false });
    Some(Ok(HeardEvent { conversation_key, delivery_id, message_id: ts.to_string(), author, heard }))
}

/// The answer to a modal submitted to the bot: edgebot opens no modal of
/// its own, so it reads none; the modal is updated to say so (a submission
/// is never dropped in silence) and the person is pointed to the chat.
pub fn view_submission_answer() -> Value {
    json!({
        "response_action": "update",
        "view": {
            "type": "modal",
            "title": { "type": "plain_text", "text": "Not read" },
            "blocks": [{
                "type": "section",
                "text": { "type": "mrkdwn", "text": crate::prompt::text("modal_refused") }
            }]
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_subscribes_to_the_reactions() {
        let manifest = include_str!("../../../scripts/slack-manifest.yaml");
        for event in HEARD_EVENTS {
            assert!(manifest.contains(&format!("      - {event}\n")), "{event}");
        }
        assert!(view_submission_answer()["view"]["blocks"][0]["text"]["text"].as_str().unwrap().contains("not read"));
    }

    fn envelope(event: Value) -> Value {
        json!({ "type": "event_callback", "team_id": "T1", "event_id": "Ev1", "event": event })
    }

    #[test]
    fn a_changed_message_is_an_edit_by_its_author_and_the_bots_own_are_not_heard() {
        let changed = envelope(json!({"type": "message", "subtype": "message_changed", "channel": "C1",
            "message": {"type": "message", "user": "U7", "text": "new", "ts": "1.5", "thread_ts": "1.0"}}));
        let heard = parse_heard(&changed, "UBOT").unwrap().unwrap();
        assert_eq!(heard.conversation_key, "slack:T1:C1:1.0");
        assert_eq!((heard.delivery_id.as_str(), heard.message_id.as_str()), ("Ev1", "1.5"));
        assert_eq!(heard.author.unwrap().id, "U7");
        assert_eq!(heard.heard, Heard::Edit { text: "new".into() });
        let own = envelope(json!({"type": "message", "subtype": "message_changed", "channel": "C1",
            "message": {"user": "UBOT", "text": "a draft", "ts": "1.6"}}));
        assert!(parse_heard(&own, "UBOT").unwrap().is_err());
    }

    #[test]
    fn a_deleted_message_and_reactions_are_heard_and_other_events_are_not() {
        let deleted = envelope(json!({"type": "message", "subtype": "message_deleted", "channel": "C1",
            "deleted_ts": "1.5", "previous_message": {"user": "U7", "text": "old", "ts": "1.5"}}));
        let heard = parse_heard(&deleted, "UBOT").unwrap().unwrap();
        assert_eq!((heard.conversation_key.as_str(), heard.message_id.as_str()), ("slack:T1:C1", "1.5"));
        assert_eq!(heard.heard, Heard::Delete);
        let reaction = envelope(json!({"type": "reaction_removed", "user": "U7", "reaction": "thumbsup",
            "item": {"type": "message", "channel": "C1", "ts": "2.0"}}));
        let heard = parse_heard(&reaction, "UBOT").unwrap().unwrap();
        assert_eq!(heard.heard, Heard::Reaction { emoji: ":thumbsup:".into(), added: false });
        assert_eq!(heard.message_id, "2.0");
        let plain = envelope(json!({"type": "message", "channel": "C1", "user": "U7", "text": "hi", "ts": "3.0"}));
        assert!(parse_heard(&plain, "UBOT").is_none(), "a new message is not heard here");
        let no_id = json!({"type": "event_callback", "event": reaction["event"]});
        assert!(parse_heard(&no_id, "UBOT").unwrap().is_err());
    }
}
