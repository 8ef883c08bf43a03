//! Scorers: functions that grade a session.
//!
//! A scorer reads a finished session (state, signals, output, metrics) and
//! returns a [`Score`]: a value, whether it passes, and an optional unit and
//! detail. Scorers are not eval-specific: they grade stored sessions too.

mod builtin;

pub use builtin::{CustomScore, cost, custom, latency, output_valid};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::metrics::Metrics;
use crate::signal::Signal;

/// The grade one scorer gives one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// The scorer's name.
    pub name: String,
    /// Whether the session passes this scorer.
    pub pass: bool,
    /// The score (0.0–1.0 for quality scores, or a raw metric).
    pub value: f64,
    /// Unit of `value` (`ms`, `usd`, ...), if it is a raw metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Why, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What a scorer sees of a session.
#[derive(Debug, Clone, Copy)]
pub struct ScorerContext<'a, S> {
    /// The final state.
    pub state: &'a S,
    /// Every signal of the session.
    pub signals: &'a [Signal],
    /// The session's output.
    pub output: Option<&'a Value>,
    /// Latency, tokens, cost, activations.
    pub metrics: &'a Metrics,
    /// The session id.
    pub session_id: &'a str,
    /// The variant, when run as part of an eval.
    pub variant: Option<&'a str>,
    /// The run's error message, if it failed.
    pub error: Option<&'a str>,
}

/// Grades a session.
#[async_trait]
pub trait Scorer<S>: Send + Sync {
    /// The scorer's name (a column of the results table).
    fn name(&self) -> &str;

    /// Grade one session.
    async fn score(&self, ctx: &ScorerContext<'_, S>) -> Score;
}
