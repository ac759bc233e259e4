//! Moves conversations' rows to the shard their key names now (docs/scale.md,
//! "D1 shards"): after `D1_SHARDS` goes from 1 to N, every conversation's
//! history, summaries, index row, process sums, unsent count and spend move
//! out of the shared database; after N doubles, the rows of the buckets that
//! now belong to a new shard move there. Each minute's cron moves up to
//! ten pages of [`KEYS_PER_PAGE`] conversations, and remembers
//! where a source's scan stands and which sources hold nothing stray.
//!
//! A move copies, then deletes: rows that are keyed (messages, summaries, the
//! index row, the unsent count) merge so that a second copy changes nothing;
//! rows that are sums (`usage`, `spend_daily`) are added once, guarded by a
//! `moved_rows` mark written in the same batch (migration 0034). A move that
//! failed half way is simply made again; a mark is kept a day after its copy
//! ([`MARKS_KEPT_MS`], migration 0035), far longer than a move retries. The
//! shared database's spend of the wide scopes (deployment, agents, workspaces,
//! people) goes to shard 0: the budget sums every shard.

use serde_json::Value;
use worker::{D1Database, D1PreparedStatement, Env, Result};

use super::scan;
use crate::runtime::d1::{batch, number, on_every_shard, Metered};
use crate::shards::{binding_of, shard_of, SHARED};

/// Conversations a page moves at most.
const KEYS_PER_PAGE: usize = 50;
/// How long a `moved_rows` mark is kept after its copy: a move retries (each
/// minute) only until it has deleted its source, so a day is ample.
const MARKS_KEPT_MS: i64 = 24 * 60 * 60 * 1000;
/// Marks one run deletes at most on each shard.
const MARKS_PRUNED_PER_RUN: i64 = 1000;
/// The tables whose rows are a conversation's (keyed by `conversation_key`).
const KEYED: [&str; 5] = ["messages", "summaries", "conversations", "usage", "pending_sends"];

/// Moves what the next pages hold on the wrong database; returns how many
/// conversations moved. Nothing to do (and one read) once every source is settled.
pub async fn run(env: &Env) -> Result<usize> {
    let moved = scan::run(env, &Conversations).await?;
    prune_marks(env).await?;
    Ok(moved)
}

/// The conversations' rows, as the shared scan moves them.
struct Conversations;

impl scan::Mover for Conversations {
    const NAME: &'static str = "reshard";
    const PAGE: usize = KEYS_PER_PAGE;

    /// The next conversations (after `cursor`, in order) with rows on
    /// `source`: each table's next page in one batch (D1 allows a compound
    /// SELECT of 5 terms at most), merged.
    async fn page(&self, source: &D1Database, cursor: &str) -> Result<Vec<String>> {
        let limit = wasm_bindgen::JsValue::from_f64(KEYS_PER_PAGE as f64);
        let mut reads: Vec<D1PreparedStatement> = KEYED
            .iter()
            .map(|table| {
                let sql = format!(
                    "SELECT DISTINCT conversation_key AS k FROM {table} WHERE conversation_key > ?1 ORDER BY k LIMIT ?2"
                );
                source.prepare(sql).bind(&[cursor.into(), limit.clone()])
            })
            .collect::<Result<_>>()?;
        let spend = "SELECT DISTINCT subject AS k FROM spend_daily WHERE scope = 'conversation' AND subject > ?1 \
                     ORDER BY k LIMIT ?2";
        reads.push(source.prepare(spend).bind(&[cursor.into(), limit])?);
        let mut keys = std::collections::BTreeSet::new();
        for result in batch(source, reads).await? {
            keys.extend(result.results::<Value>()?.iter().filter_map(|row| row["k"].as_str().map(str::to_string)));
        }
        Ok(keys.into_iter().take(KEYS_PER_PAGE).collect())
    }

    async fn move_stray(
        &self,
        env: &Env,
        source: &D1Database,
        here: Option<u32>,
        stray: &[&str],
        shards: u32,
    ) -> Result<usize> {
        let binding = here.map_or_else(|| SHARED.to_string(), |here| binding_of(here, shards));
        let moved = move_keys(env, source, &binding, stray, shards).await?;
        if here.is_none() {
            moved_wide_spend(env, source, shards).await?;
        }
        Ok(moved)
    }
}

/// Deletes the marks older than [`MARKS_KEPT_MS`] on every shard (the
/// databases moves copy to), [`MARKS_PRUNED_PER_RUN`] at most on each; through
/// the index on `marked_at`, a shard with none to delete reads nothing.
async fn prune_marks(env: &Env) -> Result<()> {
    let before = number(crate::runtime::http::now_ms() - MARKS_KEPT_MS);
    let sql = "DELETE FROM moved_rows WHERE (source, row_key) IN \
               (SELECT source, row_key FROM moved_rows WHERE marked_at < ?1 LIMIT ?2)";
    let pruned = on_every_shard(env, |shard| {
        let before = before.clone();
        async move { shard.prepare(sql).bind(&[before, number(MARKS_PRUNED_PER_RUN)])?.run_counted().await }
    })
    .await?;
    pruned.into_iter().try_for_each(|result| result.map(drop))
}

