//! The key of a conversation, and the one place it is read. Every message,
//! history row, job and memory names its conversation by this key, written
//! as text (`telegram:{chat}[:{topic}]`, `slack:{team}:{channel}[:{thread_ts}]`,
//! `discord:{guild|dm}:{channel}`, `web:{session}`, `teams:{conversation id}`, `email:{thread}`, …);
//! [`ConversationKey::parse`] turns the text back into its parts, and `Display` writes it again.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::agents::rules::is_agent_id;

/// A key that names no conversation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a conversation key: {0:?}")]
pub struct MalformedKey(pub String);

/// Which conversation a message belongs to: a chat, a channel (or a thread of
/// one), a web-chat session. Written as text with [`fmt::Display`] (and in
/// JSON as that text); read back with [`ConversationKey::parse`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ConversationKey {
    /// `telegram:{chat}`, or `telegram:{chat}:{topic}` for a forum topic.
    Telegram { chat: i64, topic: Option<i64> },
    /// `slack:{team}:{channel}`, or `slack:{team}:{channel}:{thread_ts}` for a
    /// thread. The team is empty where the payload names none.
    Slack { team: String, channel: String, thread: Option<String> },
    /// `discord:{guild}:{channel}`, or `discord:dm:{channel}` for a DM
    /// (a Discord thread is a channel of its own).
    Discord { guild: Option<String>, channel: String },
    /// `web:{session}`: a browser's web-chat session.
    Web { session: String },
    /// `teams:{conversation id}`: the id as Teams writes it, colons and all
    /// (`a:1…` a personal chat, `19:…@thread.tacv2;messageid=…` a channel's
    /// reply chain).
    Teams { conversation: String },
    /// `whatsapp:{phone_number_id}:{wa_id}`: a person's chat with one business number.
    WhatsApp { phone: String, person: String },
    /// `webhook:{conversation}`: a conversation named by a system that calls the plain webhook.
    Webhook { conversation: String },
    /// `email:{thread}`: a mail thread with one person, named by 32 hex digits
    /// (see `platforms::email::wire`).
    Email { thread: String },
    /// `link:{agent}:{peer}`: `agent`'s side of its link conversation with
    /// `peer` (agent ids: `[a-z][a-z0-9-]{0,31}`, see `crate::links`).
    Link { agent: String, peer: String },
}

/// What separates a Teams channel's id from the reply chain's root message.
const TEAMS_THREAD: &str = ";messageid=";

/// The scope word of a Discord DM's key, where a guild's id would stand.
const DISCORD_DM: &str = "dm";

impl ConversationKey {
    /// Reads a key. Every part but a Slack team must be present and non-empty,
    /// a Telegram chat and topic are integers written as Rust writes them (so a
    /// key read and written again is the same text), and nothing follows the
    /// last part.
    ///
    /// A non-default agent's key (`agent:{id}:telegram:42`, see
    /// [`crate::agents`]) reads as its platform part: the parts name the
    /// platform's place, and `Display` writes that part alone; the agent is
    /// read off the text with [`crate::agents::agent_of`].
    pub fn parse(key: &str) -> Result<ConversationKey, MalformedKey> {
        let malformed = || MalformedKey(key.to_string());
        let key = crate::agents::platform_part(key);
        let filled = |part: &str| (!part.is_empty()).then(|| part.to_string()).ok_or_else(malformed);
        let integer =
            |part: &str| part.parse::<i64>().ok().filter(|number| number.to_string() == part).ok_or_else(malformed);
        if let Some(conversation) = key.strip_prefix("teams:") {
            return Ok(ConversationKey::Teams { conversation: filled(conversation)? });
        }
        let parts: Vec<&str> = key.split(':').collect();
        match parts.as_slice() {
            ["telegram", chat] => Ok(ConversationKey::Telegram { chat: integer(chat)?, topic: None }),
            ["telegram", chat, topic] => {
                Ok(ConversationKey::Telegram { chat: integer(chat)?, topic: Some(integer(topic)?) })
            }
            ["slack", team, channel] => {
                Ok(ConversationKey::Slack { team: team.to_string(), channel: filled(channel)?, thread: None })
            }
            ["slack", team, channel, thread] => Ok(ConversationKey::Slack {
                team: team.to_string(),
                channel: filled(channel)?,
                thread: Some(filled(thread)?),
            }),
            ["discord", scope, channel] => Ok(ConversationKey::Discord {
                guild: (filled(scope)? != DISCORD_DM).then(|| scope.to_string()),
                channel: filled(channel)?,
            }),
            ["web", session] => Ok(ConversationKey::Web { session: filled(session)? }),
            ["webhook", conversation] => Ok(ConversationKey::Webhook { conversation: filled(conversation)? }),
            ["whatsapp", phone, person] => {
                Ok(ConversationKey::WhatsApp { phone: filled(phone)?, person: filled(person)? })
            }
            ["email", thread] if is_thread_hash(thread) => Ok(ConversationKey::Email { thread: thread.to_string() }),
            ["link", agent, peer] if is_agent_id(agent) && is_agent_id(peer) && agent != peer => {
                Ok(ConversationKey::Link { agent: agent.to_string(), peer: peer.to_string() })
            }
            _ => Err(malformed()),
        }
    }

