//! Eval runs as rows: the run, the configuration of each of its evals and
//! its finished cells, their payloads as JSON (the typed eval runs over
//! these rows, [`EvalRunMeta`](crate::eval::EvalRunMeta) and
//! [`RecordedCell`](crate::eval::RecordedCell), are the eval layer's).

use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use super::error::{Context, StoreError, to_u64};

/// `origin` of a run started by `cargo test` (one process runs every cell).
pub const ORIGIN_HARNESS: &str = "harness";
/// `origin` of a run of `cargo nextest run` (one process per cell, sharing
/// the run id `NEXTEST_RUN_ID`).
pub const ORIGIN_NEXTEST: &str = "nextest";

/// A stored eval run, as listed by [`Store::eval_runs`](super::Store::eval_runs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalRunRecord {
    /// The run id.
    pub id: String,
    /// Who ran it (`ORIGIN_HARNESS`, `ORIGIN_NEXTEST`, …).
    pub origin: String,
    /// Unix milliseconds.
    pub started_at_ms: u64,
    /// Unix milliseconds, once finished.
    pub finished_at_ms: Option<u64>,
    /// Whether the run's summary was written. A run that is not finished
    /// was interrupted (or is still going, or is a nextest run, whose
    /// processes never see the whole run).
    pub finished: bool,
    /// Its evals, by name.
    pub evals: Vec<String>,
    /// Cells recorded.
    pub cells: usize,
    /// Cells recorded that passed.
    pub passed: usize,
    /// The commit and branch it ran on, when they were known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<RunSource>,
}

/// The commit (and branch) a run ran on: from the CI's variables, else the
/// repository's `.git` (see the harness's `source.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSource {
    /// The commit's full hash.
    pub commit: String,
    /// The branch, when on one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
}

impl RunSource {
    /// `branch@abcdef12`, or the short commit alone.
    pub fn short(&self) -> String {
        let commit = self.commit.get(..8).unwrap_or(&self.commit);
        match &self.branch {
            Some(branch) => format!("{branch}@{commit}"),
            None => commit.to_string(),
        }
    }
}

/// An eval-run write, serialized by the handle; the writer runs it in its
/// batch and replies once it is committed.
pub(crate) enum RunOp {
    Begin {
        id: String,
        origin: String,
        started_at: i64,
        /// Eval name and config JSON.
        evals: Vec<(String, String)>,
        selection: Option<String>,
        /// The [`RunSource`] as JSON.
        source: Option<String>,
    },
    Record {
        run_id: String,
        eval: String,
        cell: String,
        record: String,
        passed: bool,
        snapshot_ok: bool,
        finished_at: i64,
        /// The cell's session: a cell whose session lost a write is not
        /// recorded (it did not run as far as the store knows).
        session: Option<String>,
        /// Its cost in US dollars (the record's, as a column).
        cost_usd: f64,
        /// What search finds it by, when the writer was given it; else
        /// taken from the stored rows (`INDEX_PENDING`).
        text: Option<String>,
    },
    Finish {
        run_id: String,
        finished_at: i64,
    },
    /// Mark the sessions tagged `tag` that are still `running` interrupted.
    Interrupt {
        tag: String,
        ended_at: i64,
    },
}

impl RunOp {
    /// Whether it records a cell (to be indexed for search).
    pub(crate) fn records_cell(&self) -> bool {
        matches!(self, RunOp::Record { .. })
    }

    /// The session of the cell this op records, if it records one.
    pub(crate) fn session(&self) -> Option<&str> {
        match self {
            RunOp::Record { session, .. } => session.as_deref(),
            _ => None,
        }
    }

