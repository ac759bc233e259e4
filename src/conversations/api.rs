//! The admin API: read-only views of a conversation, behind `ADMIN_TOKEN`.

use worker::{Env, Request, Response};

use crate::api_error::ApiError;
use crate::channel::routes::ChannelRoute;

use crate::budget::usage;
use crate::conversations::archive as history;
use crate::conversations::store as conversations;
use crate::jobs;
use crate::log_line::LogLine;
use crate::memory::store as memory;
use crate::platforms::discord::gateway_route::GatewayRoute;
use crate::runtime::channel_stub;
use crate::runtime::config;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::failure::internal;
use crate::runtime::http::{json_object, read_body};
use crate::runtime::log::Emit;
use crate::security::percent_decode;
use crate::sessions::api::Operator;

/// How many rows an admin listing returns at most.
const LISTING_LIMIT: usize = 500;
/// The largest memory import body taken (4 MiB: 500 memories of about 8 KB).
pub const MAX_IMPORT_BODY_BYTES: usize = 4 << 20;

/// Conversations on every platform, most recently active first; `?q=` searches.
pub async fn conversations(request: &Request, env: &Env, _operator: &Operator) -> Result<Response, ApiError> {
    let url = request.url()?;
    let search = url.query_pairs().find(|(key, _)| key == "q").map(|(_, value)| value.into_owned());
    let database = env.d1(DATABASE_BINDING)?;
    let found = conversations::list(&database, search.as_deref(), LISTING_LIMIT).await?;
    Response::from_json(&found).map_err(internal)
}

/// The effective non-secret settings and which secrets are set.
pub async fn settings(env: &Env, _operator: &Operator) -> Result<Response, ApiError> {
    Response::from_json(&config::load(env).public_view()).map_err(internal)
}

/// The memory bulletin the cortex built last, and when.
pub async fn bulletin(env: &Env, _operator: &Operator) -> Result<Response, ApiError> {
    let database = env.d1(DATABASE_BINDING)?;
    Response::from_json(&crate::cron::cortex::bulletin(&database).await?).map_err(internal)
}

/// The Worker's state at a glance: version, bindings, migrations, platform
/// configuration (booleans, never values), the last cron tick and dead
/// letter, unsent pieces and running workers.
pub async fn status(env: &Env, _operator: &Operator) -> Result<Response, ApiError> {
    Response::from_json(&crate::status::api::report(env).await?).map_err(internal)
}

/// The operations this isolate has counted since it started (src/ops.rs); this
/// request's own invocation included.
pub async fn ops(_operator: &Operator) -> Result<Response, ApiError> {
    Response::from_json(&crate::ops::snapshot().to_json()).map_err(internal)
}

/// Every inbound the channel received, with its decision and why.
pub async fn channel_events(env: &Env, key: &str, _operator: &Operator) -> Result<Response, ApiError> {
    from_channel(env, key, ChannelRoute::Events, "").await
}

/// The channel's recent outgoing pieces, with attempts and the last error.
pub async fn channel_outbox(env: &Env, key: &str, _operator: &Operator) -> Result<Response, ApiError> {
    from_channel(env, key, ChannelRoute::Outbox, "").await
}

/// The envelopes between the channel and its processes, as JSON lines;
/// `?type=done` keeps one type, `?last=N` the newest N.
pub async fn channel_envelopes(
    request: &Request,
    env: &Env,
    key: &str,
    _operator: &Operator,
) -> Result<Response, ApiError> {
    let query = request.url()?.query().map(|query| format!("?{query}")).unwrap_or_default();
    from_channel(env, key, ChannelRoute::Envelopes, &query).await
}

/// Tokens used per process type (channel, branch, worker, compactor), summed.
pub async fn channel_usage(env: &Env, key: &str, _operator: &Operator) -> Result<Response, ApiError> {
    let mut usage: serde_json::Map<String, serde_json::Value> =
        from_channel(env, key, ChannelRoute::Usage, "").await?.json().await?;
    let database = env.d1(DATABASE_BINDING)?;
    for (process, spent) in usage::by_process(&database, &percent_decode(key)).await? {
        usage.insert(process, serde_json::to_value(spent).map_err(internal)?);
    }
    Response::from_json(&usage).map_err(internal)
}

