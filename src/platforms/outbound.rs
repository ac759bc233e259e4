//! Outbound calls to the platforms: the registry ([`registry!`] below) names
//! each [`Platform`]'s [`Messenger`], and [`Outbound`] is the one that answers
//! at a reply address. A new messenger is one line in the registry; the
//! delegation to it is written once, here. Every text sent is redacted here
//! (configured secrets and key shapes), whichever path made it, over exactly
//! the text that leaves (already rendered for the platform, sent or edited
//! in), and so is every failure's message (it reaches logs and the admin
//! API). A reaction leaves only if it is an emoji or a short name that holds
//! no secret.

use crate::channel::participants::MembershipCount;
use crate::config::Config;
use crate::files::rules::Refusal;
use crate::inbound::{Attachment, InboundEvent, ReplyAddress};
use crate::log_line::LogLine;
use crate::platforms::messenger::{Interrupted, Messenger, Piece, SendFailure, Streaming};
use crate::platforms::Platform;
use crate::reply::markup::Flavor;
use crate::reply::reaction::{self, Reaction};
use crate::runtime::config::redactor;
use crate::runtime::log::Emit;

use crate::platforms::discord::messenger::Discord;
use crate::platforms::email::messenger::Email;
use crate::platforms::link::messenger::Link;
use crate::platforms::plain_webhook::messenger::PlainWebhook;
use crate::platforms::slack::messenger::Slack;
use crate::platforms::teams::messenger::Teams;
use crate::platforms::telegram::messenger::Telegram;
use crate::platforms::web_chat::messenger::WebChat;
use crate::platforms::whatsapp::messenger::WhatsApp;

/// Writes [`Outbound`] (one variant per platform, holding its messenger),
/// [`for_address`], and `impl Messenger for Outbound` delegating each call to
/// the messenger held: an enum, so a call costs a match and no allocation.
macro_rules! registry {
    ($($platform:ident => $messenger:ident),* $(,)?) => {
        /// The messenger of the platform a reply address belongs to.
        pub enum Outbound<'a> {
            $($platform($messenger<'a>),)*
        }

        /// The messenger that answers at `address`; a web chat answers over
        /// the sockets of the conversation's object (`state`).
        pub fn for_address<'a>(config: &'a Config, state: &'a worker::State, address: &ReplyAddress) -> Outbound<'a> {
            match Platform::answering(address) {
                $(Platform::$platform => Outbound::$platform($messenger::new(config, state)),)*
            }
        }

        impl Outbound<'_> {
            /// The platform this messenger sends to.
            pub fn platform(&self) -> Platform {
                match self {
                    $(Outbound::$platform(_) => Platform::$platform,)*
                }
            }
        }

        impl Messenger for Outbound<'_> {
            fn message_limit(&self) -> usize {
                match self { $(Outbound::$platform(messenger) => messenger.message_limit(),)* }
            }

            async fn send(&self, address: &ReplyAddress, piece: &Piece<'_>) -> Result<String, SendFailure> {
                let text = redactor().redact(piece.text);
                let piece = &Piece { text: &text, ..*piece };
                match self { $(Outbound::$platform(messenger) => messenger.send(address, piece).await,)* }
            }

            async fn interrupted(&self, address: &ReplyAddress, piece: &Piece<'_>, since_ms: i64) -> Interrupted {
                match self { $(Outbound::$platform(messenger) => messenger.interrupted(address, piece, since_ms).await,)* }
            }

            async fn show_working(&self, event: &InboundEvent) {
                match self { $(Outbound::$platform(messenger) => messenger.show_working(event).await,)* }
            }

            async fn renew_working(&self, event: &InboundEvent) {
                match self { $(Outbound::$platform(messenger) => messenger.renew_working(event).await,)* }
            }

            async fn clear_working(&self, event: &InboundEvent) {
                match self { $(Outbound::$platform(messenger) => messenger.clear_working(event).await,)* }
            }

            async fn member_count(&self, event: &InboundEvent, now_ms: i64) -> Option<MembershipCount> {
                match self { $(Outbound::$platform(messenger) => messenger.member_count(event, now_ms).await,)* }
            }

            fn streaming(&self) -> Streaming {
                match self { $(Outbound::$platform(messenger) => messenger.streaming(),)* }
            }

            async fn edit(&self, address: &ReplyAddress, message_id: &str, piece: &Piece<'_>) -> Result<(), SendFailure> {
                let text = redactor().redact(piece.text);
                let piece = &Piece { text: &text, ..*piece };
                match self { $(Outbound::$platform(messenger) => messenger.edit(address, message_id, piece).await,)* }
            }

            async fn download(&self, address: &ReplyAddress, attachment: &Attachment) -> Result<Vec<u8>, Refusal> {
                match self { $(Outbound::$platform(messenger) => messenger.download(address, attachment).await,)* }
            }

            async fn withdraw(&self, address: &ReplyAddress, message_id: &str) {
                match self { $(Outbound::$platform(messenger) => messenger.withdraw(address, message_id).await,)* }
            }

            async fn show_draft(&self, event: &InboundEvent, text: &str) {
                match self { $(Outbound::$platform(messenger) => messenger.show_draft(event, text).await,)* }
            }

            async fn react(&self, event: &InboundEvent, reaction: &Reaction) {
                match self { $(Outbound::$platform(messenger) => messenger.react(event, reaction).await,)* }
            }
        }
    };
}

// Each platform's messenger (its `new(config, state)` makes it for a reply).
registry! {
    Telegram => Telegram,
    Slack => Slack,
    Discord => Discord,
    Web => WebChat,
    Teams => Teams,
    WhatsApp => WhatsApp,
    Webhook => PlainWebhook,
    Email => Email,
    Link => Link,
}

impl Outbound<'_> {
    /// The platform's name, for prompts.
    pub fn name(&self) -> &'static str {
        self.platform().name()
    }

    /// The format the platform reads replies in.
    pub fn flavor(&self) -> Flavor {
        self.platform().flavor()
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
