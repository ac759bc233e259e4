//! Conversation history in D1.

use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement, Result};

use crate::channel::turn::{HistoryEntry, HistoryRole};
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

fn latest(db: &D1Database, conversation_key: &str, limit: usize) -> Result<D1PreparedStatement> {
    db.prepare(
        "SELECT * FROM messages WHERE conversation_key = ?1 \
         ORDER BY created_at DESC, rowid DESC LIMIT ?2",
    )
    .bind(&[conversation_key.into(), JsValue::from_f64(limit as f64)])
}

/// In one round trip: reads the conversation's last `limit` messages before
/// `current`, and stores `current` (idempotently) so it is history from now on.
pub async fn load_and_record(
    db: &D1Database,
    conversation_key: &str,
    current: &[StoredMessage],
    limit: usize,
) -> Result<Vec<HistoryEntry>> {
    let mut statements = vec![latest(db, conversation_key, limit + current.len())?];
    for message in current {
        statements.push(insert(db, message)?);
    }
    let results = db.batch(statements).await?;
    let rows: Vec<StoredMessage> = match results.first() {
        Some(result) => result.results()?,
        None => Vec::new(),
    };
    let mut earlier: Vec<HistoryEntry> = rows
        .into_iter()
        // A resumed turn may already have stored its messages; they are current, not history.
        .filter(|row| current.iter().all(|message| message.id != row.id))
        .take(limit)
        .map(|row| HistoryEntry { role: row.role, author_name: row.author_name, content: row.content })
        .collect();
    earlier.reverse();
    Ok(earlier)
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

/// The conversation's last `limit` messages, oldest first (admin API).
pub async fn list(db: &D1Database, conversation_key: &str, limit: usize) -> Result<Vec<StoredMessage>> {
    let mut rows: Vec<StoredMessage> = latest(db, conversation_key, limit)?.all().await?.results()?;
    rows.reverse();
    Ok(rows)
}
