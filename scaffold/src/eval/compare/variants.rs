//! Variants of one run against each other: rankings, the Pareto frontier,
//! paired significance tests and a recommendation (seed 003's
//! `VariantComparison` and `VariantRecommendation`).
//!
//! **Quality** is the pass rate unless the eval names a primary scorer
//! ([`Eval::primary_scorer`](crate::eval::Eval::primary_scorer), carried
//! in [`VariantCompareOptions::quality`]): then it is that scorer's mean,
//! unless the scorer gave every cell one value ([`deciding_scorer`]).
//! It decides: the recommended variant is the one of highest quality
//! (ties: cheaper, then higher pass rate, then faster, then by name).
//!
//! **Frontier**: two objectives, quality (higher is better) and mean cost
//! per cell (lower is better). A variant is on it when no other variant is
//! at least as good on both and better on one; variants equal on both are
//! both on it. Latency is ranked (`by_latency`) but is not an objective, so
//! a variant that is only faster is not on the frontier. The HTML report's
//! table marks and its cost/quality plot draw this same list.
//!
//! **Unknown figures**: a variant's cost is unknown when a model it called
//! has no price or no cell of it has a cost of its own, its latency when no
//! cell has a latency of its own (every cell could not be played back or
//! errored: [`Unmeasured`](crate::eval::stats::Unmeasured)). An unknown
//! figure is never ranked (`by_cost`, `by_latency`), never cheapest or
//! fastest, never better or worse than another; the variant is listed in
//! `cost_unknown` or `latency_unknown`. On the frontier, a variant of unknown
//! cost neither beats nor is beaten on cost, and a variant with no cell
//! measured has no place at all.
//!
//! **Significance**: the case is the unit of analysis. The recommended
//! variant is tested against each other variant on the cases they share
//! (same dataset and case), pairing each case's quality averaged over its
//! trials (the primary scorer's value, else 1/0 for pass/fail): trials
//! reduce the noise within a case, they are not new evidence. The test that
//! decides is the paired sign-flip permutation test on those differences
//! (exact up to 20 non-zero differences, then sampled with a fixed seed;
//! on pass/fail with one trial it is the exact McNemar test); the paired
//! t-test (only when the differences vary) and the Wilcoxon signed-rank
//! test are reported beside it. It is a *clear winner* when it is ahead of
//! every other variant with a sign-flip `p < alpha` each time; otherwise
//! there is *no clear winner*, and the verdict says what more cases would
//! detect (each test's [`Power`]: the minimum detectable effect at 80%
//! power over its cases, and the cases 10 points would need). The verdict
//! names the metric that decided. When no variant passed a cell, none is
//! recommended and none tested.
//!
//! **Trials for a winner**: with
//! [`VariantCompareOptions::min_trials_for_winner`] `m`, a comparison whose
//! cases ran fewer than `m` trials (the fewest any variant × case ran) calls
//! no winner whatever the tests say: the verdict is "no clear winner", the
//! confidence low, and the recommendation says "not enough trials (n < m)
//! to call a winner".

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::eval::results::CellRecord;
use crate::eval::stats::{
    Alternative, DEFAULT_CONFIDENCE, Power, SignFlip, SignFlipMethod, TTest, VariantSummary,
    Wilcoxon, WilcoxonOptions, paired_t_test, sign_flip_test, trial_stats, wilcoxon_signed_rank,
};
use crate::util::fmt::{
    apart, duration as ms, duration_digits, p_value as p_text, pct, usd, usd_digits,
};

/// Options of [`compare_variants`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VariantCompareOptions {
    /// Significance level (default 0.05).
    pub alpha: f64,
    /// The primary scorer, whose mean is quality (default none: quality
    /// is the pass rate; see `deciding_scorer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<String>,
    /// Pairs per test at which a clear winner earns high confidence (default 10).
    pub high_confidence_pairs: usize,
    /// Trials per case below which no winner is called (default 0: no minimum).
    #[serde(default)]
    pub min_trials_for_winner: u32,
}

impl Default for VariantCompareOptions {
    fn default() -> Self {
        VariantCompareOptions {
            alpha: 0.05,
            quality: None,
            high_confidence_pairs: 10,
            min_trials_for_winner: 0,
        }
    }
}

/// How sure a recommendation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// Not significantly better than some variant.
    Low,
    /// Significantly better on few pairs, or better on every objective
    /// without significance.
    Medium,
    /// Significantly better than every other variant on enough pairs.
    High,
}

