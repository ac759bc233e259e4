//! Telegram's settings as `/api/status` reports them: which are present
//! (booleans, never values) and whether the bot can answer there.

use serde_json::{json, Value};

use crate::config::Config;

/// Which settings are present, and whether Telegram is ready.
pub fn state(config: &Config) -> Value {
    json!({
        "ready": config.telegram_bot_token.is_set() && config.telegram_webhook_secret.is_set(),
        "bot_token": config.telegram_bot_token.is_set(),
        "webhook_secret": config.telegram_webhook_secret.is_set(),
    })
}

/// What to set, when nothing is set yet (a person cannot reach the bot here).
pub fn unconnected(config: &Config) -> Option<&'static str> {
    (!config.telegram_bot_token.is_set()).then_some("Telegram (TELEGRAM_BOT_TOKEN, TELEGRAM_WEBHOOK_SECRET)")
}
