//! Slack's settings as `/api/status` reports them: which are present
//! (booleans, never values) and whether the bot can answer there.

use serde_json::{json, Value};

use crate::config::Config;

/// Which settings are present, and whether Slack is ready.
pub fn state(config: &Config) -> Value {
    json!({
        "ready": config.slack_signing_secret.is_set() && config.slack_bot_token.is_set(),
        "signing_secret": config.slack_signing_secret.is_set(),
        "bot_token": config.slack_bot_token.is_set(),
        "bot_user_id": !config.slack_bot_user_id.is_empty(),
    })
}

/// What to set, when nothing is set yet (a person cannot reach the bot here).
pub fn unconnected(config: &Config) -> Option<&'static str> {
    (!config.slack_bot_token.is_set()).then_some("Slack (SLACK_SIGNING_SECRET, SLACK_BOT_TOKEN)")
}
