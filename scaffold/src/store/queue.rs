//! The channel from the handles to the writer thread.
//!
//! A bounded multi-producer queue on a `Mutex` and two `Condvar`s, with one
//! difference from `std::sync::mpsc::sync_channel` that matters here: the
//! writer takes *everything* waiting in one lock operation and wakes blocked
//! producers once per take, not once per command. With a full `sync_channel`,
//! every receive woke the producer, which pushed one command and blocked
//! again: a pair of context switches per signal when appends are small.
//! Wake-ups are only issued when someone is actually waiting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

use super::writer::Command;

/// The queue; shared by the store's handles (producers) and its writer.
pub(crate) struct Queue {
    state: Mutex<State>,
    /// The writer waits here for commands.
    not_empty: Condvar,
    /// Producers wait here for room.
    not_full: Condvar,
    capacity: usize,
    /// Commands ever pushed.
    pushed: AtomicU64,
    /// Commands the writer has finished (written and committed, or failed and recorded).
    completed: AtomicU64,
}

struct State {
    items: Vec<Command>,
    /// No more commands are accepted (the handles are gone, or the writer stopped).
    closed: bool,
    writer_waiting: bool,
    producers_waiting: usize,
}

/// The queue is closed: the writer is gone.
pub(crate) struct Closed;

impl Queue {
    /// A queue that holds at most `capacity` commands (at least 1).
    pub(crate) fn new(capacity: usize) -> Queue {
        Queue {
            state: Mutex::new(State {
                items: Vec::new(),
                closed: false,
                writer_waiting: false,
                producers_waiting: 0,
            }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            capacity: capacity.max(1),
            pushed: AtomicU64::new(0),
            completed: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock leaves the state consistent (every
        // update is a single push, swap or flag), so poisoning is ignored.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue a command, waiting while the queue is full.
    pub(crate) fn push(&self, command: Command) -> Result<(), Closed> {
        let mut st = self.lock();
        while st.items.len() >= self.capacity && !st.closed {
            st.producers_waiting += 1;
            st = self.not_full.wait(st).unwrap_or_else(|p| p.into_inner());
            st.producers_waiting -= 1;
        }
        if st.closed {
            return Err(Closed);
        }
        st.items.push(command);
        self.pushed.fetch_add(1, Ordering::SeqCst);
        if st.writer_waiting {
            st.writer_waiting = false;
            self.not_empty.notify_one();
        }
        Ok(())
    }

    /// Take every queued command into `into` (which must be empty), waiting
    /// while there is none. Returns false once the queue is closed and empty.
    pub(crate) fn take_all(&self, into: &mut Vec<Command>) -> bool {
        let mut st = self.lock();
        while st.items.is_empty() {
            if st.closed {
                return false;
            }
            st.writer_waiting = true;
            st = self.not_empty.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        self.hand_over(st, into);
        true
    }

    /// Like [`Queue::take_all`], but waits only until `deadline`: returns
    /// false when the deadline passed with nothing queued, or the queue is
    /// closed and empty.
    pub(crate) fn take_all_until(&self, into: &mut Vec<Command>, deadline: Instant) -> bool {
        let mut st = self.lock();
        while st.items.is_empty() {
            let now = Instant::now();
            if st.closed || now >= deadline {
                st.writer_waiting = false;
                return false;
            }
            st.writer_waiting = true;
            st = self
                .not_empty
                .wait_timeout(st, deadline - now)
                .map(|(st, _)| st)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        self.hand_over(st, into);
        true
    }

    /// Move the queued commands into `into` and wake the producers waiting for room.
    fn hand_over(&self, mut st: MutexGuard<'_, State>, into: &mut Vec<Command>) {
        std::mem::swap(&mut st.items, into);
        if st.producers_waiting > 0 {
            self.not_full.notify_all();
        }
    }

    /// The writer has finished `n` more commands (after committing them and
    /// recording their failures).
    pub(crate) fn completed(&self, n: usize) {
        self.completed.fetch_add(n as u64, Ordering::SeqCst);
    }

    /// Whether every command pushed so far is finished, so that a flush has
    /// nothing to wait for.
    pub(crate) fn is_idle(&self) -> bool {
        self.completed.load(Ordering::SeqCst) == self.pushed.load(Ordering::SeqCst)
    }

    /// Whether the queue accepts no more commands.
    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Accept no more commands; the writer finishes what is queued. Wakes everyone.
    pub(crate) fn close(&self) {
        let mut st = self.lock();
        st.closed = true;
        st.writer_waiting = false;
        self.not_empty.notify_all();
        self.not_full.notify_all();
    }
}

/// Closes the queue when the writer thread ends, even by a panic, and drops
/// what is left in it, so that producers blocked on a full queue and callers
/// waiting for a reply (flush, reads, deletes) are released with an error.
pub(crate) struct CloseOnDrop<'a>(pub(crate) &'a Queue);

impl Drop for CloseOnDrop<'_> {
    fn drop(&mut self) {
        let left = {
            let mut st = self.0.lock();
            st.closed = true;
            std::mem::take(&mut st.items)
        };
        self.0.not_empty.notify_all();
        self.0.not_full.notify_all();
        drop(left);
    }
}
