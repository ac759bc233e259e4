//! An approval button pressed in Slack: acknowledged with an empty 200 (the
//! message itself is updated by the conversation's channel); a refusal is an
//! ephemeral note to the presser.

use serde_json::json;
use worker::{Env, Response};

use crate::approvals::buttons::press;
use crate::approvals::rules::Click;
use crate::inbound::ConversationKey;
use crate::platforms::slack::messenger::Slack;
use crate::runtime::config;
use crate::runtime::failure::Answer;

/// Decides the press and answers it.
pub async fn pressed(env: &Env, click: &Click) -> Answer {
    if let Some(Err(note)) = press(env, click).await? {
        let key = ConversationKey::parse(&click.conversation).ok();
        let channel = key.as_ref().map(ConversationKey::channel).unwrap_or_default();
        let team = match &key {
            Some(ConversationKey::Slack { team, .. }) if !team.is_empty() => Some(team.as_str()),
            _ => None,
        };
        Slack::with(&config::load(env)).tell_only(team, &channel, &click.clicker.user_id, &note).await;
    }
    Ok(Response::from_json(&json!({}))?)
}
