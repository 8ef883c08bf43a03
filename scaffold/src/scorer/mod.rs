//! Scorers: functions that grade a session.
//!
//! A scorer reads a finished session (state, signals, output, metrics) and
//! returns a [`Score`]: a value, whether it passes, and an optional unit and
//! detail. Scorers are not eval-specific: they grade stored sessions too.
//!
//! Built in:
//!
//! | scorer | value | passes when |
//! |---|---|---|
//! | [`output_valid`] | 1 or 0 | the run ended without error and with an output |
//! | [`latency`], [`cost`], [`tokens`] | 1 at or under the ideal, falling linearly to 0 at the max | the metric is at or under the max |
//! | [`similarity`] | exact, contains, normalized Levenshtein, token cosine or embedding cosine | the value is at least the minimum |
//! | [`llm_judge`] | the judge's score, 0..=1 | the score is at least the minimum |
//! | [`custom`] | what the closure returns | the closure says so, else value ≥ 0.5 |

mod custom;
mod embed;
mod error;
mod judge;
mod judge_cache;
mod metric;
mod similarity;
mod valid;

pub use custom::{Custom, CustomScore, custom};
pub use embed::Embedder;
pub use embed::{ScriptedEmbedCall, ScriptedEmbedder};
pub use error::ScorerError;
pub use judge::{LlmJudgeScorer, llm_judge};
pub use judge_cache::SqliteJudgeCache;
pub use metric::{MetricScorer, TokensScorer, cost, latency, tokens};
pub use similarity::{Algorithm, Expected, Similarity, similarity};
pub use valid::{OutputValid, output_valid};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::metrics::Metrics;
use crate::provider::RecordingId;
use crate::signal::Signal;
use crate::store::Store;

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
    /// A judge's score within the borderline margin of its threshold.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub borderline: bool,
}

impl Score {
    /// A score without unit or detail.
    ///
    /// ```
    /// let s = scaffold::scorer::Score::new("quality", true, 0.9).detail("three of four criteria");
    /// assert_eq!((s.pass, s.value, s.detail.as_deref()), (true, 0.9, Some("three of four criteria")));
    /// ```
    pub fn new(name: impl Into<String>, pass: bool, value: f64) -> Score {
        Score {
            name: name.into(),
            pass,
            value,
            unit: None,
            detail: None,
            borderline: false,
        }
    }

    /// With this detail.
    pub fn detail(mut self, detail: impl Into<String>) -> Score {
        self.detail = Some(detail.into());
        self
    }

    /// With this unit.
    pub fn unit(mut self, unit: impl Into<String>) -> Score {
        self.unit = Some(unit.into());
        self
    }

    /// A failing score of 0 that says why (a scorer that could not grade).
    pub fn failed(name: impl Into<String>, why: impl Into<String>) -> Score {
        Score::new(name, false, 0.0).detail(why)
    }
}

/// What a scorer sees of a session.
///
/// Build one with [`ScorerContext::new`] and the `with_*` methods (the eval
/// runner fills every field):
///
/// ```
/// use scaffold::metrics::Metrics;
/// use scaffold::scorer::ScorerContext;
/// use serde_json::json;
/// let output = json!("4");
/// let input = json!({"question": "2+2?"});
/// let metrics = Metrics::default();
/// let ctx = ScorerContext::new(&(), &[], &metrics)
///     .with_output(&output)
///     .with_input(&input)
///     .with_cell("qa.v1", "sum", "small", None);
/// assert_eq!(ctx.recording_id("similarity", 0).unwrap().to_string(),
///            "eval__qa.v1__sum__small__similarity__inv0");
/// ```
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
    /// The case's input, when run as part of an eval.
    pub input: Option<&'a Value>,
    /// The dataset of the case (its id or name), when run as part of an eval.
    pub dataset: Option<&'a str>,
    /// The case id, when run as part of an eval.
    pub case: Option<&'a str>,
    /// The trial, when the eval runs more than one.
    pub trial: Option<u32>,
    /// The session store, when there is one (the LLM judge keeps its cache there).
    pub store: Option<&'a Store>,
}

impl<'a, S> ScorerContext<'a, S> {
    /// A context of a session outside any eval: no output, input, variant or cell.
    pub fn new(state: &'a S, signals: &'a [Signal], metrics: &'a Metrics) -> Self {
        ScorerContext {
            state,
            signals,
            output: None,
            metrics,
            session_id: "",
            variant: None,
            error: None,
            input: None,
            dataset: None,
            case: None,
            trial: None,
            store: None,
        }
    }

    /// With the session's output.
    pub fn with_output(mut self, output: &'a Value) -> Self {
        self.output = Some(output);
        self
    }

    /// With the run's error.
    pub fn with_error(mut self, error: &'a str) -> Self {
        self.error = Some(error);
        self
    }

    /// With the case's input.
    pub fn with_input(mut self, input: &'a Value) -> Self {
        self.input = Some(input);
        self
    }

    /// With the session id.
    pub fn with_session_id(mut self, id: &'a str) -> Self {
        self.session_id = id;
        self
    }

    /// With the store.
    pub fn with_store(mut self, store: &'a Store) -> Self {
        self.store = Some(store);
        self
    }

    /// As the cell `dataset` × `case` × `variant` (× `trial`) of an eval.
    pub fn with_cell(
        mut self,
        dataset: &'a str,
        case: &'a str,
        variant: &'a str,
        trial: Option<u32>,
    ) -> Self {
        self.dataset = Some(dataset);
        self.case = Some(case);
        self.variant = Some(variant);
        self.trial = trial;
        self
    }

    /// The recording id of a model call made while scoring, by `node` (the
    /// scorer's name, say), when the context knows its cell.
    pub fn recording_id(&self, node: &str, invocation: u32) -> Option<RecordingId> {
        Some(
            RecordingId::new(self.dataset?, self.case?, self.variant?, node, invocation)
                .with_trial(self.trial),
        )
    }
}

/// Grades a session.
#[async_trait]
pub trait Scorer<S>: Send + Sync {
    /// The scorer's name (a column of the results table).
    fn name(&self) -> &str;

    /// Grade one session.
    async fn score(&self, ctx: &ScorerContext<'_, S>) -> Score;

    /// The environment variable of the API key a model this scorer calls
    /// lacks, if it calls one (checked before record mode calls anything).
    fn missing_key(&self) -> Option<&'static str> {
        None
    }
}

/// The text of a value as scorers compare it: a string as is, anything else
/// as compact JSON; `None` for no value.
pub(crate) fn value_text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}
