//! The writer thread: the only code that writes a store's database.
//!
//! Handles push [`Command`]s onto a bounded [`Queue`]. The thread takes every
//! command waiting and writes them in IMMEDIATE transactions of up to the
//! batch size (counted in signals) with cached prepared statements. When the
//! producers are faster than the disk, batches grow on their own; when they
//! are slow, each append is committed at once. Commands that need what came
//! before them committed (flush, reads, deletes) end a transaction.
//!
//! If a batch fails inside its transaction (a duplicate session id, an
//! out-of-order index), it is rolled back and its commands are written again
//! one per transaction, so that only the bad command is lost; each failure is
//! recorded in [`Shared`] and reported by the handle's next call.

use std::ffi::c_int;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::hooks::Wal;
use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior, params};
use serde_json::Value;

use super::checkpointer::Checkpointer;
use super::error::{Context, StoreError, to_i64};
use super::queue::{CloseOnDrop, Queue};
use super::runs::RunOp;
use super::state::{change_of, load_running, set_key};
use super::{SessionEnd, SessionMeta};
use crate::signal::{Signal, names};

/// The signals of one append, serialized by the caller into the block the
/// writer stores them in (one row of `signal_blocks`: a JSON array, each
/// signal as [`Signal`] serializes), so that the writer only binds it.
pub(crate) struct Rows {
    session: String,
    block: String,
    /// Each signal's index, in order.
    indexes: Vec<u64>,
    /// The state changes among them, in order.
    changes: Vec<StateChange>,
}

/// A `state:<key>:changed` signal of an append, kept a row of its own too.
struct StateChange {
    /// Its position in [`Rows::indexes`].
    at: usize,
    key: String,
    /// Its payload as JSON.
    payload: String,
    /// The key's new value, or `None` for a removal.
    value: Option<Value>,
}

impl Rows {
    /// Serialize `signals` of `session`.
    pub(crate) fn new(session: &str, signals: &[Signal]) -> Result<Rows, serde_json::Error> {
        let mut changes = Vec::new();
        for (at, s) in signals.iter().enumerate() {
            if let Some(key) = names::state_key(&s.name) {
                changes.push(StateChange {
                    at,
                    key: key.to_owned(),
                    payload: serde_json::to_string(&s.payload)?,
                    value: change_of(&s.payload),
                });
            }
        }
        // About what a signal takes as JSON, so that the block seldom grows
        // by copying itself.
        let mut block = Vec::with_capacity(16 + signals.len() * 160);
        serde_json::to_writer(&mut block, signals)?;
        // serde_json writes UTF-8, so this does not fail.
        let block = String::from_utf8(block).map_err(serde::ser::Error::custom)?;
        Ok(Rows {
            session: session.to_owned(),
            block,
            indexes: signals.iter().map(|s| s.index).collect(),
            changes,
        })
    }

    fn len(&self) -> usize {
        self.indexes.len()
    }

    fn session(&self) -> &str {
        &self.session
    }
}

/// The signals a transaction stores, a block per session and run of
/// consecutive appends, up to [`BLOCK_BYTES`]: a session appended a signal
/// at a time, as fast as the writer takes them, is stored in blocks of
/// many, not one row each.
#[derive(Default)]
struct Blocks<'a> {
    open: Vec<Block<'a>>,
}

/// One `signal_blocks` row being made.
struct Block<'a> {
    session: &'a str,
    first: u64,
    last: u64,
    /// A JSON array of the signals, as [`Rows`] made it: an append's own
    /// until a second one joins it.
    text: std::borrow::Cow<'a, str>,
}

/// The most text a block gathers from appends: within a page of the
/// table's 4 KiB, so that a block needs no overflow page.
const BLOCK_BYTES: usize = 3500;

impl<'a> Blocks<'a> {
    /// Add an append to its session's open block (the store's order checks
    /// passed), storing that block first when the append does not fit in it.
    fn add(&mut self, conn: &Connection, path: &str, rows: &'a Rows) -> Result<(), StoreError> {
        let (Some(&first), Some(&last)) = (rows.indexes.first(), rows.indexes.last()) else {
            return Ok(());
        };
        let session = rows.session();
        let fresh = Block {
            session,
            first,
            last,
            text: std::borrow::Cow::Borrowed(&rows.block),
        };
        match self.open.iter_mut().find(|b| b.session == session) {
            Some(open) if open.text.len() + rows.block.len() <= BLOCK_BYTES => {
                // `[a,b]` and `[c]` make `[a,b,c]`.
                let text = open.text.to_mut();
                text.pop();
                text.push(',');
                text.push_str(rows.block.get(1..).unwrap_or_default());
                open.last = last;
            }
            Some(open) => {
                open.insert(conn, path)?;
                *open = fresh;
            }
            None => self.open.push(fresh),
        }
        Ok(())
    }

    /// Store every open block.
    fn finish(self, conn: &Connection, path: &str) -> Result<(), StoreError> {
        self.open.iter().try_for_each(|b| b.insert(conn, path))
    }
}

impl Block<'_> {
    fn insert(&self, conn: &Connection, path: &str) -> Result<(), StoreError> {
        let (session, first, last) = (self.session, self.first, self.last);
        let what = || format!("storing signals {first} to {last} of session {session}");
        let from = to_i64(path, "signal index", first)?;
        let to = to_i64(path, "signal index", last)?;
        conn.prepare_cached(INSERT_BLOCK)
            .and_then(|mut st| st.execute(params![session, from, to, self.text]))
            .ctx(path, what)?;
        Ok(())
    }
}

