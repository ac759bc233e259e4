//! Slack's webhook: the signature checked, then an Events API delivery, a
//! slash command or a button press (both form-encoded).

use worker::Env;

use crate::api_error::ApiError;
use crate::config::Config;
use crate::inbound::ConversationKey;
use crate::platforms::slack::heard;
use crate::platforms::slack::install::rules::{ended_install, is_live as is_live_in};
use crate::platforms::slack::install::store;
use crate::platforms::slack::wire::{self as slack, ParsedSlack, SlackError};
use crate::platforms::webhooks::{
    acknowledge, deliver, deliver_and_acknowledge, deliver_heard, header, MAX_WEBHOOK_BODY_BYTES,
};
use crate::prompt;
use crate::runtime::config;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::failure::Answer;
use crate::runtime::http::now_ms;
use crate::runtime::incoming::Incoming;

/// `POST /webhooks/slack`: Events API deliveries, slash commands and button presses.
pub async fn receive(request: Incoming, env: &Env) -> Answer {
    let config = config::load(env);
    let signature = header(&request, slack::SIGNATURE_HEADER)?;
    let timestamp = header(&request, slack::TIMESTAMP_HEADER)?;
    let is_form =
        header(&request, "content-type")?.is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"));
    let body = request.body(MAX_WEBHOOK_BODY_BYTES).await?;
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
        // A modal submitted to the bot is answered, never dropped; one closed needs nothing.
        match slack::interaction_kind(&body).as_deref() {
            Some("view_submission") => return acknowledge(heard::view_submission_answer()),
            Some("view_closed") => return acknowledge(serde_json::json!({})),
            _ => {}
        }
        // A button press (interactivity) comes form-encoded too, as `payload`.
        if let Some(click) = slack::parse_click(&body) {
            let click = click.map_err(|error| ApiError::BadRequest(error.to_string()))?;
            return super::buttons::pressed(env, &click).await;
        }
        let event = slack::parse_command(&body).map_err(|error| ApiError::BadRequest(error.to_string()))?;
        if !is_live(env, &config, &event.conversation_key).await? {
            return acknowledge(serde_json::json!({ "response_type": "ephemeral", "text": "" }));
        }
        deliver(env, &event).await?;
        return acknowledge(serde_json::json!({ "response_type": "ephemeral", "text": prompt::text("command_ack") }));
    }
    if let Some(team) = ended_install(&body) {
        return ended(env, &config, &team).await;
    }
    if let Some(heard) = serde_json::from_slice(&body).ok().and_then(|envelope: serde_json::Value| {
        let bot_user = envelope["authorizations"][0]["user_id"].as_str().unwrap_or(&config.slack_bot_user_id);
        heard::parse_heard(&envelope, bot_user)
    }) {
        return match heard {
            Ok(heard) if !is_live(env, &config, &heard.conversation_key).await? => {
                acknowledge(serde_json::json!({ "ok": true, "ignored": "the workspace has not installed the app" }))
            }
            Ok(heard) => acknowledge(deliver_heard(env, &heard).await?),
            Err(reason) => acknowledge(serde_json::json!({ "ok": true, "ignored": reason })),
        };
    }
    match slack::parse_event(&body, &config.slack_bot_user_id) {
        Err(error) => Err(ApiError::BadRequest(error.to_string())),
        Ok(ParsedSlack::Challenge(challenge)) => acknowledge(serde_json::json!({ "challenge": challenge })),
        Ok(ParsedSlack::Ignored(reason)) => acknowledge(serde_json::json!({ "ok": true, "ignored": reason })),
        Ok(ParsedSlack::Message(event)) if !is_live(env, &config, &event.conversation_key).await? => {
            acknowledge(serde_json::json!({ "ok": true, "ignored": "the workspace has not installed the app" }))
        }
        Ok(ParsedSlack::Message(event)) => deliver_and_acknowledge(env, &event).await,
    }
}

/// The workspace an event came from (its conversation key's team).
fn team_of(conversation_key: &str) -> Option<String> {
    match ConversationKey::parse(conversation_key) {
        Ok(ConversationKey::Slack { team, .. }) if !team.is_empty() => Some(team),
        _ => None,
    }
}

/// Whether an event's workspace is one the bot serves: always when installs
/// are off (one D1 read when they are on; see [`is_live_in`]).
async fn is_live(env: &Env, config: &Config, conversation_key: &str) -> Result<bool, ApiError> {
    let Some(team) = team_of(conversation_key).filter(|_| config.slack_installs()) else {
        return Ok(true);
    };
    let (standing, _) = store::standing(&env.d1(DATABASE_BINDING)?, &team).await?;
    Ok(is_live_in(standing, config.slack_bot_token.is_set()))
}

/// `app_uninstalled` or revoked bot tokens: the workspace's token deleted and
/// the workspace remembered as ended. With installs off there is nothing
/// stored to delete (`SLACK_BOT_TOKEN` is the operator's to remove).
async fn ended(env: &Env, config: &Config, team: &str) -> Answer {
    if config.slack_installs() {
        store::end_install(&env.d1(DATABASE_BINDING)?, team, now_ms()).await?;
    }
    acknowledge(serde_json::json!({ "ok": true, "ended": config.slack_installs() }))
}
