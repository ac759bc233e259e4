//! Token usage of every process (channel, branch, worker, compactor,
//! cortex): summed per conversation and process type, and rolled up per UTC
//! day per person, per conversation, per workspace, per agent and for the
//! deployment (the budgets read
//! those, src/budget/store.rs), the wide scopes' rows in buckets by
//! conversation (`rules::bucket_of`). A process writes one batch per
//! model-calling step; a channel turn's spend waits in its object and goes
//! with the alarm's one commit ([`unsent_statement`]).

use std::collections::BTreeMap;

use serde::Deserialize;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Result};

use crate::budget::rules::{day_of, rollups, Person, Spend};
use crate::llm::Usage;
use crate::runtime::d1::Metered;

/// The channel's process name.
pub const CHANNEL: &str = "channel";

/// Who a step's spend is charged to: its conversation, the deployment, and
/// the person whose message started it when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spender {
    pub conversation_key: String,
    pub person: Option<Person>,
}

impl Spender {
    /// The author of `event` (the message a turn answers, or that started a process).
    pub fn of(event: &crate::inbound::InboundEvent) -> Spender {
        Spender {
            conversation_key: event.conversation_key.clone(),
            person: Person::of(&event.conversation_key, &event.author),
        }
    }

    /// A step no person asked for (compaction, the cortex).
    pub fn conversation(conversation_key: &str) -> Spender {
        Spender { conversation_key: conversation_key.to_string(), person: None }
    }
}

/// The statements that add one step's spend (batch them with the step's own
/// writes): the per-process sum and the day's rollups.
pub fn add(
    db: &D1Database,
    spender: &Spender,
    process: &str,
    spend: Spend,
    now_ms: i64,
) -> Result<Vec<D1PreparedStatement>> {
    // The channel object keeps its own turns' sum (its usage slot); the
    // admin view reads it there.
    let mut statements = Vec::new();
    if process != CHANNEL {
        statements.push(add_to_process(db, &spender.conversation_key, process, spend.usage())?);
    }
    if spend == Spend::default() {
        return Ok(statements);
    }
    let day = day_of(now_ms);
    for rollup in rollups(&spender.conversation_key, spender.person.as_ref()) {
        statements.push(
            db.prepare(
                "INSERT INTO spend_daily (day, scope, subject, bucket, name, input_tokens, output_tokens, micro_usd, calls) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 1) ON CONFLICT (day, scope, subject, bucket) DO UPDATE SET \
                 name = excluded.name, input_tokens = input_tokens + excluded.input_tokens, \
                 output_tokens = output_tokens + excluded.output_tokens, \
                 micro_usd = micro_usd + excluded.micro_usd, calls = calls + 1",
            )
            .bind(&[
                day.as_str().into(),
                rollup.scope.name().into(),
                rollup.subject.as_str().into(),
                JsValue::from_f64(rollup.bucket.into()),
                rollup.name.as_str().into(),
                JsValue::from_f64(spend.input_tokens as f64),
                JsValue::from_f64(spend.output_tokens as f64),
                JsValue::from_f64(spend.micro_usd as f64),
            ])?,
        );
    }
    Ok(statements)
}

/// A step's spend statements beside a batch of its own writes on the shared
/// database: added to that batch when the conversation's shard is the shared
/// database (one transaction), else returned with their shard for
/// [`send_apart`], after the batch (a spend lost to a failed shard is logged;
/// counting a retried step's spend twice would be worse).
pub fn add_beside(
    env: &worker::Env,
    batch: &mut Vec<D1PreparedStatement>,
    spender: &Spender,
    process: &str,
    spend: Spend,
    now_ms: i64,
) -> Result<Option<(D1Database, Vec<D1PreparedStatement>)>> {
    let shard = crate::runtime::d1::shard_of(env, &spender.conversation_key)?;
    let statements = add(&shard, spender, process, spend, now_ms)?;
    if crate::runtime::d1::unsharded(env) {
        batch.extend(statements);
        return Ok(None);
    }
    Ok(Some((shard, statements)).filter(|(_, statements)| !statements.is_empty()))
}

