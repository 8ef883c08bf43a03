//! Power: what a comparison over `n` cases could have detected, and how
//! many cases a target difference needs.
//!
//! Definitions, so numbers can be checked elsewhere:
//!
//! * The per-case differences have standard deviation `σ` (their sample
//!   standard deviation; when it cannot be estimated — fewer than two
//!   cases, or every difference alike — the planning value
//!   [`ASSUMED_SD`] = 0.5, which the report marks as assumed).
//! * **Power** of a two-sided test at level `α` to detect a mean difference
//!   `δ` over `n` cases, normal approximation:
//!   `Φ(δ√n/σ − z) + Φ(−δ√n/σ − z)` with `z` the `1 − α/2` normal quantile
//!   (statsmodels' `NormalIndPower(ratio=0)`, the one-sample case).
//! * **Minimum detectable effect** (MDE): the `δ` at which that power is
//!   80% ([`DEFAULT_POWER`]). **Cases needed** for a target `δ`: the
//!   fewest `n` reaching that power.
//! * **Exact power** of pass/fail comparisons (every non-zero difference
//!   of one size `m`, as with one trial per case): the deciding test is
//!   then the exact McNemar (binomial) test, whose real power is far below
//!   the normal approximation's at small `n`. Each case differs with
//!   probability `p_d = (σ² + δ²)/m²`, in the better variant's favour with
//!   `(p_d + δ/m)/2`; the power sums, over the number `k` of cases that
//!   differ (`Bin(n, p_d)`), the chance that the favourable count lands in
//!   the test's rejection region at `α`. Computed this way up to
//!   [`EXACT_POWER_MAX_CASES`] cases, and the MDE and cases needed are
//!   searched on it; beyond, or for differences of several sizes (trials
//!   averaged, scores), the normal approximation. [`Power::method`] says
//!   which.
//! * **Exact floor**: the deciding sign-flip test is exact, and with `k`
//!   cases that differ its smallest two-sided p-value is `2 / 2ᵏ`; below
//!   [`min_cases_for`]`(α)` cases (6 at α = 0.05) no difference of any
//!   size can be significant, so there is no MDE and the cases needed are
//!   at least that floor.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};

use super::sample_stddev;

/// The power the minimum detectable effect is computed at.
pub const DEFAULT_POWER: f64 = 0.8;
/// The standard deviation of per-case differences assumed when the data
/// cannot estimate it.
pub const ASSUMED_SD: f64 = 0.5;
/// The difference the advice names a case count for (10 points).
pub const ADVICE_EFFECT: f64 = 0.10;
/// Cases up to which the power of a pass/fail comparison is exact.
pub const EXACT_POWER_MAX_CASES: usize = 400;

/// How a [`Power`]'s figures were computed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PowerMethod {
    /// The exact power of the McNemar (binomial) test.
    Exact,
    /// The normal approximation.
    #[default]
    Normal,
}

impl PowerMethod {
    /// How the advice says it.
    fn words(self) -> &'static str {
        match self {
            PowerMethod::Exact => "exact McNemar power",
            PowerMethod::Normal => "normal approximation",
        }
    }
}

/// What a comparison over its cases could detect.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Power {
    /// Cases compared.
    pub cases: usize,
    /// The significance level.
    pub alpha: f64,
    /// The power the effects are computed at (0.8).
    pub power: f64,
    /// The standard deviation of the per-case differences used.
    pub sd: f64,
    /// Whether `sd` is `ASSUMED_SD` rather than estimated.
    pub sd_assumed: bool,
    /// The smallest difference detectable with `power` (absent below the
    /// exact floor, where no difference could be significant, and when no
    /// difference the exact design can hold reaches `power`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_detectable_effect: Option<f64>,
    /// Cases needed to detect `ADVICE_EFFECT` (10 points).
    pub cases_for_advice_effect: usize,
    /// The size of every non-zero difference, when they share one (a
    /// pass/fail comparison: 1): the design whose power is exact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<f64>,
    /// How the minimum detectable effect was computed.
    #[serde(default)]
    pub method: PowerMethod,
    /// How the cases for `ADVICE_EFFECT` were computed (exact only within
    /// `EXACT_POWER_MAX_CASES`).
    #[serde(default)]
    pub cases_method: PowerMethod,
}

