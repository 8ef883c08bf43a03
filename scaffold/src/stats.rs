//! Pure statistics over numbers, for every layer that summarizes values:
//! means, sample standard deviations and percentiles here; confidence
//! intervals and pass@k in [`interval`], paired significance tests in
//! [`significance`], power in [`power`], clustered standard errors in
//! [`cluster`]. The summaries of eval results over these are
//! [`eval::stats`](crate::eval::stats)'s.
//!
//! * **mean** — arithmetic mean; **stddev** — *sample* standard deviation
//!   (divisor `n - 1`, numpy's `std(ddof=1)`), 0 with fewer than two values.
//! * **percentile** `q` — linear interpolation between closest ranks,
//!   numpy's default (`method="linear"`): with the values sorted `x[0..n]`,
//!   `h = (n - 1) q / 100`, the result is `x[⌊h⌋] + (h - ⌊h⌋) (x[⌊h⌋+1] - x[⌊h⌋])`.

pub mod cluster;
pub mod interval;
pub mod power;
pub mod significance;

pub use cluster::{clustered_pass_interval, clustered_standard_error};
pub use interval::{
    DEFAULT_CONFIDENCE, Interval, mean_interval, pass_at_k, pass_hat_k, wilson_interval,
};
pub use power::{Power, PowerMethod, cases_for_effect, min_cases_for, min_detectable_effect};
pub use significance::{
    Alternative, SignFlip, SignFlipMethod, TTest, Wilcoxon, WilcoxonMethod, WilcoxonOptions,
    paired_t_test, sign_flip_test, wilcoxon_signed_rank,
};

/// The arithmetic mean; `None` for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        None
    } else {
        Some(values.iter().sum::<f64>() / values.len() as f64)
    }
}

/// The sample standard deviation (divisor `n - 1`); `None` with fewer than two values.
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
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() || !(0.0..=100.0).contains(&q) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(percentile_sorted(&sorted, q))
}

/// [`percentile`] of values already sorted ascending (not empty).
pub(crate) fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q / 100.0;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn the_mean_is_the_average_and_of_nothing_none() {
        assert_eq!(crate::stats::mean(&[1.0, 2.0, 6.0]), Some(3.0));
        assert_eq!(crate::stats::mean(&[]), None);
    }

    #[test]
    fn the_sample_stddev_divides_by_n_minus_one_and_needs_two_values() {
        let s = crate::stats::sample_stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert!((s - 2.138089935299395).abs() < 1e-12);
        assert_eq!(crate::stats::sample_stddev(&[3.0]), None);
    }

    #[test]
    fn percentiles_interpolate_between_ranks_and_one_value_is_every_percentile() {
        use crate::stats::percentile;
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert_eq!(percentile(&v, 95.0), Some(3.85));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
    }
}
