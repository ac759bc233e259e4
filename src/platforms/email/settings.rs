//! Email's settings as `/api/status` reports them: how many senders may
//! write (a count, never the addresses) and whether the bot can answer.

use serde_json::{json, Value};

use crate::config::Config;

/// Which settings are present, and whether email is ready: with no one on
/// `EMAIL_ALLOW`, every mail is refused.
pub fn state(config: &Config) -> Value {
    json!({
        "ready": !config.email_allow.is_empty(),
        "allowed_senders": config.email_allow.len(),
    })
}

/// What to set, when nothing is set yet (nobody can reach the bot by mail).
pub fn unconnected(config: &Config) -> Option<&'static str> {
    config.email_allow.is_empty().then_some("Email (EMAIL_ALLOW, and Email Routing to this Worker)")
}
