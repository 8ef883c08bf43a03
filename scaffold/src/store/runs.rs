//! Eval runs: which cells of a run have finished, with their records, so
//! that an interrupted run can be resumed and the shards of a run merged.
//!
//! A run is begun once per harness process ([`Store::begin_eval_run`], which
//! is idempotent so that every process of one nextest run can begin the
//! same id), each finished cell is recorded durably
//! ([`Store::record_cell`] returns once the cell is committed) and the run
//! is marked finished after its summary ([`Store::finish_eval_run`]).
//!
//! ```
//! use scaffold::eval::{CellRecord, RunConfig};
//! use scaffold::store::{EvalRunMeta, RecordedCell, Store};
//!
//! # fn main() -> Result<(), scaffold::store::StoreError> {
//! let store = Store::in_memory()?;
//! let config = RunConfig { trials: 1, inputs: 1, variants: vec!["v".into()], scorers: vec![], min_pass_rate: 1.0 };
//! store.begin_eval_run(&EvalRunMeta::new("run-1", "harness").eval("qa", config))?;
//! let mut record = CellRecord::new("v", "case-1");
//! record.passed = true;
//! store.record_cell("run-1", &RecordedCell::new("qa", "qa::v::case-1", record, true))?;
//! assert!(!store.eval_run("run-1")?.unwrap().finished);
//! store.finish_eval_run("run-1")?;
//! let run = store.eval_run("run-1")?.unwrap();
//! assert!(run.finished);
//! assert_eq!((run.cells, run.passed, run.evals.clone()), (1, 1, vec!["qa".to_string()]));
//! let results = store.eval_results("run-1")?;
//! assert_eq!(results[0].pass_rate(), 1.0);
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;

use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use super::error::{Context, StoreError, to_i64, to_u64};
use super::now_ms;
use crate::eval::results::distinct_inputs;
use crate::eval::{CellRecord, EvalResults, GateOptions, RunConfig};

/// `origin` of a run started by `cargo test` (one process runs every cell).
pub const ORIGIN_HARNESS: &str = "harness";
/// `origin` of a run of `cargo nextest run` (one process per cell, sharing
/// the run id `NEXTEST_RUN_ID`).
pub const ORIGIN_NEXTEST: &str = "nextest";

/// An eval run as it begins: its id, who runs it, and the configuration of
/// each of its evals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalRunMeta {
    /// Unique id (a UUID, or nextest's run id).
    pub id: String,
    /// Who runs it: [`ORIGIN_HARNESS`], [`ORIGIN_NEXTEST`] or anything else.
    pub origin: String,
    /// Unix milliseconds.
    pub started_at_ms: u64,
    /// Each eval's name and configuration.
    pub evals: Vec<(String, RunConfig)>,
    /// How the run chose its cells, as its runner describes them (the
    /// harness: the test filter and the settings that pick cells); kept from
    /// the process that began the run, so that a resume can run the same.
    #[serde(default)]
    pub selection: Option<String>,
    /// How each eval (by name) is judged and how many cells it plans.
    #[serde(default)]
    pub plans: BTreeMap<String, EvalPlan>,
}

/// What a run stores of an eval beside its [`RunConfig`], so that results
/// rebuilt from the store ([`Store::eval_results`](super::Store::eval_results))
/// are judged as the harness judged them and know whether the run is whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalPlan {
    /// The gate options, the quarantine file's patterns included.
    pub gate_options: GateOptions,
    /// The cells the run sets out to run (after filters, tags and variant
    /// selection, ignored cells left out); `None` when not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_cells: Option<usize>,
}

/// An eval's stored configuration (the `config` column): the
/// [`RunConfig`]'s fields, plus the [`EvalPlan`]'s when the run gave one.
/// A database written before plans were stored has only the former.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredConfig {
    #[serde(flatten)]
    config: RunConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    gate_options: Option<GateOptions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    planned_cells: Option<usize>,
}

