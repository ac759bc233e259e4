//! The dashboard's index of conversations in D1: one row per conversation,
//! written by its channel object (debounced), read by the admin API.

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Result};

use crate::runtime::d1::Metered;
use crate::runtime::d1::{answered, number, on_every_shard, text_or_null};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conversation {
    pub conversation_key: String,
    pub platform: String,
    pub title: Option<String>,
    pub last_activity_at: i64,
    pub message_count: i64,
    pub engaged_count: i64,
    pub observed_count: i64,
    /// When its oldest acknowledged inbound still without an outcome arrived (None: none waits).
    #[serde(default)]
    pub awaiting_since: Option<i64>,
}

/// Writes the conversation's current counts. Counts only grow, so a late
/// write never takes the index backwards.
pub async fn upsert(db: &D1Database, row: &Conversation, now_ms: i64) -> Result<()> {
    upsert_statement(db, row, now_ms, None)?.run_counted().await?;
    Ok(())
}

/// The statement that writes the conversation's index row, for a batch (the
/// channel object's commit, the observed path's writes). `flush_seq`, given
/// by a channel object's commit only, raises the row's commit mark
/// (migration 0033; src/budget/usage.rs `unsent_statement`): it never goes
/// down, and None leaves it as it is.
pub fn upsert_statement(
    db: &D1Database,
    row: &Conversation,
    now_ms: i64,
    flush_seq: Option<i64>,
) -> Result<D1PreparedStatement> {
    db.prepare(
        "INSERT INTO conversations (conversation_key, platform, title, last_activity_at, message_count, \
         engaged_count, observed_count, updated_at, awaiting_since, flush_seq) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, coalesce(?10, 0)) \
         ON CONFLICT (conversation_key) DO UPDATE SET title = coalesce(excluded.title, title), \
         awaiting_since = excluded.awaiting_since, \
         last_activity_at = max(last_activity_at, excluded.last_activity_at), \
         message_count = max(message_count, excluded.message_count), \
         engaged_count = max(engaged_count, excluded.engaged_count), \
         observed_count = max(observed_count, excluded.observed_count), updated_at = excluded.updated_at, \
         flush_seq = max(flush_seq, excluded.flush_seq)",
    )
    .bind(&[
        row.conversation_key.as_str().into(),
        row.platform.as_str().into(),
        text_or_null(row.title.as_deref()),
        number(row.last_activity_at),
        number(row.message_count),
        number(row.engaged_count),
        number(row.observed_count),
        number(now_ms),
        row.awaiting_since.map_or(JsValue::NULL, number),
        flush_seq.map_or(JsValue::NULL, number),
    ])
}

/// The most recently active conversations on every shard; `search` matches
/// the key or the title (a plain substring, `%` and `_` taken literally).
/// Each shard gives its newest `limit`, and the newest `limit` of those win
/// (a shard that cannot be read is logged and left out: the rest still list).
pub async fn list(env: &worker::Env, search: Option<&str>, limit: usize) -> Result<Vec<Conversation>> {
    let lists = on_every_shard(env, |shard| async move { list_one(&shard, search, limit).await }).await?;
    let mut found = answered(lists, "conversations_unread");
    found.sort_by_key(|row| std::cmp::Reverse(row.last_activity_at));
    found.truncate(limit);
    Ok(found)
}

async fn list_one(db: &D1Database, search: Option<&str>, limit: usize) -> Result<Vec<Conversation>> {
    let pattern = search.map(str::trim).filter(|text| !text.is_empty()).map(|text| {
        let escaped = text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
        format!("%{escaped}%")
    });
    let statement = db.prepare(
        "SELECT conversation_key, platform, title, last_activity_at, message_count, engaged_count, observed_count, \
         awaiting_since FROM conversations WHERE ?1 IS NULL OR conversation_key LIKE ?1 ESCAPE '\\' OR title LIKE ?1 ESCAPE '\\' \
         ORDER BY last_activity_at DESC LIMIT ?2",
    );
    statement.bind(&[text_or_null(pattern.as_deref()), number(limit as i64)])?.all_counted().await?.results()
}

/// Conversations holding an acknowledged inbound that arrived before
/// `before_ms` and has no outcome yet, on every shard (a shard that cannot
/// be read is logged and skipped: the others' are still woken), each shard's
/// longest waiting first (through the partial index `conversations_awaiting`).
pub async fn awaiting(env: &worker::Env, before_ms: i64, limit: usize) -> Result<Vec<String>> {
    let lists = on_every_shard(env, |shard| async move { awaiting_one(&shard, before_ms, limit).await }).await?;
    Ok(answered(lists, "awaiting_unread"))
}

