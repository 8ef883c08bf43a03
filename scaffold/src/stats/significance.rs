//! Paired significance tests: the paired t-test and the Wilcoxon
//! signed-rank test, matching SciPy's `ttest_rel` and `wilcoxon`.
//!
//! Both take two equally long samples `a` and `b`, paired by position (the
//! same case and trial under two variants), and test the differences
//! `d = a - b`. `Alternative::Greater` asks whether `a` tends to be larger.
//!
//! **Paired t-test** (`scipy.stats.ttest_rel(a, b, alternative=…)`):
//! `t = mean(d) / (sd(d) / √n)` with the sample standard deviation, `n - 1`
//! degrees of freedom, p-value from Student's t (statrs). When every
//! difference is the same the spread is 0: equal samples give `t = 0` and
//! `p = 1` (SciPy gives NaN), a constant non-zero shift gives `t = ±∞` and
//! `p = 0` (as SciPy, for the side the shift is on).
//!
//! **Wilcoxon signed-rank** (`scipy.stats.wilcoxon(a, b,
//! zero_method="wilcox", correction=True, alternative=…, method=…)`):
//!
//! * zero differences are dropped before ranking (Wilcoxon's original
//!   method, SciPy's `zero_method="wilcox"`); `n` counts the rest;
//! * absolute differences are ranked with average ranks for ties;
//!   `W+`/`W-` are the rank sums of positive/negative differences; the
//!   reported statistic is `min(W+, W-)` for two-sided tests and `W+` otherwise;
//! * **exact** p-values (the distribution of `W+` over all 2ⁿ sign
//!   assignments) when `n ≤ 50` and there are no ties and no zeros, as
//!   SciPy (≥ 1.9) does
//!   ([`WilcoxonOptions::exact_max_n`]); two-sided `p = min(1, 2 min(P(W+ ≤
//!   w), P(W+ ≥ w)))`;
//! * with ties or zeros and at most 13 pairs (zeros included), every sign
//!   assignment of the differences enumerated with their average ranks, the
//!   **permutation** test SciPy 1.17's default (`method="auto"`) runs there
//!   ([`WilcoxonOptions::permutation_max_n`]): exact with ties;
//! * otherwise the **normal approximation**: mean `n(n+1)/4`, variance
//!   `n(n+1)(2n+1)/24 - Σ(t³ - t)/48` over tie groups of size `t`, and a
//!   continuity correction of ½ towards the mean (`correction=True`);
//! * with no non-zero difference at all there is no evidence of a
//!   difference: statistic 0, `p = 1`.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

/// Which difference a test looks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Alternative {
    /// `a` and `b` differ (either way).
    #[default]
    TwoSided,
    /// `a` tends to be smaller than `b`.
    Less,
    /// `a` tends to be larger than `b`.
    Greater,
}

/// Why a test could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// The samples are not paired one to one.
    #[error("paired samples must have the same length ({a} and {b} values)")]
    LengthMismatch {
        /// Length of `a`.
        a: usize,
        /// Length of `b`.
        b: usize,
    },
    /// Too few pairs for the test.
    #[error("the test needs at least {needed} pairs, it got {got}")]
    TooFewPairs {
        /// Pairs needed.
        needed: usize,
        /// Pairs given.
        got: usize,
    },
    /// A value is NaN or infinite.
    #[error("value {index} of the samples is not a finite number")]
    NotFinite {
        /// Position of the pair.
        index: usize,
    },
}

/// The outcome of [`paired_t_test`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TTest {
    /// The t statistic (±∞ when every difference is the same non-zero
    /// value; in JSON the strings `Infinity` and `-Infinity`).
    #[serde(with = "json_float")]
    pub statistic: f64,
    /// Degrees of freedom, `n - 1`.
    pub df: f64,
    /// The p-value.
    pub p_value: f64,
    /// Mean of `a - b`.
    pub mean_difference: f64,
    /// Pairs.
    pub n: usize,
}

/// How a `Wilcoxon` p-value was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WilcoxonMethod {
    /// The exact null distribution of `W+`.
    Exact,
    /// Every sign assignment of the differences enumerated (SciPy's
    /// default with ties or zeros and at most 13 pairs): exact with ties.
    Permutation,
    /// The normal approximation with tie and continuity corrections.
    Normal,
}

