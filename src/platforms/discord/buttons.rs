//! An approval button pressed in Discord: the interaction's answer updates
//! the message (the decision, buttons gone) or tells the presser alone.

use serde_json::{json, Value};
use worker::Env;

use crate::api_error::ApiError;
use crate::approvals::buttons::press;
use crate::approvals::rules::Click;
use crate::platforms::discord::wire as discord;

/// Decides the press; the interaction's answer.
pub async fn pressed(env: &Env, click: &Click) -> Result<Value, ApiError> {
    Ok(match press(env, click).await? {
        Some(decided) => discord::button_answer(decided.as_deref().map_err(String::as_str)),
        None => json!({ "type": 6 }),
    })
}
