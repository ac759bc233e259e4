//! A conversation's state checkpoint as ONE row.
//!
//! An object's SQLite storage is billed per row written (and every index
//! entry a write touches), not per byte. A turn moves about six of the
//! state's slots; written one row per slot, that was six rows per turn end,
//! and nine per engaged turn. Written as one row holding every slot, each
//! checkpoint is one row whatever moved (docs/scale.md, "Fewer rows").
//!
//! Only the slots that moved are serialized again: the others' checkpoint
//! forms are kept from the last one, so a checkpoint's CPU stays what it was.
//!
//! The row's body is a JSON object, `{"<slot>": [<version>, <slot's form>]}`.
//! Objects made before this kept one row per slot; [`Checkpoint::restore`]
//! reads both, and the first checkpoint after an upgrade says that the old
//! rows must go ([`Checkpoint::legacy`]).

use std::collections::BTreeMap;

use serde_json::value::RawValue;

use super::state::{ChannelState, SLOTS};

/// The one row's name in the `slots` table (no slot is named so).
pub const ROW: &str = "*";

/// What storage holds of the state: each slot's version and checkpoint form.
/// The slots this build knows are kept by index ([`SLOTS`]), so seeing what
/// moved asks no map; any others storage holds are kept by name as found.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    slots: Vec<Option<(u64, String)>>,
    unknown: BTreeMap<String, (u64, String)>,
    legacy: bool,
}

impl Default for Checkpoint {
    fn default() -> Self {
        Checkpoint { slots: vec![None; SLOTS.len()], unknown: BTreeMap::new(), legacy: false }
    }
}

