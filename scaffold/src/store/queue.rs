//! The channel from the handles to the writer thread.
//!
//! A bounded multi-producer queue on a `Mutex` and two `Condvar`s, with one
//! difference from `std::sync::mpsc::sync_channel` that matters here: the
//! writer takes *everything* waiting in one lock operation and wakes blocked
//! producers once per take, not once per command. With a full `sync_channel`,
//! every receive woke the producer, which pushed one command and blocked
//! again: a pair of context switches per signal when appends are small.
//! Wake-ups are only issued when someone is actually waiting, and a writer
//! lingering over a batch nobody waits for is woken only by a command that
//! cannot wait (a durable write, a barrier) or a queue half full: a cell's
//! signals, begin and end, pushed between its steps, would otherwise wake
//! it once each for nothing.

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
    /// The waiting writer lingers: only a command that cannot wait wakes it.
    writer_lingers: bool,
    /// A command that cannot wait (a durable write, a barrier) is queued.
    urgent_queued: bool,
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
                writer_lingers: false,
                urgent_queued: false,
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
        st.urgent_queued |= command.waited_for() || command.is_barrier();
        st.items.push(command);
        self.pushed.fetch_add(1, Ordering::SeqCst);
        if st.writer_waiting && (!st.writer_lingers || self.urgent(&st)) {
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
            st.writer_lingers = false;
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
            st.writer_lingers = false;
            st = self
                .not_empty
                .wait_timeout(st, deadline - now)
                .map(|(st, _)| st)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        self.hand_over(st, into);
        true
    }

    /// Like [`Queue::take_all_until`], for a writer lingering over a batch
    /// nobody waits for: commands that can wait are left queued until the
    /// deadline, unless one that cannot comes (a durable write, a barrier)
    /// or the queue is half full.
    pub(crate) fn take_lingering_until(&self, into: &mut Vec<Command>, deadline: Instant) -> bool {
        let mut st = self.lock();
        while !st.closed && !self.urgent(&st) {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            st.writer_waiting = true;
            st.writer_lingers = true;
            st = self
                .not_empty
                .wait_timeout(st, deadline - now)
                .map(|(st, _)| st)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        st.writer_waiting = false;
        st.writer_lingers = false;
        if st.items.is_empty() {
            return false;
        }
        self.hand_over(st, into);
        true
    }

    /// Whether what is queued must reach a lingering writer now: a command
    /// that cannot wait, or a queue half full.
    fn urgent(&self, st: &State) -> bool {
        st.urgent_queued || st.items.len() >= self.capacity.div_ceil(2)
    }

    /// Move the queued commands into `into` and wake the producers waiting for room.
    fn hand_over(&self, mut st: MutexGuard<'_, State>, into: &mut Vec<Command>) {
        std::mem::swap(&mut st.items, into);
        st.urgent_queued = false;
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

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;
    use crate::store::writer::Rows;

    fn signals() -> Command {
        Command::Append(Rows::new("s", &[]).expect("no signals to serialize"))
    }

    /// A lingering writer sleeps through a session's signals and wakes for
    /// the flush (or durable write) that cannot wait, long before its deadline.
    #[test]
    fn a_lingering_writer_wakes_only_for_what_cannot_wait() {
        let queue = std::sync::Arc::new(Queue::new(8));
        let (took, taken) = mpsc::channel();
        let writer = {
            let queue = queue.clone();
            std::thread::spawn(move || {
                let mut into = Vec::new();
                let got =
                    queue.take_lingering_until(&mut into, Instant::now() + Duration::from_secs(60));
                took.send((got, into.len())).unwrap();
            })
        };
        while !queue.lock().writer_waiting {
            std::thread::yield_now();
        }
        queue.push(signals()).ok().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(taken.try_recv().is_err(), "woken by a write that can wait");
        let (reply, _replied) = mpsc::channel();
        queue.push(Command::Flush(reply)).ok().unwrap();
        assert_eq!(taken.recv_timeout(Duration::from_secs(30)), Ok((true, 2)));
        writer.join().unwrap();
    }

    /// Half a queue of writes that can wait wakes it too (its producers
    /// would soon block), and the deadline ends the linger with what came.
    #[test]
    fn a_half_full_queue_or_the_deadline_ends_the_linger() {
        let queue = Queue::new(4);
        queue.push(signals()).ok().unwrap();
        queue.push(signals()).ok().unwrap();
        let mut into = Vec::new();
        let far = Instant::now() + Duration::from_secs(60);
        assert!(queue.take_lingering_until(&mut into, far));
        assert_eq!(into.len(), 2);
        into.clear();
        queue.push(signals()).ok().unwrap();
        assert!(queue.take_lingering_until(&mut into, Instant::now() + Duration::from_millis(20)));
        assert_eq!(into.len(), 1);
        into.clear();
        assert!(!queue.take_lingering_until(&mut into, Instant::now() + Duration::from_millis(20)));
    }
}
