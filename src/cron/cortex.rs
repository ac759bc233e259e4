//! The cortex, run by each cron tick ([`crate::cron`]): memory maintenance (decay, prune,
//! merge) once a day, and the memory bulletin, rebuilt only when the store's
//! version moved since the last one (no model spend while nothing changes).
//! The bulletin reaches every conversation's prompt, so it is built from
//! shared memories only: one bulletin, one model call per change of what is
//! shared, instead of one per conversation.
//! Each routine has a circuit breaker: three failures in a row pause it for
//! its interval.

use std::collections::BTreeMap;

use serde_json::json;
use wasm_bindgen::JsValue;
use worker::{D1Database, Env, Result};

use crate::budget::usage;
use crate::config::Config;
use crate::llm::client::HttpModel;
use crate::llm::ChatModel;
use crate::llm::{ChatMessage, ChatRequest, Role};
use crate::log_line::LogLine;
use crate::memory::bulletin::{cap_words, needs_rebuild, sections, BULLETIN_MAX_WORDS};
use crate::memory::circuit::RoutineHealth;
use crate::memory::maintenance::{plan_maintenance, MaintenancePlan, DAY_MS};
use crate::memory::recall::COLUMNS;
use crate::memory::scope::SHARED;
use crate::memory::store::forget;
use crate::memory::store::SCOPE_SYNC_PER_CALL;
use crate::memory::store::{bump_version, read_meta};
use crate::memory::types::Memory;
use crate::memory::vector_index::vector_index;
use crate::memory::vector_index::VectorIndex;
use crate::prompt;
use crate::runtime::config::DATABASE_BINDING;
use crate::runtime::d1::Metered;
use crate::runtime::http::now_ms;
use crate::runtime::log::Emit;

/// The bulletin is checked on every cron tick (wrangler.toml: every 15 minutes).
const BULLETIN_INTERVAL_MS: i64 = 15 * 60 * 1000;
const MAINTENANCE_INTERVAL_MS: i64 = DAY_MS;
/// Memories a bulletin is drawn from: the newest and the most important.
const BULLETIN_SOURCE_LIMIT: i64 = 200;
/// Memories compared for merging per run (the most recently changed): merging
/// compares every pair, so the set is bounded.
const MERGE_CANDIDATES: usize = 500;
/// Memories stored before sketches existed that get theirs per tick.
const SKETCH_BACKFILL_PER_TICK: usize = 500;
/// Usage of the cortex is recorded under this conversation key.
const CORTEX_USAGE_KEY: &str = "cortex";

/// One cortex run: sketches and scopes caught up, maintenance when due, the bulletin when the store moved.
pub async fn run(config: &Config, env: &Env) -> Result<()> {
    let db = env.d1(DATABASE_BINDING)?;
    // Search scores rows without a sketch exactly, so this only restores speed.
    if let Err(error) = vector_index(config, env, &db)?.backfill_sketches(SKETCH_BACKFILL_PER_TICK).await {
        LogLine::error("sketch_backfill_failed").reason(&error).emit();
    }
    // Searches filter on the row's scope too, so this only restores recall.
    if let Err(error) = vector_index(config, env, &db)?.sync_scopes(&db, SCOPE_SYNC_PER_CALL).await {
        LogLine::error("vector_scope_sync_failed").reason(&error).emit();
    }
    let meta = read_meta(&db).await?;
    let now = now_ms();
    let last_maintenance: Option<i64> = meta.get("maintenance_at").and_then(|value| value.parse().ok());
    let meta = if last_maintenance.is_none_or(|at| now - at >= MAINTENANCE_INTERVAL_MS) {
        routine(&db, &meta, "maintenance", now, MAINTENANCE_INTERVAL_MS, maintain(config, env, &db, &meta, now))
            .await?;
        // Maintenance may have moved the version: read it again.
        read_meta(&db).await?
    } else {
        meta
    };
    routine(&db, &meta, "bulletin", now, BULLETIN_INTERVAL_MS, rebuild_bulletin(config, env, &db, &meta)).await
}

