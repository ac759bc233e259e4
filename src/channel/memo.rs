//! Rows only a channel object writes, remembered once read. A Durable Object
//! is the one writer of its storage and runs one event at a time, so a row it
//! read stays what storage holds until the object itself writes it: the code
//! that writes such a row puts what it wrote here too, and each read after
//! the first is served from memory (no statement, no row read). A write that
//! fails leaves the copy as it was, as it leaves storage; a restart starts
//! empty. Used for the held row, `history_meta` and the people's sightings
//! (durable_objects/channel_object).

use std::cell::RefCell;
use std::collections::HashMap;

/// Copies of rows by key (a table's row, a person's sighting).
pub struct Memo<V>(RefCell<HashMap<String, V>>);

impl<V> Default for Memo<V> {
    fn default() -> Self {
        Memo(RefCell::default())
    }
}

impl<V: Clone> Memo<V> {
    /// The row under `key`, read by `read` until a read succeeds.
    pub fn get<E>(&self, key: &str, read: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        if let Some(kept) = self.0.borrow().get(key) {
            return Ok(kept.clone());
        }
        let value = read()?;
        self.0.borrow_mut().insert(key.to_string(), value.clone());
        Ok(value)
    }

    /// What the object just wrote under `key`.
    pub fn put(&self, key: &str, value: V) {
        self.0.borrow_mut().insert(key.to_string(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_row_is_read_once_then_served_from_memory_until_written() {
        let memo: Memo<Option<String>> = Memo::default();
        let reads = Cell::new(0);
        let read = || {
            reads.set(reads.get() + 1);
            Ok::<_, ()>(Some("stored".to_string()))
        };
        assert_eq!(memo.get("held", read), Ok(Some("stored".into())));
        assert_eq!(memo.get("held", read), Ok(Some("stored".into())));
        assert_eq!(reads.get(), 1, "the second read comes from memory");
        memo.put("held", Some("written".into()));
        assert_eq!(memo.get("held", read), Ok(Some("written".into())), "what was written, not a stale read");
        assert_eq!(memo.get("other", read), Ok(Some("stored".into())));
        assert_eq!(reads.get(), 2, "each key is read on its own");
    }

    #[test]
    fn a_failed_read_is_not_remembered() {
        let memo: Memo<i64> = Memo::default();
        assert_eq!(memo.get("row", || Err("storage refused")), Err("storage refused"));
        assert_eq!(memo.get("row", || Ok::<_, &str>(7)), Ok(7), "read again after the failure");
        assert_eq!(memo.get("row", || Err("not asked")), Ok(7));
    }
}