/// Copies `keys`' rows from `source` to each one's shard, then deletes them from `source`.
async fn move_keys(env: &Env, source: &D1Database, binding: &str, keys: &[&str], shards: u32) -> Result<usize> {
    let mut by_home: std::collections::BTreeMap<u32, Vec<&str>> = Default::default();
    for key in keys {
        by_home.entry(shard_of(key, shards)).or_default().push(key);
    }
    for (home, keys) in &by_home {
        let list = serde_json::to_string(keys)?;
        let mut reads: Vec<D1PreparedStatement> = KEYED
            .iter()
            .map(|table| {
                source
                    .prepare(format!(
                        "SELECT * FROM {table} WHERE conversation_key IN (SELECT value FROM json_each(?1))"
                    ))
                    .bind(&[list.as_str().into()])
            })
            .collect::<Result<_>>()?;
        reads.push(
            source
                .prepare(
                    "SELECT * FROM spend_daily WHERE scope = 'conversation' \
                     AND subject IN (SELECT value FROM json_each(?1))",
                )
                .bind(&[list.as_str().into()])?,
        );
        let results = batch(source, reads).await?;
        let rows: Vec<String> = results
            .iter()
            .map(|result| Ok(serde_json::to_string(&result.results::<Value>()?)?))
            .collect::<Result<_>>()?;
        let target = env.d1(&binding_of(*home, shards))?;
        let copies = copy_statements(&target, binding, &rows)?;
        batch(&target, copies).await?;
        let deletes: Vec<D1PreparedStatement> = KEYED
            .iter()
            .map(|table| format!("DELETE FROM {table} WHERE conversation_key IN (SELECT value FROM json_each(?1))"))
            .chain(["DELETE FROM spend_daily WHERE scope = 'conversation' \
                     AND subject IN (SELECT value FROM json_each(?1))"
                .to_string()])
            .map(|sql| source.prepare(sql).bind(&[list.as_str().into()]))
            .collect::<Result<_>>()?;
        batch(source, deletes).await?;
    }
    Ok(keys.len())
}

/// The statements that add the rows read from `source` (as JSON arrays, in
/// [`KEYED`] order, then the conversations' spend) to a shard.
fn copy_statements(target: &D1Database, source: &str, rows: &[String]) -> Result<Vec<D1PreparedStatement>> {
    let [messages, summaries, conversations, usage, pending, spend] = rows else {
        return Err(worker::Error::RustError(format!("{} row sets for 6 tables", rows.len())));
    };
    let bind = |sql: &str, rows: &str| target.prepare(sql).bind(&[rows.into(), source.into()]);
    let mut statements = vec![
        bind(MESSAGES, messages)?,
        bind(SUMMARIES, summaries)?,
        bind(CONVERSATIONS, conversations)?,
        bind(PENDING, pending)?,
    ];
    statements.extend([bind(&usage_sql(), usage)?, bind(&marks(USAGE_KEY), usage)?]);
    statements.extend([bind(&spend_sql(), spend)?, bind(&marks(SPEND_KEY), spend)?]);
    Ok(statements)
}

/// Moves the shared database's spend of the wide scopes and people to shard 0.
async fn moved_wide_spend(env: &Env, source: &D1Database, shards: u32) -> Result<()> {
    let rows = source
        .prepare("SELECT * FROM spend_daily WHERE scope != 'conversation' LIMIT 500")
        .all_counted()
        .await?
        .results::<Value>()?;
    if rows.is_empty() {
        return Ok(());
    }
    let rows = serde_json::to_string(&rows)?;
    let target = env.d1(&binding_of(0, shards))?;
    let bind = |sql: &str| target.prepare(sql).bind(&[rows.as_str().into(), SHARED.into()]);
    batch(&target, vec![bind(&spend_sql())?, bind(&marks(SPEND_KEY))?]).await?;
    let delete = "DELETE FROM spend_daily WHERE (day, scope, subject, bucket) IN \
                  (SELECT value ->> '$.day', value ->> '$.scope', value ->> '$.subject', value ->> '$.bucket' \
                  FROM json_each(?1))";
    source.prepare(delete).bind(&[rows.as_str().into()])?.run_counted().await?;
    Ok(())
}

const MESSAGES: &str = "INSERT INTO messages (id, conversation_key, role, author_id, author_name, content, \
     platform_message_id, created_at, compacted) SELECT value ->> '$.id', value ->> '$.conversation_key', \
     value ->> '$.role', value ->> '$.author_id', value ->> '$.author_name', value ->> '$.content', \
     value ->> '$.platform_message_id', value ->> '$.created_at', value ->> '$.compacted' FROM json_each(?1) \
     WHERE ?2 IS NOT NULL ON CONFLICT (conversation_key, created_at, id) DO UPDATE SET compacted = max(compacted, excluded.compacted)";