impl StoredConfig {
    /// The cells planned, as stored. A database from before plans has no
    /// count: for a run not marked finished, its configuration's variants
    /// × cases × trials; a finished one is taken as whole (`None`).
    fn planned(&self, finished: bool) -> Option<usize> {
        let c = &self.config;
        match self.planned_cells {
            Some(n) => Some(n),
            None if !finished => Some(c.variants.len() * c.inputs * c.trials as usize),
            None => None,
        }
    }
}

impl EvalRunMeta {
    /// A run with this id starting now, without evals.
    pub fn new(id: impl Into<String>, origin: impl Into<String>) -> Self {
        EvalRunMeta {
            id: id.into(),
            origin: origin.into(),
            started_at_ms: now_ms(),
            evals: Vec::new(),
            selection: None,
            plans: BTreeMap::new(),
        }
    }

    /// Like [`EvalRunMeta::new`] with a fresh UUID v4 as id.
    pub fn generate(origin: impl Into<String>) -> Self {
        EvalRunMeta::new(uuid::Uuid::new_v4().to_string(), origin)
    }

    /// Add an eval and its configuration.
    pub fn eval(mut self, name: impl Into<String>, config: RunConfig) -> Self {
        self.evals.push((name.into(), config));
        self
    }

    /// Add how eval `name` is judged and how many cells it plans.
    pub fn plan(mut self, name: impl Into<String>, plan: EvalPlan) -> Self {
        self.plans.insert(name.into(), plan);
        self
    }

    /// Set the start time (Unix milliseconds).
    pub fn started_at_ms(mut self, ms: u64) -> Self {
        self.started_at_ms = ms;
        self
    }

    /// Set how the run chose its cells.
    pub fn selection(mut self, selection: impl Into<String>) -> Self {
        self.selection = Some(selection.into());
        self
    }
}

/// One finished cell of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedCell {
    /// The eval.
    pub eval: String,
    /// The cell as the harness names its test: `{eval}::{variant}::{case}[::t{n}]`.
    pub cell: String,
    /// Its record, as in the results document.
    pub record: CellRecord,
    /// Whether its session matched its snapshot (true when not checked).
    pub snapshot_ok: bool,
    /// Unix milliseconds.
    pub finished_at_ms: u64,
}

impl RecordedCell {
    /// A cell finished now.
    pub fn new(
        eval: impl Into<String>,
        cell: impl Into<String>,
        record: CellRecord,
        snapshot_ok: bool,
    ) -> Self {
        RecordedCell {
            eval: eval.into(),
            cell: cell.into(),
            record,
            snapshot_ok,
            finished_at_ms: now_ms(),
        }
    }

    /// Whether the cell passed its checks (the snapshot aside).
    pub fn passed(&self) -> bool {
        self.record.passed
    }
}

