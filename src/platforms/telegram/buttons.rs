//! An approval button pressed in Telegram: the callback query is answered
//! (an alert when refused); the message is edited by the conversation's
//! channel.

use serde_json::{json, Value};
use worker::Env;

use crate::api_error::ApiError;
use crate::approvals::buttons::press;
use crate::approvals::rules::Click;
use crate::platforms::telegram::messenger::Telegram;
use crate::runtime::config;

/// Decides the press and answers its callback query.
pub async fn pressed(env: &Env, click: &Click) -> Result<Value, ApiError> {
    let decided = press(env, click).await?;
    if let Some(query) = &click.answer_to {
        let config = config::load(env);
        let telegram = Telegram::for_buttons(&config);
        match &decided {
            Some(Ok(_)) => telegram.answer_button(query, "Done.", false).await,
            Some(Err(note)) => telegram.answer_button(query, note, true).await,
            None => telegram.answer_button(query, "This button does nothing.", false).await,
        }
    }
    Ok(json!({ "ok": true, "click": decided.map(|decided| decided.is_ok()) }))
}
