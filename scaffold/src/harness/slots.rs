//! How many cells run their workflow at once, apart from how many test
//! threads libtest has.
//!
//! A cell's test ends when its record is in the store: a run killed after
//! the test reported resumes past the cell. That wait (the store's writer
//! committing the record) is short, but in a live run it comes right after
//! a wave of answers, when every cell of the wave asks for the CPUs at
//! once, and while a cell waits, the next call its thread would make
//! waits too. So in live and record runs libtest gets more threads than
//! `--test-threads`, and each cell takes one of `--test-threads` slots while
//! its workflow runs (its calls made): the slot goes to the next cell as
//! soon as the workflow ends, while the cell checks its snapshot and waits
//! for its record. At most `--test-threads` workflows run at once, as
//! before; cells take the slots in the order they ask for them. A cell
//! that starts while the record of one before it is being committed may
//! start before that commit fails: a store error stops at most the waiting
//! threads' cells more than it did.

use std::sync::{Condvar, Mutex, PoisonError};

use crate::provider::recorder::RecorderMode;

/// One test thread more for this many slots, for the cells that finished
/// their workflow and wait for their records: at concurrency 32, 8 more
/// threads (a live run's wave of answers arrives within a few
/// milliseconds, and a record waits about one).
const SLOTS_PER_WAITING_THREAD: usize = 4;

/// The slots of a run: a first-come, first-served count of the cells whose
/// workflow runs.
#[derive(Debug)]
pub(super) struct Slots {
    /// How many workflows run at once; none for no limit beyond libtest's.
    capacity: Option<u64>,
    tickets: Mutex<Tickets>,
    freed: Condvar,
}

/// Slots are taken in the order asked for: the `n`th taker (from 0) runs
/// once `n < capacity + released`.
#[derive(Debug, Default)]
struct Tickets {
    next: u64,
    released: u64,
}

impl Slots {
    /// For a run in `mode` with `test_threads` cells at once: slots in
    /// live and record runs of several threads (one thread runs the cells
    /// one by one, playback's cells wait on the CPUs rather than the
    /// network), `running` the cells that run (no thread more than the
    /// cells beyond the slots). Returns the slots and the test threads
    /// libtest gets.
    pub(super) fn for_run(
        mode: RecorderMode,
        test_threads: usize,
        running: usize,
    ) -> (Slots, usize) {
        let waiting = running
            .saturating_sub(test_threads)
            .min(test_threads.div_ceil(SLOTS_PER_WAITING_THREAD));
        if mode == RecorderMode::Playback || test_threads < 2 || waiting == 0 {
            return (Slots::unlimited(), test_threads);
        }
        let slots = Slots {
            capacity: Some(test_threads as u64),
            tickets: Mutex::default(),
            freed: Condvar::new(),
        };
        (slots, test_threads + waiting)
    }

    /// No limit: every test thread runs its cell's workflow at once.
    pub(super) fn unlimited() -> Slots {
        Slots {
            capacity: None,
            tickets: Mutex::default(),
            freed: Condvar::new(),
        }
    }

    /// Wait for a slot, after every cell that asked before.
    pub(super) fn take(&self) -> Slot<'_> {
        let Some(capacity) = self.capacity else {
            return Slot { slots: None };
        };
        let mut tickets = self.tickets.lock().unwrap_or_else(PoisonError::into_inner);
        let ticket = tickets.next;
        tickets.next += 1;
        while ticket >= capacity + tickets.released {
            tickets = self
                .freed
                .wait(tickets)
                .unwrap_or_else(PoisonError::into_inner);
        }
        Slot { slots: Some(self) }
    }

    fn release(&self) {
        let mut tickets = self.tickets.lock().unwrap_or_else(PoisonError::into_inner);
        tickets.released += 1;
        drop(tickets);
        self.freed.notify_all();
    }
}

/// A slot taken: the next cell may have it once this is dropped.
#[derive(Debug)]
pub(super) struct Slot<'a> {
    slots: Option<&'a Slots>,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Some(slots) = self.slots {
            slots.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use super::*;

    impl Slots {
        /// The cells that asked for a slot so far.
        fn asked(&self) -> u64 {
            self.tickets.lock().unwrap().next
        }
    }

    #[test]
    fn live_and_record_runs_get_threads_beyond_their_slots_and_playback_none() {
        let capacity = |(slots, threads): (Slots, usize)| (slots.capacity, threads);
        // Concurrency 32 over 200 cells: 32 slots, 8 threads more.
        assert_eq!(
            capacity(Slots::for_run(RecorderMode::Live, 32, 200)),
            (Some(32), 40)
        );
        assert_eq!(
            capacity(Slots::for_run(RecorderMode::Record, 3, 8)),
            (Some(3), 4)
        );
        // No more threads than there are tests beyond the slots.
        assert_eq!(
            capacity(Slots::for_run(RecorderMode::Live, 32, 34)),
            (Some(32), 34)
        );
        // Every cell has a thread of its own: no slots.
        assert_eq!(
            capacity(Slots::for_run(RecorderMode::Live, 32, 32)),
            (None, 32)
        );
        // One thread runs the cells one by one on the main thread.
        assert_eq!(
            capacity(Slots::for_run(RecorderMode::Live, 1, 100)),
            (None, 1)
        );
        assert_eq!(
            capacity(Slots::for_run(RecorderMode::Playback, 16, 10_000)),
            (None, 16)
        );
    }

    #[test]
    fn no_more_cells_than_the_slots_run_at_once() {
        let (slots, threads) = Slots::for_run(RecorderMode::Live, 2, 8);
        assert_eq!(threads, 3);
        let running = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    let _slot = slots.take();
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    running.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        let most = most.load(Ordering::SeqCst);
        assert!((1..=2).contains(&most), "{most} at once");
        assert_eq!(slots.asked(), 8);
    }

    #[test]
    fn a_freed_slot_goes_to_the_cell_that_asked_first() {
        let (slots, _) = Slots::for_run(RecorderMode::Live, 2, 8);
        let first = slots.take();
        let second = slots.take();
        let order = Mutex::new(Vec::new());
        let wait_for = |asked: u64| {
            let start = Instant::now();
            while slots.asked() < asked {
                assert!(start.elapsed() < Duration::from_secs(10), "no one asked");
                std::thread::yield_now();
            }
        };
        std::thread::scope(|scope| {
            for (name, asked) in [("b", 3), ("c", 4)] {
                let (slots, order) = (&slots, &order);
                scope.spawn(move || {
                    let _slot = slots.take();
                    order.lock().unwrap().push(name);
                    // Holds its slot: the other waits for the next one.
                    std::thread::sleep(Duration::from_millis(10));
                });
                wait_for(asked);
            }
            assert!(order.lock().unwrap().is_empty(), "both slots are taken");
            drop(first);
        });
        drop(second);
        assert_eq!(*order.lock().unwrap(), ["b", "c"]);
        // Unlimited slots never wait.
        let unlimited = Slots::unlimited();
        let _all: Vec<Slot<'_>> = (0..100).map(|_| unlimited.take()).collect();
    }
}
