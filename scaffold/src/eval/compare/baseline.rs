//! A candidate run against a baseline run (seed 003's `Comparison`).
//!
//! Cells are matched by variant, dataset, case and trial. For each matched
//! cell:
//!
//! * pass → fail is a **regression** (`pass_to_fail`, critical unless
//!   [`CompareOptions::critical_on_pass_to_fail`] is off); fail → pass an
//!   **improvement**;
//! * a metric that moved past its threshold is a `metric_degraded`
//!   regression (a warning) or a `metric_improved` improvement: latency and
//!   cost by a relative change (default 10%) *and* an absolute floor (50 ms,
//!   $0.0001) so noise on tiny numbers is ignored; each scorer's value by an
//!   absolute change (default 0.1). Latency and cost are compared only where
//!   both sides know them: a cell that could not be played back or errored
//!   has neither ([`CellRecord::unmeasured`]), a call with no price makes
//!   its cost unknown;
//! * otherwise the cell is **unchanged**.
//!
//! Cells only in the candidate are **new**, only in the baseline **removed**.
//!
//! **Verdict**: `worse` when a cell went critically from pass to fail or
//! the pass rate fell by the threshold (default 5 points), whatever else
//! improved; otherwise `better` when the pass rate rose by the threshold or
//! something improved and nothing regressed, `worse` when something
//! regressed and nothing improved, `mixed` when both happened, else
//! `equivalent`. Critical regressions come first in
//! [`Comparison::regressions`]. **Blocking**:
//! any critical regression, or a pass-rate drop of the threshold or more
//! (unless [`CompareOptions::block_on_pass_rate_drop`] is off), or — only
//! with [`CompareOptions::block_on_metric_regressions`] — any metric
//! regression.
//!
//! **Quarantine**: cells quarantined in the candidate (see
//! [`gate`](crate::eval::gate)) never block. Their pass → fail regressions
//! are reported as warnings marked `quarantined`, and the pass-rate drop
//! that blocks is computed without them (on both sides).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::eval::results::{AssertionRecord, CellRecord, EvalResults};

/// Thresholds of [`compare`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompareOptions {
    /// Pass-rate change (0..=1) that counts as better or worse (default 0.05).
    pub pass_rate_threshold: f64,
    /// Relative latency change that counts (default 0.10 = 10%).
    pub latency_threshold: f64,
    /// Relative cost change that counts (default 0.10 = 10%).
    pub cost_threshold: f64,
    /// Absolute change of a scorer's value that counts (default 0.1).
    pub score_threshold: f64,
    /// Latency changes smaller than this many ms never count (default 50).
    pub min_latency_delta_ms: f64,
    /// Cost changes smaller than this many USD never count (default 0.0001).
    pub min_cost_delta_usd: f64,
    /// Pass → fail regressions are critical (default true).
    pub critical_on_pass_to_fail: bool,
    /// Block when the pass rate drops by the threshold or more (default true).
    pub block_on_pass_rate_drop: bool,
    /// Block on metric regressions too (default false: they warn).
    pub block_on_metric_regressions: bool,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            pass_rate_threshold: 0.05,
            latency_threshold: 0.10,
            cost_threshold: 0.10,
            score_threshold: 0.1,
            min_latency_delta_ms: 50.0,
            min_cost_delta_usd: 0.0001,
            critical_on_pass_to_fail: true,
            block_on_pass_rate_drop: true,
            block_on_metric_regressions: false,
        }
    }
}

/// One side of a changed cell.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Side {
    /// Whether the cell passed.
    pub passed: bool,
    /// The metric's value, for metric changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
}

/// What regressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RegressionKind {
    /// Passed in the baseline, fails in the candidate.
    PassToFail,
    /// A metric got worse past its threshold.
    MetricDegraded,
}

/// How bad a regression is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Reported, does not block (unless asked to).
    Warning,
    /// Blocks.
    Critical,
}

