//! The store's error type.

use std::path::PathBuf;

/// What went wrong in the session store.
///
/// Every message names the database (its path, or `:memory:` with an id for an
/// in-memory store) and what the store was doing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The directory that should hold the database could not be created.
    #[error("session store {path}: cannot create the directory {}: {source}", dir.display())]
    CreateDir {
        /// The database.
        path: String,
        /// The directory that could not be created.
        dir: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// SQLite refused an operation.
    #[error("session store {path}: {what}: {source}")]
    Sqlite {
        /// The database.
        path: String,
        /// What the store was doing.
        what: String,
        /// The SQLite error.
        source: rusqlite::Error,
    },
    /// A value could not be turned into JSON or read back from it.
    #[error("session store {path}: {what}: {source}")]
    Json {
        /// The database.
        path: String,
        /// What the store was doing.
        what: String,
        /// The serde_json error.
        source: serde_json::Error,
    },
    /// The database was written by a newer scaffold whose schema this one does not know.
    #[error(
        "session store {path}: the database has schema version {found}, newer than the \
         version {supported} this scaffold knows; upgrade scaffold or use another database file"
    )]
    NewerSchema {
        /// The database.
        path: String,
        /// The version found in the file (`PRAGMA user_version`).
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The session does not exist in the store.
    #[error("session store {path}: no session {id}")]
    SessionNotFound {
        /// The database.
        path: String,
        /// The session id asked for.
        id: String,
    },
    /// The eval run does not exist in the store.
    #[error("session store {path}: no eval run {id}")]
    EvalRunNotFound {
        /// The database.
        path: String,
        /// The run id asked for.
        id: String,
    },
    /// A session with this id was already begun.
    #[error("session store {path}: session {id} already exists")]
    SessionExists {
        /// The database.
        path: String,
        /// The session id.
        id: String,
    },
    /// Signals were appended with an index that does not follow the session's last one.
    #[error(
        "session store {path}: session {id}: signal index {index} does not follow the last stored index {last}"
    )]
    OutOfOrder {
        /// The database.
        path: String,
        /// The session id.
        id: String,
        /// The index that was refused.
        index: u64,
        /// The last index stored for the session.
        last: u64,
    },
    /// A stored value is not what the schema promises (a negative index, an unknown status).
    #[error("session store {path}: corrupt value in {what}: {detail}")]
    Corrupt {
        /// The database.
        path: String,
        /// Where the value was found.
        what: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A number does not fit SQLite's signed 64-bit integers.
    #[error("session store {path}: {what}: {value} does not fit a signed 64-bit integer")]
    Overflow {
        /// The database.
        path: String,
        /// Which value.
        what: String,
        /// The value.
        value: u64,
    },
    /// The writer thread could not be started.
    #[error("session store {path}: cannot start the writer thread: {source}")]
    Spawn {
        /// The database.
        path: String,
        /// The I/O error from the thread builder.
        source: std::io::Error,
    },
    /// The writer thread is gone (it panicked); nothing more can be written.
    #[error("session store {path}: the writer thread has stopped")]
    WriterGone {
        /// The database.
        path: String,
    },
    /// Another live process is running the eval run (see
    /// `Store::claim_eval_run`).
    #[error("session store {path}: eval run {id} is being run by {holder}")]
    RunClaimed {
        /// The database.
        path: String,
        /// The run.
        id: String,
        /// Who holds it, as its claim file says.
        holder: String,
    },
    /// The claim file of an eval run could not be opened, locked or written.
    #[error("session store {path}: cannot claim eval run {id} ({}): {source}", file.display())]
    Claim {
        /// The database.
        path: String,
        /// The run.
        id: String,
        /// The claim file.
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A cell's record was refused because writes of its session failed
    /// before it (a full disk): its session is not whole, so the cell is
    /// not recorded as finished.
    #[error(
        "session store {path}: session {session} lost {count} write(s) (its signals are not all \
         stored), so its cell is not recorded; the first: {first}"
    )]
    SessionIncomplete {
        /// The database.
        path: String,
        /// The session.
        session: String,
        /// How many of its writes failed.
        count: usize,
        /// The first failure.
        first: String,
    },
    /// Writes queued earlier (by `begin_session`, `append`, `finish_session`) failed.
    ///
    /// Reported once, by the first call on the store after the failure
    /// (usually [`Store::flush`](super::Store::flush)). It is never about the
    /// call that returns it: that call did its own work.
    #[error("session store {path}: {count} queued write(s) failed; the first: {first}")]
    QueuedWrites {
        /// The database.
        path: String,
        /// How many queued operations failed since the last report.
        count: usize,
        /// The first failure.
        first: Box<StoreError>,
    },
}

/// A [`SessionStatus`](super::SessionStatus) could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown session status {0:?} (expected running, completed, failed, terminated or interrupted)"
)]
pub struct UnknownStatus(pub String);

/// Shorthands to build errors that carry the database's name.
pub(crate) trait Context<T> {
    /// Attach the database path and what was being done.
    fn ctx(self, path: &str, what: impl FnOnce() -> String) -> Result<T, StoreError>;
}

impl<T> Context<T> for Result<T, rusqlite::Error> {
    fn ctx(self, path: &str, what: impl FnOnce() -> String) -> Result<T, StoreError> {
        self.map_err(|source| StoreError::Sqlite {
            path: path.to_owned(),
            what: what(),
            source,
        })
    }
}

impl<T> Context<T> for Result<T, serde_json::Error> {
    fn ctx(self, path: &str, what: impl FnOnce() -> String) -> Result<T, StoreError> {
        self.map_err(|source| StoreError::Json {
            path: path.to_owned(),
            what: what(),
            source,
        })
    }
}

/// `u64` → SQLite integer.
pub(crate) fn to_i64(path: &str, what: &str, value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Overflow {
        path: path.to_owned(),
        what: what.to_owned(),
        value,
    })
}

/// SQLite integer → `u64`.
pub(crate) fn to_u64(path: &str, what: &str, value: i64) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Corrupt {
        path: path.to_owned(),
        what: what.to_owned(),
        detail: format!("negative value {value}"),
    })
}
