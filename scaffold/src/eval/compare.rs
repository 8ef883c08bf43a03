//! Comparing results: variants of one run against each other
//! ([`compare_variants`]: rankings, Pareto frontier, significance,
//! recommendation) and a candidate run against a baseline ([`compare`]:
//! regressions, improvements, verdict, whether to block).

mod baseline;
mod variants;

pub use baseline::{
    CompareOptions, ComparedRun, Comparison, ComparisonSummary, Improvement, ImprovementKind,
    Regression, RegressionKind, Severity, Side, Verdict, compare,
};
pub use variants::{
    Confidence, PairwiseTest, Recommendation, VariantCompareOptions, VariantComparison,
    WinnerVerdict, compare_variants,
};

/// Scorers that measure validity or resources rather than quality.
const NOT_QUALITY: &[&str] = &["output-valid", "latency", "cost", "tokens"];

/// The scorer that stands for quality: the first one (in the eval's order)
/// that is not `output-valid`, `latency`, `cost` or `tokens`; `None` when
/// there is none (quality is then the pass rate).
///
/// ```
/// use scaffold::eval::compare::primary_scorer;
/// assert_eq!(primary_scorer(["output-valid", "plan-quality", "cost"]), Some("plan-quality"));
/// assert_eq!(primary_scorer(["latency", "cost"]), None);
/// ```
pub fn primary_scorer<'a>(scorers: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    scorers.into_iter().find(|s| !NOT_QUALITY.contains(s))
}