impl WilcoxonMethod {
    /// `exact`, `permutation` or `normal`.
    pub fn as_str(self) -> &'static str {
        match self {
            WilcoxonMethod::Exact => "exact",
            WilcoxonMethod::Permutation => "permutation",
            WilcoxonMethod::Normal => "normal",
        }
    }
}

/// Options of [`wilcoxon_signed_rank`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WilcoxonOptions {
    /// The alternative hypothesis (default two-sided).
    pub alternative: Alternative,
    /// Continuity correction in the normal approximation (default true).
    pub correction: bool,
    /// Use the exact distribution up to this many non-zero differences
    /// when there are no ties and no zeros (default 50, SciPy's limit).
    pub exact_max_n: usize,
    /// With ties or zeros, enumerate every sign assignment up to this many
    /// pairs, zeros included (default 13, SciPy's: 2¹³ assignments).
    #[serde(default = "permutation_max_n")]
    pub permutation_max_n: usize,
    /// Force a method instead of choosing by the rule above. Forcing
    /// `Exact` with ties rounds `W+` conservatively as SciPy does (up for
    /// the lower tail, down for the upper).
    pub force: Option<WilcoxonMethod>,
}

impl Default for WilcoxonOptions {
    fn default() -> Self {
        WilcoxonOptions {
            alternative: Alternative::TwoSided,
            correction: true,
            exact_max_n: 50,
            permutation_max_n: permutation_max_n(),
            force: None,
        }
    }
}

fn permutation_max_n() -> usize {
    13
}

impl WilcoxonOptions {
    /// Test for `alternative`.
    pub fn alternative(mut self, alternative: Alternative) -> Self {
        self.alternative = alternative;
        self
    }
}

/// The outcome of [`wilcoxon_signed_rank`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Wilcoxon {
    /// `min(W+, W-)` for a two-sided test, `W+` otherwise (SciPy's `statistic`).
    pub statistic: f64,
    /// Rank sum of the positive differences.
    pub w_plus: f64,
    /// Rank sum of the negative differences.
    pub w_minus: f64,
    /// Non-zero differences (the pairs ranked).
    pub n: usize,
    /// Zero differences dropped.
    pub zeros: usize,
    /// Whether some absolute differences tie.
    pub ties: bool,
    /// The z statistic of the normal approximation (after the continuity
    /// correction), when that method was used.
    pub z: Option<f64>,
    /// The p-value.
    pub p_value: f64,
    /// How the p-value was computed.
    pub method: WilcoxonMethod,
}

fn differences(a: &[f64], b: &[f64]) -> Result<Vec<f64>, StatsError> {
    if a.len() != b.len() {
        return Err(StatsError::LengthMismatch {
            a: a.len(),
            b: b.len(),
        });
    }
    a.iter()
        .zip(b)
        .enumerate()
        .map(|(index, (x, y))| {
            if x.is_finite() && y.is_finite() {
                Ok(x - y)
            } else {
                Err(StatsError::NotFinite { index })
            }
        })
        .collect()
}

/// The paired t-test of `a` against `b` (SciPy's `ttest_rel`).
pub fn paired_t_test(a: &[f64], b: &[f64], alternative: Alternative) -> Result<TTest, StatsError> {
    let d = differences(a, b)?;
    let n = d.len();
    if n < 2 {
        return Err(StatsError::TooFewPairs { needed: 2, got: n });
    }
    let nf = n as f64;
    let mean = d.iter().sum::<f64>() / nf;
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (nf - 1.0);
    let df = nf - 1.0;
    let sd = var.sqrt();
    // A spread that is rounding noise next to the mean counts as none.
    let degenerate = sd == 0.0 || sd <= mean.abs() * 1e-14;
    let statistic = if degenerate {
        if mean == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(mean)
        }
    } else {
        mean / (sd / nf.sqrt())
    };
    let p_value = if degenerate && mean == 0.0 {
        1.0
    } else {
        let dist = StudentsT::new(0.0, 1.0, df)
            .map_err(|_| StatsError::TooFewPairs { needed: 2, got: n })?;
        tail_p(statistic, alternative, |x| dist.cdf(x), |x| dist.sf(x))
    };
    Ok(TTest {
        statistic,
        df,
        p_value,
        mean_difference: mean,
        n,
    })
}

