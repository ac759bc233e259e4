//! Discord's settings as `/api/status` reports them: which are present
//! (booleans, never values) and whether the bot can answer there.

use serde_json::{json, Value};

use crate::config::Config;

/// Which settings are present, and whether Discord is ready.
pub fn state(config: &Config) -> Value {
    let set = |value: &str| !value.is_empty();
    json!({
        // Interactions need the key and id; the Gateway also needs the bot token.
        "ready": set(&config.discord_public_key) && set(&config.discord_application_id)
            && (!config.discord_gateway || config.discord_bot_token.is_set()),
        "public_key": set(&config.discord_public_key),
        "application_id": set(&config.discord_application_id),
        "bot_token": config.discord_bot_token.is_set(),
        "gateway": config.discord_gateway,
    })
}

/// What to set, when nothing is set yet (a person cannot reach the bot here).
pub fn unconnected(config: &Config) -> Option<&'static str> {
    config
        .discord_public_key
        .is_empty()
        .then_some("Discord (DISCORD_PUBLIC_KEY, DISCORD_APPLICATION_ID, DISCORD_BOT_TOKEN)")
}
