//! The results document: what one run of an eval produced, as written to
//! `target/scaffold/{eval}.json` and read back as a baseline.
//!
//! Its shape is seed 000's (`eval`, `timestamp`, `config`, `results[]` with
//! `scores` keyed by scorer name, `summary` keyed by variant) plus a
//! `schemaVersion`, per-cell assertions and metrics, latency percentiles,
//! cost and token totals, and the cross-variant `comparison`. The JSON
//! Schema is [`RESULTS_SCHEMA`] (`scaffold/schema/results.schema.json`);
//! `scaffold/docs/results-schema.md` describes every field.
//!
//! Compatibility: readers accept any document whose `schemaVersion` is at
//! most [`SCHEMA_VERSION`]; fields added within a version are optional.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::compare::{VariantCompareOptions, VariantComparison, compare_variants};
use super::gate::{self, Gate, GateOptions, quarantine_matches};
use super::small_map::SmallMap;
use super::stats::{
    CaseTrials, TrialStats, VariantSummary, pass_rate_interval, summarize, trial_stats,
};
use super::{CellId, CellResult};
use crate::assert::AssertionResult;
use crate::metrics::Metrics;
use crate::scorer::Score;
use crate::workflow::RunStatus;

/// The version of the results document this build writes.
pub const SCHEMA_VERSION: u32 = 1;

/// The JSON Schema (draft 2020-12) of the results document.
pub const RESULTS_SCHEMA: &str = include_str!("../../schema/results.schema.json");

/// Why a results document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// The file could not be read.
    #[error("cannot read results {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a results document.
    #[error("{path} is not a scaffold results document: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// Written by a newer scaffold.
    #[error(
        "{path} has results schema version {found}; this scaffold reads up to {SCHEMA_VERSION}: upgrade scaffold"
    )]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: u32,
    },
}

/// Why [`EvalResults::merge`] refused its parts.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no results to merge")]
    Empty,
    /// The parts are results of different evals.
    #[error("cannot merge results of different evals: `{first}` and `{other}`")]
    EvalMismatch {
        /// The first part's eval.
        first: String,
        /// The eval of a part that differs.
        other: String,
    },
    /// The parts were run with different settings.
    #[error(
        "cannot merge results of eval `{eval}` run with different {field}: {first} and {other}"
    )]
    ConfigMismatch {
        /// The eval.
        eval: String,
        /// The setting (`trials`, `variants`, `scorers`, `min_pass_rate`).
        field: &'static str,
        /// Its value in the first part.
        first: String,
        /// Its value in the part that differs.
        other: String,
    },
    /// A cell is in two parts (the same shard merged twice, or overlapping shards).
    #[error("cell {cell} is in more than one of the results merged (was a shard given twice?)")]
    DuplicateCell {
        /// The cell, as the harness names its test (`{eval}::{variant}::{case}[::t{n}]`).
        cell: String,
    },
}

/// A setting that differs between two [`RunConfig`]s (see [`RunConfig::difference`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigDifference {
    /// `trials`, `variants`, `scorers` or `min_pass_rate`.
    pub field: &'static str,
    /// The value in the first config.
    pub first: String,
    /// The value in the other.
    pub other: String,
}

/// How many characters of a cell's output the reports show (JUnit's
/// `system-out`).
pub const REPORTED_OUTPUT_CHARS: usize = 4000;

/// One eval run's results.
///
/// Its JSON also holds `trialStats`, per variant × case over its trials
/// ([`EvalResults::trial_stats`]): computed from the cells as it is
/// written, and again when a document is read.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalResults {
    /// `SCHEMA_VERSION` when written.
    pub schema_version: u32,
    /// The eval's name.
    pub eval: String,
    /// When the run finished, RFC 3339 UTC.
    pub timestamp: String,
    /// How it was run.
    pub config: RunConfig,
    /// Whether the run recorded every cell it planned: false for the
    /// results of a run that was interrupted (or of one shard of it).
    #[serde(default = "yes")]
    pub complete: bool,
    /// The cells the run planned, recorded and missed, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell_counts: Option<CellCounts>,
    /// One record per cell, sorted by variant, dataset, case and trial.
    pub results: Vec<CellRecord>,
    /// Per variant, keyed by name.
    pub summary: BTreeMap<String, VariantSummary>,
    /// The variants compared (absent with a single variant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<VariantComparison>,
    /// How the results are judged: confidence, pass@k, quarantine, gate.
    #[serde(default)]
    pub gate_options: GateOptions,
    /// The gate's verdict. Derived from `results` and `gateOptions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
}

/// The document as written: the fields of [`EvalResults`] in their order,
/// with `trialStats` computed from `cells` as it is serialized.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Document<'a> {
    schema_version: u32,
    eval: &'a str,
    timestamp: &'a str,
    config: &'a RunConfig,
    complete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    cell_counts: Option<&'a CellCounts>,
    results: &'a [CellRecord],
    summary: &'a BTreeMap<String, VariantSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    comparison: Option<&'a VariantComparison>,
    gate_options: &'a GateOptions,
    trial_stats: TrialStatsOf<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gate: Option<&'a Gate>,
}

/// The trial statistics of some cells, serialized one at a time.
struct TrialStatsOf<'a> {
    cells: &'a [CellRecord],
    options: &'a GateOptions,
}

impl Serialize for TrialStatsOf<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let stats = trial_stats(self.cells, &self.options.pass_at_k, self.options.confidence);
        s.collect_seq(stats)
    }
}

