//! The inbox: every inbound the channel received, with its engagement decision
//! and its progress through turns. Its unique delivery id is the webhook dedupe.

use serde::{Deserialize, Serialize};
use worker::{Result, SqlStorage, SqlStorageValue};

use crate::channel::engagement::Decision;
use crate::inbound::InboundEvent;

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS inbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id TEXT NOT NULL UNIQUE,
    event TEXT NOT NULL,
    decision TEXT NOT NULL,
    reason TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    status TEXT NOT NULL,
    turn INTEGER
);
CREATE INDEX IF NOT EXISTS inbox_by_status ON inbox (status, seq);
";

/// Inbox rows are kept (for dedupe and the admin API) this long after they are settled.
const RETENTION_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// At most this many messages make one turn; the rest wait for the next.
const MAX_MESSAGES_PER_TURN: i64 = 50;

/// Stores the inbound; returns false when this delivery was already stored.
pub fn store(sql: &SqlStorage, event: &InboundEvent, decision: &Decision, now_ms: i64) -> Result<bool> {
    let status = if decision.engages { "pending" } else { "observed" };
    let event_json = serde_json::to_string(event)?;
    let inserted: Vec<serde_json::Value> = sql
        .exec(
            "INSERT INTO inbox (delivery_id, event, decision, reason, received_at, status) \
             VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (delivery_id) DO NOTHING RETURNING seq",
            vec![
                event.delivery_id.as_str().into(),
                event_json.into(),
                decision.label().into(),
                decision.reason.into(),
                SqlStorageValue::from(now_ms),
                status.into(),
            ],
        )?
        .to_array()?;
    Ok(!inserted.is_empty())
}

/// A batch of engaged messages answered together.
pub struct Turn {
    pub id: i64,
    /// The events with the time each was received, oldest first.
    pub events: Vec<(InboundEvent, i64)>,
}

#[derive(Deserialize)]
struct TurnRow {
    seq: i64,
    event: String,
    received_at: i64,
    turn: Option<i64>,
}

/// The next turn to run: one a crash interrupted, or else the pending messages.
pub fn next_turn(sql: &SqlStorage) -> Result<Option<Turn>> {
    let mut rows: Vec<TurnRow> = sql
        .exec("SELECT seq, event, received_at, turn FROM inbox WHERE status = 'taken' ORDER BY seq", None)?
        .to_array()?;
    if rows.is_empty() {
        rows = sql
            .exec(
                "SELECT seq, event, received_at, turn FROM inbox WHERE status = 'pending' ORDER BY seq LIMIT ?",
                vec![SqlStorageValue::from(MAX_MESSAGES_PER_TURN)],
            )?
            .to_array()?;
        let Some(last) = rows.last() else {
            return Ok(None);
        };
        let turn_id = last.seq;
        sql.exec(
            "UPDATE inbox SET status = 'taken', turn = ? WHERE status = 'pending' AND seq <= ?",
            vec![SqlStorageValue::from(turn_id), SqlStorageValue::from(turn_id)],
        )?;
        for row in &mut rows {
            row.turn = Some(turn_id);
        }
    }
    let id = rows.iter().find_map(|row| row.turn).unwrap_or_default();
    let events = rows
        .into_iter()
        .filter_map(|row| match serde_json::from_str(&row.event) {
            Ok(event) => Some((event, row.received_at)),
            Err(error) => {
                worker::console_error!("inbox row {} is unreadable: {error}", row.seq);
                None
            }
        })
        .collect();
    Ok(Some(Turn { id, events }))
}

/// Marks a turn's messages answered and forgets settled rows past retention.
pub fn finish(sql: &SqlStorage, turn_id: i64, now_ms: i64) -> Result<()> {
    sql.exec(
        "UPDATE inbox SET status = 'answered' WHERE status = 'taken' AND turn = ?",
        vec![SqlStorageValue::from(turn_id)],
    )?;
    sql.exec(
        "DELETE FROM inbox WHERE status IN ('answered', 'observed') AND received_at < ?",
        vec![SqlStorageValue::from(now_ms - RETENTION_MS)],
    )?;
    Ok(())
}

/// One inbound as the admin API shows it.
#[derive(Serialize, Deserialize)]
pub struct EventRecord {
    pub seq: i64,
    pub delivery_id: String,
    pub decision: String,
    pub reason: String,
    pub status: String,
    pub received_at: i64,
    pub event: serde_json::Value,
}

#[derive(Deserialize)]
struct EventRow {
    seq: i64,
    delivery_id: String,
    decision: String,
    reason: String,
    status: String,
    received_at: i64,
    event: String,
}

pub fn events(sql: &SqlStorage) -> Result<Vec<EventRecord>> {
    let rows: Vec<EventRow> = sql
        .exec("SELECT seq, delivery_id, decision, reason, status, received_at, event FROM inbox ORDER BY seq", None)?
        .to_array()?;
    Ok(rows
        .into_iter()
        .map(|row| EventRecord {
            seq: row.seq,
            delivery_id: row.delivery_id,
            decision: row.decision,
            reason: row.reason,
            status: row.status,
            received_at: row.received_at,
            event: serde_json::from_str(&row.event).unwrap_or_default(),
        })
        .collect())
}
