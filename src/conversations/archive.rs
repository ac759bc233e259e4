//! Conversation history in D1: the archive. Turns read their history from
//! the channel object's copy (durable_objects/channel_object/history.rs), which
//! mirrors new rows here after each alarm; the compactor, `channel_recall` and
//! the admin API read it here.

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Result};

use crate::inbound::InboundEvent;
use crate::llm::HistoryRole;
use crate::runtime::d1::Metered;

/// One row of the `messages` table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredMessage {
    pub id: String,
    pub conversation_key: String,
    pub role: HistoryRole,
    pub author_id: String,
    pub author_name: String,
    pub content: String,
    pub platform_message_id: Option<String>,
    pub created_at: i64,
    /// 0 live, 1 summarised, 2 dropped (set by compaction).
    #[serde(default)]
    pub compacted: i64,
}

impl StoredMessage {
    pub fn inbound(event: &InboundEvent, received_at: i64) -> Self {
        StoredMessage {
            id: format!("{}:in:{}", event.conversation_key, event.delivery_id),
            conversation_key: event.conversation_key.clone(),
            role: HistoryRole::User,
            author_id: event.author.id.clone(),
            author_name: event.author.name.clone(),
            content: event.text.clone(),
            platform_message_id: Some(event.message_id.clone()),
            created_at: received_at,
            compacted: 0,
        }
    }
}

fn role_name(role: HistoryRole) -> &'static str {
    match role {
        HistoryRole::User => "user",
        HistoryRole::Assistant => "assistant",
    }
}

impl StoredMessage {
    /// The row as one mirror element: a JSON array in [`MIRROR`]'s column order.
    pub fn mirror_row(&self) -> serde_json::Result<String> {
        serde_json::to_string(&(
            &self.id,
            &self.conversation_key,
            role_name(self.role),
            &self.author_id,
            &self.author_name,
            &self.content,
            &self.platform_message_id,
            self.created_at,
            self.compacted,
        ))
    }
}

/// Writes a chunk of mirror rows (a JSON array of [`StoredMessage::mirror_row`]s)
/// in one statement: new rows are inserted, a known one only takes a higher
/// compaction flag (an emergency cut made in the channel object), so a resent
/// chunk changes nothing.
const MIRROR: &str = "INSERT INTO messages \
    (id, conversation_key, role, author_id, author_name, content, platform_message_id, created_at, compacted) \
    SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), \
    json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'), \
    json_extract(value, '$[6]'), json_extract(value, '$[7]'), json_extract(value, '$[8]') \
    FROM json_each(?1) WHERE true \
    ON CONFLICT (conversation_key, created_at, id) DO UPDATE SET compacted = max(messages.compacted, excluded.compacted), \
    content = CASE WHEN messages.compacted = 3 THEN '' ELSE excluded.content END";

/// The statements that mirror the channel object's new history rows to D1,
/// one per chunk (the object sends them in one batch: one round trip, one
/// transaction, with the rest of its commit).
pub fn mirror_statements(db: &D1Database, chunks: Vec<String>) -> Result<Vec<D1PreparedStatement>> {
    chunks.into_iter().map(|chunk| db.prepare(MIRROR).bind(&[JsValue::from(chunk)])).collect()
}

/// An edit (`text`) or a deletion (None) heard for the platform message
/// `message_id`, on the rows D1 keeps of it (also those the channel object
/// no longer holds): an edit replaces a person's text (only its author's,
/// when `author_id` is known); a deletion forgets the text and flags the
/// row 3 (deleted), which no prompt, list or search shows.
pub async fn hear(
    db: &D1Database,
    conversation_key: &str,
    message_id: &str,
    author_id: Option<&str>,
    text: Option<&str>,
) -> Result<()> {
    if message_id.is_empty() {
        return Ok(());
    }
    let key = JsValue::from(conversation_key);
    let message = JsValue::from(message_id);
    let statement = match text {
        Some(text) => db
            .prepare(
                "UPDATE messages SET content = ?3 WHERE conversation_key = ?1 AND platform_message_id = ?2 \
                 AND role = 'user' AND compacted != 3 AND (?4 IS NULL OR author_id = ?4)",
            )
            .bind(&[key, message, text.into(), author_id.map_or(JsValue::NULL, JsValue::from)])?,
        None => db
            .prepare(
                "UPDATE messages SET content = '', compacted = 3 \
                 WHERE conversation_key = ?1 AND platform_message_id = ?2",
            )
            .bind(&[key, message])?,
    };
    statement.run_counted().await?;
    Ok(())
}

/// One compaction summary.
#[derive(Debug, Clone, Deserialize)]
pub struct Summary {
    pub id: String,
    pub content: String,
    pub created_at: i64,
}

fn summaries(db: &D1Database, conversation_key: &str) -> Result<D1PreparedStatement> {
    db.prepare("SELECT id, content, created_at FROM summaries WHERE conversation_key = ?1 ORDER BY created_at, rowid")
        .bind(&[conversation_key.into()])
}

/// The conversation's compaction summaries, oldest first.
pub async fn load_summaries(db: &D1Database, conversation_key: &str) -> Result<Vec<Summary>> {
    summaries(db, conversation_key)?.all_counted().await?.results()
}

