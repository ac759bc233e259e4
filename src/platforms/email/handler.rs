//! The Worker's `email` event: a mail Email Routing hands over. The
//! [`verdict`] ladder decides; a refused mail is rejected at SMTP time (the
//! sender's server tells them) and logged, an automatic one is logged and
//! never answered, a person's mail presses an approval or becomes an inbound
//! of its thread's channel object, its attachments kept first.

use worker::{Env, ForwardableEmailMessage};

use crate::config::Config;
use crate::files::store::store_upload;
use crate::log_line::LogLine;
use crate::platforms::email::rules::{approval_reply, verdict, Verdict};
use crate::platforms::email::wire::{self, attachment_token, Mail, MAX_MAIL_BYTES};
use crate::platforms::webhooks::deliver;
use crate::runtime::config::{self, DATABASE_BINDING};
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;

/// Takes one routed mail. An error (the channel object could not store it)
/// reaches the runtime, which answers the sending server with a temporary
/// failure, so it tries again; the Message-ID makes the retry one inbound.
pub async fn receive(message: ForwardableEmailMessage, env: &Env) -> worker::Result<()> {
    let config = config::load(env);
    if message.raw_size() > MAX_MAIL_BYTES as f64 {
        reject(&message, &wire::Malformed::TooLarge.to_string(), "email_malformed");
        return Ok(());
    }
    let raw = message.raw_bytes().await?;
    match verdict(&raw, &message.from(), &message.to(), &config.email_allow) {
        Verdict::Refuse { reason, event } => reject(&message, &reason, event),
        Verdict::Ignore(why) => LogLine::info("email_ignored").reason(&why).emit(),
        Verdict::Take(mail) => take(env, &config, &raw, &mail).await?,
    }
    Ok(())
}

fn reject(message: &ForwardableEmailMessage, reason: &str, event: &'static str) {
    let domain = message.from().rsplit_once('@').map(|(_, domain)| domain.to_string()).unwrap_or_default();
    LogLine::warn(event).reason(&reason).field("sender_domain", domain).emit();
    message.set_reject(reason);
}

/// A person's mail: an approval's answer, or a message.
async fn take(env: &Env, config: &Config, raw: &[u8], mail: &Mail) -> worker::Result<()> {
    if let Some(data) = approval_reply(&mail.text, &mail.full_text) {
        if super::buttons::pressed(env, config, mail, data).await? {
            return Ok(());
        }
    }
    let now = now_ms();
    let event = mail.event(|index| attachment_token(&mail.message_id, index), now);
    if !event.attachments.is_empty() {
        keep_attachments(env, raw, mail, &event.conversation_key, now).await;
    }
    deliver(env, &event).await.map_err(|error| worker::Error::RustError(format!("email not stored: {error:?}")))?;
    Ok(())
}

/// Keeps each attachment as the conversation's file (as the web chat keeps
/// an upload), so the turn finds it by its token; one refused (caps, type)
/// is named to the model as refused when the turn cannot find it.
async fn keep_attachments(env: &Env, raw: &[u8], mail: &Mail, conversation: &str, now: i64) {
    let Ok(message) = wire::parse(raw) else { return };
    let Ok(database) = env.d1(DATABASE_BINDING) else { return };
    let parts: Vec<_> = message.attachments().collect();
    for file in mail.files.iter().take(wire::ATTACHMENTS_PER_MAIL) {
        let Some(part) = parts.get(file.index) else { continue };
        let token = attachment_token(&mail.message_id, file.index);
        let bytes = part.contents().to_vec();
        if let Err(why) = store_upload(env, &database, conversation, &token, &file.name, bytes, now).await {
            LogLine::warn("file_refused").conversation(conversation).reason(&why).emit();
        }
    }
}
