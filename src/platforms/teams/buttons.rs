//! An approval button pressed in Teams (an Adaptive Card's `Action.Submit`,
//! which arrives as a message activity): acknowledged with an empty 200 (the
//! card itself is updated by the conversation's channel); a refusal is a
//! note in the presser's personal chat with the bot.

use serde_json::json;
use worker::{Env, Response};

use crate::approvals::buttons::press;
use crate::approvals::rules::Click;
use crate::inbound::ReplyAddress;
use crate::platforms::teams::messenger::Teams;
use crate::runtime::config;
use crate::runtime::failure::Answer;

/// Decides the press and answers it.
pub async fn pressed(env: &Env, click: &Click, address: &ReplyAddress) -> Answer {
    if let Some(Err(note)) = press(env, click).await? {
        Teams { config: &config::load(env) }.tell_only(address, &click.clicker.user_id, &note).await;
    }
    Ok(Response::from_json(&json!({}))?)
}