/// What a channel object takes over from D1 once: the summaries and the
/// newest `limit` live messages (newest first), in one round trip.
pub async fn load_for_takeover(
    db: &D1Database,
    conversation_key: &str,
    limit: usize,
) -> Result<(Vec<Summary>, Vec<StoredMessage>)> {
    let latest = db
        .prepare(
            "SELECT * FROM messages WHERE conversation_key = ?1 AND compacted = 0 \
             ORDER BY created_at DESC, id DESC LIMIT ?2",
        )
        .bind(&[conversation_key.into(), JsValue::from_f64(limit as f64)])?;
    let results = crate::runtime::d1::batch(db, vec![summaries(db, conversation_key)?, latest]).await?;
    let summaries = match results.first() {
        Some(result) => result.results()?,
        None => Vec::new(),
    };
    let rows = match results.get(1) {
        Some(result) => result.results()?,
        None => Vec::new(),
    };
    Ok((summaries, rows))
}

#[derive(Deserialize)]
struct BulletinRow {
    content: String,
}

/// The cortex's memory bulletin (empty until one is built).
pub async fn bulletin(db: &D1Database) -> Result<String> {
    let rows: Vec<BulletinRow> =
        db.prepare("SELECT value AS content FROM memory_meta WHERE key = 'bulletin'").all_counted().await?.results()?;
    Ok(rows.into_iter().next().map(|row| row.content).unwrap_or_default())
}

/// Flags the conversation's messages `ids` as compacted (1 = summarised,
/// 2 = dropped); they stay as the archive. One statement: the conversation's
/// rows are one range of the table's key.
fn flag_compacted(db: &D1Database, conversation_key: &str, ids: &[String], flag: u8) -> Result<D1PreparedStatement> {
    db.prepare(
        "UPDATE messages SET compacted = ?1 WHERE conversation_key = ?2 AND compacted = 0 \
         AND id IN (SELECT value FROM json_each(?3))",
    )
    .bind(&[JsValue::from_f64(f64::from(flag)), conversation_key.into(), serde_json::to_string(ids)?.into()])
}

/// The live (not yet compacted) messages of the conversation among `ids`,
/// oldest first, in one query.
pub async fn live_messages(db: &D1Database, conversation_key: &str, ids: &[String]) -> Result<Vec<StoredMessage>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    db.prepare(
        "SELECT * FROM messages WHERE conversation_key = ?1 AND compacted = 0 \
         AND id IN (SELECT value FROM json_each(?2)) ORDER BY created_at, id",
    )
    .bind(&[conversation_key.into(), serde_json::to_string(ids)?.into()])?
    .all_counted()
    .await?
    .results()
}

/// Stores a summary and flags what it covers, in one transaction.
pub async fn store_summary(
    db: &D1Database,
    summary_id: &str,
    conversation_key: &str,
    content: &str,
    covered: &[String],
    created_at: i64,
) -> Result<()> {
    let mut statements = vec![db
        .prepare(
            "INSERT OR IGNORE INTO summaries (id, conversation_key, content, covers, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .bind(&[
            summary_id.into(),
            conversation_key.into(),
            content.into(),
            JsValue::from_f64(covered.len() as f64),
            JsValue::from_f64(created_at as f64),
        ])?];
    statements.push(flag_compacted(db, conversation_key, covered, 1)?);
    crate::runtime::d1::batch(db, statements).await?;
    Ok(())
}

/// The conversation's last `limit` messages, compacted ones included, oldest
/// first (admin API).
pub async fn list(db: &D1Database, conversation_key: &str, limit: usize) -> Result<Vec<StoredMessage>> {
    let mut rows: Vec<StoredMessage> = db
        .prepare(
            "SELECT * FROM messages WHERE conversation_key = ?1 AND compacted != 3 \
             ORDER BY created_at DESC, id DESC LIMIT ?2",
        )
        .bind(&[conversation_key.into(), JsValue::from_f64(limit as f64)])?
        .all_counted()
        .await?
        .results()?;
    rows.reverse();
    Ok(rows)
}

/// Messages of the conversation that contain every word of `query` (up to
/// five words), newest first: `channel_recall`.
pub async fn search(db: &D1Database, conversation_key: &str, query: &str, limit: usize) -> Result<Vec<StoredMessage>> {
    let words: Vec<String> = query
        .split_whitespace()
        .take(5)
        .map(|word| format!("%{}%", word.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")))
        .collect();
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let conditions: String =
        (0..words.len()).map(|index| format!(" AND content LIKE ?{} ESCAPE '\\'", index + 3)).collect();
    let query = format!(
        "SELECT * FROM messages WHERE conversation_key = ?1 AND compacted != 3{conditions} ORDER BY created_at DESC, id DESC LIMIT ?2"
    );
    let mut bindings = vec![JsValue::from(conversation_key), JsValue::from_f64(limit as f64)];
    bindings.extend(words.iter().map(|word| JsValue::from(word.as_str())));
    db.prepare(query).bind(&bindings)?.all_counted().await?.results()
}
