//! Checkpoints of the channel's versioned slots in the object's SQLite storage:
//! one row per slot, rewritten only when the slot's version moved.

use std::collections::BTreeMap;

use serde::Deserialize;
use worker::{Result, SqlStorageValue};

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

/// Loads the state and the versions already persisted.
pub fn load(sql: &Sql) -> Result<(ChannelState, BTreeMap<String, u64>)> {
    let rows: Vec<SlotRow> = sql.exec("SELECT name, version, body FROM slots", None)?.to_array()?;
    let saved = crate::sorting::map_from(rows.iter().map(|row| (row.name.clone(), row.version.max(0) as u64)));
    let state = ChannelState::restore(rows.iter().map(|row| (row.name.as_str(), row.body.as_str())));
    Ok((state, saved))
}

/// Writes the slots that changed since the last checkpoint in ONE statement,
/// so a checkpoint lands whole or not at all; `saved` moves only once it did.
pub fn save(sql: &Sql, state: &ChannelState, saved: &mut BTreeMap<String, u64>) -> Result<()> {
    let changed = state.changed_slots(saved)?;
    if changed.is_empty() {
        return Ok(());
    }
    let rows = vec!["(?, ?, ?)"; changed.len()].join(", ");
    let mut bindings = Vec::with_capacity(changed.len() * 3);
    for (name, version, body) in &changed {
        bindings.extend([(*name).into(), SqlStorageValue::from(*version as i64), body.as_str().into()]);
    }
    sql.exec(
        &format!(
            "INSERT INTO slots (name, version, body) VALUES {rows} \
             ON CONFLICT (name) DO UPDATE SET version = excluded.version, body = excluded.body"
        ),
        bindings,
    )?;
    for (name, version, _) in changed {
        saved.insert(name.to_string(), version);
    }
    Ok(())
}