/// Runs a routine unless its circuit is open, and records how it went.
async fn routine(
    db: &D1Database,
    meta: &BTreeMap<String, String>,
    name: &str,
    now: i64,
    interval_ms: i64,
    work: impl std::future::Future<Output = Result<()>>,
) -> Result<()> {
    let key = format!("{name}_health");
    let mut health: RoutineHealth =
        meta.get(&key).and_then(|value| serde_json::from_str(value).ok()).unwrap_or_default();
    if !health.should_run(now) {
        return Ok(());
    }
    let before = health;
    match work.await {
        Ok(()) => health.record_success(),
        Err(error) => {
            LogLine::error("cortex_routine_failed").field("routine", name).reason(&error).emit();
            health.record_failure(now, interval_ms);
        }
    }
    if health != before {
        write_meta(db, &[(&key, serde_json::to_string(&health)?)]).await?;
    }
    Ok(())
}

async fn write_meta(db: &D1Database, entries: &[(&str, String)]) -> Result<()> {
    crate::runtime::d1::batch(db, meta_statements(db, entries)?).await?;
    Ok(())
}

fn meta_statements(db: &D1Database, entries: &[(&str, String)]) -> Result<Vec<worker::D1PreparedStatement>> {
    entries
        .iter()
        .map(|(key, value)| {
            db.prepare(
                "INSERT INTO memory_meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )
            .bind(&[(*key).into(), value.as_str().into()])
        })
        .collect()
}

/// Decay, prune and merge, written in one batch.
async fn maintain(
    config: &Config,
    env: &Env,
    db: &D1Database,
    meta: &BTreeMap<String, String>,
    now: i64,
) -> Result<()> {
    let memories: Vec<Memory> = db
        .prepare(format!("SELECT {COLUMNS} FROM memories ORDER BY updated_at DESC"))
        .all_counted()
        .await?
        .results()?;
    let index = vector_index(config, env, db)?;
    let candidates: Vec<String> = memories.iter().take(MERGE_CANDIDATES).map(|memory| memory.id.clone()).collect();
    let mut vectors: BTreeMap<String, Vec<f32>> = crate::sorting::map_from(index.vectors(&candidates).await?);
    // Memories outside the merge set get no vector: decay and prune still apply.
    let paired: Vec<(Memory, Vec<f32>)> = memories
        .into_iter()
        .map(|memory| {
            let vector = vectors.remove(&memory.id).unwrap_or_default();
            (memory, vector)
        })
        .collect();
    let decayed_through = meta.get("decayed_through").and_then(|value| value.parse().ok());
    let plan = plan_maintenance(&paired, now, decayed_through);
    apply(db, &plan, now).await?;
    let removed: Vec<String> =
        plan.prunes.iter().cloned().chain(plan.merges.iter().map(|merge| merge.absorb.clone())).collect();
    if !removed.is_empty() {
        index.delete(&removed).await?;
    }
    write_meta(db, &[("decayed_through", plan.decayed_through_ms.to_string()), ("maintenance_at", now.to_string())])
        .await
}

/// Writes the plan and its decay watermark in one batch (one transaction), so
/// a repeated run never decays twice.
async fn apply(db: &D1Database, plan: &MaintenancePlan, now: i64) -> Result<()> {
    let mut statements = meta_statements(
        db,
        &[("decayed_through", plan.decayed_through_ms.to_string()), ("maintenance_at", now.to_string())],
    )?;
    for update in &plan.importance_updates {
        statements.push(
            db.prepare("UPDATE memories SET importance = ?1 WHERE id = ?2")
                .bind(&[update.importance.into(), update.id.as_str().into()])?,
        );
    }
    for id in &plan.prunes {
        statements.extend(forget(db, id, None)?);
    }
    for merge in &plan.merges {
        // The keeper takes over the absorbed memory's edges (duplicates are dropped).
        for column in ["source_id", "target_id"] {
            statements.push(
                db.prepare(format!("UPDATE OR IGNORE associations SET {column} = ?1 WHERE {column} = ?2"))
                    .bind(&[merge.keep.as_str().into(), merge.absorb.as_str().into()])?,
            );
        }
        statements.extend(forget(db, &merge.absorb, None)?);
    }
    for keeper in &plan.merged {
        statements.push(
            db.prepare(
                "UPDATE memories SET importance = ?1, access_count = ?2, updated_at = ?3, last_accessed_at = ?4 \
                 WHERE id = ?5",
            )
            .bind(&[
                keeper.importance.into(),
                JsValue::from_f64(keeper.access_count as f64),
                JsValue::from_f64(keeper.updated_at as f64),
                JsValue::from_f64(keeper.last_accessed_at as f64),
                keeper.id.as_str().into(),
            ])?,
        );
    }
    // Decay alone does not move the version: only removed or merged content
    // makes the bulletin stale.
    if !plan.prunes.is_empty() || !plan.merges.is_empty() {
        statements.push(bump_version(db)?);
    }
    crate::runtime::d1::batch(db, statements).await?;
    Ok(())
}

/// Rebuilds the bulletin when the store moved since the last one, from shared
/// memories only (a conversation's private memories, identities included,
/// never reach another conversation's prompt through it).
async fn rebuild_bulletin(config: &Config, env: &Env, db: &D1Database, meta: &BTreeMap<String, String>) -> Result<()> {
    let version: u64 = meta.get("version").and_then(|value| value.parse().ok()).unwrap_or(0);
    let built_from = meta.get("bulletin_version").and_then(|value| value.parse().ok());
    if !needs_rebuild(version, built_from) {
        return Ok(());
    }
    let limit = JsValue::from_f64(BULLETIN_SOURCE_LIMIT as f64);
    let results = crate::runtime::d1::batch(
        db,
        vec![
            db.prepare(format!("SELECT {COLUMNS} FROM memories WHERE scope = ?2 ORDER BY created_at DESC LIMIT ?1"))
                .bind(&[limit.clone(), SHARED.into()])?,
            db.prepare(format!("SELECT {COLUMNS} FROM memories WHERE scope = ?2 ORDER BY importance DESC LIMIT ?1"))
                .bind(&[limit, SHARED.into()])?,
        ],
    )
    .await?;
    let mut memories: Vec<Memory> = Vec::new();
    for result in results {
        for memory in result.results::<Memory>()? {
            if memories.iter().all(|known| known.id != memory.id) {
                memories.push(memory);
            }
        }
    }
    let sections = sections(&memories, now_ms());
    let bulletin = if sections.is_empty() {
        String::new() // nothing remembered: no model call
    } else {
        let system = prompt::render(
            "cortex_bulletin",
            json!({ "bot_name": config.bot_name, "max_words": BULLETIN_MAX_WORDS, "sections": sections }),
        )
        .map_err(|error| error.to_string())?;
        let model = HttpModel::new(config, env, &config.cortex_model).map_err(|error| error.to_string())?;
        let request = ChatRequest {
            model: model.model_name().to_string(),
            messages: vec![ChatMessage::new(Role::System, system), ChatMessage::new(Role::User, "Write the bulletin.")],
            tools: Vec::new(),
        };
        let completion = model.complete(&request).await.map_err(|error| error.to_string())?;
        usage::record(env, &usage::Spender::conversation(CORTEX_USAGE_KEY), "cortex", model.spent(), now_ms()).await?;
        cap_words(completion.content.as_deref().unwrap_or_default().trim(), BULLETIN_MAX_WORDS)
    };
    let built_at = now_ms().to_string();
    write_meta(
        db,
        &[("bulletin", bulletin), ("bulletin_version", version.to_string()), ("bulletin_built_at", built_at)],
    )
    .await
}