impl Serialize for EvalResults {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.document(&self.results).serialize(s)
    }
}

/// How the eval was run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunConfig {
    /// Trials per variant × case.
    pub trials: u32,
    /// Distinct cases run.
    pub inputs: usize,
    /// The variants, in the eval's order.
    pub variants: Vec<String>,
    /// The scorers, in the eval's order.
    #[serde(default)]
    pub scorers: Vec<String>,
    /// The pass-rate gate.
    #[serde(default = "one")]
    pub min_pass_rate: f64,
}

fn one() -> f64 {
    1.0
}

fn yes() -> bool {
    true
}

/// How many cells of an eval a run planned, recorded and missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CellCounts {
    /// Cells the run set out to run (variants × cases × trials selected).
    pub planned: usize,
    /// Cells with a recorded result.
    pub recorded: usize,
    /// `planned − recorded` (0 when every planned cell was recorded).
    pub missing: usize,
}

impl CellCounts {
    /// The counts of `recorded` cells out of `planned`.
    pub fn new(planned: usize, recorded: usize) -> CellCounts {
        CellCounts {
            planned,
            recorded,
            missing: planned.saturating_sub(recorded),
        }
    }
}

impl RunConfig {
    /// The first setting that makes results of `self` and `other` impossible
    /// to combine: `trials`, `variants` (names and order), `scorers` or
    /// `min_pass_rate`. `inputs` is not compared: it follows from the cells.
    pub fn difference(&self, other: &RunConfig) -> Option<ConfigDifference> {
        let list = |v: &[String]| format!("[{}]", v.join(", "));
        let diff = |field, first: String, other: String| {
            Some(ConfigDifference {
                field,
                first,
                other,
            })
        };
        if self.trials != other.trials {
            return diff("trials", self.trials.to_string(), other.trials.to_string());
        }
        if self.variants != other.variants {
            return diff("variants", list(&self.variants), list(&other.variants));
        }
        if self.scorers != other.scorers {
            return diff("scorers", list(&self.scorers), list(&other.scorers));
        }
        if (self.min_pass_rate - other.min_pass_rate).abs() > 1e-12 {
            return diff(
                "min_pass_rate",
                self.min_pass_rate.to_string(),
                other.min_pass_rate.to_string(),
            );
        }
        None
    }
}

/// The fixture of unit tests: a run of `trials` trials of `inputs` cases on
/// `variants`, with no scorers, that every cell must pass.
#[cfg(test)]
impl RunConfig {
    pub(crate) fn for_tests(trials: u32, inputs: usize, variants: &[&str]) -> RunConfig {
        RunConfig {
            trials,
            inputs,
            variants: variants.iter().map(|v| v.to_string()).collect(),
            scorers: vec![],
            min_pass_rate: 1.0,
        }
    }
}

/// The results of unit tests: eval `eval` run at 2026-01-28T12:00:00Z with
/// [`RunConfig::for_tests`] of `trials` trials, the cells' cases and their
/// variants in the order they first appear.
#[cfg(test)]
impl EvalResults {
    pub(crate) fn for_tests(eval: &str, trials: u32, cells: Vec<CellRecord>) -> EvalResults {
        let mut variants: Vec<&str> = Vec::new();
        for c in &cells {
            if !variants.contains(&c.variant.as_str()) {
                variants.push(&c.variant);
            }
        }
        let config = RunConfig::for_tests(trials, distinct_inputs(&cells), &variants);
        EvalResults::new(eval, "2026-01-28T12:00:00Z", config, cells)
    }
}

/// One scorer's grade of one cell (seed 000's `{pass, value, unit}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreRecord {
    /// Whether it passed.
    pub pass: bool,
    /// The value.
    pub value: f64,
    /// The unit of a raw metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A judge's score within the borderline margin of its threshold.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub borderline: bool,
}

impl From<&Score> for ScoreRecord {
    fn from(s: &Score) -> Self {
        ScoreRecord {
            pass: s.pass,
            value: s.value,
            unit: s.unit.clone(),
            detail: s.detail.clone(),
            borderline: s.borderline,
        }
    }
}

/// One assertion's result as stored: the assertion as written, whether it
/// held and why. (Kept as data so that a baseline with assertion types this
/// build does not know still loads.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssertionRecord {
    /// The assertion (`{"type": "signal.contains", ...}`).
    pub assertion: Value,
    /// Whether it held.
    pub passed: bool,
    /// What was expected and what happened.
    pub message: String,
    /// The expected value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Value>,
    /// The actual value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<Value>,
    /// For trajectory-like assertions, the actual sequence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory: Option<Vec<String>>,
    /// For `all`, `any`, `not`: the inner results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<AssertionRecord>,
    /// An `llm.judge` whose score is within the borderline margin of its minimum.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub borderline: bool,
}

impl AssertionRecord {
    /// The assertion's `type`, or `?`.
    pub fn type_name(&self) -> &str {
        self.assertion
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("?")
    }
}

impl From<&AssertionResult> for AssertionRecord {
    fn from(r: &AssertionResult) -> Self {
        AssertionRecord {
            assertion: serde_json::to_value(&r.assertion).unwrap_or(Value::Null),
            passed: r.passed,
            message: r.message.clone(),
            expected: r.expected.clone(),
            actual: r.actual.clone(),
            trajectory: r.trajectory.clone(),
            children: r.children.iter().map(AssertionRecord::from).collect(),
            borderline: r.borderline,
        }
    }
}

