//! Telegram's webhook: the secret token checked, the update parsed, a
//! message handed to its channel object and a button press decided.

use worker::{Env, Request};

use crate::api_error::ApiError;
use crate::platforms::telegram::wire::{self as telegram, BotIdentity, ParsedUpdate, TelegramError};
use crate::platforms::webhooks::{acknowledge, deliver, deliver_heard, header, MAX_WEBHOOK_BODY_BYTES};
use crate::runtime::config;
use crate::runtime::failure::Answer;
use crate::runtime::http::read_body;

/// `POST /webhooks/telegram`: one update.
pub async fn receive(mut request: Request, env: &Env) -> Answer {
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
        Ok(ParsedUpdate::Click(click)) => acknowledge(super::buttons::pressed(env, &click).await?),
        Ok(ParsedUpdate::Heard(heard)) => acknowledge(deliver_heard(env, &heard).await?),
    }
}