    /// The platform's name, as the key starts: `telegram`, `slack`, `discord`, `web`.
    pub fn platform(&self) -> &'static str {
        match self {
            ConversationKey::Telegram { .. } => "telegram",
            ConversationKey::Slack { .. } => "slack",
            ConversationKey::Discord { .. } => "discord",
            ConversationKey::Web { .. } => "web",
            ConversationKey::Teams { .. } => "teams",
            ConversationKey::WhatsApp { .. } => "whatsapp",
            ConversationKey::Webhook { .. } => "webhook",
            ConversationKey::Email { .. } => "email",
            ConversationKey::Link { .. } => "link",
        }
    }

    /// The platform's id of the place messages go: a Telegram chat, a Slack or
    /// Discord channel, a web-chat session.
    pub fn channel(&self) -> String {
        match self {
            ConversationKey::Telegram { chat, .. } => chat.to_string(),
            ConversationKey::Slack { channel, .. } | ConversationKey::Discord { channel, .. } => channel.clone(),
            ConversationKey::Web { session } => session.clone(),
            ConversationKey::Teams { conversation } => {
                conversation.split_once(TEAMS_THREAD).map_or(conversation.as_str(), |(channel, _)| channel).to_string()
            }
            ConversationKey::WhatsApp { person, .. } => person.clone(),
            ConversationKey::Webhook { conversation } => conversation.clone(),
            ConversationKey::Email { thread } => thread.clone(),
            ConversationKey::Link { peer, .. } => peer.clone(),
        }
    }

    /// The Discord guild the channel is in (None in a DM, and on other platforms).
    pub fn guild(&self) -> Option<&str> {
        match self {
            ConversationKey::Discord { guild, .. } => guild.as_deref(),
            _ => None,
        }
    }

    /// The thread within the channel: a Slack thread's `thread_ts`, a Telegram
    /// forum topic (None for the channel itself, and on other platforms).
    pub fn thread(&self) -> Option<String> {
        match self {
            ConversationKey::Telegram { topic, .. } => topic.map(|topic| topic.to_string()),
            ConversationKey::Slack { thread, .. } => thread.clone(),
            ConversationKey::Teams { conversation } => {
                conversation.split_once(TEAMS_THREAD).map(|(_, root)| root.to_string())
            }
            _ => None,
        }
    }

    /// The channel or group a thread or topic belongs to (itself when it is no thread).
    pub fn without_thread(&self) -> ConversationKey {
        match self {
            ConversationKey::Telegram { chat, .. } => ConversationKey::Telegram { chat: *chat, topic: None },
            ConversationKey::Slack { team, channel, .. } => {
                ConversationKey::Slack { team: team.clone(), channel: channel.clone(), thread: None }
            }
            ConversationKey::Teams { .. } => ConversationKey::Teams { conversation: self.channel() },
            other => other.clone(),
        }
    }
}