/// One cell's record: seed 000's `results[]` entry plus assertions and metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CellRecord {
    /// The variant.
    pub variant: String,
    /// The dataset of the case.
    #[serde(default)]
    pub dataset: String,
    /// The case id.
    pub case: String,
    /// The trial, from 0.
    #[serde(default)]
    pub trial: u32,
    /// The case's input.
    #[serde(default)]
    pub input: Value,
    /// Whether the run, every assertion and every scorer passed.
    pub passed: bool,
    /// How the run ended.
    pub status: RunStatus,
    /// The run's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The run's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Every scorer's grade, by scorer name.
    #[serde(default)]
    pub scores: SmallMap<String, ScoreRecord>,
    /// Every assertion's result, in the dataset's order.
    #[serde(default)]
    pub assertions: Vec<AssertionRecord>,
    /// Latency, tokens, cost, activations.
    #[serde(default)]
    pub metrics: Metrics,
    /// Latency in ms (= `metrics.latencyMs`; seed 000's field).
    #[serde(default)]
    pub duration_ms: u64,
    /// Signals emitted (seed 000's `events`).
    #[serde(default)]
    pub events: usize,
    /// The stored session.
    #[serde(default)]
    pub session_id: String,
    /// Quarantined (see [`GateOptions::quarantine`]): reported, not counted
    /// by the gate or baseline blocking. Set from the results' gate options.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quarantined: bool,
    /// Retries the run took after it errored ([`OnError::Retry`](super::OnError::Retry)).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
    /// The run errored and the eval excludes errored cells
    /// ([`OnError::Exclude`](super::OnError::Exclude)): listed, left out of
    /// every statistic and of the gate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub excluded: bool,
    /// The cell could not be played back: its requests differ from its
    /// recordings, or it has none. Its verdict is not the workflow's: it
    /// fails the run whatever the gate says (re-record it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unplayable: bool,
    /// The cell's session differed from its snapshot (or had none yet): it
    /// fails the run whatever the gate says (review with `cargo insta review`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub snapshot_changed: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl CellRecord {
    /// A completed, failing cell with nothing in it (for building records by hand).
    pub fn new(variant: impl Into<String>, case: impl Into<String>) -> CellRecord {
        CellRecord {
            variant: variant.into(),
            dataset: String::new(),
            case: case.into(),
            trial: 0,
            input: Value::Null,
            passed: false,
            status: RunStatus::Completed,
            error: None,
            output: None,
            scores: SmallMap::new(),
            assertions: Vec::new(),
            metrics: Metrics::default(),
            duration_ms: 0,
            events: 0,
            session_id: String::new(),
            quarantined: false,
            retries: 0,
            excluded: false,
            unplayable: false,
            snapshot_changed: false,
        }
    }

    /// Whether the cell fails the run by itself, whatever the gate says:
    /// it could not be played back or its snapshot changed.
    pub fn fails_the_run(&self) -> bool {
        self.unplayable || self.snapshot_changed
    }

    /// Its output as a reader wants it: a string's own text, other JSON as
    /// JSON; `None` without an output.
    pub fn output_text(&self) -> Option<String> {
        self.output.as_ref().map(|output| match output {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    /// `{variant}::{case}`, plus `::t{n}` when the eval ran `trials > 1`
    /// (the harness's test name without the eval).
    pub fn label(&self, trials: u32) -> String {
        if trials > 1 {
            format!("{}::{}::t{}", self.variant, self.case, self.trial)
        } else {
            format!("{}::{}", self.variant, self.case)
        }
    }

    /// The cell's test name, `{eval}::{variant}::{case}` plus `::t{n}` when
    /// the eval ran `trials > 1` (what the harness calls the cell).
    pub fn test_name(&self, eval: &str, trials: u32) -> String {
        format!("{eval}::{}", self.label(trials))
    }

    /// The record as the harness keeps it in memory during a run, while the
    /// store holds the whole: without its input, its output, its session id,
    /// its passed assertions (unless they hold a borderline judgement) and
    /// the reasons of its passed scores; its assertions and scores keep no
    /// spare room.
    /// What the statistics, the gate, the table and Markdown read is kept;
    /// the JSON, JUnit and HTML reports read the rest from the store
    /// ([`report::stream`](crate::report::stream)), and
    /// [`CellRecord::with_details`] puts it back.
    pub fn into_summary(mut self) -> CellRecord {
        fn borderline(a: &AssertionRecord) -> bool {
            a.borderline || a.children.iter().any(borderline)
        }
        self.input = Value::Null;
        self.output = None;
        self.session_id = String::new();
        self.assertions.retain(|a| !a.passed || borderline(a));
        self.assertions.shrink_to_fit();
        self.scores.shrink_to_fit();
        for s in self.scores.values_mut().filter(|s| s.pass) {
            s.detail = None;
        }
        self
    }

    /// This summary ([`CellRecord::into_summary`]) with the input, output,
    /// session id, assertions and score reasons of `full`, the cell's whole
    /// record; what the summary decided (pass, scores, quarantine) stays.
    pub fn with_details(mut self, full: CellRecord) -> CellRecord {
        self.input = full.input;
        self.output = full.output;
        self.session_id = full.session_id;
        self.assertions = full.assertions;
        for (name, s) in full.scores {
            if let Some(mine) = self.scores.get_mut(&name) {
                mine.detail = s.detail;
            }
        }
        self
    }

    /// The cell's key within its variant: dataset, case, trial.
    pub fn case_key(&self) -> (String, String, u32) {
        (self.dataset.clone(), self.case.clone(), self.trial)
    }

    /// The cell's borderline judgements, one line each: `llm.judge` results
    /// (at any depth) and scores marked borderline.
    pub fn borderline_judgements(&self) -> Vec<String> {
        fn walk(a: &AssertionRecord, out: &mut Vec<String>) {
            if a.borderline {
                out.push(format!("{}: {}", a.type_name(), a.message));
            }
            a.children.iter().for_each(|c| walk(c, out));
        }
        let mut out = Vec::new();
        self.assertions.iter().for_each(|a| walk(a, &mut out));
        for (name, s) in self.scores.iter().filter(|(_, s)| s.borderline) {
            out.push(format!(
                "scorer `{name}` {}{}",
                s.value,
                s.detail
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            ));
        }
        out
    }

    /// Why the cell failed, one line per failed check (empty when it passed).
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(e) = &self.error {
            out.push(format!("run failed: {e}"));
        }
        for a in self.assertions.iter().filter(|a| !a.passed) {
            out.push(format!("{}: {}", a.type_name(), a.message));
        }
        for (name, s) in self.scores.iter().filter(|(_, s)| !s.pass) {
            out.push(format!(
                "scorer `{name}` failed with {}{}",
                s.value,
                s.detail
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            ));
        }
        if out.is_empty() && !self.passed {
            out.push("failed".into());
        }
        out
    }
}

impl From<&CellResult> for CellRecord {
    fn from(c: &CellResult) -> Self {
        let CellId {
            variant,
            case,
            trial,
            ..
        } = &c.id;
        CellRecord {
            variant: variant.clone(),
            dataset: c.dataset.clone(),
            case: case.clone(),
            trial: trial.unwrap_or(0),
            input: c.input.clone(),
            passed: c.passed,
            status: c.status,
            error: c.error.clone(),
            output: c.output.clone(),
            scores: c
                .scores
                .iter()
                .map(|s| (s.name.clone(), ScoreRecord::from(s)))
                .collect(),
            assertions: c.assertions.iter().map(AssertionRecord::from).collect(),
            metrics: c.metrics,
            duration_ms: c.metrics.latency_ms,
            events: c.signal_count,
            session_id: c.session_id.clone(),
            quarantined: false,
            retries: c.retries,
            excluded: c.excluded,
            unplayable: c.unplayable,
            snapshot_changed: false,
        }
    }
}

impl EvalResults {
    /// The scorers as report columns: the eval's order, then any other
    /// scorer seen in a variant's summary.
    pub fn scorer_columns(&self) -> Vec<String> {
        let mut names = self.config.scorers.clone();
        for summary in self.summary.values() {
            for name in summary.scores.keys() {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
        names
    }

    /// The results of `cells`: sorted, summarized per variant and compared.
    ///
    /// `config.variants` gives the variant order; variants that ran but are
    /// missing there are appended.
    pub fn new(
        eval: impl Into<String>,
        timestamp: impl Into<String>,
        config: RunConfig,
        cells: Vec<CellRecord>,
    ) -> EvalResults {
        EvalResults::build(
            eval.into(),
            timestamp.into(),
            config,
            GateOptions::default(),
            cells,
        )
    }

    /// [`EvalResults::new`] judged with `options` (see [`EvalResults::with_gate_options`]).
    pub fn new_with(
        eval: impl Into<String>,
        timestamp: impl Into<String>,
        config: RunConfig,
        options: GateOptions,
        cells: Vec<CellRecord>,
    ) -> EvalResults {
        EvalResults::build(eval.into(), timestamp.into(), config, options, cells)
    }

    /// The same results judged with `options` (quarantine, confidence,
    /// pass@k, lower-bound gate, trials for a winner, primary scorer):
    /// quarantine flags, trial statistics, intervals, the comparison and the
    /// gate recomputed.
    pub fn with_gate_options(self, options: GateOptions) -> EvalResults {
        let (complete, counts) = (self.complete, self.cell_counts);
        let mut judged = EvalResults::build(
            self.eval,
            self.timestamp,
            self.config,
            options,
            self.results,
        );
        judged.complete = complete;
        judged.cell_counts = counts;
        judged.gate = Some(judged.gate_verdict());
        judged
    }

    /// The same results marked as those of a run that planned `planned`
    /// cells: complete when every one of them is among the cells.
    pub fn with_planned_cells(mut self, planned: usize) -> EvalResults {
        let counts = CellCounts::new(planned, self.results.len());
        self.complete = counts.missing == 0;
        self.cell_counts = Some(counts);
        // The gate fails a run that is not finished.
        self.gate = Some(self.gate_verdict());
        self
    }

    /// Why these are not the results of a whole run (`None` when they are):
    /// `run not finished: 1700 of 2000 planned cells missing (300 recorded)`.
    pub fn partial(&self) -> Option<String> {
        if self.complete {
            return None;
        }
        Some(match &self.cell_counts {
            Some(c) => format!(
                "run not finished: {} of {} planned cells missing ({} recorded)",
                c.missing, c.planned, c.recorded
            ),
            None => "run not finished: some planned cells are missing".into(),
        })
    }

    fn build(
        eval: String,
        timestamp: String,
        mut config: RunConfig,
        options: GateOptions,
        mut cells: Vec<CellRecord>,
    ) -> EvalResults {
        for c in &mut cells {
            if !config.variants.contains(&c.variant) {
                config.variants.push(c.variant.clone());
            }
            sanitize(c);
        }
        let position = |v: &str| config.variants.iter().position(|x| x == v);
        crate::util::sort_stable_by(&mut cells, |a, b| {
            (position(&a.variant), &a.dataset, &a.case, a.trial).cmp(&(
                position(&b.variant),
                &b.dataset,
                &b.case,
                b.trial,
            ))
        });
        let counted = counted_cells(&cells);
        let summaries = summarize(&counted);
        let comparison = (summaries.len() > 1).then(|| {
            compare_variants(
                &summaries,
                &counted,
                &VariantCompareOptions {
                    quality: options.primary_scorer.clone(),
                    min_trials_for_winner: options.min_trials_for_winner,
                    ..VariantCompareOptions::default()
                },
            )
        });
        drop(counted);
        let mut results = EvalResults {
            schema_version: SCHEMA_VERSION,
            eval,
            timestamp,
            config,
            complete: true,
            cell_counts: None,
            results: cells,
            summary: summaries
                .into_iter()
                .map(|s| (s.variant.clone(), s))
                .collect(),
            comparison,
            gate_options: options,
            gate: None,
        };
        results.derive();
        results
    }

    /// Recompute what follows from the cells and the gate options: the
    /// cells' quarantine flags, the summaries' pass rate intervals and the
    /// gate. (The trial statistics are computed when asked for.)
    fn derive(&mut self) {
        let options = &self.gate_options;
        for c in &mut self.results {
            c.quarantined = options
                .quarantine
                .iter()
                .any(|p| quarantine_matches(p, &c.variant, &c.case));
        }
        for (variant, s) in &mut self.summary {
            let cells = self
                .results
                .iter()
                .filter(|c| !c.excluded && &c.variant == variant);
            s.pass_rate_interval = Some(pass_rate_interval(cells, options.confidence));
        }
        self.gate = Some(self.gate_verdict());
    }

    /// The results of graded cells (what the harness collects).
    pub fn from_cells(
        eval: impl Into<String>,
        timestamp: impl Into<String>,
        config: RunConfig,
        cells: &[CellResult],
    ) -> EvalResults {
        EvalResults::new(
            eval,
            timestamp,
            config,
            cells.iter().map(CellRecord::from).collect(),
        )
    }

    /// Merge the results of parts of one run of an eval (the shards of a
    /// nextest `--partition`, or runs over disjoint variants or cases) into
    /// the results of the whole: every cell once, `inputs`, the per-variant
    /// summaries and the comparison recomputed. The timestamp is the latest
    /// of the parts'.
    ///
    /// The parts must be of the same eval, run with the same `trials`,
    /// `variants`, `scorers` and `min_pass_rate`, and share no cell. The
    /// whole is complete when its cells are all the parts planned: every
    /// shard of a run planned the run's cells, so the merge of all its
    /// shards is complete and the merge of some of them is not.
    pub fn merge(parts: Vec<EvalResults>) -> Result<EvalResults, MergeError> {
        let planned = planned_by(&parts);
        let mut parts = parts.into_iter();
        let first = parts.next().ok_or(MergeError::Empty)?;
        let EvalResults {
            eval,
            mut timestamp,
            mut config,
            results,
            gate_options,
            ..
        } = first;
        let mut cells = results;
        for part in parts {
            if part.eval != eval {
                return Err(MergeError::EvalMismatch {
                    first: eval,
                    other: part.eval,
                });
            }
            if let Some(d) = config.difference(&part.config) {
                return Err(MergeError::ConfigMismatch {
                    eval,
                    field: d.field,
                    first: d.first,
                    other: d.other,
                });
            }
            if part.timestamp > timestamp {
                timestamp = part.timestamp;
            }
            cells.extend(part.results);
        }
        let mut seen = std::collections::HashSet::new();
        for c in &cells {
            if !seen.insert((&c.variant, &c.dataset, &c.case, c.trial)) {
                return Err(MergeError::DuplicateCell {
                    cell: c.test_name(&eval, config.trials),
                });
            }
        }
        config.inputs = distinct_inputs(&cells);
        let whole = EvalResults::build(eval, timestamp, config, gate_options, cells);
        Ok(match planned {
            None => whole,
            Some(n) => whole.with_planned_cells(n),
        })
    }

    /// The summaries in the order of `config.variants`.
    pub fn summaries(&self) -> Vec<&VariantSummary> {
        self.config
            .variants
            .iter()
            .filter_map(|v| self.summary.get(v))
            .collect()
    }

    /// Cells run.
    pub fn cell_count(&self) -> usize {
        self.results.len()
    }

    /// The cells the statistics count: all but the excluded ones
    /// ([`OnError::Exclude`](super::OnError::Exclude)).
    pub fn counted(&self) -> impl Iterator<Item = &CellRecord> {
        self.results.iter().filter(|c| !c.excluded)
    }

    /// Counted cells ([`EvalResults::counted`]) that passed.
    pub fn passed_count(&self) -> usize {
        self.counted().filter(|c| c.passed).count()
    }

    /// `passed / cells` over every variant and the counted cells (0 for none).
    pub fn pass_rate(&self) -> f64 {
        match self.counted().count() {
            0 => 0.0,
            n => self.passed_count() as f64 / n as f64,
        }
    }

    /// Whether the run passes its gate: the pass rate of the cells that are
    /// not quarantined (or, with [`GateOptions::on_lower_bound`], the lower
    /// bound of its Wilson interval) meets `config.min_pass_rate`.
    pub fn gate_passed(&self) -> bool {
        self.gate_verdict().passed
    }

    /// The warning for variants whose cost is unknown (a model they called
    /// has no price), with the way to add one; `None` when every call was
    /// priced.
    pub fn cost_warning(&self) -> Option<String> {
        let unknown: Vec<String> = self
            .summary
            .values()
            .filter(|s| s.cost.unpriced_cells > 0)
            .map(|s| {
                format!(
                    "`{}` ({} of {} cells)",
                    s.variant, s.cost.unpriced_cells, s.cells
                )
            })
            .collect();
        if unknown.is_empty() {
            return None;
        }
        Some(format!(
            "warning: no price for a model of variant{} {}: its cost is unknown, shown as such and \
             never ranked; price it with Eval::pricing(Pricing::builtin().with_model(\"MODEL\", \
             ModelPrice::per_mtok(INPUT_USD, OUTPUT_USD))) (MODEL as the provider reports it, on \
             provider:end)",
            if unknown.len() == 1 { "" } else { "s" },
            unknown.join(", ")
        ))
    }

    /// The gate's verdict and what it was based on (see [`gate`]).
    pub fn gate_verdict(&self) -> Gate {
        let gate = gate::judge(
            self.results
                .iter()
                .filter(|c| !c.excluded)
                .map(|c| (c.variant.as_str(), c.case.as_str(), c.passed, c.quarantined)),
            self.config.min_pass_rate,
            &self.gate_options,
        );
        gate.blocked(self.run_failures())
    }

    /// Whether failed `cell` is a failure its eval's gate allowed: counted
    /// (not quarantined or excluded), failing only its own checks (not
    /// unplayable, its snapshot unchanged), in an eval whose gate allows
    /// failures ([`GateOptions::allows_failures`]) and passed. Its test was
    /// ignored and JUnit skips it; when the gate failed it did not allow
    /// them, and the reports show them as the failures they are.
    pub fn allowed_failure(&self, cell: &CellRecord) -> bool {
        !(cell.passed || cell.quarantined || cell.excluded || cell.fails_the_run())
            && (self.gate_options).allows_failures(self.config.min_pass_rate)
            && self.gate.as_ref().is_some_and(|g| g.passed)
    }

    /// What fails the run whatever the pass rate: cells missing from a run
    /// that is not finished, cells that could not be played back, changed
    /// snapshots; each as a phrase for the gate's line.
    fn run_failures(&self) -> Vec<String> {
        let count = |f: fn(&CellRecord) -> bool| self.results.iter().filter(|c| f(c)).count();
        let mut reasons: Vec<String> = self.partial().into_iter().collect();
        for (n, what) in [
            (count(|c| c.unplayable), "could not be played back"),
            (
                count(|c| c.snapshot_changed && !c.unplayable),
                "changed their session snapshot",
            ),
        ] {
            if n > 0 {
                reasons.push(format!("{n} cell(s) {what}"));
            }
        }
        reasons
    }

    /// Per variant × case over its trials, in the order the cases come in
    /// `results`: pass@k, pass^k, interval, flaky (see [`trial_stats`]).
    /// Computed from the cells as the iterator goes, none kept.
    pub fn trial_stats(&self) -> TrialStats<'_> {
        trial_stats(
            &self.results,
            &self.gate_options.pass_at_k,
            self.gate_options.confidence,
        )
    }

    /// The cells left out of the statistics because their run errored
    /// ([`OnError::Exclude`](super::OnError::Exclude)), as one line naming
    /// each with its error; `None` when there are none.
    pub fn excluded_line(&self) -> Option<String> {
        let trials = self.config.trials;
        let cells: Vec<String> = (self.results.iter())
            .filter(|c| c.excluded)
            .map(|c| format!("{} ({})", c.label(trials), c.error.as_deref().unwrap_or("")))
            .collect();
        let plural = if cells.len() == 1 { "" } else { "s" };
        (!cells.is_empty()).then(|| {
            format!(
                "Excluded: {} errored cell{plural} left out of the statistics and the gate: {}",
                cells.len(),
                cells.join(", ")
            )
        })
    }

    /// The variant × case cells whose trials disagree.
    pub fn flaky(&self) -> impl Iterator<Item = CaseTrials> + '_ {
        self.trial_stats().notable(false)
    }

    /// The variant × case cells that are flaky or quarantined: what the
    /// reports list, and the trials [`Gate::notes`] quotes.
    pub fn notable_trials(&self) -> Vec<CaseTrials> {
        self.trial_stats().notable(true).collect()
    }

    /// The document as written, its trial statistics those of `cells`:
    /// `self.results`, or the cells the JSON report took out of them to
    /// stream them into the document.
    pub(crate) fn document<'a>(&'a self, cells: &'a [CellRecord]) -> Document<'a> {
        // Every field, named: one added to `EvalResults` must be written too.
        let EvalResults {
            schema_version,
            eval,
            timestamp,
            config,
            complete,
            cell_counts,
            results,
            summary,
            comparison,
            gate_options,
            gate,
        } = self;
        Document {
            schema_version: *schema_version,
            eval,
            timestamp,
            config,
            complete: *complete,
            cell_counts: cell_counts.as_ref(),
            results,
            summary,
            comparison: comparison.as_ref(),
            gate_options,
            trial_stats: TrialStatsOf {
                cells,
                options: gate_options,
            },
            gate: gate.as_ref(),
        }
    }

    /// Every borderline judgement: the cell's label and what was borderline.
    pub fn borderline(&self) -> Vec<(String, String)> {
        let trials = self.config.trials;
        self.results
            .iter()
            .flat_map(|c| {
                c.borderline_judgements()
                    .into_iter()
                    .map(move |b| (c.label(trials), b))
            })
            .collect()
    }

    /// Pretty JSON, the file format.
    pub fn to_json(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Parse a document.
    pub fn from_json(text: &str) -> Result<EvalResults, ResultsError> {
        parse(text, Path::new("<json>"))
    }

    /// Read a document from a file.
    pub fn load(path: impl AsRef<Path>) -> Result<EvalResults, ResultsError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ResultsError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        parse(&text, path)
    }
}

/// The cells the merge of `parts` planned, `None` when every part is a
/// whole run: the parts' common count when each has one and they agree
/// (the shards of one run), else the sum of what each planned (runs over
/// disjoint cells; a part unfinished without counts planned one more cell
/// than it holds).
fn planned_by(parts: &[EvalResults]) -> Option<usize> {
    if parts.iter().all(|p| p.complete) {
        return None;
    }
    let counts: Vec<usize> = parts
        .iter()
        .filter_map(|p| p.cell_counts.map(|c| c.planned))
        .collect();
    if counts.len() == parts.len() && counts.windows(2).all(|w| w[0] == w[1]) {
        return counts.first().copied();
    }
    let planned = |p: &EvalResults| match (p.cell_counts, p.complete) {
        (Some(c), _) => c.planned,
        (None, true) => p.results.len(),
        (None, false) => p.results.len() + 1,
    };
    Some(parts.iter().map(planned).sum())
}

/// How many distinct cases (dataset and case id) `cells` ran.
pub(crate) fn distinct_inputs(cells: &[CellRecord]) -> usize {
    let mut cases: Vec<(&str, &str)> = cells
        .iter()
        .map(|c| (c.dataset.as_str(), c.case.as_str()))
        .collect();
    cases.sort_unstable();
    cases.dedup();
    cases.len()
}

fn parse(text: &str, path: &Path) -> Result<EvalResults, ResultsError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Version {
        schema_version: Option<u32>,
    }
    let err = |source| ResultsError::Parse {
        path: path.to_path_buf(),
        source,
    };
    let version: Version = serde_json::from_str(text).map_err(err)?;
    let found = version.schema_version.unwrap_or(0);
    if found > SCHEMA_VERSION {
        return Err(ResultsError::NewerSchema {
            path: path.to_path_buf(),
            found,
        });
    }
    let mut results: EvalResults = serde_json::from_str(text).map_err(err)?;
    results.derive();
    Ok(results)
}

