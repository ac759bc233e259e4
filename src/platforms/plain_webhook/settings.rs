//! The plain webhook's settings as `/api/status` reports them: which are
//! present (booleans, never values) and whether replies can go out.

use serde_json::{json, Value};

use crate::config::Config;

/// Which settings are present, and whether the plain webhook is ready.
pub fn state(config: &Config) -> Value {
    json!({
        "ready": config.webhook_secret.is_set() && !config.webhook_callback_url.is_empty(),
        "secret": config.webhook_secret.is_set(),
        "callback_url": !config.webhook_callback_url.is_empty(),
    })
}

/// What to set, when nothing is set yet.
pub fn unconnected(config: &Config) -> Option<&'static str> {
    (!config.webhook_secret.is_set()).then_some("the plain webhook (WEBHOOK_SECRET, WEBHOOK_CALLBACK_URL)")
}
