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
//!   absolute change (default 0.1);
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

use std::collections::BTreeMap;

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
    /// Candidate minus baseline mean latency per cell, ms (negative = better).
    pub avg_latency_delta_ms: f64,
    /// The same relative to the baseline (0.1 = 10% slower; 0 when the baseline's is 0).
    pub avg_latency_delta_pct: f64,
    /// Candidate minus baseline mean cost per cell, USD (negative = better).
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
    /// Mean latency per cell, ms.
    pub avg_latency_ms: f64,
    /// Mean cost per cell, USD.
    pub avg_cost_usd: f64,
}

impl ComparedRun {
    fn of(r: &EvalResults) -> Self {
        let n = r.counted().count();
        let avg = |f: fn(&CellRecord) -> f64| {
            if n == 0 {
                0.0
            } else {
                r.counted().map(f).sum::<f64>() / n as f64
            }
        };
        ComparedRun {
            eval: r.eval.clone(),
            timestamp: r.timestamp.clone(),
            cells: n,
            pass_rate: r.pass_rate(),
            avg_latency_ms: avg(|c| c.metrics.latency_ms as f64),
            avg_cost_usd: avg(|c| c.metrics.cost_usd),
        }
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
    excluded: &std::collections::BTreeSet<Key>,
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
///
/// ```
/// use scaffold::eval::{compare, CellRecord, CompareOptions, EvalResults, RunConfig, Verdict};
/// let run = |passes: [bool; 2]| {
///     let cells = passes.iter().enumerate().map(|(i, p)| {
///         let mut c = CellRecord::new("gpt-4o", format!("case-{i}"));
///         c.passed = *p;
///         c
///     }).collect();
///     let config = RunConfig { trials: 1, inputs: 2, variants: vec!["gpt-4o".into()], scorers: vec![], min_pass_rate: 1.0 };
///     EvalResults::new("qa", "2026-01-28T12:00:00Z", config, cells)
/// };
/// let c = compare(&run([true, true]), &run([true, false]), &CompareOptions::default());
/// assert_eq!(c.regressions[0].case_id, "gpt-4o::case-1");
/// assert_eq!(c.summary.verdict, Verdict::Worse);
/// assert!(c.summary.should_block);
/// let same = compare(&run([true, false]), &run([true, false]), &CompareOptions::default());
/// assert!(!same.summary.should_block);
/// assert_eq!(same.summary.verdict, Verdict::Equivalent);
/// ```
pub fn compare(
    baseline: &EvalResults,
    candidate: &EvalResults,
    options: &CompareOptions,
) -> Comparison {
    let trials = baseline.config.trials.max(candidate.config.trials);
    // A cell excluded on either side (it errored, under `OnError::Exclude`)
    // is evidence of nothing: compared on neither.
    let excluded: std::collections::BTreeSet<Key> = (baseline.results.iter())
        .chain(&candidate.results)
        .filter(|c| c.excluded)
        .map(key)
        .collect();
    let base = counted(&baseline.results, &excluded);
    let cand = counted(&candidate.results, &excluded);
    let mut regressions = Vec::new();
    let mut improvements = Vec::new();
    let mut unchanged = Vec::new();
    let mut new_cases = Vec::new();
    let mut removed_cases = Vec::new();

    for (k, c) in &cand {
        let label = c.label(trials);
        let Some(b) = base.get(k) else {
            new_cases.push(label);
            continue;
        };
        let (regs, imps) = (regressions.len(), improvements.len());
        let side = |cell: &CellRecord, value: Option<f64>| Side {
            passed: cell.passed,
            value,
        };
        match (b.passed, c.passed) {
            (true, false) => regressions.push(Regression {
                case_id: label.clone(),
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
            (false, true) => improvements.push(Improvement {
                case_id: label.clone(),
                kind: ImprovementKind::FailToPass,
                metric: None,
                description: "failed in the baseline, passes now".into(),
                baseline: side(b, None),
                candidate: side(c, None),
                delta: None,
            }),
            _ => {}
        }
        let mut metric = |name: String, what: &str, bv: f64, cv: f64, change: Option<bool>| {
            let Some(worse) = change else { return };
            let description = format!(
                "{what} {} from {} to {} ({})",
                if worse { "worsened" } else { "improved" },
                num(bv),
                num(cv),
                rel_text(bv, cv)
            );
            if worse {
                regressions.push(Regression {
                    case_id: label.clone(),
                    kind: RegressionKind::MetricDegraded,
                    metric: Some(name),
                    description,
                    baseline: side(b, Some(bv)),
                    candidate: side(c, Some(cv)),
                    delta: Some(cv - bv),
                    severity: Severity::Warning,
                    failed_assertions: Vec::new(),
                    quarantined: c.quarantined,
                });
            } else {
                improvements.push(Improvement {
                    case_id: label.clone(),
                    kind: ImprovementKind::MetricImproved,
                    metric: Some(name),
                    description,
                    baseline: side(b, Some(bv)),
                    candidate: side(c, Some(cv)),
                    delta: Some(cv - bv),
                });
            }
        };
        let (bl, cl) = (b.metrics.latency_ms as f64, c.metrics.latency_ms as f64);
        metric(
            "latency".into(),
            "latency (ms)",
            bl,
            cl,
            moved(
                bl,
                cl,
                options.latency_threshold,
                options.min_latency_delta_ms,
            ),
        );
        // A cell with an unpriced call has no known cost: nothing to compare.
        let (bc, cc) = (b.metrics.cost_usd, c.metrics.cost_usd);
        if b.metrics.unpriced_calls == 0 && c.metrics.unpriced_calls == 0 {
            metric(
                "cost".into(),
                "cost (USD)",
                bc,
                cc,
                moved(bc, cc, options.cost_threshold, options.min_cost_delta_usd),
            );
        }
        for (name, cs) in &c.scores {
            let Some(bs) = b.scores.get(name) else {
                continue;
            };
            let delta = cs.value - bs.value;
            // A score going down is worse.
            let change =
                (delta.abs() >= options.score_threshold && delta != 0.0).then_some(delta < 0.0);
            metric(
                format!("score:{name}"),
                &format!("score `{name}`"),
                bs.value,
                cs.value,
                change,
            );
        }
        if regressions.len() == regs && improvements.len() == imps {
            unchanged.push(label);
        }
    }
    for (k, b) in &base {
        if !cand.contains_key(k) {
            removed_cases.push(b.label(trials));
        }
    }

    let b_run = ComparedRun::of(baseline);
    let c_run = ComparedRun::of(candidate);
    let pass_rate_delta = c_run.pass_rate - b_run.pass_rate;
    let relative = |b: f64, c: f64| if b == 0.0 { 0.0 } else { (c - b) / b };
    // Critical regressions first, in every report that lists them (a
    // report that cuts its list must not hide one behind metric warnings).
    regressions.sort_by_key(|r| r.severity != Severity::Critical);
    let critical: Vec<&str> = regressions
        .iter()
        .filter(|r| r.severity == Severity::Critical)
        .map(|r| r.case_id.as_str())
        .collect();
    let fell = pass_rate_delta <= -options.pass_rate_threshold;
    let better = pass_rate_delta >= options.pass_rate_threshold || !improvements.is_empty();
    let worse = fell || !regressions.is_empty();
    let verdict = match (better, worse) {
        // Improvements elsewhere never outweigh a critical regression or a drop.
        _ if fell || !critical.is_empty() => Verdict::Worse,
        (true, false) => Verdict::Better,
        (false, true) => Verdict::Worse,
        (true, true) => Verdict::Mixed,
        (false, false) => Verdict::Equivalent,
    };
    let mut reasons = Vec::new();
    if !critical.is_empty() {
        reasons.push(format!(
            "{} cell(s) went from pass to fail: {}",
            critical.len(),
            list(&critical)
        ));
    }
    // The drop that blocks leaves out the candidate's quarantined cells, on both sides.
    let quarantined: Vec<&Key> = cand
        .iter()
        .filter(|(_, c)| c.quarantined)
        .map(|(k, _)| k)
        .collect();
    let (gated_base, gated_cand) = if quarantined.is_empty() {
        (b_run.pass_rate, c_run.pass_rate)
    } else {
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
        (rate(&base), rate(&cand))
    };
    let gated_delta = gated_cand - gated_base;
    if options.block_on_pass_rate_drop && gated_delta <= -options.pass_rate_threshold {
        reasons.push(format!(
            "the pass rate fell by {:.1} points ({:.1}% → {:.1}%{}), past the {:.1}-point threshold",
            -gated_delta * 100.0,
            gated_base * 100.0,
            gated_cand * 100.0,
            if quarantined.is_empty() {
                ""
            } else {
                ", quarantined cells left out"
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
    let summary = ComparisonSummary {
        pass_rate_delta,
        avg_latency_delta_ms: c_run.avg_latency_ms - b_run.avg_latency_ms,
        avg_latency_delta_pct: relative(b_run.avg_latency_ms, c_run.avg_latency_ms),
        cost_delta: c_run.avg_cost_usd - b_run.avg_cost_usd,
        cost_delta_pct: relative(b_run.avg_cost_usd, c_run.avg_cost_usd),
        verdict,
        should_block: !reasons.is_empty(),
        block_reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
    };
    Comparison {
        baseline: b_run,
        candidate: c_run,
        regressions,
        improvements,
        unchanged,
        new_cases,
        removed_cases,
        summary,
    }
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
