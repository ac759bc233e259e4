//! Sending to Telegram through the Bot API.

use crate::config::Config;
use crate::inbound::ReplyAddress;
use crate::platforms::telegram::{send_message_body, sent_message_id};

use super::http::post_json;

/// How long one Bot API call may take.
const API_TIMEOUT_MS: u64 = 10_000;

/// Why a send failed; `retryable` says whether another attempt may succeed.
#[derive(Debug)]
pub struct SendFailure {
    pub message: String,
    pub retryable: bool,
}

/// Sends one piece of text and returns Telegram's id for the sent message.
pub async fn send_text(
    config: &Config,
    address: &ReplyAddress,
    text: &str,
    reply_to_message_id: Option<&str>,
) -> Result<String, SendFailure> {
    // The token is part of the URL: this URL is never logged.
    let url = format!("{}/bot{}/sendMessage", config.telegram_api_base, config.telegram_bot_token);
    let body = send_message_body(address, text, reply_to_message_id);
    let answer = post_json(&url, &[], &body, API_TIMEOUT_MS)
        .await
        .map_err(|failure| SendFailure { message: format!("{failure:?}"), retryable: true })?;
    let parsed: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_default();
    if answer.status == 200 && parsed["ok"] == true {
        return Ok(sent_message_id(&parsed).unwrap_or_default());
    }
    Err(SendFailure {
        message: format!(
            "Telegram answered {}: {}",
            answer.status,
            parsed["description"].as_str().unwrap_or("no description")
        ),
        retryable: answer.status == 429 || answer.status >= 500,
    })
}

/// The chat's member count (bots included), or None when Telegram cannot say.
pub async fn member_count(config: &Config, chat_id: i64) -> Option<usize> {
    let url = format!("{}/bot{}/getChatMemberCount", config.telegram_api_base, config.telegram_bot_token);
    let answer = post_json(&url, &[], &serde_json::json!({ "chat_id": chat_id }), API_TIMEOUT_MS).await.ok()?;
    let parsed: serde_json::Value = serde_json::from_slice(&answer.body).ok()?;
    parsed["result"].as_u64().map(|count| count as usize)
}
