//! The versioned schema and its migrations.
//!
//! The version lives in `PRAGMA user_version`. [`MIGRATIONS`] is an ordered
//! list: step `n` (1-based) takes a database from version `n - 1` to `n`. A
//! later version appends a step (version 2 added the `eval_runs`,
//! `eval_run_evals` and `cell_results` tables, version 3 rebuilt
//! `cell_results` and `session_tags`, version 4 added
//! `eval_runs.selection`, version 5 `eval_runs.source`, version 6 the
//! cells' search index and cost column, version 7 the signals in
//! blocks); steps already
//! released are never edited. A fresh database gets the schema the steps
//! leave in one batch (`CURRENT`), kept equal to them by a test.
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
    Migration {
        version: 3,
        description: "cell results as a rowid table; session tags keyed by tag",
        sql: V3,
    },
    Migration {
        version: 4,
        description: "the cells each eval run selected",
        sql: V4,
    },
    Migration {
        version: 5,
        description: "the commit and branch each eval run ran on",
        sql: V5,
    },
    Migration {
        version: 6,
        description: "each cell's session and cost as columns; a full-text index of the cells",
        sql: V6,
    },
    Migration {
        version: 7,
        description: "a session's signals stored a block per append",
        sql: V7,
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

/// Version 3: fewer pages written per eval cell. A cell's record is
/// committed on its own (the harness waits for it) and a commit writes every
/// page it touches, so each cell pays for every page its rows land on. The
/// rows are copied over.
///
/// * `cell_results` becomes a rowid table with a unique index on
///   `(run_id, eval, cell)`. A record (~1.3 KB of JSON) is more than an
///   index b-tree, which a `WITHOUT ROWID` table is, keeps in a 4 KiB page
///   (about 1 KB): each row spilled into an overflow page of its own, mostly
///   empty, and the interior pages, which hold whole rows too, held three or
///   four each, so that 10,000 cells made a tree five levels deep and the
///   commit of a cell rewrote several of its pages. A rowid table keeps a
///   record in its leaf, its interior pages hold only rowids and new rows go
///   at its end; the unique index serves the lookups by run, eval and cell
///   and `INSERT OR REPLACE` of a cell recorded again.
/// * `session_tags` is keyed by `(tag, session_id)`, what listing by tag
///   reads, and keeps one b-tree instead of two: the `(session_id, tag)` key
///   served only deleting a session, which now deletes the rows of the tags
///   its `sessions.tags` lists. Without an index on `session_id` the table
///   drops its foreign key (a cascade would scan it; the writer deletes the
///   tags itself).
const V3: &str = "
ALTER TABLE cell_results RENAME TO cell_results_v2;

CREATE TABLE cell_results (
    run_id      TEXT NOT NULL REFERENCES eval_runs (id) ON DELETE CASCADE,
    eval        TEXT NOT NULL,
    cell        TEXT NOT NULL,
    record      TEXT NOT NULL,
    passed      INTEGER NOT NULL,
    snapshot_ok INTEGER NOT NULL,
    finished_at INTEGER NOT NULL
);
INSERT INTO cell_results (run_id, eval, cell, record, passed, snapshot_ok, finished_at)
    SELECT run_id, eval, cell, record, passed, snapshot_ok, finished_at
    FROM cell_results_v2 ORDER BY run_id, eval, cell;
DROP TABLE cell_results_v2;
CREATE UNIQUE INDEX cell_results_cell ON cell_results (run_id, eval, cell);

ALTER TABLE session_tags RENAME TO session_tags_v2;
CREATE TABLE session_tags (
    tag        TEXT NOT NULL,
    session_id TEXT NOT NULL,
    PRIMARY KEY (tag, session_id)
) WITHOUT ROWID;
INSERT INTO session_tags (tag, session_id)
    SELECT tag, session_id FROM session_tags_v2 ORDER BY tag, session_id;
DROP TABLE session_tags_v2;
";

/// Version 4: `eval_runs.selection`, how a run chose its cells (the test
/// filter and the settings that pick cells, as the harness describes them),
/// so that a resume runs the same cells. Runs stored before have none.
const V4: &str = "
ALTER TABLE eval_runs ADD COLUMN selection TEXT;
";

/// Version 5: the commit and branch of each run (`RunSource` as JSON).
const V5: &str = "
ALTER TABLE eval_runs ADD COLUMN source TEXT;
";

/// The text of cell `c` (a `cell_results` row) that search finds, as an
/// SQL expression: the
/// strings of its case, dataset, variant, error, input, output and
/// assertions, then every string of its session's signals but the
/// requests (`provider:start`: prompts and histories, which repeat the
/// input and earlier answers): answers, tool calls and results, states,
/// errors. The harness builds the same text from the signals it holds
/// (`RecordedCell::signals`); a macro so that the migrations and the
/// writer share this one. Its argument reads the strings of the signals
/// of session `c.session_id` as `j.value`, where `j.type = 'text'`: the
/// signals' table as version 6 found it, or their blocks since version 7
/// ([`signal_texts_of_c`]).
macro_rules! cell_text_of_c {
    ($signal_texts:expr) => {
        concat!(
            "coalesce((SELECT group_concat(j.value, ' ') FROM json_tree(c.record) j \
           WHERE j.type = 'text' AND (j.fullkey IN ('$.case', '$.dataset', '$.variant', '$.error') \
             OR j.fullkey LIKE '$.input%' OR j.fullkey LIKE '$.output%' \
             OR j.fullkey LIKE '$.assertions%')), '') \
         || ' ' || \
         coalesce((SELECT group_concat(j.value, ' ') FROM ",
            $signal_texts,
            "), '')"
        )
    };
}
/// [`cell_text_of_c`]'s signals in version 6: a row each.
macro_rules! signal_texts_of_c_v6 {
    () => {
        "signals s, json_tree(s.payload) j \
           WHERE s.session_id = c.session_id AND s.name <> 'provider:start' \
             AND j.type = 'text'"
    };
}
/// [`cell_text_of_c`]'s signals since version 7: a block of them per row.
macro_rules! signal_texts_of_c {
    () => {
        "signal_blocks b, json_each(b.signals) e, json_tree(e.value, '$.payload') j \
           WHERE b.session_id = c.session_id \
             AND json_extract(e.value, '$.name') <> 'provider:start' AND j.type = 'text'"
    };
}
/// Put the cells waiting in `cell_text_pending` into the search index (the
/// text the harness gave, else their rows' own) and empty it. The writer
/// does it in batches, off the cells' commits: FTS5 writes a segment per
/// transaction that inserts, which cost a played-back cell a quarter more.
pub(crate) const INDEX_PENDING: &str = concat!(
    "INSERT INTO cell_text (rowid, body) SELECT c.rowid, coalesce(p.body, ",
    cell_text_of_c!(signal_texts_of_c!()),
    ") FROM cell_text_pending p JOIN cell_results c ON c.rowid = p.rowid; \
     DELETE FROM cell_text_pending;"
);

/// Version 6: what the viewer reads at scale.
///
/// * `cell_results.session_id` and `cost_usd`, copied from the record, so
///   that trends over every run and a cell's tags are read without parsing
///   the records.
/// * `cell_results_summary`, an index that holds what listing runs and
///   trends add up (cells, passed, cost by run and eval), so that they read
///   it alone, never the records.
/// * `cell_text`, a contentless FTS5 index of each cell's text keyed by the
///   cell's rowid (see `cell_text_of_c`): the viewer's search. The
///   migration indexes the cells already stored. The writer puts each cell
///   it records in `cell_text_pending` (with its text, when the harness
///   gave it) and indexes those in batches (`INDEX_PENDING`).
const V6: &str = concat!(
    "ALTER TABLE cell_results ADD COLUMN session_id TEXT;
ALTER TABLE cell_results ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
UPDATE cell_results SET
    session_id = nullif(json_extract(record, '$.sessionId'), ''),
    cost_usd = coalesce(json_extract(record, '$.metrics.costUsd'), 0);
CREATE INDEX cell_results_summary ON cell_results (run_id, eval, passed, cost_usd);
CREATE VIRTUAL TABLE cell_text USING fts5 (body, content = '', contentless_delete = 1);
CREATE TABLE cell_text_pending (rowid INTEGER PRIMARY KEY, body TEXT);
INSERT INTO cell_text (rowid, body) SELECT c.rowid, ",
    cell_text_of_c!(signal_texts_of_c_v6!()),
    " FROM cell_results c;"
);
/// Version 7: a session's signals stored a block per append, not a row
/// each. A played-back cell's two dozen signals were two dozen rows of
/// `signals`, each keyed by its session's id, and a row of the partial
/// index of state changes for each of those: a third of the store's
/// writing. Reads take the blocks a range overlaps and keep its signals.
///
/// * `signal_blocks` holds the signals of one append (or, migrated, of
///   the whole session) with indices `first_idx..=last_idx`, as a JSON
///   array of signals as `Signal` serializes them (`index`, `name`,
///   `payload`, `atMs`, `agent` when there is one), in index order. A
///   rowid table, as `cell_results` (version 3): a block is often more
///   than the kilobyte a `WITHOUT ROWID` b-tree keeps in a page.
/// * `signal_blocks_session` serves a session's blocks in order.
/// * `state_changes` keeps each `state:<key>:changed` signal's key and
///   payload a row each too (what the partial index `signals_state` gave),
///   so that `state_at` reads the changes since a checkpoint alone.
const V7: &str = "
CREATE TABLE signal_blocks (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    first_idx  INTEGER NOT NULL,
    last_idx   INTEGER NOT NULL,
    signals    TEXT NOT NULL
);
CREATE UNIQUE INDEX signal_blocks_session ON signal_blocks (session_id, first_idx);
CREATE TABLE state_changes (
    session_id TEXT NOT NULL,
    idx        INTEGER NOT NULL,
    state_key  TEXT NOT NULL,
    payload    TEXT NOT NULL,
    PRIMARY KEY (session_id, idx)
) WITHOUT ROWID;
INSERT INTO state_changes (session_id, idx, state_key, payload)
    SELECT session_id, idx, state_key, payload FROM signals WHERE state_key IS NOT NULL;
INSERT INTO signal_blocks (session_id, first_idx, last_idx, signals)
    SELECT session_id, min(idx), max(idx), json_group_array(json(signal) ORDER BY idx) FROM (
        SELECT session_id, idx, CASE WHEN agent IS NULL
            THEN json_object('index', idx, 'name', name, 'payload', json(payload), 'atMs', at_ms)
            ELSE json_object('index', idx, 'name', name, 'payload', json(payload), 'atMs', at_ms,
                             'agent', agent)
            END AS signal
        FROM signals
    ) GROUP BY session_id;
DROP TABLE signals;
";

/// The schema every step above leaves, written at once on a fresh
/// database: a new store runs this one batch instead of replaying the
/// steps (whose renames and rebuilds re-read the whole schema again and
/// again, most of the time a run spends opening a new file). A new
/// version appends its step and changes this to match;
/// `a_fresh_database_gets_the_schema_the_steps_build` holds the two
/// together, object by object.
const CURRENT: &str = "
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
    tag        TEXT NOT NULL,
    session_id TEXT NOT NULL,
    PRIMARY KEY (tag, session_id)
) WITHOUT ROWID;

