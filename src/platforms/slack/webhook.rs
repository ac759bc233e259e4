//! Slack's webhook: the signature checked, then an Events API delivery, a
//! slash command or a button press (both form-encoded).

use worker::{Env, Request};

use crate::api_error::ApiError;
use crate::config::Config;
use crate::inbound::{ConversationKey, InboundEvent};
use crate::platforms::slack::install::rules::{ended_install, is_heard as is_heard_in};
use crate::platforms::slack::install::store;
use crate::platforms::slack::wire::{self as slack, ParsedSlack, SlackError};
use crate::platforms::webhooks::{acknowledge, deliver, header, MAX_WEBHOOK_BODY_BYTES};
use crate::prompt;
use crate::runtime::config;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::failure::Answer;
use crate::runtime::http::{now_ms, read_body};

/// `POST /webhooks/slack`: Events API deliveries, slash commands and button presses.
pub async fn receive(mut request: Request, env: &Env) -> Answer {
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
            return super::buttons::pressed(env, &click).await;
        }
        let event = slack::parse_command(&body).map_err(|error| ApiError::BadRequest(error.to_string()))?;
        if !is_heard(env, &config, &event).await? {
            return acknowledge(serde_json::json!({ "response_type": "ephemeral", "text": "" }));
        }
        deliver(env, &event).await?;
        return acknowledge(serde_json::json!({ "response_type": "ephemeral", "text": prompt::text("command_ack") }));
    }
    if let Some(team) = ended_install(&body) {
        return ended(env, &config, &team).await;
    }
    match slack::parse_event(&body, &config.slack_bot_user_id) {
        Err(error) => Err(ApiError::BadRequest(error.to_string())),
        Ok(ParsedSlack::Challenge(challenge)) => acknowledge(serde_json::json!({ "challenge": challenge })),
        Ok(ParsedSlack::Ignored(reason)) => acknowledge(serde_json::json!({ "ok": true, "ignored": reason })),
        Ok(ParsedSlack::Message(event)) if !is_heard(env, &config, &event).await? => {
            acknowledge(serde_json::json!({ "ok": true, "ignored": "the workspace has not installed the app" }))
        }
        Ok(ParsedSlack::Message(event)) => acknowledge(deliver(env, &event).await?),
    }
}

/// The workspace an event came from (its conversation key's team).
fn team_of(event: &InboundEvent) -> Option<String> {
    match ConversationKey::parse(&event.conversation_key) {
        Ok(ConversationKey::Slack { team, .. }) if !team.is_empty() => Some(team),
        _ => None,
    }
}

/// Whether an event is heard: always when installs are off (one D1 read
/// when they are on; see [`is_heard_in`]).
async fn is_heard(env: &Env, config: &Config, event: &InboundEvent) -> Result<bool, ApiError> {
    let Some(team) = team_of(event).filter(|_| config.slack_installs()) else {
        return Ok(true);
    };
    let (standing, _) = store::standing(&env.d1(DATABASE_BINDING)?, &team).await?;
    Ok(is_heard_in(standing, config.slack_bot_token.is_set()))
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
