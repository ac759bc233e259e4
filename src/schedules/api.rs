//! The admin API for schedules: list, create, pause, resume and delete them,
//! and each one's runs.

use worker::{Env, Request, Response};

use super::store;
use crate::api_error::ApiError;
use crate::runtime::config;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::failure::internal;
use crate::runtime::failure::Answer;
use crate::runtime::http::json_object;
use crate::sessions::api::Operator;

/// Scheduled jobs, all or of one conversation (`?conversation=KEY`).
pub async fn schedules(request: &Request, env: &Env, _operator: &Operator) -> Answer {
    let url = request.url()?;
    let conversation = url.query_pairs().find(|(key, _)| key == "conversation").map(|(_, value)| value.into_owned());
    let database = env.d1(DATABASE_BINDING)?;
    let jobs = store::list(&database, conversation.as_deref()).await?;
    Response::from_json(&jobs.iter().map(store::Job::view).collect::<Vec<_>>()).map_err(internal)
}

/// Creates a job: `{"conversation", "prompt", and one of "at" | "in_seconds" |
/// "cron" | "every_seconds", "timezone"?, "active_hours"?, "end_at"?, "max_runs"?}`.
pub async fn create_schedule(mut request: Request, env: &Env, _operator: &Operator) -> Answer {
    let arguments = json_object(&mut request).await?;
    let text = |key: &str| arguments.get(key).and_then(|value| value.as_str()).unwrap_or("").trim().to_string();
    let (conversation, prompt) = (text("conversation"), text("prompt"));
    let address = crate::inbound::ReplyAddress::for_conversation(&conversation)
        .ok_or_else(|| ApiError::BadRequest("`conversation` must be a conversation key".into()))?;
    if prompt.is_empty() {
        return Err(ApiError::BadRequest("`prompt` must say what to do when it runs".into()));
    }
    let config = config::load(env);
    let now = crate::runtime::http::now_ms();
    let when = <crate::schedules::arguments::PlanArguments as serde::Deserialize>::deserialize(&arguments)
        .map_err(|error| ApiError::BadRequest(format!("the job's timing does not fit: {error}")))?;
    let plan = crate::schedules::tools::plan_from_arguments(&config, &when, now).map_err(ApiError::BadRequest)?;
    let database = env.d1(DATABASE_BINDING)?;
    // An operator's job is theirs: no cap, and only an operator cancels it.
    let operator = crate::inbound::Author { id: "operator".into(), name: "an operator".into(), is_bot: false };
    let creation = store::Creation { creator: &operator, max_jobs: None };
    let job =
        store::create(&database, &conversation, &address, &prompt, &plan, creation, now).await.map_err(|refused| {
            match refused {
                store::Refused::ConversationCap(cap) => ApiError::BadRequest(format!("over the cap of {cap}")),
                store::Refused::Failed(error) => ApiError::BadRequest(error.to_string()),
            }
        })?;
    store::wake(env, &conversation).await?;
    Response::from_json(&job.view()).map_err(internal)
}

/// Pauses or resumes a job.
pub async fn set_schedule_status(env: &Env, id: &str, status: &str, _operator: &Operator) -> Answer {
    let database = env.d1(DATABASE_BINDING)?;
    let job = store::set_status(&database, id, status, crate::runtime::http::now_ms()).await?;
    let job = job.ok_or(ApiError::NotFound)?;
    store::wake(env, &job.conversation_key).await?;
    Response::from_json(&job.view()).map_err(internal)
}

/// Deletes a job: it never runs again.
pub async fn delete_schedule(env: &Env, id: &str, _operator: &Operator) -> Answer {
    let database = env.d1(DATABASE_BINDING)?;
    match store::cancel(&database, None, id).await? {
        true => Response::from_json(&serde_json::json!({ "deleted": id })).map_err(internal),
        false => Err(ApiError::NotFound),
    }
}

/// A job's runs, newest first, with their status and error.
pub async fn schedule_runs(env: &Env, id: &str, _operator: &Operator) -> Answer {
    let database = env.d1(DATABASE_BINDING)?;
    Response::from_json(&store::runs(&database, id).await?).map_err(internal)
}
