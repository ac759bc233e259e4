//! Slack Web API calls.

use serde_json::{json, Value};

use super::http::{post_json, send_json};
use super::outbound::{Messenger, Piece, SendFailure};
use crate::channel::participants::MembershipCount;
use crate::config::Config;
use crate::inbound::{InboundEvent, ReplyAddress};
use crate::platforms::slack::{emoji_name, post_message_body, MESSAGE_LIMIT, WORKING_REACTION};

const API_TIMEOUT_MS: u64 = 10_000;
/// Members read per page; a channel with more is a truncated read.
const MEMBERS_PAGE: u32 = 200;

pub struct Slack<'a> {
    pub config: &'a Config,
}

impl Slack<'_> {
    async fn call(&self, method: &str, body: &Value) -> Result<Value, SendFailure> {
        let url = format!("{}/{method}", self.config.slack_api_base);
        let authorization = format!("Bearer {}", self.config.slack_bot_token);
        let answer = post_json(&url, &[("authorization", &authorization)], body, API_TIMEOUT_MS)
            .await
            .map_err(|failure| SendFailure::network("Slack", failure))?;
        let parsed: Value = serde_json::from_slice(&answer.body).unwrap_or_default();
        if answer.status == 200 && parsed["ok"] == true {
            return Ok(parsed);
        }
        let retry_after_ms = answer.retry_after_secs.map(|secs| (secs * 1000.0) as u64);
        let detail = parsed["error"].as_str().unwrap_or("no error code");
        Err(SendFailure::from_status("Slack", answer.status, detail, retry_after_ms))
    }
}

impl Slack<'_> {
    /// Adds or removes a reaction (by Slack emoji name) on the message a turn answers.
    async fn reaction(&self, method: &str, event: &InboundEvent, name: &str) {
        let ReplyAddress::Slack { channel, .. } = &event.reply_address else {
            return;
        };
        if event.is_command {
            return; // a slash command has no message to react to
        }
        let body = json!({ "channel": channel, "timestamp": event.message_id, "name": name });
        let _ = self.call(method, &body).await;
    }
}

impl Messenger for Slack<'_> {
    fn message_limit(&self) -> usize {
        MESSAGE_LIMIT
    }

    async fn send(&self, address: &ReplyAddress, piece: &Piece<'_>) -> Result<String, SendFailure> {
        let answer = self.call("chat.postMessage", &post_message_body(address, piece.text)).await?;
        Ok(answer["ts"].as_str().unwrap_or_default().to_string())
    }

    /// Slack bots have no typing indicator over the Web API: the :eyes:
    /// reaction on the message says the bot is on it.
    async fn show_working(&self, event: &InboundEvent) {
        self.reaction("reactions.add", event, WORKING_REACTION).await;
    }

    async fn clear_working(&self, event: &InboundEvent) {
        self.reaction("reactions.remove", event, WORKING_REACTION).await;
    }

    async fn member_count(&self, event: &InboundEvent, peer_bots: usize, now_ms: i64) -> Option<MembershipCount> {
        let ReplyAddress::Slack { channel, .. } = &event.reply_address else {
            return None;
        };
        let url = format!("{}/conversations.members", self.config.slack_api_base);
        let authorization = format!("Bearer {}", self.config.slack_bot_token);
        let body = json!({ "channel": channel, "limit": MEMBERS_PAGE });
        let answer = send_json(worker::Method::Post, &url, &[("authorization", &authorization)], &body, API_TIMEOUT_MS)
            .await
            .ok()?;
        let parsed: Value = serde_json::from_slice(&answer.body).ok()?;
        let members = parsed["members"].as_array()?.len();
        let truncated =
            parsed.pointer("/response_metadata/next_cursor").and_then(Value::as_str).is_some_and(|c| !c.is_empty());
        // Members include this bot and the peer bots seen speaking.
        Some(MembershipCount { humans: members.saturating_sub(1 + peer_bots), truncated, fetched_at_ms: now_ms })
    }

    async fn react(&self, event: &InboundEvent, emoji: &str) {
        self.reaction("reactions.add", event, &emoji_name(emoji)).await;
    }
}
