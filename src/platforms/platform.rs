//! The messengers the bot speaks on, as one type: the name each goes by in
//! conversation keys and person keys (`telegram:42`), and the static facts
//! about it that the rest of the code asks (what it is called in a prompt,
//! the markup it reads, its longest message). What its settings say is in
//! [`crate::platforms::settings`]. Pure: the Workers-facing
//! registry that picks a [`crate::platforms::messenger::Messenger`] for a
//! reply address is [`crate::platforms::outbound`].

use crate::inbound::ReplyAddress;
use crate::platforms::{discord, email, link, plain_webhook, slack, teams, telegram, web_chat, whatsapp};
use crate::reply::markup::Flavor;

crate::named! {
    /// A messenger the bot speaks on, by the name it goes by in conversation
    /// keys, person keys and settings (`STREAM_REPLIES`, `APPROVERS`).
    #[derive(Hash, PartialOrd, Ord)]
    pub enum Platform {
        Telegram = "telegram",
        Slack = "slack",
        Discord = "discord",
        /// The web chat (`web:{session}`).
        Web = "web",
        /// Microsoft Teams, through the Bot Framework.
        Teams = "teams",
        /// WhatsApp through the Cloud API (`whatsapp:{phone_number_id}:{wa_id}`).
        WhatsApp = "whatsapp",
        /// The plain webhook: any system, with signed JSON (`webhook:{conversation}`).
        Webhook = "webhook",
        /// Email through Email Routing (`email:{thread hash}`).
        Email = "email",
        /// A link between two agents (`link:{self}:{peer}`): a reply is the peer's inbound.
        Link = "link",
    }
}

impl Platform {
    /// The platform a conversation key or person key (`{platform}:…`) names,
    /// by its first part alone (after an agent's prefix, see [`crate::agents`]).
    pub fn of_key(key: &str) -> Option<Platform> {
        Platform::parse(crate::agents::platform_part(key).split_once(':')?.0)
    }

    /// The platform a reply goes out on.
    pub fn answering(address: &ReplyAddress) -> Platform {
        match address {
            ReplyAddress::Telegram { .. } => Platform::Telegram,
            ReplyAddress::Slack { .. } => Platform::Slack,
            ReplyAddress::Discord { .. } | ReplyAddress::DiscordChannel { .. } => Platform::Discord,
            ReplyAddress::Web { .. } => Platform::Web,
            ReplyAddress::Teams { .. } => Platform::Teams,
            ReplyAddress::WhatsApp { .. } => Platform::WhatsApp,
            ReplyAddress::Webhook { .. } => Platform::Webhook,
            ReplyAddress::Email { .. } => Platform::Email,
            ReplyAddress::Link { .. } => Platform::Link,
        }
    }

