//! Where each awaited promise of the isolate stands, by number: the rules of
//! `runtime::settled`, which binds a promise's callbacks to a number so that
//! no closure is made per await. Plain data, tested natively.

use std::task::Waker;

/// One await.
enum Slot<T> {
    /// Not settled: the waker of its last poll, if polled.
    Waiting(Option<Waker>),
    /// Settled before its await took the outcome.
    Settled(T),
    /// Its await was dropped first: the settling frees it.
    Abandoned,
}

/// The awaits by number, and the numbers free for reuse.
pub struct Awaits<T> {
    slots: Vec<Option<Slot<T>>>,
    free: Vec<u32>,
}

impl<T> Default for Awaits<T> {
    fn default() -> Self {
        Awaits { slots: Vec::new(), free: Vec::new() }
    }
}

impl<T> Awaits<T> {
    /// A number for a new await (a freed one first).
    pub fn begin(&mut self) -> u32 {
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

    /// Its promise settled: the outcome is kept for the await, or the slot
    /// freed if the await is gone. The waker to wake, if one polled.
    pub fn settle(&mut self, number: u32, outcome: T) -> Option<Waker> {
        match self.slots.get_mut(number as usize)?.take() {
            Some(Slot::Waiting(waker)) => {
                self.slots[number as usize] = Some(Slot::Settled(outcome));
                waker
            }
            Some(Slot::Abandoned) => {
                self.release(number);
                None
            }
            // Settled twice, or never begun: a promise settles once, so neither happens.
            other => {
                self.slots[number as usize] = other;
                None
            }
        }
    }

    /// The await polled: its outcome (the slot freed), or None with `waker`
    /// kept to wake (only the last poll's waker is woken, as `Future::poll` asks).
    pub fn poll(&mut self, number: u32, waker: &Waker) -> Option<T> {
        match self.slots[number as usize].take() {
            Some(Slot::Settled(outcome)) => {
                self.release(number);
                Some(outcome)
            }
            _ => {
                self.slots[number as usize] = Some(Slot::Waiting(Some(waker.clone())));
                None
            }
        }
    }

    /// The await dropped before it took an outcome: freed now if settled,
    /// else when its promise settles.
    pub fn abandon(&mut self, number: u32) {
        match self.slots[number as usize] {
            Some(Slot::Settled(_)) => self.release(number),
            _ => self.slots[number as usize] = Some(Slot::Abandoned),
        }
    }

    /// How many numbers are in use.
    pub fn in_use(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    fn release(&mut self, number: u32) {
        self.slots[number as usize] = None;
        self.free.push(number);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    use super::*;

    #[derive(Default)]
    struct Counted(AtomicUsize);

    impl Wake for Counted {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn waker() -> (Arc<Counted>, Waker) {
        let counted = Arc::new(Counted::default());
        (counted.clone(), Waker::from(counted))
    }

    fn woken(counted: &Counted) -> usize {
        counted.0.load(Ordering::SeqCst)
    }

    #[test]
    fn an_outcome_that_came_first_is_taken_at_the_first_poll() {
        let mut awaits = Awaits::default();
        let (counted, waker) = waker();
        let number = awaits.begin();
        assert!(awaits.settle(number, "fulfilled").is_none(), "nothing polled, nothing to wake");
        assert_eq!(awaits.poll(number, &waker), Some("fulfilled"));
        assert_eq!(woken(&counted), 0);
        assert_eq!(awaits.in_use(), 0);
    }

    #[test]
    fn a_waiting_await_gets_the_waker_of_its_last_poll_back() {
        let mut awaits = Awaits::default();
        let ((first, first_waker), (last, last_waker)) = (waker(), waker());
        let number = awaits.begin();
        assert_eq!(awaits.poll(number, &first_waker), None);
        assert_eq!(awaits.poll(number, &last_waker), None);
        awaits.settle(number, "rejected").expect("a waker").wake();
        assert_eq!((woken(&first), woken(&last)), (0, 1));
        assert_eq!(awaits.poll(number, &last_waker), Some("rejected"));
    }

    #[test]
    fn every_number_is_freed_once_and_reused() {
        let mut awaits = Awaits::default();
        let (_, waker) = waker();
        // Taken by a poll: freed then, and the next await gets it.
        let taken = awaits.begin();
        awaits.settle(taken, 1);
        assert_eq!(awaits.poll(taken, &waker), Some(1));
        assert_eq!(awaits.begin(), taken);
        // Dropped while waiting: freed when its promise settles, only then.
        let dropped = taken;
        awaits.abandon(dropped);
        assert_eq!(awaits.in_use(), 1);
        assert!(awaits.settle(dropped, 2).is_none());
        assert_eq!(awaits.in_use(), 0);
        // Dropped after its promise settled, never polled: freed by the drop.
        let unpolled = awaits.begin();
        awaits.settle(unpolled, 3);
        awaits.abandon(unpolled);
        assert_eq!(awaits.in_use(), 0);
        // Numbers in use are never handed out twice.
        let (one, two) = (awaits.begin(), awaits.begin());
        assert_ne!(one, two);
        assert_eq!(awaits.in_use(), 2);
    }

    #[test]
    fn a_second_settling_changes_nothing() {
        let mut awaits = Awaits::default();
        let (_, waker) = waker();
        let number = awaits.begin();
        awaits.settle(number, "first");
        awaits.settle(number, "second");
        assert_eq!(awaits.poll(number, &waker), Some("first"));
    }
}
