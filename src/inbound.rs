//! The platform-neutral shape of one inbound message.

use serde::{Deserialize, Serialize};

mod conversation_key;
mod heard;

pub use conversation_key::{ConversationKey, MalformedKey, PersonKey};
pub use heard::{reaction_line, Heard, HeardEvent};

/// Who wrote a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Author {
    pub id: String,
    pub name: String,
    pub is_bot: bool,
}

/// Where a reply to this message goes, in the platform's own terms
/// (externally tagged, like every enum that crosses JSON: see [`crate::process::Job`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyAddress {
    Telegram {
        chat_id: i64,
        /// Forum topic (`message_thread_id`), when the chat has topics.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        topic_id: Option<i64>,
        /// The agent whose own bot answers (None: the default agent's
        /// `TELEGRAM_BOT_TOKEN`); see `crate::agents`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
    },
    Slack {
        channel: String,
        /// The thread the conversation lives in; replies go there.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thread_ts: Option<String>,
        /// The workspace (`team_id`): whose bot token answers there.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        team: Option<String>,
    },
    /// A Discord interaction, answered through its webhook: the first piece
    /// edits the deferred response, later pieces are follow-ups.
    Discord { application_id: String, interaction_token: String, channel_id: String },
    /// A Discord channel message heard over the Gateway, answered through the
    /// REST API as the bot.
    DiscordChannel {
        channel_id: String,
        /// The guild, for its member count; None in DMs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        guild_id: Option<String>,
    },
    /// A browser's web-chat session: replies are pushed over its sockets.
    Web { session: String },
    /// A Teams conversation, answered through the Bot Framework connector at
    /// `service_url` (empty: the configured `TEAMS_SERVICE_URL`, for a
    /// conversation known only by its key).
    Teams {
        service_url: String,
        conversation_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tenant_id: Option<String>,
    },
    /// A person's WhatsApp chat with one business number (Cloud API).
    WhatsApp { phone_number_id: String, to: String },
    /// A conversation of a system that calls the plain webhook: replies go to its callback.
    Webhook { conversation: String },
    /// A mail thread: replies go to `to` from `from` (the routed address),
    /// threaded under `in_reply_to` and `references` (Message-IDs without brackets).
    Email {
        to: String,
        from: String,
        subject: String,
        in_reply_to: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        references: Vec<String>,
    },
    /// One side of a link between two agents: a reply goes to the peer's side
    /// (`link:{peer}:{agent}`) as its inbound (see `crate::links`).
    Link { agent: String, peer: String },
}

/// One message from any platform, normalised by its adapter. Everything the
/// engagement decision and the channel turn need is here; nothing else is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboundEvent {
    /// The conversation this belongs to, e.g. `telegram:12345`.
    pub conversation_key: String,
    /// The platform's id for this delivery (Telegram `update_id`, Slack `event_id`):
    /// a retried delivery carries the same one.
    pub delivery_id: String,
    /// The platform's id for the message itself.
    pub message_id: String,
    pub author: Author,
    pub text: String,
    pub is_dm: bool,
    /// A slash or context command: always addressed to the bot.
    #[serde(default)]
    pub is_command: bool,
    pub is_bot_mention: bool,
    pub mentions_others: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to_bot_message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to_other_message_id: Option<String>,
    /// The reply field names a thread's first message rather than the exact
    /// message answered (Slack's `parent_user_id`): a reply "to someone else"
    /// is then only the thread's, and the bot being in the thread overrides it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reply_is_thread_root: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// The conversation's name where the payload carries one (a Telegram
    /// group's title), for the dashboard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_title: Option<String>,
    /// Milliseconds since the Unix epoch, as the platform stamped it.
    pub timestamp_ms: i64,
    pub reply_address: ReplyAddress,
}

/// A file that came with a message, as the platform describes it (kept by
/// reference on ingress; the turn downloads it, see `files`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Attachment {
    /// What the platform calls it (`photo`, `voice`, `document`, a MIME type, a Slack file type).
    pub kind: String,
    pub platform_file_id: String,
    /// The name it was sent with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its size in bytes, as the platform says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Where the platform serves it (Slack's `url_private_download`, Discord's
    /// CDN URL); Telegram's is asked for with `getFile`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl ReplyAddress {
    /// Where a conversation's messages go, from its key alone (for jobs the
    /// admin creates): `telegram:{chat}[:{topic}]`, `slack:{team}:{channel}[:{thread}]`,
    /// `discord:{guild|dm}:{channel}`, `web:{session}`.
    pub fn for_conversation(conversation_key: &str) -> Option<ReplyAddress> {
        Some(match ConversationKey::parse(conversation_key).ok()? {
            ConversationKey::Telegram { chat, topic } => {
                let agent = crate::agents::agent_of(conversation_key);
                let agent = (agent != crate::agents::DEFAULT).then(|| agent.to_string());
                ReplyAddress::Telegram { chat_id: chat, topic_id: topic, agent }
            }
            ConversationKey::Slack { team, channel, thread } => {
                ReplyAddress::Slack { channel, thread_ts: thread, team: Some(team).filter(|team| !team.is_empty()) }
            }
            ConversationKey::Discord { guild, channel } => {
                ReplyAddress::DiscordChannel { channel_id: channel, guild_id: guild }
            }
            ConversationKey::Web { session } if is_web_session(&session) => ReplyAddress::Web { session },
            ConversationKey::Web { .. } => return None,
            ConversationKey::Teams { conversation } => {
                ReplyAddress::Teams { service_url: String::new(), conversation_id: conversation, tenant_id: None }
            }
            ConversationKey::WhatsApp { phone, person } => {
                ReplyAddress::WhatsApp { phone_number_id: phone, to: person }
            }
            ConversationKey::Webhook { conversation } => ReplyAddress::Webhook { conversation },
            // The key holds a hash of the thread: the address is only in the thread's mails.
            ConversationKey::Email { .. } => return None,
            ConversationKey::Link { agent, peer } => ReplyAddress::Link { agent, peer },
        })
    }
}

