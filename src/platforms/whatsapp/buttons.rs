//! An approval button pressed in WhatsApp (a reply button's id): decided;
//! a refusal is a note to the presser alone, in their own chat with the
//! business, quoting their press. The decision itself is shown in the
//! asker's chat by the conversation's channel.

use serde_json::{json, Value};
use worker::Env;

use crate::api_error::ApiError;
use crate::approvals::buttons::press;
use crate::approvals::rules::Click;
use crate::inbound::ConversationKey;
use crate::platforms::whatsapp::messenger::WhatsApp;
use crate::runtime::config;

/// Decides the press and tells a refused presser why.
pub async fn pressed(env: &Env, click: &Click) -> Result<Value, ApiError> {
    let decided = press(env, click).await?;
    if let Some(Err(note)) = &decided {
        if let Ok(ConversationKey::WhatsApp { phone, person }) = ConversationKey::parse(&click.conversation) {
            let config = config::load(env);
            WhatsApp { config: &config, state: None }.tell(&phone, &person, note, click.answer_to.as_deref()).await;
        }
    }
    Ok(json!({ "click": decided.map(|decided| decided.is_ok()) }))
}
