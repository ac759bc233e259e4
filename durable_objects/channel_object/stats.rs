//! The conversation's running counts, kept with each inbound (one row), and
//! mirrored to the dashboard's D1 index a few seconds after it moved (through
//! the index queue, batched with other conversations' rows), with
//! whether an inbound still waits for its outcome (the sweeper reads that).

use worker::{Result, SqlStorageValue};

use crate::conversations::store::Conversation;
use crate::inbound::{ConversationKey, InboundEvent};
use crate::log_line::LogLine;
use crate::runtime::durable::Sql;
use crate::runtime::log::Emit;

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS stats (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    conversation_key TEXT NOT NULL,
    title TEXT,
    messages INTEGER NOT NULL,
    engaged INTEGER NOT NULL,
    observed INTEGER NOT NULL,
    last_activity INTEGER NOT NULL
);
";

/// Counts one inbound and its decision.
pub fn count(sql: &Sql, event: &InboundEvent, engaged: bool, now_ms: i64) -> Result<()> {
    let (engaged, observed) = if engaged { (1, 0) } else { (0, 1) };
    sql.exec(
        "INSERT INTO stats (id, conversation_key, title, messages, engaged, observed, last_activity) \
         VALUES (1, ?, ?, 1, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET title = coalesce(excluded.title, title), \
         messages = messages + 1, engaged = engaged + excluded.engaged, observed = observed + excluded.observed, \
         last_activity = excluded.last_activity",
        vec![
            event.conversation_key.as_str().into(),
            event.conversation_title.clone().into(),
            SqlStorageValue::from(engaged),
            SqlStorageValue::from(observed),
            SqlStorageValue::from(now_ms),
        ],
    )?;
    Ok(())
}

#[derive(serde::Deserialize)]
struct Row {
    conversation_key: String,
    title: Option<String>,
    messages: i64,
    engaged: i64,
    observed: i64,
    last_activity: i64,
    awaiting_since: Option<i64>,
}

/// The conversation as the index shows it (None before its first inbound),
/// with when its oldest inbound still waiting for an outcome arrived (read
/// through the inbox's partial index of open rows, so only those are read).
pub fn read(sql: &Sql) -> Result<Option<Conversation>> {
    let rows: Vec<Row> = sql
        .exec(
            "SELECT s.*, (SELECT min(received_at) FROM inbox WHERE status IN ('queued', 'held')) AS awaiting_since \
             FROM stats s WHERE id = 1",
            None,
        )?
        .to_array()?;
    Ok(rows.into_iter().next().map(|row| Conversation {
        platform: ConversationKey::parse(&row.conversation_key).map(|key| key.platform()).unwrap_or_default().into(),
        conversation_key: row.conversation_key,
        title: row.title,
        last_activity_at: row.last_activity,
        message_count: row.messages,
        engaged_count: row.engaged,
        observed_count: row.observed,
        awaiting_since: row.awaiting_since,
    }))
}

/// How an index row travels.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum IndexWrite {
    /// Through the index queue, whose consumer writes many rows in one D1 statement.
    Queued,
    /// Straight to the conversation's D1 shard (a turn resumed after a crash,
    /// which tells the sweeper it waits before anything else).
    Now,
}

/// Sends the conversation's counts and whether an inbound waits to the index
/// (best effort: logged; the next inbound's row carries the same counts),
/// unless it is the row last written (the alarm's commit usually took it).
pub async fn write_index(
    sql: &Sql,
    env: &worker::Env,
    written: &std::cell::RefCell<Option<Conversation>>,
    how: IndexWrite,
) {
    let sent = async {
        let Some(row) = read(sql)?.filter(|row| written.borrow().as_ref() != Some(row)) else { return Ok(()) };
        match how {
            IndexWrite::Queued => crate::conversations::store::send(env, &row).await?,
            IndexWrite::Now => {
                let shard = crate::runtime::d1::shard_of(env, &row.conversation_key)?;
                crate::conversations::store::upsert(&shard, &row, crate::runtime::http::now_ms()).await?
            }
        }
        *written.borrow_mut() = Some(row);
        Ok::<(), worker::Error>(())
    };
    if let Err(error) = sent.await {
        LogLine::error("conversation_index_not_written").reason(&error).emit();
    }
}