/// The p-value of `stat` for `alternative` from a symmetric distribution's cdf and sf.
fn tail_p(
    stat: f64,
    alternative: Alternative,
    cdf: impl Fn(f64) -> f64,
    sf: impl Fn(f64) -> f64,
) -> f64 {
    let p = match alternative {
        Alternative::Less => cdf(stat),
        Alternative::Greater => sf(stat),
        Alternative::TwoSided => 2.0 * sf(stat.abs()),
    };
    p.clamp(0.0, 1.0)
}

/// Average ranks (1-based) of `values` and the sizes of their tie groups.
fn average_ranks(values: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut ties = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end hold ranks start+1 ..= end.
        let avg = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = avg;
        }
        ties.push(end - start);
        start = end;
    }
    (ranks, ties)
}

/// The exact null distribution of `W+` for `n` untied ranks: the number of
/// the 2ⁿ sign assignments giving each sum `0..=n(n+1)/2`.
fn signed_rank_counts(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0.0f64; max + 1];
    counts[0] = 1.0;
    for k in 1..=n {
        for s in (k..=max).rev() {
            counts[s] += counts[s - k];
        }
    }
    counts
}

/// The Wilcoxon signed-rank test of `a` against `b` (SciPy's `wilcoxon`
/// with `zero_method="wilcox"`); see the module docs for the method.
pub fn wilcoxon_signed_rank(
    a: &[f64],
    b: &[f64],
    options: &WilcoxonOptions,
) -> Result<Wilcoxon, StatsError> {
    let d = differences(a, b)?;
    if d.is_empty() {
        return Err(StatsError::TooFewPairs { needed: 1, got: 0 });
    }
    let nonzero: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
    let zeros = d.len() - nonzero.len();
    let n = nonzero.len();
    if n == 0 {
        return Ok(Wilcoxon {
            statistic: 0.0,
            w_plus: 0.0,
            w_minus: 0.0,
            n: 0,
            zeros,
            ties: false,
            z: None,
            p_value: 1.0,
            method: WilcoxonMethod::Exact,
        });
    }
    let abs: Vec<f64> = nonzero.iter().map(|x| x.abs()).collect();
    let (ranks, tie_groups) = average_ranks(&abs);
    let ties = tie_groups.iter().any(|&t| t > 1);
    // Folding from +0 (an empty f64 sum is -0).
    let w_plus = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| **x > 0.0)
        .fold(0.0, |acc, (_, r)| acc + r);
    let w_minus = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| **x < 0.0)
        .fold(0.0, |acc, (_, r)| acc + r);
    let statistic = match options.alternative {
        Alternative::TwoSided => w_plus.min(w_minus),
        _ => w_plus,
    };
    let method = options
        .force
        .unwrap_or(if !ties && zeros == 0 && n <= options.exact_max_n {
            WilcoxonMethod::Exact
        } else if d.len() <= options.permutation_max_n {
            WilcoxonMethod::Permutation
        } else {
            WilcoxonMethod::Normal
        });
    let (p_value, z) = match method {
        WilcoxonMethod::Exact => (exact_p(n, w_plus, options.alternative), None),
        WilcoxonMethod::Permutation => (permutation_p(&ranks, w_plus, options.alternative), None),
        WilcoxonMethod::Normal => {
            let nf = n as f64;
            let mean = nf * (nf + 1.0) / 4.0;
            let tie_correction: f64 = tie_groups
                .iter()
                .map(|&t| {
                    let t = t as f64;
                    t * t * t - t
                })
                .sum();
            let se = ((nf * (nf + 1.0) * (2.0 * nf + 1.0) - tie_correction / 2.0) / 24.0).sqrt();
            let mut z = (w_plus - mean) / se;
            if options.correction {
                let sign = match options.alternative {
                    Alternative::Greater => 1.0,
                    Alternative::Less => -1.0,
                    Alternative::TwoSided => sign(z),
                };
                z -= sign * 0.5 / se;
            }
            let normal = Normal::standard();
            let p = tail_p(z, options.alternative, |x| normal.cdf(x), |x| normal.sf(x));
            (p, Some(z))
        }
    };
    Ok(Wilcoxon {
        statistic,
        w_plus,
        w_minus,
        n,
        zeros,
        ties,
        z,
        p_value,
        method,
    })
}

