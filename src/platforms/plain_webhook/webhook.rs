//! `POST /webhooks/plain`: the signature checked (time and body), then a
//! message (or an edit, deletion or reaction) handed to its channel object,
//! or a button press decided.

use worker::Env;

use crate::api_error::ApiError;
use crate::platforms::plain_webhook::wire::{self as plain, Plain, PlainError};
use crate::platforms::webhooks::{acknowledge, deliver_and_acknowledge, deliver_heard, header, MAX_WEBHOOK_BODY_BYTES};
use crate::runtime::config;
use crate::runtime::failure::Answer;
use crate::runtime::http::now_ms;
use crate::runtime::incoming::Incoming;

/// One signed request: a message or a press.
pub async fn receive(request: Incoming, env: &Env) -> Answer {
    let config = config::load(env);
    let signature = header(&request, plain::SIGNATURE_HEADER)?;
    let body = request.body(MAX_WEBHOOK_BODY_BYTES).await?;
    let now = now_ms();
    plain::verify(signature.as_deref(), &body, config.webhook_secret.expose(), now / 1000).map_err(
        |error| match error {
            PlainError::MissingSignature => ApiError::Unauthorized("missing webhook signature"),
            PlainError::Stale => ApiError::Unauthorized("stale webhook request"),
            _ => ApiError::Unauthorized("invalid webhook signature"),
        },
    )?;
    match plain::parse(&body, now).map_err(|error| ApiError::BadRequest(error.to_string()))? {
        Plain::Message(event) => deliver_and_acknowledge(env, &event).await,
        Plain::Press(click) => acknowledge(super::buttons::pressed(env, &click).await?),
        Plain::Heard(heard) => acknowledge(deliver_heard(env, &heard).await?),
    }
}
