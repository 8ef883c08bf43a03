//! Statistics of eval results: per variant and scorer (mean, sample standard
//! deviation, min, max, pass rate), latency percentiles, cost and token
//! totals, and the paired significance tests of [`significance`].
//!
//! Definitions, so numbers can be checked elsewhere:
//!
//! * **mean** — arithmetic mean; **stddev** — *sample* standard deviation
//!   (divisor `n - 1`, numpy's `std(ddof=1)`), 0 with fewer than two values.
//! * **percentile** `q` — linear interpolation between closest ranks,
//!   numpy's default (`method="linear"`): with the values sorted `x[0..n]`,
//!   `h = (n - 1) q / 100`, the result is `x[⌊h⌋] + (h - ⌊h⌋) (x[⌊h⌋+1] - x[⌊h⌋])`.
//! * **per case** — totals divided by the number of cells (a cell is one
//!   case run once: variant × case × trial).
//! * **unmeasured cells** — a cell that could not be played back, or whose
//!   run errored, has no latency or cost of its own ([`Unmeasured`]): the
//!   latency and cost statistics leave it out and count it
//!   ([`VariantSummary::unmeasured`]); with no cell left, a variant's latency
//!   and cost are unknown, never 0.
//! * **pass rate interval** — the Wilson score interval; see [`trials`] for
//!   it, pass@k, pass^k and flakiness across trials. With several trials
//!   per case it is taken at the effective sample size of the cells
//!   clustered by case ([`cluster`]): trials of a case are not independent.
//! * **standard error** of a scorer's mean — clustered by case ([`cluster`]).
//! * **power** — the minimum detectable effect of a comparison and the
//!   cases a target difference needs ([`power`]).

pub mod trials;

use crate::stats::percentile_sorted;
pub use crate::stats::{
    Alternative, DEFAULT_CONFIDENCE, Interval, Power, PowerMethod, SignFlip, SignFlipMethod, TTest,
    Wilcoxon, WilcoxonMethod, WilcoxonOptions, cases_for_effect, clustered_pass_interval,
    clustered_standard_error, mean, mean_interval, min_cases_for, min_detectable_effect,
    paired_t_test, pass_at_k, pass_hat_k, percentile, sample_stddev, sign_flip_test,
    wilcoxon_signed_rank, wilson_interval,
};
pub use trials::{CaseTrials, TrialStats, trial_stats};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::results::CellRecord;

fn min_of(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max_of(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// Mean and spread of one scorer's values over a variant's cells.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoreStats {
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (0 with fewer than two values).
    pub stddev: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Share of cells this scorer passed.
    pub pass_rate: f64,
    /// How many cells it scored.
    #[serde(default)]
    pub count: usize,
    /// The standard error of `mean`, clustered by case (trials of a case
    /// are not independent; see [`cluster`]); absent with fewer than two cases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standard_error: Option<f64>,
}

impl ScoreStats {
    /// Statistics of `values` with `passes` of them passing (all zeros for no values).
    pub fn of(values: &[f64], passes: usize) -> ScoreStats {
        let n = values.len();
        if n == 0 {
            return ScoreStats {
                mean: 0.0,
                stddev: 0.0,
                min: 0.0,
                max: 0.0,
                pass_rate: 0.0,
                count: 0,
                standard_error: None,
            };
        }
        ScoreStats {
            mean: mean(values).unwrap_or(0.0),
            stddev: sample_stddev(values).unwrap_or(0.0),
            min: min_of(values),
            max: max_of(values),
            pass_rate: passes as f64 / n as f64,
            count: n,
            standard_error: None,
        }
    }
}

/// Latency of a variant's cells, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LatencyStats {
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation.
    pub stddev: f64,
    /// Fastest.
    pub min: f64,
    /// Slowest.
    pub max: f64,
    /// Median (linear interpolation).
    pub p50: f64,
    /// 95th percentile (linear interpolation).
    pub p95: f64,
    /// 99th percentile (linear interpolation).
    pub p99: f64,
}

