//! Outbound calls to the platforms: [`Platform`] picks the [`Messenger`] that
//! answers at a reply address. A new platform is one more implementation, one
//! more [`Platform`] variant and an arm in [`for_address`] and in each
//! delegating method of `impl Messenger for Platform` (the compiler lists every
//! match to extend). Every text sent is
//! redacted here (configured secrets and key shapes), whichever path made it,
//! over exactly the text that leaves (already rendered for the platform, sent
//! or edited in), and
//! so is every failure's message (it reaches logs and the admin API). A
//! reaction leaves only if it is an emoji or a short name that holds no secret.

use crate::channel::participants::MembershipCount;
use crate::config::Config;
use crate::files::rules::Refusal;
use crate::inbound::{Attachment, InboundEvent, ReplyAddress};
use crate::log_line::LogLine;
use crate::platforms::messenger::Interrupted;
use crate::platforms::messenger::Messenger;
use crate::platforms::messenger::Piece;
use crate::platforms::messenger::SendFailure;
use crate::platforms::messenger::Streaming;
use crate::reply::markup::Flavor;
use crate::reply::reaction::{self, Reaction};
use crate::runtime::log::Emit;

use crate::platforms::discord::messenger::Discord;
use crate::platforms::slack::messenger::Slack;
use crate::platforms::telegram::messenger::Telegram;
use crate::platforms::web_chat::messenger::WebChat;
use crate::runtime::config::redactor;