/// A cell that got worse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Regression {
    /// The cell: `{variant}::{case}` (plus `::t{n}` with several trials).
    pub case_id: String,
    /// What regressed.
    #[serde(rename = "type")]
    pub kind: RegressionKind,
    /// For metric regressions: `latency`, `cost` or `score:{name}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// In words.
    pub description: String,
    /// The baseline's side.
    pub baseline: Side,
    /// The candidate's side.
    pub candidate: Side,
    /// `candidate - baseline` of the metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<f64>,
    /// Whether it blocks.
    pub severity: Severity,
    /// For pass → fail: the candidate's failed assertions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_assertions: Vec<AssertionRecord>,
    /// The cell is quarantined in the candidate: reported, never blocks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quarantined: bool,
}

/// What improved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImprovementKind {
    /// Failed in the baseline, passes in the candidate.
    FailToPass,
    /// A metric got better past its threshold.
    MetricImproved,
}

/// A cell that got better.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Improvement {
    /// The cell.
    pub case_id: String,
    /// What improved.
    #[serde(rename = "type")]
    pub kind: ImprovementKind,
    /// For metric improvements: `latency`, `cost` or `score:{name}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
    /// In words.
    pub description: String,
    /// The baseline's side.
    pub baseline: Side,
    /// The candidate's side.
    pub candidate: Side,
    /// `candidate - baseline` of the metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<f64>,
}

/// The overall verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Better, nothing worse.
    Better,
    /// Worse, nothing better.
    Worse,
    /// No change past the thresholds.
    Equivalent,
    /// Better in some ways, worse in others.
    Mixed,
}

impl Verdict {
    /// `better`, `worse`, `equivalent` or `mixed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Equivalent => "equivalent",
            Verdict::Mixed => "mixed",
        }
    }
}

/// Totals of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComparisonSummary {
    /// Candidate minus baseline pass rate (positive = better).
    pub pass_rate_delta: f64,
    /// Candidate minus baseline latency per cell, ms, over the cells both
    /// runs have and measured (negative = better; 0 when either side's is
    /// unknown: [`ComparedRun::known_latency`]).
    pub avg_latency_delta_ms: f64,
    /// The same relative to the baseline (0.1 = 10% slower; 0 when the baseline's is 0).
    pub avg_latency_delta_pct: f64,
    /// Candidate minus baseline cost per cell, USD, over the cells both runs
    /// have and know the cost of (negative = better; 0 when either side's
    /// is unknown: [`ComparedRun::known_cost`]).
    pub cost_delta: f64,
    /// The same relative to the baseline.
    pub cost_delta_pct: f64,
    /// The verdict.
    pub verdict: Verdict,
    /// Whether to block the change.
    pub should_block: bool,
    /// Why it blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_reason: Option<String>,
}

/// What identifies and sums up one side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComparedRun {
    /// The eval.
    pub eval: String,
    /// When it ran.
    pub timestamp: String,
    /// Cells.
    pub cells: usize,
    /// Pass rate.
    pub pass_rate: f64,
    /// Mean latency per cell of known latency, ms (0 and unknown without
    /// one: see [`ComparedRun::known_latency`]).
    pub avg_latency_ms: f64,
    /// Mean cost per cell of known cost, USD (0 and unknown without one:
    /// see [`ComparedRun::known_cost`]).
    pub avg_cost_usd: f64,
    /// Cells of unknown latency and cost (they could not be played back or
    /// errored), left out of both means.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unmeasured_cells: usize,
    /// Measured cells that called a model with no price: with any, the
    /// run's cost is unknown.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_cells: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl ComparedRun {
    fn of(r: &EvalResults) -> Self {
        let n = r.counted().count();
        let measured: Vec<&CellRecord> = r.counted().filter(|c| c.unmeasured().is_none()).collect();
        let avg = |f: fn(&CellRecord) -> f64| match measured.len() {
            0 => 0.0,
            m => measured.iter().map(|c| f(c)).sum::<f64>() / m as f64,
        };
        ComparedRun {
            eval: r.eval.clone(),
            timestamp: r.timestamp.clone(),
            cells: n,
            pass_rate: r.pass_rate(),
            avg_latency_ms: avg(|c| c.metrics.latency_ms as f64),
            avg_cost_usd: avg(|c| c.metrics.cost_usd),
            unmeasured_cells: n - measured.len(),
            unpriced_cells: (measured.iter())
                .filter(|c| c.metrics.unpriced_calls > 0)
                .count(),
        }
    }

    /// The mean latency per cell, when some cell's is known.
    pub fn known_latency(&self) -> Option<f64> {
        (self.unmeasured_cells < self.cells).then_some(self.avg_latency_ms)
    }

    /// The mean cost per cell, when some cell's is known and every call of
    /// the measured cells was priced.
    pub fn known_cost(&self) -> Option<f64> {
        self.known_latency()
            .filter(|_| self.unpriced_cells == 0)
            .map(|_| self.avg_cost_usd)
    }
}