impl LatencyStats {
    /// Statistics of `ms` (all zeros for none).
    pub fn of(ms: &[f64]) -> LatencyStats {
        if ms.is_empty() {
            return LatencyStats::default();
        }
        let mut sorted = ms.to_vec();
        sorted.sort_by(f64::total_cmp);
        LatencyStats {
            mean: mean(ms).unwrap_or(0.0),
            stddev: sample_stddev(ms).unwrap_or(0.0),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            p50: percentile_sorted(&sorted, 50.0),
            p95: percentile_sorted(&sorted, 95.0),
            p99: percentile_sorted(&sorted, 99.0),
        }
    }
}

/// Cost of a variant's cells, in USD.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostStats {
    /// Over every measured cell (of the priced calls).
    pub total: f64,
    /// Mean per measured cell.
    pub per_case: f64,
    /// Measured cells with a provider call whose model has no price: with
    /// any, the variant's cost is unknown (never shown as a figure, never
    /// ranked).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_cells: usize,
}

/// Why a cell has no latency or cost of its own: what was measured is not
/// what the cell would take. (Its metrics keep what its calls spent.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmeasured {
    /// Its calls could not be played back: a recording is missing, or the
    /// request differs from it.
    Unplayable,
    /// Its run returned an error.
    Errored,
}

impl Unmeasured {
    /// Why, in words: `could not be played back` or `errored`.
    pub fn reason(self) -> &'static str {
        match self {
            Unmeasured::Unplayable => "could not be played back",
            Unmeasured::Errored => "errored",
        }
    }
}

impl CellRecord {
    /// Why the cell's latency and cost are unknown (`None`: they are its
    /// metrics'): it could not be played back, or its run errored (a record
    /// written before cells said they were unplayable reads as errored).
    pub fn unmeasured(&self) -> Option<Unmeasured> {
        if self.unplayable {
            Some(Unmeasured::Unplayable)
        } else if self.error.is_some() {
            Some(Unmeasured::Errored)
        } else {
            None
        }
    }

    /// The cell's latency in ms, when known ([`CellRecord::unmeasured`]).
    pub fn known_latency(&self) -> Option<f64> {
        self.unmeasured()
            .is_none()
            .then_some(self.metrics.latency_ms as f64)
    }

    /// The cell's cost in USD, when known: measured, and every call priced.
    pub fn known_cost(&self) -> Option<f64> {
        (self.unmeasured().is_none() && self.metrics.unpriced_calls == 0)
            .then_some(self.metrics.cost_usd)
    }
}

/// A variant's cells of unknown latency and cost ([`Unmeasured`]), by why:
/// left out of its latency and cost statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnmeasuredCells {
    /// Cells that could not be played back.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unplayable: usize,
    /// Cells whose run errored.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub errored: usize,
}

impl UnmeasuredCells {
    /// How many cells, for any reason.
    pub fn total(&self) -> usize {
        self.unplayable + self.errored
    }

    /// Whether there are none.
    pub fn is_none(&self) -> bool {
        self.total() == 0
    }

    fn add(&mut self, why: Unmeasured) {
        match why {
            Unmeasured::Unplayable => self.unplayable += 1,
            Unmeasured::Errored => self.errored += 1,
        }
    }

