//! "Add to Slack": the install link, the OAuth callback, and the operator's
//! list of workspaces.
//!
//! Who may use it: anyone with the link, only when installs are configured
//! (`SLACK_CLIENT_ID`, `SLACK_CLIENT_SECRET`, `SLACK_TOKEN_KEY`), and only
//! workspaces on `SLACK_INSTALL_TEAMS` when that is set. What it may cost:
//! a link is one D1 row (at most [`MAX_PENDING_STATES`] pending); a callback
//! reaches Slack (`oauth.v2.access`) only with a state this Worker issued to
//! the same browser and has not seen used. What it reads: its own rows.
//! What it sends out: the code and the app's client credentials to Slack's
//! API only; the token it gets is sealed into D1 and never answered or logged.

use worker::{Env, Request, Response};

use crate::api_error::ApiError;
use crate::config::Config;
use crate::ops::Op;
use crate::platforms::messenger::API_TIMEOUT_MS;
use crate::platforms::slack::install::rules::{
    self, authorize_url, may_install, parse_access, parse_callback, redirect_uri, state_cookie, state_matches,
    InstallError, TokenKey, MAX_PENDING_STATES, STATE_COOKIE, STATE_TTL_SECS,
};
use crate::platforms::slack::install::store;
use crate::runtime::config::{self, DATABASE_BINDING};
use crate::runtime::failure::{internal, Answer};
use crate::runtime::http::{get_manual, now_ms};
use crate::sessions::api::Operator;
use crate::sessions::rules::cookie;

/// The largest `oauth.v2.access` answer read.
const ACCESS_BODY_LIMIT: usize = 64 * 1024;

/// The configuration, when installs are on; else a 404 that says what to set.
fn installs_on(env: &Env) -> Result<std::rc::Rc<Config>, ApiError> {
    let config = config::load(env);
    match config.slack_installs() {
        true => Ok(config),
        false => Err(ApiError::Unavailable(
            "Slack installs are off: set SLACK_CLIENT_ID, SLACK_CLIENT_SECRET and SLACK_TOKEN_KEY",
        )),
    }
}

/// This Worker's origin, as the request reached it.
fn origin(request: &Request) -> Result<String, ApiError> {
    let url = request.url().map_err(internal)?;
    Ok(url.origin().ascii_serialization())
}

/// `GET /slack/install`: a fresh one-time state, then off to Slack.
pub async fn install(request: Request, env: &Env) -> Answer {
    let config = installs_on(env)?;
    let now = now_ms();
    let db = env.d1(DATABASE_BINDING)?;
    let state = store::issue_state(&db, now, now + STATE_TTL_SECS * 1000, MAX_PENDING_STATES).await?;
    let state =
        state.ok_or(ApiError::TooManyRequests { retry_after_secs: 60, message: "too many installs pending" })?;
    let link = authorize_url(&config.slack_client_id, &redirect_uri(&origin(&request)?), &state);
    // Built by hand: `Response::redirect`'s headers are immutable, and the cookie must ride along.
    let headers = worker::Headers::new();
    headers.set("location", &link)?;
    headers.set("set-cookie", &state_cookie(&state, STATE_TTL_SECS))?;
    Ok(Response::empty()?.with_status(302).with_headers(headers))
}

fn refused(error: InstallError) -> ApiError {
    match error {
        InstallError::BadState => ApiError::Forbidden("the install link is unknown, used or expired"),
        InstallError::NotAllowed => ApiError::Forbidden("this workspace may not install the bot"),
        other => ApiError::BadRequest(other.to_string()),
    }
}

/// `GET /slack/oauth/callback`: the state checked against the browser's
/// cookie and used up, the code exchanged, the token sealed and saved.
pub async fn callback(request: Request, env: &Env) -> Answer {
    let config = installs_on(env)?;
    let url = request.url().map_err(internal)?;
    let callback = parse_callback(url.query().unwrap_or_default()).map_err(refused)?;
    let cookies = request.headers().get("cookie")?;
    // A forged state (or one from another browser) costs no D1 write and no call to Slack.
    if !state_matches(cookie(cookies.as_deref(), STATE_COOKIE), &callback.state) {
        return Err(refused(InstallError::BadState));
    }
    let db = env.d1(DATABASE_BINDING)?;
    if !store::consume_state(&db, &callback.state, now_ms()).await? {
        return Err(refused(InstallError::BadState));
    }
    let installed = exchange(&config, &callback.code, &redirect_uri(&origin(&request)?)).await?;
    if !may_install(&config.slack_install_teams, &installed.team_id) {
        return Err(refused(InstallError::NotAllowed));
    }
    let key = TokenKey::parse(config.slack_token_key.expose()).ok_or(ApiError::Unavailable("SLACK_TOKEN_KEY"))?;
    store::save_install(&db, &key, &installed, now_ms()).await?;
    let mut response = Response::ok(installed_page(&installed.team_name, &config.bot_name))?;
    let headers = response.headers_mut();
    headers.set("content-type", "text/html; charset=utf-8")?;
    headers.set("set-cookie", &state_cookie("", 0))?;
    Ok(response)
}

/// `oauth.v2.access` with the app's credentials (HTTP Basic, as Slack prefers).
async fn exchange(config: &Config, code: &str, redirect_uri: &str) -> Result<rules::Installed, ApiError> {
    use base64::Engine;
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("code", code)
        .append_pair("redirect_uri", redirect_uri)
        .finish();
    let url = format!("{}/oauth.v2.access?{query}", config.slack_api_base);
    let credentials = format!("{}:{}", config.slack_client_id, config.slack_client_secret.expose());
    let authorization = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(credentials));
    let answer =
        get_manual(Op::PlatformCall, &url, &[("authorization", &authorization)], API_TIMEOUT_MS, ACCESS_BODY_LIMIT)
            .await
            .map_err(|_| ApiError::Unavailable("Slack did not answer the install"))?;
    let parsed: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_default();
    parse_access(&parsed).map_err(refused)
}

/// What the person who installed sees.
fn installed_page(team_name: &str, bot_name: &str) -> String {
    let escape =
        |text: &str| text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
    format!(
        "<!doctype html><meta charset=utf-8><title>Installed</title>\
         <p>{} is installed in {}. Mention it in a channel or send it a direct message.</p>",
        escape(bot_name),
        escape(if team_name.is_empty() { "your workspace" } else { team_name })
    )
}

/// `GET /api/slack/workspaces`: which workspaces installed the bot (never a token).
pub async fn workspaces(env: &Env, _operator: &Operator) -> Answer {
    let db = env.d1(DATABASE_BINDING)?;
    let listed = store::workspaces(&db).await?;
    Response::from_json(&serde_json::json!({ "installs": config::load(env).slack_installs(), "workspaces": listed }))
        .map_err(internal)
}
