//! The admin API for the task board: list, create, approve, move and delete
//! tasks.

use worker::{Env, Request, Response};

use super::store;
use crate::api_error::ApiError;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::failure::internal;
use crate::runtime::http::json_object;
use crate::sessions::api::Operator;

/// The task board: `?status=…&conversation=…` filter it.
pub async fn tasks(request: &Request, env: &Env, _operator: &Operator) -> Result<Response, ApiError> {
    let url = request.url()?;
    let query = |name: &str| url.query_pairs().find(|(key, _)| key == name).map(|(_, value)| value.into_owned());
    let database = env.d1(DATABASE_BINDING)?;
    let tasks = store::list(&database, query("conversation").as_deref(), query("status").as_deref()).await?;
    Response::from_json(&tasks).map_err(internal)
}

/// Proposes a task: `{"conversation", "title", "description"?, "priority"?}`.
pub async fn create_task(mut request: Request, env: &Env, _operator: &Operator) -> Result<Response, ApiError> {
    let arguments = json_object(&mut request).await?;
    let text = |key: &str| arguments.get(key).and_then(|value| value.as_str()).unwrap_or("").trim().to_string();
    let (conversation, title) = (text("conversation"), text("title"));
    if crate::inbound::ReplyAddress::for_conversation(&conversation).is_none() || title.is_empty() {
        return Err(ApiError::BadRequest("`conversation` (a conversation key) and `title` are required".into()));
    }
    let priority =
        crate::tasks::rules::Priority::read(&text("priority")).unwrap_or(crate::tasks::rules::Priority::Medium);
    let database = env.d1(DATABASE_BINDING)?;
    let id = store::create(&database, &conversation, &title, &text("description"), priority).await?;
    task_answer(&database, id).await
}

/// Moves a task (`approve` is a move to `ready`): `{"status"}`. A task that
/// became ready is offered to the ready-task loop at once.
pub async fn move_task(
    mut request: Request,
    env: &Env,
    id: &str,
    to: Option<&str>,
    _operator: &Operator,
) -> Result<Response, ApiError> {
    let id: i64 = id.parse().map_err(|_| ApiError::NotFound)?;
    let status = match to {
        Some(status) => status.to_string(),
        None => json_object(&mut request).await?["status"].as_str().unwrap_or_default().to_string(),
    };
    let to = crate::tasks::rules::TaskStatus::read(&status)
        .ok_or_else(|| ApiError::BadRequest(format!("unknown status `{status}`")))?;
    let database = env.d1(DATABASE_BINDING)?;
    let before = store::one(&database, id).await?.map(|task| task.status);
    store::move_task(&database, id, to, crate::tasks::rules::Actor::Admin).await.map_err(ApiError::BadRequest)?;
    // A proposal decided on the board is decided in its conversation too.
    if before.as_deref() == Some(crate::tasks::rules::TaskStatus::PendingApproval.as_str()) {
        crate::approvals::store::task_moved(env, id, to == crate::tasks::rules::TaskStatus::Ready).await?;
    }
    if to == crate::tasks::rules::TaskStatus::Ready {
        store::run_ready_loop(env).await?;
    }
    task_answer(&database, id).await
}

pub async fn delete_task(env: &Env, id: &str, _operator: &Operator) -> Result<Response, ApiError> {
    let id: i64 = id.parse().map_err(|_| ApiError::NotFound)?;
    let database = env.d1(DATABASE_BINDING)?;
    match store::delete(&database, id).await? {
        true => Response::from_json(&serde_json::json!({ "deleted": id })).map_err(internal),
        false => Err(ApiError::NotFound),
    }
}

async fn task_answer(database: &worker::D1Database, id: i64) -> Result<Response, ApiError> {
    let task = store::one(database, id).await?.ok_or(ApiError::NotFound)?;
    Response::from_json(&task).map_err(internal)
}