/// Baseline against candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// The baseline run.
    pub baseline: ComparedRun,
    /// The candidate run.
    pub candidate: ComparedRun,
    /// Cells that got worse (a cell may regress on several metrics).
    pub regressions: Vec<Regression>,
    /// Cells that got better.
    pub improvements: Vec<Improvement>,
    /// Cells in both runs with no change past the thresholds.
    pub unchanged: Vec<String>,
    /// Cells only in the candidate.
    pub new_cases: Vec<String>,
    /// Cells only in the baseline.
    pub removed_cases: Vec<String>,
    /// Totals, verdict, blocking.
    pub summary: ComparisonSummary,
}

impl Comparison {
    /// The critical regressions.
    pub fn critical(&self) -> impl Iterator<Item = &Regression> {
        self.regressions
            .iter()
            .filter(|r| r.severity == Severity::Critical)
    }
}

type Key = (String, String, String, u32);

/// The cells of `results` by key, but for those `excluded`.
fn counted<'a>(
    results: &'a [CellRecord],
    excluded: &BTreeSet<Key>,
) -> BTreeMap<Key, &'a CellRecord> {
    results
        .iter()
        .map(|c| (key(c), c))
        .filter(|(k, _)| !excluded.contains(k))
        .collect()
}

fn key(c: &CellRecord) -> Key {
    (
        c.variant.clone(),
        c.dataset.clone(),
        c.case.clone(),
        c.trial,
    )
}

/// A metric change: `Some(true)` worse, `Some(false)` better, `None` within thresholds.
fn moved(base: f64, cand: f64, rel: f64, floor: f64) -> Option<bool> {
    let delta = cand - base;
    if delta.abs() < floor || delta == 0.0 {
        return None;
    }
    let relative = if base == 0.0 {
        f64::INFINITY
    } else {
        delta.abs() / base.abs()
    };
    (relative >= rel).then_some(delta > 0.0)
}

fn rel_text(base: f64, cand: f64) -> String {
    if base == 0.0 {
        "from 0".into()
    } else {
        format!("{:+.0}%", (cand - base) / base * 100.0)
    }
}

/// Compare `candidate` with `baseline`.
pub fn compare(
    baseline: &EvalResults,
    candidate: &EvalResults,
    options: &CompareOptions,
) -> Comparison {
    let trials = baseline.config.trials.max(candidate.config.trials);
    // A cell excluded on either side (it errored, under `OnError::Exclude`)
    // is evidence of nothing: compared on neither.
    let excluded: BTreeSet<Key> = (baseline.results.iter())
        .chain(&candidate.results)
        .filter(|c| c.excluded)
        .map(key)
        .collect();
    let base = counted(&baseline.results, &excluded);
    let cand = counted(&candidate.results, &excluded);
    let mut changes = CellChanges::of(&base, &cand, trials, options);
    let b_run = ComparedRun::of(baseline);
    let c_run = ComparedRun::of(candidate);
    // Critical regressions first, in every report that lists them (a
    // report that cuts its list must not hide one behind metric warnings).
    changes
        .regressions
        .sort_by_key(|r| r.severity != Severity::Critical);
    let gated = GatedRates::of(&base, &cand, &b_run, &c_run);
    // A figure unknown on either side changed by nothing anyone knows; a
    // known one is compared on the cells both runs measured.
    let paired =
        |known: fn(&ComparedRun) -> Option<f64>, figure| match (known(&b_run), known(&c_run)) {
            (Some(_), Some(_)) => paired_delta(&base, &cand, figure),
            _ => (0.0, 0.0),
        };
    let deltas = [
        paired(ComparedRun::known_latency, CellRecord::known_latency),
        paired(ComparedRun::known_cost, CellRecord::known_cost),
    ];
    let summary = summarize(&b_run, &c_run, &changes, &gated, deltas, options);
    Comparison {
        baseline: b_run,
        candidate: c_run,
        regressions: changes.regressions,
        improvements: changes.improvements,
        unchanged: changes.unchanged,
        new_cases: changes.new_cases,
        removed_cases: changes.removed_cases,
        summary,
    }
}

