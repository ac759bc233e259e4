//! An approval button pressed in the web chat. The chat's session says who
//! presses (its guest, or an operator's chat) and where; an operator's chat
//! decides like an operator.

use serde_json::{json, Value};
use worker::{Env, Request, Response};

use crate::api_error::ApiError;
use crate::approvals::rules::{parse_button, Click, Clicker};
use crate::approvals::store as approvals;
use crate::inbound::ConversationKey;
use crate::platforms::Platform;
use crate::runtime::config;
use crate::runtime::failure::Answer;
use crate::runtime::http::read_body;
use crate::sessions::api as sessions;

/// The largest body the web chat's button sends.
const MAX_BODY_BYTES: usize = 1_024;

/// `POST /api/chat/approvals/{id}` `{"choice": "approve"|"deny"}`.
pub async fn pressed(mut request: Request, env: &Env, id: &str) -> Answer {
    let (conversation, role) = sessions::chat_identity(&request, env).await?;
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
    let clicker =
        Clicker { platform: Platform::Web.as_str().into(), user_id: format!("{session}:{role}"), name: name.into() };
    let click = Click { clicker, data: data.clone(), conversation, answer_to: None };
    let decided = approvals::decide_as(&config::load(env), env, id, choice, &click, operator).await?;
    match decided {
        Ok(text) => Ok(Response::from_json(&json!({ "ok": true, "message": text }))?),
        Err(note) => Err(ApiError::Refused(note)),
    }
}
