//! Rows only this object writes, remembered once read. A Durable Object is
//! the one writer of its storage and runs one event at a time, so a row it
//! read stays what storage holds until the object itself writes it: the
//! writers below put what they wrote here too, and each read after the first
//! is served from memory (no statement, no row read). A write that fails
//! leaves the copy as it was, as it leaves storage; a restart starts empty.

use std::cell::RefCell;
use std::collections::HashMap;

use worker::Result;

/// Copies of rows by key (a table's row, a person's sighting).
pub struct Memo<V>(RefCell<HashMap<String, V>>);

impl<V> Default for Memo<V> {
    fn default() -> Self {
        Memo(RefCell::default())
    }
}

impl<V: Clone> Memo<V> {
    /// The row under `key`, read by `read` the first time only.
    pub fn get(&self, key: &str, read: impl FnOnce() -> Result<V>) -> Result<V> {
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
