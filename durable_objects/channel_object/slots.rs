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
//!
//! The object's steps (`Channel::step`, `step_filed`) change the state
//! and write its checkpoint here.

use serde::Deserialize;
use worker::Result;

use super::Channel;
use crate::channel::checkpoint::{Checkpoint, ROW};
use crate::channel::state::ChannelState;
use crate::log_line::LogLine;
use crate::runtime::durable::{MeteredStorage, Sql};
use crate::runtime::log::Emit;

pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS slots (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    body TEXT NOT NULL
);
";

/// A slots row, or (`name` None) the newest checkpoint an inbound filed,
/// its `seq` as `version`.
#[derive(Deserialize)]
struct SlotRow {
    name: Option<String>,
    version: i64,
    body: String,
}

/// Loads the state and what storage holds of it, from the newest checkpoint
/// (one statement: the slots rows and the newest filed one).
pub fn load(sql: &Sql) -> Result<(ChannelState, Checkpoint)> {
    let rows: Vec<SlotRow> = sql
        .exec(
            "SELECT name, version, body FROM slots UNION ALL SELECT * FROM (SELECT NULL, seq, checkpoint \
             FROM inbox WHERE checkpoint IS NOT NULL ORDER BY seq DESC LIMIT 1)",
            None,
        )?
        .to_array()?;
    let (slots, filed): (Vec<&SlotRow>, Vec<&SlotRow>) = rows.iter().partition(|row| row.name.is_some());
    let slots = slots.iter().map(|row| (row.name.as_deref().unwrap_or_default(), row.version, row.body.as_str()));
    let filed = filed.first().map(|row| (row.version, row.body.as_str()));
    Ok(Checkpoint::restore_newest(slots.collect(), filed))
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

impl Channel {
    /// Changes the channel state, then checkpoints what moved. No borrow is
    /// held across an await, so webhooks are taken while a turn waits on a model.
    ///
    /// A step is all or nothing: the checkpoint is one statement, so when it
    /// fails, storage still holds the last one, and the state goes back to it.
    /// The caller's request fails (the platform retries); the conversation
    /// does not stay broken.
    pub(super) fn step<T>(&self, change: impl FnOnce(&mut ChannelState) -> T) -> Result<T> {
        let result = change(&mut self.machine.borrow_mut());
        let sql = self.state.storage().counted_sql();
        let saved = save(&sql, &self.machine.borrow(), &mut self.saved.borrow_mut());
        self.saved_or_restored(&sql, saved)?;
        Ok(result)
    }

    /// A failed checkpoint puts the state back to what storage holds, and is the step's error.
    fn saved_or_restored(&self, sql: &Sql, saved: Result<()>) -> Result<()> {
        let Err(error) = saved else { return Ok(()) };
        LogLine::error("channel_checkpoint_failed").field("recovery", "back to the last one").reason(&error).emit();
        let (machine, saved) = load(sql)?;
        *self.machine.borrow_mut() = machine;
        *self.saved.borrow_mut() = saved;
        Err(error)
    }

    /// [`Self::step`] for an inbound: `file` writes its inbox row, which
    /// carries the checkpoint when a slot moved (slots.rs), so an inbound
    /// writes no slots row of its own. Where the row could not carry it (an
    /// old object's one-row-per-slot rows still to replace, a row not
    /// written), the slots row takes it as in [`Self::step`]. No await
    /// between the change and the writes: storage commits them together.
    pub(super) fn step_filed<T>(
        &self,
        change: impl FnOnce(&mut ChannelState) -> T,
        file: impl FnOnce(&T, Option<&str>) -> Result<bool>,
    ) -> Result<T> {
        let result = change(&mut self.machine.borrow_mut());
        let sql = self.state.storage().counted_sql();
        let written = (|| {
            let pending = match self.saved.borrow().legacy() {
                true => None,
                false => self.saved.borrow().next(&self.machine.borrow())?,
            };
            let filed = file(&result, pending.as_ref().map(|pending| pending.body.as_str()))?;
            match pending {
                Some(pending) if filed => pending.saved(&mut self.saved.borrow_mut()),
                _ => save(&sql, &self.machine.borrow(), &mut self.saved.borrow_mut())?,
            }
            Ok(())
        })();
        self.saved_or_restored(&sql, written)?;
        Ok(result)
    }
}