impl Confidence {
    /// `low`, `medium` or `high`.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::Low => "low",
            Confidence::Medium => "medium",
            Confidence::High => "high",
        }
    }
}

/// Whether the statistics single out a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WinnerVerdict {
    /// Significantly better than every other variant.
    ClearWinner,
    /// Not significantly better than every other variant.
    NoClearWinner,
}

impl WinnerVerdict {
    /// `clear winner` or `no clear winner`.
    pub fn message(self) -> &'static str {
        match self {
            WinnerVerdict::ClearWinner => "clear winner",
            WinnerVerdict::NoClearWinner => "no clear winner",
        }
    }
}

/// The recommended variant and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Recommendation {
    /// The variant.
    pub variant: String,
    /// Why, in a sentence.
    pub reason: String,
    /// What other frontier variants do better.
    #[serde(default)]
    pub tradeoffs: Vec<String>,
    /// How sure.
    pub confidence: Confidence,
}

/// The recommended variant tested against another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairwiseTest {
    /// The recommended variant (`a` in the tests).
    pub variant: String,
    /// The variant compared with (`b`).
    pub other: String,
    /// What was tested: the quality scorer's name, or `pass` (pass/fail)
    /// when there is none or it gave both variants one value everywhere.
    #[serde(default)]
    pub metric: String,
    /// Cases both ran (with the quality value), each its trials' mean: the
    /// unit of analysis.
    pub pairs: usize,
    /// Mean of `variant - other` per case.
    pub mean_difference: f64,
    /// The sign-flip permutation test over the cases' differences: the
    /// test that decides (absent without pairs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign_flip: Option<SignFlip>,
    /// The paired t-test (absent with fewer than two pairs, or when every
    /// difference is the same: it would say t = ±∞).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_test: Option<TTest>,
    /// The Wilcoxon signed-rank test (absent without pairs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wilcoxon: Option<Wilcoxon>,
    /// Ahead, with the sign-flip p-value under alpha.
    pub significant: bool,
    /// What these cases could detect: the minimum detectable effect at 80%
    /// power and the cases 10 points would need (absent without pairs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<Power>,
}

impl PairwiseTest {
    /// The metric in words: `pass/fail` or the scorer's name.
    pub fn metric_label(&self) -> &str {
        if self.metric == "pass" || self.metric.is_empty() {
            "pass/fail"
        } else {
            &self.metric
        }
    }
}

/// Seed 003's cross-variant comparison, with the significance tests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VariantComparison {
    /// Best pass rate first (ties: higher quality, then cheaper).
    pub by_pass_rate: Vec<String>,
    /// Cheapest mean cost per cell first; a variant whose cost is unknown
    /// (an unpriced model, or no cell measured) is not ranked.
    pub by_cost: Vec<String>,
    /// Variants whose cost is unknown: a model they called has no price, or
    /// no cell of theirs has a cost of its own (none could be played back,
    /// or every run errored).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cost_unknown: Vec<String>,
    /// Fastest mean latency first; a variant whose latency is unknown is
    /// not ranked.
    pub by_latency: Vec<String>,
    /// Variants whose latency is unknown: no cell of theirs has a latency
    /// of its own (none could be played back, or every run errored).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency_unknown: Vec<String>,
    /// Variants no other beats on quality and cost (see the module doc),
    /// best quality first (ties: cheaper, higher pass rate, faster): the
    /// first is the recommended variant.
    pub pareto_frontier: Vec<String>,
    /// What quality means here: `pass` or a scorer's name.
    pub quality: String,
    /// Mean quality per variant.
    pub quality_by_variant: BTreeMap<String, f64>,
    /// The recommendation (absent without variants).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommendation: Option<Recommendation>,
    /// The recommended variant against each other variant.
    #[serde(default)]
    pub significance: Vec<PairwiseTest>,
    /// Whether the recommended variant is a clear winner.
    pub verdict: WinnerVerdict,
    /// The significance level used.
    pub alpha: f64,
    /// The fewest trials any variant × case ran.
    #[serde(default)]
    pub trials_per_case: u32,
    /// Trials per case a winner needs (0: no minimum).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_trials_for_winner: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl VariantComparison {
    /// Whether too few trials ran to call a winner.
    pub fn too_few_trials(&self) -> bool {
        self.trials_per_case < self.min_trials_for_winner
    }

    /// The verdict in words, naming the metric that decided and, without
    /// a winner, what more cases would detect: `clear winner on pass/fail
    /// (12 cases, sign-flip p = 0.0005)`, `no clear winner on pass/fail:
    /// with 5 cases no difference can reach α = 0.05 (…); about 197 cases
    /// would detect 10 points`, or `not enough trials (2 < 5) to call a
    /// winner`.
    pub fn verdict_message(&self) -> String {
        if self.too_few_trials() {
            return format!(
                "not enough trials ({} < {}) to call a winner",
                self.trials_per_case, self.min_trials_for_winner
            );
        }
        let verdict = self.verdict.message();
        let deciding = match self.verdict {
            WinnerVerdict::ClearWinner => self
                .significance
                .iter()
                .max_by(|a, b| cmp_f(p_of(a), p_of(b))),
            WinnerVerdict::NoClearWinner => self.significance.iter().find(|t| !t.significant),
        };
        let Some(t) = deciding else {
            return verdict.to_string();
        };
        let on = t.metric_label();
        match self.verdict {
            WinnerVerdict::ClearWinner => format!(
                "{verdict} on {on} ({} cases, sign-flip {}{}{})",
                t.pairs,
                p_text(p_of(t)),
                if self.significance.len() > 1 {
                    " at most"
                } else {
                    ""
                },
                match t.sign_flip.map(|s| s.method) {
                    Some(SignFlipMethod::Sampled) => ", sampled",
                    Some(SignFlipMethod::Normal) => ", normal approximation",
                    _ => "",
                }
            ),
            WinnerVerdict::NoClearWinner => match &t.power {
                Some(power) => format!("{verdict} on {on}: {}", power.advice()),
                None => format!("{verdict} on {on}"),
            },
        }
    }
}

