//! Comparing results: variants of one run against each other
//! ([`compare_variants`]: rankings, Pareto frontier, significance,
//! recommendation) and a candidate run against a baseline ([`compare`]:
//! regressions, improvements, verdict, whether to block).

mod baseline;
mod variants;

pub use baseline::{
    CompareOptions, Comparison, ImprovementKind, Regression, RegressionKind, Severity, Verdict,
    compare,
};
pub use variants::{
    Confidence, PairwiseTest, VariantCompareOptions, VariantComparison, WinnerVerdict,
    compare_variants, deciding_scorer, quality,
};
