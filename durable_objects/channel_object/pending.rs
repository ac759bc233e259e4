//! Tells D1 how many pieces wait in this conversation's outbox, for
//! `/api/status`: outboxes live in each channel object, where no status
//! request can count them. Sent with the alarm's commit (commit.rs), only
//! when the number changed since the object last sent it, so a turn whose
//! pieces go out at once costs nothing (a fresh object sends it once, in case
//! a crash left a stale count).

use worker::Result;

use crate::reply::outbox::OutboxStatus;
use crate::runtime::durable::Sql;

/// Pieces not yet sent: pending, or caught mid-send.
fn unsent_query() -> String {
    format!("SELECT COUNT(*) AS unsent FROM outbox WHERE status IN ({})", OutboxStatus::sql_list(&OutboxStatus::UNSENT))
}

/// How many pieces wait, if that is not what the object last sent
/// (`reported`): the count the commit sends.
pub fn moved(sql: &Sql, reported: Option<i64>) -> Result<Option<i64>> {
    // Read as JSON values, as the inbox reads its rows: no deserializer of its own.
    let rows = sql.exec(&unsent_query(), None)?.to_array::<serde_json::Value>()?;
    let unsent = rows.first().and_then(|row| row["unsent"].as_i64()).unwrap_or(0);
    Ok((reported != Some(unsent)).then_some(unsent))
}
