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
//!   it, pass@k, pass^k and flakiness across trials.

pub mod significance;
pub mod trials;

pub use significance::{
    Alternative, SignFlip, SignFlipMethod, StatsError, TTest, Wilcoxon, WilcoxonMethod,
    WilcoxonOptions, paired_t_test, sign_flip_test, wilcoxon_signed_rank,
};
pub use trials::{
    CaseTrials, DEFAULT_CONFIDENCE, Interval, TrialStats, case_trials, mean_interval, pass_at_k,
    pass_hat_k, reported_ks, trial_stats, wilson_interval,
};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::results::CellRecord;

/// The arithmetic mean; `None` for no values.
///
/// ```
/// assert_eq!(scaffold::eval::stats::mean(&[1.0, 2.0, 6.0]), Some(3.0));
/// assert_eq!(scaffold::eval::stats::mean(&[]), None);
/// ```
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        None
    } else {
        Some(values.iter().sum::<f64>() / values.len() as f64)
    }
}

/// The sample standard deviation (divisor `n - 1`); `None` with fewer than two values.
///
/// ```
/// let s = scaffold::eval::stats::sample_stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
/// assert!((s - 2.138089935299395).abs() < 1e-12);
/// assert_eq!(scaffold::eval::stats::sample_stddev(&[3.0]), None);
/// ```
pub fn sample_stddev(values: &[f64]) -> Option<f64> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let m = mean(values)?;
    let ss: f64 = values.iter().map(|v| (v - m).powi(2)).sum();
    Some((ss / (n - 1) as f64).sqrt())
}

/// The `q`-th percentile (0..=100) by linear interpolation, numpy's default;
/// `None` for no values or a `q` outside 0..=100.
///
/// ```
/// use scaffold::eval::stats::percentile;
/// let v = [1.0, 2.0, 3.0, 4.0];
/// assert_eq!(percentile(&v, 50.0), Some(2.5));
/// assert_eq!(percentile(&v, 95.0), Some(3.85));
/// assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
/// ```
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() || !(0.0..=100.0).contains(&q) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(percentile_sorted(&sorted, q))
}

/// [`percentile`] of values already sorted ascending (not empty).
fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q / 100.0;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

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
}

impl ScoreStats {
    /// Statistics of `values` with `passes` of them passing (all zeros for no values).
    ///
    /// ```
    /// let s = scaffold::eval::ScoreStats::of(&[0.5, 1.0], 1);
    /// assert_eq!((s.mean, s.min, s.max, s.pass_rate, s.count), (0.75, 0.5, 1.0, 0.5, 2));
    /// ```
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
            };
        }
        ScoreStats {
            mean: mean(values).unwrap_or(0.0),
            stddev: sample_stddev(values).unwrap_or(0.0),
            min: min_of(values),
            max: max_of(values),
            pass_rate: passes as f64 / n as f64,
            count: n,
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
    ///
    /// ```
    /// let l = scaffold::eval::LatencyStats::of(&[100.0, 200.0, 300.0, 400.0, 500.0]);
    /// assert_eq!((l.p50, l.p95, l.p99), (300.0, 480.0, 496.0));
    /// ```
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
    /// Over every cell.
    pub total: f64,
    /// Mean per cell.
    pub per_case: f64,
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
    /// options say otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_rate_interval: Option<Interval>,
}

/// Summaries per variant, in the order the variants first appear in `cells`.
///
/// ```
/// use scaffold::eval::{summarize, CellRecord};
/// let mut a = CellRecord::new("baseline", "case-1");
/// a.passed = true;
/// a.metrics.latency_ms = 100;
/// let mut b = CellRecord::new("baseline", "case-2");
/// b.metrics.latency_ms = 300;
/// let s = &summarize(&[a, b])[0];
/// assert_eq!((s.cells, s.passed, s.pass_rate, s.avg_latency), (2, 1, 0.5, 200.0));
/// ```
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
    let mut by_scorer: BTreeMap<String, (Vec<f64>, usize)> = BTreeMap::new();
    for c in cells {
        for (name, s) in &c.scores {
            let e = by_scorer.entry(name.clone()).or_default();
            e.0.push(s.value);
            e.1 += usize::from(s.pass);
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
        },
        tokens: TokenStats {
            input,
            output,
            total,
            per_case: per(total as f64),
        },
        scores: by_scorer
            .into_iter()
            .map(|(k, (values, passes))| (k, ScoreStats::of(&values, passes)))
            .collect(),
        pass_rate_interval: Some(wilson_interval(passed, n, DEFAULT_CONFIDENCE)),
    }
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
