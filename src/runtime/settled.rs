//! A runtime promise awaited from Rust: [`settled`].
//!
//! Why not `wasm_bindgen_futures::JsFuture`: it makes two `Closure`s per
//! await, each a boxed Rust closure, a JS wrapper and a `FinalizationRegistry`
//! entry, and destroys both when the promise settles: glue that showed in the
//! ack's CPU profile (`cargo bench --bench cpu`), whose two awaits (the body,
//! the channel object's answer) are all a webhook waits on. Here one pair of
//! functions is made per isolate, and an await binds them to its number: two
//! `bind`s and a `then`, nothing to destroy. The awaiting is the same: the
//! promise's callback stores the outcome and wakes the task that polled last
//! ([`Awaits`] keeps the books, tested natively). Measured: the Worker's JS
//! per ack a sixth lower in every alternating run; the whole within this
//! VM's swing (docs/scale.md, "Fewer promises per inbound").

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use js_sys::{Function, Promise};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use crate::awaits::Awaits;

#[wasm_bindgen]
extern "C" {
    /// A promise, for `then` with plain functions.
    #[wasm_bindgen(js_name = Promise)]
    type Thenable;

    #[wasm_bindgen(method, js_name = then)]
    fn then_both(this: &Thenable, fulfilled: &Function, rejected: &Function);

    /// A callback, for `bind` with its await's number.
    #[wasm_bindgen(js_name = Function)]
    type Callback;

    #[wasm_bindgen(method, js_name = bind)]
    fn bind_number(this: &Callback, context: &JsValue, number: u32) -> Function;
}

thread_local! {
    static AWAITS: RefCell<Awaits<Result<JsValue, JsValue>>> = RefCell::default();
    /// The two callbacks, each `(number, value)`, made once per isolate.
    static CALLBACKS: (Function, Function) = (callback(true), callback(false));
}

fn callback(fulfilled: bool) -> Function {
    let settle = move |number: u32, value: JsValue| {
        let outcome = if fulfilled { Ok(value) } else { Err(value) };
        // Woken after the borrow ends: a wake may poll at once.
        let waker = AWAITS.with(|awaits| awaits.borrow_mut().settle(number, outcome));
        if let Some(waker) = waker {
            waker.wake();
        }
    };
    Closure::<dyn Fn(u32, JsValue)>::new(settle).into_js_value().unchecked_into()
}

/// Awaits `promise`: its value, or what it was rejected with.
pub fn settled(promise: &Promise) -> Settled {
    let number = AWAITS.with(|awaits| awaits.borrow_mut().begin());
    CALLBACKS.with(|(fulfilled, rejected)| {
        let fulfilled = fulfilled.unchecked_ref::<Callback>().bind_number(&JsValue::NULL, number);
        let rejected = rejected.unchecked_ref::<Callback>().bind_number(&JsValue::NULL, number);
        promise.unchecked_ref::<Thenable>().then_both(&fulfilled, &rejected);
    });
    Settled { number, done: false }
}

/// The future of [`settled`].
pub struct Settled {
    number: u32,
    done: bool,
}

impl Future for Settled {
    type Output = Result<JsValue, JsValue>;

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let outcome = AWAITS.with(|awaits| awaits.borrow_mut().poll(self.number, context.waker()));
        match outcome {
            Some(outcome) => {
                self.done = true;
                Poll::Ready(outcome)
            }
            None => Poll::Pending,
        }
    }
}

impl Drop for Settled {
    fn drop(&mut self) {
        if !self.done {
            AWAITS.with(|awaits| awaits.borrow_mut().abandon(self.number));
        }
    }
}
