//! What a messenger hears besides new messages: an edit, a deletion, a
//! reaction. Every messenger parses its own wire format into one
//! [`HeardEvent`]; the conversation's channel object takes it through the
//! same inbox dedupe as a message (its `delivery_id`), and it never starts a
//! turn of its own.

use serde::{Deserialize, Serialize};

use super::Author;

/// What happened to a message the bot may have seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Heard {
    /// Its author changed its text.
    Edit { text: String },
    /// It was deleted (by its author or a moderator).
    Delete,
    /// Someone reacted to it (`added`), or took a reaction back.
    Reaction { emoji: String, added: bool },
}

/// One edit, deletion or reaction, normalised by its messenger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeardEvent {
    /// The conversation of the message it is about.
    pub conversation_key: String,
    /// The platform's id for this delivery: a retried delivery carries the same one.
    pub delivery_id: String,
    /// The platform's id of the message it is about (as `InboundEvent::message_id`).
    pub message_id: String,
    /// Who edited or reacted; None where the platform does not say (a deletion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<Author>,
    pub heard: Heard,
}

impl Heard {
    /// The word the inbox files it under.
    pub fn label(&self) -> &'static str {
        match self {
            Heard::Edit { .. } => "edit",
            Heard::Delete => "delete",
            Heard::Reaction { added: true, .. } => "reaction",
            Heard::Reaction { added: false, .. } => "reaction_removed",
        }
    }
}

/// How many characters of the bot's message a reaction line quotes.
pub const REACTION_QUOTE_CHARS: usize = 80;
/// An emoji's name is cut to this many characters (a custom emoji's name is
/// free text the platform lets people choose).
pub const REACTION_EMOJI_CHARS: usize = 32;

/// The history line a reaction to the bot's message becomes, which the next
/// turn reads: "(Ann reacted 👍 to your message “Sure, at 5…”)".
pub fn reaction_line(who: &str, emoji: &str, added: bool, message: &str) -> String {
    let quoted: String = message.chars().take(REACTION_QUOTE_CHARS).collect();
    let more = if message.chars().count() > REACTION_QUOTE_CHARS { "…" } else { "" };
    let quoted = quoted.replace('\n', " ");
    let emoji: String = emoji.chars().take(REACTION_EMOJI_CHARS).filter(|c| !c.is_control()).collect();
    match added {
        true => format!("({who} reacted {emoji} to your message “{quoted}{more}”)"),
        false => format!("({who} took back their {emoji} on your message “{quoted}{more}”)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reaction_line_names_who_what_and_quotes_the_message_short() {
        assert_eq!(reaction_line("Ann", "👍", true, "See you at 5"), "(Ann reacted 👍 to your message “See you at 5”)");
        let long = "a".repeat(200);
        let line = reaction_line("Ann", "🎉", false, &long);
        assert!(line.starts_with("(Ann took back their 🎉 on your message “"));
        assert!(line.ends_with(&format!("{}…”)", "a".repeat(REACTION_QUOTE_CHARS))));
        assert_eq!(reaction_line("B", "x", true, "two\nlines"), "(B reacted x to your message “two lines”)");
        let named = reaction_line("B", &format!("{}\n", "y".repeat(100)), true, "m");
        assert_eq!(named, format!("(B reacted {} to your message “m”)", "y".repeat(REACTION_EMOJI_CHARS)));
    }

    #[test]
    fn each_kind_has_its_inbox_label_and_survives_json() {
        let cases = [
            (Heard::Edit { text: "new".into() }, "edit"),
            (Heard::Delete, "delete"),
            (Heard::Reaction { emoji: "👍".into(), added: true }, "reaction"),
            (Heard::Reaction { emoji: "👍".into(), added: false }, "reaction_removed"),
        ];
        for (heard, label) in cases {
            assert_eq!(heard.label(), label);
            let event = HeardEvent {
                conversation_key: "telegram:1".into(),
                delivery_id: "9".into(),
                message_id: "5".into(),
                author: None,
                heard,
            };
            let back: HeardEvent = serde_json::from_str(&serde_json::to_string(&event).unwrap()).unwrap();
            assert_eq!(back, event);
        }
    }
}
