//! The operator's routes for MCP server clients: `GET /api/mcp-clients`
//! (each with its scope, limits, calls and today's spend), `POST
//! /api/mcp-clients` (creates one; the answer holds its token, shown this
//! once) and `DELETE /api/mcp-clients/{id}` (revokes its token).

use serde_json::json;
use worker::{Env, Request, Response};

use crate::api_error::ApiError;
use crate::budget::rules::usd_to_micro;
use crate::mcp_server::rules::NewClient;
use crate::mcp_server::store;
use crate::routes::AgentRoute;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::failure::{internal, Answer};
use crate::runtime::http::{json_object, now_ms};
use crate::sessions::api::Operator;

/// The clients' admin routes (`id`: the `{id}` path segment, where there is one).
pub async fn route(route: AgentRoute, request: Request, env: &Env, id: &str, operator: &Operator) -> Answer {
    match route {
        AgentRoute::McpClients => list(env, operator).await,
        AgentRoute::CreateMcpClient => create(request, env, operator).await,
        AgentRoute::RevokeMcpClient => revoke(env, id, operator).await,
        _ => Err(ApiError::NotFound),
    }
}

/// Clients (revoked ones included) a deployment may have.
const MAX_CLIENTS: usize = 200;

pub async fn list(env: &Env, _operator: &Operator) -> Answer {
    let db = env.d1(DATABASE_BINDING)?;
    Response::from_json(&store::list(&db, now_ms()).await?).map_err(internal)
}

pub async fn create(mut request: Request, env: &Env, _operator: &Operator) -> Answer {
    let body = json_object(&mut request).await?;
    let new: NewClient =
        serde_json::from_value(body).map_err(|error| ApiError::BadRequest(format!("unreadable client: {error}")))?;
    let scope = new.check().map_err(ApiError::BadRequest)?;
    let db = env.d1(DATABASE_BINDING)?;
    let now = now_ms();
    if store::list(&db, now).await?.len() >= MAX_CLIENTS {
        return Err(ApiError::BadRequest(format!("at most {MAX_CLIENTS} clients")));
    }
    let agent = new.agent.as_str();
    if crate::agents::store::get(&db, agent).await?.is_none() {
        return Err(ApiError::BadRequest(format!("no agent {agent:?}")));
    }
    let budget = usd_to_micro(new.daily_budget_usd);
    let (id, token) = store::create(&db, &new.name, agent, &scope, new.rate_per_minute, budget, now).await?;
    let answer = json!({
        "id": id, "name": new.name.trim(), "agent": agent, "token": token,
        "tools": scope.tool_names(), "conversations": scope.conversations,
        "rate_per_minute": new.rate_per_minute, "daily_budget_usd": new.daily_budget_usd,
    });
    Ok(Response::from_json(&answer).map_err(internal)?.with_status(201))
}

pub async fn revoke(env: &Env, id: &str, _operator: &Operator) -> Answer {
    let db = env.d1(DATABASE_BINDING)?;
    match store::revoke(&db, id, now_ms()).await? {
        true => Response::from_json(&json!({ "revoked": id })).map_err(internal),
        false => Err(ApiError::NotFound),
    }
}
