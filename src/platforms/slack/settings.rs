//! Slack's settings as `/api/status` reports them: which are present
//! (booleans, never values) and whether the bot can answer there.

use serde_json::{json, Value};

use crate::config::Config;

/// Which settings are present, and whether Slack is ready.
pub fn state(config: &Config) -> Value {
    json!({
        "ready": config.slack_signing_secret.is_set() && (config.slack_bot_token.is_set() || config.slack_installs()),
        "signing_secret": config.slack_signing_secret.is_set(),
        "bot_token": config.slack_bot_token.is_set(),
        "bot_user_id": !config.slack_bot_user_id.is_empty(),
        // "Add to Slack" (many workspaces): on when all three are set and the key is well formed.
        "installs": config.slack_installs(),
        "client_id": !config.slack_client_id.is_empty(),
        "client_secret": config.slack_client_secret.is_set(),
        "token_key": config.slack_token_key.is_set(),
    })
}

/// What to set, when nothing is set yet (a person cannot reach the bot here).
pub fn unconnected(config: &Config) -> Option<&'static str> {
    let connected = config.slack_bot_token.is_set() || config.slack_installs();
    (!connected).then_some("Slack (SLACK_SIGNING_SECRET, SLACK_BOT_TOKEN)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_alone_make_slack_ready_and_no_value_is_shown() {
        let vars = [
            ("SLACK_SIGNING_SECRET", "signing-secret-value"),
            ("SLACK_CLIENT_ID", "1.2"),
            ("SLACK_CLIENT_SECRET", "client-secret-value"),
            ("SLACK_TOKEN_KEY", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="),
        ];
        let config = Config::from_lookup(|name| vars.iter().find(|(key, _)| *key == name).map(|(_, v)| v.to_string()));
        let shown = state(&config);
        assert_eq!((shown["ready"].as_bool(), shown["installs"].as_bool()), (Some(true), Some(true)));
        assert_eq!(shown["bot_token"], false);
        assert_eq!(unconnected(&config), None);
        for (_, value) in vars {
            assert!(!shown.to_string().contains(value), "{shown}");
        }
        let nothing = Config::from_lookup(|_| None);
        assert_eq!(state(&nothing)["installs"], false);
        assert!(unconnected(&nothing).is_some());
    }
}