impl Power {
    /// The power of comparing `cases` per-case `differences` at `alpha`.
    pub fn of(differences: &[f64], alpha: f64) -> Power {
        let estimated = sample_stddev(differences).filter(|s| *s > 0.0 && s.is_finite());
        let sd = estimated.unwrap_or(ASSUMED_SD);
        let cases = differences.len();
        let mut power = Power {
            cases,
            alpha,
            power: DEFAULT_POWER,
            sd,
            sd_assumed: estimated.is_none(),
            min_detectable_effect: None,
            cases_for_advice_effect: 0,
            step: one_step(differences),
            method: PowerMethod::Normal,
            cases_method: PowerMethod::Normal,
        };
        // One design's tables serve both figures.
        let design = power.design();
        let (mde, method) = power.detectable_in(design.as_ref(), DEFAULT_POWER);
        power.min_detectable_effect = mde;
        power.method = method;
        (power.cases_for_advice_effect, power.cases_method) =
            power.cases_for_in(design.as_ref(), ADVICE_EFFECT, DEFAULT_POWER);
        power
    }

    /// The exact McNemar design of these differences, when it applies:
    /// their one step, and the spread in steps (its tables reach
    /// [`EXACT_POWER_MAX_CASES`] cases).
    fn design(&self) -> Option<Mcnemar> {
        let step = self.step?;
        let spread = self.sd / step;
        (spread <= 1.0).then(|| Mcnemar::new(step, spread, self.alpha))
    }

    /// The exact power to detect `effect` over `cases` cases, where the
    /// design is exact (`None` otherwise).
    pub fn exact_power(&self, cases: usize, effect: f64) -> Option<f64> {
        let design = self.design().filter(|_| cases <= EXACT_POWER_MAX_CASES)?;
        Some(design.power(cases, effect))
    }

    /// The smallest difference detectable with `power` over these cases,
    /// and how it was computed.
    pub fn detectable(&self, power: f64) -> (Option<f64>, PowerMethod) {
        self.detectable_in(self.design().as_ref(), power)
    }

    fn detectable_in(&self, design: Option<&Mcnemar>, power: f64) -> (Option<f64>, PowerMethod) {
        match design.filter(|_| self.cases <= EXACT_POWER_MAX_CASES) {
            Some(design) => (
                design.min_detectable_effect(self.cases, power),
                PowerMethod::Exact,
            ),
            None => (
                min_detectable_effect(self.cases, self.sd, self.alpha, power),
                PowerMethod::Normal,
            ),
        }
    }

    /// The fewest cases that detect `effect` with `power`, and how: exact
    /// while the design is and the answer lies within its reach.
    pub fn cases_for(&self, effect: f64, power: f64) -> (usize, PowerMethod) {
        self.cases_for_in(self.design().as_ref(), effect, power)
    }

    fn cases_for_in(
        &self,
        design: Option<&Mcnemar>,
        effect: f64,
        power: f64,
    ) -> (usize, PowerMethod) {
        let normal = cases_for_effect(effect, self.sd, self.alpha, power);
        match design.and_then(|design| design.cases_for(effect, power, normal)) {
            Some(n) => (n, PowerMethod::Exact),
            None => (normal, PowerMethod::Normal),
        }
    }

    /// Advice in words: `with 5 cases no difference can reach α = 0.05
    /// (an exact test needs 6 that differ); about 197 cases would detect
    /// 10 points`, or `with 12 cases only differences above ~31 points are
    /// detectable (80% power, α = 0.05); about 114 cases would detect 10 points`.
    pub fn advice(&self) -> String {
        let floor = min_cases_for(self.alpha);
        let first = match self.min_detectable_effect {
            None if self.cases < floor => format!(
                "with {} {} no difference can reach α = {} (an exact test needs {floor} that differ)",
                self.cases,
                cases_word(self.cases),
                self.alpha
            ),
            None => format!(
                "with {} {} no difference is detectable with {:.0}% power (α = {})",
                self.cases,
                cases_word(self.cases),
                self.power * 100.0,
                self.alpha
            ),
            Some(mde) => format!(
                "with {} {} only differences above ~{:.0} points are detectable ({:.0}% power, α = {})",
                self.cases,
                cases_word(self.cases),
                mde * 100.0,
                self.power * 100.0,
                self.alpha
            ),
        };
        let assumed = if self.sd_assumed {
            format!(", assuming a spread of {ASSUMED_SD}")
        } else {
            String::new()
        };
        let how = match (self.method, self.cases_method) {
            (a, b) if a == b => a.words().to_string(),
            (a, b) => format!("{}; the cases: {}", a.words(), b.words()),
        };
        format!(
            "{first}; about {} cases would detect {:.0} points{assumed} ({how})",
            self.cases_for_advice_effect,
            ADVICE_EFFECT * 100.0,
        )
    }
}