/// The fewest trials any variant × case of `cells` ran (0 without cells).
fn trials_per_case(cells: &[CellRecord]) -> u32 {
    let fewest = trial_stats(cells, &[], DEFAULT_CONFIDENCE)
        .trial_counts()
        .min();
    fewest.map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// What is known of one variant: the frontier's objectives (quality and
/// cost) and what else is ranked. An unknown cost or latency is `None`:
/// never better, worse or equal to another.
#[derive(Debug, Clone, Copy)]
struct Point {
    pass_rate: f64,
    quality: f64,
    cost: Option<f64>,
    latency: Option<f64>,
    /// Some cell has a latency and cost of its own: the variant can be placed.
    measured: bool,
}

impl Point {
    /// At least as good on quality and cost and better on one of them
    /// (never, when either cost is unknown).
    fn dominates(&self, o: &Point) -> bool {
        let (Some(cost), Some(other)) = (self.cost, o.cost) else {
            return false;
        };
        let ge = self.quality >= o.quality && cost <= other;
        let gt = self.quality > o.quality || cost < other;
        ge && gt
    }
}

/// `(a, b)` when both are known and `a < b`.
fn below(a: Option<f64>, b: Option<f64>) -> Option<(f64, f64)> {
    match (a, b) {
        (Some(a), Some(b)) if a < b => Some((a, b)),
        _ => None,
    }
}

/// `a` against `b` when both are known; equal otherwise (an unknown figure
/// breaks no tie).
fn cmp_known(a: Option<f64>, b: Option<f64>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => cmp_f(a, b),
        _ => Ordering::Equal,
    }
}

/// A test's sign-flip p-value (1 without one).
fn p_of(t: &PairwiseTest) -> f64 {
    t.sign_flip.map_or(1.0, |s| s.p_value)
}

fn cmp_f(a: f64, b: f64) -> Ordering {
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

/// A variant's quality: the mean of the primary scorer when one is named
/// (0 for a variant without its scores), else the pass rate.
pub fn quality(summary: &VariantSummary, primary: Option<&str>) -> f64 {
    match primary {
        Some(p) => summary.scores.get(p).map_or(0.0, |st| st.mean),
        None => summary.pass_rate,
    }
}

/// The scorer that decides: `primary`, unless it gave every cell of every
/// variant one value (or none has its scores): it can tell no variant from
/// another, so the pass rate decides, as it does without a primary scorer.
pub fn deciding_scorer<'s, 'p>(
    summaries: impl IntoIterator<Item = &'s VariantSummary>,
    primary: Option<&'p str>,
) -> Option<&'p str> {
    let name = primary?;
    let mut ranges = summaries
        .into_iter()
        .map(|s| s.scores.get(name).map(|st| (st.min, st.max)));
    let constant = match ranges.next() {
        Some(Some((lo, hi))) => lo == hi && ranges.all(|r| r == Some((lo, lo))),
        Some(None) => ranges.all(|r| r.is_none()),
        None => true,
    };
    (!constant).then_some(name)
}