/// The writer's map of session ids (ids are not attacker-chosen; SipHash
/// showed in profiles).
type FastMap<V> = rustc_hash::FxHashMap<String, V>;

/// A read run on the writer's connection (in-memory stores).
pub(crate) type ReadFn = Box<dyn FnOnce(&Connection, &str) + Send>;

/// What a handle asks of the writer.
pub(crate) enum Command {
    /// Insert a session row and its tags.
    Begin(Box<SessionMeta>),
    /// Insert signals of one session, in index order.
    Append(Rows),
    /// Record how a session ended.
    Finish {
        /// The session.
        id: String,
        /// How it ended.
        end: Box<SessionEnd>,
    },
    /// Delete a session, its tags, signals and checkpoints; reply whether it existed.
    Delete {
        /// The session.
        id: String,
        /// Where the answer goes.
        reply: Sender<Result<bool, StoreError>>,
    },
    /// An eval-run write (begin, record a cell, finish), written in the batch
    /// like the others; the reply is sent once it is committed (or failed),
    /// so the caller knows it is durable.
    Run {
        /// What to write.
        op: Box<RunOp>,
        /// Where the outcome goes.
        reply: Sender<Result<(), StoreError>>,
    },
    /// Commit everything before this and reply.
    Flush(Sender<()>),
    /// Commit everything before this, then run the read on the writer's connection.
    Read(ReadFn),
    /// Commit everything before this, index the cells waiting for search
    /// and move the WAL into the database now, not once the writer idles:
    /// the store closes next, and finds nothing to sync and an empty WAL
    /// (see `Writer::empty_wal`). Nobody waits.
    Checkpoint,
}

impl Command {
    /// How much of a batch the command uses.
    fn weight(&self) -> usize {
        match self {
            Command::Append(rows) => rows.len().max(1),
            _ => 1,
        }
    }

    /// Commands that need everything before them committed.
    fn is_barrier(&self) -> bool {
        matches!(
            self,
            Command::Delete { .. } | Command::Flush(_) | Command::Read(_) | Command::Checkpoint
        )
    }

    fn session(&self) -> Option<&str> {
        match self {
            Command::Begin(m) => Some(&m.id),
            Command::Append(rows) => Some(rows.session()),
            Command::Finish { id, .. } | Command::Delete { id, .. } => Some(id),
            Command::Flush(_) | Command::Read(_) | Command::Run { .. } | Command::Checkpoint => {
                None
            }
        }
    }

    /// Tell the caller waiting for this command how it went. Returns the
    /// error back when nobody waits for it (it is then reported later).
    fn settle(&self, outcome: Result<(), StoreError>) -> Result<(), StoreError> {
        match self {
            Command::Run { reply, .. } => {
                // The caller may have given up waiting; nothing to do then.
                let _ = reply.send(outcome);
                Ok(())
            }
            _ => outcome,
        }
    }

    fn waited_for(&self) -> bool {
        matches!(self, Command::Run { .. })
    }
}

/// What the handles and the writer share: the database's name and the write
/// errors not yet reported.
pub(crate) struct Shared {
    pub(crate) path: String,
    has_error: AtomicBool,
    errors: Mutex<Option<(StoreError, usize)>>,
}

impl Shared {
    pub(crate) fn new(path: String) -> Self {
        Shared {
            path,
            has_error: AtomicBool::new(false),
            errors: Mutex::new(None),
        }
    }

    /// Remember a failure of `count` queued operations.
    pub(crate) fn record(&self, error: StoreError, count: usize) {
        let mut slot = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        match slot.as_mut() {
            Some((_, n)) => *n += count,
            None => *slot = Some((error, count)),
        }
        self.has_error.store(true, Ordering::Release);
    }

    /// The failures not yet reported, as one error; clears them.
    pub(crate) fn take(&self) -> Option<StoreError> {
        self.take_pending()
            .map(|(first, count)| self.queued(first, count))
    }

    /// The first failure not yet reported and how many there were; clears them.
    pub(crate) fn take_pending(&self) -> Option<(StoreError, usize)> {
        if !self.has_error.load(Ordering::Acquire) {
            return None;
        }
        let mut slot = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        self.has_error.store(false, Ordering::Release);
        slot.take()
    }

    /// The error that reports `count` failed queued writes.
    pub(crate) fn queued(&self, first: StoreError, count: usize) -> StoreError {
        StoreError::QueuedWrites {
            path: self.path.clone(),
            count,
            first: Box::new(first),
        }
    }
}

/// The writer's view of a session it is appending to.
struct Running {
    /// The state after the last stored signal.
    state: Value,
    /// The last stored index.
    last: Option<u64>,
    /// Signals since the last checkpoint (or since the writer loaded the session).
    since_checkpoint: u64,
    /// Whether the state changed since the last checkpoint.
    dirty: bool,
}

/// Settings of the writer.
pub(crate) struct WriterConfig {
    pub(crate) checkpoint_interval: u64,
    pub(crate) batch_size: usize,
    /// How long writes nobody waits for may wait for more before a commit.
    pub(crate) linger: Duration,
    /// Checkpoint the WAL after this long with nothing to write (file stores).
    pub(crate) idle_checkpoint: Option<Duration>,
    /// Checkpoint the WAL once it holds this many frames, after the commit
    /// that made it so has answered its waiters (file stores). Replaces
    /// SQLite's automatic checkpoint (1000 frames, run inside the commit).
    pub(crate) wal_checkpoint_frames: Option<u32>,
    /// Run those checkpoints on a thread of their own, with a connection
    /// to this database file and this busy timeout (file stores).
    pub(crate) background_checkpoints: Option<(PathBuf, Duration)>,
}