impl fmt::Display for ConversationKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConversationKey::Telegram { chat, topic: None } => write!(formatter, "telegram:{chat}"),
            ConversationKey::Telegram { chat, topic: Some(topic) } => write!(formatter, "telegram:{chat}:{topic}"),
            ConversationKey::Slack { team, channel, thread: None } => write!(formatter, "slack:{team}:{channel}"),
            ConversationKey::Slack { team, channel, thread: Some(thread) } => {
                write!(formatter, "slack:{team}:{channel}:{thread}")
            }
            ConversationKey::Discord { guild, channel } => {
                write!(formatter, "discord:{}:{channel}", guild.as_deref().unwrap_or(DISCORD_DM))
            }
            ConversationKey::Web { session } => write!(formatter, "web:{session}"),
            ConversationKey::Teams { conversation } => write!(formatter, "teams:{conversation}"),
            ConversationKey::WhatsApp { phone, person } => write!(formatter, "whatsapp:{phone}:{person}"),
            ConversationKey::Webhook { conversation } => write!(formatter, "webhook:{conversation}"),
            ConversationKey::Email { thread } => write!(formatter, "email:{thread}"),
            ConversationKey::Link { agent, peer } => write!(formatter, "link:{agent}:{peer}"),
        }
    }
}

/// An email thread's name in its key: 32 lowercase hex digits.
fn is_thread_hash(thread: &str) -> bool {
    thread.len() == 32 && thread.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

impl FromStr for ConversationKey {
    type Err = MalformedKey;

    fn from_str(key: &str) -> Result<Self, Self::Err> {
        ConversationKey::parse(key)
    }
}

impl Serialize for ConversationKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ConversationKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ConversationKey::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A person on one platform: `{platform}:{user id}` (the id may itself hold
/// colons: a web-chat guest is `web:{session}:{role}`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PersonKey {
    platform: String,
    user_id: String,
}

impl PersonKey {
    /// Reads a key: a platform and an id, both non-empty, split at the first colon.
    pub fn parse(key: &str) -> Result<PersonKey, MalformedKey> {
        match key.split_once(':') {
            Some((platform, user_id)) if !platform.is_empty() && !user_id.is_empty() => {
                Ok(PersonKey { platform: platform.to_string(), user_id: user_id.to_string() })
            }
            _ => Err(MalformedKey(key.to_string())),
        }
    }

    pub fn platform(&self) -> &str {
        &self.platform
    }

    /// The platform's id of the person.
    pub fn user_id(&self) -> &str {
        &self.user_id
    }
}

impl fmt::Display for PersonKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}:{}", self.platform, self.user_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slack(channel: &str, thread: Option<&str>) -> ConversationKey {
        ConversationKey::Slack { team: "T1".into(), channel: channel.into(), thread: thread.map(str::to_string) }
    }

    #[test]
    fn every_kind_of_key_reads_into_its_parts_and_writes_back_the_same() {
        let cases = [
            ("telegram:1111", ConversationKey::Telegram { chat: 1111, topic: None }),
            ("telegram:-100", ConversationKey::Telegram { chat: -100, topic: None }),
            ("telegram:-100:7", ConversationKey::Telegram { chat: -100, topic: Some(7) }),
            ("slack:T1:C1", slack("C1", None)),
            ("slack:T1:C1:1700000000.0001", slack("C1", Some("1700000000.0001"))),
            ("slack::C1", ConversationKey::Slack { team: String::new(), channel: "C1".into(), thread: None }),
            ("discord:G1:C1", ConversationKey::Discord { guild: Some("G1".into()), channel: "C1".into() }),
            ("discord:dm:42", ConversationKey::Discord { guild: None, channel: "42".into() }),
            ("web:0f8e-4c2a-9b1d", ConversationKey::Web { session: "0f8e-4c2a-9b1d".into() }),
            ("teams:a:1xyz", ConversationKey::Teams { conversation: "a:1xyz".into() }),
            ("whatsapp:PN1:4915100", ConversationKey::WhatsApp { phone: "PN1".into(), person: "4915100".into() }),
            ("webhook:orders-42", ConversationKey::Webhook { conversation: "orders-42".into() }),
            (
                "email:0123456789abcdef0123456789abcdef",
                ConversationKey::Email { thread: "0123456789abcdef0123456789abcdef".into() },
            ),
        ];
        for (text, key) in cases {
            assert_eq!(ConversationKey::parse(text), Ok(key.clone()), "{text}");
            assert_eq!(key.to_string(), text);
            assert_eq!(text.parse::<ConversationKey>(), Ok(key.clone()));
            let json = serde_json::to_value(&key).unwrap();
            assert_eq!(json, serde_json::json!(text), "JSON holds the text");
            assert_eq!(serde_json::from_value::<ConversationKey>(json).unwrap(), key);
        }
    }

    #[test]
    fn an_agents_key_reads_as_its_platform_part() {
        assert_eq!(
            ConversationKey::parse("agent:b:telegram:-100:7"),
            Ok(ConversationKey::Telegram { chat: -100, topic: Some(7) })
        );
        assert!(ConversationKey::parse("agent:b:").is_err());
        assert!(ConversationKey::parse("agent:b:nothing:1").is_err());
    }

    #[test]
    fn a_malformed_key_is_an_error() {
        let cases = [
            "",
            "telegram",
            "telegram:",
            "telegram:abc",
            "telegram:007",
            "telegram:+7",
            "telegram:1:x",
            "telegram:1:2:3",
            "slack:T1",
            "slack:T1:",
            "slack:T1:C1:",
            "slack:T1:C1:1.2:3",
            "discord:C1",
            "discord::C1",
            "discord:G1:",
            "discord:G1:C1:T1",
            "web:",
            "web:a:b",
            "whatsapp:PN1",
            "webhook:",
            "webhook:a:b",
            "whatsapp::4915100",
            "whatsapp:PN1:",
            "whatsapp:PN1:1:2",
            "irc:x",
            "teams:",
            "email:",
            "email:0123456789ABCDEF0123456789ABCDEF",
            "email:0123",
            "email:0123456789abcdef0123456789abcdef:x",
            "Telegram:1",
            "shared",
        ];
        for text in cases {
            assert_eq!(ConversationKey::parse(text), Err(MalformedKey(text.to_string())), "{text:?}");
        }
        assert!(serde_json::from_value::<ConversationKey>(serde_json::json!("irc:x")).is_err());
    }

    #[test]
    fn a_key_names_its_platform_channel_guild_and_thread() {
        let key = |text: &str| ConversationKey::parse(text).unwrap();
        let cases = [
            ("telegram:-100", "telegram", "-100", None, None),
            ("telegram:-100:7", "telegram", "-100", None, Some("7")),
            ("slack:T1:C1", "slack", "C1", None, None),
            ("slack:T1:C1:1.2", "slack", "C1", None, Some("1.2")),
            ("discord:G1:C1", "discord", "C1", Some("G1"), None),
            ("discord:dm:C1", "discord", "C1", None, None),
            ("web:abc", "web", "abc", None, None),
            ("teams:a:1", "teams", "a:1", None, None),
            ("teams:19:c@thread.tacv2;messageid=17", "teams", "19:c@thread.tacv2", None, Some("17")),
        ];
        for (text, platform, channel, guild, thread) in cases {
            let parsed = key(text);
            assert_eq!(
                (parsed.platform(), parsed.channel().as_str(), parsed.guild(), parsed.thread().as_deref()),
                (platform, channel, guild, thread),
                "{text}"
            );
        }
        let places = [
            ("telegram:-100:7", "telegram:-100"),
            ("slack:T1:C1:1.2", "slack:T1:C1"),
            ("slack:T1:C1", "slack:T1:C1"),
            ("discord:G1:C1", "discord:G1:C1"),
            ("web:abc", "web:abc"),
            ("teams:19:c@thread.tacv2;messageid=17", "teams:19:c@thread.tacv2"),
        ];
        for (text, place) in places {
            assert_eq!(key(text).without_thread().to_string(), place, "{text}");
        }
    }

    #[test]
    fn a_person_key_is_a_platform_and_an_id() {
        let web = PersonKey::parse("web:abc:guest").unwrap();
        assert_eq!((web.platform(), web.user_id()), ("web", "abc:guest"), "the id keeps its colons");
        assert_eq!(web.to_string(), "web:abc:guest");
        let telegram = PersonKey::parse("telegram:42").unwrap();
        assert_eq!((telegram.platform(), telegram.user_id()), ("telegram", "42"));
        for text in ["", "telegram", "telegram:", ":42", ":"] {
            assert_eq!(PersonKey::parse(text), Err(MalformedKey(text.to_string())), "{text:?}");
        }
    }
}