/// The platform a reply address belongs to.
pub enum Platform<'a> {
    Telegram(Telegram<'a>),
    Slack(Slack<'a>),
    Discord(Discord<'a>),
    Web(WebChat<'a>),
}

/// The platform that answers at `address`; a web chat answers over the
/// sockets of the conversation's object (`state`).
pub fn for_address<'a>(config: &'a Config, state: &'a worker::State, address: &ReplyAddress) -> Platform<'a> {
    match address {
        ReplyAddress::Web { .. } => {
            Platform::Web(WebChat { state, bot_name: &config.bot_name, streams: config.streams("web") })
        }
        ReplyAddress::Telegram { .. } => Platform::Telegram(Telegram { config }),
        ReplyAddress::Slack { .. } => Platform::Slack(Slack { config }),
        ReplyAddress::Discord { .. } | ReplyAddress::DiscordChannel { .. } => Platform::Discord(Discord { config }),
    }
}

impl Platform<'_> {
    /// The platform's name, for prompts.
    pub fn name(&self) -> &'static str {
        match self {
            Platform::Telegram(_) => "Telegram",
            Platform::Slack(_) => "Slack",
            Platform::Discord(_) => "Discord",
            Platform::Web(_) => "the web chat",
        }
    }

    /// The format the platform reads replies in.
    pub fn flavor(&self) -> Flavor {
        match self {
            Platform::Telegram(_) => Flavor::TelegramHtml,
            Platform::Slack(_) => Flavor::SlackMrkdwn,
            Platform::Discord(_) => Flavor::DiscordMarkdown,
            Platform::Web(_) => Flavor::Plain,
        }
    }

    /// Reacts with what the model chose, if it is an emoji or short name that
    /// carries no secret (checked again here, where it leaves).
    pub async fn react_with(&self, event: &InboundEvent, emoji: &str) {
        let refused =
            |why: &str| LogLine::warn("reaction_refused").conversation(&event.conversation_key).reason(&why).emit();
        let found = redactor().found(emoji);
        if !found.is_empty() {
            return refused(&format!("it holds {}", found.join(", ")));
        }
        match reaction::parse(emoji) {
            Ok(reaction) => self.react(event, &reaction).await,
            Err(why) => refused(why),
        }
    }
}

impl Messenger for Platform<'_> {
    fn message_limit(&self) -> usize {
        match self {
            Platform::Telegram(platform) => platform.message_limit(),
            Platform::Slack(platform) => platform.message_limit(),
            Platform::Discord(platform) => platform.message_limit(),
            Platform::Web(platform) => platform.message_limit(),
        }
    }

    async fn send(&self, address: &ReplyAddress, piece: &Piece<'_>) -> Result<String, SendFailure> {
        let text = redactor().redact(piece.text);
        let piece = &Piece { text: &text, ..*piece };
        match self {
            Platform::Telegram(platform) => platform.send(address, piece).await,
            Platform::Slack(platform) => platform.send(address, piece).await,
            Platform::Discord(platform) => platform.send(address, piece).await,
            Platform::Web(platform) => platform.send(address, piece).await,
        }
    }

    async fn interrupted(&self, address: &ReplyAddress, piece: &Piece<'_>, since_ms: i64) -> Interrupted {
        match self {
            Platform::Telegram(platform) => platform.interrupted(address, piece, since_ms).await,
            Platform::Slack(platform) => platform.interrupted(address, piece, since_ms).await,
            Platform::Discord(platform) => platform.interrupted(address, piece, since_ms).await,
            Platform::Web(platform) => platform.interrupted(address, piece, since_ms).await,
        }
    }

    async fn show_working(&self, event: &InboundEvent) {
        match self {
            Platform::Telegram(platform) => platform.show_working(event).await,
            Platform::Slack(platform) => platform.show_working(event).await,
            Platform::Discord(platform) => platform.show_working(event).await,
            Platform::Web(platform) => platform.show_working(event).await,
        }
    }

    async fn renew_working(&self, event: &InboundEvent) {
        match self {
            Platform::Telegram(platform) => platform.renew_working(event).await,
            Platform::Slack(platform) => platform.renew_working(event).await,
            Platform::Discord(platform) => platform.renew_working(event).await,
            Platform::Web(platform) => platform.renew_working(event).await,
        }
    }

    async fn clear_working(&self, event: &InboundEvent) {
        match self {
            Platform::Telegram(platform) => platform.clear_working(event).await,
            Platform::Slack(platform) => platform.clear_working(event).await,
            Platform::Discord(platform) => platform.clear_working(event).await,
            Platform::Web(platform) => platform.clear_working(event).await,
        }
    }

    async fn member_count(&self, event: &InboundEvent, now_ms: i64) -> Option<MembershipCount> {
        match self {
            Platform::Telegram(platform) => platform.member_count(event, now_ms).await,
            Platform::Slack(platform) => platform.member_count(event, now_ms).await,
            Platform::Discord(platform) => platform.member_count(event, now_ms).await,
            Platform::Web(platform) => platform.member_count(event, now_ms).await,
        }
    }

    fn streaming(&self) -> Streaming {
        match self {
            Platform::Telegram(platform) => platform.streaming(),
            Platform::Slack(platform) => platform.streaming(),
            Platform::Discord(platform) => platform.streaming(),
            Platform::Web(platform) => platform.streaming(),
        }
    }

    async fn edit(&self, address: &ReplyAddress, message_id: &str, piece: &Piece<'_>) -> Result<(), SendFailure> {
        let text = redactor().redact(piece.text);
        let piece = &Piece { text: &text, ..*piece };
        match self {
            Platform::Telegram(platform) => platform.edit(address, message_id, piece).await,
            Platform::Slack(platform) => platform.edit(address, message_id, piece).await,
            Platform::Discord(platform) => platform.edit(address, message_id, piece).await,
            Platform::Web(platform) => platform.edit(address, message_id, piece).await,
        }
    }

    async fn download(&self, address: &ReplyAddress, attachment: &Attachment) -> Result<Vec<u8>, Refusal> {
        match self {
            Platform::Telegram(platform) => platform.download(address, attachment).await,
            Platform::Slack(platform) => platform.download(address, attachment).await,
            Platform::Discord(platform) => platform.download(address, attachment).await,
            Platform::Web(platform) => platform.download(address, attachment).await,
        }
    }

    async fn withdraw(&self, address: &ReplyAddress, message_id: &str) {
        match self {
            Platform::Telegram(platform) => platform.withdraw(address, message_id).await,
            Platform::Slack(platform) => platform.withdraw(address, message_id).await,
            Platform::Discord(platform) => platform.withdraw(address, message_id).await,
            Platform::Web(platform) => platform.withdraw(address, message_id).await,
        }
    }

    async fn show_draft(&self, event: &InboundEvent, text: &str) {
        match self {
            Platform::Telegram(platform) => platform.show_draft(event, text).await,
            Platform::Slack(platform) => platform.show_draft(event, text).await,
            Platform::Discord(platform) => platform.show_draft(event, text).await,
            Platform::Web(platform) => platform.show_draft(event, text).await,
        }
    }

    async fn react(&self, event: &InboundEvent, reaction: &Reaction) {
        match self {
            Platform::Telegram(platform) => platform.react(event, reaction).await,
            Platform::Slack(platform) => platform.react(event, reaction).await,
            Platform::Discord(platform) => platform.react(event, reaction).await,
            Platform::Web(platform) => platform.react(event, reaction).await,
        }
    }
}
