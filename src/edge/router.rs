//! The Worker's routes: one table from (method, path) to a handler, and the
//! one place where an [`ApiError`] becomes a status and a JSON body.

use worker::{Env, Headers, Method, Request, Response, Result};

use crate::api_error::ApiError;

use super::failure::internal;
use super::{admin, config, schedules, sessions, webhooks};

pub async fn handle(request: Request, env: &Env) -> Result<Response> {
    // Loaded first, so every log line and error body knows the secrets to scrub.
    let refusal = config::load(env).refusal();
    let outcome = match refusal {
        // A configuration the Worker refuses: every request (health included)
        // says why, and nothing else runs.
        Some(refusal) => Err(ApiError::Misconfigured(refusal)),
        None => route(request, env).await,
    };
    let response = outcome.or_else(|error| {
        let mut body = error.body();
        config::redactor().redact_json(&mut body);
        let mut response = Response::from_json(&body)?.with_status(error.status());
        if let Some(seconds) = error.retry_after_secs() {
            response.headers_mut().set("retry-after", &seconds.to_string())?;
        }
        Ok::<_, worker::Error>(response)
    })?;
    with_browser_headers(response)
}

/// The same response with [`crate::security::BROWSER_HEADERS`] added. The
/// headers are copied into a new set: a response from a Durable Object has
/// immutable ones.
fn with_browser_headers(response: Response) -> Result<Response> {
    let headers = Headers::new();
    for (name, value) in response.headers().entries() {
        headers.append(&name, &value)?;
    }
    for (name, value) in crate::security::BROWSER_HEADERS {
        headers.set(name, value)?;
    }
    Ok(response.with_headers(headers))
}

async fn route(request: Request, env: &Env) -> std::result::Result<Response, ApiError> {
    let path = request.path();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let outcome = match (request.method(), segments.as_slice()) {
        (Method::Get, ["health"]) => Response::from_json(&serde_json::json!({ "ok": true })).map_err(internal),
        (Method::Get, ["api", "status"]) => admin::status(&request, env).await,
        (Method::Get, ["api", "ops"]) => admin::ops(&request, env).await,
        (Method::Post, ["webhooks", "telegram"]) => webhooks::telegram(request, env).await,
        (Method::Post, ["webhooks", "slack"]) => webhooks::slack(request, env).await,
        (Method::Post, ["webhooks", "discord"]) => webhooks::discord(request, env).await,
        (Method::Post, ["api", "session"]) => sessions::sign_in(request, env).await,
        (Method::Get, ["api", "session"]) => sessions::current(&request, env).await,
        (Method::Delete, ["api", "session"]) => sessions::sign_out(&request).await,
        (Method::Post, ["api", "chat", "session"]) => sessions::start_chat(request, env).await,
        (Method::Get, ["api", "chat", "session"]) => sessions::current_chat(&request, env).await,
        (Method::Get, ["api", "chat", "socket"]) => sessions::chat_socket(&request, env).await,
        (Method::Get, ["api", "conversations"]) => admin::conversations(&request, env).await,
        (Method::Get, ["api", "settings"]) => admin::settings(&request, env).await,
        (Method::Get, ["api", "memory", "bulletin"]) => admin::bulletin(&request, env).await,
        (Method::Get, ["api", "channels", key, "live"]) => {
            sessions::watch_socket(&request, env, &crate::security::percent_decode(key)).await
        }
        (Method::Get, ["api", "channels", key, "events"]) => admin::channel_events(&request, env, key).await,
        (Method::Get, ["api", "channels", key, "messages"]) => admin::channel_messages(&request, env, key).await,
        (Method::Get, ["api", "channels", key, "outbox"]) => admin::channel_outbox(&request, env, key).await,
        (Method::Get, ["api", "channels", key, "envelopes"]) => admin::channel_envelopes(&request, env, key).await,
        (Method::Get, ["api", "channels", key, "usage"]) => admin::channel_usage(&request, env, key).await,
        (Method::Get, ["api", "channels", key, "processes"]) => admin::channel_processes(&request, env, key).await,
        (Method::Get, ["api", "channels", key, "workers"]) => admin::channel_workers(&request, env, key).await,
        (Method::Get, ["api", "memories"]) => admin::memories(&request, env).await,
        (Method::Post, ["api", "memories"]) => admin::import_memories(request, env).await,
        (Method::Delete, ["api", "memories", id]) => admin::delete_memory(&request, env, id).await,
        (Method::Post, ["api", "memories", id, "share"]) => admin::share_memory(&request, env, id, true).await,
        (Method::Post, ["api", "memories", id, "unshare"]) => admin::share_memory(&request, env, id, false).await,
        (Method::Get, ["api", "schedules"]) => admin::schedules(&request, env).await,
        (Method::Post, ["api", "schedules"]) => admin::create_schedule(request, env).await,
        (Method::Post, ["api", "schedules", id, "pause"]) => {
            admin::set_schedule_status(&request, env, id, schedules::PAUSED).await
        }
        (Method::Post, ["api", "schedules", id, "resume"]) => {
            admin::set_schedule_status(&request, env, id, schedules::ACTIVE).await
        }
        (Method::Delete, ["api", "schedules", id]) => admin::delete_schedule(&request, env, id).await,
        (Method::Get, ["api", "schedules", id, "runs"]) => admin::schedule_runs(&request, env, id).await,
        (Method::Get, ["api", "spend"]) => admin::spend(&request, env).await,
        (Method::Put, ["api", "spend", "limits", scope, subject]) => {
            admin::set_spend_limit(request, env, scope, subject).await
        }
        (Method::Delete, ["api", "spend", "limits", scope, subject]) => {
            admin::remove_spend_limit(&request, env, scope, subject).await
        }
        (Method::Get, ["api", "tasks"]) => admin::tasks(&request, env).await,
        (Method::Post, ["api", "tasks"]) => admin::create_task(request, env).await,
        (Method::Post, ["api", "tasks", id, "approve"]) => admin::move_task(request, env, id, Some("ready")).await,
        (Method::Post, ["api", "tasks", id, "move"]) => admin::move_task(request, env, id, None).await,
        (Method::Delete, ["api", "tasks", id]) => admin::delete_task(&request, env, id).await,
        (Method::Post, ["api", "discord", "gateway"]) => admin::gateway(&request, env, Method::Post, "/start").await,
        (Method::Delete, ["api", "discord", "gateway"]) => admin::gateway(&request, env, Method::Delete, "/stop").await,
        (Method::Get, ["api", "discord", "gateway"]) => admin::gateway(&request, env, Method::Get, "/status").await,
        (
            _,
            ["health"]
            | ["api", "status" | "ops"]
            | ["webhooks", _]
            | ["api", "channels", _, _]
            | ["api", "session" | "conversations" | "settings"]
            | ["api", "chat", _]
            | ["api", "memory", "bulletin"]
            | ["api", "memories", ..]
            | ["api", "discord", "gateway"]
            | ["api", "schedules", ..]
            | ["api", "spend", ..]
            | ["api", "tasks", ..],
        ) => Err(ApiError::MethodNotAllowed),
        _ => Err(ApiError::NotFound),
    };
    outcome
}