/// The cell-by-cell outcome of a comparison.
#[derive(Default)]
struct CellChanges {
    regressions: Vec<Regression>,
    improvements: Vec<Improvement>,
    unchanged: Vec<String>,
    new_cases: Vec<String>,
    removed_cases: Vec<String>,
}

/// A cell in both runs: its label and its two sides.
struct Matched<'a> {
    label: String,
    base: &'a CellRecord,
    cand: &'a CellRecord,
}

/// A metric of a matched cell that moved past its threshold.
struct MetricMove {
    /// `latency`, `cost` or `score:{name}`.
    name: String,
    /// The metric in words.
    what: String,
    base: f64,
    cand: f64,
    worse: bool,
}

impl CellChanges {
    /// Every cell of `cand` against its match in `base`, then the cells
    /// only in `base`.
    fn of(
        base: &BTreeMap<Key, &CellRecord>,
        cand: &BTreeMap<Key, &CellRecord>,
        trials: u32,
        options: &CompareOptions,
    ) -> CellChanges {
        let mut changes = CellChanges::default();
        for (k, c) in cand {
            let label = c.label(trials);
            match base.get(k) {
                Some(b) => changes.diff(
                    Matched {
                        label,
                        base: b,
                        cand: c,
                    },
                    options,
                ),
                None => changes.new_cases.push(label),
            }
        }
        for (k, b) in base {
            if !cand.contains_key(k) {
                changes.removed_cases.push(b.label(trials));
            }
        }
        changes
    }

    /// One matched cell: its pass/fail change, then each metric's.
    fn diff(&mut self, cell: Matched<'_>, options: &CompareOptions) {
        let (regs, imps) = (self.regressions.len(), self.improvements.len());
        self.pass_change(&cell, options);
        for m in metric_moves(&cell, options) {
            self.metric_change(&cell, m);
        }
        if self.regressions.len() == regs && self.improvements.len() == imps {
            self.unchanged.push(cell.label);
        }
    }

    /// Pass → fail is a regression, fail → pass an improvement.
    fn pass_change(&mut self, cell: &Matched<'_>, options: &CompareOptions) {
        let (b, c) = (cell.base, cell.cand);
        match (b.passed, c.passed) {
            (true, false) => self.regressions.push(Regression {
                case_id: cell.label.clone(),
                kind: RegressionKind::PassToFail,
                metric: None,
                description: format!(
                    "passed in the baseline, fails now{}: {}",
                    if c.quarantined {
                        " (QUARANTINED: does not block)"
                    } else {
                        ""
                    },
                    c.failures().join("; ")
                ),
                baseline: side(b, None),
                candidate: side(c, None),
                delta: None,
                severity: if options.critical_on_pass_to_fail && !c.quarantined {
                    Severity::Critical
                } else {
                    Severity::Warning
                },
                failed_assertions: c.assertions.iter().filter(|a| !a.passed).cloned().collect(),
                quarantined: c.quarantined,
            }),
            (false, true) => self.improvements.push(Improvement {
                case_id: cell.label.clone(),
                kind: ImprovementKind::FailToPass,
                metric: None,
                description: "failed in the baseline, passes now".into(),
                baseline: side(b, None),
                candidate: side(c, None),
                delta: None,
            }),
            _ => {}
        }
    }