/// The writer thread's state.
pub(crate) struct Writer {
    /// Runs the large checkpoints (file stores). Declared before `conn`:
    /// dropped first, its connection closes before the writer's.
    checkpointer: Option<Checkpointer>,
    conn: Connection,
    shared: Arc<Shared>,
    config: WriterConfig,
    running: FastMap<Running>,
    /// Frames in the WAL after the last commit, as SQLite's WAL hook tells.
    wal_frames: Arc<AtomicU32>,
    /// Sessions whose queued writes failed: how many, and the first error.
    /// Their cell's record is refused ([`StoreError::SessionIncomplete`]).
    lost: FastMap<(usize, String)>,
    /// Cells recorded and not yet in the search index (see `index_pending`).
    unindexed: usize,
    /// When cells were last indexed in a cell's own commit.
    indexed_at: Instant,
    /// A [`Command::Checkpoint`] moved the WAL into the database, and
    /// nothing was committed since: an idle checkpoint then leaves the WAL
    /// as it is.
    closing: bool,
}

/// How many recorded cells wait before the writer indexes them for search
/// (it also does when idle, before a read or a flush, and when closing).
const INDEX_BATCH: usize = 256;

/// A commit that records a cell also indexes the cells waiting when the
/// last such commit was at least this long ago: at once for a process's
/// first cell (a nextest process records one, and then has nothing left
/// to do when it closes) and a live run's slow cells, about once a second
/// for a played-back run's fast ones (FTS5 writes a segment per
/// transaction that inserts: once per cell cost a fast cell a quarter more).
const INDEX_EVERY: Duration = Duration::from_secs(1);

/// Why a batch was not written.
enum BatchError {
    /// The transaction could not start (the database stayed locked past the busy timeout).
    Begin(StoreError),
    /// A command or the commit failed; nothing of the batch was kept.
    Write(StoreError),
}

const INSERT_BLOCK: &str = "INSERT INTO signal_blocks (session_id, first_idx, last_idx, signals) \
     VALUES (?1, ?2, ?3, ?4)";
const INSERT_STATE_CHANGE: &str =
    "INSERT INTO state_changes (session_id, idx, state_key, payload) VALUES (?1, ?2, ?3, ?4)";
const INSERT_CHECKPOINT: &str =
    "INSERT OR REPLACE INTO checkpoints (session_id, idx, state) VALUES (?1, ?2, ?3)";
const INSERT_SESSION: &str = "INSERT INTO sessions (id, workflow, variant, parent_id, fork_point, input, \
     initial_state, tags, status, started_at) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'running', ?9)";
const INSERT_TAG: &str = "INSERT OR IGNORE INTO session_tags (tag, session_id) VALUES (?1, ?2)";
const ADD_COUNT: &str = "UPDATE sessions SET signal_count = signal_count + ?2 WHERE id = ?1";
const FINISH: &str = "UPDATE sessions SET status = ?2, error = ?3, ended_at = ?4, duration_ms = ?5, \
     output = ?6, final_state = ?7 WHERE id = ?1";

impl Writer {
    pub(crate) fn new(
        mut conn: Connection,
        shared: Arc<Shared>,
        config: WriterConfig,
    ) -> Result<Self, StoreError> {
        conn.set_prepared_statement_cache_capacity(32);
        let wal_frames = Arc::new(AtomicU32::new(0));
        if config.wal_checkpoint_frames.is_some() {
            // A WAL hook replaces SQLite's automatic checkpoint.
            let frames = Arc::clone(&wal_frames);
            conn.wal_hook(Some(move |_: &mut Wal, pages: c_int| {
                frames.store(u32::try_from(pages).unwrap_or(0), Ordering::Relaxed);
                Ok(())
            }))
            .ctx(&shared.path, || "installing the WAL hook".into())?;
        }
        // Cells a process that ended too soon left unindexed (none for a
        // store opened to read only, which cannot index them).
        let unindexed = conn
            .query_row(
                "SELECT NOT (SELECT query_only FROM pragma_query_only) \
                 AND EXISTS (SELECT 1 FROM cell_text_pending)",
                [],
                |r| r.get::<_, bool>(0),
            )
            .ctx(&shared.path, || "looking for cells to index".into())?;
        let checkpointer = (config.background_checkpoints.as_ref())
            .map(|(file, busy_timeout)| Checkpointer::new(file, *busy_timeout));
        Ok(Writer {
            checkpointer,
            conn,
            shared,
            config,
            running: FastMap::default(),
            wal_frames,
            lost: FastMap::default(),
            unindexed: usize::from(unindexed),
            indexed_at: Instant::now() - INDEX_EVERY,
            closing: false,
        })
    }

    /// Index the cells waiting for search, in a transaction of their own
    /// (`INDEX_PENDING`): FTS5 writes a segment per transaction that
    /// inserts, so one per cell would cost each cell's commit. A failure
    /// leaves them waiting for the next time.
    fn index_pending(&mut self) {
        if self.unindexed == 0 {
            return;
        }
        let indexed = (self.conn)
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .and_then(|tx| {
                tx.execute_batch(super::schema::INDEX_PENDING)?;
                tx.commit()
            });
        if indexed.is_ok() {
            self.unindexed = 0;
        }
    }

