//! Conversation history in D1.

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Result};

use crate::channel::turn::HistoryRole;
use crate::inbound::InboundEvent;

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
    /// 0 live, 1 summarised, 2 dropped (set by compaction, never on insert).
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

const INSERT: &str = "INSERT OR IGNORE INTO messages \
    (id, conversation_key, role, author_id, author_name, content, platform_message_id, created_at) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

fn insert(db: &D1Database, message: &StoredMessage) -> Result<D1PreparedStatement> {
    let role = match message.role {
        HistoryRole::User => "user",
        HistoryRole::Assistant => "assistant",
    };
    db.prepare(INSERT).bind(&[
        message.id.as_str().into(),
        message.conversation_key.as_str().into(),
        role.into(),
        message.author_id.as_str().into(),
        message.author_name.as_str().into(),
        message.content.as_str().into(),
        message.platform_message_id.as_deref().map_or(JsValue::NULL, JsValue::from),
        JsValue::from_f64(message.created_at as f64),
    ])
}

/// The newest messages still in the live history (not compacted away).
fn latest(db: &D1Database, conversation_key: &str, limit: usize) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT * FROM messages WHERE conversation_key = ?1 AND compacted = 0 \
         ORDER BY created_at DESC, rowid DESC LIMIT ?2",
    )
    .bind(&[conversation_key.into(), JsValue::from_f64(limit as f64)])
}

#[derive(Deserialize)]
struct SummaryRow {
    content: String,
}

/// A conversation's history as a turn sees it: compaction summaries (oldest
/// first) and the live messages before the current ones.
pub struct LoadedHistory {
    /// The cortex's memory bulletin (empty until one is built).
    pub bulletin: String,
    pub summaries: Vec<String>,
    pub earlier: Vec<StoredMessage>,
}

/// In one round trip: reads the memory bulletin, the conversation's summaries and last `limit`
/// messages before `current`, and stores `current` (idempotently) so it is
/// history from now on.
pub async fn load_and_record(
    db: &D1Database,
    conversation_key: &str,
    current: &[StoredMessage],
    limit: usize,
) -> Result<LoadedHistory> {
    let summaries = db
        .prepare("SELECT content FROM summaries WHERE conversation_key = ?1 ORDER BY created_at, rowid")
        .bind(&[conversation_key.into()])?;
    let bulletin = db.prepare("SELECT value AS content FROM memory_meta WHERE key = 'bulletin'");
    let mut statements = vec![summaries, latest(db, conversation_key, limit + current.len())?, bulletin];
    for message in current {
        statements.push(insert(db, message)?);
    }
    let results = db.batch(statements).await?;
    let summaries: Vec<SummaryRow> = match results.first() {
        Some(result) => result.results()?,
        None => Vec::new(),
    };
    let rows: Vec<StoredMessage> = match results.get(1) {
        Some(result) => result.results()?,
        None => Vec::new(),
    };
    let mut earlier: Vec<StoredMessage> = rows
        .into_iter()
        // A resumed turn may already have stored its messages; they are current, not history.
        .filter(|row| current.iter().all(|message| message.id != row.id))
        .take(limit)
        .collect();
    earlier.reverse();
    let bulletin: Vec<SummaryRow> = match results.get(2) {
        Some(result) => result.results()?,
        None => Vec::new(),
    };
    Ok(LoadedHistory {
        bulletin: bulletin.into_iter().next().map(|row| row.content).unwrap_or_default(),
        summaries: summaries.into_iter().map(|row| row.content).collect(),
        earlier,
    })
}

/// Flags messages as compacted (1 = summarised, 2 = dropped); they stay as the archive.
fn flag_compacted(db: &D1Database, ids: &[String], flag: u8) -> Result<Vec<D1PreparedStatement>> {
    ids.iter()
        .map(|id| {
            db.prepare("UPDATE messages SET compacted = ?1 WHERE id = ?2 AND compacted = 0")
                .bind(&[JsValue::from_f64(f64::from(flag)), id.as_str().into()])
        })
        .collect()
}

/// Drops messages from the live history at once (the emergency cut).
pub async fn drop_oldest(db: &D1Database, ids: &[String]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    db.batch(flag_compacted(db, ids, 2)?).await?;
    Ok(())
}

/// The live (not yet compacted) messages among `ids` (at most 90: D1 binds up
/// to 100 parameters), oldest first, in one query.
pub async fn live_messages(db: &D1Database, ids: &[String]) -> Result<Vec<StoredMessage>> {
    let ids = &ids[..ids.len().min(90)];
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let placeholders = (1..=ids.len()).map(|index| format!("?{index}")).collect::<Vec<_>>().join(", ");
    let query =
        format!("SELECT * FROM messages WHERE compacted = 0 AND id IN ({placeholders}) ORDER BY created_at, rowid");
    let bindings: Vec<JsValue> = ids.iter().map(|id| JsValue::from(id.as_str())).collect();
    db.prepare(query).bind(&bindings)?.all().await?.results()
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
    statements.extend(flag_compacted(db, covered, 1)?);
    db.batch(statements).await?;
    Ok(())
}

/// Stores messages (replies the bot sent), idempotently, in one round trip.
pub async fn record(db: &D1Database, messages: &[StoredMessage]) -> Result<()> {
    if messages.is_empty() {
        return Ok(());
    }
    let statements = messages.iter().map(|message| insert(db, message)).collect::<Result<Vec<_>>>()?;
    db.batch(statements).await?;
    Ok(())
}

/// The conversation's last `limit` messages, compacted ones included, oldest
/// first (admin API).
pub async fn list(db: &D1Database, conversation_key: &str, limit: usize) -> Result<Vec<StoredMessage>> {
    let mut rows: Vec<StoredMessage> = db
        .prepare("SELECT * FROM messages WHERE conversation_key = ?1 ORDER BY created_at DESC, rowid DESC LIMIT ?2")
        .bind(&[conversation_key.into(), JsValue::from_f64(limit as f64)])?
        .all()
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
        "SELECT * FROM messages WHERE conversation_key = ?1{conditions} ORDER BY created_at DESC, rowid DESC LIMIT ?2"
    );
    let mut bindings = vec![JsValue::from(conversation_key), JsValue::from_f64(limit as f64)];
    bindings.extend(words.iter().map(|word| JsValue::from(word.as_str())));
    db.prepare(query).bind(&bindings)?.all().await?.results()
}