impl Checkpoint {
    /// The state and its checkpoint from the rows of the `slots` table
    /// (`name`, `version`, `body`): the one row, or an old object's rows
    /// (the one row wins where both are, which a finished upgrade never leaves).
    pub fn restore<'a>(rows: impl IntoIterator<Item = (&'a str, i64, &'a str)>) -> (ChannelState, Checkpoint) {
        let mut checkpoint = Checkpoint::default();
        let mut whole = None;
        for (name, version, body) in rows {
            match name == ROW {
                true => whole = Some(body),
                false => {
                    checkpoint.legacy = true;
                    checkpoint.record(name, version.max(0) as u64, body.to_string());
                }
            }
        }
        // An unreadable row starts those slots empty, as an unreadable slot did.
        let slots: BTreeMap<String, (u64, Box<RawValue>)> =
            whole.and_then(|body| serde_json::from_str(body).ok()).unwrap_or_default();
        for (name, (version, form)) in slots {
            checkpoint.record(&name, version, form.get().to_string());
        }
        let state = ChannelState::restore(checkpoint.forms().map(|(name, _, form)| (name, form)));
        (state, checkpoint)
    }

    /// [`Checkpoint::restore`] from the newest checkpoint storage holds: the
    /// one row among `rows`, whose version is the inbox's highest `seq` when
    /// it was written, or the one `filed` on the newest inbox row carrying
    /// one (`seq`, body: an inbound's checkpoint rides on its own inbox row,
    /// durable_objects/channel_object/slots.rs), whichever came later.
    pub fn restore_newest<'a>(
        rows: Vec<(&'a str, i64, &'a str)>,
        filed: Option<(i64, &'a str)>,
    ) -> (ChannelState, Checkpoint) {
        let mark = rows.iter().find(|(name, ..)| *name == ROW).map(|(_, version, _)| *version);
        match filed {
            Some((seq, body)) if mark.is_none_or(|mark| seq > mark) => {
                Checkpoint::restore(rows.into_iter().filter(|(name, ..)| *name != ROW).chain([(ROW, seq, body)]))
            }
            _ => Checkpoint::restore(rows),
        }
    }

    /// The one row's body after `state`'s moved slots, or `None` when
    /// nothing moved. Nothing is recorded until [`Pending::saved`].
    pub fn next(&self, state: &ChannelState) -> Result<Option<Pending>, serde_json::Error> {
        let moved = state.changed_slots(|index| self.slots[index].as_ref().map(|(version, _)| *version))?;
        if moved.is_empty() {
            return Ok(None);
        }
        let body = self.body(&moved);
        Ok(Some(Pending { body, moved }))
    }

    /// Whether storage still holds an old object's one-row-per-slot rows.
    pub fn legacy(&self) -> bool {
        self.legacy
    }

    fn record(&mut self, name: &str, version: u64, form: String) {
        match SLOTS.iter().position(|slot| *slot == name) {
            Some(index) => self.slots[index] = Some((version, form)),
            None => {
                self.unknown.insert(name.to_string(), (version, form));
            }
        }
    }

    /// Every slot storage holds: name, version and form.
    fn forms(&self) -> impl Iterator<Item = (&str, u64, &str)> {
        let known = SLOTS.iter().zip(&self.slots);
        let known =
            known.filter_map(|(name, slot)| slot.as_ref().map(|(version, form)| (*name, *version, form.as_str())));
        known.chain(self.unknown.iter().map(|(name, (version, form))| (name.as_str(), *version, form.as_str())))
    }

    /// `{"<slot>":[<version>,<form>],...}`, from forms that are JSON already:
    /// the kept ones, each replaced by its `moved` one where it moved
    /// (`moved` in index order, as [`ChannelState::changed_slots`] gives it).
    fn body(&self, moved: &[(usize, u64, String)]) -> String {
        let mut moved_slots = moved.iter().peekable();
        let known = SLOTS.iter().zip(&self.slots).enumerate().filter_map(|(index, (name, kept))| {
            match moved_slots.next_if(|(at, ..)| *at == index) {
                Some((_, version, form)) => Some((*name, *version, form.as_str())),
                None => kept.as_ref().map(|(version, form)| (*name, *version, form.as_str())),
            }
        });
        let unknown = self.unknown.iter().map(|(name, (version, form))| (name.as_str(), *version, form.as_str()));
        let size = self.forms().map(|(_, _, form)| form.len() + 32).sum::<usize>()
            + moved.iter().map(|(_, _, form)| form.len() + 32).sum::<usize>();
        let mut body = String::with_capacity(size + 2);
        let mut number = itoa::Buffer::new();
        body.push('{');
        for (name, version, form) in known.chain(unknown) {
            if body.len() > 1 {
                body.push(',');
            }
            // A slot's name is a Rust identifier (nothing to escape); one
            // restored from storage that is not goes through serde. Pushed
            // piece by piece: this runs on every inbound, and `write!`'s
            // formatting machinery showed in the ack's CPU profile.
            match name.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'_') {
                true => {
                    body.push('"');
                    body.push_str(name);
                    body.push('"');
                }
                false => body.push_str(&serde_json::Value::from(name).to_string()),
            }
            body.push_str(":[");
            body.push_str(number.format(version));
            body.push(',');
            body.push_str(form);
            body.push(']');
        }
        body.push('}');
        body
    }
}

/// A checkpoint to write: its row's body, and the slots that moved.
#[derive(Debug)]
pub struct Pending {
    pub body: String,
    moved: Vec<(usize, u64, String)>,
}