    /// Run the write on the writer's transaction.
    pub(crate) fn write(&self, conn: &Connection, path: &str) -> Result<(), StoreError> {
        match self {
            RunOp::Begin {
                id,
                origin,
                started_at,
                evals,
                selection,
                source,
            } => {
                let what = || format!("beginning eval run {id}");
                conn.prepare_cached(
                    "INSERT OR IGNORE INTO eval_runs \
                     (id, origin, status, started_at, selection, source) \
                     VALUES (?1, ?2, 'running', ?3, ?4, ?5)",
                )
                .and_then(|mut st| st.execute(params![id, origin, started_at, selection, source]))
                .ctx(path, what)?;
                let mut st = conn
                    .prepare_cached(
                        "INSERT OR IGNORE INTO eval_run_evals (run_id, eval, config) \
                         VALUES (?1, ?2, ?3)",
                    )
                    .ctx(path, what)?;
                for (eval, config) in evals {
                    st.execute(params![id, eval, config]).ctx(path, what)?;
                }
                Ok(())
            }
            RunOp::Record {
                run_id,
                eval,
                cell,
                record,
                passed,
                snapshot_ok,
                finished_at,
                session,
                cost_usd,
                text,
            } => {
                let what = || format!("recording cell {cell} of run {run_id}");
                // A cell recorded again (a retried test) keeps its latest
                // result, and its text in the search index.
                let old: Option<i64> = conn
                    .prepare_cached(
                        "SELECT rowid FROM cell_results WHERE run_id = ?1 AND eval = ?2 AND cell = ?3",
                    )
                    .and_then(|mut st| {
                        st.query_row(params![run_id, eval, cell], |r| r.get(0))
                            .optional()
                    })
                    .ctx(path, what)?;
                if let Some(old) = old {
                    for sql in [
                        "DELETE FROM cell_text WHERE rowid = ?1",
                        "DELETE FROM cell_text_pending WHERE rowid = ?1",
                    ] {
                        conn.prepare_cached(sql)
                            .and_then(|mut st| st.execute([old]))
                            .ctx(path, what)?;
                    }
                }
                let inserted = conn
                    .prepare_cached(
                        "INSERT OR REPLACE INTO cell_results \
                         (run_id, eval, cell, record, passed, snapshot_ok, finished_at, \
                          session_id, cost_usd) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    )
                    .and_then(|mut st| {
                        st.execute(params![
                            run_id,
                            eval,
                            cell,
                            record,
                            passed,
                            snapshot_ok,
                            finished_at,
                            session,
                            // A cost that is not a number adds up as none.
                            if cost_usd.is_finite() { *cost_usd } else { 0.0 }
                        ])
                    });
                match inserted {
                    Ok(_) => {}
                    Err(rusqlite::Error::SqliteFailure(e, _))
                        if e.code == ErrorCode::ConstraintViolation =>
                    {
                        return Err(StoreError::EvalRunNotFound {
                            path: path.to_owned(),
                            id: run_id.clone(),
                        });
                    }
                    Err(e) => return Err(e).ctx(path, what),
                }
                // Indexed for search with the next batch (see `INDEX_PENDING`).
                conn.prepare_cached("INSERT INTO cell_text_pending (rowid, body) VALUES (?1, ?2)")
                    .and_then(|mut st| st.execute(params![conn.last_insert_rowid(), text]))
                    .map(drop)
                    .ctx(path, what)
            }
            RunOp::Finish {
                run_id,
                finished_at,
            } => {
                let n = conn
                    .prepare_cached(
                        "UPDATE eval_runs SET status = 'finished', finished_at = ?2 WHERE id = ?1",
                    )
                    .and_then(|mut st| st.execute(params![run_id, finished_at]))
                    .ctx(path, || format!("finishing eval run {run_id}"))?;
                if n == 0 {
                    return Err(StoreError::EvalRunNotFound {
                        path: path.to_owned(),
                        id: run_id.clone(),
                    });
                }
                Ok(())
            }
            RunOp::Interrupt { tag, ended_at } => conn
                .prepare_cached(
                    "UPDATE sessions SET status = 'interrupted', ended_at = ?2, \
                     error = 'interrupted: its process ended before the session did' \
                     WHERE status = 'running' AND id IN \
                     (SELECT session_id FROM session_tags WHERE tag = ?1)",
                )
                .and_then(|mut st| st.execute(params![tag, ended_at]))
                .map(drop)
                .ctx(path, || {
                    format!("marking the running sessions tagged {tag} interrupted")
                }),
        }
    }
}

const RUN_COLUMNS: &str = "r.id, r.origin, r.status, r.started_at, r.finished_at, \
     (SELECT COUNT(*) FROM cell_results c WHERE c.run_id = r.id), \
     (SELECT COUNT(*) FROM cell_results c WHERE c.run_id = r.id AND c.passed), \
     (SELECT json_group_array(eval) FROM \
        (SELECT eval FROM eval_run_evals e WHERE e.run_id = r.id \
         UNION SELECT eval FROM cell_results c WHERE c.run_id = r.id)), \
     r.source";

/// One eval of one run, added up: a point of the eval's trend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalTrend {
    /// The run.
    pub run_id: String,
    /// When it started (Unix milliseconds).
    pub started_at_ms: u64,
    /// The eval.
    pub eval: String,
    /// Its cells recorded in the run.
    pub cells: usize,
    /// Those that passed.
    pub passed: usize,
    /// Their cost, in US dollars.
    pub cost_usd: f64,
}

