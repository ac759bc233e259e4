//! Tells D1 how many pieces wait in this conversation's outbox, for
//! `/api/status`: outboxes live in each channel object, where no status
//! request can count them. Written only when the number changed since the
//! object last wrote it, so a turn whose pieces go out at once costs nothing
//! (a fresh object writes once, in case a crash left a stale count).

use worker::D1Database;

use super::ChannelObject;
use crate::log_line::LogLine;
use crate::reply::outbox::OutboxStatus;
use crate::runtime::durable::Sql;
use crate::runtime::log::Emit;
use crate::status::api::report_pending;

/// Pieces not yet sent: pending, or caught mid-send.
fn unsent_query() -> String {
    format!("SELECT COUNT(*) AS unsent FROM outbox WHERE status IN ({})", OutboxStatus::sql_list(&OutboxStatus::UNSENT))
}

/// Best effort: a failed report is logged and tried again after the next turn.
pub async fn report(object: &ChannelObject, sql: &Sql, database: &D1Database, conversation_key: &str) {
    // Read as JSON values, as the inbox reads its rows: no deserializer of its own.
    let rows = sql.exec(&unsent_query(), None).and_then(|cursor| cursor.to_array::<serde_json::Value>());
    let unsent = rows.map(|rows| rows.first().and_then(|row| row["unsent"].as_i64()).unwrap_or(0));
    let unsent = match unsent {
        Ok(unsent) if object.reported_unsent.get() != Some(unsent) => unsent,
        Ok(_) => return,
        Err(error) => return LogLine::warn("pending_not_counted").conversation(conversation_key).reason(&error).emit(),
    };
    match report_pending(database, conversation_key, unsent).await {
        Ok(()) => object.reported_unsent.set(Some(unsent)),
        Err(error) => LogLine::warn("pending_not_reported").conversation(conversation_key).reason(&error).emit(),
    }
}
