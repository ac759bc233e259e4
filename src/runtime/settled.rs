//! A runtime promise awaited from Rust: [`settled`].
//!
//! Why not `wasm_bindgen_futures::JsFuture`: it makes two `Closure`s per
//! await, each a boxed Rust closure, a JS wrapper and a `FinalizationRegistry`
//! entry, and destroys both when the promise settles. In the ack's CPU profile
//! (`cargo bench --bench cpu`) that glue was a tenth of the Worker's own CPU
//! per inbound, whose two awaits (the body, the channel object's answer) are
//! all it waits on. Here one pair of functions is made per isolate, and an
//! await only binds them to its slot: two `bind`s and a `then`, nothing to
//! destroy. The awaiting itself is the same: the promise's callback stores the
//! outcome and wakes the task that polled last.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use js_sys::{Function, Promise};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

#[wasm_bindgen]
extern "C" {
    /// A promise, for `then` with plain functions.
    #[wasm_bindgen(js_name = Promise)]
    type Thenable;

    #[wasm_bindgen(method, js_name = then)]
    fn then_both(this: &Thenable, fulfilled: &Function, rejected: &Function);

    /// A callback, for `bind` with its slot number.
    #[wasm_bindgen(js_name = Function)]
    type Callback;

    #[wasm_bindgen(method, js_name = bind)]
    fn bind_slot(this: &Callback, context: &JsValue, slot: u32) -> Function;
}

/// Where one await stands.
enum Slot {
    /// Not settled yet: the waker of the last poll, if polled.
    Waiting(Option<Waker>),
    /// Settled before the await took it.
    Settled(Result<JsValue, JsValue>),
    /// Its await was dropped first: the settling frees it.
    Abandoned,
}

/// The isolate's awaits by slot number, and the numbers free for reuse.
#[derive(Default)]
struct Slots {
    slots: Vec<Option<Slot>>,
    free: Vec<u32>,
}

impl Slots {
    fn take(&mut self) -> u32 {
        match self.free.pop() {
            Some(number) => {
                self.slots[number as usize] = Some(Slot::Waiting(None));
                number
            }
            None => {
                self.slots.push(Some(Slot::Waiting(None)));
                (self.slots.len() - 1) as u32
            }
        }
    }

    fn release(&mut self, number: u32) {
        self.slots[number as usize] = None;
        self.free.push(number);
    }
}

thread_local! {
    static SLOTS: RefCell<Slots> = RefCell::default();
    /// The two callbacks, each `(slot, value)`, made once per isolate.
    static CALLBACKS: (Function, Function) = (callback(true), callback(false));
}

fn callback(fulfilled: bool) -> Function {
    let settle = move |number: u32, value: JsValue| settle(number, if fulfilled { Ok(value) } else { Err(value) });
    Closure::<dyn Fn(u32, JsValue)>::new(settle).into_js_value().unchecked_into()
}

/// A promise's outcome stored in its slot, and its task woken.
fn settle(number: u32, outcome: Result<JsValue, JsValue>) {
    let waker = SLOTS.with(|slots| {
        let mut slots = slots.borrow_mut();
        match slots.slots.get_mut(number as usize) {
            Some(Some(Slot::Waiting(waker))) => {
                let waker = waker.take();
                slots.slots[number as usize] = Some(Slot::Settled(outcome));
                waker
            }
            Some(Some(Slot::Abandoned)) => {
                slots.release(number);
                None
            }
            _ => None,
        }
    });
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// Awaits `promise`: its value, or what it was rejected with.
pub fn settled(promise: &Promise) -> Settled {
    let number = SLOTS.with(|slots| slots.borrow_mut().take());
    CALLBACKS.with(|(fulfilled, rejected)| {
        let fulfilled = fulfilled.unchecked_ref::<Callback>().bind_slot(&JsValue::NULL, number);
        let rejected = rejected.unchecked_ref::<Callback>().bind_slot(&JsValue::NULL, number);
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
        let number = self.number;
        let outcome = SLOTS.with(|slots| {
            let mut slots = slots.borrow_mut();
            match slots.slots[number as usize].take() {
                Some(Slot::Settled(outcome)) => {
                    slots.release(number);
                    Some(outcome)
                }
                _ => {
                    slots.slots[number as usize] = Some(Slot::Waiting(Some(context.waker().clone())));
                    None
                }
            }
        });
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
        if self.done {
            return;
        }
        SLOTS.with(|slots| {
            let mut slots = slots.borrow_mut();
            match slots.slots[self.number as usize] {
                Some(Slot::Settled(_)) => slots.release(self.number),
                _ => slots.slots[self.number as usize] = Some(Slot::Abandoned),
            }
        });
    }
}
