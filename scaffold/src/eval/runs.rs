//! Eval runs in the store: which cells of a run have finished, with their records, so
//! that an interrupted run can be resumed and the shards of a run merged.
//!
//! A run is begun once per harness process ([`Store::begin_eval_run`], which
//! is idempotent so that every process of one nextest run can begin the
//! same id), each finished cell is recorded durably
//! ([`Store::record_cell`] returns once the cell is committed) and the run
//! is marked finished after its summary ([`Store::finish_eval_run`]).

use std::collections::BTreeMap;

use rusqlite::{Connection, params};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::results::distinct_inputs;
use super::{CellRecord, EvalResults, GateOptions, RunConfig};
use crate::signal::Signal;
use crate::store::{
    CELLS_SQL, Context, RECORD_SQL, RunOp, RunSource, Store, StoreError, to_i64, to_u64,
};
use crate::util::now_ms;

/// An eval run as it begins: its id, who runs it, and the configuration of
/// each of its evals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalRunMeta {
    /// Unique id (a UUID, or nextest's run id).
    pub id: String,
    /// Who runs it: `ORIGIN_HARNESS`, `ORIGIN_NEXTEST` or anything else.
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
    /// The commit and branch it runs on, when known.
    #[serde(default)]
    pub source: Option<RunSource>,
}

/// What a run stores of an eval beside its [`RunConfig`], so that results
/// rebuilt from the store ([`Store::eval_results`](Store::eval_results))
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
            source: None,
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

    /// Set the commit and branch it runs on.
    pub fn source(mut self, source: Option<RunSource>) -> Self {
        self.source = source;
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
    /// What search finds it by, when its session's signals were at hand
    /// ([`RecordedCell::signals`]); else the store reads them back.
    #[serde(skip)]
    pub(crate) search_text: Option<String>,
}

impl RecordedCell {
    /// A cell finished now.
    pub fn new(
        eval: impl Into<String>,
        cell: impl Into<String>,
        mut record: CellRecord,
        snapshot_ok: bool,
    ) -> Self {
        record.snapshot_changed |= !snapshot_ok;
        RecordedCell {
            eval: eval.into(),
            cell: cell.into(),
            record,
            snapshot_ok,
            finished_at_ms: now_ms(),
            search_text: None,
        }
    }

    /// With its session's `signals`, from which the text search finds it by
    /// is taken here rather than read back from the store when it is
    /// recorded (the same text: see `search_text`).
    pub fn signals(mut self, signals: &[Signal]) -> Self {
        self.search_text = Some(search_text(&self.record, signals));
        self
    }

    /// Whether the cell passed its checks (the snapshot aside).
    pub fn passed(&self) -> bool {
        self.record.passed
    }
}

/// The write that begins (or joins) run `meta`.
fn begin_op(path: &str, meta: &EvalRunMeta) -> Result<RunOp, StoreError> {
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
        source: (meta.source.as_ref())
            .map(serde_json::to_string)
            .transpose()
            .ctx(path, || {
                format!("serializing the source of run {}", meta.id)
            })?,
    })
}

/// The write that records `cell` in run `run_id`.
fn record_op(path: &str, run_id: &str, cell: &RecordedCell) -> Result<RunOp, StoreError> {
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
        session: Some(cell.record.session_id.clone()).filter(|s| !s.is_empty()),
        cost_usd: cell.record.metrics.cost_usd,
        text: cell.search_text.clone(),
    })
}

/// The text search finds a cell by, as the store's `cell_text_select`
/// takes it from the stored rows: every string of the record's case,
/// dataset, variant, error, input, output and assertions, then every
/// string of its session's signals but the requests (`provider:start`:
/// prompts and message histories, which repeat the input and earlier
/// answers).
fn search_text(record: &CellRecord, signals: &[Signal]) -> String {
    let mut out = String::new();
    for s in [&record.case, &record.dataset, &record.variant] {
        push_text(&mut out, s);
    }
    if let Some(e) = &record.error {
        push_text(&mut out, e);
    }
    push_strings(&mut out, &record.input);
    if let Some(output) = &record.output {
        push_strings(&mut out, output);
    }
    if let Ok(assertions) = serde_json::to_value(&record.assertions) {
        push_strings(&mut out, &assertions);
    }
    let answers = signals
        .iter()
        .filter(|s| s.name != crate::signal::names::PROVIDER_START);
    for s in answers {
        push_strings(&mut out, &s.payload);
    }
    out
}