CREATE TABLE checkpoints (
    session_id TEXT NOT NULL,
    idx        INTEGER NOT NULL,
    state      TEXT NOT NULL,
    PRIMARY KEY (session_id, idx)
) WITHOUT ROWID;

CREATE TABLE signal_blocks (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    first_idx  INTEGER NOT NULL,
    last_idx   INTEGER NOT NULL,
    signals    TEXT NOT NULL
);
CREATE UNIQUE INDEX signal_blocks_session ON signal_blocks (session_id, first_idx);
CREATE TABLE state_changes (
    session_id TEXT NOT NULL,
    idx        INTEGER NOT NULL,
    state_key  TEXT NOT NULL,
    payload    TEXT NOT NULL,
    PRIMARY KEY (session_id, idx)
) WITHOUT ROWID;

CREATE TABLE eval_runs (
    id          TEXT PRIMARY KEY NOT NULL,
    origin      TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'finished')),
    started_at  INTEGER NOT NULL,
    finished_at INTEGER,
    selection   TEXT,
    source      TEXT
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
    session_id  TEXT,
    cost_usd    REAL NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX cell_results_cell ON cell_results (run_id, eval, cell);
CREATE INDEX cell_results_summary ON cell_results (run_id, eval, passed, cost_usd);
CREATE VIRTUAL TABLE cell_text USING fts5 (body, content = '', contentless_delete = 1);
CREATE TABLE cell_text_pending (rowid INTEGER PRIMARY KEY, body TEXT);
";

