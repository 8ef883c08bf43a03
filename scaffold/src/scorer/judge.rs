//! `llm_judge`: a model grades the output against criteria and a rubric.
//!
//! This is the `llm.judge` assertion's [`Judge`] behind the [`Scorer`]
//! trait: the same prompt, structured answer, parsing and cache key. The
//! call is recorded and played back like any other, under the recording id
//! of the cell with node `scorer-{name}`.
//!
//! A score within [`borderline_margin`](LlmJudgeScorer::borderline_margin)
//! of the minimum is marked `borderline`; with [`reask`](LlmJudgeScorer::reask)
//! the judge is asked again (recording node `scorer-{name}-reask{i}`) and
//! the value is the mean of every score.
//!
//! Verdicts are cached in two layers: in memory for the scorer's lifetime,
//! and persistently in the `judge_cache` table of the session store's file
//! (see [`SqliteJudgeCache`]), so re-running a suite does not pay for
//! verdicts it already has. When recording (`SCAFFOLD_MODE=record`) the
//! cache is written but not read, so every cell's judge call is recorded.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use serde_json::Value;

use super::judge_cache::{LayeredJudgeCache, SqliteJudgeCache};
use super::{Score, Scorer, ScorerContext};
use crate::assert::Kind;
use crate::assert::{
    Assertion, EvalContext, InMemoryJudgeCache, Judge, JudgeCache, LlmJudge, evaluate_async,
};
use crate::provider::Provider;
use crate::provider::recorder::RecorderMode;

/// Grade the output with a judge model against `criteria`.
///
/// Value: the judge's score (0..=1); passes at or above the minimum
/// (default 0.7). Named `llm-judge` unless [`named`](LlmJudgeScorer::named).
///
/// ```
/// use scaffold::metrics::Metrics;
/// use scaffold::provider::{ScriptedProvider, ScriptedReply};
/// use scaffold::scorer::{llm_judge, Scorer, ScorerContext};
/// use serde_json::json;
///
/// let judge_model = ScriptedProvider::new("judge-model")
///     .reply(ScriptedReply::json(json!({"score": 0.8, "reasoning": "mostly correct"})));
/// let scorer = llm_judge(judge_model)
///     .criteria(["answers the question", "is polite"])
///     .rubric("1.0: both; 0.5: one; 0: neither")
///     .min_score(0.75)
///     .named("helpfulness");
/// let metrics = Metrics::default();
/// let output = json!("Thanks for asking! It is 4.");
/// let ctx = ScorerContext::new(&(), &[], &metrics).with_output(&output);
/// let rt = tokio::runtime::Runtime::new().unwrap();
/// let s = rt.block_on(scorer.score(&ctx));
/// assert_eq!((s.name.as_str(), s.pass, s.value), ("helpfulness", true, 0.8));
/// // The same output again: answered from the cache, no second call.
/// assert_eq!(rt.block_on(scorer.score(&ctx)).value, 0.8);
/// ```
pub fn llm_judge(provider: impl Provider + 'static) -> LlmJudgeScorer {
    LlmJudgeScorer::from_arc(Arc::new(provider))
}

/// See [`llm_judge`].
pub struct LlmJudgeScorer {
    name: String,
    provider: Arc<dyn Provider>,
    spec: LlmJudge,
    memory: Arc<InMemoryJudgeCache>,
    /// Set by [`LlmJudgeScorer::cache`]; else opened from the first store seen.
    explicit: Option<Arc<dyn JudgeCache>>,
    persistent: OnceLock<Option<Arc<dyn JudgeCache>>>,
    use_store: bool,
}