/// The fewest cases that differ with which an exact two-sided sign-flip
/// test can reach `p ≤ alpha` (`2 / 2ᵏ ≤ α`; 6 at α = 0.05).
pub fn min_cases_for(alpha: f64) -> usize {
    (1..=64usize)
        .find(|k| 2.0 / 2f64.powi(*k as i32) <= alpha)
        .unwrap_or(64)
}

/// The power of a two-sided test at `alpha` to detect a mean difference
/// `effect` over `cases` cases with differences of spread `sd`.
pub fn power_of(effect: f64, cases: usize, sd: f64, alpha: f64) -> f64 {
    let normal = Normal::standard();
    let z = normal.inverse_cdf(1.0 - alpha / 2.0);
    let shift = effect.abs() * (cases as f64).sqrt() / sd;
    normal.cdf(shift - z) + normal.cdf(-shift - z)
}

fn usable(sd: f64, alpha: f64, power: f64) -> bool {
    sd > 0.0 && sd.is_finite() && alpha > 0.0 && alpha < 1.0 && power > 0.0 && power < 1.0
}

/// The smallest difference detectable with `power` over `cases` cases
/// (`None` below `min_cases_for(alpha)` or for unusable settings).
pub fn min_detectable_effect(cases: usize, sd: f64, alpha: f64, power: f64) -> Option<f64> {
    if cases < min_cases_for(alpha) || !usable(sd, alpha, power) {
        return None;
    }
    // Power grows with the effect: bisect in [0, hi].
    let mut hi = sd;
    while power_of(hi, cases, sd, alpha) < power {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if power_of(mid, cases, sd, alpha) < power {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(hi)
}

/// The fewest cases that detect `effect` with `power` at `alpha` (at least
/// `min_cases_for(alpha)`; `usize::MAX` for a zero effect or unusable
/// settings).
pub fn cases_for_effect(effect: f64, sd: f64, alpha: f64, power: f64) -> usize {
    if effect == 0.0 || !effect.is_finite() || !usable(sd, alpha, power) {
        return usize::MAX;
    }
    let normal = Normal::standard();
    let z = normal.inverse_cdf(1.0 - alpha / 2.0) + normal.inverse_cdf(power);
    let guess = (z * sd / effect.abs()).powi(2);
    if guess > 1e12 {
        return usize::MAX;
    }
    // The closed form ignores the far tail, so it is at most one too many.
    let mut n = (guess.ceil() as usize).max(1);
    while n > 1 && power_of(effect, n - 1, sd, alpha) >= power {
        n -= 1;
    }
    while power_of(effect, n, sd, alpha) < power {
        n += 1;
    }
    n.max(min_cases_for(alpha))
}

/// The size every non-zero difference has, if they share one (up to float
/// noise); with no non-zero difference, a pass/fail comparison's 1 when
/// every difference is 0.
fn one_step(differences: &[f64]) -> Option<f64> {
    let mut sizes = differences.iter().map(|d| d.abs()).filter(|d| *d > 0.0);
    let Some(m) = sizes.next() else {
        return (!differences.is_empty()).then_some(1.0);
    };
    sizes.all(|x| (x - m).abs() <= 1e-9 * m).then_some(m)
}

/// The pass/fail (McNemar) design: differences of `step`, of spread
/// `spread` steps, tested at `alpha` by the exact binomial test, with the
/// tables its power sums over (up to [`EXACT_POWER_MAX_CASES`] cases).
#[derive(Debug, Clone)]
struct Mcnemar {
    step: f64,
    spread: f64,
    alpha: f64,
    /// `ln k!` for `k` up to the most cases.
    ln_factorial: Vec<f64>,
    /// `1 / k` for `k` up to one more than the most cases (`[0]` unused).
    reciprocals: Vec<f64>,
    /// For `k` differing cases, the largest count `c` with
    /// `2 P(Bin(k, ½) ≤ c) ≤ α` (the test rejects at `≤ c` and `≥ k − c`).
    cutoffs: Vec<Option<usize>>,
}

impl Mcnemar {
    fn new(step: f64, spread: f64, alpha: f64) -> Mcnemar {
        let mut ln_factorial = vec![0.0; EXACT_POWER_MAX_CASES + 1];
        for k in 1..=EXACT_POWER_MAX_CASES {
            ln_factorial[k] = ln_factorial[k - 1] + (k as f64).ln();
        }
        let reciprocals = (0..=EXACT_POWER_MAX_CASES + 1)
            .map(|k| 1.0 / k.max(1) as f64)
            .collect();
        let mut design = Mcnemar {
            step,
            spread,
            alpha,
            ln_factorial,
            reciprocals,
            cutoffs: Vec::new(),
        };
        let cutoffs = {
            let fair = design.chances(0.5);
            (0..=EXACT_POWER_MAX_CASES)
                .map(|k| {
                    let (mut tail, mut cutoff) = (0.0, None);
                    for c in 0..k.div_ceil(2) {
                        tail += fair.of(k, c);
                        if 2.0 * tail > alpha {
                            break;
                        }
                        cutoff = Some(c);
                    }
                    cutoff
                })
                .collect()
        };
        design.cutoffs = cutoffs;
        design
    }

    /// The chances of `Bin(·, p)`, its logarithms taken once.
    fn chances(&self, p: f64) -> Chances<'_> {
        Chances {
            design: self,
            p,
            ln_p: p.ln(),
            ln_q: (1.0 - p).ln(),
            up: p / (1.0 - p),
            down: (1.0 - p) / p,
        }
    }

    /// The exact power to detect a mean difference of `effect` over `cases`
    /// cases (0 where the design cannot hold such an effect).
    fn power(&self, cases: usize, effect: f64) -> f64 {
        self.rejections(effect, cases)
            .map_or(0.0, |r| r.power(self, cases))
    }

    /// For `effect`, the chance that the test rejects given `k` discordant
    /// cases, for each `k` up to `cases` (`None` where the design cannot
    /// hold such an effect): what the power over any number of cases up to
    /// `cases` weighs by the chance of `k` discordant ones.
    fn rejections(&self, effect: f64, cases: usize) -> Option<Rejections> {
        let x = (effect / self.step).abs();
        let discordant = self.spread * self.spread + x * x;
        if discordant > 1.0 || x > discordant || discordant == 0.0 {
            return None;
        }
        let favourable = self.chances((discordant + x) / (2.0 * discordant));
        let by_discordant = (0..=cases.min(EXACT_POWER_MAX_CASES))
            .map(|k| self.cutoffs[k].map(|c| favourable.tails(k, c)))
            .collect();
        Some(Rejections {
            discordant,
            by_discordant,
        })
    }

    /// The smallest effect with exact power `power` at `cases` cases,
    /// searched on a grid of 1/200 of a step and refined by bisection
    /// (`None` when no effect the design can hold reaches it).
    fn min_detectable_effect(&self, cases: usize, power: f64) -> Option<f64> {
        if cases < min_cases_for(self.alpha) {
            return None;
        }
        let mut lo = 0.0;
        let mut hi = None;
        for i in 1..=200 {
            let effect = self.step * f64::from(i) / 200.0;
            if self.power(cases, effect) >= power {
                hi = Some(effect);
                break;
            }
            lo = effect;
        }
        let mut hi = hi?;
        for _ in 0..30 {
            let mid = (lo + hi) / 2.0;
            if self.power(cases, mid) >= power {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi)
    }

    /// The fewest cases (up to [`EXACT_POWER_MAX_CASES`]) whose exact power
    /// to detect `effect` reaches `power`, searched from a little below the
    /// normal approximation's `normal` (an exact test needs more, not
    /// fewer); `None` beyond.
    fn cases_for(&self, effect: f64, power: f64, normal: usize) -> Option<usize> {
        let from = min_cases_for(self.alpha).max(normal.saturating_mul(3) / 4);
        // The chances of rejecting given k discordant cases do not depend
        // on the number of cases: computed once, not once per number tried.
        let rejections = self.rejections(effect, EXACT_POWER_MAX_CASES);
        let power_at = |n| rejections.as_ref().map_or(0.0, |r| r.power(self, n));
        (from..=EXACT_POWER_MAX_CASES).find(|&n| power_at(n) >= power)
    }
}

/// `K ~ Bin(n, p)` for any `n` up to [`EXACT_POWER_MAX_CASES`]: `p`, its
/// logarithms and the odds each way, taken once for every term.
struct Chances<'a> {
    design: &'a Mcnemar,
    p: f64,
    ln_p: f64,
    ln_q: f64,
    /// `p / q`.
    up: f64,
    /// `q / p`.
    down: f64,
}

impl Chances<'_> {
    /// `P(K = j)`, from its logarithm.
    fn of(&self, n: usize, j: usize) -> f64 {
        let ln_factorial = &self.design.ln_factorial;
        match self.p {
            p if p <= 0.0 => f64::from(j == 0),
            p if p >= 1.0 => f64::from(j == n),
            _ => (ln_factorial[n] - ln_factorial[j] - ln_factorial[n - j]
                + j as f64 * self.ln_p
                + (n - j) as f64 * self.ln_q)
                .exp(),
        }
    }

    /// Whether every term follows from its neighbour (not so at `p` 0 or 1).
    fn stepwise(&self) -> bool {
        self.p > 0.0 && self.p < 1.0
    }

    /// `P(K = j + 1) / P(K = j)`: `(n − j) p / ((j + 1) q)` (by a table of
    /// reciprocals: no division in the chain of products).
    fn step_up(&self, n: usize, j: usize) -> f64 {
        (n - j) as f64 * self.design.reciprocals[j + 1] * self.up
    }

    /// `P(K = j − 1) / P(K = j)`: `j q / ((n − j + 1) p)`.
    fn step_down(&self, n: usize, j: usize) -> f64 {
        j as f64 * self.design.reciprocals[n - j + 1] * self.down
    }

    /// `P(K = j)` for each `j` in `0..=n`, into `row`: the likeliest count
    /// from its logarithm, every other from its neighbour towards it.
    fn row_into(&self, row: &mut Vec<f64>, n: usize) {
        row.clear();
        if !self.stepwise() {
            row.extend((0..=n).map(|j| self.of(n, j)));
            return;
        }
        let mode = self.mode(n);
        row.resize(n + 1, 0.0);
        row[mode] = self.of(n, mode);
        for j in mode..n {
            row[j + 1] = row[j] * self.step_up(n, j);
        }
        for j in (1..=mode).rev() {
            row[j - 1] = row[j] * self.step_down(n, j);
        }
    }

    /// `P(K ≤ c) + P(K ≥ k − c)` for `n = k` (`c < k − c`): the chance that
    /// the test rejects with `k` discordant cases.
    fn tails(&self, k: usize, c: usize) -> f64 {
        self.range_sum(k, 0, c) + self.range_sum(k, k - c, k)
    }

    /// `P(lo ≤ K ≤ hi)`: the range's likeliest count from its logarithm,
    /// every other from its neighbour towards it (an `exp` a range and a
    /// product a term, not an `exp` a term: the power searches of a
    /// 100-case comparison took milliseconds).
    fn range_sum(&self, n: usize, lo: usize, hi: usize) -> f64 {
        if !self.stepwise() {
            return (lo..=hi).map(|j| self.of(n, j)).sum();
        }
        let start = self.mode(n).clamp(lo, hi);
        let first = self.of(n, start);
        let (mut sum, mut term) = (first, first);
        for j in start..hi {
            term *= self.step_up(n, j);
            sum += term;
        }
        term = first;
        for j in (lo + 1..=start).rev() {
            term *= self.step_down(n, j);
            sum += term;
        }
        sum
    }

    /// The likeliest count, `⌊(n + 1) p⌋` (at most `n`).
    fn mode(&self, n: usize) -> usize {
        (((n + 1) as f64 * self.p) as usize).min(n)
    }
}

