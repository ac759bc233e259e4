//! Teams' settings as `/api/status` reports them: which are present
//! (booleans, never values) and whether the bot can answer there.

use serde_json::{json, Value};

use crate::config::Config;

/// Which settings are present, and whether Teams is ready.
pub fn state(config: &Config) -> Value {
    json!({
        "ready": !config.teams_app_id.is_empty() && config.teams_app_password.is_set(),
        "app_id": !config.teams_app_id.is_empty(),
        "app_password": config.teams_app_password.is_set(),
        "tenant": config.teams_tenant_id,
    })
}

/// What to set, when nothing is set yet (a person cannot reach the bot here).
pub fn unconnected(config: &Config) -> Option<&'static str> {
    config.teams_app_id.is_empty().then_some("Microsoft Teams (TEAMS_APP_ID, TEAMS_APP_PASSWORD)")
}
