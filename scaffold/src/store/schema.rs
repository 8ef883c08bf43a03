//! The versioned schema and its migrations.
//!
//! The version lives in `PRAGMA user_version`. [`MIGRATIONS`] is an ordered
//! list: step `n` (1-based) takes a database from version `n - 1` to `n`. A
//! later version appends a step (version 2 added the `eval_runs`,
//! `eval_run_evals` and `cell_results` tables); steps already released are
//! never edited.
//!
//! Opening a database whose version is newer than [`SCHEMA_VERSION`] is an
//! error ([`StoreError::NewerSchema`]): this build would not know what the
//! newer tables mean.

use rusqlite::{Connection, TransactionBehavior};

use super::error::{Context, StoreError};

/// One schema step.
#[derive(Debug, Clone, Copy)]
pub struct Migration {
    /// The version the step brings the database to.
    pub version: i64,
    /// What the step does, for messages.
    pub description: &'static str,
    /// The SQL, run as one batch inside the migration's transaction.
    pub sql: &'static str,
}

/// The steps, oldest first. Append only.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "sessions, session tags, signals and state checkpoints",
        sql: V1,
    },
    Migration {
        version: 2,
        description: "eval runs, their evals' configs and cell results",
        sql: V2,
    },
];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: i64 = MIGRATIONS[MIGRATIONS.len() - 1].version;

/// Version 1.
///
/// * `sessions.parent_id` has no foreign key: a forked child stays whole when
///   its parent is deleted.
/// * `signals` is keyed by `(session_id, idx)` without a rowid, so one
///   session's signals are stored together in index order.
/// * `signals.state_key` is set only for `state:<key>:changed` signals; the
///   partial index `signals_state` lets `state_at` range-scan just the state
///   changes between a checkpoint and the index asked for.
/// * `checkpoints` holds the folded state after signal `idx`.
/// * `sessions.signal_count` is kept by the writer so listing does not count rows.
const V1: &str = "
CREATE TABLE sessions (
    id            TEXT PRIMARY KEY NOT NULL,
    workflow      TEXT NOT NULL,
    variant       TEXT,
    parent_id     TEXT,
    fork_point    TEXT,
    input         TEXT NOT NULL,
    initial_state TEXT NOT NULL,
    tags          TEXT NOT NULL DEFAULT '[]',
    status        TEXT NOT NULL DEFAULT 'running',
    error         TEXT,
    started_at    INTEGER NOT NULL,
    ended_at      INTEGER,
    duration_ms   INTEGER,
    output        TEXT,
    final_state   TEXT,
    signal_count  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_started ON sessions (started_at);
CREATE INDEX sessions_workflow ON sessions (workflow, started_at);
CREATE INDEX sessions_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL;

CREATE TABLE session_tags (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tag        TEXT NOT NULL,
    PRIMARY KEY (session_id, tag)
) WITHOUT ROWID;
CREATE INDEX session_tags_tag ON session_tags (tag, session_id);

CREATE TABLE signals (
    session_id TEXT NOT NULL,
    idx        INTEGER NOT NULL,
    name       TEXT NOT NULL,
    payload    TEXT NOT NULL,
    at_ms      INTEGER NOT NULL,
    agent      TEXT,
    state_key  TEXT,
    PRIMARY KEY (session_id, idx)
) WITHOUT ROWID;
CREATE INDEX signals_state ON signals (session_id, idx) WHERE state_key IS NOT NULL;

CREATE TABLE checkpoints (
    session_id TEXT NOT NULL,
    idx        INTEGER NOT NULL,
    state      TEXT NOT NULL,
    PRIMARY KEY (session_id, idx)
) WITHOUT ROWID;
";

/// Version 2: eval runs, so that an interrupted run can be resumed and
/// shards can be merged.
///
/// * `eval_runs` is one harness run (or one nextest run, whose processes
///   share its id): `status` is `running` until the summary is written, then
///   `finished`. It keeps its rowid so runs begun in the same millisecond
///   still list in order.
/// * `eval_run_evals` is the configuration of each eval of a run (the
///   results document's `RunConfig` as JSON).
/// * `cell_results` is one finished cell of a run: its id as the test names
///   it (`{eval}::{variant}::{case}[::t{n}]`), its `CellRecord` as JSON, and
///   the verdicts a resumed run reports without running it again.
const V2: &str = "
CREATE TABLE eval_runs (
    id          TEXT PRIMARY KEY NOT NULL,
    origin      TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'finished')),
    started_at  INTEGER NOT NULL,
    finished_at INTEGER
);
CREATE INDEX eval_runs_started ON eval_runs (started_at);