    /// What the prompt and the logs call it.
    pub const fn name(self) -> &'static str {
        match self {
            Platform::Telegram => "Telegram",
            Platform::Slack => "Slack",
            Platform::Discord => "Discord",
            Platform::Web => "the web chat",
            Platform::Teams => "Microsoft Teams",
            Platform::WhatsApp => "WhatsApp",
            Platform::Webhook => "the plain webhook",
            Platform::Email => "Email",
            Platform::Link => "a link between agents",
        }
    }

    /// The format it reads replies in.
    pub const fn flavor(self) -> Flavor {
        match self {
            Platform::Telegram => Flavor::TelegramHtml,
            Platform::Slack => Flavor::SlackMrkdwn,
            Platform::Discord => Flavor::DiscordMarkdown,
            Platform::Web => Flavor::Plain,
            Platform::Teams => Flavor::TeamsMarkdown,
            Platform::WhatsApp => Flavor::WhatsApp,
            Platform::Webhook => Flavor::Markdown,
            // A plain-text mail: the web chat's plain text (no Markdown a mail client would show raw).
            Platform::Email => Flavor::Plain,
            // The peer agent's model reads Markdown, as the plain webhook's receivers do.
            Platform::Link => Flavor::Markdown,
        }
    }

    /// The longest message it takes, in characters; replies are split to fit.
    pub const fn message_limit(self) -> usize {
        match self {
            Platform::Telegram => telegram::wire::MESSAGE_LIMIT,
            Platform::Slack => slack::wire::MESSAGE_LIMIT,
            Platform::Discord => discord::wire::MESSAGE_LIMIT,
            Platform::Web => web_chat::wire::MESSAGE_LIMIT,
            Platform::Teams => teams::wire::MESSAGE_LIMIT,
            Platform::WhatsApp => whatsapp::wire::MESSAGE_LIMIT,
            Platform::Webhook => plain_webhook::wire::MESSAGE_LIMIT,
            Platform::Email => email::wire::MESSAGE_LIMIT,
            Platform::Link => link::wire::MESSAGE_LIMIT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_platform_is_read_back_from_its_name_and_nothing_else_is() {
        crate::named::assert_spellings::<Platform>(&["", "Telegram", "web ", "WhatsApp", "telegram:1"]);
        for platform in Platform::ALL {
            assert_eq!(Platform::of_key(&format!("{platform}:42")), Some(platform));
        }
        assert_eq!(Platform::of_key("telegram"), None, "a key has a platform and an id");
        assert_eq!(Platform::of_key("operators"), None);
        assert_eq!(Platform::of_key("agent:beta:slack:T1:C1"), Some(Platform::Slack), "after an agent's prefix");
        assert_eq!(Platform::of_key("agent:beta:"), None);
    }

    #[test]
    fn a_reply_goes_out_on_the_platform_its_address_names() {
        let cases = [
            (ReplyAddress::Telegram { chat_id: 1, topic_id: None, agent: None }, Platform::Telegram),
            (ReplyAddress::Slack { channel: "C1".into(), thread_ts: None, team: None }, Platform::Slack),
            (
                ReplyAddress::Discord {
                    application_id: "A".into(),
                    interaction_token: "t".into(),
                    channel_id: "C".into(),
                },
                Platform::Discord,
            ),
            (ReplyAddress::DiscordChannel { channel_id: "C".into(), guild_id: None }, Platform::Discord),
            (ReplyAddress::Web { session: "s".into() }, Platform::Web),
            (
                ReplyAddress::Teams { service_url: String::new(), conversation_id: "a:1".into(), tenant_id: None },
                Platform::Teams,
            ),
            (ReplyAddress::WhatsApp { phone_number_id: "P".into(), to: "1".into() }, Platform::WhatsApp),
            (ReplyAddress::Webhook { conversation: "c".into() }, Platform::Webhook),
            (
                ReplyAddress::Email {
                    to: "a@b.c".into(),
                    from: "bot@b.c".into(),
                    subject: "Re: x".into(),
                    in_reply_to: "m@b.c".into(),
                    references: vec![],
                },
                Platform::Email,
            ),
            (ReplyAddress::Link { agent: "ops".into(), peer: "default".into() }, Platform::Link),
        ];
        for (address, platform) in cases {
            assert_eq!(Platform::answering(&address), platform, "{address:?}");
        }
    }

    #[test]
    fn each_platform_has_its_own_format_and_a_limit_a_reply_fits_in() {
        let flavors: std::collections::BTreeSet<_> =
            Platform::ALL.iter().map(|platform| format!("{:?}", platform.flavor())).collect();
        // Email reads plain text, as the web chat does; every other platform has its own markup.
        // A link's peer reads Markdown, as the plain webhook's receivers do.
        assert_eq!(flavors.len(), Platform::ALL.len() - 2, "no two platforms read the same markup");
        assert_eq!(Platform::Email.flavor(), Platform::Web.flavor());
        assert_eq!(Platform::Link.flavor(), Platform::Webhook.flavor());
        assert_eq!(Platform::Discord.message_limit(), 2_000);
        assert_eq!(Platform::Telegram.message_limit(), 4_096);
        assert!(Platform::ALL.iter().all(|platform| platform.message_limit() >= 2_000));
    }
}