    /// Serve commands until the queue is closed, then commit what is left.
    ///
    /// Writes nobody waits for (a session's begin, signals and end) linger
    /// up to [`WriterConfig::linger`] for more, so that a cell's writes and
    /// the durable record of its result share one transaction instead of
    /// one each: a commit rewrites every page it touched.
    pub(crate) fn run(mut self, queue: &Queue) {
        let _close = CloseOnDrop(queue);
        let mut taken: Vec<Command> = Vec::new();
        let mut batch: Vec<Command> = Vec::new();
        let mut weight = 0;
        // Commands taken and not yet committed (or failed and recorded).
        let mut open = 0;
        let mut since = Instant::now();
        // Whether commits were made since the last idle checkpoint.
        let mut wal_grew = false;
        loop {
            let idle_checkpoint = self.config.idle_checkpoint.filter(|_| wal_grew);
            let got = match (batch.is_empty(), idle_checkpoint) {
                (false, _) => queue.take_all_until(&mut taken, since + self.config.linger),
                (true, Some(idle)) => queue.take_all_until(&mut taken, Instant::now() + idle),
                (true, None) => queue.take_all(&mut taken),
            };
            if !got {
                if batch.is_empty() && idle_checkpoint.is_some() {
                    // Idle (or closed): index the cells waiting and move the
                    // WAL into the database now, off the cells' path, rather
                    // than when the store closes.
                    self.index_pending();
                    if self.checkpoint() && !queue.is_closed() && !self.closing {
                        self.restart_wal();
                    }
                    wal_grew = false;
                    continue;
                }
                if batch.is_empty() {
                    // Closed, and everything is written.
                    self.index_pending();
                    break;
                }
                // The linger is over (or the queue closed): commit.
                self.write(&mut batch);
                weight = 0;
                queue.completed(std::mem::take(&mut open));
                continue;
            }
            if batch.is_empty() {
                since = Instant::now();
            }
            open += taken.len();
            let mut waited_for = false;
            for c in taken.drain(..) {
                if c.is_barrier() {
                    self.write(&mut batch);
                    weight = 0;
                    self.barrier(c);
                    continue;
                }
                weight += c.weight();
                waited_for |= c.waited_for();
                batch.push(c);
                if weight >= self.config.batch_size {
                    self.write(&mut batch);
                    weight = 0;
                }
            }
            if waited_for || self.config.linger.is_zero() || batch.is_empty() {
                self.write(&mut batch);
                weight = 0;
                queue.completed(std::mem::take(&mut open));
            }
            wal_grew = true;
        }
    }