    /// Why, in words, of `cells` cells: `6 of 6 cells could not be played
    /// back`, `1 of 4 cells errored`, `3 of 6 cells: 2 could not be played
    /// back, 1 errored`; `None` when there are none.
    pub fn describe(&self, cells: usize) -> Option<String> {
        let of = |n: usize| format!("{n} of {cells} cell{}", if cells == 1 { "" } else { "s" });
        let (unplayable, errored) = (
            Unmeasured::Unplayable.reason(),
            Unmeasured::Errored.reason(),
        );
        match (self.unplayable, self.errored) {
            (0, 0) => None,
            (u, 0) => Some(format!("{} {unplayable}", of(u))),
            (0, e) => Some(format!("{} {errored}", of(e))),
            (u, e) => Some(format!("{}: {u} {unplayable}, {e} {errored}", of(u + e))),
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Tokens of a variant's cells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenStats {
    /// Input tokens over every cell.
    pub input: u64,
    /// Output tokens over every cell.
    pub output: u64,
    /// Input plus output over every cell.
    pub total: u64,
    /// Mean total per cell.
    pub per_case: f64,
}

/// What one variant did over all its cells.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VariantSummary {
    /// The variant.
    pub variant: String,
    /// Cells run.
    pub cells: usize,
    /// Cells passed.
    pub passed: usize,
    /// `passed / cells`.
    pub pass_rate: f64,
    /// Mean latency per measured cell in ms (= `latency.mean`; 0 and
    /// unknown without one: see [`VariantSummary::known_latency`]).
    pub avg_latency: f64,
    /// Mean cost per measured cell in USD (= `cost.perCase`; see
    /// [`VariantSummary::known_cost`]).
    pub avg_cost: f64,
    /// Latency statistics of the measured cells.
    pub latency: LatencyStats,
    /// Cost totals of the measured cells.
    pub cost: CostStats,
    /// The cells of unknown latency and cost, left out of `latency`, `cost`,
    /// `avg_latency` and `avg_cost` (see [`Unmeasured`]).
    #[serde(default, skip_serializing_if = "UnmeasuredCells::is_none")]
    pub unmeasured: UnmeasuredCells,
    /// Token totals.
    pub tokens: TokenStats,
    /// Per scorer, by name.
    pub scores: BTreeMap<String, ScoreStats>,
    /// The Wilson interval of `passRate` (95% unless the eval's gate
    /// options say otherwise), at the effective sample size of the cells
    /// clustered by case ([`pass_rate_interval`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_rate_interval: Option<Interval>,
}

impl VariantSummary {
    /// The cells whose latency and cost the statistics count: all but the
    /// unmeasured ones.
    pub fn measured_cells(&self) -> usize {
        self.cells.saturating_sub(self.unmeasured.total())
    }

    /// Whether the variant's latency is known: some cell of it was
    /// measured (see [`VariantSummary::unmeasured`]).
    pub fn latency_known(&self) -> bool {
        self.measured_cells() > 0
    }

    /// Whether the variant's cost is known: some cell of it was measured,
    /// and every provider call of its measured cells was priced (see
    /// [`CostStats::unpriced_cells`]).
    pub fn cost_known(&self) -> bool {
        self.latency_known() && self.cost.unpriced_cells == 0
    }

    /// The mean latency per measured cell, when known.
    pub fn known_latency(&self) -> Option<f64> {
        self.latency_known().then_some(self.avg_latency)
    }

    /// The mean cost per measured cell, when known.
    pub fn known_cost(&self) -> Option<f64> {
        self.cost_known().then_some(self.avg_cost)
    }

    /// Why the variant's cost is unknown, in words (`None` when known): no
    /// cell measured (`6 of 6 cells could not be played back`), or a model
    /// with no price.
    pub fn cost_unknown_reason(&self) -> Option<String> {
        match self.latency_unknown_reason() {
            Some(why) => Some(why),
            None if !self.cost_known() => Some(format!(
                "no price for a model it called, in {} of {} cells",
                self.cost.unpriced_cells,
                self.measured_cells()
            )),
            None => None,
        }
    }

    /// Why the variant's latency is unknown, in words (`None` when known):
    /// `6 of 6 cells could not be played back`.
    pub fn latency_unknown_reason(&self) -> Option<String> {
        if self.latency_known() {
            return None;
        }
        Some(
            self.unmeasured
                .describe(self.cells)
                .unwrap_or_else(|| "no cells".into()),
        )
    }