    /// A metric that got worse is a (warning) regression, better an improvement.
    fn metric_change(&mut self, cell: &Matched<'_>, m: MetricMove) {
        let description = format!(
            "{} {} from {} to {} ({})",
            m.what,
            if m.worse { "worsened" } else { "improved" },
            num(m.base),
            num(m.cand),
            rel_text(m.base, m.cand)
        );
        let (baseline, candidate) = (side(cell.base, Some(m.base)), side(cell.cand, Some(m.cand)));
        if m.worse {
            self.regressions.push(Regression {
                case_id: cell.label.clone(),
                kind: RegressionKind::MetricDegraded,
                metric: Some(m.name),
                description,
                baseline,
                candidate,
                delta: Some(m.cand - m.base),
                severity: Severity::Warning,
                failed_assertions: Vec::new(),
                quarantined: cell.cand.quarantined,
            });
        } else {
            self.improvements.push(Improvement {
                case_id: cell.label.clone(),
                kind: ImprovementKind::MetricImproved,
                metric: Some(m.name),
                description,
                baseline,
                candidate,
                delta: Some(m.cand - m.base),
            });
        }
    }
}

fn side(cell: &CellRecord, value: Option<f64>) -> Side {
    Side {
        passed: cell.passed,
        value,
    }
}

/// The metrics of `cell` that moved past their thresholds: latency, cost
/// (each only when both sides know it), then each scorer both sides ran.
fn metric_moves(cell: &Matched<'_>, options: &CompareOptions) -> Vec<MetricMove> {
    let (b, c) = (cell.base, cell.cand);
    let mut moves = Vec::new();
    let mut push = |name: String, what: String, base: f64, cand: f64, change: Option<bool>| {
        if let Some(worse) = change {
            moves.push(MetricMove {
                name,
                what,
                base,
                cand,
                worse,
            });
        }
    };
    // A cell that could not be played back or errored has no latency or
    // cost of its own, one with an unpriced call no known cost: nothing to
    // compare.
    if let (Some(bl), Some(cl)) = (b.known_latency(), c.known_latency()) {
        let latency = moved(
            bl,
            cl,
            options.latency_threshold,
            options.min_latency_delta_ms,
        );
        push("latency".into(), "latency (ms)".into(), bl, cl, latency);
    }
    if let (Some(bc), Some(cc)) = (b.known_cost(), c.known_cost()) {
        let cost = moved(bc, cc, options.cost_threshold, options.min_cost_delta_usd);
        push("cost".into(), "cost (USD)".into(), bc, cc, cost);
    }
    for (name, cs) in &cell.cand.scores {
        let Some(bs) = cell.base.scores.get(name) else {
            continue;
        };
        let delta = cs.value - bs.value;
        // A score going down is worse.
        let change =
            (delta.abs() >= options.score_threshold && delta != 0.0).then_some(delta < 0.0);
        push(
            format!("score:{name}"),
            format!("score `{name}`"),
            bs.value,
            cs.value,
            change,
        );
    }
    moves
}

/// The pass rates the blocking drop is measured on: the candidate's
/// quarantined cells left out, on both sides.
struct GatedRates {
    base: f64,
    cand: f64,
    /// Some cells were left out.
    quarantined: bool,
}

impl GatedRates {
    fn of(
        base: &BTreeMap<Key, &CellRecord>,
        cand: &BTreeMap<Key, &CellRecord>,
        b_run: &ComparedRun,
        c_run: &ComparedRun,
    ) -> GatedRates {
        let quarantined: Vec<&Key> = cand
            .iter()
            .filter(|(_, c)| c.quarantined)
            .map(|(k, _)| k)
            .collect();
        if quarantined.is_empty() {
            return GatedRates {
                base: b_run.pass_rate,
                cand: c_run.pass_rate,
                quarantined: false,
            };
        }
        let rate = |cells: &BTreeMap<Key, &CellRecord>| {
            let kept: Vec<bool> = cells
                .iter()
                .filter(|(k, _)| !quarantined.contains(k))
                .map(|(_, c)| c.passed)
                .collect();
            let passed = kept.iter().filter(|p| **p).count();
            if kept.is_empty() {
                0.0
            } else {
                passed as f64 / kept.len() as f64
            }
        };
        GatedRates {
            base: rate(base),
            cand: rate(cand),
            quarantined: true,
        }
    }
}