    /// A passive WAL checkpoint; a failure (another process busy) only
    /// leaves the work to the next one. Whether it moved every frame of the
    /// WAL into the database.
    fn checkpoint(&self) -> bool {
        // (busy, frames in the WAL, frames moved)
        let moved = self
            .conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            });
        matches!(moved, Ok((0, frames, moved)) if frames > 0 && moved == frames)
    }

    /// Start the WAL again now that a checkpoint moved all of it: commit one
    /// page (the schema version, rewritten as it is), so that SQLite begins
    /// the WAL anew and syncs its header (as `synchronous = NORMAL` does
    /// when a WAL is reused) here, while nothing waits. Otherwise the next
    /// commit does it, with the records of the cells that waited for that
    /// commit: a live run's cells, a wave at a time, paid a sync a wave. A
    /// failure leaves it to that commit.
    fn restart_wal(&mut self) {
        let _ = (self.conn)
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .and_then(|tx| {
                let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
                tx.pragma_update(None, "user_version", version)?;
                tx.commit()
            });
    }

    /// Empty the WAL file, every frame of which a checkpoint moved, now
    /// that the close comes next: the close then removes an empty file.
    /// Removing a WAL of some megabytes frees its cached pages, about a
    /// millisecond at a live run's end that the process waits for; the
    /// truncation frees them here, on the writer's thread, while the
    /// harness judges and writes its reports. Only when no other
    /// connection reads the WAL (the truncating checkpoint does not wait
    /// for one); else the close removes it as before.
    fn empty_wal(&self) {
        let Ok(waits) =
            (self.conn).pragma_query_value(None, "busy_timeout", |r| r.get::<_, i64>(0))
        else {
            return;
        };
        if self.conn.busy_timeout(Duration::ZERO).is_ok() {
            let _ = (self.conn).query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        }
        // Milliseconds, as set (`sqlite3_busy_timeout` cannot fail).
        let waits = u64::try_from(waits).unwrap_or(0);
        let _ = self.conn.busy_timeout(Duration::from_millis(waits));
    }

    /// Checkpoint the WAL if it has grown to
    /// [`WriterConfig::wal_checkpoint_frames`]: in the background when the
    /// store has a [`Checkpointer`], and once that is done, the frames
    /// committed meanwhile here. Called once a commit's waiters have their
    /// answer: their cells go on while the WAL is copied.
    fn checkpoint_if_due(&mut self) {
        let Some(limit) = self.config.wal_checkpoint_frames else {
            return;
        };
        let caught_up = self
            .checkpointer
            .as_ref()
            .is_some_and(|c| c.take_finished());
        if !caught_up {
            if self.wal_frames.load(Ordering::Relaxed) < limit {
                return;
            }
            if self.checkpointer.as_mut().is_some_and(Checkpointer::ask) {
                return;
            }
        }
        self.checkpoint();
        // The next commit restarts the WAL, or tells its size again if
        // readers kept the checkpoint from finishing.
        self.wal_frames.store(0, Ordering::Relaxed);
    }

    fn barrier(&mut self, command: Command) {
        // What is read next finds every cell recorded before it.
        self.index_pending();
        match command {
            Command::Flush(reply) => {
                // The handle may have given up waiting; nothing to do then.
                let _ = reply.send(());
            }
            Command::Read(f) => f(&self.conn, &self.shared.path),
            Command::Checkpoint => {
                let moved = self.checkpoint();
                if moved {
                    self.empty_wal();
                }
                self.closing = moved;
            }
            Command::Delete { id, reply } => {
                self.closing = false;
                self.running.remove(&id);
                let _ = reply.send(self.delete(&id));
            }
            other => {
                let mut one = vec![other];
                self.write(&mut one);
            }
        }
    }

    /// Write a batch; on failure write its commands one by one so only the
    /// bad ones are lost. Callers waiting for a command of the batch are
    /// told once it is committed (or how it failed).
    fn write(&mut self, batch: &mut Vec<Command>) {
        if batch.is_empty() {
            return;
        }
        self.closing = false;
        match self.try_write(batch) {
            Ok(()) => {
                for c in batch.iter() {
                    let _ = c.settle(Ok(()));
                }
            }
            Err(BatchError::Begin(e)) => {
                self.forget(batch);
                // Those waiting get their own answer: their writes are tried
                // again alone; the others are reported by a later call.
                let unanswered = batch.iter().filter(|c| !c.waited_for()).count();
                for c in batch.iter().filter(|c| !c.waited_for()) {
                    self.note_lost(c, &e);
                }
                if unanswered > 0 {
                    self.shared.record(e, unanswered);
                }
                for c in batch.iter().filter(|c| c.waited_for()) {
                    self.write_one(c);
                }
            }
            Err(BatchError::Write(e)) => {
                self.forget(batch);
                if batch.len() == 1 {
                    if let Err(e) = batch[0].settle(Err(e)) {
                        self.note_lost(&batch[0], &e);
                        self.shared.record(e, 1);
                    }
                } else {
                    for c in batch.iter() {
                        self.write_one(c);
                    }
                }
            }
        }
        batch.clear();
        self.checkpoint_if_due();
        if self.unindexed >= INDEX_BATCH {
            self.index_pending();
        }
    }

    /// Write one command in its own transaction.
    fn write_one(&mut self, command: &Command) {
        let one = std::slice::from_ref(command);
        let outcome = match self.try_write(one) {
            Ok(()) => Ok(()),
            Err(BatchError::Begin(e) | BatchError::Write(e)) => {
                self.forget(one);
                Err(e)
            }
        };
        if let Err(e) = command.settle(outcome) {
            self.note_lost(command, &e);
            self.shared.record(e, 1);
        }
    }

    /// Note that `command`, a write nobody waits for, failed with `e`: its
    /// session is not whole.
    fn note_lost(&mut self, command: &Command, e: &StoreError) {
        if let Some(session) = command.session() {
            let entry = self
                .lost
                .entry(session.to_owned())
                .or_insert_with(|| (0, e.to_string()));
            entry.0 += 1;
        }
    }

    /// Drop the running state of the sessions a failed batch touched: it was
    /// rolled back, so it is loaded again from the database when needed.
    fn forget(&mut self, batch: &[Command]) {
        for c in batch {
            if let Some(id) = c.session() {
                self.running.remove(id);
            }
        }
    }

    fn try_write(&mut self, batch: &[Command]) -> Result<(), BatchError> {
        let Writer {
            conn,
            shared,
            config,
            running,
            lost,
            unindexed,
            indexed_at,
            ..
        } = self;
        let path = shared.path.as_str();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .ctx(path, || "starting a write transaction".into())
            .map_err(BatchError::Begin)?;
        let mut counts: Vec<(&str, u64)> = Vec::new();
        let recorded = (batch.iter())
            .filter(|c| matches!(c, Command::Run { op, .. } if op.records_cell()))
            .count();
        let mut blocks = Blocks::default();
        for c in batch {
            match c {
                Command::Begin(meta) => {
                    begin(&tx, path, meta).map_err(BatchError::Write)?;
                    running.insert(
                        meta.id.clone(),
                        Running {
                            state: meta.initial_state.clone(),
                            last: None,
                            since_checkpoint: 0,
                            dirty: false,
                        },
                    );
                }
                Command::Append(rows) => {
                    if rows.len() == 0 {
                        continue;
                    }
                    let session = rows.session();
                    if !running.contains_key(session) {
                        let (state, last) =
                            load_running(&tx, path, session).map_err(BatchError::Write)?;
                        running.insert(
                            session.to_owned(),
                            Running {
                                state,
                                last,
                                since_checkpoint: 0,
                                dirty: false,
                            },
                        );
                    }
                    let Some(run) = running.get_mut(session) else {
                        continue;
                    };
                    append(&tx, path, config, session, run, rows).map_err(BatchError::Write)?;
                    blocks.add(&tx, path, rows).map_err(BatchError::Write)?;
                    let n = rows.len() as u64;
                    match counts.iter_mut().find(|(s, _)| *s == session) {
                        Some((_, total)) => *total += n,
                        None => counts.push((session, n)),
                    }
                }
                Command::Finish { id, end } => {
                    if let Some(Running {
                        state,
                        last: Some(last),
                        since_checkpoint,
                        dirty: true,
                    }) = running.remove(id.as_str())
                        && ends_with_checkpoint(config.checkpoint_interval, since_checkpoint)
                    {
                        checkpoint(&tx, path, id, last, &state).map_err(BatchError::Write)?;
                    }
                    finish(&tx, path, id, end).map_err(BatchError::Write)?;
                }
                Command::Run { op, .. } => {
                    if let Some((count, first)) = op.session().and_then(|id| lost.get(id)) {
                        return Err(BatchError::Write(StoreError::SessionIncomplete {
                            path: path.to_owned(),
                            session: op.session().unwrap_or_default().to_owned(),
                            count: *count,
                            first: first.clone(),
                        }));
                    }
                    op.write(&tx, path).map_err(BatchError::Write)?
                }
                Command::Delete { .. }
                | Command::Flush(_)
                | Command::Read(_)
                | Command::Checkpoint => {}
            }
        }
        blocks.finish(&tx, path).map_err(BatchError::Write)?;
        for (session, n) in counts {
            let n = to_i64(path, "signal count", n).map_err(BatchError::Write)?;
            tx.prepare_cached(ADD_COUNT)
                .and_then(|mut st| st.execute(params![session, n]))
                .ctx(path, || {
                    format!("counting the signals of session {session}")
                })
                .map_err(BatchError::Write)?;
        }
        // The cells waiting go into the search index with this commit when
        // it is time (see INDEX_EVERY); a failure there loses no record.
        let index_now = recorded > 0 && indexed_at.elapsed() >= INDEX_EVERY;
        let indexed = index_now && index_in(&tx);
        tx.commit()
            .ctx(path, || "committing a write transaction".into())
            .map_err(BatchError::Write)?;
        if indexed {
            *unindexed = 0;
            *indexed_at = Instant::now();
        } else {
            *unindexed += recorded;
        }
        Ok(())
    }

    fn delete(&mut self, id: &str) -> Result<bool, StoreError> {
        let path = self.shared.path.as_str();
        let what = || format!("deleting session {id}");
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .ctx(path, what)?;
        tx.execute("DELETE FROM signal_blocks WHERE session_id = ?1", [id])
            .ctx(path, what)?;
        tx.execute("DELETE FROM state_changes WHERE session_id = ?1", [id])
            .ctx(path, what)?;
        tx.execute("DELETE FROM checkpoints WHERE session_id = ?1", [id])
            .ctx(path, what)?;
        delete_tags(&tx, path, id)?;
        let n = tx
            .execute("DELETE FROM sessions WHERE id = ?1", [id])
            .ctx(path, what)?;
        let reindexed = super::search::reindex_session_cells(&tx, path, id)?;
        tx.commit().ctx(path, what)?;
        self.unindexed += reindexed;
        Ok(n > 0)
    }
}

