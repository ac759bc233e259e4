//! WhatsApp Cloud API calls (Graph API): messages, media, the typing
//! indicator and reactions, each `POST /{phone-number-id}/…` with the
//! access token.

use serde_json::Value;
use worker::Method;

use crate::channel::participants::MembershipCount;
use crate::config::Config;
use crate::files::rules::{is_platform_file_url, Kind, Refusal};
use crate::inbound::{Attachment, InboundEvent, ReplyAddress};
use crate::log_line::LogLine;
use crate::ops::Op;
use crate::platforms::messenger::{
    Buttons, FileBody, Interrupted, Messenger, Piece, SendFailure, Streaming, API_TIMEOUT_MS, UPLOAD_TIMEOUT_MS,
};
use crate::platforms::whatsapp::wire::{
    approval_body, classify, error_detail, media_body, media_path, reaction_body, sent_message_id, text_body,
    typing_body, within_window, Refused, MEDIA_HOSTS, MESSAGE_LIMIT, RATE_LIMIT_WAIT_MS,
};
use crate::reply::reaction::Reaction;
use crate::runtime::durable::MeteredStorage;
use crate::runtime::http::{download, get_manual, now_ms, post_json, send_form, HttpAnswer, HttpFailure};
use crate::runtime::log::Emit;

/// A media lookup's answer (JSON with a URL) is small.
const LOOKUP_BODY_LIMIT: usize = 64 * 1024;

/// Sends to WhatsApp with the deployment's settings.
pub struct WhatsApp<'a> {
    pub config: &'a Config,
    /// The conversation's object, whose inbox says when the person last wrote
    /// (None outside it: a note to a button's presser, who just wrote).
    pub state: Option<&'a worker::State>,
}

impl<'a> WhatsApp<'a> {
    /// The messenger for a reply ([`crate::platforms::outbound`]'s one way to make each).
    pub fn new(config: &'a Config, state: &'a worker::State) -> Self {
        WhatsApp { config, state: Some(state) }
    }
}

impl WhatsApp<'_> {
    fn authorization(&self) -> String {
        format!("Bearer {}", self.config.whatsapp_access_token.expose())
    }

    /// POSTs a Graph API call under the API base.
    async fn call(&self, path: &str, body: &Value) -> Result<Value, SendFailure> {
        let url = format!("{}/{path}", self.config.whatsapp_api_base);
        let authorization = self.authorization();
        let answer =
            post_json(Op::PlatformCall, &url, &[("authorization", &authorization)], body, API_TIMEOUT_MS).await;
        Self::answer(answer)
    }

    /// Reads a Graph answer: its JSON, or a failure that says whether and when to retry.
    fn answer(answer: Result<HttpAnswer, HttpFailure>) -> Result<Value, SendFailure> {
        let answer = answer.map_err(|failure| SendFailure::network("WhatsApp", failure))?;
        let parsed: Value = serde_json::from_slice(&answer.body).unwrap_or_default();
        if (200..300).contains(&answer.status) && parsed.get("error").is_none() {
            return Ok(parsed);
        }
        let detail = error_detail(&parsed);
        let retry_after_ms = answer.retry_after_secs.map(|secs| (secs * 1000.0) as u64);
        let mut failure = SendFailure::permanent(format!("WhatsApp answered {}: {detail}", answer.status));
        match classify(answer.status, &parsed, retry_after_ms) {
            Refused::RateLimited(wait) => {
                failure.retryable = true;
                failure.retry_after_ms = Some(wait.unwrap_or(RATE_LIMIT_WAIT_MS));
            }
            Refused::OutsideWindow => {
                failure.message = format!("outside WhatsApp's 24-hour customer-service window ({detail})");
            }
            Refused::Transient => failure.retryable = true,
            Refused::Permanent => {}
        }
        Err(failure)
    }

    /// When the person last wrote, by their messages' own timestamps, as the
    /// conversation's inbox holds them (every inbound of a WhatsApp chat is
    /// the person's).
    fn last_message_ms(&self) -> Option<i64> {
        let sql = self.state?.storage().counted_sql();
        let query = "SELECT MAX(json_extract(event, '$.timestamp_ms')) AS last FROM inbox";
        let rows: Vec<Value> = sql.exec(query, None).ok()?.to_array().ok()?;
        rows.first()?["last"].as_i64()
    }

    /// A short note to one person (a refused button press), quoting their press.
    pub async fn tell(&self, phone_number_id: &str, to: &str, text: &str, quoting: Option<&str>) {
        let path = format!("{phone_number_id}/messages");
        if let Err(failure) = self.call(&path, &text_body(to, text, quoting)).await {
            LogLine::warn("whatsapp_note_not_sent").reason(&failure.message).emit();
        }
    }

    /// Uploads a file (`POST /{phone-number-id}/media`) and sends it by its media id.
    async fn send_file(
        &self,
        phone: &str,
        to: &str,
        piece: &Piece<'_>,
        file: &FileBody,
    ) -> Result<String, SendFailure> {
        let url = format!("{}/{phone}/media", self.config.whatsapp_api_base);
        let authorization = self.authorization();
        let content_type = file.file.content_type.as_str();
        let fields = [("messaging_product", "whatsapp"), ("type", content_type)];
        let part = ("file", file.file.name.as_str(), file.bytes.as_slice());
        let headers = [("authorization", authorization.as_str())];
        let uploaded =
            send_form(Op::PlatformCall, Method::Post, &url, &headers, &fields, part, UPLOAD_TIMEOUT_MS).await;
        let uploaded = Self::answer(uploaded)?;
        let media_id =
            uploaded["id"].as_str().ok_or_else(|| SendFailure::permanent("WhatsApp gave no media id".into()))?;
        let image = file.file.kind == Kind::Image;
        let body = media_body(to, media_id, image, &file.file.name, piece.text, piece.reply_to);
        let answer = self.call(&format!("{phone}/messages"), &body).await?;
        Ok(sent_message_id(&answer).unwrap_or_default())
    }
}