    /// The cells left out of a known latency and cost, in words (`None`
    /// when none was, or none is known): `1 of 6 cells errored`.
    pub fn left_out(&self) -> Option<String> {
        self.latency_known()
            .then(|| self.unmeasured.describe(self.cells))
            .flatten()
    }
}

/// Summaries per variant, in the order the variants first appear in `cells`.
pub fn summarize(cells: &[CellRecord]) -> Vec<VariantSummary> {
    let mut order: Vec<&str> = Vec::new();
    for c in cells {
        if !order.contains(&c.variant.as_str()) {
            order.push(&c.variant);
        }
    }
    order
        .into_iter()
        .map(|variant| {
            let mine: Vec<&CellRecord> = cells.iter().filter(|c| c.variant == variant).collect();
            summarize_variant(variant, &mine)
        })
        .collect()
}

fn summarize_variant(variant: &str, cells: &[&CellRecord]) -> VariantSummary {
    let n = cells.len();
    let per = |total: f64| if n == 0 { 0.0 } else { total / n as f64 };
    let passed = cells.iter().filter(|c| c.passed).count();
    // Latency and cost are of the measured cells; the others are counted.
    let mut unmeasured = UnmeasuredCells::default();
    let mut measured = Vec::with_capacity(n);
    for c in cells {
        match c.unmeasured() {
            Some(why) => unmeasured.add(why),
            None => measured.push(*c),
        }
    }
    let per_measured = |total: f64| match measured.len() {
        0 => 0.0,
        m => total / m as f64,
    };
    let latencies: Vec<f64> = (measured.iter())
        .map(|c| c.metrics.latency_ms as f64)
        .collect();
    let latency = LatencyStats::of(&latencies);
    let total_cost: f64 = measured.iter().map(|c| c.metrics.cost_usd).sum();
    let input: u64 = cells.iter().map(|c| c.metrics.input_tokens).sum();
    let output: u64 = cells.iter().map(|c| c.metrics.output_tokens).sum();
    let total: u64 = cells.iter().map(|c| c.metrics.total_tokens).sum();
    // Per scorer: its values, the cases they belong to, and its passes.
    type Scored<'c> = (Vec<f64>, Vec<(&'c str, &'c str)>, usize);
    let mut by_scorer: BTreeMap<String, Scored> = BTreeMap::new();
    for c in cells {
        for (name, s) in &c.scores {
            let e = by_scorer.entry(name.clone()).or_default();
            e.0.push(s.value);
            e.1.push((&c.dataset, &c.case));
            e.2 += usize::from(s.pass);
        }
    }
    VariantSummary {
        variant: variant.to_string(),
        cells: n,
        passed,
        pass_rate: per(passed as f64),
        avg_latency: latency.mean,
        avg_cost: per_measured(total_cost),
        latency,
        cost: CostStats {
            total: total_cost,
            per_case: per_measured(total_cost),
            unpriced_cells: (measured.iter())
                .filter(|c| c.metrics.unpriced_calls > 0)
                .count(),
        },
        unmeasured,
        tokens: TokenStats {
            input,
            output,
            total,
            per_case: per(total as f64),
        },
        scores: by_scorer
            .into_iter()
            .map(|(k, (values, cases, passes))| {
                let mut stats = ScoreStats::of(&values, passes);
                stats.standard_error = clustered_standard_error(&values, &cases);
                (k, stats)
            })
            .collect(),
        pass_rate_interval: Some(pass_rate_interval(
            cells.iter().copied(),
            DEFAULT_CONFIDENCE,
        )),
    }
}

/// The Wilson interval of the pass rate of `cells`, clustered by case: the
/// plain Wilson interval with one trial per case, and with several, the
/// interval at the effective sample size (see [`cluster`]): five agreeing
/// trials of a case are not five cases of evidence.
pub fn pass_rate_interval<'a>(
    cells: impl IntoIterator<Item = &'a CellRecord>,
    confidence: f64,
) -> Interval {
    let outcomes: Vec<((&str, &str), bool)> = cells
        .into_iter()
        .map(|c| ((c.dataset.as_str(), c.case.as_str()), c.passed))
        .collect();
    clustered_pass_interval(&outcomes, confidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_stddev_and_edges() {
        let s = ScoreStats::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], 8);
        assert_eq!(s.mean, 5.0);
        assert!((s.stddev - 2.138089935299395).abs() < 1e-12);
        assert_eq!((s.min, s.max, s.pass_rate), (2.0, 9.0, 1.0));
        assert_eq!(ScoreStats::of(&[3.0], 0).stddev, 0.0);
        assert_eq!(ScoreStats::of(&[], 0).count, 0);
    }

    /// A cell that could not be played back, or errored, has no latency or
    /// cost of its own: the variant's means leave it out and count it, and
    /// a variant with no other cell has an unknown latency and cost, never
    /// 0 (issue 36).
    #[test]
    fn unmeasured_cells_are_left_out_of_latency_and_cost_and_counted() {
        let cell = |case: &str, ms: u64, usd: f64| {
            let mut c = CellRecord::new("v", case);
            c.metrics.latency_ms = ms;
            c.metrics.cost_usd = usd;
            c
        };
        let mut unplayable = cell("a", 0, 0.0);
        (unplayable.unplayable, unplayable.error) = (true, Some("playback: no recording".into()));
        let mut errored = cell("b", 5, 0.001);
        errored.error = Some("HTTP 500".into());
        let ok = [cell("c", 1000, 0.02), cell("d", 3000, 0.04)];
        let s = &summarize(&[
            unplayable.clone(),
            errored.clone(),
            ok[0].clone(),
            ok[1].clone(),
        ])[0];
        assert_eq!((s.cells, s.measured_cells()), (4, 2));
        assert_eq!(
            s.unmeasured,
            UnmeasuredCells {
                unplayable: 1,
                errored: 1
            }
        );
        assert_eq!((s.known_latency(), s.latency.min), (Some(2000.0), 1000.0));
        assert!((s.known_cost().unwrap() - 0.03).abs() < 1e-12);
        assert!((s.cost.total - 0.06).abs() < 1e-12);
        assert_eq!(
            s.left_out().as_deref(),
            Some("2 of 4 cells: 1 could not be played back, 1 errored")
        );

        let s = &summarize(&[unplayable.clone(), unplayable])[0];
        assert_eq!((s.known_latency(), s.known_cost()), (None, None));
        assert!(!s.latency_known() && !s.cost_known());
        let why = "2 of 2 cells could not be played back";
        assert_eq!(s.latency_unknown_reason().as_deref(), Some(why));
        assert_eq!(s.cost_unknown_reason().as_deref(), Some(why));
        assert_eq!(s.left_out(), None);
        assert_eq!(
            summarize(&[errored])[0].latency_unknown_reason().as_deref(),
            Some("1 of 1 cell errored")
        );

        // Written as counts, absent when there are none.
        let json = serde_json::to_value(s).unwrap();
        assert_eq!(json["unmeasured"], serde_json::json!({"unplayable": 2}));
        let measured = serde_json::to_value(&summarize(&ok)[0]).unwrap();
        assert!(measured.get("unmeasured").is_none(), "{measured}");
    }

    #[test]
    fn percentiles_interpolate() {
        assert_eq!(percentile(&[5.0, 1.0, 3.0], 0.0), Some(1.0));
        assert_eq!(percentile(&[5.0, 1.0, 3.0], 100.0), Some(5.0));
        assert_eq!(percentile(&[5.0, 1.0, 3.0], 25.0), Some(2.0));
        assert_eq!(percentile(&[1.0], 101.0), None);
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn score_stats_give_the_mean_range_and_pass_rate() {
        let s = crate::eval::stats::ScoreStats::of(&[0.5, 1.0], 1);
        assert_eq!(
            (s.mean, s.min, s.max, s.pass_rate, s.count),
            (0.75, 0.5, 1.0, 0.5, 2)
        );
    }

    #[test]
    fn latency_percentiles_interpolate_between_samples() {
        let l = crate::eval::stats::LatencyStats::of(&[100.0, 200.0, 300.0, 400.0, 500.0]);
        assert_eq!((l.p50, l.p95, l.p99), (300.0, 480.0, 496.0));
    }

    #[test]
    fn a_variant_summary_counts_passes_and_averages_latency() {
        use crate::eval::{CellRecord, stats::summarize};
        let mut a = CellRecord::new("baseline", "case-1");
        a.passed = true;
        a.metrics.latency_ms = 100;
        let mut b = CellRecord::new("baseline", "case-2");
        b.metrics.latency_ms = 300;
        let s = &summarize(&[a, b])[0];
        assert_eq!(
            (s.cells, s.passed, s.pass_rate, s.avg_latency),
            (2, 1, 0.5, 200.0)
        );
    }

    #[test]
    fn the_pass_rate_interval_counts_cases_not_cells() {
        use crate::eval::{
            CellRecord,
            stats::{pass_rate_interval, wilson_interval},
        };
        let cells: Vec<CellRecord> = (0..10)
            .map(|i| {
                let mut c = CellRecord::new("v", if i < 5 { "a" } else { "b" });
                c.passed = i < 5;
                c
            })
            .collect();
        let clustered = pass_rate_interval(&cells, 0.95);
        assert_eq!(clustered.lower, wilson_interval(1, 2, 0.95).lower);
        assert!(clustered.lower < wilson_interval(5, 10, 0.95).lower);
    }
}
