//! WhatsApp's settings as `/api/status` reports them: which are present
//! (booleans, never values) and whether the bot can answer there.

use serde_json::{json, Value};

use crate::config::Config;

/// Which settings are present, and whether WhatsApp is ready.
pub fn state(config: &Config) -> Value {
    json!({
        "ready": config.whatsapp_app_secret.is_set() && config.whatsapp_access_token.is_set()
            && config.whatsapp_verify_token.is_set(),
        "app_secret": config.whatsapp_app_secret.is_set(),
        "access_token": config.whatsapp_access_token.is_set(),
        "verify_token": config.whatsapp_verify_token.is_set(),
        "app_id": !config.whatsapp_app_id.is_empty(),
    })
}

/// What to set, when nothing is set yet (a person cannot reach the bot here).
pub fn unconnected(config: &Config) -> Option<&'static str> {
    (!config.whatsapp_access_token.is_set())
        .then_some("WhatsApp (WHATSAPP_ACCESS_TOKEN, WHATSAPP_APP_SECRET, WHATSAPP_VERIFY_TOKEN)")
}
