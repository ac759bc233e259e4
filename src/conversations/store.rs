//! The dashboard's index of conversations in D1: one row per conversation,
//! written by its channel object (debounced), read by the admin API.

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Result};

use crate::runtime::d1::Metered;
use crate::runtime::d1::{number, text_or_null};

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

/// The most recently active conversations; `search` matches the key or the
/// title (a plain substring, `%` and `_` taken literally).
pub async fn list(db: &D1Database, search: Option<&str>, limit: usize) -> Result<Vec<Conversation>> {
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
/// `before_ms` and has no outcome yet, the longest waiting first (through
/// the partial index `conversations_awaiting`).
pub async fn awaiting(db: &D1Database, before_ms: i64, limit: usize) -> Result<Vec<String>> {
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
