//! Cluster-robust standard errors: when a case runs several trials, its
//! cells are not independent evidence, so a mean over cells has the
//! standard error of a mean over *clusters* (cases), not over cells
//! (Evan Miller, "Adding Error Bars to Evals", 2024).
//!
//! Definitions, so numbers can be checked elsewhere:
//!
//! * **clustered standard error** of the mean of `N` values in `G`
//!   clusters, with residuals `eᵢ = xᵢ − x̄`: `√(G/(G−1) · Σ_g (Σ_{i∈g} eᵢ)²) / N`
//!   — the CR1 sandwich estimator of an intercept-only regression,
//!   statsmodels' `OLS(x, 1).fit(cov_type="cluster", cov_kwds={"groups": g})`
//!   (its default small-sample correction). With one value per cluster it
//!   is the usual `s / √N`.
//! * **design effect** — the clustered variance over the independent one
//!   (`s² / N`); **effective sample size** — `N` over the design effect,
//!   kept between `G` (trials of a case all alike) and `N` (trials
//!   independent). With no variation at all the design effect cannot be
//!   estimated and each cluster counts once (`G`): the conservative choice.

use std::collections::BTreeMap;

use super::interval::{Interval, wilson_interval_of};

/// Per cluster: the residual sums `Σ_{i∈g} (xᵢ − x̄)` and the grand mean.
fn cluster_sums<K: Ord>(values: &[f64], clusters: &[K]) -> Option<(Vec<f64>, f64)> {
    if values.is_empty() || values.len() != clusters.len() || values.iter().any(|v| !v.is_finite())
    {
        return None;
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let mut sums: BTreeMap<&K, f64> = BTreeMap::new();
    for (v, k) in values.iter().zip(clusters) {
        *sums.entry(k).or_default() += v - mean;
    }
    Some((sums.into_values().collect(), mean))
}

/// The cluster-robust (CR1) standard error of the mean of `values`, where
/// `clusters[i]` names the cluster of `values[i]`; `None` with fewer than
/// two clusters, mismatched lengths or a value that is not finite.
pub fn clustered_standard_error<K: Ord>(values: &[f64], clusters: &[K]) -> Option<f64> {
    let (sums, _) = cluster_sums(values, clusters)?;
    cr1_standard_error(&sums, values.len())
}

/// The CR1 standard error of a mean of `n` values from its clusters'
/// residual sums; `None` with fewer than two clusters.
fn cr1_standard_error(sums: &[f64], n: usize) -> Option<f64> {
    let g = sums.len() as f64;
    if sums.len() < 2 {
        return None;
    }
    let meat: f64 = sums.iter().map(|s| s * s).sum();
    Some((g / (g - 1.0) * meat).sqrt() / n as f64)
}

/// `N` over the design effect, between the number of clusters and `N`
/// (see the module docs); `None` when [`clustered_standard_error`] is.
pub fn effective_sample_size<K: Ord>(values: &[f64], clusters: &[K]) -> Option<f64> {
    let (sums, mean) = cluster_sums(values, clusters)?;
    let n = values.len() as f64;
    let g = sums.len() as f64;
    let squares: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    let clustered = cr1_standard_error(&sums, values.len())?;
    if squares <= 0.0 || n < 2.0 {
        return Some(g);
    }
    let independent = squares / (n - 1.0) / n;
    let design_effect = clustered * clustered / independent;
    Some((n / design_effect).clamp(g, n))
}

/// The Wilson interval of a pass rate over cells clustered by case: the
/// interval of `passes / cells` at the [`effective_sample_size`] (each
/// case counts once when the outcomes do not vary, or with one cluster).
pub fn clustered_pass_interval<K: Ord>(cells: &[(K, bool)], confidence: f64) -> Interval {
    let n = cells.len();
    let passes = cells.iter().filter(|(_, p)| *p).count();
    let values: Vec<f64> = cells.iter().map(|(_, p)| f64::from(u8::from(*p))).collect();
    let keys: Vec<&K> = cells.iter().map(|(k, _)| k).collect();
    let effective = effective_sample_size(&values, &keys).unwrap_or(if n == 0 { 0.0 } else { 1.0 });
    if n == 0 {
        return wilson_interval_of(0.0, 0.0, confidence);
    }
    wilson_interval_of(passes as f64 / n as f64, effective, confidence)
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn the_clustered_standard_error_counts_agreeing_trials_of_a_case_once() {
        use crate::stats::clustered_standard_error;
        // One value per cluster: the usual s/√n.
        let se = clustered_standard_error(&[1.0, 0.0, 1.0, 1.0], &[1, 2, 3, 4]).unwrap();
        assert!((se - 0.25).abs() < 1e-12);
        // Two cases whose five trials agree: the evidence of two values, not ten.
        let x = [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let case = [1, 1, 1, 1, 1, 2, 2, 2, 2, 2];
        assert!((clustered_standard_error(&x, &case).unwrap() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn the_effective_sample_size_counts_agreeing_trials_as_one() {
        use crate::stats::cluster::effective_sample_size;
        // Trials of a case that always agree count as one.
        let x = [1.0, 1.0, 0.0, 0.0, 1.0, 1.0];
        assert_eq!(effective_sample_size(&x, &[1, 1, 2, 2, 3, 3]), Some(3.0));
        // Independent-looking trials count fully.
        let x = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0];
        assert_eq!(effective_sample_size(&x, &[1, 1, 2, 2, 3, 3]), Some(6.0));
    }

    #[test]
    fn a_clustered_pass_interval_is_as_wide_as_the_cases_not_the_trials() {
        use crate::stats::{clustered_pass_interval, wilson_interval};
        // One trial per case: the plain Wilson interval.
        let one = [("a", true), ("b", true), ("c", false), ("d", true)];
        assert_eq!(
            clustered_pass_interval(&one, 0.95),
            wilson_interval(3, 4, 0.95)
        );
        // Two cases × five agreeing trials: as wide as two cells, not ten.
        let ten: Vec<_> = (0..10).map(|i| (i < 5, i < 5)).collect();
        let i = clustered_pass_interval(&ten, 0.95);
        assert_eq!((i.lower, i.upper), {
            let w = wilson_interval(1, 2, 0.95);
            (w.lower, w.upper)
        });
    }
}