/// [`Mcnemar::rejections`]: for one effect, the chance of rejecting given
/// `k` discordant cases (`None` where no count of `k` rejects).
struct Rejections {
    /// The chance that a case is discordant.
    discordant: f64,
    by_discordant: Vec<Option<f64>>,
}

impl Rejections {
    /// The power over `cases` cases: each count of discordant cases' chance
    /// of rejecting, weighed by the chance of that count.
    fn power(&self, design: &Mcnemar, cases: usize) -> f64 {
        let mut discordant = Vec::new();
        design
            .chances(self.discordant)
            .row_into(&mut discordant, cases);
        (0..=cases.min(EXACT_POWER_MAX_CASES))
            .filter_map(|k| Some((k, self.by_discordant.get(k).copied().flatten()?)))
            .map(|(k, rejected)| discordant[k] * rejected)
            .sum::<f64>()
            .clamp(0.0, 1.0)
    }
}

/// `case` for one, `cases` otherwise.
fn cases_word(n: usize) -> &'static str {
    if n == 1 { "case" } else { "cases" }
}

#[cfg(test)]
mod examples {
    #[test]
    fn five_cases_detect_nothing_and_twelve_varied_differences_give_an_mde() {
        use crate::stats::Power;
        // Five cases can never reach p < 0.05 with an exact test.
        let p = Power::of(&[1.0; 5], 0.05);
        assert_eq!((p.min_detectable_effect, p.sd_assumed), (None, true));
        // Twelve varied differences: an MDE, from their own spread.
        let d = [0.2, -0.1, 0.4, 0.0, 0.3, 0.1, -0.2, 0.5, 0.2, 0.0, 0.1, 0.3];
        let p = Power::of(&d, 0.05);
        assert!(!p.sd_assumed && p.min_detectable_effect.unwrap() < 0.3);
    }

