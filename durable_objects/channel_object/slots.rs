//! The channel's state checkpoint in the object's SQLite storage: one row
//! holding every slot, rewritten when a slot moved (src/channel/checkpoint.rs
//! says why one row). An object made before keeps its one-row-per-slot rows
//! until its first checkpoint replaces them.
//!
//! An inbound's checkpoint rides on the inbox row it writes anyway (its
//! `checkpoint` column, inbox.rs), so an observed message writes no slots
//! row of its own. The newest checkpoint is the later of the two: the slots
//! row's `version` is the inbox's highest `seq` when it was written, and a
//! filed one with a higher `seq` came after it.

use serde::Deserialize;
use worker::Result;

use crate::channel::checkpoint::{Checkpoint, ROW};
use crate::channel::state::ChannelState;
use crate::runtime::durable::Sql;

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS slots (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    body TEXT NOT NULL
);
";

#[derive(Deserialize)]
struct SlotRow {
    name: String,
    version: i64,
    body: String,
}

#[derive(Deserialize)]
struct FiledRow {
    seq: i64,
    checkpoint: String,
}

/// Loads the state and what storage holds of it, from the newest checkpoint.
pub fn load(sql: &Sql) -> Result<(ChannelState, Checkpoint)> {
    let rows: Vec<SlotRow> = sql.exec("SELECT name, version, body FROM slots", None)?.to_array()?;
    let filed: Vec<FiledRow> = sql
        .exec("SELECT seq, checkpoint FROM inbox WHERE checkpoint IS NOT NULL ORDER BY seq DESC LIMIT 1", None)?
        .to_array()?;
    let rows = rows.iter().map(|row| (row.name.as_str(), row.version, row.body.as_str())).collect();
    let filed = filed.first().map(|row| (row.seq, row.checkpoint.as_str()));
    Ok(Checkpoint::restore_newest(rows, filed))
}

/// Writes the checkpoint if a slot moved: ONE row, so it lands whole or not
/// at all (an old object's rows are deleted in the same synchronous run,
/// which storage commits together); `saved` moves only once it did.
pub fn save(sql: &Sql, state: &ChannelState, saved: &mut Checkpoint) -> Result<()> {
    let Some(pending) = saved.next(state)? else {
        return Ok(());
    };
    sql.exec(
        "INSERT INTO slots (name, version, body) VALUES (?, (SELECT coalesce(max(seq), 0) FROM inbox), ?) \
         ON CONFLICT (name) DO UPDATE SET version = excluded.version, body = excluded.body",
        vec![ROW.into(), pending.body.as_str().into()],
    )?;
    if saved.legacy() {
        sql.exec("DELETE FROM slots WHERE name <> ?", vec![ROW.into()])?;
    }
    pending.saved(saved);
    Ok(())
}
