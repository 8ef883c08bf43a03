//! The session store: sessions, their signals and state checkpoints in SQLite.
//!
//! A [`Store`] is a cheap handle (`Clone + Send + Sync`) over one database.
//! Writes ([`Store::begin_session`], [`Store::append`],
//! [`Store::finish_session`]) are queued to one writer thread per store, which
//! batches them into IMMEDIATE transactions; they return as soon as the
//! command is queued, so appending is cheap on a cell's hot path. A write that
//! fails is never dropped silently: the failure is reported, once, as
//! [`StoreError::QueuedWrites`] by [`Store::flush`] or by whatever call on the
//! store comes next (from any handle). That error is always about earlier
//! writes: the call that returns it did its own work (queued its command,
//! ran its delete); any other error means the call itself failed.
//!
//! Reads see everything appended before them (they flush first). For a file
//! they run on a small pool of read connections beside the writer (WAL lets
//! them proceed while it writes); for an in-memory store they run on the
//! writer's connection.
//!
//! Several processes may use one file at once (cargo-nextest runs every test
//! in its own process): each has its own writer, IMMEDIATE transactions
//! serialize them and a busy timeout (5 s by default) makes them wait for
//! each other.
//!
//! Eval runs (the cells each run finished, for resuming and merging) are
//! kept beside the sessions: see [`EvalRunMeta`](crate::eval::EvalRunMeta), [`Store::record_cell`] and
//! [`Store::eval_results`]. Their writes go through the same writer but the
//! call waits until they are committed.
//!
//! The state of a session can be read at any index with [`Store::state_at`]:
//! the writer folds `state:<key>:changed` signals as it stores them (see
//! `apply_state_change`) and writes a checkpoint every
//! [`StoreOptions::checkpoint_interval`] signals, so a read folds at most one
//! interval's worth of state changes (a session's end adds one only after
//! half an interval: a short session's state is folded from its start).
//!
//! ```
//! use scaffold::signal::Signal;
//! use scaffold::store::{SessionEnd, SessionFilter, SessionMeta, SessionStatus, Store};
//! use serde_json::json;
//!
//! # fn main() -> Result<(), scaffold::store::StoreError> {
//! let store = Store::in_memory()?;
//! let meta = SessionMeta::new("s1", "planner")
//!     .variant("small-model")
//!     .tag("smoke")
//!     .initial_state(json!({"plan": null}));
//! store.begin_session(&meta)?;
//! store.append("s1", &[
//!     Signal { index: 0, name: "harness:start".into(), payload: json!({}), at_ms: 0, agent: None },
//!     Signal {
//!         index: 1,
//!         name: "state:plan:changed".into(),
//!         payload: json!({"key": "plan", "oldValue": null, "newValue": ["step 1"], "agent": "planner"}),
//!         at_ms: 3,
//!         agent: Some("planner".into()),
//!     },
//! ])?;
//! store.finish_session("s1", &SessionEnd::new(SessionStatus::Completed).duration_ms(5))?;
//!
//! assert_eq!(store.state_at("s1", 0)?, json!({"plan": null}));
//! assert_eq!(store.state_at("s1", 1)?, json!({"plan": ["step 1"]}));
//! let listed = store.list(&SessionFilter::default().tag("smoke"))?;
//! assert_eq!(listed[0].signal_count, 2);
//! assert_eq!(listed[0].status, SessionStatus::Completed);
//! # Ok(())
//! # }
//! ```

mod blocks;
mod checkpointer;
mod claim;
mod create;
mod error;
mod location;
mod queue;
pub(crate) mod runs;
pub(crate) mod schema;
mod search;
pub(crate) mod state;
mod writer;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::workflow::{SessionEnd, SessionMeta, SessionStatus};
use crate::workflow::{SessionSink, SinkError};
pub(crate) use claim::{ClaimKind, RunClaim};
pub(crate) use error::{Context, to_i64, to_u64};
pub use error::{StoreError, UnknownStatus};
pub(crate) use runs::{CELLS_SQL, RECORD_SQL, RunOp, runs as eval_runs_in};
pub(crate) use runs::{EvalRunRecord, ORIGIN_HARNESS, ORIGIN_NEXTEST};
pub use runs::{EvalTrend, RunSource};
pub use search::{CellKey, has_words};
pub(crate) use state::{apply_state_change, fold_state};

use queue::Queue;
use writer::{Command, Rows, Shared, Writer, WriterConfig};

use crate::signal::Signal;

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl FromStr for SessionStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "running" => Ok(SessionStatus::Running),
            "completed" => Ok(SessionStatus::Completed),
            "failed" => Ok(SessionStatus::Failed),
            "terminated" => Ok(SessionStatus::Terminated),
            "interrupted" => Ok(SessionStatus::Interrupted),
            other => Err(UnknownStatus(other.to_owned())),
        }
    }
}

/// A stored session: what it began with and how it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// What it began with.
    #[serde(flatten)]
    pub meta: SessionMeta,
    /// How it stands.
    pub status: SessionStatus,
    /// The error of a failed or terminated run.
    pub error: Option<String>,
    /// Unix milliseconds, once finished.
    pub ended_at_ms: Option<u64>,
    /// Wall time, once finished.
    pub duration_ms: Option<u64>,
    /// The workflow's output, once finished.
    pub output: Option<Value>,
    /// The state at the end, once finished.
    pub final_state: Option<Value>,
    /// How many signals are stored.
    pub signal_count: u64,
}

