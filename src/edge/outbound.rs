//! Outbound calls to the platforms, behind one trait ([`Messenger`]). A new
//! platform is one more implementation, one more [`Platform`] variant and an
//! arm in [`for_address`] and in each delegating method of `impl Messenger for
//! Platform` (the compiler lists every match to extend). Every text sent is
//! redacted here (configured secrets and key shapes), whichever path made it,
//! over exactly the text that leaves (already rendered for the platform), and
//! so is every failure's message (it reaches logs and the admin API). A
//! reaction leaves only if it is an emoji or a short name that holds no secret.

use super::log::Emit;
use crate::channel::participants::MembershipCount;
use crate::config::Config;
use crate::inbound::{InboundEvent, ReplyAddress};
use crate::log_line::LogLine;
use crate::reply::markup::Flavor;
use crate::reply::reaction::{self, Reaction};

use super::config::redactor;
use super::web_chat::WebChat;
use super::{discord::Discord, slack::Slack, telegram::Telegram};

/// Why a send failed, and whether (and when) trying again may help.
#[derive(Debug)]
pub struct SendFailure {
    pub message: String,
    pub retryable: bool,
    /// The platform asked to wait this long first (a rate limit).
    pub retry_after_ms: Option<u64>,
    /// No answer came (a timeout, a dropped connection): the platform may
    /// have taken the message all the same.
    pub ambiguous: bool,
}

impl SendFailure {
    pub fn permanent(message: String) -> Self {
        let message = redactor().redact(&message).into_owned();
        SendFailure { message, retryable: false, retry_after_ms: None, ambiguous: false }
    }

    /// Classifies an HTTP failure: 429 and 5xx are worth retrying.
    pub fn from_status(platform: &str, status: u16, detail: &str, retry_after_ms: Option<u64>) -> Self {
        SendFailure {
            message: redactor().redact(&format!("{platform} answered {status}: {detail}")).into_owned(),
            retryable: status == 429 || status >= 500,
            retry_after_ms: if status == 429 { retry_after_ms.or(Some(1_000)) } else { None },
            ambiguous: false,
        }
    }

    pub fn network(platform: &str, failure: super::http::HttpFailure) -> Self {
        let message = redactor().redact(&format!("{platform}: {failure:?}")).into_owned();
        SendFailure { message, retryable: true, retry_after_ms: None, ambiguous: true }
    }
}

/// One outgoing piece of a reply.
pub struct Piece<'a> {
    /// Unique to this piece (conversation, turn, place), so it can be found again.
    pub id: &'a str,
    /// Its place in the reply (Discord edits the deferred response with piece 0).
    pub index: usize,
    pub text: &'a str,
    /// The platform message it quotes, if any.
    pub reply_to: Option<&'a str>,
}

/// What became of a send that may have landed: the Worker stopped during the
/// call (a crash, an eviction), so its answer was never recorded.
#[derive(Debug, PartialEq, Eq)]
pub enum Interrupted {
    /// The platform has it: this is its message id.
    Landed(String),
    /// It did not land, or sending it again is harmless: send it.
    Resend,
    /// No way to tell: sent again, marked as a possible repeat, since a person
    /// who may have nothing must not be left waiting in silence.
    Unsure,
}

/// What every platform does for the channel.
#[allow(async_fn_in_trait)] // Workers are single-threaded; futures need not be Send.
pub trait Messenger {
    /// The longest message the platform takes; replies are split to fit.
    fn message_limit(&self) -> usize;
    /// Sends one piece; returns the platform's id for the sent message.
    async fn send(&self, address: &ReplyAddress, piece: &Piece<'_>) -> Result<String, SendFailure>;
    /// Decides what to do with a piece whose send was interrupted; the
    /// attempt began after `since_ms`.
    async fn interrupted(&self, address: &ReplyAddress, piece: &Piece<'_>, since_ms: i64) -> Interrupted;
    /// Shows that a turn started on this message (typing, a reaction); best effort.
    async fn show_working(&self, event: &InboundEvent);
    /// Keeps a working signal that fades (a typing indicator) alive while the
    /// turn goes on; called every few seconds until the answer is ready.
    async fn renew_working(&self, event: &InboundEvent);
    /// Takes the working signal away again; called on every way a turn ends.
    async fn clear_working(&self, event: &InboundEvent);
    /// A read of the conversation's members, when the platform can give one:
    /// everyone but this bot, peer bots included (the channel takes off the
    /// peer bots it knows when it uses the count).
    async fn member_count(&self, event: &InboundEvent, now_ms: i64) -> Option<MembershipCount>;
    /// Reacts to the message with an emoji (the `react` tool); best effort.
    async fn react(&self, event: &InboundEvent, reaction: &Reaction);
}

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
        ReplyAddress::Web { .. } => Platform::Web(WebChat { state, bot_name: &config.bot_name }),
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
        let piece = &Piece { id: piece.id, index: piece.index, text: &text, reply_to: piece.reply_to };
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

    async fn react(&self, event: &InboundEvent, reaction: &Reaction) {
        match self {
            Platform::Telegram(platform) => platform.react(event, reaction).await,
            Platform::Slack(platform) => platform.react(event, reaction).await,
            Platform::Discord(platform) => platform.react(event, reaction).await,
            Platform::Web(platform) => platform.react(event, reaction).await,
        }
    }
}