impl Pending {
    /// Records in `checkpoint` what storage holds now that the row is written
    /// (and any old rows deleted).
    pub fn saved(self, checkpoint: &mut Checkpoint) {
        for (index, version, form) in self.moved {
            checkpoint.slots[index] = Some((version, form));
        }
        checkpoint.legacy = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::{Author, InboundEvent};

    fn held(state: &mut ChannelState, delivery: &str, text: &str) {
        let author = Author { id: "ada".into(), name: "Ada".into(), is_bot: false };
        state.hold(&InboundEvent::plain_text(-5, delivery, author, text), 0);
    }

    fn state_with(text: &str) -> ChannelState {
        let mut state = ChannelState::default();
        held(&mut state, "1", text);
        state
    }

    #[test]
    fn a_state_comes_back_whole_from_its_one_row() {
        let state = state_with("hello");
        let pending = Checkpoint::default().next(&state).unwrap().expect("a new state has moved");
        let body = pending.body.clone();
        let (restored, checkpoint) = Checkpoint::restore([(ROW, 0, body.as_str())]);
        assert_eq!(restored, state);
        let mut saved = Checkpoint::default();
        pending.saved(&mut saved);
        assert_eq!(checkpoint, saved, "storage holds what was written");
        assert!(checkpoint.next(&restored).unwrap().is_none(), "nothing moved since");
    }

    #[test]
    fn only_a_moved_state_writes_and_the_row_keeps_the_slots_that_did_not_move() {
        let state = state_with("one");
        let mut saved = Checkpoint::default();
        Checkpoint::default().next(&state).unwrap().unwrap().saved(&mut saved);
        assert!(saved.next(&state).unwrap().is_none());
        let mut moved = state.clone();
        held(&mut moved, "2", "two");
        let pending = saved.next(&moved).unwrap().expect("the held messages moved");
        let (restored, _) = Checkpoint::restore([(ROW, 0, pending.body.as_str())]);
        assert_eq!(restored, moved);
        assert_ne!(restored, state);
    }

    #[test]
    fn an_old_objects_rows_are_read_and_the_first_checkpoint_replaces_them() {
        let state = state_with("from before");
        let old = state.changed_slots(|_| None).unwrap();
        let rows: Vec<(&str, i64, &str)> =
            old.iter().map(|(index, version, form)| (SLOTS[*index], *version as i64, form.as_str())).collect();
        let (restored, checkpoint) = Checkpoint::restore(rows);
        assert!(checkpoint.legacy(), "the old rows are still there");
        assert_eq!(restored, state);
        assert!(checkpoint.next(&restored).unwrap().is_none(), "restored as stored: nothing moved");
        let mut moved = restored.clone();
        held(&mut moved, "2", "after");
        let pending = checkpoint.next(&moved).unwrap().unwrap();
        let (again, _) = Checkpoint::restore([(ROW, 0, pending.body.as_str())]);
        assert_eq!(again, moved);
        let mut saved = checkpoint;
        pending.saved(&mut saved);
        assert!(!saved.legacy(), "written as one row");
    }

    #[test]
    fn a_slot_name_from_storage_that_needs_escaping_keeps_the_row_readable() {
        let state = state_with("kept");
        let mut saved = Checkpoint::default();
        Checkpoint::default().next(&state).unwrap().unwrap().saved(&mut saved);
        saved.record("odd \"name\"", 3, "[1]".into());
        let mut moved = state.clone();
        held(&mut moved, "2", "moved");
        let body = saved.next(&moved).unwrap().unwrap().body;
        let slots: serde_json::Value = serde_json::from_str(&body).expect("the body is JSON");
        assert_eq!(slots["odd \"name\""], serde_json::json!([3, [1]]));
        assert_eq!(Checkpoint::restore([(ROW, 0, body.as_str())]).0, moved);
    }

    #[test]
    fn an_unreadable_row_starts_the_state_empty() {
        let (state, checkpoint) = Checkpoint::restore([(ROW, 0, "{not json")]);
        assert_eq!(state, ChannelState::default());
        assert!(!checkpoint.legacy());
    }

    #[test]
    fn the_newer_of_the_row_and_the_checkpoint_filed_on_the_inbox_is_restored() {
        let body = |text: &str| Checkpoint::default().next(&state_with(text)).unwrap().unwrap().body;
        let (row, filed) = (body("in the row"), body("filed on the inbox"));
        // The row was written when the inbox's highest seq was 7.
        let (from_filed, _) = Checkpoint::restore_newest(vec![(ROW, 7, row.as_str())], Some((8, filed.as_str())));
        assert_eq!(from_filed, state_with("filed on the inbox"), "an inbound after the row");
        let (from_row, _) = Checkpoint::restore_newest(vec![(ROW, 8, row.as_str())], Some((8, filed.as_str())));
        assert_eq!(from_row, state_with("in the row"), "the row written after that inbound");
        let (only_filed, _) = Checkpoint::restore_newest(Vec::new(), Some((1, filed.as_str())));
        assert_eq!(only_filed, state_with("filed on the inbox"));
        let (only_row, _) = Checkpoint::restore_newest(vec![(ROW, 0, row.as_str())], None);
        assert_eq!(only_row, state_with("in the row"));
        // An old object's rows: the filed checkpoint holds every slot, and they still go on the next save.
        let (state, checkpoint) =
            Checkpoint::restore_newest(vec![("context_buffer", 3, "[]")], Some((2, filed.as_str())));
        assert_eq!(state, state_with("filed on the inbox"));
        assert!(checkpoint.legacy());
    }
}