    #[test]
    fn an_exact_test_needs_six_cases_at_five_percent_and_eight_at_one() {
        assert_eq!(crate::stats::min_cases_for(0.05), 6);
        assert_eq!(crate::stats::min_cases_for(0.01), 8);
    }

    #[test]
    fn a_hundred_cases_detect_an_effect_of_about_0_14_and_five_none() {
        use crate::stats::min_detectable_effect;
        // (z₀.₉₇₅ + z₀.₈) · 0.5 / √100 ≈ 0.14.
        let mde = min_detectable_effect(100, 0.5, 0.05, 0.8).unwrap();
        assert!((mde - 0.1401).abs() < 1e-3);
        assert_eq!(min_detectable_effect(5, 0.5, 0.05, 0.8), None);
    }

    #[test]
    fn the_cases_for_an_effect_round_up_and_are_at_least_six() {
        use crate::stats::cases_for_effect;
        // ((z₀.₉₇₅ + z₀.₈) · 0.5 / 0.1)² ≈ 196.2, so 197.
        assert_eq!(cases_for_effect(0.1, 0.5, 0.05, 0.8), 197);
        assert_eq!(cases_for_effect(0.9, 0.1, 0.05, 0.8), 6);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each row of binomial chances and each pair of tails, built from
    /// their likeliest count outwards, are the chances taken from their own
    /// logarithms (to 1e-10 relative: both lose some digits 400 terms out),
    /// from 0 to the most cases, at chances near 0, ½ and 1.
    #[test]
    fn rows_and_tails_of_binomial_chances_are_the_chances_from_their_logarithms() {
        let design = Mcnemar::new(1.0, 0.5, 0.05);
        let mut row = Vec::new();
        for p in [0.0, 1e-3, 0.1, 0.37, 0.5, 0.83, 0.999, 1.0] {
            let chances = design.chances(p);
            for n in [0, 1, 2, 7, 100, 399, EXACT_POWER_MAX_CASES] {
                chances.row_into(&mut row, n);
                assert_eq!(row.len(), n + 1);
                for (j, got) in row.iter().enumerate() {
                    let want = chances.of(n, j);
                    assert!(
                        (got - want).abs() <= 1e-10 * want.max(1e-300),
                        "P(Bin({n}, {p}) = {j}): {got:e}, from its logarithm {want:e}"
                    );
                }
                for c in (0..n.div_ceil(2)).step_by(7) {
                    let got = chances.tails(n, c);
                    let want: f64 = (0..=c)
                        .map(|j| chances.of(n, j) + chances.of(n, n - j))
                        .sum();
                    assert!(
                        (got - want).abs() <= 1e-10 * want.max(1e-300),
                        "the tails of Bin({n}, {p}) to {c}: {got:e}, term by term {want:e}"
                    );
                }
            }
        }
    }
}