/// The branches and workers the channel is waiting on now, with their latest status.
pub async fn channel_processes(env: &Env, key: &str, _operator: &Operator) -> Result<Response, ApiError> {
    from_channel(env, key, ChannelRoute::Processes, "").await
}

/// The conversation's workers: task, state, segments, status, outcome, usage.
pub async fn channel_workers(env: &Env, key: &str, _operator: &Operator) -> Result<Response, ApiError> {
    let database = env.d1(DATABASE_BINDING)?;
    let workers = jobs::list_workers(&database, &percent_decode(key)).await?;
    Response::from_json(&workers).map_err(internal)
}

async fn from_channel(env: &Env, key: &str, view: ChannelRoute, query: &str) -> Result<Response, ApiError> {
    let request = channel_stub::request(view, query, None, &[])?;
    channel_stub::send(env, &percent_decode(key), request).await.map_err(internal)
}

/// Scheduled jobs, all or of one conversation (`?conversation=KEY`).
pub async fn schedules(request: &Request, env: &Env, _operator: &Operator) -> Result<Response, ApiError> {
    let url = request.url()?;
    let conversation = url.query_pairs().find(|(key, _)| key == "conversation").map(|(_, value)| value.into_owned());
    let database = env.d1(DATABASE_BINDING)?;
    let jobs = crate::schedules::store::list(&database, conversation.as_deref()).await?;
    Response::from_json(&jobs.iter().map(crate::schedules::store::Job::view).collect::<Vec<_>>()).map_err(internal)
}

/// Creates a job: `{"conversation", "prompt", and one of "at" | "in_seconds" |
/// "cron" | "every_seconds", "timezone"?, "active_hours"?, "end_at"?, "max_runs"?}`.
pub async fn create_schedule(mut request: Request, env: &Env, _operator: &Operator) -> Result<Response, ApiError> {
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
    let creation = crate::schedules::store::Creation { creator: &operator, max_jobs: None };
    let job = crate::schedules::store::create(&database, &conversation, &address, &prompt, &plan, creation, now)
        .await
        .map_err(|refused| match refused {
            crate::schedules::store::Refused::ConversationCap(cap) => {
                ApiError::BadRequest(format!("over the cap of {cap}"))
            }
            crate::schedules::store::Refused::Failed(error) => ApiError::BadRequest(error.to_string()),
        })?;
    crate::schedules::store::wake(env, &conversation).await?;
    Response::from_json(&job.view()).map_err(internal)
}

/// Pauses or resumes a job.
pub async fn set_schedule_status(
    env: &Env,
    id: &str,
    status: &str,
    _operator: &Operator,
) -> Result<Response, ApiError> {
    let database = env.d1(DATABASE_BINDING)?;
    let job = crate::schedules::store::set_status(&database, id, status, crate::runtime::http::now_ms()).await?;
    let job = job.ok_or(ApiError::NotFound)?;
    crate::schedules::store::wake(env, &job.conversation_key).await?;
    Response::from_json(&job.view()).map_err(internal)
}

/// Deletes a job: it never runs again.
pub async fn delete_schedule(env: &Env, id: &str, _operator: &Operator) -> Result<Response, ApiError> {
    let database = env.d1(DATABASE_BINDING)?;
    match crate::schedules::store::cancel(&database, None, id).await? {
        true => Response::from_json(&serde_json::json!({ "deleted": id })).map_err(internal),
        false => Err(ApiError::NotFound),
    }
}

/// A job's runs, newest first, with their status and error.
pub async fn schedule_runs(env: &Env, id: &str, _operator: &Operator) -> Result<Response, ApiError> {
    let database = env.d1(DATABASE_BINDING)?;
    Response::from_json(&crate::schedules::store::runs(&database, id).await?).map_err(internal)
}