/// Every eval of every run, oldest run first (see [`EvalTrend`]).
pub(crate) fn trends(conn: &Connection, path: &str) -> Result<Vec<EvalTrend>, StoreError> {
    let what = || "adding up the evals of every run".to_string();
    let mut st = conn
        .prepare_cached(
            "SELECT c.run_id, r.started_at, c.eval, COUNT(*), SUM(c.passed), \
             TOTAL(c.cost_usd) \
             FROM cell_results c JOIN eval_runs r ON r.id = c.run_id \
             GROUP BY c.run_id, c.eval ORDER BY r.started_at, r.rowid, c.eval",
        )
        .ctx(path, what)?;
    let rows = st
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, i64>(3)?,
                row.get::<_, i64>(4)?,
                row.get::<_, f64>(5)?,
            ))
        })
        .ctx(path, what)?;
    rows.map(|row| {
        let (run_id, started, eval, cells, passed, cost_usd) = row.ctx(path, what)?;
        Ok(EvalTrend {
            run_id,
            started_at_ms: to_u64(path, "eval_runs.started_at", started)?,
            eval,
            cells: to_u64(path, "cell count", cells)? as usize,
            passed: to_u64(path, "passed cell count", passed)? as usize,
            cost_usd,
        })
    })
    .collect()
}

/// The id of every run, newest first.
pub(crate) fn run_ids(conn: &Connection, path: &str) -> Result<Vec<String>, StoreError> {
    let sql = "SELECT id FROM eval_runs ORDER BY started_at DESC, rowid DESC";
    super::search::strings(conn, path, sql, [], || "listing eval run ids".into())
}

/// A number that grows each time a cell of run `id` is recorded (again):
/// its cells' largest rowid (0 for none).
pub(crate) fn revision(conn: &Connection, path: &str, id: &str) -> Result<i64, StoreError> {
    conn.prepare_cached("SELECT coalesce(MAX(rowid), 0) FROM cell_results WHERE run_id = ?1")
        .and_then(|mut st| st.query_row([id], |r| r.get(0)))
        .ctx(path, || format!("reading the revision of eval run {id}"))
}

/// The query of [`runs`]: one run (`?1`), or every run newest first.
pub(crate) fn runs_sql(one: bool) -> String {
    if one {
        format!("SELECT {RUN_COLUMNS} FROM eval_runs r WHERE r.id = ?1")
    } else {
        format!("SELECT {RUN_COLUMNS} FROM eval_runs r ORDER BY r.started_at DESC, r.rowid DESC")
    }
}

/// The query of [`cells`].
pub(crate) const CELLS_SQL: &str = "SELECT eval, cell, record, snapshot_ok, finished_at \
     FROM cell_results WHERE run_id = ?1 ORDER BY eval, cell";

/// The query of [`records`].
pub(crate) const RECORD_SQL: &str =
    "SELECT record FROM cell_results WHERE run_id = ?1 AND eval = ?2 AND cell = ?3";

