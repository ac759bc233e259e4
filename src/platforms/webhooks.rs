//! What every platform's webhook shares: the route to each platform's own
//! (`{platform}/webhook.rs`: verify, parse, answer), and the hand-off that
//! gives an inbound to its channel object and acknowledges only once the
//! object has stored it.

use worker::{Env, Response};

use crate::api_error::ApiError;
use crate::channel::routes::ChannelRoute;
use crate::inbound::{HeardEvent, InboundEvent};
use crate::platforms::{discord, plain_webhook, slack, teams, telegram, whatsapp, Platform};
use crate::runtime::failure::Answer;

use crate::runtime::channel_stub;
use crate::runtime::failure::internal;
use crate::runtime::incoming::Incoming;

/// The largest webhook body taken (1 MiB). Real updates, events and
/// interactions stay far below it: Telegram caps a text at 4,096 characters,
/// Slack at 40,000, Discord at 6,000.
pub const MAX_WEBHOOK_BODY_BYTES: usize = 1 << 20;

/// `POST /webhooks/{platform}`: the platform's own webhook.
pub async fn receive(platform: Platform, request: Incoming, env: &Env) -> Answer {
    match platform {
        Platform::Telegram => telegram::webhook::receive(request, env).await,
        Platform::Slack => slack::webhook::receive(request, env).await,
        Platform::Discord => discord::webhook::receive(request, env).await,
        // The web chat speaks over its socket, not a webhook.
        Platform::Web => Err(ApiError::NotFound),
        Platform::Teams => teams::webhook::receive(request, env).await,
        Platform::WhatsApp => whatsapp::webhook::receive(request, env).await,
        Platform::Webhook => plain_webhook::webhook::receive(request, env).await,
        // Mail arrives through the Worker's `email` event, not a webhook.
        Platform::Email => Err(ApiError::NotFound),
        // A link's messages come from the other agent's channel, never from outside.
        Platform::Link => Err(ApiError::NotFound),
    }
}

/// A header's value, or None when absent.
pub fn header(request: &Incoming, name: &str) -> Result<Option<String>, ApiError> {
    Ok(request.header(name)?)
}

/// The platform's 200 with `body`.
pub fn acknowledge(body: serde_json::Value) -> Answer {
    Ok(Response::from_json(&body)?)
}

/// Hands the event to the conversation's channel object and returns its answer.
/// Any failure is a 500, so the platform retries and nothing is lost.
///
/// A Slack workspace or Discord channel an agent claims makes the event that
/// agent's (its key gains the agent's prefix, see `crate::agents::rooms`):
/// the one place webhooks and the Gateway alike pass through.
pub async fn deliver(env: &Env, event: &InboundEvent) -> Result<serde_json::Value, ApiError> {
    let response = hand_over(env, event).await?;
    let body = crate::runtime::http::whole_body(response).await?;
    serde_json::from_slice(&body).map_err(internal)
}

/// [`deliver`], answering the platform with the channel object's answer as
/// it came: a webhook whose acknowledgement is that answer neither reads nor
/// re-encodes it (the object's JSON streams through).
pub async fn deliver_and_acknowledge(env: &Env, event: &InboundEvent) -> Answer {
    hand_over(env, event).await
}

/// Posts the event (its key made its agent's when claimed) to its channel
/// object; the object's 200 answer.
async fn hand_over(env: &Env, event: &InboundEvent) -> Result<Response, ApiError> {
    let owned = crate::agents::directory::owned_key(env, &event.conversation_key).await?;
    let owned = owned.map(|conversation_key| InboundEvent { conversation_key, ..event.clone() });
    let event = owned.as_ref().unwrap_or(event);
    let body = serde_json::to_string(event).map_err(internal)?;
    Ok(channel_stub::post(env, &event.conversation_key, ChannelRoute::Inbound, body).await?)
}

/// Hands an edit, deletion or reaction to the conversation's channel object
/// (the same inbox dedupe as a message) and returns its answer.
/// A claimed room's event becomes its agent's, as in [`deliver`].
pub async fn deliver_heard(env: &Env, event: &HeardEvent) -> Result<serde_json::Value, ApiError> {
    let owned = crate::agents::directory::owned_key(env, &event.conversation_key).await?;
    let owned = owned.map(|conversation_key| HeardEvent { conversation_key, ..event.clone() });
    let event = owned.as_ref().unwrap_or(event);
    let body = serde_json::to_string(event).map_err(internal)?;
    let response = channel_stub::post(env, &event.conversation_key, ChannelRoute::Heard, body).await?;
    let body = crate::runtime::http::whole_body(response).await?;
    serde_json::from_slice(&body).map_err(internal)
}