/// Index the cells waiting for search inside transaction `tx`, under a
/// savepoint so that a failure undoes that alone; whether it was done.
fn index_in(tx: &rusqlite::Transaction<'_>) -> bool {
    if tx.execute_batch("SAVEPOINT index_pending").is_err() {
        return false;
    }
    match tx.execute_batch(super::schema::INDEX_PENDING) {
        Ok(()) => tx.execute_batch("RELEASE index_pending").is_ok(),
        Err(_) => {
            let _ = tx.execute_batch("ROLLBACK TO index_pending; RELEASE index_pending");
            false
        }
    }
}

/// Delete the tag rows of session `id`: those of the tags its row lists
/// (`session_tags` is keyed by tag first). Tags that do not parse are
/// deleted by a scan of the table, so that a damaged session can still go.
fn delete_tags(conn: &Connection, path: &str, id: &str) -> Result<(), StoreError> {
    let what = || format!("deleting the tags of session {id}");
    let tags: Option<String> = conn
        .prepare_cached("SELECT tags FROM sessions WHERE id = ?1")
        .and_then(|mut st| st.query_row([id], |r| r.get(0)).optional())
        .ctx(path, what)?;
    match tags.map(|t| serde_json::from_str::<Vec<String>>(&t)) {
        None => Ok(()),
        Some(Ok(tags)) => {
            let mut st = conn
                .prepare_cached("DELETE FROM session_tags WHERE tag = ?1 AND session_id = ?2")
                .ctx(path, what)?;
            for tag in &tags {
                st.execute(params![tag, id]).ctx(path, what)?;
            }
            Ok(())
        }
        Some(Err(_)) => conn
            .execute("DELETE FROM session_tags WHERE session_id = ?1", [id])
            .map(drop)
            .ctx(path, what),
    }
}

fn json_text(path: &str, what: impl FnOnce() -> String, v: &Value) -> Result<String, StoreError> {
    serde_json::to_string(v).ctx(path, what)
}

fn begin(conn: &Connection, path: &str, m: &SessionMeta) -> Result<(), StoreError> {
    let id = m.id.as_str();
    let what = || format!("beginning session {id}");
    let fork_point = m
        .fork_point
        .as_ref()
        .map(|v| json_text(path, what, v))
        .transpose()?;
    let input = json_text(path, what, &m.input)?;
    let initial = json_text(path, what, &m.initial_state)?;
    let tags = serde_json::to_string(&m.tags).ctx(path, what)?;
    let started = to_i64(path, "startedAtMs", m.started_at_ms)?;
    let inserted = conn.prepare_cached(INSERT_SESSION).and_then(|mut st| {
        st.execute(params![
            id,
            m.workflow,
            m.variant,
            m.parent_id,
            fork_point,
            input,
            initial,
            tags,
            started
        ])
    });
    match inserted {
        Ok(_) => {}
        Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == ErrorCode::ConstraintViolation => {
            return Err(StoreError::SessionExists {
                path: path.to_owned(),
                id: id.to_owned(),
            });
        }
        Err(e) => return Err(e).ctx(path, what),
    }
    let mut st = conn.prepare_cached(INSERT_TAG).ctx(path, what)?;
    for tag in &m.tags {
        st.execute(params![tag, id]).ctx(path, what)?;
    }
    Ok(())
}

