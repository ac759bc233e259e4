//! `/api/agents`: the operator's agents. Who may use it: operators only (the
//! router checks). What it may cost: a few D1 statements per call, bodies
//! capped at 64 KB. What it may read: the agents table, bot usernames and
//! rooms, never a bot's token or secret, nor an invitation but once, when it
//! is made. What it may send out: nothing. Every write drops the isolate's
//! agents' directory (`crate::agents::directory`).

use serde_json::{json, Value};
use worker::{Env, Request, Response};

use crate::agents::rooms::{check_rooms, conflicts};
use crate::agents::rules::{check_bot, check_name, check_settings, AgentError, AgentId, AgentSettings, DEFAULT};
use crate::agents::store::{self, Bot};
use crate::api_error::ApiError;
use crate::routes::AgentRoute;
use crate::runtime::config::{self, DATABASE_BINDING};
use crate::runtime::failure::{internal, Answer};
use crate::runtime::http::{json_object, now_ms};
use crate::security::percent_decode;
use crate::sessions::api::Operator;

fn refused(error: AgentError) -> ApiError {
    ApiError::BadRequest(error.to_string())
}

/// The agent a `{id}` path segment names.
fn agent_id(param: &str) -> Result<AgentId, ApiError> {
    AgentId::parse(&percent_decode(param)).map_err(|error| refused(error.into()))
}

/// The agent an admin request is about: its `agent` query parameter
/// (absent: the default agent). A malformed id is a 400.
pub fn of_query(request: &Request) -> Result<String, ApiError> {
    let url = request.url().map_err(|_| ApiError::BadRequest("bad URL".into()))?;
    let given = url.query_pairs().find(|(name, _)| name == "agent").map(|(_, value)| value.into_owned());
    match given {
        None => Ok(DEFAULT.to_string()),
        Some(text) => AgentId::parse(&text).map(String::from).map_err(|error| refused(error.into())),
    }
}

/// The agents' admin routes (`id`: the `{id}` path segment, where there is one).
pub async fn route(route: AgentRoute, request: Request, env: &Env, id: &str, operator: &Operator) -> Answer {
    match route {
        AgentRoute::List => list(env, operator).await,
        AgentRoute::Create => create(request, env, operator).await,
        AgentRoute::Update => update(request, env, id, operator).await,
        AgentRoute::Delete => delete(env, id, operator).await,
        AgentRoute::SetTelegram => set_telegram(request, env, id, operator).await,
        AgentRoute::SetRooms => set_rooms(request, env, id, operator).await,
        AgentRoute::CreateInvitation => create_invitation(env, id, operator).await,
        AgentRoute::RemoveInvitation => remove_invitation(env, id, operator).await,
        _ => Err(ApiError::NotFound),
    }
    // A write drops this isolate's directory: its next inbound sees the change.
    .inspect(|_| {
        if route != AgentRoute::List {
            crate::agents::directory::forget()
        }
    })
}

async fn one(env: &Env, id: &str) -> Answer {
    let db = env.d1(DATABASE_BINDING)?;
    let agent = store::get(&db, id).await?.ok_or(ApiError::NotFound)?;
    let agent = store::with_rooms(&db, vec![agent]).await?.pop().ok_or(ApiError::NotFound)?;
    Response::from_json(&agent).map_err(internal)
}

/// `GET /api/agents`.
pub async fn list(env: &Env, _operator: &Operator) -> Answer {
    let db = env.d1(DATABASE_BINDING)?;
    let agents = store::with_rooms(&db, store::list(&db).await?).await?;
    Response::from_json(&json!({ "agents": agents })).map_err(internal)
}

/// `POST /api/agents` with `{"id", "name", "settings"?}`: 400 for a bad
/// field, 409-style refusal when the id is taken.
pub async fn create(mut request: Request, env: &Env, _operator: &Operator) -> Answer {
    let body = json_object(&mut request).await?;
    let id = AgentId::parse(body.get("id").and_then(Value::as_str).unwrap_or_default())
        .map_err(|error| refused(error.into()))?;
    let name = check_name(body.get("name").and_then(Value::as_str).unwrap_or(id.as_str())).map_err(refused)?;
    let settings = settings_given(body.get("settings"))?;
    let db = env.d1(DATABASE_BINDING)?;
    if !store::create(&db, id.as_str(), &name, &settings, now_ms()).await? {
        return Err(ApiError::Refused(format!("an agent `{id}` exists already")));
    }
    one(env, id.as_str()).await
}

/// `PUT /api/agents/{id}` with `{"name"?, "settings"?}`: what is given replaces.
pub async fn update(mut request: Request, env: &Env, id: &str, _operator: &Operator) -> Answer {
    let id = agent_id(id)?;
    let body = json_object(&mut request).await?;
    let db = env.d1(DATABASE_BINDING)?;
    let current = store::get(&db, id.as_str()).await?.ok_or(ApiError::NotFound)?;
    let name = match body.get("name").and_then(Value::as_str) {
        Some(name) => check_name(name).map_err(refused)?,
        None => current.name,
    };
    let settings = match body.get("settings") {
        Some(settings) => settings_given(Some(settings))?,
        None => current.settings,
    };
    store::update(&db, id.as_str(), &name, &settings, now_ms()).await?;
    one(env, id.as_str()).await
}

