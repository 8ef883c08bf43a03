//! Confidence intervals of pass rates and mean scores, and the unbiased
//! pass@k and pass^k estimators.
//!
//! Definitions, so numbers can be checked elsewhere:
//!
//! * **Wilson score interval** of `c` successes in `n` trials at confidence
//!   `1 − α` (`scipy.stats.binomtest(c, n).proportion_ci(method="wilson")`):
//!   with `p = c/n` and `z` the `1 − α/2` quantile of the standard normal,
//!   `(p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n)`. It stays inside
//!   0..1 and is sensible at 0/n and n/n, where the normal (Wald) interval
//!   collapses to a point. With no trials it is `[0, 1]`.
//! * **pass@k** — the chance that at least one of `k` trials drawn without
//!   replacement from the `n` run passes: `1 − C(n−c, k) / C(n, k)` (the
//!   unbiased estimator of Chen et al., 2021). **pass^k** — the chance that
//!   all `k` pass: `C(c, k) / C(n, k)`. Both only for `1 ≤ k ≤ n`.
//! * **mean interval** — Student's t interval of a mean,
//!   `x̄ ± t(1 − α/2, m − 1) · s / √m` with the sample standard deviation
//!   `s`; absent with fewer than two values.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use super::{mean, sample_stddev};

/// The confidence level used unless one is asked for (95%).
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// A confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interval {
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
    /// The confidence level, e.g. 0.95.
    pub confidence: f64,
}

impl Interval {
    /// Whether `x` lies inside (bounds included).
    pub fn contains(&self, x: f64) -> bool {
        self.lower <= x && x <= self.upper
    }
}

/// `z` such that `P(|Z| ≤ z) = confidence` for a standard normal `Z`.
fn z_two_sided(confidence: f64) -> f64 {
    let c = confidence.clamp(1e-9, 1.0 - 1e-12);
    // Normal::standard() cannot fail.
    Normal::standard().inverse_cdf(1.0 - (1.0 - c) / 2.0)
}

/// The Wilson score interval of `successes` out of `trials`.
pub fn wilson_interval(successes: usize, trials: usize, confidence: f64) -> Interval {
    let p = if trials == 0 {
        0.0
    } else {
        successes.min(trials) as f64 / trials as f64
    };
    wilson_interval_of(p, trials as f64, confidence)
}

/// The Wilson interval of the proportion `p` over a (possibly effective,
/// so fractional) sample size `n`; `[0, 1]` for `n ≤ 0` or a confidence
/// that is no probability.
pub(crate) fn wilson_interval_of(p: f64, n: f64, confidence: f64) -> Interval {
    let mut interval = Interval {
        lower: 0.0,
        upper: 1.0,
        confidence,
    };
    // No cells, or a confidence that is no probability (see
    // `GateOptions::check`): the interval that claims nothing, no panic.
    if !(n > 0.0 && confidence > 0.0 && confidence < 1.0 && (0.0..=1.0).contains(&p)) {
        return interval;
    }
    let z = z_two_sided(confidence);
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    if p > 0.0 {
        interval.lower = (center - half).clamp(0.0, 1.0);
    }
    if p < 1.0 {
        interval.upper = (center + half).clamp(0.0, 1.0);
    }
    interval
}

/// `C(a, k) / C(n, k)` as a product, without overflow (0 when `a < k`).
fn choose_ratio(a: usize, n: usize, k: usize) -> f64 {
    if a < k {
        return 0.0;
    }
    (0..k).map(|i| (a - i) as f64 / (n - i) as f64).product()
}

/// pass@k: the chance that at least one of `k` of the `n` trials (drawn
/// without replacement) passes, given `c` passed; `None` unless `1 ≤ k ≤ n`.
pub fn pass_at_k(n: usize, c: usize, k: usize) -> Option<f64> {
    if k == 0 || k > n {
        return None;
    }
    Some(1.0 - choose_ratio(n - c.min(n), n, k))
}

/// pass^k: the chance that all of `k` of the `n` trials (drawn without
/// replacement) pass, given `c` passed; `None` unless `1 ≤ k ≤ n`.
pub fn pass_hat_k(n: usize, c: usize, k: usize) -> Option<f64> {
    if k == 0 || k > n {
        return None;
    }
    Some(choose_ratio(c.min(n), n, k))
}

/// Student's t interval of the mean of `values`; `None` with fewer than two.
pub fn mean_interval(values: &[f64], confidence: f64) -> Option<Interval> {
    let m = values.len();
    let sd = sample_stddev(values)?;
    let x = mean(values)?;
    let c = confidence.clamp(1e-9, 1.0 - 1e-12);
    let t = StudentsT::new(0.0, 1.0, (m - 1) as f64)
        .ok()?
        .inverse_cdf(1.0 - (1.0 - c) / 2.0);
    let half = t * sd / (m as f64).sqrt();
    Some(Interval {
        lower: x - half,
        upper: x + half,
        confidence,
    })
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn the_wilson_interval_brackets_the_rate_and_a_bad_confidence_claims_nothing() {
        use crate::stats::wilson_interval;
        let i = wilson_interval(8, 10, 0.95);
        assert!((i.lower - 0.490).abs() < 5e-4 && (i.upper - 0.943).abs() < 5e-4);
        assert_eq!(wilson_interval(10, 10, 0.95).upper, 1.0);
        assert_eq!(wilson_interval(0, 0, 0.95).lower, 0.0);
        // A confidence that is no probability claims nothing, and never panics.
        for bad in [f64::NAN, 95.0, 0.0, -1.0] {
            let i = wilson_interval(5, 10, bad);
            assert_eq!((i.lower, i.upper), (0.0, 1.0));
        }
    }

    #[test]
    fn pass_at_k_is_the_chance_one_of_k_samples_passes_and_none_beyond_n() {
        use crate::stats::pass_at_k;
        assert!((pass_at_k(10, 3, 1).unwrap() - 0.3).abs() < 1e-12);
        assert!((pass_at_k(10, 3, 5).unwrap() - (1.0 - 21.0 / 252.0)).abs() < 1e-12);
        assert_eq!(pass_at_k(3, 0, 3), Some(0.0));
        assert_eq!(pass_at_k(3, 1, 4), None);
    }

    #[test]
    fn pass_hat_k_is_the_chance_all_k_samples_pass() {
        use crate::stats::pass_hat_k;
        assert!((pass_hat_k(10, 3, 2).unwrap() - 3.0 / 45.0).abs() < 1e-12);
        assert_eq!(pass_hat_k(3, 3, 3), Some(1.0));
        assert_eq!(pass_hat_k(3, 2, 3), Some(0.0));
    }

    #[test]
    fn the_mean_interval_is_a_t_interval_and_needs_two_values() {
        use crate::stats::mean_interval;
        let i = mean_interval(&[0.6, 0.7, 0.8], 0.95).unwrap();
        assert!((i.lower - 0.451586).abs() < 1e-6 && (i.upper - 0.948414).abs() < 1e-6);
        assert!(mean_interval(&[0.5], 0.95).is_none());
    }
}