/// The cells the statistics count: all but the excluded ones (copied only
/// when there are some).
fn counted_cells(cells: &[CellRecord]) -> std::borrow::Cow<'_, [CellRecord]> {
    if cells.iter().any(|c| c.excluded) {
        std::borrow::Cow::Owned(cells.iter().filter(|c| !c.excluded).cloned().collect())
    } else {
        std::borrow::Cow::Borrowed(cells)
    }
}

/// A score that is not a finite number fails with value 0 (JSON has no NaN,
/// and statistics over it mean nothing).
fn sanitize(cell: &mut CellRecord) {
    for s in cell.scores.values_mut() {
        if !s.value.is_finite() {
            let why = format!("the scorer returned {}, not a finite number", s.value);
            s.detail = Some(match s.detail.take() {
                Some(d) => format!("{why}; {d}"),
                None => why,
            });
            s.value = 0.0;
            s.pass = false;
            cell.passed = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_score_result() -> CellResult {
        let id = CellId {
            eval: "qa".into(),
            variant: "v".into(),
            case: "c".into(),
            trial: None,
        };
        let mut result = CellResult::failed(id, "boom".into());
        result
            .scores
            .push(Score::new("quality", false, 0.25).detail("vague"));
        result
    }

    /// A cell's scores take one slot per scorer, not a `BTreeMap` node with
    /// room for eleven: as the harness builds the record, in its summary and
    /// when read back from JSON.
    #[test]
    fn a_cell_with_one_score_holds_room_for_one() {
        let record = CellRecord::from(&one_score_result());
        assert_eq!((record.scores.len(), record.scores.capacity()), (1, 1));
        assert_eq!(record.scores["quality"].detail.as_deref(), Some("vague"));

        // Built by hand with spare room; the summary drops it.
        let mut by_hand = CellRecord::new("v", "c");
        by_hand.scores = SmallMap::with_capacity(8);
        by_hand
            .scores
            .insert("quality".into(), record.scores["quality"].clone());
        assert!(by_hand.scores.capacity() > 1);
        let summary = by_hand.clone().into_summary();
        assert_eq!(summary.scores.capacity(), 1);
        assert_eq!(summary.scores, by_hand.scores);

        let json = serde_json::to_string(&record).unwrap();
        let back: CellRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back, record);
        assert_eq!(back.scores.capacity(), 1);
    }

    /// The scores serialize as the `BTreeMap` they were: keyed by name, in
    /// name order, whatever order the scorers ran in.
    #[test]
    fn scores_serialize_as_the_btreemap_did() {
        let mut result = one_score_result();
        result.scores.insert(0, Score::new("latency", true, 812.0));
        result.scores.push(Score::new("correct", true, 1.0));
        let record = CellRecord::from(&result);
        let as_btree: BTreeMap<&String, &ScoreRecord> = record.scores.iter().collect();
        assert_eq!(
            serde_json::to_string(&record.scores).unwrap(),
            serde_json::to_string(&as_btree).unwrap()
        );
        assert_eq!(
            record.scores.keys().collect::<Vec<_>>(),
            ["correct", "latency", "quality"]
        );
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn a_summary_drops_the_details_and_with_details_restores_them() {
        use crate::eval::CellRecord;
        let mut cell = CellRecord::new("v", "c");
        cell.input = serde_json::json!({"question": "why?"});
        cell.output = Some(serde_json::json!("x".repeat(10_000)));
        cell.session_id = "0199a3e0-5f2b-7c41-9d3e-8a1b2c3d4e5f".into();
        let summary = cell.clone().into_summary();
        assert!(summary.input.is_null() && summary.output.is_none());
        assert!(summary.session_id.is_empty());
        assert_eq!(summary.with_details(cell.clone()), cell);
    }

    #[test]
    fn results_summarize_each_variant_and_round_trip_through_json() {
        use crate::eval::{CellRecord, EvalResults};
        let mut cell = CellRecord::new("baseline", "case-1");
        cell.passed = true;
        let results = EvalResults::for_tests("qa", 1, vec![cell]);
        assert_eq!(results.summary["baseline"].pass_rate, 1.0);
        assert!(results.comparison.is_none());
        let back = EvalResults::from_json(&results.to_json()).unwrap();
        assert_eq!(back, results);
    }

    #[test]
    fn a_quarantined_flaky_case_no_longer_fails_the_gate() {
        use crate::eval::{CellRecord, EvalResults, GateOptions};
        let cells = (0..4)
            .map(|t| {
                let mut c = CellRecord::new("v", "flaky-case");
                c.trial = t;
                c.passed = t % 2 == 0;
                c
            })
            .collect();
        let results = EvalResults::for_tests("qa", 4, cells);
        assert!(results.trial_stats().next().unwrap().flaky);
        assert!(!results.gate_passed());
        let options = GateOptions {
            quarantine: vec!["flaky-case".into()],
            ..GateOptions::default()
        };
        let results = results.with_gate_options(options);
        assert!(results.gate_passed());
        assert_eq!(results.gate.unwrap().quarantined, ["v::flaky-case"]);
    }

    #[test]
    fn results_missing_planned_cells_are_partial_and_say_how_many() {
        use crate::eval::{CellRecord, EvalResults};
        let r = EvalResults::for_tests("qa", 1, vec![CellRecord::new("v", "a")]);
        let r = r.with_planned_cells(4);
        assert!(!r.complete);
        assert_eq!(
            r.partial().as_deref(),
            Some("run not finished: 3 of 4 planned cells missing (1 recorded)")
        );
        assert!(r.with_planned_cells(1).complete);
    }

    #[test]
    fn merged_parts_add_up_their_cases_and_a_cell_twice_is_refused() {
        use crate::eval::results::MergeError;
        use crate::eval::{CellRecord, EvalResults};
        let part = |case: &str| {
            let mut cell = CellRecord::new("v", case);
            cell.passed = true;
            EvalResults::for_tests("qa", 1, vec![cell])
        };
        let whole = EvalResults::merge(vec![part("a"), part("b")]).unwrap();
        assert_eq!((whole.cell_count(), whole.config.inputs), (2, 2));
        let twice = EvalResults::merge(vec![part("a"), part("a")]).unwrap_err();
        assert_eq!(
            twice,
            MergeError::DuplicateCell {
                cell: "qa::v::a".into()
            }
        );
    }

    #[test]
    fn a_model_without_a_price_warns_that_its_cost_is_unknown() {
        use crate::eval::{CellRecord, EvalResults, RunConfig};
        let mut cell = CellRecord::new("proxy-alias", "c1");
        cell.metrics.unpriced_calls = 2;
        let config = RunConfig {
            min_pass_rate: 0.0,
            ..RunConfig::for_tests(1, 1, &["proxy-alias"])
        };
        let r = EvalResults::new("qa", "2026-01-28T12:00:00Z", config, vec![cell]);
        assert!(r.cost_warning().unwrap().starts_with(
    "warning: no price for a model of variant `proxy-alias` (1 of 1 cells): its cost is unknown"));
    }

    #[test]
    fn the_trial_stats_of_a_case_count_its_trials_passes_and_flakiness() {
        use crate::eval::{CellRecord, EvalResults};
        let cells = (0..3)
            .map(|t| {
                let mut c = CellRecord::new("v", "c");
                c.trial = t;
                c.passed = t > 0;
                c
            })
            .collect();
        let results = EvalResults::for_tests("qa", 3, cells);
        assert_eq!(results.trial_stats().len(), 1);
        let c = results.trial_stats().next().unwrap();
        assert_eq!((c.trials, c.passes, c.flaky), (3, 2, true));
    }

    #[test]
    fn an_errored_cell_is_left_out_of_the_statistics_and_the_gate_and_named() {
        use crate::eval::{CellRecord, EvalResults};
        let mut errored = CellRecord::new("v", "b");
        (errored.excluded, errored.error) = (true, Some("HTTP 500".into()));
        let mut ok = CellRecord::new("v", "a");
        ok.passed = true;
        let results = EvalResults::for_tests("qa", 1, vec![ok, errored]);
        assert_eq!(results.summary["v"].cells, 1);
        assert!(results.gate_passed());
        assert_eq!(
            results.excluded_line().unwrap(),
            "Excluded: 1 errored cell left out of the statistics and the gate: v::b (HTTP 500)"
        );
    }
}