fn run_from_row(path: &str, row: &Row<'_>) -> Result<EvalRunRecord, StoreError> {
    let what = || "reading an eval run".to_string();
    let id: String = row.get(0).ctx(path, what)?;
    let status: String = row.get(2).ctx(path, what)?;
    let finished = match status.as_str() {
        "running" => false,
        "finished" => true,
        other => {
            return Err(StoreError::Corrupt {
                path: path.to_owned(),
                what: format!("eval_runs.status of {id}"),
                detail: format!("unknown status {other:?} (expected running or finished)"),
            });
        }
    };
    let started: i64 = row.get(3).ctx(path, what)?;
    let finished_at: Option<i64> = row.get(4).ctx(path, what)?;
    let cells: i64 = row.get(5).ctx(path, what)?;
    let passed: i64 = row.get(6).ctx(path, what)?;
    let evals: String = row.get(7).ctx(path, what)?;
    let mut evals: Vec<String> =
        serde_json::from_str(&evals).ctx(path, || format!("reading the evals of run {id}"))?;
    evals.sort();
    evals.dedup();
    let source: Option<String> = row.get(8).ctx(path, what)?;
    let source = source
        .map(|json| serde_json::from_str(&json))
        .transpose()
        .ctx(path, || format!("reading the source of run {id}"))?;
    Ok(EvalRunRecord {
        source,
        origin: row.get(1).ctx(path, what)?,
        started_at_ms: to_u64(path, "eval_runs.started_at", started)?,
        finished_at_ms: finished_at
            .map(|v| to_u64(path, "eval_runs.finished_at", v))
            .transpose()?,
        finished,
        evals,
        cells: to_u64(path, "cell count", cells)? as usize,
        passed: to_u64(path, "passed cell count", passed)? as usize,
        id,
    })
}

/// Every run, newest first; or the one run `only`.
pub(crate) fn runs(
    conn: &Connection,
    path: &str,
    only: Option<&str>,
) -> Result<Vec<EvalRunRecord>, StoreError> {
    let what = || "listing eval runs".to_string();
    let mut st = conn
        .prepare_cached(&runs_sql(only.is_some()))
        .ctx(path, what)?;
    let mut rows = match only {
        Some(id) => st.query([id]),
        None => st.query([]),
    }
    .ctx(path, what)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx(path, what)? {
        out.push(run_from_row(path, row)?);
    }
    Ok(out)
}

/// How run `id` chose its cells (`None` for a run stored without, or not stored).
pub(crate) fn selection(
    conn: &Connection,
    path: &str,
    id: &str,
) -> Result<Option<String>, StoreError> {
    conn.prepare_cached("SELECT selection FROM eval_runs WHERE id = ?1")
        .and_then(|mut st| {
            st.query_row([id], |r| r.get::<_, Option<String>>(0))
                .optional()
        })
        .map(Option::flatten)
        .ctx(path, || format!("reading the selection of eval run {id}"))
}

/// Read one run, if stored.
pub(crate) fn run(
    conn: &Connection,
    path: &str,
    id: &str,
) -> Result<Option<EvalRunRecord>, StoreError> {
    Ok(runs(conn, path, Some(id))?.into_iter().next())
}

#[cfg(test)]
mod tests {
    use super::super::{SessionEnd, SessionMeta, SessionStatus, Store};

    #[test]
    fn interrupting_marks_the_running_sessions_of_the_tag_alone() {
        let store = Store::in_memory().unwrap();
        let tagged = store.tagging_sessions(["run:r".to_string()]);
        tagged.begin_session(&SessionMeta::new("cut", "w")).unwrap();
        // A tag the session has already is not added twice.
        let done = SessionMeta::new("done", "w").tag("run:r");
        tagged.begin_session(&done).unwrap();
        let end = SessionEnd::new(SessionStatus::Completed);
        tagged.finish_session("done", &end).unwrap();
        store
            .begin_session(&SessionMeta::new("other", "w"))
            .unwrap();

        store.interrupt_sessions("run:r").unwrap();
        let session = |id| store.session(id).unwrap().unwrap();
        let cut = session("cut");
        assert_eq!(cut.status, SessionStatus::Interrupted);
        assert!(cut.ended_at_ms.is_some(), "{cut:?}");
        assert!(
            cut.error
                .as_deref()
                .is_some_and(|e| e.starts_with("interrupted")),
            "{cut:?}"
        );
        assert_eq!(cut.meta.tags, ["run:r"]);
        assert_eq!(session("done").status, SessionStatus::Completed);
        assert_eq!(session("done").meta.tags, ["run:r"]);
        assert_eq!(session("other").status, SessionStatus::Running);
        assert!(session("other").meta.tags.is_empty());
        assert_eq!(
            "interrupted".parse::<SessionStatus>(),
            Ok(SessionStatus::Interrupted)
        );
    }
}
