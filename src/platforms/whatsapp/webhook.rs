//! WhatsApp's webhook: `GET` is Meta's verification handshake (the verify
//! token, answered with the challenge); `POST` a notification, its signature
//! checked over the raw body, then each message handed to its channel
//! object, each button press decided, each reaction and status acknowledged.

use serde_json::json;
use worker::{Env, Method, Response};

use crate::api_error::ApiError;
use crate::log_line::LogLine;
use crate::platforms::webhooks::{acknowledge, deliver, deliver_heard, header, MAX_WEBHOOK_BODY_BYTES};
use crate::platforms::whatsapp::wire::{self as whatsapp, Notice, WhatsAppError};
use crate::runtime::config;
use crate::runtime::failure::Answer;
use crate::runtime::http::now_ms;
use crate::runtime::incoming::Incoming;
use crate::runtime::log::Emit;

/// `GET /webhooks/whatsapp`: the handshake; `POST`: a notification.
pub async fn receive(request: Incoming, env: &Env) -> Answer {
    let config = config::load(env);
    if request.method() == Method::Get {
        let url = request.url()?;
        let query: Vec<(String, String)> =
            url.query_pairs().map(|(name, value)| (name.into_owned(), value.into_owned())).collect();
        let challenge =
            whatsapp::verify_handshake(&query, config.whatsapp_verify_token.expose()).map_err(|error| match error {
                WhatsAppError::WrongVerifyToken => ApiError::Forbidden("wrong WhatsApp verify token"),
                other => ApiError::BadRequest(other.to_string()),
            })?;
        // Meta reads the challenge back as the whole plain-text body.
        return Ok(Response::ok(challenge)?);
    }
    let signature = header(&request, whatsapp::SIGNATURE_HEADER)?;
    let body = request.body(MAX_WEBHOOK_BODY_BYTES).await?;
    whatsapp::verify_signature(signature.as_deref(), &body, config.whatsapp_app_secret.expose()).map_err(|error| {
        match error {
            WhatsAppError::MissingSignature => ApiError::Unauthorized("missing WhatsApp signature"),
            _ => ApiError::Unauthorized("invalid WhatsApp signature"),
        }
    })?;
    let notices = whatsapp::parse_notification(&body, now_ms()).map_err(|error| match error {
        WhatsAppError::Stale => ApiError::Unauthorized("stale WhatsApp message"),
        other => ApiError::BadRequest(other.to_string()),
    })?;
    let (mut messages, mut clicks) = (0, 0);
    for notice in notices {
        match notice {
            Notice::Message(event) => {
                deliver(env, &event).await?;
                messages += 1;
            }
            Notice::Click(click) => {
                super::buttons::pressed(env, &click).await?;
                clicks += 1;
            }
            Notice::Heard(heard) => {
                deliver_heard(env, &heard).await?;
            }
            Notice::Status(status) if status.status == "failed" => {
                let (code, title) = status.error.unwrap_or((0, "no reason given".into()));
                LogLine::warn("whatsapp_message_failed")
                    .platform("whatsapp")
                    .id(&status.message_id)
                    .field("code", code)
                    .reason(&title)
                    .emit();
            }
            Notice::Status(_) | Notice::Ignored(_) => {}
        }
    }
    acknowledge(json!({ "ok": true, "messages": messages, "clicks": clicks }))
}
