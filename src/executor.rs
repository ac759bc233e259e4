//! The isolate's tasks: the futures its hot exports run (a request to the
//! Worker, an RPC call to a channel object), polled at once when started and
//! again at once when woken. Plain Rust, tested natively; `runtime::task`
//! gives it the runtime's microtask queue.
//!
//! Why not `wasm_bindgen_futures::spawn_local`: it polls a task only from a
//! microtask it queues, on its start and on every wake-up, so a webhook (a
//! start and two wake-ups: its body, the object's answer) made three
//! `queueMicrotask` calls, each through a closure's JS wrapper, and the
//! front export also made a promise and two more closures per request. A
//! wake-up comes from a promise's callback, which the runtime calls with no
//! Rust on the stack, so the task can be polled right there.
//!
//! What keeps that safe: a task is polled only when no other is being
//! polled. A wake-up that comes while one is (a task waking itself or
//! another) queues its task, and the queue is run by a microtask, as
//! `spawn_local` does. One run polls the tasks queued when it began, so a
//! task that keeps waking itself yields to the runtime between polls.
//! The books hold no borrow while a task is polled or dropped, so a poll
//! may wake anything. A stale waker (its task finished, its number reused)
//! wakes nothing: each start takes a new generation.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Wake, Waker};

type Work = Pin<Box<dyn Future<Output = ()>>>;

/// Queues a call of [`run_queued`] as a microtask (the runtime's
/// `queueMicrotask`; a test's own queue).
pub type Defer = fn();

/// One task by number.
enum Slot {
    /// Waiting to be polled, with the waker its polls are given.
    Idle(Work, Waker),
    /// Being polled: its work is out of the books.
    Polled,
    /// Finished; the number is free.
    Free,
}

struct Entry {
    slot: Slot,
    generation: u64,
    queued: bool,
}

#[derive(Default)]
struct Tasks {
    entries: Vec<Entry>,
    free: Vec<usize>,
    queue: VecDeque<usize>,
    /// A task is being polled (or a run is under way).
    running: bool,
    /// A microtask to run the queue is already asked for.
    deferred: bool,
    generations: u64,
}

thread_local! {
    static TASKS: RefCell<Tasks> = RefCell::default();
}

/// A task's waker: its number and generation (no pointer into the books,
/// so it is `Send` and `Sync` as `Waker` asks, with no unsafe code).
struct Wakeup {
    number: usize,
    generation: u64,
    defer: Defer,
}

impl Wake for Wakeup {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let now = TASKS.with(|tasks| tasks.borrow_mut().enqueue(self.number, self.generation, self.defer));
        if now {
            run(self.defer);
        }
    }
}

impl Tasks {
    /// Files a new task and queues it; its number.
    fn file(&mut self, work: Work, defer: Defer) -> usize {
        self.generations += 1;
        let generation = self.generations;
        let number = self.free.pop().unwrap_or(self.entries.len());
        let waker = Waker::from(Arc::new(Wakeup { number, generation, defer }));
        let entry = Entry { slot: Slot::Idle(work, waker), generation, queued: true };
        match self.entries.get_mut(number) {
            Some(free) => *free = entry,
            None => self.entries.push(entry),
        }
        self.queue.push_back(number);
        number
    }

    /// Queues a woken task; whether the caller should run the queue now
    /// (nothing is being polled), else a microtask will.
    fn enqueue(&mut self, number: usize, generation: u64, defer: Defer) -> bool {
        let Some(entry) = self.entries.get_mut(number).filter(|entry| entry.generation == generation) else {
            return false;
        };
        if matches!(entry.slot, Slot::Free) || entry.queued {
            return false;
        }
        entry.queued = true;
        self.queue.push_back(number);
        self.run_now_or_defer(defer)
    }

    fn run_now_or_defer(&mut self, defer: Defer) -> bool {
        if !self.running {
            return true;
        }
        if !self.deferred {
            self.deferred = true;
            defer();
        }
        false
    }