/// Record `version` as the database's.
fn set_version(conn: &Connection, path: &str, version: i64) -> Result<(), StoreError> {
    conn.pragma_update(None, "user_version", version)
        .ctx(path, || format!("recording schema version {version}"))
}

/// The version recorded in the database.
pub(crate) fn user_version(conn: &Connection, path: &str) -> Result<i64, StoreError> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
        .ctx(path, || "reading the schema version".into())
}

/// Bring the database to [`SCHEMA_VERSION`], in one IMMEDIATE transaction so
/// that several processes opening a fresh file at once migrate it once: a
/// fresh database (version 0) gets [`CURRENT`], an older one the steps
/// after its version.
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
    if found == 0 {
        tx.execute_batch(CURRENT)
            .ctx(path, || format!("creating schema version {SCHEMA_VERSION}"))?;
        set_version(&tx, path, SCHEMA_VERSION)?;
    } else {
        for step in MIGRATIONS.iter().filter(|m| m.version > found) {
            tx.execute_batch(step.sql).ctx(path, || {
                format!(
                    "migrating to schema version {} ({})",
                    step.version, step.description
                )
            })?;
            set_version(&tx, path, step.version)?;
        }
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

    /// Each object of `conn`'s schema by name: its type, table and SQL,
    /// the SQL's spacing made one space and none around commas and
    /// parentheses (`ADD COLUMN` appends `\n, name TYPE` to a table's text).
    fn objects(conn: &Connection) -> Vec<(String, String, String, String)> {
        let mut st = conn
            .prepare(
                "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master ORDER BY name",
            )
            .unwrap();
        let spaced = |sql: String| {
            let one = sql.split_whitespace().collect::<Vec<_>>().join(" ");
            [(" ,", ","), (", ", ","), ("( ", "("), (" )", ")")]
                .iter()
                .fold(one, |s, (from, to)| s.replace(from, to))
        };
        st.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, spaced(r.get(3)?)))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    }

    #[test]
    fn a_fresh_database_gets_the_schema_the_steps_build() {
        let stepped = Connection::open_in_memory().unwrap();
        for step in MIGRATIONS {
            stepped.execute_batch(step.sql).unwrap();
        }
        let mut fresh = Connection::open_in_memory().unwrap();
        assert_eq!(migrate(&mut fresh, ":memory:").unwrap(), 0);
        let (fresh, stepped) = (objects(&fresh), objects(&stepped));
        assert_eq!(fresh.len(), 23, "{fresh:#?}");
        assert_eq!(fresh, stepped);
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

    /// The detail lines of the query plan of `sql` (parameters bound to '').
    fn plan(conn: &Connection, sql: &str) -> Vec<String> {
        let mut st = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let params = vec![""; st.parameter_count()];
        st.query_map(rusqlite::params_from_iter(params), |r| {
            r.get::<_, String>(3)
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    }

    const V2_CELLS: &[(&str, &str, &str, i64, i64, i64)] = &[
        ("r1", "qa", "qa::b::c1", 1, 1, 10),
        ("r1", "qa", "qa::a::c1", 0, 1, 11),
        ("r1", "other", "other::a::c1", 1, 0, 12),
        ("r2", "qa", "qa::a::c1", 1, 1, 13),
    ];

    /// A record as long as a real one (more than an index b-tree keeps in its page).
    fn long_record(i: usize) -> String {
        format!("{{\"n\":{i},\"output\":\"{}\"}}", "x".repeat(1300))
    }

    /// An in-memory database at schema version 2, as a release before 3 left it.
    fn version_2_database() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(V1).unwrap();
        conn.execute_batch(V2).unwrap();
        conn.pragma_update(None, "user_version", 2).unwrap();
        conn
    }

    #[test]
    fn a_version_2_database_keeps_its_cell_results_when_migrated() {
        let mut conn = version_2_database();
        conn.pragma_update(None, "foreign_keys", true).unwrap();
        for run in ["r1", "r2"] {
            conn.execute(
                "INSERT INTO eval_runs (id, origin, started_at) VALUES (?1, 'harness', 1)",
                [run],
            )
            .unwrap();
        }
        for (i, (run, eval, cell, passed, snapshot_ok, at)) in V2_CELLS.iter().enumerate() {
            conn.execute(
                "INSERT INTO cell_results \
                 (run_id, eval, cell, record, passed, snapshot_ok, finished_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                rusqlite::params![run, eval, cell, long_record(i), passed, snapshot_ok, at],
            )
            .unwrap();
        }
        let read = |conn: &Connection| -> Vec<(String, String, String, String, i64, i64, i64)> {
            conn.prepare(
                "SELECT run_id, eval, cell, record, passed, snapshot_ok, finished_at \
                 FROM cell_results ORDER BY run_id, eval, cell",
            )
            .unwrap()
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
        };
        let before = read(&conn);
        assert_eq!(before.len(), V2_CELLS.len());

        assert_eq!(migrate(&mut conn, ":memory:").unwrap(), 2);
        assert_eq!(user_version(&conn, ":memory:").unwrap(), SCHEMA_VERSION);
        assert_eq!(read(&conn), before);
        // A rowid table now, its key a unique index: a cell recorded again
        // replaces its row, a plain duplicate is refused.
        let table: String = conn
            .query_row(
                "SELECT sql FROM sqlite_schema WHERE name = 'cell_results'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(!table.contains("WITHOUT ROWID"), "{table}");
        let duplicate = conn.execute(
            "INSERT INTO cell_results \
             (run_id, eval, cell, record, passed, snapshot_ok, finished_at) \
             VALUES ('r1', 'qa', 'qa::a::c1', '{}', 1, 1, 20)",
            [],
        );
        assert!(duplicate.is_err());
        conn.execute(
            "INSERT OR REPLACE INTO cell_results \
             (run_id, eval, cell, record, passed, snapshot_ok, finished_at) \
             VALUES ('r1', 'qa', 'qa::a::c1', '{}', 1, 1, 20)",
            [],
        )
        .unwrap();
        let rows: Vec<(String, i64)> = conn
            .prepare(
                "SELECT record, finished_at FROM cell_results \
                 WHERE run_id = 'r1' AND eval = 'qa' AND cell = 'qa::a::c1'",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows, [("{}".to_string(), 20)]);
        // The foreign key still holds.
        let orphan = conn.execute(
            "INSERT INTO cell_results \
             (run_id, eval, cell, record, passed, snapshot_ok, finished_at) \
             VALUES ('nope', 'qa', 'qa::a::c1', '{}', 1, 1, 20)",
            [],
        );
        assert!(orphan.is_err());
    }

    #[test]
    fn a_version_3_database_keeps_its_runs_without_a_selection() {
        let mut conn = Connection::open_in_memory().unwrap();
        for sql in [V1, V2, V3] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 3).unwrap();
        conn.execute(
            "INSERT INTO eval_runs (id, origin, started_at) VALUES ('r', 'harness', 1)",
            [],
        )
        .unwrap();
        assert_eq!(migrate(&mut conn, ":memory:").unwrap(), 3);
        let row: (String, Option<String>) = conn
            .query_row(
                "SELECT origin, selection FROM eval_runs WHERE id = 'r'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(row, ("harness".to_string(), None));
    }

    #[test]
    fn cell_result_queries_use_the_index() {
        use super::super::runs::{CELLS_SQL, RECORD_SQL, runs_sql};
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, ":memory:").unwrap();
        for sql in [
            runs_sql(true),
            runs_sql(false),
            CELLS_SQL.into(),
            RECORD_SQL.into(),
        ] {
            let plan = plan(&conn, &sql);
            let reads: Vec<&String> = plan
                .iter()
                .filter(|p| {
                    p.contains("cell_results")
                        || p.starts_with("SCAN c")
                        || p.starts_with("SEARCH c")
                })
                .collect();
            assert!(!reads.is_empty(), "{sql}: {plan:?}");
            // The key, or the summary alone for what runs add up.
            for p in reads {
                assert!(
                    p.contains("INDEX cell_results_cell")
                        || p.contains("COVERING INDEX cell_results_summary"),
                    "{sql}: {plan:?}"
                );
            }
            assert!(
                !plan.iter().any(|p| p.contains("TEMP B-TREE FOR ORDER BY")),
                "{sql}: {plan:?}"
            );
        }
    }

    #[test]
    fn listing_by_tag_and_deleting_tags_read_the_key() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, ":memory:").unwrap();
        let list = format!(
            "SELECT id FROM sessions WHERE 1 AND {} ORDER BY started_at DESC, rowid DESC",
            super::super::TAG_CONDITION
        );
        let delete = "DELETE FROM session_tags WHERE tag = ?1 AND session_id = ?2";
        for sql in [list.as_str(), delete] {
            let plan = plan(&conn, sql);
            assert!(
                plan.iter()
                    .any(|p| p.starts_with("SEARCH session_tags USING PRIMARY KEY (tag=?")),
                "{sql}: {plan:?}"
            );
            assert!(
                !plan.iter().any(|p| p.starts_with("SCAN session_tags")),
                "{sql}: {plan:?}"
            );
        }
    }

    #[test]
    fn a_version_2_database_keeps_its_session_tags_when_migrated() {
        let mut conn = version_2_database();
        for (id, tags) in [("s1", "[\"a\",\"b\"]"), ("s2", "[\"b\"]")] {
            conn.execute(
                "INSERT INTO sessions (id, workflow, input, initial_state, tags, started_at) \
                 VALUES (?1, 'w', 'null', '{}', ?2, 1)",
                [id, tags],
            )
            .unwrap();
        }
        for (id, tag) in [("s1", "a"), ("s1", "b"), ("s2", "b")] {
            conn.execute(
                "INSERT INTO session_tags (session_id, tag) VALUES (?1, ?2)",
                [id, tag],
            )
            .unwrap();
        }
        assert_eq!(migrate(&mut conn, ":memory:").unwrap(), 2);
        let rows: Vec<(String, String)> = conn
            .prepare("SELECT tag, session_id FROM session_tags")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let expected = [("a", "s1"), ("b", "s1"), ("b", "s2")].map(|(t, s)| (t.into(), s.into()));
        assert_eq!(rows, expected);
        let indexes: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'session_tags'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        // One b-tree: the table, keyed by (tag, session_id).
        assert_eq!(indexes, 0);
    }

    /// SQLite's plan for `sql` (three parameters) on a fresh database.
    fn plan_of(sql: &str) -> Vec<String> {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, ":memory:").unwrap();
        conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap()
            .query_map(["s", "0", "10"], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn state_changes_are_read_by_their_key() {
        let plan = plan_of(super::super::state::STATE_CHANGES_SQL);
        assert!(
            plan.iter().any(|p| p.contains("USING PRIMARY KEY")),
            "plan: {plan:?}"
        );
    }

    #[test]
    fn a_sessions_blocks_are_read_by_their_index() {
        let plan = plan_of(super::super::blocks::BLOCKS_SQL);
        assert!(
            plan.iter().any(|p| p.contains("signal_blocks_session")),
            "plan: {plan:?}"
        );
    }

    #[test]
    fn version_7_keeps_every_signal_of_a_version_6_database() {
        let mut conn = Connection::open_in_memory().unwrap();
        let tx = conn.transaction().unwrap();
        for m in MIGRATIONS.iter().filter(|m| m.version <= 6) {
            tx.execute_batch(m.sql).unwrap();
        }
        tx.pragma_update(None, "user_version", 6).unwrap();
        tx.commit().unwrap();
        for id in ["s1", "s2"] {
            conn.execute(
                "INSERT INTO sessions (id, workflow, input, initial_state, started_at) \
                 VALUES (?1, 'w', 'null', '{}', 1)",
                [id],
            )
            .unwrap();
        }
        // Out of index order on purpose, an agent on some, text to escape.
        let rows = [
            (
                "s1",
                2,
                "state:plan:changed",
                r#"{"newValue":[1,"two"]}"#,
                30,
                None,
            ),
            (
                "s1",
                0,
                "agent:activated",
                r#"{"agent":"a"}"#,
                10,
                Some("a"),
            ),
            ("s2", 0, "text:delta", r#""quote \" and ü""#, 5, None),
            (
                "s1",
                1,
                "text:delta",
                r#"{"text":"<b>hi</b>\n"}"#,
                20,
                Some("a"),
            ),
        ];
        for (id, idx, name, payload, at, agent) in rows {
            conn.execute(
                "INSERT INTO signals (session_id, idx, name, payload, at_ms, agent, state_key) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                rusqlite::params![
                    id,
                    idx,
                    name,
                    payload,
                    at,
                    agent,
                    crate::signal::names::state_key(name)
                ],
            )
            .unwrap();
        }
        assert_eq!(migrate(&mut conn, ":memory:").unwrap(), 6);
        let s1 = super::super::blocks::signals_in(&conn, ":memory:", "s1", (0, u64::MAX)).unwrap();
        let got: Vec<(u64, &str, String, u64, Option<&str>)> = s1
            .iter()
            .map(|s| {
                let payload = s.payload.to_string();
                (
                    s.index,
                    s.name.as_str(),
                    payload,
                    s.at_ms,
                    s.agent.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    0,
                    "agent:activated",
                    r#"{"agent":"a"}"#.to_string(),
                    10,
                    Some("a")
                ),
                (
                    1,
                    "text:delta",
                    r#"{"text":"<b>hi</b>\n"}"#.to_string(),
                    20,
                    Some("a")
                ),
                (
                    2,
                    "state:plan:changed",
                    r#"{"newValue":[1,"two"]}"#.to_string(),
                    30,
                    None
                ),
            ]
        );
        let s2 = super::super::blocks::signals_in(&conn, ":memory:", "s2", (0, 9)).unwrap();
        assert_eq!(s2[0].payload, serde_json::json!("quote \" and ü"));
        let state = super::super::state::state_at(&conn, ":memory:", "s1", 2, false).unwrap();
        assert_eq!(state, serde_json::json!({"plan": [1, "two"]}));
        let changes: i64 = conn
            .query_row("SELECT COUNT(*) FROM state_changes", [], |r| r.get(0))
            .unwrap();
        assert_eq!(changes, 1, "the state change is kept a row of its own");
        let tables: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_schema WHERE name = 'signals'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 0, "the old table is gone");
    }
}
