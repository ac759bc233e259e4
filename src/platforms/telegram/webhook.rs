//! Telegram's webhook: the secret token checked, the update parsed, a
//! message handed to its channel object and a button press decided.

use worker::Env;

use crate::api_error::ApiError;
use crate::platforms::telegram::wire::{self as telegram, BotIdentity, ParsedUpdate, TelegramError};
use crate::platforms::webhooks::{acknowledge, deliver_and_acknowledge, deliver_heard, header, MAX_WEBHOOK_BODY_BYTES};
use crate::runtime::config;
use crate::runtime::failure::Answer;
use crate::runtime::incoming::Incoming;

/// `POST /webhooks/telegram`: one update.
pub async fn receive(request: Incoming, env: &Env) -> Answer {
    let config = config::load(env);
    let secret = header(&request, telegram::SECRET_HEADER)?;
    telegram::verify_secret(secret.as_deref(), config.telegram_webhook_secret.expose()).map_err(
        |error| match error {
            TelegramError::MissingSecret => ApiError::Unauthorized("missing Telegram secret token"),
            _ => ApiError::Unauthorized("invalid Telegram secret token"),
        },
    )?;
    let body = request.body(MAX_WEBHOOK_BODY_BYTES).await?;
    let bot = BotIdentity::from_token(config.telegram_bot_token.expose(), &config.telegram_bot_username);
    match telegram::parse_update(&body, &bot) {
        Err(error) => Err(ApiError::BadRequest(error.to_string())),
        Ok(ParsedUpdate::Ignored(reason)) => acknowledge(serde_json::json!({ "ok": true, "ignored": reason })),
        Ok(ParsedUpdate::Message(event)) => deliver_and_acknowledge(env, &event).await,
        Ok(ParsedUpdate::Click(click)) => acknowledge(super::buttons::pressed(env, &click).await?),
        Ok(ParsedUpdate::Heard(heard)) => acknowledge(deliver_heard(env, &heard).await?),
    }
}

/// `POST /webhooks/telegram/{agent}`: one update to an agent's own bot (see
/// `crate::agents`). Who may use it: whoever holds that bot's secret token
/// (checked in constant time; an unknown agent, or one with no bot, is
/// refused the same way). What it may cost: no D1 read before the check but
/// the agents' directory's, at most one batch per isolate per 30 s.
/// The message becomes the agent's: its conversation key carries the agent's
/// prefix, and its replies go out with the agent's token.
pub async fn receive_for_agent(request: Incoming, env: &Env, agent: &str) -> Answer {
    let refused = || ApiError::Unauthorized("invalid Telegram secret token");
    let agent = crate::security::percent_decode(agent);
    let agent = match crate::agents::AgentId::parse(&agent) {
        Ok(agent) if !agent.is_default() => agent,
        _ => return Err(ApiError::NotFound),
    };
    let secret = header(&request, telegram::SECRET_HEADER)?;
    let directory = crate::agents::directory::get(env).await?;
    let bot = directory.bot(agent.as_str()).ok_or_else(refused)?;
    telegram::verify_secret(secret.as_deref(), &bot.secret).map_err(|_| refused())?;
    let body = request.body(MAX_WEBHOOK_BODY_BYTES).await?;
    let identity = BotIdentity::from_token(&bot.token, &bot.username);
    let own = |key: &str| crate::agents::within(agent.as_str(), key);
    match telegram::parse_update(&body, &identity) {
        Err(error) => Err(ApiError::BadRequest(error.to_string())),
        Ok(ParsedUpdate::Ignored(reason)) => acknowledge(serde_json::json!({ "ok": true, "ignored": reason })),
        Ok(ParsedUpdate::Message(mut event)) => {
            event.conversation_key = own(&event.conversation_key);
            if let crate::inbound::ReplyAddress::Telegram { agent: answering, .. } = &mut event.reply_address {
                *answering = Some(agent.to_string());
            }
            deliver_and_acknowledge(env, &event).await
        }
        // A press on the agent's bot decides an approval in the agent's conversation, answered by its bot.
        Ok(ParsedUpdate::Click(mut click)) => {
            click.conversation = own(&click.conversation);
            acknowledge(super::buttons::pressed_on(env, &click, Some(agent.as_str())).await?)
        }
        Ok(ParsedUpdate::Heard(mut heard)) => {
            heard.conversation_key = own(&heard.conversation_key);
            acknowledge(deliver_heard(env, &heard).await?)
        }
    }
}