const SUMMARIES: &str = "INSERT OR IGNORE INTO summaries (id, conversation_key, content, covers, created_at) \
     SELECT value ->> '$.id', value ->> '$.conversation_key', value ->> '$.content', value ->> '$.covers', \
     value ->> '$.created_at' FROM json_each(?1) WHERE ?2 IS NOT NULL";
const CONVERSATIONS: &str = "INSERT INTO conversations (conversation_key, platform, title, last_activity_at, \
     message_count, engaged_count, observed_count, updated_at, awaiting_since, flush_seq) \
     SELECT value ->> '$.conversation_key', value ->> '$.platform', value ->> '$.title', \
     value ->> '$.last_activity_at', value ->> '$.message_count', value ->> '$.engaged_count', \
     value ->> '$.observed_count', value ->> '$.updated_at', value ->> '$.awaiting_since', \
     value ->> '$.flush_seq' FROM json_each(?1) WHERE ?2 IS NOT NULL \
     ON CONFLICT (conversation_key) DO UPDATE SET title = coalesce(title, excluded.title), \
     awaiting_since = CASE WHEN excluded.last_activity_at > last_activity_at THEN excluded.awaiting_since \
     ELSE awaiting_since END, last_activity_at = max(last_activity_at, excluded.last_activity_at), \
     message_count = max(message_count, excluded.message_count), \
     engaged_count = max(engaged_count, excluded.engaged_count), \
     observed_count = max(observed_count, excluded.observed_count), flush_seq = max(flush_seq, excluded.flush_seq)";
const PENDING: &str = "INSERT INTO pending_sends (conversation_key, pending, updated_at) \
     SELECT value ->> '$.conversation_key', value ->> '$.pending', value ->> '$.updated_at' FROM json_each(?1) \
     WHERE ?2 IS NOT NULL ON CONFLICT (conversation_key) DO UPDATE SET pending = excluded.pending, \
     updated_at = excluded.updated_at WHERE excluded.updated_at > updated_at";
/// A `usage` row's mark: which row it was.
const USAGE_KEY: &str = "'usage|' || (value ->> '$.conversation_key') || '|' || (value ->> '$.process')";
/// Adds moved `usage` rows not marked yet.
fn usage_sql() -> String {
    format!(
        "INSERT INTO usage (conversation_key, process, input_tokens, output_tokens, calls) \
         SELECT value ->> '$.conversation_key', value ->> '$.process', value ->> '$.input_tokens', \
         value ->> '$.output_tokens', value ->> '$.calls' FROM json_each(?1) {UNMARKED}{USAGE_KEY}) \
         ON CONFLICT (conversation_key, process) DO UPDATE SET input_tokens = input_tokens + excluded.input_tokens, \
         output_tokens = output_tokens + excluded.output_tokens, calls = calls + excluded.calls"
    )
}
/// A `spend_daily` row's mark.
const SPEND_KEY: &str = "'spend|' || (value ->> '$.day') || '|' || (value ->> '$.scope') || '|' || \
     (value ->> '$.subject') || '|' || (value ->> '$.bucket')";
/// Adds moved `spend_daily` rows not marked yet.
fn spend_sql() -> String {
    format!(
        "INSERT INTO spend_daily (day, scope, subject, bucket, name, input_tokens, output_tokens, micro_usd, calls) \
         SELECT value ->> '$.day', value ->> '$.scope', value ->> '$.subject', value ->> '$.bucket', \
         value ->> '$.name', value ->> '$.input_tokens', value ->> '$.output_tokens', value ->> '$.micro_usd', \
         value ->> '$.calls' FROM json_each(?1) {UNMARKED}{SPEND_KEY}) \
         ON CONFLICT (day, scope, subject, bucket) DO UPDATE SET name = excluded.name, \
         input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens, \
         micro_usd = micro_usd + excluded.micro_usd, calls = calls + excluded.calls"
    )
}

/// The guard of a sum's copy: the row is not marked moved from `?2` yet (the mark's key follows).
const UNMARKED: &str = "WHERE NOT EXISTS (SELECT 1 FROM moved_rows WHERE source = ?2 AND row_key = ";

/// The statement that marks each row of `?1` moved from `?2` (after the rows
/// were added), now: a copy made again (after a failure) renews the mark.
fn marks(key: &str) -> String {
    format!(
        "INSERT INTO moved_rows (source, row_key, marked_at) SELECT ?2, {key}, {NOW_MS} FROM json_each(?1) \
         WHERE true ON CONFLICT (source, row_key) DO UPDATE SET marked_at = excluded.marked_at"
    )
}

/// The time in ms, as SQL (a copy's statements bind only its rows and source).
const NOW_MS: &str = "CAST(strftime('%s', 'now') AS INTEGER) * 1000";