    /// The next queued task's work, taken out of the books to be polled.
    fn next(&mut self) -> Option<(usize, Work, Waker)> {
        while let Some(number) = self.queue.pop_front() {
            let entry = &mut self.entries[number];
            entry.queued = false;
            if let Slot::Idle(work, waker) = std::mem::replace(&mut entry.slot, Slot::Polled) {
                return Some((number, work, waker));
            }
        }
        None
    }

    /// A polled task's work back in the books, or its number freed.
    fn polled(&mut self, number: usize, work: Option<(Work, Waker)>) {
        let entry = &mut self.entries[number];
        match work {
            Some((work, waker)) => entry.slot = Slot::Idle(work, waker),
            None => {
                entry.slot = Slot::Free;
                // Woken in its last poll: no later task may inherit the wake-up.
                if std::mem::take(&mut entry.queued) {
                    self.queue.retain(|queued| *queued != number);
                }
                self.free.push(number);
            }
        }
    }
}

/// Starts `work`: polled now unless a task is being polled (then by a
/// microtask). Whatever it yields it hands over itself (`runtime::task`).
pub fn spawn(work: impl Future<Output = ()> + 'static, defer: Defer) {
    let now = TASKS.with(|tasks| {
        let mut tasks = tasks.borrow_mut();
        tasks.file(Box::pin(work), defer);
        tasks.run_now_or_defer(defer)
    });
    if now {
        run(defer);
    }
}

/// The microtask [`Defer`] queues: runs what waits, unless a run is under way
/// (which then runs it, or asks again).
pub fn run_queued(defer: Defer) {
    let now = TASKS.with(|tasks| {
        let mut tasks = tasks.borrow_mut();
        tasks.deferred = false;
        !tasks.running && !tasks.queue.is_empty()
    });
    if now {
        run(defer);
    }
}

/// Polls the tasks queued now, each once; any queued meanwhile wait for a microtask.
fn run(defer: Defer) {
    let mut left = TASKS.with(|tasks| {
        let mut tasks = tasks.borrow_mut();
        tasks.running = true;
        tasks.queue.len()
    });
    while left > 0 {
        left -= 1;
        let Some((number, mut work, waker)) = TASKS.with(|tasks| tasks.borrow_mut().next()) else {
            break;
        };
        let pending = work.as_mut().poll(&mut Context::from_waker(&waker)).is_pending();
        // Dropped here, outside the books: a finished task's drop may wake another.
        let back = pending.then_some((work, waker));
        TASKS.with(|tasks| tasks.borrow_mut().polled(number, back));
    }
    TASKS.with(|tasks| {
        let mut tasks = tasks.borrow_mut();
        tasks.running = false;
        if !tasks.queue.is_empty() && !tasks.deferred {
            tasks.deferred = true;
            defer();
        }
    });
}

/// How many tasks are filed and not finished.
pub fn live() -> usize {
    TASKS.with(|tasks| {
        let tasks = tasks.borrow();
        tasks.entries.len() - tasks.free.len()
    })
}

#[cfg(test)]
mod tests {
    use std::cell::{Cell, RefCell};
    use std::future::poll_fn;
    use std::rc::Rc;
    use std::task::Poll;

    use super::*;

    thread_local! {
        /// Microtasks asked for and not yet run (each test runs on its own thread).
        static MICROTASKS: Cell<usize> = const { Cell::new(0) };
    }

    fn defer() {
        MICROTASKS.with(|asked| asked.set(asked.get() + 1));
    }

    /// Runs the microtasks asked for, as the runtime would; how many ran.
    fn microtasks() -> usize {
        let mut ran = 0;
        while MICROTASKS.with(|asked| asked.replace(0)) > 0 {
            ran += 1;
            run_queued(defer);
        }
        ran
    }

    /// A promise the test settles by hand: the waker of the last poll is kept.
    #[derive(Default)]
    struct Gate {
        open: Cell<bool>,
        waker: RefCell<Option<Waker>>,
    }

    impl Gate {
        async fn wait(&self) {
            poll_fn(|context| match self.open.get() {
                true => Poll::Ready(()),
                false => {
                    *self.waker.borrow_mut() = Some(context.waker().clone());
                    Poll::Pending
                }
            })
            .await
        }

