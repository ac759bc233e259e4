//! `GET /api/status`, gathered: the bindings present, the D1 migrations
//! applied, each platform's configuration state, the last cron tick and dead
//! letter, and the counts of unsent pieces and running workers. Also the
//! writes that leave those records where they happen.

use serde_json::{json, Value};
use wasm_bindgen::JsValue;
use worker::{D1Database, Env, Result};

use super::config::{self, DATABASE_BINDING};
use super::d1::number;
use super::http::now_ms;
use crate::edge::d1::Metered;
use crate::status::{models, platforms, BINDINGS};

/// `status_events` key of the last cron tick.
pub const CRON_TICK: &str = "cron_tick";
/// `status_events` key of the last dead letter.
pub const DEAD_LETTER: &str = "dead_letter";

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
    let statement = match unsent {
        0 => db.prepare("DELETE FROM pending_sends WHERE conversation_key = ?1").bind(&[conversation_key.into()])?,
        _ => db
            .prepare(
                "INSERT INTO pending_sends (conversation_key, pending, updated_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (conversation_key) DO UPDATE SET pending = excluded.pending, updated_at = excluded.updated_at",
            )
            .bind(&[conversation_key.into(), number(unsent), number(now_ms())])?,
    };
    statement.run_counted().await?;
    Ok(())
}

/// The whole status document. Each D1 read stands alone: a missing table
/// (a migration not applied) shows as null, not as a failed request.
pub async fn report(env: &Env) -> Result<Value> {
    let config = config::load(env);
    let mut bindings = serde_json::Map::new();
    for name in BINDINGS {
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
    let pending = first(
        &db,
        "SELECT COALESCE(SUM(pending), 0) AS pieces, COUNT(*) AS conversations FROM pending_sends WHERE pending > 0",
    )
    .await;
    let running = first(
        &db,
        "SELECT COUNT(*) AS running FROM workers WHERE state IN ('running', 'waiting_for_input') AND cancelled = 0",
    )
    .await
    .map(|row| row["running"].clone());
    let mut report = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "bindings": bindings,
        "migrations": migrations,
        "platforms": platforms(&config),
        "models": models(&config),
        "last_cron": event(CRON_TICK),
        "last_dead_letter": event(DEAD_LETTER),
        "pending_sends": pending,
        "running_workers": running,
    });
    config::redactor().redact_json(&mut report);
    Ok(report)
}

/// Rows as JSON values (one deserializer serves every read here, and the inbox's).
async fn rows(db: &D1Database, sql: &str) -> Option<Vec<Value>> {
    db.prepare(sql).all_counted().await.ok()?.results().ok()
}

async fn first(db: &D1Database, sql: &str) -> Option<Value> {
    rows(db, sql).await?.into_iter().next()
}
