//! Replies by email: each piece is one mail, composed by [`compose`] and
//! handed to the `send_email` binding (`EMAIL`). A mail is never edited,
//! deleted or reacted to, and there is nothing like "typing" to show.

use worker::EmailMessage;
use worker::SendEmail;

use crate::bindings::EMAIL;
use crate::channel::participants::MembershipCount;
use crate::config::Config;
use crate::inbound::{InboundEvent, ReplyAddress};
use crate::ops::{count, Op};
use crate::platforms::email::compose::{compose, message_id, Outgoing};
use crate::platforms::email::rules::approval_note;
use crate::platforms::email::wire::MESSAGE_LIMIT;
use crate::platforms::messenger::{Buttons, Interrupted, Messenger, Piece, SendFailure};
use crate::reply::reaction::Reaction;
use crate::runtime::http::now_ms;

/// The send binding.
pub fn send_binding() -> Result<SendEmail, SendFailure> {
    crate::runtime::config::bindings()
        .send_email(EMAIL.name)
        .map_err(|error| SendFailure::permanent(format!("email: no `{}` binding: {error}", EMAIL.name)))
}

/// Sends one composed mail through the binding; returns its Message-ID.
pub async fn send_raw(from: &str, to: &str, raw: &[u8], own_id: &str) -> Result<String, SendFailure> {
    let binding = send_binding()?;
    // mail-builder writes 7-bit text (every header and body encoded).
    let text = String::from_utf8_lossy(raw);
    let message = EmailMessage::new(from, to, &text)
        .map_err(|error| SendFailure::permanent(format!("email: not a mail: {:?}", error.message())))?;
    count(Op::PlatformCall);
    match binding.send(&message).await {
        Ok(sent) => {
            let id = sent.message_id();
            Ok(if id.is_empty() { own_id.to_string() } else { id })
        }
        Err(error) => Err(classify(&String::from(error.message()))),
    }
}

/// A refusal of the message itself (a recipient the binding may not reach,
/// a mail it cannot read) is permanent; anything else may pass on a retry.
fn classify(message: &str) -> SendFailure {
    let lower = message.to_lowercase();
    let mut failure = SendFailure::permanent(format!("email: {message}"));
    failure.retryable = !["not allowed", "invalid", "parse", "not verified"].iter().any(|word| lower.contains(word));
    failure
}

/// Sends by email with the deployment's settings.
pub struct Email<'a> {
    config: &'a Config,
}

impl<'a> Email<'a> {
    /// The messenger for a reply; email needs only the settings.
    pub fn new(config: &'a Config, _state: &'a worker::State) -> Self {
        Email { config }
    }
}

impl Messenger for Email<'_> {
    fn message_limit(&self) -> usize {
        MESSAGE_LIMIT
    }

    /// One mail, in the thread; an approval's piece says how to decide it.
    async fn send(&self, address: &ReplyAddress, piece: &Piece<'_>) -> Result<String, SendFailure> {
        let ReplyAddress::Email { to, from, subject, in_reply_to, references } = address else {
            return Err(SendFailure::permanent("email: not an email address".into()));
        };
        let text = match piece.buttons {
            Buttons::Approval(id) => format!("{}\n\n{}", piece.text, approval_note(id)),
            _ => piece.text.to_string(),
        };
        let own_id = message_id(piece.id, &text, from);
        let file = piece.file.map(|body| (body.file.name.as_str(), body.file.content_type.as_str(), &body.bytes[..]));
        let raw = compose(&Outgoing {
            from,
            bot_name: &self.config.bot_name,
            to,
            subject,
            in_reply_to,
            references,
            text: &text,
            message_id: &own_id,
            now_ms: now_ms(),
            file,
        });
        send_raw(from, to, &raw, &own_id).await
    }

    /// No mail can be looked up once sent: it goes again, marked as a
    /// possible repeat (docs/delivery.md), with a Message-ID of its own.
    async fn interrupted(&self, _address: &ReplyAddress, _piece: &Piece<'_>, _since_ms: i64) -> Interrupted {
        Interrupted::Unsure
    }

    async fn show_working(&self, _event: &InboundEvent) {}

    async fn renew_working(&self, _event: &InboundEvent) {}

    async fn clear_working(&self, _event: &InboundEvent) {}

    /// A mail thread is the person and the bot.
    async fn member_count(&self, _event: &InboundEvent, _now_ms: i64) -> Option<MembershipCount> {
        None
    }

    async fn react(&self, _event: &InboundEvent, _reaction: &Reaction) {}
}