/// Compare the variants of one run.
///
/// `summaries` in the eval's variant order; `cells` of all variants.
pub fn compare_variants(
    summaries: &[VariantSummary],
    cells: &[CellRecord],
    options: &VariantCompareOptions,
) -> VariantComparison {
    let quality_scorer = deciding_scorer(summaries, options.quality.as_deref());
    let points = points(summaries, quality_scorer);
    let ranks = Rankings::of(&points);
    let quality_name = quality_scorer.unwrap_or("pass").to_string();
    // When no variant passed a cell there is nothing to recommend.
    let best =
        (ranks.frontier.first().copied()).filter(|_| points.iter().any(|(_, p)| p.pass_rate > 0.0));
    let significance = best.map_or_else(Vec::new, |(best_name, _)| {
        (points.iter().filter(|(n, _)| n != best_name))
            .map(|(other, _)| pairwise(best_name, other, cells, quality_scorer, options.alpha))
            .collect()
    });
    let trials = trials_per_case(cells);
    let too_few = trials < options.min_trials_for_winner;
    let clear = !too_few && !significance.is_empty() && significance.iter().all(|t| t.significant);
    let verdict = if clear {
        WinnerVerdict::ClearWinner
    } else {
        WinnerVerdict::NoClearWinner
    };
    let recommendation = best.map(|(name, point)| {
        let standing = Standing {
            name,
            point,
            points: &points,
            tests: &significance,
            quality: &quality_name,
            options,
        };
        let mut r = standing.recommend(&ranks.frontier);
        if too_few {
            r.reason.push_str(&format!(
                "; not enough trials ({trials} < {}) to call a winner",
                options.min_trials_for_winner
            ));
            r.confidence = Confidence::Low;
        }
        r
    });
    VariantComparison {
        by_pass_rate: names(&ranks.by_pass_rate),
        by_cost: names(&ranks.by_cost),
        cost_unknown: unknown(&points, |p| p.cost),
        by_latency: names(&ranks.by_latency),
        latency_unknown: unknown(&points, |p| p.latency),
        pareto_frontier: names(&ranks.frontier),
        quality: quality_name,
        quality_by_variant: points
            .iter()
            .map(|(n, p)| (n.to_string(), p.quality))
            .collect(),
        recommendation,
        significance,
        verdict,
        alpha: options.alpha,
        trials_per_case: trials,
        min_trials_for_winner: options.min_trials_for_winner,
    }
}

/// Each variant's point, in the order of `summaries`.
fn points<'s>(summaries: &'s [VariantSummary], quality_scorer: Option<&str>) -> Vec<Named<'s>> {
    summaries
        .iter()
        .map(|s| {
            (
                s.variant.as_str(),
                Point {
                    pass_rate: s.pass_rate,
                    quality: quality(s, quality_scorer),
                    cost: s.known_cost(),
                    latency: s.known_latency(),
                    measured: s.latency_known(),
                },
            )
        })
        .collect()
}

/// The variants whose `figure` is unknown, in the order of `points`.
fn unknown(points: &[Named<'_>], figure: fn(&Point) -> Option<f64>) -> Vec<String> {
    (points.iter())
        .filter(|(_, p)| figure(p).is_none())
        .map(|(n, _)| n.to_string())
        .collect()
}

/// A variant and its point.
type Named<'p> = (&'p str, Point);

/// The variants ranked, and the Pareto frontier.
struct Rankings<'p> {
    by_pass_rate: Vec<&'p Named<'p>>,
    by_cost: Vec<&'p Named<'p>>,
    by_latency: Vec<&'p Named<'p>>,
    /// Best quality first: the first is the variant recommended.
    frontier: Vec<&'p Named<'p>>,
}

