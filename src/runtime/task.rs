//! An export's work run as a task of the isolate ([`crate::executor`]): the
//! Worker's `fetch`, a channel object's RPC method.
//!
//! [`now_or_later`] polls the work at once and answers its value when it
//! waited on nothing (an observed inbound in the object: a statement or two,
//! no await), else a promise the task settles. A promise is made only then,
//! with no closure kept: its two functions wait in the task's answer.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use js_sys::{Function, Promise};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use crate::executor;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = queueMicrotask)]
    fn queue_microtask(callback: &Function);
}

thread_local! {
    /// The microtask that runs the tasks woken while one was polled, made once per isolate.
    static RUN_QUEUED: Function =
        Closure::<dyn Fn()>::new(|| executor::run_queued(defer)).into_js_value().unchecked_into();
}

fn defer() {
    RUN_QUEUED.with(queue_microtask);
}

/// Where a task's outcome goes: kept until asked for, or to its promise.
enum Answer {
    Waiting,
    Done(Result<JsValue, JsValue>),
    Promised { resolve: Function, reject: Function },
}

/// Runs `work` as a task: its value when it ends without waiting, else a
/// promise of it, which the runtime awaits the same (an RPC method or a
/// `fetch` handler may answer either).
pub fn now_or_later(work: impl Future<Output = Result<JsValue, JsValue>> + 'static) -> JsValue {
    let answer = Rc::new(RefCell::new(Answer::Waiting));
    let settle = Rc::clone(&answer);
    executor::spawn(
        async move {
            let outcome = work.await;
            let waiting = std::mem::replace(&mut *settle.borrow_mut(), Answer::Waiting);
            match (waiting, outcome) {
                (Answer::Promised { resolve, .. }, Ok(value)) => drop(resolve.call1(&JsValue::NULL, &value)),
                (Answer::Promised { reject, .. }, Err(error)) => drop(reject.call1(&JsValue::NULL, &error)),
                (_, outcome) => *settle.borrow_mut() = Answer::Done(outcome),
            }
        },
        defer,
    );
    let done = std::mem::replace(&mut *answer.borrow_mut(), Answer::Waiting);
    match done {
        Answer::Done(Ok(value)) => value,
        Answer::Done(Err(error)) => Promise::reject(&error).into(),
        _ => Promise::new(&mut |resolve, reject| *answer.borrow_mut() = Answer::Promised { resolve, reject }).into(),
    }
}