/// Totals, verdict and blocking of the sorted `changes`.
fn summarize(
    b_run: &ComparedRun,
    c_run: &ComparedRun,
    changes: &CellChanges,
    gated: &GatedRates,
    [latency, cost]: [(f64, f64); 2],
    options: &CompareOptions,
) -> ComparisonSummary {
    let pass_rate_delta = c_run.pass_rate - b_run.pass_rate;
    let critical: Vec<&str> = changes
        .regressions
        .iter()
        .filter(|r| r.severity == Severity::Critical)
        .map(|r| r.case_id.as_str())
        .collect();
    let reasons = block_reasons(&changes.regressions, &critical, gated, options);
    ComparisonSummary {
        pass_rate_delta,
        avg_latency_delta_ms: latency.0,
        avg_latency_delta_pct: latency.1,
        cost_delta: cost.0,
        cost_delta_pct: cost.1,
        verdict: verdict(pass_rate_delta, changes, !critical.is_empty(), options),
        should_block: !reasons.is_empty(),
        block_reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
    }
}

/// The mean change of `figure` per cell, candidate minus baseline, over the
/// cells both runs have and know it of, and the same relative to the
/// baseline's mean over them (0 when that is 0); zeros without such a cell.
/// A cell left out on one side only moves neither.
fn paired_delta(
    base: &BTreeMap<Key, &CellRecord>,
    cand: &BTreeMap<Key, &CellRecord>,
    figure: fn(&CellRecord) -> Option<f64>,
) -> (f64, f64) {
    let (mut b, mut c, mut n) = (0.0, 0.0, 0usize);
    for (k, bc) in base {
        let both = cand.get(k).and_then(|cc| Some((figure(bc)?, figure(cc)?)));
        if let Some((x, y)) = both {
            (b, c, n) = (b + x, c + y, n + 1);
        }
    }
    match n {
        0 => (0.0, 0.0),
        n => ((c - b) / n as f64, if b == 0.0 { 0.0 } else { (c - b) / b }),
    }
}

/// The verdict (see the module doc).
fn verdict(
    pass_rate_delta: f64,
    changes: &CellChanges,
    any_critical: bool,
    options: &CompareOptions,
) -> Verdict {
    let fell = pass_rate_delta <= -options.pass_rate_threshold;
    let better = pass_rate_delta >= options.pass_rate_threshold || !changes.improvements.is_empty();
    let worse = fell || !changes.regressions.is_empty();
    match (better, worse) {
        // Improvements elsewhere never outweigh a critical regression or a drop.
        _ if fell || any_critical => Verdict::Worse,
        (true, false) => Verdict::Better,
        (false, true) => Verdict::Worse,
        (true, true) => Verdict::Mixed,
        (false, false) => Verdict::Equivalent,
    }
}

/// Why the change blocks (empty: it does not).
fn block_reasons(
    regressions: &[Regression],
    critical: &[&str],
    gated: &GatedRates,
    options: &CompareOptions,
) -> Vec<String> {
    let mut reasons = Vec::new();
    if !critical.is_empty() {
        reasons.push(format!(
            "{} cell(s) went from pass to fail: {}",
            critical.len(),
            list(critical)
        ));
    }
    let gated_delta = gated.cand - gated.base;
    if options.block_on_pass_rate_drop && gated_delta <= -options.pass_rate_threshold {
        reasons.push(format!(
            "the pass rate fell by {:.1} points ({:.1}% → {:.1}%{}), past the {:.1}-point threshold",
            -gated_delta * 100.0,
            gated.base * 100.0,
            gated.cand * 100.0,
            if gated.quarantined {
                ", quarantined cells left out"
            } else {
                ""
            },
            options.pass_rate_threshold * 100.0
        ));
    }
    if options.block_on_metric_regressions {
        let metric: Vec<&str> = regressions
            .iter()
            .filter(|r| r.kind == RegressionKind::MetricDegraded && !r.quarantined)
            .map(|r| r.case_id.as_str())
            .collect();
        if !metric.is_empty() {
            reasons.push(format!(
                "{} metric regression(s): {}",
                metric.len(),
                list(&metric)
            ));
        }
    }
    reasons
}

