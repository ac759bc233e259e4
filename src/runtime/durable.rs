//! A Durable Object's requests and storage, counted (src/ops.rs).
//!
//! Requests: each fetch and alarm an object serves is one, and its wall time
//! is summed (duration is billed by wall time while an object is active).
//!
//! SQLite: each statement's rows read and written
//! reach [`crate::ops`] when its cursor is dropped, after the caller has read
//! what it wanted (a cursor's counts grow as it is read).
//!
//! Setting an alarm is billed as a row written, so it is counted here too.
//!
//! clippy.toml disallows the uncounted `SqlStorage::exec` and `set_alarm`;
//! objects reach them through [`MeteredStorage`].
//!
//! An RPC method's answer ([`now_or_later`]): at once when its work waits on
//! nothing, else a promise.

use std::future::Future;
use std::task::{Context, Poll, Waker};

use serde::de::DeserializeOwned;
use wasm_bindgen::JsValue;
use worker::{Result, SqlCursor, SqlStorage, SqlStorageValue, Storage};

use crate::ops::{self, Op};

/// Serves one request (a fetch or an alarm), counted with its wall time.
pub async fn served<T>(work: impl Future<Output = T>) -> T {
    ops::count(Op::DoRequest);
    let started = crate::runtime::http::now_ms();
    let outcome = work.await;
    ops::add(Op::DoRequestMs, (crate::runtime::http::now_ms() - started).max(0) as u64);
    outcome
}

/// Runs `work` at once, as an RPC method of an object: its value when it
/// ends without waiting, else a promise of it, which the runtime awaits the
/// same. An observed inbound (a statement or two, nothing awaited) is spared
/// the promise, its two closures and a microtask of an `async` export.
///
/// The first poll is given a waker that does nothing; a future that waits
/// is then polled by the promise's task with its own, and every future keeps
/// the waker of its latest poll (as [`Future::poll`] asks), so none is lost.
pub fn now_or_later(work: impl Future<Output = Result<JsValue, JsValue>> + 'static) -> JsValue {
    let mut work = Box::pin(work);
    match work.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(Ok(value)) => value,
        Poll::Ready(Err(error)) => js_sys::Promise::reject(&error).into(),
        Poll::Pending => wasm_bindgen_futures::future_to_promise(work).into(),
    }
}

/// An object's SQL storage whose statements are counted.
pub struct Sql(SqlStorage);

/// The statement's results; its rows are counted when it is dropped.
pub struct Cursor(SqlCursor);

/// An object's storage, counted.
#[allow(async_fn_in_trait)] // the Worker is single-threaded: no Send bound wanted
pub trait MeteredStorage {
    fn counted_sql(&self) -> Sql;
    /// Sets the alarm `offset_ms` from now (one row written, as billed).
    async fn set_alarm_counted(&self, offset_ms: i64) -> Result<()>;
}

impl MeteredStorage for Storage {
    fn counted_sql(&self) -> Sql {
        Sql(self.sql())
    }

    #[allow(clippy::disallowed_methods)]
    async fn set_alarm_counted(&self, offset_ms: i64) -> Result<()> {
        ops::count(Op::DoRowWritten);
        self.set_alarm(offset_ms).await
    }
}

impl Sql {
    /// Runs one statement (writes run to completion here).
    #[allow(clippy::disallowed_methods)] // the one place the uncounted call is made
    pub fn exec(&self, query: &str, bindings: impl Into<Option<Vec<SqlStorageValue>>>) -> Result<Cursor> {
        let bindings = bindings.into().unwrap_or_default().into_iter().map(binding).collect::<Vec<_>>();
        self.0.exec_raw(query, bindings).map(Cursor)
    }
}

/// A binding as the runtime takes it. The same values as workers-rs's own
/// conversion, an integer a JS number as there, without the runtime call it
/// makes per integer to see whether it is a safe one (for a debug line): an
/// inbound's row binds six. Past 2^53 an integer loses precision either way.
fn binding(value: SqlStorageValue) -> wasm_bindgen::JsValue {
    match value {
        SqlStorageValue::Integer(integer) => wasm_bindgen::JsValue::from(integer as f64),
        other => other.into(),
    }
}

impl Cursor {
    /// The names of the columns the statement returns.
    pub fn column_names(&self) -> Vec<String> {
        self.0.column_names()
    }

    /// Every row, deserialized.
    pub fn to_array<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        self.0.to_array()
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        ops::add(Op::DoRowRead, self.0.rows_read() as u64);
        ops::add(Op::DoRowWritten, self.0.rows_written() as u64);
    }
}