/// Which sessions [`Store::list`] returns; all of the conditions given must hold.
///
/// ```
/// use scaffold::store::SessionFilter;
/// let f = SessionFilter::default().tag("smoke").workflow("planner").variant("gpt").limit(10);
/// # let _ = f;
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionFilter {
    /// Tags the session must all have.
    pub tags: Vec<String>,
    /// The workflow.
    pub workflow: Option<String>,
    /// The variant.
    pub variant: Option<String>,
    /// The parent session.
    pub parent_id: Option<String>,
    /// The status.
    pub status: Option<SessionStatus>,
    /// At most this many (the newest).
    pub limit: Option<usize>,
}

impl SessionFilter {
    /// Sessions with this tag (several calls: all of them).
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// Sessions of this workflow.
    pub fn workflow(mut self, workflow: impl Into<String>) -> Self {
        self.workflow = Some(workflow.into());
        self
    }

    /// Sessions of this variant.
    pub fn variant(mut self, variant: impl Into<String>) -> Self {
        self.variant = Some(variant.into());
        self
    }

    /// Sessions forked from this one.
    pub fn parent(mut self, parent_id: impl Into<String>) -> Self {
        self.parent_id = Some(parent_id.into());
        self
    }

    /// Sessions with this status.
    pub fn status(mut self, status: SessionStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// At most `n` sessions.
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = Some(n);
        self
    }
}

/// Settings of a [`Store`], and the constructors that take them.
///
/// ```
/// use scaffold::store::StoreOptions;
/// # fn main() -> Result<(), scaffold::store::StoreError> {
/// let store = StoreOptions::default().checkpoint_interval(100).batch_size(1000).in_memory()?;
/// # let _ = store;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// Write a state checkpoint every this many signals of a session (when
    /// its state changed since the last one), and at its end when at least
    /// half as many came after the last interval. 0 writes none. Default 1000.
    pub checkpoint_interval: u64,
    /// At most this many signals per write transaction. Default 8192.
    pub batch_size: usize,
    /// How many write commands may wait for the writer before
    /// [`Store::append`] blocks (so memory stays bounded). Default 4096.
    pub queue_capacity: usize,
    /// How long to wait for another process's write lock. Default 5 s.
    pub busy_timeout: Duration,
    /// How long writes nobody waits for (a session's signals) may wait for
    /// more before they are committed, so that a cell's writes share one
    /// transaction. A durable write ([`Store::record_cell`]), a flush or a
    /// read commits at once. Default 5 ms; zero commits every batch at once.
    pub linger: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            checkpoint_interval: 1000,
            batch_size: 8192,
            queue_capacity: 4096,
            busy_timeout: Duration::from_secs(5),
            linger: Duration::from_millis(5),
        }
    }
}

impl StoreOptions {
    /// Set [`StoreOptions::checkpoint_interval`].
    pub fn checkpoint_interval(mut self, signals: u64) -> Self {
        self.checkpoint_interval = signals;
        self
    }

    /// Set [`StoreOptions::batch_size`] (at least 1).
    pub fn batch_size(mut self, signals: usize) -> Self {
        self.batch_size = signals.max(1);
        self
    }

    /// Set [`StoreOptions::queue_capacity`] (at least 1).
    pub fn queue_capacity(mut self, commands: usize) -> Self {
        self.queue_capacity = commands.max(1);
        self
    }

    /// Set [`StoreOptions::busy_timeout`].
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Set [`StoreOptions::linger`].
    pub fn linger(mut self, linger: Duration) -> Self {
        self.linger = linger;
        self
    }

    /// Open (or create) the database file at `path` with these options; see [`Store::open`].
    pub fn open(self, path: impl AsRef<Path>) -> Result<Store, StoreError> {
        Store::open_file(path.as_ref(), self)
    }

    /// A private in-memory database with these options; see [`Store::in_memory`].
    pub fn in_memory(self) -> Result<Store, StoreError> {
        Store::open_memory(self)
    }

    /// The default database with these options; see [`Store::open_default`].
    pub fn open_default(self) -> Result<Store, StoreError> {
        Store::open_file(&Store::default_path(), self)
    }
}

/// A handle on a session store. Cheap to clone; every clone uses the same
/// writer thread. Dropping the last one commits everything queued and joins
/// the writer.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
    /// Tags this handle adds to every session it begins.
    session_tags: Arc<[String]>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.shared.path)
            .finish_non_exhaustive()
    }
}

struct Inner {
    shared: Arc<Shared>,
    queue: Arc<Queue>,
    thread: Option<JoinHandle<()>>,
    readers: Readers,
}

enum Readers {
    /// Read connections on the file, kept for reuse.
    Pool {
        path: PathBuf,
        busy_timeout: Duration,
        idle: Mutex<Vec<Connection>>,
    },
    /// In memory: reads run on the writer's connection.
    Writer,
}

/// How long the writer of a file store waits with nothing to write before it
/// checkpoints the WAL (a passive checkpoint: it never waits for readers).
const IDLE_CHECKPOINT: Duration = Duration::from_millis(20);

