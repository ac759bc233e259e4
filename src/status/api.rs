//! `GET /api/status`, gathered: what the setup still lacks (a usable model,
//! platform credentials), the bindings present, the D1 migrations
//! applied, each platform's configuration state, the last cron tick and dead
//! letter, and the counts of unsent pieces and running workers. Also the
//! writes that leave those records where they happen.

use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use worker::{D1Database, Env, Result};

use crate::runtime::config;

use crate::llm::readiness::ModelProblem;
use crate::log_line::LogLine;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::d1::number;
use crate::runtime::d1::Metered;
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;
use crate::status::rules::{models, platforms};

/// `status_events` key of the last cron tick.
pub const CRON_TICK: &str = "cron_tick";
/// `status_events` key of the last dead letter.
pub const DEAD_LETTER: &str = "dead_letter";

/// `status_events` key of the last model problem a turn met (a refused key, an
/// unreachable server), or null once a model answered again.
pub const MODEL_SETUP: &str = "model_setup";
/// A model problem recorded this long ago without a fresh one is no longer shown.
const MODEL_PROBLEM_SHOWN_MS: i64 = 60 * 60 * 1000;

thread_local! {
    /// This isolate recorded a model problem (so an answer afterwards clears it).
    static MODEL_PROBLEM_RECORDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Records what a turn learnt of the model's setup: a problem (written each
/// time: turns with one are told at most hourly per conversation), or, after
/// this isolate recorded one, that a model answers again. Best effort.
pub async fn note_model_problem(env: &Env, problem: Option<&ModelProblem>) {
    let recorded = MODEL_PROBLEM_RECORDED.with(std::cell::Cell::get);
    if problem.is_none() && !recorded {
        return;
    }
    let value = match problem {
        Some(problem) => json!({ "problem": problem, "explain": problem.explain(), "at": now_ms() }),
        None => Value::Null,
    };
    match record(env, MODEL_SETUP, value).await {
        Ok(()) => MODEL_PROBLEM_RECORDED.with(|cell| cell.set(problem.is_some())),
        Err(error) => LogLine::warn("status_not_recorded").field("kind", MODEL_SETUP).reason(&error).emit(),
    }
}

/// Keeps `value` (redacted) as the latest event of its kind.
pub async fn record(env: &Env, key: &str, mut value: Value) -> Result<()> {
    config::redactor().redact_json(&mut value);
    env.d1(DATABASE_BINDING)?
        .prepare(
            "INSERT INTO status_events (key, value, updated_at) VALUES (?1, ?2, ?3) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        )
        .bind(&[key.into(), value.to_string().into(), number(now_ms())])?
        .run_counted()
        .await?;
    Ok(())
}

/// Records how many pieces wait in a conversation's outbox (none: no row).
pub async fn report_pending(db: &D1Database, conversation_key: &str, unsent: i64) -> Result<()> {
    pending_statement(db, conversation_key, unsent)?.run_counted().await?;
    Ok(())
}

/// The statement of [`report_pending`], for a batch (a channel object's commit).
pub fn pending_statement(db: &D1Database, conversation_key: &str, unsent: i64) -> Result<worker::D1PreparedStatement> {
    match unsent {
        0 => db.prepare("DELETE FROM pending_sends WHERE conversation_key = ?1").bind(&[conversation_key.into()]),
        _ => db
            .prepare(
                "INSERT INTO pending_sends (conversation_key, pending, updated_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (conversation_key) DO UPDATE SET pending = excluded.pending, updated_at = excluded.updated_at",
            )
            .bind(&[conversation_key.into(), number(unsent), number(now_ms())]),
    }
}

/// The whole status document. Each D1 read stands alone: a missing table
/// (a migration not applied) shows as null, not as a failed request.
pub async fn report(env: &Env) -> Result<Value> {
    let config = config::load(env);
    let mut bindings = serde_json::Map::new();
    for name in crate::bindings::ALL.map(|binding| binding.name) {
        let bound = js_sys::Reflect::get(env, &JsValue::from_str(name)).is_ok_and(|value| !value.is_undefined());
        bindings.insert(name.to_string(), Value::Bool(bound));
    }
    let db = env.d1(DATABASE_BINDING)?;
    let migrations = rows(&db, "SELECT name FROM d1_migrations ORDER BY id")
        .await
        .map(|rows| rows.iter().filter_map(|row| row["name"].as_str().map(str::to_string)).collect::<Vec<_>>());
    let events = rows(&db, "SELECT key, value FROM status_events").await.unwrap_or_default();
    let event = |key: &str| {
        let found = events.iter().find(|row| row["key"] == key)?;
        serde_json::from_str::<Value>(found["value"].as_str()?).ok()
    };
    let pending = pending_sends(env).await;
    let running = first(
        &db,
        "SELECT COUNT(*) AS running FROM workers WHERE state IN ('running', 'waiting_for_input') AND cancelled = 0",
    )
    .await
    .map(|row| row["running"].clone());
    // The settings say it first; otherwise what the last turns met, for an hour.
    let ai_bound = bindings.get(crate::bindings::AI.name).is_some_and(|bound| bound == &Value::Bool(true));
    let recorded =
        event(MODEL_SETUP).filter(|seen| seen["at"].as_i64().is_some_and(|at| now_ms() - at < MODEL_PROBLEM_SHOWN_MS));
    let model = match crate::status::setup::model_problem(&config, ai_bound) {
        Some(problem) => json!({ "ready": false, "problem": problem, "explain": problem.explain() }),
        None => match recorded {
            Some(seen) => {
                json!({ "ready": false, "problem": seen["problem"], "explain": seen["explain"], "at": seen["at"] })
            }
            None => json!({ "ready": true }),
        },
    };
    let discord_gateway = discord_gateway(env, config.discord_gateway).await;
    let mut report = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "setup": { "model": model, "unconnected_platforms": crate::status::setup::unconnected_platforms(&config) },
        "bindings": bindings,
        // `D1_SHARDS`'s databases, and those the Worker is not bound to (their conversations' writes wait).
        "d1_shards": { "count": config.d1_shards, "missing": crate::runtime::d1::missing_shards(env) },
        "migrations": migrations,
        "platforms": platforms(&config),
        "models": models(&config),
        "last_cron": event(CRON_TICK),
        "last_dead_letter": event(DEAD_LETTER),
        "pending_sends": pending,
        "running_workers": running,
        "discord_gateway": discord_gateway,
    });
    config::redactor().redact_json(&mut report);
    Ok(report)
}

