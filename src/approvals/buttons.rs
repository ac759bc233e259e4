//! Approval buttons pressed on each platform: the press is read from the
//! platform's verified payload (the webhooks check signatures first), decided
//! by [`approvals::decide`], and answered the platform's way. A refused press
//! is told to the presser alone (Slack's ephemeral note, Discord's ephemeral
//! answer, Telegram's alert, the web chat's error); nobody else sees it.

use serde_json::{json, Value};
use worker::{Env, Request, Response};

use crate::api_error::ApiError;
use crate::approvals::rules::{parse_button, Click, Clicker};
use crate::approvals::store as approvals;
use crate::inbound::ConversationKey;
use crate::platforms::discord::wire as discord;
use crate::platforms::slack::messenger::Slack;
use crate::platforms::telegram::messenger::Telegram;
use crate::runtime::config;
use crate::runtime::failure::internal;
use crate::runtime::http::read_body;
use crate::sessions::api as sessions;

/// The largest body the web chat's button sends.
const MAX_BODY_BYTES: usize = 1_024;

/// What a press came to: the approval's new text, or why it decided nothing.
/// None when the button is not an approval's.
async fn press(env: &Env, click: &Click) -> Result<Option<Result<String, String>>, ApiError> {
    let Some((choice, id)) = parse_button(&click.data) else {
        return Ok(None);
    };
    let config = config::load(env);
    let decided = approvals::decide(&config, env, id, choice, click).await?;
    Ok(Some(decided))
}

/// Slack: the press is acknowledged with an empty 200 (the message itself
/// is updated by the conversation's channel); a refusal is an ephemeral note.
pub async fn slack(env: &Env, click: &Click) -> Result<Response, ApiError> {
    if let Some(Err(note)) = press(env, click).await? {
        let channel = ConversationKey::parse(&click.conversation).map(|key| key.channel()).unwrap_or_default();
        Slack { config: &config::load(env) }.tell_only(&channel, &click.clicker.user_id, &note).await;
    }
    Response::from_json(&json!({})).map_err(internal)
}

/// Discord: the interaction's answer updates the message (the decision,
/// buttons gone) or tells the presser alone.
pub async fn discord(env: &Env, click: &Click) -> Result<Value, ApiError> {
    Ok(match press(env, click).await? {
        Some(decided) => discord::button_answer(decided.as_deref().map_err(String::as_str)),
        None => json!({ "type": 6 }),
    })
}

/// Telegram: the callback query is answered (an alert when refused); the
/// message is edited by the conversation's channel.
pub async fn telegram(env: &Env, click: &Click) -> Result<Value, ApiError> {
    let decided = press(env, click).await?;
    if let Some(query) = &click.answer_to {
        let telegram = Telegram { config: &config::load(env) };
        match &decided {
            Some(Ok(_)) => telegram.answer_button(query, "Done.", false).await,
            Some(Err(note)) => telegram.answer_button(query, note, true).await,
            None => telegram.answer_button(query, "This button does nothing.", false).await,
        }
    }
    Ok(json!({ "ok": true, "click": decided.map(|decided| decided.is_ok()) }))
}

/// `POST /api/chat/approvals/{id}` `{"choice": "approve"|"deny"}`: a web
/// chat's button. The chat's session says who presses (its guest, or an
/// operator's chat) and where; an operator's chat decides like an operator.
pub async fn web(mut request: Request, env: &Env, id: &str) -> Result<Response, ApiError> {
    let (conversation, role) = sessions::chat_identity(&request, env)?;
    let body = read_body(&mut request, MAX_BODY_BYTES).await?;
    let choice =
        serde_json::from_slice::<Value>(&body).ok().and_then(|body| body["choice"].as_str().map(str::to_string));
    let data = format!("{}:{id}", choice.unwrap_or_default());
    let Some((choice, id)) = parse_button(&data) else {
        return Err(ApiError::BadRequest("send {\"choice\": \"approve\" or \"deny\"} for an approval's id".into()));
    };
    let session = match ConversationKey::parse(&conversation) {
        Ok(ConversationKey::Web { session }) => session,
        _ => String::new(),
    };
    let operator = role == "operator";
    let name = if operator { "Operator" } else { "Guest" };
    let clicker = Clicker { platform: "web".into(), user_id: format!("{session}:{role}"), name: name.into() };
    let click = Click { clicker, data: data.clone(), conversation, answer_to: None };
    let decided = approvals::decide_as(&config::load(env), env, id, choice, &click, operator).await?;
    match decided {
        Ok(text) => Response::from_json(&json!({ "ok": true, "message": text })).map_err(internal),
        Err(note) => Err(ApiError::Refused(note)),
    }
}