fn push_text(out: &mut String, s: &str) {
    if !out.is_empty() {
        out.push(' ');
    }
    out.push_str(s);
}

/// Every string in `value`, one after the other.
fn push_strings(out: &mut String, value: &Value) {
    match value {
        Value::String(s) => push_text(out, s),
        Value::Array(items) => items.iter().for_each(|v| push_strings(out, v)),
        Value::Object(fields) => fields.values().for_each(|v| push_strings(out, v)),
        _ => {}
    }
}

/// The cells recorded in `run`, by eval and cell id.
fn cells(conn: &Connection, path: &str, run: &str) -> Result<Vec<RecordedCell>, StoreError> {
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
        let mut record: CellRecord = serde_json::from_str(record).ctx(path, || {
            format!("parsing the record of cell {cell} of run {run}")
        })?;
        let finished_at: i64 = row.get(4).ctx(path, what)?;
        let snapshot_ok: bool = row.get(3).ctx(path, what)?;
        // Written before records carried it.
        record.snapshot_changed |= !snapshot_ok;
        out.push(RecordedCell {
            search_text: None,
            eval,
            record,
            snapshot_ok,
            finished_at_ms: to_u64(path, "cell_results.finished_at", finished_at)?,
            cell,
        });
    }
    Ok(out)
}

