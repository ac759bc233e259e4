//! The admin API for remote MCP servers and the approvals people decided:
//! `GET /api/mcp/servers`, `PUT|DELETE /api/mcp/servers/{name}`,
//! `POST /api/mcp/servers/{name}/refresh`, `GET /api/approvals`. Operators
//! only; a server's credentials are named here, never shown or stored.

use worker::{Env, Request, Response};

use crate::api_error::ApiError;
use crate::approvals::store as approvals;
use crate::mcp::client::checked;
use crate::mcp::rules::{check_name, ServerSettings};
use crate::mcp::servers as mcp;
use crate::mcp::toolbox::refresh_now;
use crate::runtime::config;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::failure::internal;
use crate::runtime::failure::Answer;
use crate::runtime::http::json_object;
use crate::sessions::api::Operator;

/// Servers an operator may add (each is a tool source every worker sees).
const MAX_SERVERS: usize = 20;
/// Approvals the list shows.
const APPROVALS_LISTED: i64 = 200;

pub async fn servers(env: &Env, _operator: &Operator) -> Answer {
    let db = env.d1(DATABASE_BINDING)?;
    Response::from_json(&mcp::views(&db).await?).map_err(internal)
}

/// Adds or changes a server, then lists its tools at once (the answer says
/// whether it could be reached).
pub async fn save(mut request: Request, env: &Env, name: &str, _operator: &Operator) -> Answer {
    check_name(name).map_err(ApiError::BadRequest)?;
    let body = json_object(&mut request).await?;
    let settings: ServerSettings =
        serde_json::from_value(body).map_err(|error| ApiError::BadRequest(format!("unreadable settings: {error}")))?;
    settings.check().map_err(ApiError::BadRequest)?;
    let config = config::load(env);
    // The same check every request to the server passes.
    checked(&config, &settings.url)
        .map_err(|refusal| ApiError::BadRequest(format!("the URL is refused: {refusal}")))?;
    if let crate::mcp::rules::Auth::Oauth { token_url, .. } = &settings.auth {
        checked(&config, token_url)
            .map_err(|refusal| ApiError::BadRequest(format!("the token URL is refused: {refusal}")))?;
    }
    let db = env.d1(DATABASE_BINDING)?;
    let known = mcp::servers(&db).await?;
    if known.len() >= MAX_SERVERS && !known.iter().any(|server| server.name == name) {
        return Err(ApiError::BadRequest(format!("at most {MAX_SERVERS} servers")));
    }
    mcp::save_settings(&db, name, &settings).await?;
    refreshed(&config, env, name).await
}

pub async fn refresh(env: &Env, name: &str, _operator: &Operator) -> Answer {
    refreshed(&config::load(env), env, name).await
}

async fn refreshed(config: &crate::config::Config, env: &Env, name: &str) -> Answer {
    let db = env.d1(DATABASE_BINDING)?;
    match refresh_now(config, env, &db, name).await? {
        Some(view) => Response::from_json(&view).map_err(internal),
        None => Err(ApiError::NotFound),
    }
}

pub async fn remove(env: &Env, name: &str, _operator: &Operator) -> Answer {
    let db = env.d1(DATABASE_BINDING)?;
    match mcp::remove(&db, name).await? {
        true => Response::from_json(&serde_json::json!({ "deleted": name })).map_err(internal),
        false => Err(ApiError::NotFound),
    }
}

/// Every approval asked for, newest first: what, who asked, who decided and when.
pub async fn list_approvals(env: &Env, _operator: &Operator) -> Answer {
    let db = env.d1(DATABASE_BINDING)?;
    Response::from_json(&approvals::recent(&db, APPROVALS_LISTED).await?).map_err(internal)
}