/// How many frames (pages) the WAL of a file store holds before it is
/// checkpointed, SQLite's default being 1000. A page that many commits
/// rewrite (an index's last leaf, a b-tree's root) is copied into the
/// database once per checkpoint, so fewer, larger checkpoints copy fewer
/// pages and sync the files less often. The checkpoint runs on a thread of
/// its own while the writer goes on (see `checkpointer`), but each one ends
/// with three syncs on the writer, which the cells waiting for a commit wait
/// for (its catch-up and the WAL's restart): at 4,000 frames, 87 syncs in a
/// 10,000-cell playback run, a tenth of its time when a sync takes 5 ms.
/// So the WAL file grows to about 40 MB and keeps that size while the store
/// is open.
const WAL_CHECKPOINT_FRAMES: u32 = 8000;

/// How many idle read connections a store keeps.
const MAX_IDLE_READERS: usize = 4;

impl Drop for Inner {
    fn drop(&mut self) {
        // Closing the queue makes the writer commit what is queued and stop.
        self.queue.close();
        let panicked = self
            .thread
            .take()
            .is_some_and(|thread| thread.join().is_err());
        if panicked {
            eprintln!(
                "scaffold: session store {}: the writer thread panicked; queued writes may be lost",
                self.shared.path
            );
        }
        if let Some(e) = self.shared.take() {
            eprintln!("scaffold: {e}");
        }
    }
}

fn configure(
    conn: &Connection,
    path: &str,
    file: bool,
    busy_timeout: Duration,
) -> Result<(), StoreError> {
    conn.busy_timeout(busy_timeout)
        .ctx(path, || "setting the busy timeout".into())?;
    if file {
        // Switching a fresh file to WAL while another process creates it
        // fails at once with SQLITE_BUSY (the busy handler is not called for
        // it): several nextest processes opening a new database hit this.
        let mode: String = retry_while_busy(busy_timeout, || {
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
        })
        .ctx(path, || "switching to WAL journal mode".into())?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Corrupt {
                path: path.to_owned(),
                what: "journal mode".into(),
                detail: format!("asked for WAL, SQLite kept {mode}"),
            });
        }
    }
    conn.pragma_update(None, "synchronous", "NORMAL")
        .ctx(path, || "setting synchronous = NORMAL".into())?;
    limit_cache(conn, path)?;
    conn.pragma_update(None, "foreign_keys", true)
        .ctx(path, || "enabling foreign keys".into())?;
    Ok(())
}

/// SQLite's page cache per connection, in KiB (as `PRAGMA cache_size`
/// takes it: negative). Its default, 2 MiB, filled up as a run went on
/// and made resident memory grow with the number of cells; the writer
/// appends at the ends of its B-trees (time-ordered ids), and the reports
/// read the cells' records once, in order, so the pages they need are few.
const CACHE_KIB: i64 = -256;

/// Hold `conn`'s page cache to [`CACHE_KIB`].
fn limit_cache(conn: &Connection, path: &str) -> Result<(), StoreError> {
    conn.pragma_update(None, "cache_size", CACHE_KIB)
        .ctx(path, || "setting cache_size".into())
}

