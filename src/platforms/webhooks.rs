//! Platform webhooks: verify, parse, hand the inbound to its channel object,
//! and acknowledge only once the object has stored it.

use worker::{Env, Request, Response};

use crate::api_error::ApiError;
use crate::channel::routes::ChannelRoute;
use crate::inbound::InboundEvent;
use crate::platforms::discord::wire::{self as discord, DiscordError, Interaction};
use crate::platforms::slack::wire::{self as slack, ParsedSlack, SlackError};
use crate::platforms::telegram::wire::{self as telegram, BotIdentity, ParsedUpdate, TelegramError};
use crate::prompt;

use crate::runtime::channel_stub;
use crate::runtime::config;
use crate::runtime::failure::internal;
use crate::runtime::http::now_ms;
use crate::runtime::http::read_body;

/// The largest webhook body taken (1 MiB). Real updates, events and
/// interactions stay far below it: Telegram caps a text at 4,096 characters,
/// Slack at 40,000, Discord at 6,000.
pub const MAX_WEBHOOK_BODY_BYTES: usize = 1 << 20;

/// A header's value, or None when absent.
fn header(request: &Request, name: &str) -> Result<Option<String>, ApiError> {
    request.headers().get(name).map_err(internal)
}

/// Slack Events API deliveries, slash commands and button presses (both form-encoded).
pub async fn slack(mut request: Request, env: &Env) -> Result<Response, ApiError> {
    let config = config::load(env);
    let signature = header(&request, slack::SIGNATURE_HEADER)?;
    let timestamp = header(&request, slack::TIMESTAMP_HEADER)?;
    let is_form =
        header(&request, "content-type")?.is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"));
    let body = read_body(&mut request, MAX_WEBHOOK_BODY_BYTES).await?;
    slack::verify_signature(
        signature.as_deref(),
        timestamp.as_deref(),
        &body,
        config.slack_signing_secret.expose(),
        now_ms() / 1000,
    )
    .map_err(|error| match error {
        SlackError::MissingSignature => ApiError::Unauthorized("missing Slack signature"),
        SlackError::Stale => ApiError::Unauthorized("stale Slack request"),
        _ => ApiError::Unauthorized("invalid Slack signature"),
    })?;
    if is_form {
        // A button press (interactivity) comes form-encoded too, as `payload`.
        if let Some(click) = slack::parse_click(&body) {
            let click = click.map_err(|error| ApiError::BadRequest(error.to_string()))?;
            return crate::approvals::buttons::slack(env, &click).await;
        }
        let event = slack::parse_command(&body).map_err(|error| ApiError::BadRequest(error.to_string()))?;
        deliver(env, &event).await?;
        return acknowledge(serde_json::json!({ "response_type": "ephemeral", "text": prompt::text("command_ack") }));
    }
    match slack::parse_event(&body, &config.slack_bot_user_id) {
        Err(error) => Err(ApiError::BadRequest(error.to_string())),
        Ok(ParsedSlack::Challenge(challenge)) => acknowledge(serde_json::json!({ "challenge": challenge })),
        Ok(ParsedSlack::Ignored(reason)) => acknowledge(serde_json::json!({ "ok": true, "ignored": reason })),
        Ok(ParsedSlack::Message(event)) => acknowledge(deliver(env, &event).await?),
    }
}

/// Discord interactions: PONG, a deferred response for commands; a pressed
/// approval button is answered with its decision, other components with a
/// deferred update.
pub async fn discord(mut request: Request, env: &Env) -> Result<Response, ApiError> {
    let config = config::load(env);
    let signature = header(&request, discord::SIGNATURE_HEADER)?;
    let timestamp = header(&request, discord::TIMESTAMP_HEADER)?;
    let body = read_body(&mut request, MAX_WEBHOOK_BODY_BYTES).await?;
    discord::verify_signature(
        signature.as_deref(),
        timestamp.as_deref(),
        &body,
        &config.discord_public_key,
        now_ms() / 1000,
    )
    .map_err(|error| match error {
        DiscordError::MissingSignature => ApiError::Unauthorized("missing Discord signature"),
        DiscordError::Stale => ApiError::Unauthorized("stale Discord request"),
        _ => ApiError::Unauthorized("invalid Discord signature"),
    })?;
    let interaction = discord::parse_interaction(&body).map_err(|error| ApiError::BadRequest(error.to_string()))?;
    match &interaction {
        Interaction::Command(event) => {
            deliver(env, event).await?;
        }
        Interaction::Component(click) => return acknowledge(crate::approvals::buttons::discord(env, click).await?),
        _ => {}
    }
    acknowledge(discord::immediate_response(&interaction))
}

pub async fn telegram(mut request: Request, env: &Env) -> Result<Response, ApiError> {
    let config = config::load(env);
    let secret = header(&request, telegram::SECRET_HEADER)?;
    telegram::verify_secret(secret.as_deref(), config.telegram_webhook_secret.expose()).map_err(
        |error| match error {
            TelegramError::MissingSecret => ApiError::Unauthorized("missing Telegram secret token"),
            _ => ApiError::Unauthorized("invalid Telegram secret token"),
        },
    )?;
    let body = read_body(&mut request, MAX_WEBHOOK_BODY_BYTES).await?;
    let bot = BotIdentity::from_token(config.telegram_bot_token.expose(), &config.telegram_bot_username);
    match telegram::parse_update(&body, &bot) {
        Err(error) => Err(ApiError::BadRequest(error.to_string())),
        Ok(ParsedUpdate::Ignored(reason)) => acknowledge(serde_json::json!({ "ok": true, "ignored": reason })),
        Ok(ParsedUpdate::Message(event)) => acknowledge(deliver(env, &event).await?),
        Ok(ParsedUpdate::Click(click)) => acknowledge(crate::approvals::buttons::telegram(env, &click).await?),
    }
}

fn acknowledge(body: serde_json::Value) -> Result<Response, ApiError> {
    Response::from_json(&body).map_err(internal)
}

/// Hands the event to the conversation's channel object and returns its answer.
/// Any failure is a 500, so the platform retries and nothing is lost.
pub async fn deliver(env: &Env, event: &InboundEvent) -> Result<serde_json::Value, ApiError> {
    let body = serde_json::to_string(event).map_err(internal)?;
    let response = channel_stub::post(env, &event.conversation_key, ChannelRoute::Inbound, body).await?;
    let body = crate::runtime::http::whole_body(response).await?;
    serde_json::from_slice(&body).map_err(internal)
}
