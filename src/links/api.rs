//! The admin API for links: `GET /api/links` (every link), `POST /api/links`
//! (`{"from", "to", "kind", "direction"}`: adds one or changes its kind and
//! direction), `DELETE /api/links/{from}/{to}`. Operators only. Agent ids are
//! checked against the shared pattern (whether the agent exists is the agents
//! room's to add).

use serde::Deserialize;
use worker::{Env, Request, Response};

use crate::agents::store as agents;
use crate::api_error::ApiError;
use crate::links::rules::{Link, MAX_LINKS};
use crate::links::store as links;
use crate::routes::AgentRoute;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::failure::{internal, Answer};
use crate::runtime::http::{json_object, now_ms};
use crate::security::percent_decode;
use crate::sessions::api::Operator;

/// The links' admin routes (`from`, `to`: the path's segments, where there are any).
pub async fn route(
    route: AgentRoute,
    request: Request,
    env: &Env,
    from: &str,
    to: &str,
    operator: &Operator,
) -> Answer {
    match route {
        AgentRoute::Links => list(env, operator).await,
        AgentRoute::SaveLink => save(request, env, operator).await,
        AgentRoute::RemoveLink => remove(env, from, to, operator).await,
        _ => Err(ApiError::NotFound),
    }
}

pub async fn list(env: &Env, _operator: &Operator) -> Answer {
    let db = env.d1(DATABASE_BINDING)?;
    Response::from_json(&serde_json::json!({ "links": links::list(&db).await? })).map_err(internal)
}

/// What a new link says.
#[derive(Deserialize)]
struct NewLink {
    from: String,
    to: String,
    kind: String,
    direction: String,
}

pub async fn save(mut request: Request, env: &Env, _operator: &Operator) -> Answer {
    let body = json_object(&mut request).await?;
    let new: NewLink =
        serde_json::from_value(body).map_err(|error| ApiError::BadRequest(format!("unreadable link: {error}")))?;
    let link = Link::new(&new.from, &new.to, &new.kind, &new.direction).map_err(ApiError::BadRequest)?;
    let db = env.d1(DATABASE_BINDING)?;
    for end in [&link.from, &link.to] {
        if agents::get(&db, end).await?.is_none() {
            return Err(ApiError::BadRequest(format!("no agent {end:?}: create it first")));
        }
    }
    let known = links::list(&db).await?;
    let is_new = !known.iter().any(|known| known.from == link.from && known.to == link.to);
    if is_new && known.len() >= MAX_LINKS {
        return Err(ApiError::BadRequest(format!("at most {MAX_LINKS} links")));
    }
    links::save(&db, &link, now_ms()).await?;
    Response::from_json(&link).map_err(internal)
}

/// `from` and `to` as the path has them (percent-encoded).
pub async fn remove(env: &Env, from: &str, to: &str, _operator: &Operator) -> Answer {
    let (from, to) = (&percent_decode(from), &percent_decode(to));
    let db = env.d1(DATABASE_BINDING)?;
    match links::remove(&db, from, to).await? {
        true => Response::from_json(&serde_json::json!({ "deleted": { "from": from, "to": to } })).map_err(internal),
        false => Err(ApiError::NotFound),
    }
}
