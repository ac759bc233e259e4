//! An approval button pressed in Telegram: the callback query is answered
//! (an alert when refused) by the bot it was pressed on; the message is
//! edited by the conversation's channel (whose address names that bot).

use serde_json::{json, Value};
use worker::Env;

use crate::api_error::ApiError;
use crate::approvals::buttons::press;
use crate::approvals::rules::Click;
use crate::platforms::telegram::messenger::Telegram;
use crate::runtime::config;

/// Decides a press on the default agent's bot and answers its callback query.
pub async fn pressed(env: &Env, click: &Click) -> Result<Value, ApiError> {
    pressed_on(env, click, None).await
}

/// Decides a press on `agent`'s own bot (None: the default agent's) and
/// answers its callback query with that bot's token. The click's
/// conversation must already be the agent's (`crate::agents::within`): an
/// approval is found only in the conversation it was asked in, and decided
/// only by who may decide it, as on the default bot.
pub async fn pressed_on(env: &Env, click: &Click, agent: Option<&str>) -> Result<Value, ApiError> {
    let decided = press(env, click).await?;
    if let Some(query) = &click.answer_to {
        let config = config::load(env);
        let telegram = Telegram::for_buttons(&config);
        match &decided {
            Some(Ok(_)) => telegram.answer_button(agent, query, "Done.", false).await,
            Some(Err(note)) => telegram.answer_button(agent, query, note, true).await,
            None => telegram.answer_button(agent, query, "This button does nothing.", false).await,
        }
    }
    Ok(json!({ "ok": true, "click": decided.map(|decided| decided.is_ok()) }))
}