impl std::fmt::Debug for LlmJudgeScorer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmJudgeScorer")
            .field("name", &self.name)
            .field("model", &self.provider.model())
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl LlmJudgeScorer {
    /// A judge scorer calling a shared provider.
    pub fn from_arc(provider: Arc<dyn Provider>) -> Self {
        LlmJudgeScorer {
            name: "llm-judge".into(),
            provider,
            spec: LlmJudge {
                criteria: Vec::new(),
                rubric: None,
                min_score: 0.7,
                model: None,
                temperature: None,
                path: None,
                borderline_margin: None,
                reask: None,
            },
            memory: Arc::new(InMemoryJudgeCache::new()),
            explicit: None,
            persistent: OnceLock::new(),
            use_store: true,
        }
    }

    /// What to evaluate, one criterion per entry (added to any before).
    pub fn criteria<I, T>(mut self, criteria: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.spec
            .criteria
            .extend(criteria.into_iter().map(Into::into));
        self
    }

    /// Detailed grading instructions.
    pub fn rubric(mut self, rubric: impl Into<String>) -> Self {
        self.spec.rubric = Some(rubric.into());
        self
    }

    /// Pass at or above this score (default 0.7).
    pub fn min_score(mut self, min: f64) -> Self {
        self.spec.min_score = min;
        self
    }

    /// Judge the value at this path of the output (default: all of it).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.spec.path = Some(path.into());
        self
    }

    /// Sampling temperature of the judge (default 0).
    pub fn temperature(mut self, t: f64) -> Self {
        self.spec.temperature = Some(t);
        self
    }

    /// Scores within `margin` of the minimum are borderline (default 0.05;
    /// bounds included; see [`Borderline`](crate::assert::Borderline)).
    pub fn borderline_margin(mut self, margin: f64) -> Self {
        self.spec.borderline_margin = Some(margin);
        self
    }

    /// When borderline, ask the judge `n` more times and decide on the mean
    /// of all the scores (each ask its own recording and cache entry).
    pub fn reask(mut self, n: u32) -> Self {
        self.spec.reask = Some(n);
        self
    }

    /// Score under another name.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Keep verdicts persistently in `cache` instead of the store's database.
    pub fn cache(mut self, cache: Arc<dyn JudgeCache>) -> Self {
        self.explicit = Some(cache);
        self
    }

    /// Keep verdicts in memory only (no `judge_cache` table).
    pub fn memory_only(mut self) -> Self {
        self.explicit = None;
        self.use_store = false;
        self
    }

    fn persistent(&self, ctx_store: Option<&crate::store::Store>) -> Option<Arc<dyn JudgeCache>> {
        if let Some(c) = &self.explicit {
            return Some(c.clone());
        }
        if !self.use_store {
            return None;
        }
        let store = ctx_store?;
        self.persistent
            .get_or_init(|| match SqliteJudgeCache::for_store(store) {
                Ok(c) => c.map(|c| Arc::new(c) as Arc<dyn JudgeCache>),
                Err(e) => {
                    eprintln!("scaffold: {e} (judging without the persistent cache)");
                    None
                }
            })
            .clone()
    }
}

#[async_trait]
impl<S: Sync> Scorer<S> for LlmJudgeScorer {
    fn name(&self) -> &str {
        &self.name
    }

    fn missing_key(&self) -> Option<&'static str> {
        self.provider.missing_key()
    }

    async fn score(&self, ctx: &ScorerContext<'_, S>) -> Score {
        if self.spec.criteria.is_empty() && self.spec.rubric.is_none() {
            return Score::failed(
                self.name.clone(),
                "the judge has no criteria and no rubric: add some with .criteria([...])",
            );
        }
        let Some(output) = ctx.output else {
            return Score::failed(self.name.clone(), "the run produced no output to judge");
        };
        let read_cache = !matches!(RecorderMode::from_env(), Ok(RecorderMode::Record));
        let cache =
            LayeredJudgeCache::new(self.memory.clone(), self.persistent(ctx.store), read_cache);
        // The trial is part of every cache key: trials never share a verdict.
        let mut judge = Judge::from_arc(self.provider.clone())
            .cache(Arc::new(cache))
            .trial(ctx.trial);
        if let Some(id) = ctx.recording_id(&format!("scorer-{}", self.name), 0) {
            judge = judge.recording_id(id);
        }
        let ectx = EvalContext::new(ctx.signals)
            .output_ref(output)
            .judge(&judge);
        let result = evaluate_async(&Assertion(Kind::LlmJudge(self.spec.clone())), &ectx).await;
        let value = result
            .actual
            .as_ref()
            .and_then(|a| a.get("score"))
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        Score {
            name: self.name.clone(),
            pass: result.passed,
            value,
            unit: None,
            detail: Some(result.message),
            borderline: result.borderline,
        }
    }
}