/// The records of `cells` of eval `eval` in `run`, in the order asked; `None`
/// for a cell not recorded.
fn records(
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
fn configs(
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
fn results(conn: &Connection, path: &str, run: &str) -> Result<Vec<EvalResults>, StoreError> {
    let Some(record) = crate::store::eval_runs_in(conn, path, Some(run))?
        .into_iter()
        .next()
    else {
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
            None => {
                let mut results = EvalResults {
                    complete: record.finished,
                    ..results
                };
                results.gate = Some(results.gate_verdict());
                results
            }
        });
    }
    Ok(out)
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

/// Whether every cell run `run` planned is recorded: each eval it planned
/// cells of has that many (false when a plan is unknown).
fn whole(conn: &Connection, path: &str, run: &str) -> Result<bool, StoreError> {
    let stored = stored_configs(conn, path, run)?;
    let what = || format!("counting the cells of eval run {run}");
    let mut st = conn
        .prepare_cached("SELECT eval, COUNT(*) FROM cell_results WHERE run_id = ?1 GROUP BY eval")
        .ctx(path, what)?;
    let counts: BTreeMap<String, i64> = st
        .query_map([run], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect())
        .ctx(path, what)?;
    Ok(!stored.is_empty()
        && stored.iter().all(|(eval, s)| {
            s.planned_cells.is_some_and(|planned| {
                let recorded = counts.get(eval).copied().unwrap_or(0);
                usize::try_from(recorded).is_ok_and(|n| n >= planned)
            })
        }))
}

/// The eval layer's methods of the store: runs typed with its records.
impl Store {
    /// Begin an eval run, or join it: beginning an id already stored keeps
    /// its start and adds the configs of evals it did not have yet (every
    /// process of a nextest run begins the run it shares). Returns once committed.
    pub fn begin_eval_run(&self, run: &EvalRunMeta) -> Result<(), StoreError> {
        let op = begin_op(self.path(), run)?;
        self.write_run(op)
    }

    /// Record a finished cell of run `run_id` (again: the latest record
    /// wins). Durable when it returns: the cell is committed (in WAL, so a
    /// process killed right after does not lose it). The cell's signals
    /// appended before it are committed with it or before it.
    /// [`StoreError::EvalRunNotFound`] if the run was never begun.
    pub fn record_cell(&self, run_id: &str, cell: &RecordedCell) -> Result<(), StoreError> {
        let op = record_op(self.path(), run_id, cell)?;
        self.write_run(op)
    }

    /// Mark run `run_id` finished if every cell it planned is recorded (what
    /// the last process of a nextest run does: none sees the whole run);
    /// whether it is.
    pub fn finish_eval_run_if_whole(&self, run_id: &str) -> Result<bool, StoreError> {
        let id = run_id.to_owned();
        if !self.read(move |conn, path| whole(conn, path, &id))? {
            return Ok(false);
        }
        self.finish_eval_run(run_id)?;
        Ok(true)
    }

    /// The cells recorded in run `run_id`, by eval and cell (empty for a run
    /// without cells or not stored).
    pub fn recorded_cells(&self, run_id: &str) -> Result<Vec<RecordedCell>, StoreError> {
        let id = run_id.to_owned();
        self.read(move |conn, path| cells(conn, path, &id))
    }

    /// The records of `cells` (test names, `{eval}::{variant}::{case}[::t{n}]`)
    /// of eval `eval` in run `run_id`, in the order asked; `None` for a cell
    /// not recorded. Read in one go: ask in chunks to bound memory.
    pub fn cell_records(
        &self,
        run_id: &str,
        eval: &str,
        cells: Vec<String>,
    ) -> Result<Vec<Option<CellRecord>>, StoreError> {
        let (run, eval) = (run_id.to_owned(), eval.to_owned());
        self.read(move |conn, path| records(conn, path, &run, &eval, &cells))
    }

    /// The configuration of each eval of run `run_id`, by eval name.
    pub fn eval_run_configs(
        &self,
        run_id: &str,
    ) -> Result<std::collections::BTreeMap<String, RunConfig>, StoreError> {
        let id = run_id.to_owned();
        self.read(move |conn, path| configs(conn, path, &id))
    }

    /// The results of run `run_id`, one document per eval with recorded
    /// cells or planned ones (sorted by eval name), rebuilt from the stored
    /// configs and cell records: `inputs`, summaries and comparison are
    /// recomputed; the gate options are the run's own ([`EvalPlan`]); the
    /// timestamp is when the run finished (else its last cell). Results
    /// missing cells the run planned are not `complete` and carry their
    /// `cell_counts` (a run stored without a plan: its configuration's
    /// variants × cases × trials, until it is marked finished).
    /// [`StoreError::EvalRunNotFound`] if the run is not stored.
    pub fn eval_results(&self, run_id: &str) -> Result<Vec<EvalResults>, StoreError> {
        let id = run_id.to_owned();
        self.read(move |conn, path| results(conn, path, &id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{ORIGIN_HARNESS, ORIGIN_NEXTEST};

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
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn a_stored_run_finishes_with_its_counts_and_reads_back_its_results() {
        use crate::eval::{CellRecord, EvalRunMeta, RecordedCell, RunConfig};
        use crate::store::Store;

        fn main() -> Result<(), crate::store::StoreError> {
            let store = Store::in_memory()?;
            let config = RunConfig::for_tests(1, 1, &["v"]);
            store.begin_eval_run(&EvalRunMeta::new("run-1", "harness").eval("qa", config))?;
            let mut record = CellRecord::new("v", "case-1");
            record.passed = true;
            store.record_cell(
                "run-1",
                &RecordedCell::new("qa", "qa::v::case-1", record, true),
            )?;
            assert!(!store.eval_run("run-1")?.unwrap().finished);
            store.finish_eval_run("run-1")?;
            let run = store.eval_run("run-1")?.unwrap();
            assert!(run.finished);
            assert_eq!(
                (run.cells, run.passed, run.evals.clone()),
                (1, 1, vec!["qa".to_string()])
            );
            let results = store.eval_results("run-1")?;
            assert_eq!(results[0].pass_rate(), 1.0);
            Ok(())
        }
        main().unwrap();
    }
}