impl Messenger for WhatsApp<'_> {
    fn message_limit(&self) -> usize {
        MESSAGE_LIMIT
    }

    /// Sends the piece, unless the 24-hour window has closed: then nothing
    /// is sent and the piece fails for good, saying why.
    async fn send(&self, address: &ReplyAddress, piece: &Piece<'_>) -> Result<String, SendFailure> {
        let ReplyAddress::WhatsApp { phone_number_id, to } = address else {
            return Err(SendFailure::permanent("not a WhatsApp address".into()));
        };
        if !within_window(self.last_message_ms(), now_ms()) {
            let why = "outside WhatsApp's 24-hour customer-service window: the person has not written for a day";
            LogLine::warn("whatsapp_window_closed").platform("whatsapp").id(&piece.id).reason(&why).emit();
            return Err(SendFailure::permanent(why.into()));
        }
        if let Some(file) = piece.file {
            return self.send_file(phone_number_id, to, piece, file).await;
        }
        let body = match piece.buttons {
            Buttons::Approval(id) => approval_body(to, piece.text, id),
            _ => text_body(to, piece.text, piece.reply_to),
        };
        let answer = self.call(&format!("{phone_number_id}/messages"), &body).await?;
        Ok(sent_message_id(&answer).unwrap_or_default())
    }

    /// A bot cannot edit a WhatsApp message. The one edit asked of it without
    /// streaming, an approval's decision (buttons taken away), arrives as a
    /// new message quoting the approval's; any other is refused.
    async fn edit(&self, address: &ReplyAddress, message_id: &str, piece: &Piece<'_>) -> Result<(), SendFailure> {
        if piece.buttons != Buttons::Cleared {
            return Err(SendFailure::permanent("WhatsApp bots cannot edit messages".into()));
        }
        let quoting = Piece { reply_to: Some(message_id), buttons: Buttons::None, ..*piece };
        self.send(address, &quoting).await.map(|_| ())
    }

    /// `GET /{media-id}` gives a short-lived URL on Meta's media host; the
    /// bytes come from there, with the token.
    async fn download(&self, _address: &ReplyAddress, attachment: &Attachment) -> Result<Vec<u8>, Refusal> {
        let path = media_path(&attachment.platform_file_id).ok_or(Refusal::Unreachable)?;
        let url = format!("{}{path}", self.config.whatsapp_api_base);
        let authorization = self.authorization();
        let headers = [("authorization", authorization.as_str())];
        let answer = get_manual(Op::PlatformCall, &url, &headers, API_TIMEOUT_MS, LOOKUP_BODY_LIMIT).await;
        let answer = answer.map_err(|_| Refusal::Unreachable)?;
        let parsed: Value = serde_json::from_slice(&answer.body).map_err(|_| Refusal::Unreachable)?;
        let media_url = parsed["url"].as_str().filter(|_| answer.status == 200).ok_or(Refusal::Unreachable)?;
        if !is_platform_file_url(media_url, MEDIA_HOSTS, &self.config.whatsapp_api_base) {
            return Err(Refusal::Unreachable);
        }
        download(media_url, &headers).await
    }

    /// Never streams: a bot cannot edit its messages, so a draft could not grow.
    fn streaming(&self) -> Streaming {
        Streaming::Off
    }

    /// Graph takes no idempotency key and lets a bot read back nothing it
    /// sent: a resend could post a second copy, so the piece is reported.
    async fn interrupted(&self, _address: &ReplyAddress, _piece: &Piece<'_>, _since_ms: i64) -> Interrupted {
        Interrupted::Unsure
    }

    /// Marks the message read and shows "typing…" (one call).
    async fn show_working(&self, event: &InboundEvent) {
        let ReplyAddress::WhatsApp { phone_number_id, .. } = &event.reply_address else {
            return;
        };
        let _ = self.call(&format!("{phone_number_id}/messages"), &typing_body(&event.message_id)).await;
    }

    /// The indicator lasts up to 25 seconds or until the reply; renewing it
    /// would cost a Graph call every few seconds, so it is not.
    async fn renew_working(&self, _event: &InboundEvent) {}

    /// The reply itself takes the indicator away.
    async fn clear_working(&self, _event: &InboundEvent) {}

    /// A chat with one person: nobody else is there.
    async fn member_count(&self, _event: &InboundEvent, now_ms: i64) -> Option<MembershipCount> {
        Some(MembershipCount { others: 1, truncated: false, fetched_at_ms: now_ms })
    }

    async fn react(&self, event: &InboundEvent, reaction: &Reaction) {
        let (ReplyAddress::WhatsApp { phone_number_id, to }, Some(emoji)) = (&event.reply_address, reaction.emoji())
        else {
            return; // WhatsApp reacts by emoji only
        };
        let body = reaction_body(to, &event.message_id, emoji);
        let _ = self.call(&format!("{phone_number_id}/messages"), &body).await;
    }
}