CREATE TABLE eval_run_evals (
    run_id TEXT NOT NULL REFERENCES eval_runs (id) ON DELETE CASCADE,
    eval   TEXT NOT NULL,
    config TEXT NOT NULL,
    PRIMARY KEY (run_id, eval)
) WITHOUT ROWID;

CREATE TABLE cell_results (
    run_id      TEXT NOT NULL REFERENCES eval_runs (id) ON DELETE CASCADE,
    eval        TEXT NOT NULL,
    cell        TEXT NOT NULL,
    record      TEXT NOT NULL,
    passed      INTEGER NOT NULL,
    snapshot_ok INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, eval, cell)
) WITHOUT ROWID;
";

/// The version recorded in the database.
pub(crate) fn user_version(conn: &Connection, path: &str) -> Result<i64, StoreError> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
        .ctx(path, || "reading the schema version".into())
}

/// Bring the database to [`SCHEMA_VERSION`], in one IMMEDIATE transaction so
/// that several processes opening a fresh file at once migrate it once.
///
/// Returns the version the database had before.
pub(crate) fn migrate(conn: &mut Connection, path: &str) -> Result<i64, StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .ctx(path, || "starting the schema migration".into())?;
    let found = user_version(&tx, path)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_owned(),
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for step in MIGRATIONS.iter().filter(|m| m.version > found) {
        tx.execute_batch(step.sql).ctx(path, || {
            format!(
                "migrating to schema version {} ({})",
                step.version, step.description
            )
        })?;
        tx.pragma_update(None, "user_version", step.version)
            .ctx(path, || {
                format!("recording schema version {}", step.version)
            })?;
    }
    tx.commit().ctx(path, || {
        format!("committing the migration to schema version {SCHEMA_VERSION}")
    })?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_increase_by_one() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1, "{}", m.description);
        }
    }

    #[test]
    fn migrates_fresh_and_is_idempotent() {
        let mut conn = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut conn, ":memory:").unwrap(), 0);
        assert_eq!(user_version(&conn, ":memory:").unwrap(), SCHEMA_VERSION);
        assert_eq!(migrate(&mut conn, ":memory:").unwrap(), SCHEMA_VERSION);
    }

    #[test]
    fn a_version_1_database_keeps_its_data_when_migrated() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(V1).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn.execute(
            "INSERT INTO sessions (id, workflow, input, initial_state, started_at) \
             VALUES ('s', 'w', 'null', '{}', 1)",
            [],
        )
        .unwrap();
        assert_eq!(migrate(&mut conn, ":memory:").unwrap(), 1);
        assert_eq!(user_version(&conn, ":memory:").unwrap(), SCHEMA_VERSION);
        let n: i64 = conn
            .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
        let runs: i64 = conn
            .query_row("SELECT COUNT(*) FROM eval_runs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(runs, 0);
    }

    #[test]
    fn state_query_uses_the_partial_index() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, ":memory:").unwrap();
        let plan: Vec<String> = conn
            .prepare(&format!(
                "EXPLAIN QUERY PLAN {}",
                super::super::state::STATE_CHANGES_SQL
            ))
            .unwrap()
            .query_map(["s", "0", "10"], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter().any(|p| p.contains("signals_state")),
            "plan: {plan:?}"
        );
    }
}