impl<'p> Rankings<'p> {
    fn of(points: &'p [Named<'p>]) -> Rankings<'p> {
        let by_pass_rate = ranked(points.iter(), |(an, a), (bn, b)| {
            cmp_f(b.pass_rate, a.pass_rate)
                .then(cmp_f(b.quality, a.quality))
                .then(cmp_known(a.cost, b.cost))
                .then(cmp_known(a.latency, b.latency))
                .then(an.cmp(bn))
        });
        // Only a known figure is ranked.
        let priced = points.iter().filter(|(_, p)| p.cost.is_some());
        let by_cost = ranked(priced, |(an, a), (bn, b)| {
            cmp_known(a.cost, b.cost)
                .then(cmp_f(b.pass_rate, a.pass_rate))
                .then(an.cmp(bn))
        });
        let timed = points.iter().filter(|(_, p)| p.latency.is_some());
        let by_latency = ranked(timed, |(an, a), (bn, b)| {
            cmp_known(a.latency, b.latency)
                .then(cmp_f(b.pass_rate, a.pass_rate))
                .then(an.cmp(bn))
        });
        Rankings {
            by_pass_rate,
            by_cost,
            by_latency,
            frontier: frontier(points),
        }
    }
}

/// The variants no other dominates, best quality first (ties: cheaper,
/// higher pass rate, faster, then by name). A variant with no cell measured
/// has no place on it: nothing it did can be set against the others.
fn frontier<'p>(points: &'p [Named<'p>]) -> Vec<&'p Named<'p>> {
    // Quality decides; the frontier's first is the variant recommended.
    let placed = points.iter().filter(|(_, p)| p.measured);
    let by_quality = ranked(placed, |(an, a), (bn, b)| {
        cmp_f(b.quality, a.quality)
            .then(cmp_known(a.cost, b.cost))
            .then(cmp_f(b.pass_rate, a.pass_rate))
            .then(cmp_known(a.latency, b.latency))
            .then(an.cmp(bn))
    });
    by_quality
        .into_iter()
        .filter(|(_, p)| !points.iter().any(|(_, o)| o.dominates(p)))
        .collect()
}

/// `points` sorted by `order`.
fn ranked<'p>(
    points: impl Iterator<Item = &'p Named<'p>>,
    order: impl FnMut(&&'p Named<'p>, &&'p Named<'p>) -> Ordering,
) -> Vec<&'p Named<'p>> {
    let mut v: Vec<&Named<'_>> = points.collect();
    v.sort_by(order);
    v
}

fn names(v: &[&Named<'_>]) -> Vec<String> {
    v.iter().map(|(n, _)| n.to_string()).collect()
}

/// The per-cell quality of `cell`: the scorer's value, or 1/0 for pass/fail.
fn cell_quality(cell: &CellRecord, scorer: Option<&str>) -> Option<f64> {
    match scorer {
        Some(s) => cell.scores.get(s).map(|r| r.value),
        None => Some(if cell.passed { 1.0 } else { 0.0 }),
    }
}

/// Each case's quality for `variant`: the mean over its trials (trials
/// reduce the noise within a case; they are not new evidence).
fn per_case<'c>(
    cells: &'c [CellRecord],
    variant: &str,
    scorer: Option<&str>,
) -> BTreeMap<(&'c str, &'c str), f64> {
    let mut sums: BTreeMap<(&str, &str), (f64, u32)> = BTreeMap::new();
    for c in cells.iter().filter(|c| c.variant == variant) {
        if let Some(q) = cell_quality(c, scorer) {
            let entry = sums.entry((&c.dataset, &c.case)).or_insert((0.0, 0));
            *entry = (entry.0 + q, entry.1 + 1);
        }
    }
    sums.into_iter()
        .map(|(case, (sum, n))| (case, sum / f64::from(n)))
        .collect()
}

/// Whether scorer `name` gave every cell of `variants` the same value.
fn constant(cells: &[CellRecord], variants: [&str; 2], name: &str) -> bool {
    let mut values = cells
        .iter()
        .filter(|c| variants.contains(&c.variant.as_str()))
        .filter_map(|c| c.scores.get(name).map(|s| s.value));
    match values.next() {
        Some(first) => values.all(|v| v == first),
        None => true,
    }
}

