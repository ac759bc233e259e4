//! Discord interaction webhook calls.

use worker::Method;

use super::http::send_json;
use super::outbound::{Interrupted, Messenger, Piece, SendFailure};
use crate::channel::participants::MembershipCount;
use crate::config::Config;
use crate::inbound::{InboundEvent, ReplyAddress};
use crate::platforms::discord::{webhook_call, MESSAGE_LIMIT};

const API_TIMEOUT_MS: u64 = 10_000;

pub struct Discord<'a> {
    pub config: &'a Config,
}

impl Messenger for Discord<'_> {
    fn message_limit(&self) -> usize {
        MESSAGE_LIMIT
    }

    /// The interaction token authorises these calls; no bot token is needed.
    async fn send(&self, address: &ReplyAddress, piece: &Piece<'_>) -> Result<String, SendFailure> {
        let (method, path, body) = webhook_call(address, piece.index, piece.text)
            .ok_or_else(|| SendFailure::permanent("not a Discord address".into()))?;
        let method = if method == "PATCH" { Method::Patch } else { Method::Post };
        let url = format!("{}{path}", self.config.discord_api_base);
        let answer = send_json(method, &url, &[], &body, API_TIMEOUT_MS)
            .await
            .map_err(|failure| SendFailure::network("Discord", failure))?;
        let parsed: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_default();
        if (200..300).contains(&answer.status) {
            return Ok(parsed["id"].as_str().unwrap_or_default().to_string());
        }
        let retry_after_ms =
            parsed["retry_after"].as_f64().or(answer.retry_after_secs).map(|secs| (secs * 1000.0).ceil() as u64);
        let detail = parsed["message"].as_str().unwrap_or("no message");
        Err(SendFailure::from_status("Discord", answer.status, detail, retry_after_ms))
    }

    /// The first piece edits the deferred response: editing it again is
    /// harmless. A follow-up cannot be looked up or deduplicated.
    async fn interrupted(&self, _address: &ReplyAddress, piece: &Piece<'_>, _since_ms: i64) -> Interrupted {
        if piece.index == 0 {
            Interrupted::Resend
        } else {
            Interrupted::Unknown
        }
    }

    /// The deferred response already shows "edgebot is thinking…".
    async fn show_working(&self, _event: &InboundEvent) {}

    async fn clear_working(&self, _event: &InboundEvent) {}

    /// Interactions carry no member list; the participants seen decide.
    async fn member_count(&self, _event: &InboundEvent, _peer_bots: usize, _now_ms: i64) -> Option<MembershipCount> {
        None
    }

    /// Commands have no message of the user's to react to.
    async fn react(&self, _event: &InboundEvent, _emoji: &str) {}
}