/// Sends what [`add_beside`] left apart (logged when it fails).
pub async fn send_apart(apart: Option<(D1Database, Vec<D1PreparedStatement>)>, conversation_key: &str) {
    let Some((shard, statements)) = apart else { return };
    if let Err(error) = crate::runtime::d1::batch(&shard, statements).await {
        use crate::runtime::log::Emit;
        crate::log_line::LogLine::warn("usage_not_recorded").conversation(conversation_key).reason(&error).emit();
    }
}

/// Records one step's spend on its own (one batch, on the conversation's shard).
pub async fn record(env: &worker::Env, spender: &Spender, process: &str, spend: Spend, now_ms: i64) -> Result<()> {
    let db = crate::runtime::d1::shard_of(env, &spender.conversation_key)?;
    let statements = add(&db, spender, process, spend, now_ms)?;
    if !statements.is_empty() {
        crate::runtime::d1::batch(&db, statements).await?;
    }
    Ok(())
}

/// The statement that adds the spend a channel object held (its
/// [`crate::budget::rules::unsent_rows`], a JSON array) to the day's
/// rollups, once: only the rows whose sequence number is above the
/// conversation index row's `flush_seq`. The commit's batch sets that mark
/// after this statement (one transaction), so a commit sent again after a
/// crash adds nothing twice (migration 0033).
pub fn unsent_statement(db: &D1Database, conversation_key: &str, rows: &str) -> Result<D1PreparedStatement> {
    db.prepare(
        "INSERT INTO spend_daily (day, scope, subject, bucket, name, input_tokens, output_tokens, micro_usd, calls) \
         SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), \
         json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'), \
         json_extract(value, '$[6]'), json_extract(value, '$[7]'), 1 FROM json_each(?1) \
         WHERE json_extract(value, '$[8]') > \
         coalesce((SELECT flush_seq FROM conversations WHERE conversation_key = ?2), 0) \
         ON CONFLICT (day, scope, subject, bucket) DO UPDATE SET \
         name = excluded.name, input_tokens = input_tokens + excluded.input_tokens, \
         output_tokens = output_tokens + excluded.output_tokens, \
         micro_usd = micro_usd + excluded.micro_usd, calls = calls + 1",
    )
    .bind(&[rows.into(), conversation_key.into()])
}

/// The statement that adds usage to the conversation's per-process sum.
fn add_to_process(db: &D1Database, conversation_key: &str, process: &str, usage: Usage) -> Result<D1PreparedStatement> {
    db.prepare(
        "INSERT INTO usage (conversation_key, process, input_tokens, output_tokens, calls) VALUES (?1, ?2, ?3, ?4, 1) \
         ON CONFLICT (conversation_key, process) DO UPDATE SET \
         input_tokens = input_tokens + excluded.input_tokens, \
         output_tokens = output_tokens + excluded.output_tokens, calls = calls + 1",
    )
    .bind(&[
        conversation_key.into(),
        process.into(),
        JsValue::from_f64(usage.input_tokens as f64),
        JsValue::from_f64(usage.output_tokens as f64),
    ])
}

/// The conversation's usage by process type.
pub async fn by_process(db: &D1Database, conversation_key: &str) -> Result<BTreeMap<String, Usage>> {
    #[derive(Deserialize)]
    struct Row {
        process: String,
        input_tokens: u64,
        output_tokens: u64,
    }
    let rows: Vec<Row> = db
        .prepare("SELECT process, input_tokens, output_tokens FROM usage WHERE conversation_key = ?1")
        .bind(&[conversation_key.into()])?
        .all_counted()
        .await?
        .results()?;
    Ok(crate::sorting::map_from(
        rows.into_iter()
            .map(|row| (row.process, Usage { input_tokens: row.input_tokens, output_tokens: row.output_tokens })),
    ))
}
