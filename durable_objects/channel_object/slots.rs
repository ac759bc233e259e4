//! The channel's state checkpoint in the object's SQLite storage: one row
//! holding every slot, rewritten when a slot moved (src/channel/checkpoint.rs
//! says why one row). An object made before keeps its one-row-per-slot rows
//! until its first checkpoint replaces them.

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

/// Loads the state and what storage holds of it.
pub fn load(sql: &Sql) -> Result<(ChannelState, Checkpoint)> {
    let rows: Vec<SlotRow> = sql.exec("SELECT name, version, body FROM slots", None)?.to_array()?;
    Ok(Checkpoint::restore(rows.iter().map(|row| (row.name.as_str(), row.version, row.body.as_str()))))
}

/// Writes the checkpoint if a slot moved: ONE row, so it lands whole or not
/// at all (an old object's rows are deleted in the same synchronous run,
/// which storage commits together); `saved` moves only once it did.
pub fn save(sql: &Sql, state: &ChannelState, saved: &mut Checkpoint) -> Result<()> {
    let Some(pending) = saved.next(state)? else {
        return Ok(());
    };
    sql.exec(
        "INSERT INTO slots (name, version, body) VALUES (?, 0, ?) ON CONFLICT (name) DO UPDATE SET body = excluded.body",
        vec![ROW.into(), pending.body.as_str().into()],
    )?;
    if saved.legacy() {
        sql.exec("DELETE FROM slots WHERE name <> ?", vec![ROW.into()])?;
    }
    pending.saved(saved);
    Ok(())
}
