//! Replies to the plain webhook's callback URL: signed JSON POSTs, through
//! the fetch guard (no private address unless a test allows it), each piece
//! with its id as the `Idempotency-Key`.

use serde_json::Value;

use crate::channel::participants::MembershipCount;
use crate::config::Config;
use crate::files::rules::{Refusal, FILE_LIMIT_BYTES};
use crate::inbound::{Attachment, InboundEvent, ReplyAddress};
use crate::log_line::LogLine;
use crate::ops::Op;
use crate::platforms::messenger::{Buttons, Interrupted, Messenger, Piece, SendFailure, Streaming, API_TIMEOUT_MS};
use crate::platforms::plain_webhook::wire::{
    message_body, note_body, received_id, sign, with_file, IDEMPOTENCY_HEADER, MESSAGE_LIMIT, SIGNATURE_HEADER,
};
use crate::reply::reaction::Reaction;
use crate::runtime::config::redactor;
use crate::runtime::http::{now_ms, post_json};
use crate::runtime::log::Emit;
use crate::web_tools::tools::{guarded_get, judge};

/// Sends to the operator's callback URL.
pub struct PlainWebhook<'a> {
    pub config: &'a Config,
}

impl<'a> PlainWebhook<'a> {
    /// The messenger for a reply ([`crate::platforms::outbound`]'s one way to make each).
    pub fn new(config: &'a Config, _state: &'a worker::State) -> Self {
        PlainWebhook { config }
    }
}

impl PlainWebhook<'_> {
    /// POSTs `body` to the callback, signed, with `key` as its idempotency key.
    async fn post(&self, key: &str, mut body: Value) -> Result<Value, SendFailure> {
        let url = judge(self.config, &self.config.webhook_callback_url, &[])
            .map_err(|refusal| SendFailure::permanent(format!("the callback URL is refused: {refusal}")))?;
        // Redacted before signing, so what is signed is what leaves.
        redactor().redact_json(&mut body);
        let signature = sign(body.to_string().as_bytes(), now_ms() / 1000, self.config.webhook_secret.expose());
        let headers = [(SIGNATURE_HEADER, signature.as_str()), (IDEMPOTENCY_HEADER, key)];
        let answer = post_json(Op::PlatformCall, url.as_str(), &headers, &body, API_TIMEOUT_MS)
            .await
            .map_err(|failure| SendFailure::network("the callback", failure))?;
        let parsed: Value = serde_json::from_slice(&answer.body).unwrap_or_default();
        if (200..300).contains(&answer.status) {
            return Ok(parsed);
        }
        let retry_after_ms = answer.retry_after_secs.map(|secs| (secs * 1000.0) as u64);
        let detail = parsed["error"].as_str().unwrap_or("no error given");
        Err(SendFailure::from_status("the callback", answer.status, detail, retry_after_ms))
    }

    /// A note for one sender alone (a refused press); best effort.
    pub async fn tell(&self, conversation: &str, to: &str, text: &str, answering: Option<&str>) {
        let id = format!("note:{conversation}:{}", answering.unwrap_or(to));
        if let Err(failure) = self.post(&id, note_body(conversation, &id, to, text, answering)).await {
            LogLine::warn("webhook_note_not_sent").reason(&failure.message).emit();
        }
    }
}

impl Messenger for PlainWebhook<'_> {
    fn message_limit(&self) -> usize {
        MESSAGE_LIMIT
    }

    async fn send(&self, address: &ReplyAddress, piece: &Piece<'_>) -> Result<String, SendFailure> {
        let ReplyAddress::Webhook { conversation } = address else {
            return Err(SendFailure::permanent("not a plain webhook address".into()));
        };
        let approval = match piece.buttons {
            Buttons::Approval(id) => Some(id),
            _ => None,
        };
        let mut body = message_body(conversation, piece.id, piece.text, piece.reply_to, approval);
        if let Some(file) = piece.file {
            body = with_file(body, &file.file.name, &file.file.content_type, &file.bytes);
        }
        let answer = self.post(piece.id, body).await?;
        Ok(received_id(&answer, piece.id))
    }

    /// A sent message is never changed: an approval's decision (the one
    /// edit asked without streaming) goes as a new message answering it.
    async fn edit(&self, address: &ReplyAddress, message_id: &str, piece: &Piece<'_>) -> Result<(), SendFailure> {
        if piece.buttons != Buttons::Cleared {
            return Err(SendFailure::permanent("the plain webhook does not edit messages".into()));
        }
        let id = format!("{}:decided", piece.id);
        let decided = Piece { id: &id, reply_to: Some(message_id), buttons: Buttons::None, ..*piece };
        self.send(address, &decided).await.map(|_| ())
    }

    /// The file at the URL the request named, through the fetch guard.
    async fn download(&self, _address: &ReplyAddress, attachment: &Attachment) -> Result<Vec<u8>, Refusal> {
        let url = attachment.url.as_deref().ok_or(Refusal::Unreachable)?;
        let limit = FILE_LIMIT_BYTES as usize + 1;
        let answer = guarded_get(self.config, url, limit).await.map_err(|_| Refusal::Unreachable)?;
        if answer.status != 200 {
            return Err(Refusal::Unreachable);
        }
        if answer.body.len() >= limit {
            return Err(Refusal::TooLarge { limit_mb: FILE_LIMIT_BYTES / (1024 * 1024) });
        }
        Ok(answer.body)
    }

    /// Only finished replies are sent: a receiver sees each piece once.
    fn streaming(&self) -> Streaming {
        Streaming::Off
    }

    /// Every piece carries its id as the idempotency key, so the receiver
    /// drops a repeat: sending again is harmless.
    async fn interrupted(&self, _address: &ReplyAddress, _piece: &Piece<'_>, _since_ms: i64) -> Interrupted {
        Interrupted::Resend
    }

    /// No working signal: the receiver hears only replies.
    async fn show_working(&self, _event: &InboundEvent) {}

    async fn renew_working(&self, _event: &InboundEvent) {}

    async fn clear_working(&self, _event: &InboundEvent) {}

    /// The sending system and the agent: nobody else is counted.
    async fn member_count(&self, _event: &InboundEvent, now_ms: i64) -> Option<MembershipCount> {
        Some(MembershipCount { others: 1, truncated: false, fetched_at_ms: now_ms })
    }

    /// The callback hears only messages.
    async fn react(&self, _event: &InboundEvent, _reaction: &Reaction) {}
}