/// Settings as given, checked, with a model chain that parses (a 400 says why).
fn settings_given(value: Option<&Value>) -> Result<AgentSettings, ApiError> {
    let settings = check_settings(value).map_err(refused)?;
    if let Some(chain) = &settings.model {
        crate::llm::routing::parse_chain(chain).map_err(|error| ApiError::BadRequest(format!("`model`: {error}")))?;
    }
    Ok(settings)
}

/// `DELETE /api/agents/{id}`: the default agent is refused (400).
pub async fn delete(env: &Env, id: &str, _operator: &Operator) -> Answer {
    let id = agent_id(id)?;
    if id.is_default() {
        return Err(refused(AgentError::DeleteDefault));
    }
    if !store::delete(&env.d1(DATABASE_BINDING)?, id.as_str()).await? {
        return Err(ApiError::NotFound);
    }
    Response::from_json(&json!({ "deleted": id.as_str() })).map_err(internal)
}

/// `PUT /api/agents/{id}/telegram` with `{"token", "secret", "username"}`:
/// the agent's own bot, answering at `/webhooks/telegram/{id}`. The default
/// agent's bot is `TELEGRAM_BOT_TOKEN` (400 here). Needs `SLACK_TOKEN_KEY`.
pub async fn set_telegram(mut request: Request, env: &Env, id: &str, _operator: &Operator) -> Answer {
    let id = agent_id(id)?;
    if id.is_default() {
        return Err(ApiError::BadRequest("the default agent's bot is TELEGRAM_BOT_TOKEN".into()));
    }
    let body = json_object(&mut request).await?;
    let field = |name: &str| body.get(name).and_then(Value::as_str).unwrap_or_default().trim().to_string();
    let bot =
        Bot { agent: id.to_string(), username: field("username"), token: field("token"), secret: field("secret") };
    check_bot(&bot.token, &bot.secret, &bot.username).map_err(refused)?;
    let config = config::load(env);
    let key = store::token_key(&config)
        .map_err(|_| ApiError::Misconfigured("SLACK_TOKEN_KEY (32 bytes, base64) seals agents' bot tokens".into()))?;
    let db = env.d1(DATABASE_BINDING)?;
    store::get(&db, id.as_str()).await?.ok_or(ApiError::NotFound)?;
    store::save_bot(&db, &key, &bot, now_ms()).await?;
    one(env, id.as_str()).await
}

/// `PUT /api/agents/{id}/rooms` with `{"slack_teams": [...], "discord_channels": [...]}`:
/// the rooms it answers, replacing its old ones. A bad id is a 400, a room
/// another agent holds a 409 naming it; the default agent answers every
/// room no other claims (400 here).
pub async fn set_rooms(mut request: Request, env: &Env, id: &str, _operator: &Operator) -> Answer {
    let id = agent_id(id)?;
    if id.is_default() {
        return Err(ApiError::BadRequest("the default agent answers every room no other agent claims".into()));
    }
    let body = json_object(&mut request).await?;
    let rooms = check_rooms(&body).map_err(|error| ApiError::BadRequest(error.to_string()))?;
    let db = env.d1(DATABASE_BINDING)?;
    store::get(&db, id.as_str()).await?.ok_or(ApiError::NotFound)?;
    let taken = conflicts(&store::claims(&db).await?, id.as_str(), &rooms);
    if !taken.is_empty() {
        return Err(ApiError::Refused(format!("another agent answers {}", taken.join(", "))));
    }
    store::save_rooms(&db, id.as_str(), &rooms).await?;
    one(env, id.as_str()).await
}

/// `POST /api/agents/{id}/invitation`: a new web-chat invitation for the
/// agent (its old one, and every session signed in with it, ends), shown
/// this once. The default agent's is `WEB_CHAT_TOKEN` (400 here). Needs `SLACK_TOKEN_KEY`.
pub async fn create_invitation(env: &Env, id: &str, _operator: &Operator) -> Answer {
    let id = agent_id(id)?;
    if id.is_default() {
        return Err(ApiError::BadRequest("the default agent's invitation is WEB_CHAT_TOKEN".into()));
    }
    let key = store::token_key(&config::load(env))
        .map_err(|_| ApiError::Misconfigured("SLACK_TOKEN_KEY (32 bytes, base64) seals agents' invitations".into()))?;
    let db = env.d1(DATABASE_BINDING)?;
    store::get(&db, id.as_str()).await?.ok_or(ApiError::NotFound)?;
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(internal)?;
    let invitation = format!("inv-{}", hex::encode(bytes));
    store::save_invitation(&db, &key, id.as_str(), &invitation, now_ms()).await?;
    Response::from_json(&json!({ "agent": id.as_str(), "invitation": invitation })).map_err(internal)
}

/// `DELETE /api/agents/{id}/invitation`: the agent's invitation ends (404 when it had none).
pub async fn remove_invitation(env: &Env, id: &str, _operator: &Operator) -> Answer {
    let id = agent_id(id)?;
    if !store::remove_invitation(&env.d1(DATABASE_BINDING)?, id.as_str()).await? {
        return Err(ApiError::NotFound);
    }
    one(env, id.as_str()).await
}
