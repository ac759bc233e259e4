//! The conversation's log of inter-process envelopes (tasks handed to
//! branches, their reports), readable as JSON lines through the admin API.

use serde::Deserialize;
use worker::{Result, SqlStorageValue};

use crate::process::envelope::Envelope;
use crate::runtime::durable::Sql;

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS envelopes (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    body TEXT NOT NULL
);
";

/// Most lines one read returns.
const MAX_LINES: i64 = 1_000;

/// Appends an envelope; one already logged (same id) is not logged twice.
pub fn log(sql: &Sql, envelope: &Envelope) -> Result<()> {
    let kind = serde_json::to_value(envelope.kind)?.as_str().unwrap_or_default().to_string();
    sql.exec(
        "INSERT INTO envelopes (id, kind, body) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
        vec![envelope.id.as_str().into(), kind.into(), serde_json::to_string(envelope)?.into()],
    )?;
    Ok(())
}

#[derive(Deserialize)]
struct Line {
    body: String,
}

/// The last `last` envelopes (oldest first), of one type if given, as JSON lines.
pub fn read(sql: &Sql, kind: Option<&str>, last: Option<i64>) -> Result<String> {
    let limit = SqlStorageValue::from(last.unwrap_or(MAX_LINES).clamp(1, MAX_LINES));
    let lines: Vec<Line> = match kind {
        Some(kind) => sql.exec(
            "SELECT body FROM (SELECT seq, body FROM envelopes WHERE kind = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq",
            vec![kind.into(), limit],
        )?,
        None => sql.exec(
            "SELECT body FROM (SELECT seq, body FROM envelopes ORDER BY seq DESC LIMIT ?) ORDER BY seq",
            vec![limit],
        )?,
    }
    .to_array()?;
    Ok(lines.into_iter().map(|line| line.body + "\n").collect())
}
