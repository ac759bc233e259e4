//! D1 calls that count what they cost, and small helpers for binding values to
//! D1 statements and reading what a write changed.
//!
//! Every D1 call goes through [`Metered`]: clippy.toml disallows the uncounted
//! `all`, `run`, `first` and `batch`, so `/api/ops` sees each query.

use serde::de::DeserializeOwned;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, D1Result, Env, Result};

use crate::ops::{self, Op};
use crate::shards;

/// A whole number as D1 binds it (a JS number; D1 has no integer type to bind).
pub fn number(value: i64) -> JsValue {
    JsValue::from_f64(value as f64)
}

/// Text, or SQL NULL.
pub fn text_or_null(value: Option<&str>) -> JsValue {
    value.map_or(JsValue::NULL, JsValue::from)
}

/// Rows a write changed (0 when D1 did not say).
pub fn changes(result: &D1Result) -> usize {
    result.meta().ok().flatten().and_then(|meta| meta.changes).unwrap_or(0)
}

/// Whether a statement goes to a conversation's shard ([`shards::is_shard_statement`]).
fn on_shard(statement: &D1PreparedStatement) -> bool {
    let text = js_sys::Reflect::get(statement.inner(), &JsValue::from_str("statement")).ok();
    text.and_then(|text| text.as_string()).is_some_and(|sql| shards::is_shard_statement(&sql))
}

/// Counts one statement's query and the rows D1 says it read and wrote.
fn tally(result: &D1Result, on_shard: bool) {
    ops::count(Op::D1Query);
    if on_shard {
        ops::count(Op::D1ShardQuery);
    }
    if let Ok(Some(meta)) = result.meta() {
        ops::add(Op::D1RowRead, meta.rows_read.unwrap_or(0) as u64);
        ops::add(Op::D1RowWritten, meta.rows_written.unwrap_or(0) as u64);
    }
}

/// A statement run through here is counted in [`crate::ops`].
#[allow(async_fn_in_trait)] // the Worker is single-threaded: no Send bound wanted
pub trait Metered {
    /// `all()`, counted.
    async fn all_counted(&self) -> Result<D1Result>;
    /// `run()`, counted.
    async fn run_counted(&self) -> Result<D1Result>;
    /// The first row (as `first(None)`), counted.
    async fn first_counted<T: DeserializeOwned>(&self) -> Result<Option<T>>;
}

#[allow(clippy::disallowed_methods)] // the one place the uncounted calls are made
impl Metered for D1PreparedStatement {
    async fn all_counted(&self) -> Result<D1Result> {
        let result = self.all().await?;
        ops::count(Op::D1Call);
        tally(&result, on_shard(self));
        Ok(result)
    }

    async fn run_counted(&self) -> Result<D1Result> {
        let result = self.run().await?;
        ops::count(Op::D1Call);
        tally(&result, on_shard(self));
        Ok(result)
    }

    async fn first_counted<T: DeserializeOwned>(&self) -> Result<Option<T>> {
        // `first` returns no meta; `all` does, and every caller asks by key.
        Ok(self.all_counted().await?.results::<T>()?.into_iter().next())
    }
}

/// `batch()`, counted: one query per statement, one call in all.
#[allow(clippy::disallowed_methods)]
pub async fn batch(db: &D1Database, statements: Vec<D1PreparedStatement>) -> Result<Vec<D1Result>> {
    let on_shards: Vec<bool> = statements.iter().map(on_shard).collect();
    let results = db.batch(statements).await?;
    tally_batch(&results, on_shards);
    Ok(results)
}

/// A batch of reads that may be slightly stale (a turn's agent, limits,
/// people and spend): through the Sessions API with `first-unconstrained`,
/// so a read replica near the caller may answer and the primary is spared
/// (docs/scale.md, "D1 shards"). Counted as [`batch`] is.
pub async fn read_batch(db: &D1Database, statements: Vec<D1PreparedStatement>) -> Result<Vec<D1Result>> {
    let on_shards: Vec<bool> = statements.iter().map(on_shard).collect();
    let results = replica(db)?.batch(statements).await?;
    tally_batch(&results, on_shards);
    Ok(results)
}

/// A session of `db` any replica may serve (`first-unconstrained`).
pub fn replica(db: &D1Database) -> Result<worker::D1DatabaseSession> {
    db.with_session(Some("first-unconstrained"))
}

fn tally_batch(results: &[D1Result], on_shards: Vec<bool>) {
    ops::count(Op::D1Call);
    for (result, on_shard) in results.iter().zip(on_shards.into_iter().chain(std::iter::repeat(false))) {
        tally(result, on_shard);
    }
}

/// The D1 shard that holds `conversation_key`'s rows ([`crate::shards`]): the
/// shared database unless `D1_SHARDS` is over 1.
pub fn shard_of(env: &Env, conversation_key: &str) -> Result<D1Database> {
    let shards = super::config::load(env).d1_shards;
    env.d1(&shards::binding_of(shards::shard_of(conversation_key, shards), shards))
}

/// Every shard, in shard order (a read across conversations asks each).
pub fn every_shard(env: &Env) -> Result<Vec<D1Database>> {
    shards::bindings(super::config::load(env).d1_shards).iter().map(|binding| env.d1(binding)).collect()
}

/// Asks every shard at once (a read across conversations): `read` runs on
/// each, and each answer comes back in shard order, for the caller to merge.
pub async fn on_every_shard<T, Answer>(env: &Env, read: impl Fn(D1Database) -> Answer) -> Result<Vec<T>>
where
    Answer: std::future::Future<Output = T>,
{
    Ok(futures_util::future::join_all(every_shard(env)?.into_iter().map(read)).await)
}

/// The rows of every shard that answered; each that did not is logged as
/// `event` and left out, so one shard that is down hides only its own rows.
pub fn answered<T>(answers: Vec<Result<Vec<T>>>, event: &'static str) -> Vec<T> {
    use super::log::Emit;
    let mut found = Vec::new();
    for answer in answers {
        match answer {
            Ok(rows) => found.extend(rows),
            Err(error) => crate::log_line::LogLine::warn(event).reason(&error).emit(),
        }
    }
    found
}

/// Whether conversations' rows live in the shared database (one shard), so a
/// write may go in one batch with the shared database's.
pub fn unsharded(env: &Env) -> bool {
    super::config::load(env).d1_shards <= 1
}

/// The shard bindings `D1_SHARDS` names that the Worker does not have.
pub fn missing_shards(env: &Env) -> Vec<String> {
    shards::bindings(super::config::load(env).d1_shards)
        .into_iter()
        .filter(|binding| env.d1(binding).is_err())
        .collect()
}
