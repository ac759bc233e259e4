//! Teams' messaging endpoint: the Bot Framework's token checked (signed by a
//! published key, for this bot, fresh, naming the activity's connector), the
//! connector checked against the allow-list, then the activity read.

use worker::Env;

use crate::api_error::ApiError;
use crate::platforms::teams::client::signing_keys;
use crate::platforms::teams::rules::{self, TokenError};
use crate::platforms::teams::wire::{self, ParsedTeams, TEAMS_CHANNEL};
use crate::platforms::webhooks::{acknowledge, deliver_and_acknowledge, deliver_heard, header, MAX_WEBHOOK_BODY_BYTES};
use crate::runtime::config;
use crate::runtime::failure::Answer;
use crate::runtime::http::now_ms;
use crate::runtime::incoming::Incoming;

/// `POST /webhooks/teams`: activities from the Bot Framework.
pub async fn receive(request: Incoming, env: &Env) -> Answer {
    let config = config::load(env);
    let authorization = header(&request, "authorization")?;
    let token = rules::bearer(authorization.as_deref()).map_err(refusal)?.to_string();
    let body = request.body(MAX_WEBHOOK_BODY_BYTES).await?;
    let route = wire::route(&body).map_err(|error| ApiError::BadRequest(error.to_string()))?;
    let check = |keys: &rules::KeySet| {
        rules::verify(&token, keys, &config.teams_app_id, &route.channel_id, &route.service_url, now_ms() / 1000)
    };
    let verified = match check(&signing_keys(&config, false).await?) {
        // The keys may have rotated since they were fetched.
        Err(TokenError::UnknownKey(_)) => check(&signing_keys(&config, true).await?),
        other => other,
    };
    verified.map_err(refusal)?;
    // The token names this connector; it must also be one the bot's own token may go to.
    if !rules::is_allowed_service_url(&route.service_url, &config.teams_service_url_hosts) {
        return Err(ApiError::Forbidden("serviceUrl is not an allowed Bot Framework connector"));
    }
    if route.channel_id != TEAMS_CHANNEL {
        return acknowledge(serde_json::json!({ "ok": true, "ignored": "not a Teams activity" }));
    }
    match wire::parse_activity(&body, &config.teams_app_id) {
        Err(error) => Err(ApiError::BadRequest(error.to_string())),
        Ok(ParsedTeams::Ignored(reason)) => acknowledge(serde_json::json!({ "ok": true, "ignored": reason })),
        Ok(ParsedTeams::Click(pressed)) => super::buttons::pressed(env, &pressed.0, &pressed.1).await,
        Ok(ParsedTeams::Message(event)) => deliver_and_acknowledge(env, &event).await,
        Ok(ParsedTeams::Heard(heard)) => acknowledge(deliver_heard(env, &heard).await?),
    }
}

/// A refused token as a 401 with its reason.
fn refusal(error: TokenError) -> ApiError {
    ApiError::Unauthorized(match error {
        TokenError::Missing => "missing Bot Framework token",
        TokenError::Malformed => "malformed Bot Framework token",
        TokenError::UnknownKey(_) => "unknown signing key",
        TokenError::NotEndorsed => "signing key not endorsed for this channel",
        TokenError::Invalid => "invalid Bot Framework token",
        TokenError::Expired => "expired Bot Framework token",
        TokenError::WrongServiceUrl => "token does not name this serviceUrl",
    })
}