/// Run `f` again while it fails with SQLITE_BUSY or SQLITE_LOCKED, for at
/// most `timeout`.
fn retry_while_busy<T>(
    timeout: Duration,
    mut f: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let start = std::time::Instant::now();
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && start.elapsed() < timeout =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// The condition of [`Store::list`] for one tag (bound to `?`).
pub(crate) const TAG_CONDITION: &str = "id IN (SELECT session_id FROM session_tags WHERE tag = ?)";

const SESSION_COLUMNS: &str = "id, workflow, variant, parent_id, fork_point, input, initial_state, \
     tags, status, error, started_at, ended_at, duration_ms, output, final_state, signal_count";

impl Store {
    /// Open (or create) the database file at `path` with default options.
    ///
    /// Creates missing parent directories, switches the file to WAL with
    /// `synchronous = NORMAL`, a 5 s busy timeout and foreign keys, and
    /// migrates it to `SCHEMA_VERSION`. A file written by a newer schema is
    /// refused with [`StoreError::NewerSchema`].
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        Store::open_file(path.as_ref(), StoreOptions::default())
    }

    /// Open the existing database file at `path` (default options), or
    /// `Ok(None)` when there is no file there: unlike [`Store::open`] it
    /// creates neither the file nor its directory, so reading tools can say
    /// "no database at …" instead of leaving an empty one behind. An older
    /// schema is migrated as by [`Store::open`].
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Option<Store>, StoreError> {
        let path = path.as_ref();
        if !path.is_file() {
            return Ok(None);
        }
        Store::open_with(path, StoreOptions::default(), false).map(Some)
    }

    /// Open the existing database file at `path` to read only, or
    /// `Ok(None)` when there is no file there: nothing is created, migrated
    /// or written (every connection is `query_only`, so a write fails), as a
    /// viewer over another process's runs wants. A database of an older
    /// schema is [`StoreError::Corrupt`] saying to open it once with the
    /// harness or [`Store::open_existing`], which migrate it.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Option<Store>, StoreError> {
        let path = path.as_ref();
        if !path.is_file() {
            return Ok(None);
        }
        let name = path.display().to_string();
        let options = StoreOptions::default();
        let conn = open_reader(path, &name, options.busy_timeout)?;
        let version = schema::user_version(&conn, &name)?;
        if version != schema::SCHEMA_VERSION {
            return Err(StoreError::Corrupt {
                path: name,
                what: "schema version".into(),
                detail: format!(
                    "{version}, where this version reads {}: open it once with the harness \
                     (or any cargo scaffold command but `view`) to migrate it",
                    schema::SCHEMA_VERSION
                ),
            });
        }
        let readers = Readers::Pool {
            path: path.to_path_buf(),
            busy_timeout: options.busy_timeout,
            idle: Mutex::new(Vec::new()),
        };
        Store::start(conn, name, readers, &options).map(Some)
    }

    /// A private in-memory database with default options; it lives as long
    /// as the store's handles.
    pub fn in_memory() -> Result<Store, StoreError> {
        Store::open_memory(StoreOptions::default())
    }

    /// Open the default database, [`Store::default_path`].
    pub fn open_default() -> Result<Store, StoreError> {
        Store::open_file(&Store::default_path(), StoreOptions::default())
    }

    /// Options to open a store with other settings.
    pub fn options() -> StoreOptions {
        StoreOptions::default()
    }

    /// `<target>/scaffold/scaffold.db`, where `<target>` is
    /// `$CARGO_TARGET_DIR` when set, else the `target/` directory beside the
    /// nearest `Cargo.lock` above the current directory (the workspace root
    /// when run by `cargo test`), else `target/` in the current directory.
    ///
    /// When `$CARGO_TARGET_DIR` is not the workspace's own `target/` (one
    /// target directory shared by several projects), each package gets its
    /// own directory: `<target>/scaffold/<package>-<hash of its
    /// directory>/scaffold.db`, the package being the nearest `Cargo.toml`
    /// with a `[package]` above the current directory.
    pub fn default_path() -> PathBuf {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Self::default_path_from(&cwd)
    }

    /// Like [`Store::default_path`], looking for the workspace from `dir`
    /// instead of the current directory (the harness passes its package).
    pub fn default_path_from(dir: &Path) -> PathBuf {
        let target = std::env::var_os("CARGO_TARGET_DIR").filter(|t| !t.is_empty());
        Self::default_path_in(target.as_deref().map(Path::new), dir)
    }

    /// Like [`Store::default_path_from`] with the target directory `target`
    /// (`None`: the workspace's own) rather than `$CARGO_TARGET_DIR`.
    pub fn default_path_in(target: Option<&Path>, dir: &Path) -> PathBuf {
        location::scaffold_dir(target, dir).join("scaffold.db")
    }

    fn open_file(path: &Path, options: StoreOptions) -> Result<Store, StoreError> {
        Store::open_with(path, options, true)
    }

    /// Open the file at `path`; with `create`, make it (and its directory)
    /// when missing.
    fn open_with(path: &Path, options: StoreOptions, create: bool) -> Result<Store, StoreError> {
        let name = path.display().to_string();
        if create && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: name.clone(),
                dir: dir.to_path_buf(),
                source,
            })?;
        }
        let mut conn = if create {
            // A new file is built aside and appears whole (one sync, not
            // SQLite's five); a file already there is opened as it is.
            create::create_aside(path);
            Connection::open(path)
        } else {
            Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_WRITE
                    | OpenFlags::SQLITE_OPEN_URI
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
        }
        .ctx(&name, || "opening the database".into())?;
        configure(&conn, &name, true, options.busy_timeout)?;
        schema::migrate(&mut conn, &name)?;
        let readers = Readers::Pool {
            path: path.to_path_buf(),
            busy_timeout: options.busy_timeout,
            idle: Mutex::new(Vec::new()),
        };
        Store::start(conn, name, readers, &options)
    }

    fn open_memory(options: StoreOptions) -> Result<Store, StoreError> {
        let name = format!(":memory: ({})", uuid::Uuid::new_v4());
        let mut conn =
            Connection::open_in_memory().ctx(&name, || "opening an in-memory database".into())?;
        configure(&conn, &name, false, options.busy_timeout)?;
        schema::migrate(&mut conn, &name)?;
        Store::start(conn, name, Readers::Writer, &options)
    }

    fn start(
        conn: Connection,
        name: String,
        readers: Readers,
        options: &StoreOptions,
    ) -> Result<Store, StoreError> {
        let shared = Arc::new(Shared::new(name));
        let queue = Arc::new(Queue::new(options.queue_capacity));
        let file = matches!(readers, Readers::Pool { .. });
        let writer = Writer::new(
            conn,
            Arc::clone(&shared),
            WriterConfig {
                checkpoint_interval: options.checkpoint_interval,
                batch_size: options.batch_size.max(1),
                linger: options.linger,
                // A file's WAL is moved into the database while the writer
                // is idle, so that closing the store has little left to move.
                idle_checkpoint: file.then_some(IDLE_CHECKPOINT),
                wal_checkpoint_frames: file.then_some(WAL_CHECKPOINT_FRAMES),
                background_checkpoints: match &readers {
                    Readers::Pool { path, .. } => Some((path.clone(), options.busy_timeout)),
                    Readers::Writer => None,
                },
            },
        )?;
        let thread = std::thread::Builder::new()
            .name("scaffold-store-writer".into())
            .spawn({
                let queue = Arc::clone(&queue);
                move || writer.run(&queue)
            })
            .map_err(|source| StoreError::Spawn {
                path: shared.path.clone(),
                source,
            })?;
        Ok(Store {
            inner: Arc::new(Inner {
                shared,
                queue,
                thread: Some(thread),
                readers,
            }),
            session_tags: Arc::new([]),
        })
    }

    /// The database's name in messages: its path, or `:memory:` with an id.
    pub fn path(&self) -> &str {
        &self.inner.shared.path
    }

    fn gone(&self) -> StoreError {
        StoreError::WriterGone {
            path: self.inner.shared.path.clone(),
        }
    }

    /// Report an earlier queued write's failure, once.
    fn check(&self) -> Result<(), StoreError> {
        match self.inner.shared.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn send(&self, command: Command) -> Result<(), StoreError> {
        self.inner.queue.push(command).map_err(|_| self.gone())
    }

    /// Queue a command; then report the failures of earlier writes, taken
    /// before queuing so that they cannot include this command's own.
    fn send_reporting(&self, command: Command) -> Result<(), StoreError> {
        let shared = &self.inner.shared;
        let earlier = shared.take_pending();
        if let Err(e) = self.send(command) {
            if let Some((first, count)) = earlier {
                shared.record(first, count);
            }
            return Err(e);
        }
        match earlier {
            Some((first, count)) => Err(shared.queued(first, count)),
            None => Ok(()),
        }
    }

    /// Queue the start of a session. A session id already stored is
    /// reported as [`StoreError::SessionExists`] (inside
    /// [`StoreError::QueuedWrites`]) by a later call.
    pub fn begin_session(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        let mut meta = meta.clone();
        for tag in self.session_tags.iter() {
            if !meta.tags.contains(tag) {
                meta.tags.push(tag.clone());
            }
        }
        self.send_reporting(Command::Begin(Box::new(meta)))
    }

    /// A handle on the same store that adds `tags` to every session it
    /// begins (the harness tags its cells' sessions with their eval run).
    pub fn tagging_sessions(&self, tags: impl IntoIterator<Item = String>) -> Store {
        Store {
            inner: Arc::clone(&self.inner),
            session_tags: self.session_tags.iter().cloned().chain(tags).collect(),
        }
    }

    /// Queue signals of a session, in index order.
    ///
    /// Serializes the payloads into one buffer (cheaper than copying the
    /// signals) and returns once it is queued; the writer stores them, folds
    /// their state changes and writes checkpoints. Blocks only when
    /// [`StoreOptions::queue_capacity`] commands are already waiting. Indices
    /// must increase across calls; a refused append (an index that does not
    /// follow, a session never begun) stores none of its signals and is
    /// reported by a later call.
    pub fn append(&self, session_id: &str, signals: &[Signal]) -> Result<(), StoreError> {
        if signals.is_empty() {
            return self.check();
        }
        let rows = Rows::new(session_id, signals).ctx(self.path(), || {
            format!("serializing signals of session {session_id}")
        })?;
        self.send_reporting(Command::Append(rows))
    }

    /// Queue the end of a session. The signals stay; a failed run keeps its error.
    pub fn finish_session(&self, id: &str, end: &SessionEnd) -> Result<(), StoreError> {
        self.send_reporting(Command::Finish {
            id: id.to_owned(),
            end: Box::new(end.clone()),
        })
    }

    /// Wait until every write queued before this call is committed. Returns
    /// the failure of any queued write not reported yet.
    pub fn flush(&self) -> Result<(), StoreError> {
        if self.inner.queue.is_idle() {
            // Nothing queued is unfinished: no round trip through the writer.
            return self.check();
        }
        self.flush_index()
    }

    /// Have the writer commit what is queued, index the cells waiting for
    /// search and move the WAL into the database now, in the background,
    /// rather than once it idles or the store closes: the close that comes
    /// next finds nothing to sync and an empty WAL to remove (unless another
    /// connection was reading it). Nothing waits: a failure leaves the work
    /// to the idle writer or the close, as before.
    pub(crate) fn checkpoint_now(&self) {
        let _ = self.send(Command::Checkpoint);
    }

    /// Commit everything queued and index the cells waiting for search
    /// (which the writer otherwise does in batches): what a search sees, and
    /// the round trip through the writer of [`Store::flush`].
    pub(crate) fn flush_index(&self) -> Result<(), StoreError> {
        let (reply, done) = mpsc::channel();
        self.send(Command::Flush(reply))?;
        done.recv().map_err(|_| self.gone())?;
        self.check()
    }

    /// Run `f` on a read connection after everything queued is committed.
    pub(crate) fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &str) -> Result<T, StoreError> + Send + 'static,
    {
        match &self.inner.readers {
            Readers::Pool {
                path,
                busy_timeout,
                idle,
            } => {
                self.flush()?;
                let name = self.inner.shared.path.as_str();
                let conn = idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
                let conn = match conn {
                    Some(c) => c,
                    None => open_reader(path, name, *busy_timeout)?,
                };
                let out = f(&conn, name);
                let mut idle = idle.lock().unwrap_or_else(|p| p.into_inner());
                if idle.len() < MAX_IDLE_READERS {
                    idle.push(conn);
                }
                out
            }
            Readers::Writer => {
                let (reply, answer) = mpsc::channel();
                self.send(Command::Read(Box::new(move |conn, name| {
                    let _ = reply.send(f(conn, name));
                })))?;
                let out = answer.recv().map_err(|_| self.gone())?;
                // The writer ran everything queued before the read.
                self.check()?;
                out
            }
        }
    }

    /// The session, or `None` if it is not stored.
    pub fn session(&self, id: &str) -> Result<Option<SessionRecord>, StoreError> {
        let id = id.to_owned();
        self.read(move |conn, path| {
            let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1");
            let raw = conn
                .prepare_cached(&sql)
                .and_then(|mut st| st.query_row([&id], RawSession::from_row).optional())
                .ctx(path, || format!("reading session {id}"))?;
            raw.map(|r| r.into_record(path)).transpose()
        })
    }

    /// The ids of the sessions whose id starts with `prefix`, in id order,
    /// at most `limit` of them (ask for 2 to tell a unique prefix from an
    /// ambiguous one). An empty prefix matches every session.
    ///
    /// ```
    /// use scaffold::store::{SessionMeta, Store};
    /// # fn main() -> Result<(), scaffold::store::StoreError> {
    /// let store = Store::in_memory()?;
    /// for id in ["3f2a9c1e-aa", "3f2a77d0-bb", "9b01c4de-cc"] {
    ///     store.begin_session(&SessionMeta::new(id, "demo"))?;
    /// }
    /// assert_eq!(store.find_by_prefix("3f2a9", 2)?, ["3f2a9c1e-aa"]);
    /// assert_eq!(store.find_by_prefix("3f2a", 2)?.len(), 2);
    /// assert!(store.find_by_prefix("ffff", 2)?.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn find_by_prefix(&self, prefix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        self.find_ids(prefix, limit, "starts", "substr(id, 1, length(?1)) = ?1")
    }

    /// Up to `limit` session ids that end with `suffix`, sorted. Session ids
    /// are time-ordered (`new_session_id`): sessions made together share
    /// their first characters and differ in their last, which is what
    /// `cargo scaffold sessions list` shows.
    ///
    /// ```
    /// use scaffold::store::{SessionMeta, Store};
    /// # fn main() -> Result<(), scaffold::store::StoreError> {
    /// let store = Store::in_memory()?;
    /// for id in ["aa-3f2a9c1e", "bb-3f2a77d0"] {
    ///     store.begin_session(&SessionMeta::new(id, "demo"))?;
    /// }
    /// assert_eq!(store.find_by_suffix("9c1e", 2)?, ["aa-3f2a9c1e"]);
    /// assert!(store.find_by_suffix("3f2a", 2)?.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn find_by_suffix(&self, suffix: &str, limit: usize) -> Result<Vec<String>, StoreError> {
        self.find_ids(
            suffix,
            limit,
            "ends",
            "length(id) >= length(?1) AND substr(id, length(id) - length(?1) + 1) = ?1",
        )
    }

    /// Up to `limit` session ids matching `part` by `condition` (SQL over `id` and `?1`).
    fn find_ids(
        &self,
        part: &str,
        limit: usize,
        how: &'static str,
        condition: &'static str,
    ) -> Result<Vec<String>, StoreError> {
        let part = part.to_owned();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(move |conn, path| {
            let what = || format!("finding sessions whose id {how} with `{part}`");
            let mut st = conn
                .prepare_cached(&format!(
                    "SELECT id FROM sessions WHERE {condition} ORDER BY id LIMIT ?2"
                ))
                .ctx(path, what)?;
            st.query_map(params![part, limit], |r| r.get::<_, String>(0))
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .ctx(path, what)
        })
    }

    /// Every signal of the session, in index order (empty if it has none or does not exist).
    pub fn signals(&self, id: &str) -> Result<Vec<Signal>, StoreError> {
        self.signals_range(id, 0, u64::MAX)
    }

    /// The signals with `from <= index <= to`, in index order.
    pub fn signals_range(&self, id: &str, from: u64, to: u64) -> Result<Vec<Signal>, StoreError> {
        let id = id.to_owned();
        self.read(move |conn, path| blocks::signals_in(conn, path, &id, (from, to)))
    }

    /// The sessions that pass `filter`, newest first.
    pub fn list(&self, filter: &SessionFilter) -> Result<Vec<SessionRecord>, StoreError> {
        let filter = filter.clone();
        self.read(move |conn, path| {
            let mut sql = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE 1");
            let mut args: Vec<SqlValue> = Vec::new();
            for tag in &filter.tags {
                sql.push_str(" AND ");
                sql.push_str(TAG_CONDITION);
                args.push(SqlValue::Text(tag.clone()));
            }
            let columns = [
                ("workflow", filter.workflow.clone()),
                ("variant", filter.variant.clone()),
                ("parent_id", filter.parent_id.clone()),
                ("status", filter.status.map(|s| s.as_str().to_owned())),
            ];
            for (column, value) in columns {
                if let Some(v) = value {
                    sql.push_str(&format!(" AND {column} = ?"));
                    args.push(SqlValue::Text(v));
                }
            }
            sql.push_str(" ORDER BY started_at DESC, rowid DESC");
            if let Some(n) = filter.limit {
                sql.push_str(" LIMIT ?");
                args.push(SqlValue::Integer(i64::try_from(n).unwrap_or(i64::MAX)));
            }
            let what = || format!("listing sessions ({filter:?})");
            let mut st = conn.prepare_cached(&sql).ctx(path, what)?;
            let raws = st
                .query_map(rusqlite::params_from_iter(args), RawSession::from_row)
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .ctx(path, what)?;
            raws.into_iter().map(|r| r.into_record(path)).collect()
        })
    }

    /// Delete a session with its tags, signals and checkpoints; sessions
    /// forked from it stay. Returns whether it existed. Ordered after every
    /// write queued before it.
    pub fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        let (reply, answer) = mpsc::channel();
        self.send(Command::Delete {
            id: id.to_owned(),
            reply,
        })?;
        let existed = answer.recv().map_err(|_| self.gone())??;
        self.check()?;
        Ok(existed)
    }

    /// The state after applying every signal with index `<= index` to the
    /// initial state (an index past the end gives the last state).
    ///
    /// Starts from the nearest checkpoint at or before `index` and folds the
    /// state changes after it. [`StoreError::SessionNotFound`] if the session
    /// is not stored.
    pub fn state_at(&self, id: &str, index: u64) -> Result<Value, StoreError> {
        let id = id.to_owned();
        self.read(move |conn, path| state::state_at(conn, path, &id, index, true))
    }

    /// [`Store::state_at`] folding from the initial state, ignoring
    /// checkpoints (for comparison and checks).
    pub fn state_at_without_checkpoints(&self, id: &str, index: u64) -> Result<Value, StoreError> {
        let id = id.to_owned();
        self.read(move |conn, path| state::state_at(conn, path, &id, index, false))
    }

    /// Queue an eval-run write and wait until it is committed.
    pub(crate) fn write_run(&self, op: runs::RunOp) -> Result<(), StoreError> {
        let (reply, answer) = mpsc::channel();
        self.send(Command::Run {
            op: Box::new(op),
            reply,
        })?;
        answer.recv().map_err(|_| self.gone())??;
        self.check()
    }

    /// Mark run `id` finished, now. [`StoreError::EvalRunNotFound`] if it was never begun.
    pub fn finish_eval_run(&self, id: &str) -> Result<(), StoreError> {
        let finished_at = to_i64(self.path(), "eval run finishedAtMs", now_ms())?;
        self.write_run(runs::RunOp::Finish {
            run_id: id.to_owned(),
            finished_at,
        })
    }

    /// Claim eval run `id` for this process, so that no other process runs
    /// it at once (see [`ClaimKind`]); held until the claim is dropped, or
    /// the process ends. [`StoreError::RunClaimed`] names the holder of a
    /// claim that keeps this one out. An in-memory store, which no other
    /// process sees, grants every claim.
    pub(crate) fn claim_eval_run(&self, id: &str, kind: ClaimKind) -> Result<RunClaim, StoreError> {
        match &self.inner.readers {
            Readers::Pool { path, .. } => claim::claim(path, self.path(), id, kind),
            Readers::Writer => Ok(claim::in_memory(kind)),
        }
    }

    /// How run `id` chose its cells ([`EvalRunMeta::selection`](crate::eval::EvalRunMeta::selection)); `None` for
    /// a run begun without one (or by a scaffold before it kept them), or not stored.
    pub fn eval_run_selection(&self, id: &str) -> Result<Option<String>, StoreError> {
        let id = id.to_owned();
        self.read(move |conn, path| runs::selection(conn, path, &id))
    }

    /// Mark the sessions tagged `tag` that are still `running` as
    /// [`SessionStatus::Interrupted`], ended now: their process is gone (a
    /// resume does this for its run's sessions once it holds the run's
    /// claim). Returns once committed.
    pub fn interrupt_sessions(&self, tag: &str) -> Result<(), StoreError> {
        let ended_at = to_i64(self.path(), "sessions endedAtMs", now_ms())?;
        self.write_run(runs::RunOp::Interrupt {
            tag: tag.to_owned(),
            ended_at,
        })
    }

    /// Every eval run, newest first.
    pub fn eval_runs(&self) -> Result<Vec<EvalRunRecord>, StoreError> {
        self.read(|conn, path| runs::runs(conn, path, None))
    }

    /// The id of every eval run, newest first (what [`Store::eval_runs`]
    /// lists, without adding up their cells).
    pub fn eval_run_ids(&self) -> Result<Vec<String>, StoreError> {
        self.read(runs::run_ids)
    }

    /// A number that grows each time a cell of eval run `id` is recorded
    /// (again, too): what a reader caching the run's results compares.
    pub fn eval_run_revision(&self, id: &str) -> Result<i64, StoreError> {
        let id = id.to_owned();
        self.read(move |conn, path| runs::revision(conn, path, &id))
    }

    /// Each eval of each run, oldest run first: its cells, how many passed
    /// and their cost, added up in the database (a trend over every run
    /// without reading its cells' records back).
    pub fn eval_trends(&self) -> Result<Vec<EvalTrend>, StoreError> {
        self.read(runs::trends)
    }

    /// The eval run `id`, or `None` if it is not stored.
    pub fn eval_run(&self, id: &str) -> Result<Option<EvalRunRecord>, StoreError> {
        let id = id.to_owned();
        self.read(move |conn, path| runs::run(conn, path, &id))
    }

    /// The newest eval run that is not finished (what `SCAFFOLD_RESUME=1` resumes).
    pub fn latest_unfinished_eval_run(&self) -> Result<Option<EvalRunRecord>, StoreError> {
        Ok(self.eval_runs()?.into_iter().find(|r| !r.finished))
    }

    /// The schema version of the database (`PRAGMA user_version`).
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.read(schema::user_version)
    }
}