/// Today's spend (or `?day=YYYY-MM-DD`'s) per conversation, per person and
/// for the deployment, each with the limit in force.
pub async fn spend(request: &Request, env: &Env, _operator: &Operator) -> Result<Response, ApiError> {
    let url = request.url()?;
    let asked = url.query_pairs().find(|(key, _)| key == "day").map(|(_, value)| value.into_owned());
    let day = asked.unwrap_or_else(|| crate::budget::rules::day_of(crate::runtime::http::now_ms()));
    let database = env.d1(DATABASE_BINDING)?;
    let report = crate::budget::store::report(&database, &config::load(env).budgets, &day).await?;
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
) -> Result<Response, ApiError> {
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
    crate::budget::store::set_limit(&database, scope, &subject, limit, crate::runtime::http::now_ms()).await?;
    Response::from_json(&serde_json::json!({ "scope": scope.name(), "subject": subject, "limit": limit }))
        .map_err(internal)
}

/// Removes an operator's limit: the configured one applies again.
pub async fn remove_spend_limit(
    env: &Env,
    scope: &str,
    subject: &str,
    _operator: &Operator,
) -> Result<Response, ApiError> {
    let (scope, subject) = spend_subject(scope, subject)?;
    let database = env.d1(DATABASE_BINDING)?;
    match crate::budget::store::remove_limit(&database, scope, &subject).await? {
        true => Response::from_json(&serde_json::json!({ "deleted": subject })).map_err(internal),
        false => Err(ApiError::NotFound),
    }
}

fn spend_subject(scope: &str, subject: &str) -> Result<(crate::budget::rules::Scope, String), ApiError> {
    let scope = crate::budget::rules::Scope::parse(scope)
        .ok_or_else(|| ApiError::BadRequest("scope must be person, conversation or deployment".into()))?;
    let subject = match scope {
        crate::budget::rules::Scope::Deployment => crate::budget::rules::DEPLOYMENT.to_string(),
        _ => percent_decode(subject),
    };
    Ok((scope, subject))
}

/// The task board: `?status=…&conversation=…` filter it.
pub async fn tasks(request: &Request, env: &Env, _operator: &Operator) -> Result<Response, ApiError> {
    let url = request.url()?;
    let query = |name: &str| url.query_pairs().find(|(key, _)| key == name).map(|(_, value)| value.into_owned());
    let database = env.d1(DATABASE_BINDING)?;
    let tasks =
        crate::tasks::store::list(&database, query("conversation").as_deref(), query("status").as_deref()).await?;
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
        crate::tasks::rules::Priority::parse(&text("priority")).unwrap_or(crate::tasks::rules::Priority::Medium);
    let database = env.d1(DATABASE_BINDING)?;
    let id = crate::tasks::store::create(&database, &conversation, &title, &text("description"), priority).await?;
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
    let to = crate::tasks::rules::TaskStatus::parse(&status)
        .ok_or_else(|| ApiError::BadRequest(format!("unknown status `{status}`")))?;
    let database = env.d1(DATABASE_BINDING)?;
    let before = crate::tasks::store::one(&database, id).await?.map(|task| task.status);
    crate::tasks::store::move_task(&database, id, to, crate::tasks::rules::Actor::Admin)
        .await
        .map_err(ApiError::BadRequest)?;
    // A proposal decided on the board is decided in its conversation too.
    if before.as_deref() == Some(crate::tasks::rules::TaskStatus::PendingApproval.as_str()) {
        crate::approvals::store::task_moved(env, id, to == crate::tasks::rules::TaskStatus::Ready).await?;
    }
    if to == crate::tasks::rules::TaskStatus::Ready {
        crate::tasks::store::run_ready_loop(env).await?;
    }
    task_answer(&database, id).await
}

pub async fn delete_task(env: &Env, id: &str, _operator: &Operator) -> Result<Response, ApiError> {
    let id: i64 = id.parse().map_err(|_| ApiError::NotFound)?;
    let database = env.d1(DATABASE_BINDING)?;
    match crate::tasks::store::delete(&database, id).await? {
        true => Response::from_json(&serde_json::json!({ "deleted": id })).map_err(internal),
        false => Err(ApiError::NotFound),
    }
}

async fn task_answer(database: &worker::D1Database, id: i64) -> Result<Response, ApiError> {
    let task = crate::tasks::store::one(database, id).await?.ok_or(ApiError::NotFound)?;
    Response::from_json(&task).map_err(internal)
}