async fn awaiting_one(db: &D1Database, before_ms: i64, limit: usize) -> Result<Vec<String>> {
    #[derive(Deserialize)]
    struct Row {
        conversation_key: String,
    }
    let rows: Vec<Row> = db
        .prepare(
            "SELECT conversation_key FROM conversations WHERE awaiting_since IS NOT NULL AND awaiting_since < ?1 \
             ORDER BY awaiting_since LIMIT ?2",
        )
        .bind(&[number(before_ms), number(limit as i64)])?
        .all_counted()
        .await?
        .results()?;
    Ok(rows.into_iter().map(|row| row.conversation_key).collect())
}

/// Writes a batch of index rows (the index queue's, see [`write_batch`]) in
/// ONE statement: the rows go in as one JSON array, unpacked by `json_each`.
/// A row older than the one stored (a replayed or late message) changes
/// nothing, so the index never moves back; columns not named here (such as
/// `flush_seq`) are left as they are. With the same activity and count, a
/// row only clears `awaiting_since`, never sets it again: only an inbound
/// (which moves both) makes a conversation wait, so a queued row sent before
/// the turn's commit cleared it is the older one, whatever order they land in.
const UPSERT_BATCH: &str = "INSERT INTO conversations (conversation_key, platform, title, last_activity_at, \
     message_count, engaged_count, observed_count, updated_at, awaiting_since) \
     SELECT value ->> '$.conversation_key', value ->> '$.platform', value ->> '$.title', \
     value ->> '$.last_activity_at', value ->> '$.message_count', value ->> '$.engaged_count', \
     value ->> '$.observed_count', ?2, value ->> '$.awaiting_since' FROM json_each(?1) WHERE true \
     ON CONFLICT (conversation_key) DO UPDATE SET title = coalesce(excluded.title, title), \
     awaiting_since = CASE WHEN awaiting_since IS NULL AND excluded.last_activity_at = last_activity_at \
     AND excluded.message_count = message_count THEN NULL ELSE excluded.awaiting_since END, \
     last_activity_at = excluded.last_activity_at, \
     message_count = max(message_count, excluded.message_count), \
     engaged_count = max(engaged_count, excluded.engaged_count), \
     observed_count = max(observed_count, excluded.observed_count), updated_at = excluded.updated_at \
     WHERE excluded.last_activity_at > last_activity_at \
     OR (excluded.last_activity_at = last_activity_at AND excluded.message_count >= message_count)";

/// Index rows as the batch statement binds them: one JSON array. Each
/// conversation appears once, as its newest row (an older one would change
/// nothing anyway, and the statement reads less).
pub fn batch_json(rows: &[Conversation]) -> serde_json::Result<String> {
    let mut newest: std::collections::BTreeMap<&str, &Conversation> = std::collections::BTreeMap::new();
    for row in rows {
        let keep = newest.get(row.conversation_key.as_str()).is_none_or(|kept| is_newer(row, kept));
        if keep {
            newest.insert(&row.conversation_key, row);
        }
    }
    serde_json::to_string(&newest.into_values().collect::<Vec<_>>())
}

/// Whether `row` is a later state of the conversation than `than` (the
/// statement's own guard: later activity, or as late with as many messages).
fn is_newer(row: &Conversation, than: &Conversation) -> bool {
    (row.last_activity_at, row.message_count) >= (than.last_activity_at, than.message_count)
}

/// Writes a batch of index rows in one D1 statement (nothing for none).
pub async fn write_batch(db: &D1Database, rows: &[Conversation], now_ms: i64) -> Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    db.prepare(UPSERT_BATCH).bind(&[batch_json(rows)?.into(), number(now_ms)])?.run_counted().await?;
    Ok(())
}

/// Sends the conversation's index row to the index queue (counted: one queue
/// write); its consumer writes a batch of them in one D1 statement
/// ([`write_batch`], from `crate::jobs`). Without the binding (an older
/// wrangler.toml), the row is written to its D1 shard directly, as before.
#[allow(clippy::disallowed_methods)]
pub async fn send(env: &worker::Env, row: &Conversation) -> Result<()> {
    use crate::runtime::config;
    let Ok(queue) = env.queue(config::INDEX_QUEUE_BINDING) else {
        let shard = crate::runtime::d1::shard_of(env, &row.conversation_key)?;
        return upsert(&shard, row, crate::runtime::http::now_ms()).await;
    };
    crate::ops::count(crate::ops::Op::QueueSend);
    queue.send(row).await
}
