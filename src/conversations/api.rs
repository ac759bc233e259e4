//! The admin API: read-only views of a conversation, behind `ADMIN_TOKEN`.

use worker::{Env, Request, Response};

use crate::channel::routes::ChannelRoute;
use crate::runtime::failure::Answer;

use crate::budget::usage;
use crate::conversations::archive as history;
use crate::conversations::store as conversations;
use crate::jobs;
use crate::log_line::LogLine;
use crate::platforms::discord::gateway_route::GatewayRoute;
use crate::runtime::channel_stub;
use crate::runtime::config;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::failure::internal;
use crate::runtime::log::Emit;
use crate::security::percent_decode;
use crate::sessions::api::Operator;

/// How many rows an admin listing returns at most.
const LISTING_LIMIT: usize = 500;

/// Conversations on every platform, most recently active first; `?q=` searches.
pub async fn conversations(request: &Request, env: &Env, _operator: &Operator) -> Answer {
    let url = request.url()?;
    let search = url.query_pairs().find(|(key, _)| key == "q").map(|(_, value)| value.into_owned());
    let found = conversations::list(env, search.as_deref(), LISTING_LIMIT).await?;
    Response::from_json(&found).map_err(internal)
}

/// The effective non-secret settings and which secrets are set.
pub async fn settings(env: &Env, _operator: &Operator) -> Answer {
    Response::from_json(&config::load(env).public_view()).map_err(internal)
}

/// The Worker's state at a glance: version, bindings, migrations, platform
/// configuration (booleans, never values), the last cron tick and dead
/// letter, unsent pieces and running workers.
pub async fn status(env: &Env, _operator: &Operator) -> Answer {
    Response::from_json(&crate::status::api::report(env).await?).map_err(internal)
}

/// The operations this isolate has counted since it started (src/ops.rs); this
/// request's own invocation included.
pub async fn ops(_operator: &Operator) -> Answer {
    Response::from_json(&crate::ops::snapshot().to_json()).map_err(internal)
}

/// Every inbound the channel received, with its decision and why.
pub async fn channel_events(env: &Env, key: &str, _operator: &Operator) -> Answer {
    from_channel(env, key, ChannelRoute::Events, "").await
}

/// The channel's recent outgoing pieces, with attempts and the last error.
pub async fn channel_outbox(env: &Env, key: &str, _operator: &Operator) -> Answer {
    from_channel(env, key, ChannelRoute::Outbox, "").await
}

/// The envelopes between the channel and its processes, as JSON lines;
/// `?type=done` keeps one type, `?last=N` the newest N.
pub async fn channel_envelopes(request: &Request, env: &Env, key: &str, _operator: &Operator) -> Answer {
    let query = request.url()?.query().map(|query| format!("?{query}")).unwrap_or_default();
    from_channel(env, key, ChannelRoute::Envelopes, &query).await
}

/// Tokens used per process type (channel, branch, worker, compactor), summed.
pub async fn channel_usage(env: &Env, key: &str, _operator: &Operator) -> Answer {
    let mut usage: serde_json::Map<String, serde_json::Value> =
        from_channel(env, key, ChannelRoute::Usage, "").await?.json().await?;
    let key = percent_decode(key);
    let database = crate::runtime::d1::shard_of(env, &key)?;
    for (process, spent) in usage::by_process(&database, &key).await? {
        usage.insert(process, serde_json::to_value(spent).map_err(internal)?);
    }
    Response::from_json(&usage).map_err(internal)
}

/// The branches and workers the channel is waiting on now, with their latest status.
pub async fn channel_processes(env: &Env, key: &str, _operator: &Operator) -> Answer {
    from_channel(env, key, ChannelRoute::Processes, "").await
}

/// The conversation's workers: task, state, segments, status, outcome, usage.
pub async fn channel_workers(env: &Env, key: &str, _operator: &Operator) -> Answer {
    let database = env.d1(DATABASE_BINDING)?;
    let workers = jobs::list_workers(&database, &percent_decode(key)).await?;
    Response::from_json(&workers).map_err(internal)
}

async fn from_channel(env: &Env, key: &str, view: ChannelRoute, query: &str) -> Answer {
    let request = channel_stub::request(view, query, None, &[])?;
    channel_stub::send(env, &percent_decode(key), request).await.map_err(internal)
}

/// The Discord Gateway connection: start (POST), stop (DELETE), status (GET).
pub async fn gateway(env: &Env, route: GatewayRoute, _operator: &Operator) -> Answer {
    crate::platforms::discord::gateway_stub::call(env, route).await.map_err(internal)
}

/// The conversation's stored history, oldest first. The channel object first
/// mirrors what D1 lacks (when it cannot, the listing is what D1 has: at most
/// an alarm behind).
pub async fn channel_messages(env: &Env, key: &str, _operator: &Operator) -> Answer {
    let key = percent_decode(key);
    if let Err(error) = channel_stub::post(env, &key, ChannelRoute::HistoryFlush, String::new()).await {
        LogLine::warn("history_not_flushed_before_listing").conversation(&key).reason(&error).emit();
    }
    let database = crate::runtime::d1::shard_of(env, &key)?;
    let messages = history::list(&database, &key, LISTING_LIMIT).await?;
    Response::from_json(&messages).map_err(internal)
}