/// The Discord Gateway connection: start (POST), stop (DELETE), status (GET).
pub async fn gateway(env: &Env, route: GatewayRoute, _operator: &Operator) -> Result<Response, ApiError> {
    crate::platforms::discord::gateway_stub::call(env, route).await.map_err(internal)
}

/// The conversation's stored history, oldest first. The channel object first
/// mirrors what D1 lacks (when it cannot, the listing is what D1 has: at most
/// an alarm behind).
pub async fn channel_messages(env: &Env, key: &str, _operator: &Operator) -> Result<Response, ApiError> {
    let key = percent_decode(key);
    if let Err(error) = channel_stub::post(env, &key, ChannelRoute::HistoryFlush, String::new()).await {
        LogLine::warn("history_not_flushed_before_listing").conversation(&key).reason(&error).emit();
    }
    let database = env.d1(DATABASE_BINDING)?;
    let messages = history::list(&database, &key, LISTING_LIMIT).await?;
    Response::from_json(&messages).map_err(internal)
}

/// Lists or searches every memory, whatever its scope (operators see all):
/// `?query=…&mode=hybrid|recent|important|typed&memory_type=…
/// &sort=recent|importance|most_accessed&limit=N`. Each carries its `scope`.
pub async fn memories(request: &Request, env: &Env, _operator: &Operator) -> Result<Response, ApiError> {
    let url = request.url()?;
    let arguments = crate::sorting::object_from(
        url.query_pairs().map(|(key, value)| (key.into_owned(), value.into_owned().into())),
    );
    let recall = crate::memory::recall::RecallRequest::from_arguments(&arguments.into());
    let database = env.d1(DATABASE_BINDING)?;
    let viewer = crate::memory::scope::Viewer::Operator;
    let found = crate::memory::recall::recall(&config::load(env), env, &database, viewer, &recall).await?;
    Response::from_json(&found).map_err(internal)
}

/// Imports memories in bulk (`[{"content", "memory_type", "importance"?, "shared"?}]`,
/// at most 500 per request), without linking them to each other. They are
/// shared with every conversation unless `"shared": false` (operators only).
pub async fn import_memories(mut request: Request, env: &Env, _operator: &Operator) -> Result<Response, ApiError> {
    let body = read_body(&mut request, MAX_IMPORT_BODY_BYTES).await?;
    let Ok(items) = serde_json::from_slice::<Vec<memory::ImportItem>>(&body) else {
        return Err(ApiError::BadRequest(
            "expected a JSON array of {content, memory_type, importance?, shared?}".into(),
        ));
    };
    if items.len() > 500 {
        return Err(ApiError::BadRequest("at most 500 memories per request".into()));
    }
    let database = env.d1(DATABASE_BINDING)?;
    let imported = memory::import(&config::load(env), env, &database, &items).await?;
    Response::from_json(&serde_json::json!({ "imported": imported })).map_err(internal)
}

pub async fn delete_memory(env: &Env, id: &str, _operator: &Operator) -> Result<Response, ApiError> {
    let database = env.d1(DATABASE_BINDING)?;
    let viewer = crate::memory::scope::Viewer::Operator;
    match memory::delete(&config::load(env), env, &database, viewer, &percent_decode(id)).await? {
        true => Response::from_json(&serde_json::json!({ "deleted": true })).map_err(internal),
        false => Err(ApiError::NotFound),
    }
}

/// `POST /api/memories/{id}/share` shares a memory with every conversation;
/// `…/unshare` returns it to the conversation it was learned in (operators
/// only when that is unknown). Answers the memory as it now is.
pub async fn share_memory(env: &Env, id: &str, shared: bool, _operator: &Operator) -> Result<Response, ApiError> {
    let database = env.d1(DATABASE_BINDING)?;
    let id = percent_decode(id);
    match memory::set_shared(&config::load(env), env, &database, &id, shared).await? {
        Some(memory) => Response::from_json(&memory).map_err(internal),
        None => Err(ApiError::NotFound),
    }
}