/// `variant` against `other`, paired by case (each case's trials
/// averaged): decided by the sign-flip permutation test (exact McNemar on
/// pass/fail), with the t-test (only when the differences vary: never on
/// t = ∞) and Wilcoxon reported beside it.
fn pairwise(
    variant: &str,
    other: &str,
    cells: &[CellRecord],
    scorer: Option<&str>,
    alpha: f64,
) -> PairwiseTest {
    // A scorer that gives both variants one value everywhere can never
    // tell them apart, however many trials: the pass rate decides then.
    let scorer = scorer.filter(|s| !constant(cells, [variant, other], s));
    let theirs = per_case(cells, other, scorer);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (case, q) in per_case(cells, variant, scorer) {
        if let Some(o) = theirs.get(&case) {
            a.push(q);
            b.push(*o);
        }
    }
    let pairs = a.len();
    let differences: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
    let mean_difference = if pairs == 0 {
        0.0
    } else {
        differences.iter().sum::<f64>() / pairs as f64
    };
    let varies = differences.windows(2).any(|w| w[0] != w[1]);
    let t_test = varies
        .then(|| paired_t_test(&a, &b, Alternative::TwoSided).ok())
        .flatten();
    let wilcoxon = wilcoxon_signed_rank(&a, &b, &WilcoxonOptions::default()).ok();
    let sign_flip = (pairs > 0).then(|| sign_flip_test(&differences));
    let significant = mean_difference > 0.0 && sign_flip.is_some_and(|s| s.below(alpha));
    let power = (pairs > 0).then(|| Power::of(&differences, alpha));
    PairwiseTest {
        variant: variant.to_string(),
        other: other.to_string(),
        metric: scorer.unwrap_or("pass").to_string(),
        pairs,
        mean_difference,
        sign_flip,
        t_test,
        wilcoxon,
        significant,
        power,
    }
}

/// The recommended variant among the others, and the tests against them.
struct Standing<'a> {
    name: &'a str,
    point: &'a Point,
    points: &'a [Named<'a>],
    tests: &'a [PairwiseTest],
    /// What quality means: `pass` or a scorer's name.
    quality: &'a str,
    options: &'a VariantCompareOptions,
}