/// Every Gateway shard's state (null when the Gateway is off; an error as text).
async fn discord_gateway(env: &Env, on: bool) -> Value {
    use crate::platforms::discord::{gateway_route::GatewayRoute, gateway_stub};
    if !on {
        return Value::Null;
    }
    match gateway_stub::call(env, GatewayRoute::Status).await {
        Ok(mut answer) => answer.json::<Value>().await.unwrap_or(Value::Null),
        Err(error) => json!({ "error": error.to_string() }),
    }
}

/// Rows as JSON values (one deserializer serves every read here, and the inbox's).
async fn rows(db: &D1Database, sql: &str) -> Option<Vec<Value>> {
    db.prepare(sql).all_counted().await.ok()?.results().ok()
}

/// The pieces waiting in outboxes and the conversations holding them, summed over the shards.
async fn pending_sends(env: &Env) -> Option<Value> {
    let sql =
        "SELECT COALESCE(SUM(pending), 0) AS pieces, COUNT(*) AS conversations FROM pending_sends WHERE pending > 0";
    let counts = crate::runtime::d1::on_every_shard(env, |shard| async move { first(&shard, sql).await }).await.ok()?;
    let (mut pieces, mut conversations) = (0, 0);
    for count in counts {
        let count = count?;
        pieces += count["pieces"].as_i64().unwrap_or(0);
        conversations += count["conversations"].as_i64().unwrap_or(0);
    }
    Some(serde_json::json!({ "pieces": pieces, "conversations": conversations }))
}

async fn first(db: &D1Database, sql: &str) -> Option<Value> {
    rows(db, sql).await?.into_iter().next()
}
