//! Per-variant aggregates of cell results.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::CellResult;

/// Mean and spread of one scorer's values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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
    #[serde(rename = "passRate")]
    pub pass_rate: f64,
}

impl ScoreStats {
    /// Statistics of `values` with `passes` of them passing.
    pub fn of(values: &[f64], passes: usize) -> ScoreStats {
        let n = values.len();
        if n == 0 {
            return ScoreStats {
                mean: 0.0,
                stddev: 0.0,
                min: 0.0,
                max: 0.0,
                pass_rate: 0.0,
            };
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        ScoreStats {
            mean,
            stddev,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            pass_rate: passes as f64 / n as f64,
        }
    }
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
    /// Mean latency per cell in ms.
    pub avg_latency_ms: f64,
    /// Mean cost per cell in USD.
    pub avg_cost_usd: f64,
    /// Total cost in USD.
    pub total_cost_usd: f64,
    /// Total tokens.
    pub total_tokens: u64,
    /// Per scorer.
    pub scores: BTreeMap<String, ScoreStats>,
}

/// Summaries per variant, in the order the variants first appear in `cells`.
pub fn summarize(cells: &[CellResult]) -> Vec<VariantSummary> {
    let mut order: Vec<&str> = Vec::new();
    for c in cells {
        if !order.contains(&c.id.variant.as_str()) {
            order.push(&c.id.variant);
        }
    }
    order
        .into_iter()
        .map(|variant| {
            let mine: Vec<&CellResult> = cells.iter().filter(|c| c.id.variant == variant).collect();
            let n = mine.len();
            let passed = mine.iter().filter(|c| c.passed).count();
            let total_cost: f64 = mine.iter().map(|c| c.metrics.cost_usd).sum();
            let mut by_scorer: BTreeMap<String, (Vec<f64>, usize)> = BTreeMap::new();
            for c in &mine {
                for s in &c.scores {
                    let e = by_scorer.entry(s.name.clone()).or_default();
                    e.0.push(s.value);
                    e.1 += usize::from(s.pass);
                }
            }
            VariantSummary {
                variant: variant.to_string(),
                cells: n,
                passed,
                pass_rate: if n == 0 {
                    0.0
                } else {
                    passed as f64 / n as f64
                },
                avg_latency_ms: if n == 0 {
                    0.0
                } else {
                    mine.iter()
                        .map(|c| c.metrics.latency_ms as f64)
                        .sum::<f64>()
                        / n as f64
                },
                avg_cost_usd: if n == 0 { 0.0 } else { total_cost / n as f64 },
                total_cost_usd: total_cost,
                total_tokens: mine.iter().map(|c| c.metrics.total_tokens).sum(),
                scores: by_scorer
                    .into_iter()
                    .map(|(k, (values, passes))| (k, ScoreStats::of(&values, passes)))
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::ScoreStats;

    #[test]
    fn sample_stddev() {
        let s = ScoreStats::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], 8);
        assert_eq!(s.mean, 5.0);
        assert!((s.stddev - 2.138089935299395).abs() < 1e-12);
        assert_eq!((s.min, s.max, s.pass_rate), (2.0, 9.0, 1.0));
        assert_eq!(ScoreStats::of(&[3.0], 0).stddev, 0.0);
    }
}
