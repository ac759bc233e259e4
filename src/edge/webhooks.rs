//! Platform webhooks: verify, parse, hand the inbound to its channel object,
//! and acknowledge only once the object has stored it.

use worker::{Env, Method, Request, RequestInit, Response};

use crate::api_error::ApiError;
use crate::inbound::InboundEvent;
use crate::platforms::telegram::{self, BotIdentity, ParsedUpdate, TelegramError};

use super::config::{self, CHANNEL_BINDING};
use super::router::internal;

pub async fn telegram(mut request: Request, env: &Env) -> Result<Response, ApiError> {
    let config = config::load(env);
    let secret = request.headers().get(telegram::SECRET_HEADER).map_err(internal)?;
    telegram::verify_secret(secret.as_deref(), &config.telegram_webhook_secret).map_err(|error| match error {
        TelegramError::MissingSecret => ApiError::Unauthorized("missing Telegram secret token"),
        _ => ApiError::Unauthorized("invalid Telegram secret token"),
    })?;
    let body = request.bytes().await.map_err(|_| ApiError::BadRequest("unreadable body".into()))?;
    let bot = BotIdentity::from_token(&config.telegram_bot_token, &config.telegram_bot_username);
    match telegram::parse_update(&body, &bot) {
        Err(error) => Err(ApiError::BadRequest(error.to_string())),
        Ok(ParsedUpdate::Ignored(reason)) => acknowledge(serde_json::json!({ "ok": true, "ignored": reason })),
        Ok(ParsedUpdate::Message(event)) => {
            let stored = deliver(env, &event).await?;
            acknowledge(stored)
        }
    }
}

fn acknowledge(body: serde_json::Value) -> Result<Response, ApiError> {
    Response::from_json(&body).map_err(internal)
}

/// Hands the event to the conversation's channel object and returns its answer.
/// Any failure is a 500, so the platform retries and nothing is lost.
async fn deliver(env: &Env, event: &InboundEvent) -> Result<serde_json::Value, ApiError> {
    let stub = env
        .durable_object(CHANNEL_BINDING)
        .and_then(|namespace| namespace.get_by_name(&event.conversation_key))
        .map_err(internal)?;
    let body = serde_json::to_string(event).map_err(internal)?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_body(Some(body.into()));
    let request = Request::new_with_init("https://channel/inbound", &init).map_err(internal)?;
    let mut response = stub.fetch_with_request(request).await.map_err(internal)?;
    if response.status_code() != 200 {
        return Err(internal(format!("channel object answered {}", response.status_code())));
    }
    response.json().await.map_err(internal)
}
