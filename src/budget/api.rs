//! The admin API for budgets: today's spend and the limits in force, and an
//! operator's overrides of them.

use worker::{Env, Request, Response};

use super::store;
use crate::api_error::ApiError;
use crate::runtime::config;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::failure::internal;
use crate::runtime::failure::Answer;
use crate::runtime::http::json_object;
use crate::security::percent_decode;
use crate::sessions::api::Operator;

/// Today's spend (or `?day=YYYY-MM-DD`'s) per conversation, per person and
/// for the deployment, each with the limit in force.
pub async fn spend(request: &Request, env: &Env, _operator: &Operator) -> Answer {
    let url = request.url()?;
    let asked = url.query_pairs().find(|(key, _)| key == "day").map(|(_, value)| value.into_owned());
    let day = asked.unwrap_or_else(|| crate::budget::rules::day_of(crate::runtime::http::now_ms()));
    let report = store::report(env, &config::load(env).budgets, &day).await?;
    Response::from_json(&report).map_err(internal)
}

/// Sets a daily limit for one person (`person/{platform}:{user id}`), one
/// conversation (`conversation/{key}`) or the deployment (`deployment/*`):
/// `{"tokens": N, "usd": X}`; a field left out keeps the configured limit.
pub async fn set_spend_limit(
    mut request: Request,
    env: &Env,
    scope: &str,
    subject: &str,
    _operator: &Operator,
) -> Answer {
    let (scope, subject) = spend_subject(scope, subject)?;
    let body = json_object(&mut request).await?;
    let field = |key: &str| match body.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(value) => value
            .as_f64()
            .filter(|number| number.is_finite() && *number >= 0.0)
            .map(Some)
            .ok_or_else(|| ApiError::BadRequest(format!("`{key}` must be a number of at least 0"))),
    };
    let limit = crate::budget::rules::Limit {
        tokens: field("tokens")?.map(|tokens| tokens as u64),
        micro_usd: field("usd")?.map(crate::budget::rules::usd_to_micro),
    };
    let database = env.d1(DATABASE_BINDING)?;
    store::set_limit(&database, scope, &subject, limit, crate::runtime::http::now_ms()).await?;
    Response::from_json(&serde_json::json!({ "scope": scope.name(), "subject": subject, "limit": limit }))
        .map_err(internal)
}

/// Removes an operator's limit: the configured one applies again.
pub async fn remove_spend_limit(env: &Env, scope: &str, subject: &str, _operator: &Operator) -> Answer {
    let (scope, subject) = spend_subject(scope, subject)?;
    let database = env.d1(DATABASE_BINDING)?;
    match store::remove_limit(&database, scope, &subject).await? {
        true => Response::from_json(&serde_json::json!({ "deleted": subject })).map_err(internal),
        false => Err(ApiError::NotFound),
    }
}

fn spend_subject(scope: &str, subject: &str) -> Result<(crate::budget::rules::Scope, String), ApiError> {
    let scope = crate::budget::rules::Scope::parse(scope).ok_or_else(|| {
        ApiError::BadRequest("scope must be person, conversation, workspace, agent or deployment".into())
    })?;
    let subject = match scope {
        crate::budget::rules::Scope::Deployment => crate::budget::rules::DEPLOYMENT.to_string(),
        _ => percent_decode(subject),
    };
    Ok((scope, subject))
}
