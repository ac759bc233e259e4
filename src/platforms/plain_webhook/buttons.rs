//! A button pressed through the plain webhook: decided; a refusal is a note
//! to the presser alone (the callback gets it with `to`).

use serde_json::{json, Value};
use worker::Env;

use crate::api_error::ApiError;
use crate::approvals::buttons::press;
use crate::approvals::rules::Click;
use crate::inbound::ConversationKey;
use crate::platforms::plain_webhook::messenger::PlainWebhook;
use crate::runtime::config;

/// Decides the press and tells a refused presser why.
pub async fn pressed(env: &Env, click: &Click) -> Result<Value, ApiError> {
    let decided = press(env, click).await?;
    if let Some(Err(note)) = &decided {
        if let Ok(ConversationKey::Webhook { conversation }) = ConversationKey::parse(&click.conversation) {
            let config = config::load(env);
            let to = &click.clicker.user_id;
            PlainWebhook { config: &config }.tell(&conversation, to, note, click.answer_to.as_deref()).await;
        }
    }
    Ok(json!({ "ok": true, "click": decided.map(|decided| decided.is_ok()) }))
}