/// A web-chat session id: what the Worker issues (a UUID) and nothing else
/// that could carry a separator into a key.
pub fn is_web_session(session: &str) -> bool {
    (8..=64).contains(&session.len()) && session.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
}

impl InboundEvent {
    /// Cuts a text longer than the platform allows (`limit` characters) and
    /// says so at the end, so an oversized payload is never stored whole.
    pub fn with_text_capped(mut self, limit: usize) -> Self {
        if let Some((end, _)) = self.text.char_indices().nth(limit) {
            let left_out = self.text[end..].chars().count();
            self.text.truncate(end);
            self.text.push_str(&format!(" […cut: {left_out} more characters]"));
        }
        self
    }

    /// A message with no mention, reply, thread, file or timestamp: parsers
    /// start here and set what their payload says.
    pub fn new(
        conversation_key: String,
        delivery_id: String,
        message_id: String,
        author: Author,
        text: String,
        reply_address: ReplyAddress,
    ) -> Self {
        InboundEvent {
            conversation_key,
            delivery_id,
            message_id,
            author,
            text,
            is_dm: false,
            is_command: false,
            is_bot_mention: false,
            mentions_others: false,
            reply_to_bot_message_id: None,
            reply_to_other_message_id: None,
            reply_is_thread_root: false,
            thread: None,
            attachments: Vec::new(),
            conversation_title: None,
            timestamp_ms: 0,
            reply_address,
        }
    }

    /// A plain text message in a Telegram chat: the base that tests and
    /// benchmarks adjust field by field.
    pub fn plain_text(chat_id: i64, delivery_id: &str, author: Author, text: &str) -> Self {
        InboundEvent::new(
            format!("telegram:{chat_id}"),
            delivery_id.to_string(),
            delivery_id.to_string(),
            author,
            text.to_string(),
            ReplyAddress::Telegram { chat_id, topic_id: None, agent: None },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(text: &str) -> InboundEvent {
        let author = Author { id: "1".into(), name: "ada".into(), is_bot: false };
        InboundEvent::plain_text(1, "1", author, text)
    }

    #[test]
    fn a_conversation_key_names_its_reply_address() {
        let cases = [
            ("telegram:-100", Some(ReplyAddress::Telegram { chat_id: -100, topic_id: None, agent: None })),
            ("telegram:-100:7", Some(ReplyAddress::Telegram { chat_id: -100, topic_id: Some(7), agent: None })),
            (
                "agent:b:telegram:-100",
                Some(ReplyAddress::Telegram { chat_id: -100, topic_id: None, agent: Some("b".into()) }),
            ),
            (
                "slack:T1:C1",
                Some(ReplyAddress::Slack { channel: "C1".into(), thread_ts: None, team: Some("T1".into()) }),
            ),
            (
                "slack:T1:C1:1.2",
                Some(ReplyAddress::Slack {
                    channel: "C1".into(),
                    thread_ts: Some("1.2".into()),
                    team: Some("T1".into()),
                }),
            ),
            (
                "discord:G1:C1",
                Some(ReplyAddress::DiscordChannel { channel_id: "C1".into(), guild_id: Some("G1".into()) }),
            ),
            ("discord:dm:C1", Some(ReplyAddress::DiscordChannel { channel_id: "C1".into(), guild_id: None })),
            ("web:0f8e-4c2a-9b1d", Some(ReplyAddress::Web { session: "0f8e-4c2a-9b1d".into() })),
            (
                "whatsapp:PN1:4915100",
                Some(ReplyAddress::WhatsApp { phone_number_id: "PN1".into(), to: "4915100".into() }),
            ),
            ("webhook:orders-42", Some(ReplyAddress::Webhook { conversation: "orders-42".into() })),
            ("web:short", None),
            ("web:a:b:c:d:e:f:g", None),
            ("telegram:abc", None),
            ("irc:x", None),
            (
                "teams:19:abc@thread.tacv2;messageid=1",
                Some(ReplyAddress::Teams {
                    service_url: String::new(),
                    conversation_id: "19:abc@thread.tacv2;messageid=1".into(),
                    tenant_id: None,
                }),
            ),
            ("email:0123456789abcdef0123456789abcdef", None),
        ];
        for (key, expected) in cases {
            assert_eq!(ReplyAddress::for_conversation(key), expected, "{key}");
        }
    }

    #[test]
    fn a_text_over_the_limit_is_cut_with_a_marker() {
        assert_eq!(text("héllo").with_text_capped(5).text, "héllo", "at the limit nothing changes");
        assert_eq!(text("héllo wörld").with_text_capped(5).text, "héllo […cut: 6 more characters]");
        let long = text(&"é".repeat(100_000)).with_text_capped(4096);
        assert!(long.text.starts_with(&"é".repeat(4096)));
        assert!(long.text.ends_with("[…cut: 95904 more characters]"));
    }
}