/// Up to five items, then `and N more`.
fn list(items: &[&str]) -> String {
    if items.len() <= 5 {
        items.join(", ")
    } else {
        format!("{} and {} more", items[..5].join(", "), items.len() - 5)
    }
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn a_case_that_stops_passing_is_a_blocking_regression() {
        use crate::eval::compare::Verdict;
        use crate::eval::{CellRecord, CompareOptions, EvalResults, compare};
        let run = |passes: [bool; 2]| {
            let cells = passes
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let mut c = CellRecord::new("gpt-4o", format!("case-{i}"));
                    c.passed = *p;
                    c
                })
                .collect();
            EvalResults::for_tests("qa", 1, cells)
        };
        let c = compare(
            &run([true, true]),
            &run([true, false]),
            &CompareOptions::default(),
        );
        assert_eq!(c.regressions[0].case_id, "gpt-4o::case-1");
        assert_eq!(c.summary.verdict, Verdict::Worse);
        assert!(c.summary.should_block);
        let same = compare(
            &run([true, false]),
            &run([true, false]),
            &CompareOptions::default(),
        );
        assert!(!same.summary.should_block);
        assert_eq!(same.summary.verdict, Verdict::Equivalent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(cells: Vec<CellRecord>) -> EvalResults {
        EvalResults::for_tests("qa", 1, cells)
    }

    fn cell(case: &str, ms: u64, usd: f64) -> CellRecord {
        let mut c = CellRecord::new("v", case);
        c.passed = true;
        c.metrics.latency_ms = ms;
        c.metrics.cost_usd = usd;
        c
    }

    /// A candidate whose cells could not be played back (or errored) took
    /// 0ms and $0 only because nothing ran: no latency or cost improvement
    /// or regression is claimed of them, per cell or in the totals, and the
    /// run's figures say they are unknown (issue 36).
    #[test]
    fn unknown_figures_are_neither_better_nor_worse() {
        let base = run(vec![cell("a", 2000, 0.02), cell("b", 2000, 0.02)]);
        let mut unplayable = cell("a", 0, 0.0);
        unplayable.passed = false;
        unplayable.unplayable = true;
        unplayable.error = Some("playback: no recording `a`".into());
        let mut errored = cell("b", 9000, 0.5);
        errored.passed = false;
        errored.error = Some("HTTP 500".into());
        let cand = run(vec![unplayable, errored]);
        let cmp = compare(&base, &cand, &CompareOptions::default());
        let metric = |kind: Option<&String>| kind.is_some();
        assert!(
            !cmp.regressions.iter().any(|r| metric(r.metric.as_ref())),
            "{:?}",
            cmp.regressions
        );
        assert!(
            !cmp.improvements.iter().any(|i| metric(i.metric.as_ref())),
            "{:?}",
            cmp.improvements
        );
        assert_eq!(cmp.regressions.len(), 2, "both went from pass to fail");
        assert_eq!(
            (cmp.candidate.known_latency(), cmp.candidate.known_cost()),
            (None, None)
        );
        assert_eq!(cmp.candidate.unmeasured_cells, 2);
        assert_eq!(cmp.baseline.known_latency(), Some(2000.0));
        let s = &cmp.summary;
        assert_eq!(
            (
                s.avg_latency_delta_ms,
                s.avg_latency_delta_pct,
                s.cost_delta,
                s.cost_delta_pct
            ),
            (0.0, 0.0, 0.0, 0.0)
        );

        // A measured cell beside them is still compared; each run's mean is
        // of its measured cells, and the change of the cells both measured:
        // the cells left out move neither.
        let mut cells = cand.results.clone();
        cells.push(cell("c", 500, 0.01));
        let base = run(vec![
            cell("a", 2000, 0.02),
            cell("b", 2000, 0.02),
            cell("c", 1000, 0.02),
        ]);
        let cmp = compare(&base, &run(cells), &CompareOptions::default());
        let improved: Vec<&str> = (cmp.improvements.iter())
            .filter_map(|i| i.metric.as_deref())
            .collect();
        assert_eq!(improved, ["latency", "cost"]);
        assert_eq!(cmp.candidate.known_latency(), Some(500.0));
        assert_eq!(cmp.baseline.known_latency(), Some(5000.0 / 3.0));
        assert_eq!(
            (
                cmp.summary.avg_latency_delta_ms,
                cmp.summary.avg_latency_delta_pct
            ),
            (-500.0, -0.5)
        );
    }
}
