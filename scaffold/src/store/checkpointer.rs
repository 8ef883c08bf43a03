//! The WAL's large checkpoints, off the writer's thread.
//!
//! A checkpoint syncs the WAL, copies its pages into the database and syncs
//! the database: at the 4,000 frames a file store checkpointed at, some
//! 10–20 ms, most of it waiting for the disk. Run by the
//! writer, it held up every cell waiting for its record meanwhile (a
//! played-back run stalled about a tenth of its time so). A file store's
//! writer hands it to this thread instead, whose connection of its own
//! checkpoints passively (the writer goes on committing); once it is done,
//! the writer checkpoints the few frames it committed meanwhile itself, so
//! that the WAL starts again from its beginning rather than growing.
//!
//! The thread and its connection start with the first checkpoint asked for:
//! a short run never has one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::configure;

/// Nothing asked for, or what was asked for is done and seen.
const IDLE: u8 = 0;
/// A checkpoint is asked for or running.
const RUNNING: u8 = 1;
/// A checkpoint finished; the writer has not caught up yet.
const FINISHED: u8 = 2;

/// Checkpoints a file store's WAL on a thread of its own (see the module).
pub(crate) struct Checkpointer {
    file: PathBuf,
    busy_timeout: Duration,
    thread: Background,
}

/// The checkpointer's thread.
enum Background {
    /// Not started yet: no checkpoint was asked for.
    NotYet,
    Running(Thread),
    /// It could not start, or stopped: the writer checkpoints itself.
    Unavailable,
}

/// The running thread.
struct Thread {
    /// Asks for a checkpoint; dropped to stop the thread.
    ask: Option<SyncSender<()>>,
    state: Arc<AtomicU8>,
    handle: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// A checkpointer for the database `file`; nothing starts yet.
    pub(crate) fn new(file: &Path, busy_timeout: Duration) -> Checkpointer {
        Checkpointer {
            file: file.to_path_buf(),
            busy_timeout,
            thread: Background::NotYet,
        }
    }

    /// Ask for a checkpoint in the background: `false` when none can run
    /// there (the thread or its connection could not start, or it stopped),
    /// and the caller checkpoints itself. One already asked for counts as
    /// asked.
    pub(crate) fn ask(&mut self) -> bool {
        if let Background::NotYet = self.thread {
            self.thread = Thread::start(&self.file, self.busy_timeout)
                .map_or(Background::Unavailable, Background::Running);
        }
        let Background::Running(thread) = &self.thread else {
            return false;
        };
        if thread
            .state
            .compare_exchange(IDLE, RUNNING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return true;
        }
        match thread.ask.as_ref().map(|ask| ask.try_send(())) {
            Some(Ok(()) | Err(TrySendError::Full(()))) => true,
            _ => {
                self.thread = Background::Unavailable;
                false
            }
        }
    }

    fn running(&self) -> Option<&Thread> {
        match &self.thread {
            Background::Running(thread) => Some(thread),
            Background::NotYet | Background::Unavailable => None,
        }
    }

    /// Whether a checkpoint finished and [`Checkpointer::take_finished`]
    /// has not said so yet.
    #[cfg(test)]
    pub(crate) fn finished(&self) -> bool {
        (self.running()).is_some_and(|t| t.state.load(Ordering::Acquire) == FINISHED)
    }

    /// Whether a checkpoint finished since the last call said so.
    pub(crate) fn take_finished(&self) -> bool {
        self.running().is_some_and(|t| {
            t.state
                .compare_exchange(FINISHED, IDLE, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        })
    }
}

impl Thread {
    /// The thread with its connection, or `None` when either cannot start.
    fn start(file: &Path, busy_timeout: Duration) -> Option<Thread> {
        let name = file.display().to_string();
        let conn = Connection::open_with_flags(
            file,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .ok()?;
        // The writer's settings: `synchronous = NORMAL` is what makes a
        // checkpoint sync the WAL before it copies and the database after.
        configure(&conn, &name, true, busy_timeout).ok()?;
        let (ask, asked) = mpsc::sync_channel(1);
        let state = Arc::new(AtomicU8::new(IDLE));
        let handle = std::thread::Builder::new()
            .name("scaffold-store-checkpoint".into())
            .spawn({
                let state = Arc::clone(&state);
                move || serve(&conn, &asked, &state)
            })
            .ok()?;
        Some(Thread {
            ask: Some(ask),
            state,
            handle: Some(handle),
        })
    }
}

/// Checkpoint once for each request until the asking side goes.
fn serve(conn: &Connection, asked: &Receiver<()>, state: &AtomicU8) {
    while asked.recv().is_ok() {
        // Passive: it copies what no reader still needs and never waits;
        // a failure leaves the work to the next checkpoint.
        let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        state.store(FINISHED, Ordering::Release);
    }
}

impl Drop for Thread {
    fn drop(&mut self) {
        // No more requests: the thread ends after the checkpoint in hand,
        // and its connection closes before the writer's does.
        self.ask = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpointer_that_cannot_start_leaves_every_checkpoint_to_the_writer() {
        let missing = std::env::temp_dir()
            .join(format!("scaffold-checkpointer-{}", uuid::Uuid::new_v4()))
            .join("scaffold.db");
        let mut checkpointer = Checkpointer::new(&missing, Duration::from_secs(1));
        assert!(!checkpointer.ask(), "no database to connect to");
        assert!(matches!(checkpointer.thread, Background::Unavailable));
        // Not tried again with every commit.
        assert!(!checkpointer.ask());
        assert!(!checkpointer.take_finished());
    }
}