/// -1, 0 or 1 (numpy's `sign`: 0 for 0).
fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// The p-value of `W+ = w` over every sign assignment of the differences
/// of average `ranks` (SciPy's `permutation_test` of the statistic, with
/// its tolerance of `100 ε |w|` for sums equal but for float noise).
fn permutation_p(ranks: &[f64], w: f64, alternative: Alternative) -> f64 {
    let n = ranks.len();
    let total = 1u32 << n.min(31);
    let tolerance = 100.0 * f64::EPSILON * w.abs();
    let (mut at_most, mut at_least) = (0u32, 0u32);
    for signs in 0..total {
        let sum: f64 = (0..n)
            .filter(|i| signs >> i & 1 == 1)
            .map(|i| ranks[i])
            .sum();
        at_most += u32::from(sum <= w + tolerance);
        at_least += u32::from(sum >= w - tolerance);
    }
    let (less, greater) = (
        f64::from(at_most) / f64::from(total),
        f64::from(at_least) / f64::from(total),
    );
    let p = match alternative {
        Alternative::Less => less,
        Alternative::Greater => greater,
        Alternative::TwoSided => 2.0 * less.min(greater),
    };
    p.clamp(0.0, 1.0)
}

/// The exact p-value of `W+ = w` for `n` pairs.
fn exact_p(n: usize, w: f64, alternative: Alternative) -> f64 {
    let counts = signed_rank_counts(n);
    let total = 2f64.powi(i32::try_from(n).unwrap_or(i32::MAX));
    let max = counts.len() - 1;
    // P(W+ <= k) and P(W+ >= k), summing the shorter tail.
    let cdf = |k: f64| -> f64 {
        if k < 0.0 {
            return 0.0;
        }
        let k = (k as usize).min(max);
        counts[..=k].iter().sum::<f64>() / total
    };
    let sf = |k: f64| -> f64 {
        if k > max as f64 {
            return 0.0;
        }
        let k = k.max(0.0) as usize;
        counts[k..].iter().sum::<f64>() / total
    };
    // With ties W+ may be fractional: round towards the conservative side.
    let p = match alternative {
        Alternative::Less => cdf(w.ceil()),
        Alternative::Greater => sf(w.floor()),
        Alternative::TwoSided => 2.0 * sf(w.floor()).min(cdf(w.ceil())),
    };
    p.clamp(0.0, 1.0)
}