/// A stored eval run, as listed by [`Store::eval_runs`](super::Store::eval_runs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalRunRecord {
    /// The run id.
    pub id: String,
    /// Who ran it ([`ORIGIN_HARNESS`], [`ORIGIN_NEXTEST`], …).
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
    },
    Record {
        run_id: String,
        eval: String,
        cell: String,
        record: String,
        passed: bool,
        snapshot_ok: bool,
        finished_at: i64,
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
    pub(crate) fn begin(path: &str, meta: &EvalRunMeta) -> Result<RunOp, StoreError> {
        let evals = meta
            .evals
            .iter()
            .map(|(name, config)| {
                let plan = meta.plans.get(name);
                let stored = StoredConfig {
                    config: config.clone(),
                    gate_options: plan.map(|p| p.gate_options.clone()),
                    planned_cells: plan.and_then(|p| p.planned_cells),
                };
                serde_json::to_string(&stored)
                    .ctx(path, || format!("serializing the config of eval {name}"))
                    .map(|json| (name.clone(), json))
            })
            .collect::<Result<_, _>>()?;
        Ok(RunOp::Begin {
            id: meta.id.clone(),
            origin: meta.origin.clone(),
            started_at: to_i64(path, "eval run startedAtMs", meta.started_at_ms)?,
            evals,
            selection: meta.selection.clone(),
        })
    }

    pub(crate) fn record(
        path: &str,
        run_id: &str,
        cell: &RecordedCell,
    ) -> Result<RunOp, StoreError> {
        let record = serde_json::to_string(&cell.record).ctx(path, || {
            format!("serializing the record of cell {}", cell.cell)
        })?;
        Ok(RunOp::Record {
            run_id: run_id.to_owned(),
            eval: cell.eval.clone(),
            cell: cell.cell.clone(),
            record,
            passed: cell.record.passed,
            snapshot_ok: cell.snapshot_ok,
            finished_at: to_i64(path, "cell finishedAtMs", cell.finished_at_ms)?,
        })
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
            } => {
                let what = || format!("beginning eval run {id}");
                conn.prepare_cached(
                    "INSERT OR IGNORE INTO eval_runs (id, origin, status, started_at, selection) \
                     VALUES (?1, ?2, 'running', ?3, ?4)",
                )
                .and_then(|mut st| st.execute(params![id, origin, started_at, selection]))
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
            } => {
                // A cell recorded again (a retried test) keeps its latest result.
                let inserted = conn
                    .prepare_cached(
                        "INSERT OR REPLACE INTO cell_results \
                         (run_id, eval, cell, record, passed, snapshot_ok, finished_at) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    )
                    .and_then(|mut st| {
                        st.execute(params![
                            run_id,
                            eval,
                            cell,
                            record,
                            passed,
                            snapshot_ok,
                            finished_at
                        ])
                    });
                match inserted {
                    Ok(_) => Ok(()),
                    Err(rusqlite::Error::SqliteFailure(e, _))
                        if e.code == ErrorCode::ConstraintViolation =>
                    {
                        Err(StoreError::EvalRunNotFound {
                            path: path.to_owned(),
                            id: run_id.clone(),
                        })
                    }
                    Err(e) => Err(e).ctx(path, || format!("recording cell {cell} of run {run_id}")),
                }
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
         UNION SELECT eval FROM cell_results c WHERE c.run_id = r.id))";

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
    Ok(EvalRunRecord {
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

/// The cells recorded in `run`, by eval and cell id.
pub(crate) fn cells(
    conn: &Connection,
    path: &str,
    run: &str,
) -> Result<Vec<RecordedCell>, StoreError> {
    let what = || format!("reading the cells of eval run {run}");
    let mut st = conn.prepare_cached(CELLS_SQL).ctx(path, what)?;
    let mut rows = st.query([run]).ctx(path, what)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx(path, what)? {
        let eval: String = row.get(0).ctx(path, what)?;
        let cell: String = row.get(1).ctx(path, what)?;
        let record = row
            .get_ref(2)
            .and_then(|v| Ok(v.as_str()?))
            .ctx(path, what)?;
        let record: CellRecord = serde_json::from_str(record).ctx(path, || {
            format!("parsing the record of cell {cell} of run {run}")
        })?;
        let finished_at: i64 = row.get(4).ctx(path, what)?;
        out.push(RecordedCell {
            eval,
            record,
            snapshot_ok: row.get(3).ctx(path, what)?,
            finished_at_ms: to_u64(path, "cell_results.finished_at", finished_at)?,
            cell,
        });
    }
    Ok(out)
}

/// The records of `cells` of eval `eval` in `run`, in the order asked; `None`
/// for a cell not recorded.
pub(crate) fn records(
    conn: &Connection,
    path: &str,
    run: &str,
    eval: &str,
    cells: &[String],
) -> Result<Vec<Option<CellRecord>>, StoreError> {
    let what = || format!("reading cell records of eval run {run}");
    let mut st = conn.prepare_cached(RECORD_SQL).ctx(path, what)?;
    let mut out = Vec::with_capacity(cells.len());
    for cell in cells {
        let mut rows = st.query(params![run, eval, cell]).ctx(path, what)?;
        let record = match rows.next().ctx(path, what)? {
            Some(row) => {
                let text = row
                    .get_ref(0)
                    .and_then(|v| Ok(v.as_str()?))
                    .ctx(path, what)?;
                Some(serde_json::from_str(text).ctx(path, || {
                    format!("parsing the record of cell {cell} of run {run}")
                })?)
            }
            None => None,
        };
        out.push(record);
    }
    Ok(out)
}

/// The stored configuration of each eval of `run` (empty if the run has none).
pub(crate) fn configs(
    conn: &Connection,
    path: &str,
    run: &str,
) -> Result<BTreeMap<String, RunConfig>, StoreError> {
    Ok(stored_configs(conn, path, run)?
        .into_iter()
        .map(|(eval, stored)| (eval, stored.config))
        .collect())
}

/// One results document per eval of `run` that has recorded cells.
pub(crate) fn results(
    conn: &Connection,
    path: &str,
    run: &str,
) -> Result<Vec<EvalResults>, StoreError> {
    let Some(record) = runs(conn, path, Some(run))?.into_iter().next() else {
        return Err(StoreError::EvalRunNotFound {
            path: path.to_owned(),
            id: run.to_owned(),
        });
    };
    let stored = stored_configs(conn, path, run)?;
    let mut by_eval: BTreeMap<String, Vec<RecordedCell>> = BTreeMap::new();
    for cell in cells(conn, path, run)? {
        by_eval.entry(cell.eval.clone()).or_default().push(cell);
    }
    // An eval the run planned cells of but recorded none is missing whole.
    for (eval, s) in &stored {
        if s.planned(record.finished).is_some_and(|n| n > 0) {
            by_eval.entry(eval.clone()).or_default();
        }
    }
    let mut out = Vec::new();
    for (eval, cells) in by_eval {
        let last = cells.iter().map(|c| c.finished_at_ms).max();
        let at = record
            .finished_at_ms
            .or(last)
            .unwrap_or(record.started_at_ms);
        let records: Vec<CellRecord> = cells.into_iter().map(|c| c.record).collect();
        let stored = stored.get(&eval);
        let mut config = stored
            .map(|s| s.config.clone())
            .unwrap_or_else(|| RunConfig {
                trials: records.iter().map(|c| c.trial + 1).max().unwrap_or(1),
                inputs: 0,
                variants: Vec::new(),
                scorers: Vec::new(),
                min_pass_rate: 1.0,
            });
        config.inputs = distinct_inputs(&records);
        let options = stored
            .and_then(|s| s.gate_options.clone())
            .unwrap_or_default();
        let results =
            EvalResults::new_with(eval, crate::util::rfc3339(at), config, options, records);
        out.push(match stored.and_then(|s| s.planned(record.finished)) {
            Some(planned) => results.with_planned_cells(planned),
            // Without a count only the run's own mark tells.
            None => EvalResults {
                complete: record.finished,
                ..results
            },
        });
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

/// The stored configuration of each eval of `run`, with its plan.
fn stored_configs(
    conn: &Connection,
    path: &str,
    run: &str,
) -> Result<BTreeMap<String, StoredConfig>, StoreError> {
    let what = || format!("reading the eval configs of run {run}");
    let mut st = conn
        .prepare_cached("SELECT eval, config FROM eval_run_evals WHERE run_id = ?1")
        .ctx(path, what)?;
    let rows: Vec<(String, String)> = st
        .query_map([run], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect())
        .ctx(path, what)?;
    rows.into_iter()
        .map(|(eval, json)| {
            let stored: StoredConfig = serde_json::from_str(&json).ctx(path, || {
                format!("parsing the config of eval {eval} in run {run}")
            })?;
            Ok((eval, stored))
        })
        .collect()
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
    use super::*;

    #[test]
    fn a_run_keeps_the_selection_of_the_process_that_began_it() {
        let store = Store::in_memory().unwrap();
        for selection in ["first", "second"] {
            let meta = EvalRunMeta::new("r", ORIGIN_NEXTEST).selection(selection);
            store.begin_eval_run(&meta).unwrap();
        }
        assert_eq!(
            store.eval_run_selection("r").unwrap().as_deref(),
            Some("first")
        );
        store
            .begin_eval_run(&EvalRunMeta::new("without", ORIGIN_HARNESS))
            .unwrap();
        assert_eq!(store.eval_run_selection("without").unwrap(), None);
        assert_eq!(store.eval_run_selection("not-stored").unwrap(), None);
    }

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