impl SessionSink for Store {
    fn begin_session(&self, meta: &SessionMeta) -> Result<(), SinkError> {
        Ok(Store::begin_session(self, meta)?)
    }

    fn append(&self, session_id: &str, signals: &[Signal]) -> Result<(), SinkError> {
        Ok(Store::append(self, session_id, signals)?)
    }

    fn finish_session(&self, id: &str, end: &SessionEnd) -> Result<(), SinkError> {
        Ok(Store::finish_session(self, id, end)?)
    }
}

fn open_reader(path: &Path, name: &str, busy_timeout: Duration) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .ctx(name, || "opening a read connection".into())?;
    conn.busy_timeout(busy_timeout)
        .ctx(name, || "setting the busy timeout".into())?;
    conn.pragma_update(None, "query_only", true)
        .ctx(name, || "making a read connection read-only".into())?;
    limit_cache(&conn, name)?;
    Ok(conn)
}

/// A `sessions` row as stored, before JSON parsing.
struct RawSession {
    id: String,
    workflow: String,
    variant: Option<String>,
    parent_id: Option<String>,
    fork_point: Option<String>,
    input: String,
    initial_state: String,
    tags: String,
    status: String,
    error: Option<String>,
    started_at: i64,
    ended_at: Option<i64>,
    duration_ms: Option<i64>,
    output: Option<String>,
    final_state: Option<String>,
    signal_count: i64,
}