/// JSON numbers for floats that may be infinite: finite values as numbers,
/// the others as the strings `Infinity`, `-Infinity` and `NaN` (JSON has no
/// literals for them); `null` reads as NaN.
mod json_float {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};
    use serde_json::Value;

    pub(super) fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else if v.is_nan() {
            s.serialize_str("NaN")
        } else if *v > 0.0 {
            s.serialize_str("Infinity")
        } else {
            s.serialize_str("-Infinity")
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Value::deserialize(d)? {
            Value::Number(n) => n
                .as_f64()
                .ok_or_else(|| D::Error::custom("a number out of range")),
            Value::String(s) => match s.as_str() {
                "Infinity" => Ok(f64::INFINITY),
                "-Infinity" => Ok(f64::NEG_INFINITY),
                "NaN" => Ok(f64::NAN),
                other => Err(D::Error::custom(format!(
                    "expected a number, Infinity, -Infinity or NaN, got {other:?}"
                ))),
            },
            Value::Null => Ok(f64::NAN),
            other => Err(D::Error::custom(format!("expected a number, got {other}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_sum_to_two_to_the_n() {
        for n in 0..=50 {
            let total: f64 = signed_rank_counts(n).iter().sum();
            assert_eq!(total, 2f64.powi(n as i32));
        }
        assert_eq!(
            signed_rank_counts(3),
            vec![1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0]
        );
    }

    #[test]
    fn ranks_average_ties() {
        let (r, t) = average_ranks(&[3.0, 1.0, 3.0, 2.0]);
        assert_eq!(r, vec![3.5, 1.0, 3.5, 2.0]);
        assert_eq!(t, vec![1, 1, 2]);
    }

    #[test]
    fn degenerate_inputs() {
        let t = paired_t_test(&[1.0, 2.0], &[1.0, 2.0], Alternative::TwoSided).unwrap();
        assert_eq!((t.statistic, t.p_value), (0.0, 1.0));
        let t = paired_t_test(&[2.0, 3.0], &[1.0, 2.0], Alternative::TwoSided).unwrap();
        assert_eq!((t.statistic, t.p_value), (f64::INFINITY, 0.0));
        assert!(matches!(
            paired_t_test(&[1.0], &[1.0], Alternative::TwoSided),
            Err(StatsError::TooFewPairs { .. })
        ));
        assert!(matches!(
            paired_t_test(&[1.0, 2.0], &[1.0], Alternative::TwoSided),
            Err(StatsError::LengthMismatch { .. })
        ));
        let w =
            wilcoxon_signed_rank(&[1.0, 2.0], &[1.0, 2.0], &WilcoxonOptions::default()).unwrap();
        assert_eq!((w.n, w.zeros, w.p_value), (0, 2, 1.0));
        assert!(matches!(
            wilcoxon_signed_rank(&[f64::NAN], &[1.0], &WilcoxonOptions::default()),
            Err(StatsError::NotFinite { index: 0 })
        ));
    }
}

/// Differences beyond which [`sign_flip_test`], on differences with no
/// common step, samples sign assignments instead of enumerating all 2ⁿ.
pub const SIGN_FLIP_EXACT_MAX_N: usize = 20;
/// Non-zero differences beyond which [`sign_flip_test`], on differences
/// with no common step, takes the normal approximation of its statistic
/// (sampling would cost samples × n).
pub const SIGN_FLIP_SAMPLED_MAX_N: usize = 200;
/// Random sign assignments a sampled [`sign_flip_test`] draws.
const SIGN_FLIP_SAMPLES: u64 = 100_000;
/// The confidence of a sampled p-value's upper bound, which decides.
const SAMPLED_CONFIDENCE: f64 = 0.999;
/// The largest step count per unit tried when looking for the common step
/// of the differences (`1/1000`: averages of up to 1,000 trials).
const MAX_STEPS_PER_UNIT: u32 = 1_000;
/// The most work (differences × reachable sums) an exact count may take.
const MAX_EXACT_WORK: u64 = 100_000_000;

/// The paired sign-flip permutation test: under "no difference", each
/// paired difference is as likely positive as negative, so the two-sided
/// p-value is the share of the 2ⁿ sign assignments whose sum is at least
/// as far from 0 as the observed one (zeros stay zero). It is exact at any
/// size when the differences can be counted:
///
/// * non-zero differences of one magnitude (pass/fail, ±1 and 0): the
///   exact binomial test on the signs, which is the exact McNemar test on
///   the discordant pairs (`2 · P(Bin(n, ½) ≤ min(k, n − k))`, at most 1);
/// * differences that are whole multiples of a common step (averages of
///   up to 1,000 trials, scores in hundredths): the exact distribution of
///   the sum, counted over its reachable values;
/// * up to `SIGN_FLIP_EXACT_MAX_N` other differences: every assignment
///   enumerated.
///
/// Other differences are sampled with a fixed seed (the same p every run),
/// `p = (hits + 1) / (samples + 1)`, up to `SIGN_FLIP_SAMPLED_MAX_N`: the
/// sampling error is bounded by `SignFlip::p_upper`, the 99.9% upper
/// confidence bound that decides (`SignFlip::below`), so sampling can
/// keep a winner from being called but never call one the exact test
/// would not; beyond, the sum is normal with variance `Σ d²` (its exact
/// variance under the null).
pub fn sign_flip_test(differences: &[f64]) -> SignFlip {
    let d: Vec<f64> = differences
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x != 0.0)
        .collect();
    let n = d.len();
    let exact = |p_value: f64| SignFlip {
        n,
        p_value: p_value.clamp(0.0, 1.0),
        method: SignFlipMethod::Exact,
        p_upper: None,
    };
    if n == 0 {
        return exact(1.0);
    }
    if let Some(positive) = one_magnitude(&d) {
        return exact(binomial_two_sided(n as u64, positive as u64));
    }
    if let Some(p) = on_a_grid(&d).and_then(|steps| counted_p(&steps)) {
        return exact(p);
    }
    let observed = d.iter().sum::<f64>().abs();
    // Sums equal up to float noise count as equal.
    let extreme = |sum: f64| sum.abs() >= observed - 1e-9 * observed.max(1.0);
    if n <= SIGN_FLIP_EXACT_MAX_N {
        let total = 1u64 << n;
        let hits = (0..total)
            .filter(|signs| {
                let sum: f64 = (0..n)
                    .map(|i| if signs >> i & 1 == 1 { -d[i] } else { d[i] })
                    .sum();
                extreme(sum)
            })
            .count();
        return exact(hits as f64 / total as f64);
    }
    if n > SIGN_FLIP_SAMPLED_MAX_N {
        let sd = d.iter().map(|x| x * x).sum::<f64>().sqrt();
        // Normal::standard() cannot fail.
        let tail = 1.0 - Normal::standard().cdf(observed / sd);
        return SignFlip {
            method: SignFlipMethod::Normal,
            ..exact(2.0 * tail)
        };
    }
    let hits = sampled_hits(&d, extreme);
    let upper = super::wilson_interval(
        hits as usize,
        SIGN_FLIP_SAMPLES as usize,
        SAMPLED_CONFIDENCE,
    )
    .upper;
    SignFlip {
        method: SignFlipMethod::Sampled,
        p_upper: Some(upper.max((hits + 1) as f64 / (SIGN_FLIP_SAMPLES + 1) as f64)),
        ..exact((hits + 1) as f64 / (SIGN_FLIP_SAMPLES + 1) as f64)
    }
}

/// How many positive differences there are, when all have one magnitude
/// (up to float noise).
fn one_magnitude(d: &[f64]) -> Option<usize> {
    let m = d[0].abs();
    d.iter()
        .all(|x| (x.abs() - m).abs() <= 1e-9 * m)
        .then(|| d.iter().filter(|x| **x > 0.0).count())
}

/// `P(K ≤ m)` for `K ~ Bin(n, ½)`, summed from its largest term down (in
/// log space: exact to float precision at any `n`).
fn binomial_half_cdf(n: u64, m: u64) -> f64 {
    if m >= n {
        return 1.0;
    }
    let log_half = -(n as f64) * std::f64::consts::LN_2;
    let mut term = (statrs::function::factorial::ln_binomial(n, m) + log_half).exp();
    let (mut sum, mut i) = (0.0, m);
    loop {
        sum += term;
        if i == 0 || term <= sum * 1e-17 {
            return sum.min(1.0);
        }
        // C(n, i − 1) / C(n, i) = i / (n − i + 1).
        term *= i as f64 / (n - i + 1) as f64;
        i -= 1;
    }
}

/// The exact two-sided binomial test of `positive` of `n` signs against ½.
fn binomial_two_sided(n: u64, positive: u64) -> f64 {
    (2.0 * binomial_half_cdf(n, positive.min(n - positive))).min(1.0)
}

/// The differences as signed whole numbers of a common step (`d · steps`,
/// for the fewest steps per unit up to [`MAX_STEPS_PER_UNIT`] that make
/// every one whole, up to float noise), if there is one.
fn on_a_grid(d: &[f64]) -> Option<Vec<i64>> {
    (1..=MAX_STEPS_PER_UNIT).find_map(|steps| {
        let scale = f64::from(steps);
        d.iter()
            .map(|x| {
                let y = x * scale;
                let whole = y.round();
                ((y - whole).abs() <= 1e-9 * y.abs().max(1.0) && (1.0..1e9).contains(&whole.abs()))
                    .then_some(whole as i64)
            })
            .collect()
    })
}

/// The exact two-sided p-value of whole-number differences `v`: the
/// share of sign assignments whose sum is at least as far from 0 as the
/// observed one, from the distribution of the sum over its reachable
/// values; `None` when that is more work than [`MAX_EXACT_WORK`].
fn counted_p(v: &[i64]) -> Option<f64> {
    let total: u64 = v.iter().map(|x| x.unsigned_abs()).sum();
    let width = usize::try_from(2 * total + 1).ok()?;
    if (v.len() as u64).saturating_mul(width as u64) > MAX_EXACT_WORK {
        return None;
    }
    let observed = v.iter().sum::<i64>().unsigned_abs();
    let centre = width / 2;
    // dist[s]: P(S = s − centre), halved at each difference.
    let mut dist = vec![0.0f64; width];
    dist[centre] = 1.0;
    let mut reach = 0usize;
    for x in v {
        let step = x.unsigned_abs() as usize;
        let mut next = vec![0.0f64; width];
        for s in centre - reach..=centre + reach {
            let p = dist[s];
            if p != 0.0 {
                next[s - step] += 0.5 * p;
                next[s + step] += 0.5 * p;
            }
        }
        reach += step;
        dist = next;
    }
    let p = (dist.iter().enumerate())
        .filter(|(s, _)| s.abs_diff(centre) as u64 >= observed)
        .map(|(_, p)| p)
        .sum();
    Some(p)
}

/// How many of the seeded random sign assignments of `d` give a sum at
/// least as extreme as the observed one.
fn sampled_hits(d: &[f64], extreme: impl Fn(f64) -> bool) -> u64 {
    // SplitMix64 with a fixed seed: the same draws, so the same p, every run.
    let mut state: u64 = 0x5ca1_ab1e_d00d_f00d;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut hits = 0u64;
    for _ in 0..SIGN_FLIP_SAMPLES {
        let mut sum = 0.0;
        let mut bits = 0;
        let mut word = 0;
        for x in d {
            if bits == 0 {
                word = next();
                bits = 64;
            }
            sum += if word & 1 == 1 { -x } else { *x };
            word >>= 1;
            bits -= 1;
        }
        hits += u64::from(extreme(sum));
    }
    hits
}

/// The result of [`sign_flip_test`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignFlip {
    /// Non-zero differences (the zeros carry no evidence).
    pub n: usize,
    /// Two-sided p-value.
    pub p_value: f64,
    /// How the p-value was found.
    pub method: SignFlipMethod,
    /// A sampled p-value's 99.9% upper confidence bound (`None` when the
    /// p-value is exact or approximate): what [`below`](Self::below) compares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_upper: Option<f64>,
}

impl SignFlip {
    /// Whether the test is significant at `alpha`: its p-value is below it,
    /// for a sampled one with all its sampling error (`p_upper`), so that
    /// sampling never calls a difference the exact test would not.
    pub fn below(&self, alpha: f64) -> bool {
        self.p_upper.unwrap_or(self.p_value) < alpha
    }
}

/// How [`sign_flip_test`] found its p-value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SignFlipMethod {
    /// Exact: the binomial test on the signs (differences of one size),
    /// the sum's distribution counted (differences on a common step), or
    /// every sign assignment enumerated.
    Exact,
    /// Sign assignments sampled with a fixed seed.
    Sampled,
    /// The normal approximation of the sum.
    Normal,
}

