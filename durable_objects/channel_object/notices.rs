//! Notices the channel gives at most so often per conversation (a bot that
//! is not set up says so once an hour, not to every message).

use worker::{Result, SqlStorageValue};

use crate::runtime::durable::Sql;

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS notices (
    kind TEXT PRIMARY KEY,
    told_at INTEGER NOT NULL
);
";

/// The "not set up yet" notice (`prompts/not_set_up.md.j2`).
pub const NOT_SET_UP: &str = "not_set_up";
/// It is given at most once an hour per conversation.
pub const NOT_SET_UP_EVERY_MS: i64 = 60 * 60 * 1000;

/// Whether the notice `kind` is due (never given, or not for `every_ms`);
/// if so, records it as given now. One statement: a notice is given once
/// however the turns interleave.
pub fn due(sql: &Sql, kind: &str, now_ms: i64, every_ms: i64) -> Result<bool> {
    let given: Vec<serde_json::Value> = sql
        .exec(
            "INSERT INTO notices (kind, told_at) VALUES (?, ?) ON CONFLICT (kind) DO UPDATE \
             SET told_at = excluded.told_at WHERE notices.told_at <= ? RETURNING told_at",
            vec![kind.into(), SqlStorageValue::from(now_ms), SqlStorageValue::from(now_ms - every_ms)],
        )?
        .to_array()?;
    Ok(!given.is_empty())
}