impl RawSession {
    fn from_row(r: &Row<'_>) -> rusqlite::Result<RawSession> {
        Ok(RawSession {
            id: r.get(0)?,
            workflow: r.get(1)?,
            variant: r.get(2)?,
            parent_id: r.get(3)?,
            fork_point: r.get(4)?,
            input: r.get(5)?,
            initial_state: r.get(6)?,
            tags: r.get(7)?,
            status: r.get(8)?,
            error: r.get(9)?,
            started_at: r.get(10)?,
            ended_at: r.get(11)?,
            duration_ms: r.get(12)?,
            output: r.get(13)?,
            final_state: r.get(14)?,
            signal_count: r.get(15)?,
        })
    }

    fn into_record(self, path: &str) -> Result<SessionRecord, StoreError> {
        let id = self.id;
        let parse = |column: &str, text: &str| -> Result<Value, StoreError> {
            serde_json::from_str(text).ctx(path, || format!("parsing sessions.{column} of {id}"))
        };
        let fork_point = self
            .fork_point
            .as_deref()
            .map(|t| parse("fork_point", t))
            .transpose()?;
        let input = parse("input", &self.input)?;
        let initial_state = parse("initial_state", &self.initial_state)?;
        let tags: Vec<String> = serde_json::from_str(&self.tags)
            .ctx(path, || format!("parsing sessions.tags of {id}"))?;
        let output = self
            .output
            .as_deref()
            .map(|t| parse("output", t))
            .transpose()?;
        let final_state = self
            .final_state
            .as_deref()
            .map(|t| parse("final_state", t))
            .transpose()?;
        let status = self
            .status
            .parse()
            .map_err(|e: UnknownStatus| StoreError::Corrupt {
                path: path.to_owned(),
                what: format!("sessions.status of {id}"),
                detail: e.to_string(),
            })?;
        let opt = |what: &str, v: Option<i64>| v.map(|v| to_u64(path, what, v)).transpose();
        Ok(SessionRecord {
            status,
            error: self.error,
            ended_at_ms: opt("sessions.ended_at", self.ended_at)?,
            duration_ms: opt("sessions.duration_ms", self.duration_ms)?,
            output,
            final_state,
            signal_count: to_u64(path, "sessions.signal_count", self.signal_count)?,
            meta: SessionMeta {
                workflow: self.workflow,
                variant: self.variant,
                parent_id: self.parent_id,
                fork_point,
                input,
                initial_state,
                tags,
                started_at_ms: to_u64(path, "sessions.started_at", self.started_at)?,
                id,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_and_the_readers_keep_a_small_page_cache() {
        let dir = std::env::temp_dir().join(format!("scaffold-cache-{}", uuid::Uuid::new_v4()));
        let store = Store::open(dir.join("s.db")).unwrap();
        let cache = |conn: &Connection| -> i64 {
            conn.pragma_query_value(None, "cache_size", |r| r.get(0))
                .unwrap()
        };
        let reader = store.read(move |conn, _| Ok(cache(conn))).unwrap();
        assert_eq!(reader, CACHE_KIB);
        let writer = Connection::open(dir.join("s.db")).unwrap();
        assert_ne!(
            cache(&writer),
            CACHE_KIB,
            "SQLite's default, to tell them apart"
        );
        configure(&writer, "s.db", true, Duration::from_secs(1)).unwrap();
        assert_eq!(cache(&writer), CACHE_KIB);
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