impl Standing<'_> {
    fn recommend(&self, frontier: &[&Named<'_>]) -> Recommendation {
        Recommendation {
            variant: self.name.to_string(),
            reason: self.reason(),
            tradeoffs: (frontier.iter().copied())
                .filter(|(n, _)| *n != self.name)
                .filter_map(|(other, o)| self.tradeoff(other, o))
                .collect(),
            confidence: self.confidence(),
        }
    }

    fn others(&self) -> usize {
        self.points.len() - 1
    }

    /// Better than every other variant on `metric` (known for each of them).
    fn beats_all(&self, metric: fn(&Point) -> Option<f64>) -> bool {
        let mine = metric(self.point);
        (self.points.iter()).all(|(n, o)| *n == self.name || below(mine, metric(o)).is_some())
    }

    /// Why, in a sentence: quality, cheapest, fastest, significance.
    fn reason(&self) -> String {
        let point = self.point;
        let mut reason = if self.quality == "pass" {
            format!("highest pass rate ({})", pct(point.pass_rate))
        } else {
            format!(
                "highest {} ({:.2}), pass rate {}",
                self.quality,
                point.quality,
                pct(point.pass_rate)
            )
        };
        if let Some(cost) = point
            .cost
            .filter(|_| self.others() > 0 && self.beats_all(|p| p.cost))
        {
            reason.push_str(&format!(", cheapest ({} per case)", usd(cost)));
        }
        if let Some(latency) =
            (point.latency).filter(|_| self.others() > 0 && self.beats_all(|p| p.latency))
        {
            reason.push_str(&format!(", fastest ({} avg)", ms(latency)));
        }
        reason.push_str(&self.significance_text());
        reason
    }

    /// The reason's last clause: what the tests say.
    fn significance_text(&self) -> String {
        let others = self.others();
        if others == 0 {
            return "; the only variant".to_string();
        }
        if self.tests.iter().all(|t| t.significant) {
            return format!(
                "; significantly better than {} (sign-flip permutation test over the cases, p < {})",
                if others == 1 {
                    self.tests[0].other.clone()
                } else {
                    format!("all {others} other variants")
                },
                self.options.alpha
            );
        }
        let weak: Vec<String> = (self.tests.iter())
            .filter(|t| !t.significant)
            .map(|t| {
                let p = t
                    .sign_flip
                    .map(|s| format!("sign-flip {}", p_text(s.p_value)))
                    .unwrap_or_else(|| "no paired cases".into());
                format!(
                    "{} ({p}, {} cases, on {})",
                    t.other,
                    t.pairs,
                    t.metric_label()
                )
            })
            .collect();
        format!(
            "; not significantly better than {}: more cases, not more trials, would tell",
            weak.join(", ")
        )
    }

    /// What frontier variant `other` does better, and worse (none when
    /// it does nothing better).
    fn tradeoff(&self, other: &str, o: &Point) -> Option<String> {
        let better = self.better_of(o);
        if better.is_empty() {
            return None;
        }
        let worse = self.worse_of(o);
        let mut line = format!("{other} is {}", join_and(&better));
        if !worse.is_empty() {
            line.push_str(&format!(" but {}", join_and(&worse)));
        }
        Some(line)
    }

    /// Where `o` beats the recommended variant (on what is known of both).
    fn better_of(&self, o: &Point) -> Vec<String> {
        let (point, quality) = (self.point, self.quality);
        let mut better = Vec::new();
        if let Some((theirs, mine)) = below(o.cost, point.cost) {
            let (theirs, mine) = apart(theirs, mine, usd_digits);
            better.push(format!("cheaper ({theirs} vs {mine} per case)"));
        }
        if let Some((theirs, mine)) = below(o.latency, point.latency) {
            let (theirs, mine) = apart(theirs, mine, duration_digits);
            better.push(format!("faster ({theirs} vs {mine} avg)"));
        }
        if o.quality > point.quality && quality != "pass" {
            better.push(format!(
                "higher {quality} ({:.2} vs {:.2})",
                o.quality, point.quality
            ));
        }
        better
    }

    /// Where `o` loses to the recommended variant.
    fn worse_of(&self, o: &Point) -> Vec<String> {
        let (point, quality) = (self.point, self.quality);
        let mut worse = Vec::new();
        if o.pass_rate < point.pass_rate {
            worse.push(format!(
                "passes less ({} vs {})",
                pct(o.pass_rate),
                pct(point.pass_rate)
            ));
        }
        if o.quality < point.quality && quality != "pass" {
            worse.push(format!(
                "lower {quality} ({:.2} vs {:.2})",
                o.quality, point.quality
            ));
        }
        if let Some((mine, theirs)) = below(point.cost, o.cost) {
            let (theirs, mine) = apart(theirs, mine, usd_digits);
            worse.push(format!("costs more ({theirs} vs {mine})"));
        }
        if let Some((mine, theirs)) = below(point.latency, o.latency) {
            let (theirs, mine) = apart(theirs, mine, duration_digits);
            worse.push(format!("is slower ({theirs} vs {mine})"));
        }
        worse
    }

    /// High when significant against every other on enough pairs, medium
    /// when significant on fewer or dominating every other, else low.
    fn confidence(&self) -> Confidence {
        let others = self.others();
        let dominates_all = (self.points.iter())
            .filter(|(n, _)| *n != self.name)
            .all(|(_, o)| self.point.dominates(o));
        if others > 0 && self.tests.iter().all(|t| t.significant) {
            if (self.tests.iter()).all(|t| t.pairs >= self.options.high_confidence_pairs) {
                Confidence::High
            } else {
                Confidence::Medium
            }
        } else if others > 0 && dominates_all {
            Confidence::Medium
        } else {
            Confidence::Low
        }
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn quality_is_the_pass_rate_unless_a_primary_scorer_is_named() {
        use crate::eval::compare::quality;
        use crate::eval::{CellRecord, stats::summarize};
        let mut c = CellRecord::new("v", "case");
        c.passed = true;
        let s = &summarize(&[c])[0];
        assert_eq!(quality(s, None), 1.0);
        assert_eq!(quality(s, Some("findings")), 0.0);
    }

    #[test]
    fn the_primary_scorer_decides_only_where_it_varies() {
        use crate::eval::compare::deciding_scorer;
        use crate::eval::results::ScoreRecord;
        use crate::eval::{CellRecord, stats::summarize};
        let cell = |variant: &str, value: f64| {
            let mut c = CellRecord::new(variant, "case");
            let score = ScoreRecord {
                pass: true,
                value,
                unit: None,
                detail: None,
                borderline: false,
            };
            c.scores.insert("findings".into(), score);
            c
        };
        let varies = summarize(&[cell("a", 1.0), cell("b", 0.5)]);
        assert_eq!(deciding_scorer(&varies, Some("findings")), Some("findings"));
        let constant = summarize(&[cell("a", 1.0), cell("b", 1.0)]);
        assert_eq!(deciding_scorer(&constant, Some("findings")), None);
        assert_eq!(deciding_scorer(&varies, None), None);
    }

    #[test]
    fn three_cases_rank_the_variants_but_name_no_clear_winner() {
        use crate::eval::CellRecord;
        use crate::eval::compare::{VariantCompareOptions, WinnerVerdict, compare_variants};
        use crate::eval::stats::summarize;
        let mut cells = Vec::new();
        for (variant, passes, cost) in [("big", 3, 0.05), ("small", 1, 0.01)] {
            for case in 0..3 {
                let mut c = CellRecord::new(variant, format!("case-{case}"));
                c.passed = case < passes;
                c.metrics.cost_usd = cost;
                cells.push(c);
            }
        }
        let cmp = compare_variants(
            &summarize(&cells),
            &cells,
            &VariantCompareOptions::default(),
        );
        assert_eq!(cmp.by_pass_rate, ["big", "small"]);
        assert_eq!(cmp.by_cost, ["small", "big"]);
        assert_eq!(cmp.pareto_frontier, ["big", "small"]);
        let rec = cmp.recommendation.unwrap();
        assert_eq!(rec.variant, "big");
        // Three cases cannot show significance.
        assert_eq!(cmp.verdict, WinnerVerdict::NoClearWinner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::stats::summarize;

    /// Six cells per variant: `played` passes half its cells at $0.02 and
    /// 1.5s each; every cell of `unplayable` could not be played back (its
    /// session took nothing and spent nothing).
    fn cells() -> Vec<CellRecord> {
        let mut cells = Vec::new();
        for case in 0..6 {
            let mut c = CellRecord::new("played", format!("case-{case}"));
            c.passed = case % 2 == 0;
            c.metrics.latency_ms = 1500;
            c.metrics.cost_usd = 0.02;
            cells.push(c);
            let mut c = CellRecord::new("unplayable", format!("case-{case}"));
            c.unplayable = true;
            c.error = Some("playback: no recording `x`".into());
            cells.push(c);
        }
        cells
    }

    /// A variant none of whose cells could be played back is neither the
    /// cheapest nor the fastest, is ranked on neither, is on no frontier and
    /// is recommended by no reason: its figures are unknown, not $0 and 0ms
    /// (issue 36).
    #[test]
    fn a_variant_that_could_not_be_played_back_is_never_cheapest_fastest_or_on_the_frontier() {
        let cells = cells();
        let cmp = compare_variants(
            &summarize(&cells),
            &cells,
            &VariantCompareOptions::default(),
        );
        assert_eq!(cmp.by_cost, ["played"]);
        assert_eq!(cmp.by_latency, ["played"]);
        assert_eq!(cmp.cost_unknown, ["unplayable"]);
        assert_eq!(cmp.latency_unknown, ["unplayable"]);
        assert_eq!(cmp.pareto_frontier, ["played"]);
        let rec = cmp.recommendation.unwrap();
        assert_eq!(rec.variant, "played");
        for claim in ["cheapest", "fastest"] {
            assert!(!rec.reason.contains(claim), "{}", rec.reason);
        }
        assert!(rec.tradeoffs.is_empty(), "{:?}", rec.tradeoffs);
        let json = serde_json::to_value(cmp_of(&cells)).unwrap();
        assert_eq!(json["latencyUnknown"], serde_json::json!(["unplayable"]));
    }

    /// Even when it passed more (a stale recording can leave a cell
    /// passing no check that needed the call), a variant with no cell
    /// measured is never placed on the frontier, nor recommended from it.
    #[test]
    fn a_variant_with_no_cell_measured_is_not_placed_however_it_scored() {
        let mut cells = cells();
        for c in cells.iter_mut().filter(|c| c.variant == "unplayable") {
            c.passed = true;
        }
        let cmp = cmp_of(&cells);
        assert_eq!(cmp.pareto_frontier, ["played"]);
        assert_eq!(cmp.recommendation.unwrap().variant, "played");
        assert_eq!(cmp.by_pass_rate, ["unplayable", "played"]);
    }

    fn cmp_of(cells: &[CellRecord]) -> VariantComparison {
        compare_variants(&summarize(cells), cells, &VariantCompareOptions::default())
    }
}