impl SignFlipMethod {
    /// `exact`, `sampled` or `normal`.
    pub fn as_str(self) -> &'static str {
        match self {
            SignFlipMethod::Exact => "exact",
            SignFlipMethod::Sampled => "sampled",
            SignFlipMethod::Normal => "normal",
        }
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn a_paired_t_test_finds_a_consistent_difference_significant() {
        use crate::stats::{Alternative, paired_t_test};
        let a = [0.9, 0.8, 0.95, 0.7, 0.85];
        let b = [0.6, 0.7, 0.8, 0.65, 0.5];
        let t = paired_t_test(&a, &b, Alternative::TwoSided).unwrap();
        assert!((t.mean_difference - 0.19).abs() < 1e-12);
        assert!(t.p_value < 0.05);
    }

    #[test]
    #[allow(clippy::approx_constant)] // 3.14 is a measurement, not π
    fn the_wilcoxon_test_of_nine_pairs_is_exact() {
        use crate::stats::{WilcoxonMethod, WilcoxonOptions, wilcoxon_signed_rank};
        let a = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30];
        let b = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29];
        let w = wilcoxon_signed_rank(&a, &b, &WilcoxonOptions::default()).unwrap();
        assert_eq!((w.statistic, w.method), (5.0, WilcoxonMethod::Exact));
        assert!((w.p_value - 0.0390625).abs() < 1e-12); // 2 × 10 / 2⁹
    }

    #[test]
    fn a_sign_flip_test_is_exact_for_five_cases_and_zeros_carry_no_evidence() {
        use crate::stats::sign_flip_test;
        // 5 cases, A passes all, B none: 2 of 32 assignments are as extreme.
        let t = sign_flip_test(&[1.0; 5]);
        assert_eq!(
            (t.n, t.method),
            (5, crate::stats::significance::SignFlipMethod::Exact)
        );
        assert!((t.p_value - 0.0625).abs() < 1e-12);
        // Zeros carry no evidence either way; no difference at all: p = 1.
        assert_eq!(sign_flip_test(&[0.0, 1.0, 0.0]).p_value, 1.0);
        assert_eq!(sign_flip_test(&[]).p_value, 1.0);
    }
}
