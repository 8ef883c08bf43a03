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
    Alternative, DEFAULT_CONFIDENCE, Interval, Power, SignFlip, TTest, Wilcoxon, WilcoxonMethod,
    WilcoxonOptions, cases_for_effect, clustered_pass_interval, clustered_standard_error, mean,
    mean_interval, min_cases_for, min_detectable_effect, paired_t_test, pass_at_k, pass_hat_k,
    percentile, sample_stddev, sign_flip_test, wilcoxon_signed_rank, wilson_interval,
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
    /// Over every cell (of the priced calls).
    pub total: f64,
    /// Mean per cell.
    pub per_case: f64,
    /// Cells with a provider call whose model has no price: with any, the
    /// variant's cost is unknown (never shown as a figure, never ranked).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unpriced_cells: usize,
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
    /// Mean latency per cell in ms (= `latency.mean`).
    pub avg_latency: f64,
    /// Mean cost per cell in USD (= `cost.perCase`).
    pub avg_cost: f64,
    /// Latency statistics.
    pub latency: LatencyStats,
    /// Cost totals.
    pub cost: CostStats,
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
    /// Whether the variant's cost is known: every provider call it made
    /// was priced (see [`CostStats::unpriced_cells`]).
    pub fn cost_known(&self) -> bool {
        self.cost.unpriced_cells == 0
    }

    /// The mean cost per cell, when known.
    pub fn known_cost(&self) -> Option<f64> {
        self.cost_known().then_some(self.avg_cost)
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
    let latencies: Vec<f64> = cells.iter().map(|c| c.metrics.latency_ms as f64).collect();
    let latency = LatencyStats::of(&latencies);
    let total_cost: f64 = cells.iter().map(|c| c.metrics.cost_usd).sum();
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
        avg_cost: per(total_cost),
        latency,
        cost: CostStats {
            total: total_cost,
            per_case: per(total_cost),
            unpriced_cells: cells
                .iter()
                .filter(|c| c.metrics.unpriced_calls > 0)
                .count(),
        },
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