fn append(
    conn: &Connection,
    path: &str,
    config: &WriterConfig,
    session: &str,
    run: &mut Running,
    rows: &Rows,
) -> Result<(), StoreError> {
    let Some(&last) = rows.indexes.last() else {
        return Ok(());
    };
    let mut before = run.last;
    for &index in &rows.indexes {
        if let Some(last) = before.filter(|&last| index <= last) {
            return Err(StoreError::OutOfOrder {
                path: path.to_owned(),
                id: session.to_owned(),
                index,
                last,
            });
        }
        before = Some(index);
    }
    run.last = Some(last);
    let mut changes = rows.changes.iter().peekable();
    for (at, &index) in rows.indexes.iter().enumerate() {
        if let Some(change) = changes.next_if(|c| c.at == at) {
            let idx = to_i64(path, "signal index", index)?;
            conn.prepare_cached(INSERT_STATE_CHANGE)
                .and_then(|mut st| st.execute(params![session, idx, change.key, change.payload]))
                .ctx(path, || {
                    format!("storing state change {index} of session {session}")
                })?;
            set_key(&mut run.state, &change.key, change.value.clone());
            run.dirty = true;
        }
        run.since_checkpoint += 1;
        if config.checkpoint_interval > 0 && run.since_checkpoint >= config.checkpoint_interval {
            if run.dirty {
                checkpoint(conn, path, session, index, &run.state)?;
                run.dirty = false;
            }
            run.since_checkpoint = 0;
        }
    }
    Ok(())
}

/// Whether a session's end writes a checkpoint of its final state, `since`
/// signals after the last interval's: only when that is at least half an
/// interval. Reads fold at most an interval's changes either way; a short
/// session (an eval cell's, a few dozen signals) is cheaper to fold than to
/// keep a checkpoint for, a row in another b-tree in every cell's commit.
fn ends_with_checkpoint(interval: u64, since: u64) -> bool {
    interval > 0 && since >= interval.div_ceil(2)
}

fn checkpoint(
    conn: &Connection,
    path: &str,
    session: &str,
    index: u64,
    state: &Value,
) -> Result<(), StoreError> {
    let what = || format!("writing the checkpoint of session {session} at {index}");
    let text = json_text(path, what, state)?;
    let idx = to_i64(path, "checkpoint index", index)?;
    conn.prepare_cached(INSERT_CHECKPOINT)
        .and_then(|mut st| st.execute(params![session, idx, text]))
        .ctx(path, what)?;
    Ok(())
}

