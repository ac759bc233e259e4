//! Discord's interactions endpoint: the signature checked, then PONG, a
//! deferred response for commands; a pressed approval button is answered
//! with its decision, other components with a deferred update.

use worker::Env;

use crate::api_error::ApiError;
use crate::platforms::discord::wire::{self as discord, DiscordError, Interaction};
use crate::platforms::webhooks::{acknowledge, deliver, header, MAX_WEBHOOK_BODY_BYTES};
use crate::runtime::config;
use crate::runtime::failure::Answer;
use crate::runtime::http::now_ms;
use crate::runtime::incoming::Incoming;

/// `POST /webhooks/discord`: one interaction.
pub async fn receive(request: Incoming, env: &Env) -> Answer {
    let config = config::load(env);
    let signature = header(&request, discord::SIGNATURE_HEADER)?;
    let timestamp = header(&request, discord::TIMESTAMP_HEADER)?;
    let body = request.body(MAX_WEBHOOK_BODY_BYTES).await?;
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
        Interaction::Component(click) => return acknowledge(super::buttons::pressed(env, click).await?),
        _ => {}
    }
    acknowledge(discord::immediate_response(&interaction))
}