        /// As a promise's callback: with no task being polled.
        fn open(&self) {
            self.open.set(true);
            if let Some(waker) = self.waker.borrow_mut().take() {
                waker.wake();
            }
        }
    }

    #[test]
    fn a_task_runs_at_once_and_again_at_once_when_woken() {
        let gate = Rc::new(Gate::default());
        let steps = Rc::new(Cell::new(0));
        let (task_gate, task_steps) = (gate.clone(), steps.clone());
        spawn(
            async move {
                task_steps.set(1);
                task_gate.wait().await;
                task_steps.set(2);
            },
            defer,
        );
        assert_eq!(steps.get(), 1, "polled when started");
        assert_eq!(live(), 1);
        gate.open();
        assert_eq!(steps.get(), 2, "polled in the wake-up itself");
        assert_eq!(live(), 0, "finished and freed");
        assert_eq!(microtasks(), 0, "no microtask was asked for");
    }

    #[test]
    fn a_wake_up_while_a_task_is_polled_waits_for_a_microtask() {
        let gate = Rc::new(Gate::default());
        let woke_other = Rc::new(Cell::new(false));
        let (other_gate, flag) = (gate.clone(), woke_other.clone());
        spawn(async move { other_gate.wait().await }, defer);
        let opener = gate.clone();
        spawn(
            async move {
                // Woken from inside this poll: the other task must not run in it.
                opener.open();
                flag.set(live() == 2);
            },
            defer,
        );
        assert!(woke_other.get(), "the woken task was still waiting when the waker returned");
        assert_eq!(live(), 1);
        assert_eq!(microtasks(), 1);
        assert_eq!(live(), 0, "the microtask ran it");
    }

    #[test]
    fn a_task_that_keeps_waking_itself_yields_between_polls() {
        let polls = Rc::new(Cell::new(0));
        let counted = polls.clone();
        spawn(
            poll_fn(move |context| {
                counted.set(counted.get() + 1);
                match counted.get() {
                    3 => Poll::Ready(()),
                    _ => {
                        context.waker().wake_by_ref();
                        Poll::Pending
                    }
                }
            }),
            defer,
        );
        assert_eq!(polls.get(), 1, "one poll, then back to the runtime");
        assert_eq!(microtasks(), 2);
        assert_eq!(polls.get(), 3);
        assert_eq!(live(), 0);
    }

    #[test]
    fn a_stale_waker_wakes_nothing() {
        let gate = Rc::new(Gate::default());
        let kept = Rc::new(RefCell::new(None::<Waker>));
        let (first_gate, first_kept) = (gate.clone(), kept.clone());
        spawn(
            async move {
                poll_fn(|context| {
                    *first_kept.borrow_mut() = Some(context.waker().clone());
                    Poll::Ready(())
                })
                .await;
                first_gate.wait().await;
            },
            defer,
        );
        gate.open();
        assert_eq!(live(), 0);
        // A new task takes the freed number; the first task's waker must not poll it.
        let polls = Rc::new(Cell::new(0));
        let counted = polls.clone();
        spawn(
            poll_fn(move |_| {
                counted.set(counted.get() + 1);
                Poll::<()>::Pending
            }),
            defer,
        );
        kept.borrow_mut().take().unwrap().wake();
        assert_eq!(polls.get(), 1, "the stale waker polled nothing");
        TASKS.with(|tasks| assert_eq!(tasks.borrow().entries.len(), 1, "the number was reused"));
    }

    #[test]
    fn a_task_started_inside_a_poll_runs_from_a_microtask() {
        let started = Rc::new(Cell::new(false));
        let flag = started.clone();
        spawn(
            async move {
                let inner = flag.clone();
                spawn(async move { inner.set(true) }, defer);
                assert!(!flag.get(), "not run inside the poll that started it");
            },
            defer,
        );
        assert!(!started.get());
        assert_eq!(microtasks(), 1);
        assert!(started.get());
        assert_eq!(live(), 0);
    }
}