fn finish(conn: &Connection, path: &str, id: &str, end: &SessionEnd) -> Result<(), StoreError> {
    let what = || format!("finishing session {id}");
    let output = end
        .output
        .as_ref()
        .map(|v| json_text(path, what, v))
        .transpose()?;
    let final_state = end
        .final_state
        .as_ref()
        .map(|v| json_text(path, what, v))
        .transpose()?;
    let ended = to_i64(path, "endedAtMs", end.ended_at_ms)?;
    let duration = to_i64(path, "durationMs", end.duration_ms)?;
    let n = conn
        .prepare_cached(FINISH)
        .and_then(|mut st| {
            st.execute(params![
                id,
                end.status.as_str(),
                end.error,
                ended,
                duration,
                output,
                final_state
            ])
        })
        .ctx(path, what)?;
    if n == 0 {
        return Err(StoreError::SessionNotFound {
            path: path.to_owned(),
            id: id.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{SessionMeta, configure, schema};

    /// A writer on a fresh file in `dir`, checkpointing at `frames` itself
    /// (no checkpoint thread), never when idle.
    fn file_writer(dir: &std::path::Path, frames: u32) -> Writer {
        file_writer_with(dir, frames, false)
    }

    /// [`file_writer`], checkpointing in the background when `background`.
    fn file_writer_with(dir: &std::path::Path, frames: u32, background: bool) -> Writer {
        let path = dir.join("scaffold.db");
        let name = path.display().to_string();
        let mut conn = Connection::open(&path).unwrap();
        configure(&conn, &name, true, Duration::from_secs(5)).unwrap();
        schema::migrate(&mut conn, &name).unwrap();
        let config = WriterConfig {
            checkpoint_interval: 1000,
            batch_size: 8192,
            linger: Duration::ZERO,
            idle_checkpoint: None,
            wal_checkpoint_frames: Some(frames),
            background_checkpoints: background.then(|| (path.clone(), Duration::from_secs(5))),
        };
        Writer::new(conn, Arc::new(Shared::new(name)), config).unwrap()
    }

    /// Write a session of `n` signals of 4 KB each (a page or more each).
    fn write_pages(writer: &mut Writer, n: u64) {
        write_session_pages(writer, "s", n);
    }

    /// [`write_pages`] for session `id`.
    fn write_session_pages(writer: &mut Writer, id: &str, n: u64) {
        let signals: Vec<Signal> = (0..n)
            .map(|i| Signal {
                index: i,
                name: "text:delta".into(),
                payload: Value::String("x".repeat(4000)),
                at_ms: i,
                agent: None,
            })
            .collect();
        let mut batch = vec![
            Command::Begin(Box::new(SessionMeta::new(id, "w"))),
            Command::Append(Rows::new(id, &signals).unwrap()),
        ];
        writer.write(&mut batch);
        assert!(writer.shared.take().is_none());
    }

    /// The database file's length and how long it is with every page in it.
    fn sizes(writer: &Writer, dir: &std::path::Path) -> (u64, u64) {
        let pages: i64 = writer
            .conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .unwrap();
        let file = std::fs::metadata(dir.join("scaffold.db")).unwrap().len();
        (file, pages as u64 * 4096)
    }

    #[test]
    fn the_wal_is_checkpointed_once_it_holds_enough_frames() {
        for (frames, moved) in [(100, true), (u32::MAX, false)] {
            let dir =
                std::env::temp_dir().join(format!("scaffold-writer-{}", uuid::Uuid::new_v4()));
            std::fs::create_dir_all(&dir).unwrap();
            let mut writer = file_writer(&dir, frames);
            // Over 1000 frames in one commit: SQLite's own automatic
            // checkpoint would have run too.
            write_pages(&mut writer, 1100);
            let (file, whole) = sizes(&writer, &dir);
            assert_eq!(
                file >= whole,
                moved,
                "limit {frames}: {file} of {whole} bytes"
            );
            drop(writer);
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    /// The frames in the WAL of `writer`'s database, and how many of them
    /// are in the database file (a passive checkpoint's answer: it moves
    /// the frames not yet moved first).
    fn wal_frames(writer: &Writer) -> (i64, i64) {
        (writer.conn)
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok((r.get(1)?, r.get(2)?))
            })
            .unwrap()
    }

    #[test]
    fn a_checkpoint_asked_for_moves_every_write_into_the_database_file() {
        let dir = std::env::temp_dir().join(format!("scaffold-writer-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut writer = file_writer(&dir, u32::MAX);
        write_pages(&mut writer, 20);
        writer.barrier(Command::Checkpoint);
        // The database file alone, copied without its WAL, holds them.
        let copy = dir.join("copy.db");
        std::fs::copy(dir.join("scaffold.db"), &copy).unwrap();
        let blocks: i64 = Connection::open(&copy)
            .unwrap()
            .query_row("SELECT count(*) FROM signal_blocks", [], |r| r.get(0))
            .unwrap();
        assert_eq!(blocks, 1);
        // The close comes next: the WAL is emptied, every frame moved, so
        // that the close has nothing to sync or free.
        assert!(writer.closing);
        let wal = std::fs::metadata(dir.join("scaffold.db-wal")).map_or(0, |m| m.len());
        assert_eq!(wal, 0, "the WAL holds {wal} bytes");
        let (frames, moved) = wal_frames(&writer);
        assert_eq!((frames, moved), (0, 0));
        let waits: i64 = (writer.conn)
            .pragma_query_value(None, "busy_timeout", |r| r.get(0))
            .unwrap();
        assert_eq!(waits, 5000, "the writer's busy timeout is as it was");
        write_session_pages(&mut writer, "t", 1);
        assert!(!writer.closing, "a write after it has to be moved again");
        drop(writer);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_reader_keeps_the_wal_from_being_emptied_and_the_writer_does_not_wait_for_it() {
        let dir = std::env::temp_dir().join(format!("scaffold-writer-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut writer = file_writer(&dir, u32::MAX);
        write_pages(&mut writer, 20);
        // A reader in the middle of a read, its snapshot the WAL's last frame.
        let reader = Connection::open(dir.join("scaffold.db")).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        let _: i64 = reader
            .query_row("SELECT count(*) FROM signal_blocks", [], |r| r.get(0))
            .unwrap();
        let asked = std::time::Instant::now();
        writer.barrier(Command::Checkpoint);
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "the writer waited {:?} for the reader (its busy timeout is 5 s)",
            asked.elapsed()
        );
        let wal = std::fs::metadata(dir.join("scaffold.db-wal"))
            .unwrap()
            .len();
        assert!(wal > 0, "the WAL was emptied under a reader");
        assert!(writer.closing, "every frame was moved all the same");
        let waits: i64 = (writer.conn)
            .pragma_query_value(None, "busy_timeout", |r| r.get(0))
            .unwrap();
        assert_eq!(waits, 5000);
        reader.execute_batch("COMMIT").unwrap();
        drop((reader, writer));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn background_checkpoints_move_the_wal_and_let_it_start_again() {
        let dir = std::env::temp_dir().join(format!("scaffold-writer-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let wal = dir.join("scaffold.db-wal");
        let wal_len = || std::fs::metadata(&wal).map_or(0, |m| m.len());
        let mut writer = file_writer_with(&dir, 100, true);
        let mut longest = 0;
        for round in 0..6 {
            // Past the limit: the checkpoint is asked for, not run here.
            write_session_pages(&mut writer, &format!("s{round}"), 300);
            assert_ne!(writer.wal_frames.load(Ordering::Relaxed), 0);
            let asked = std::time::Instant::now();
            while !writer
                .checkpointer
                .as_ref()
                .is_some_and(Checkpointer::finished)
            {
                assert!(
                    asked.elapsed() < Duration::from_secs(20),
                    "round {round}: the background checkpoint never finished"
                );
                std::thread::sleep(Duration::from_millis(2));
            }
            // It moved every page committed so far into the database.
            let (file, whole) = sizes(&writer, &dir);
            assert!(file >= whole, "round {round}: {file} of {whole} bytes");
            // The next commit finds it done and the writer catches up on
            // what came meanwhile; the commit after that writes from the
            // WAL's start again.
            write_session_pages(&mut writer, &format!("t{round}"), 1);
            assert_eq!(
                writer.wal_frames.load(Ordering::Relaxed),
                0,
                "round {round}: the writer did not catch up"
            );
            write_session_pages(&mut writer, &format!("u{round}"), 1);
            longest = longest.max(wal_len());
        }
        // Six rounds of 300 pages and more: a WAL that never started again
        // would hold them all (over 7 MB).
        assert!(
            longest > 0 && longest < 3 * 1024 * 1024,
            "WAL of {longest} bytes"
        );
        drop(writer);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
