//! `llm.judge`: a model grades the output against criteria.
//!
//! The judge is called through the [`Provider`] trait like every other model
//! call, so it is recorded and played back: give the [`Judge`] a
//! [`RecordingId`] whose node is `judge`; the k-th `llm.judge` assertion of an
//! evaluation (counting depth-first, cached or not) uses invocation
//! `base + k`, so numbering does not depend on what the cache held.
//!
//! The model is asked for structured output `{score, reasoning}` (score in
//! 0..=1) with an [`OutputSchema`]. Verdicts are cached by a SHA-256 of the
//! model, rubric, criteria and output text: [`InMemoryJudgeCache`] by
//! default (one per [`Judge`]), or any [`JudgeCache`] (the persistent one in
//! the store implements the same trait).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::context::EvalContext;
use super::display;
use super::output::text;
use super::path::Path;
use super::result::Outcome;
use crate::provider::{
    CallContext, CompletionRequest, Message, OutputSchema, Provider, ProviderOptions, RecordingId,
};

/// The `llm.judge` assertion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmJudge {
    /// What to evaluate, one criterion per entry.
    pub criteria: Vec<String>,
    /// Detailed grading instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric: Option<String>,
    /// Pass when the score (0..=1) is at least this.
    pub min_score: f64,
    /// The judge model; without one, the judge's default provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Sampling temperature (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Path into the output to judge (default: all of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// A judge's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeVerdict {
    /// 0..=1.
    pub score: f64,
    /// Why.
    pub reasoning: String,
    /// The model that judged.
    pub model: String,
}

/// The cache key of a verdict: hex SHA-256 over model, rubric, criteria and
/// output, each length-prefixed so that no two inputs collide by concatenation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct JudgeCacheKey(pub String);

impl JudgeCacheKey {
    /// The key of one judgement.
    ///
    /// ```
    /// use scaffold::assert::JudgeCacheKey;
    /// let a = JudgeCacheKey::new("gpt-4o", None, &["is polite".into()], "hello");
    /// let b = JudgeCacheKey::new("gpt-4o", None, &["is polite".into()], "hello!");
    /// assert_ne!(a, b);
    /// assert_eq!(a.0.len(), 64);
    /// ```
    pub fn new(model: &str, rubric: Option<&str>, criteria: &[String], output: &str) -> Self {
        let mut h = Sha256::new();
        let mut field = |tag: &str, s: &str| {
            h.update(tag.as_bytes());
            h.update((s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        };
        field("model", model);
        field("rubric", rubric.unwrap_or(""));
        for c in criteria {
            field("criterion", c);
        }
        field("output", output);
        let digest = h.finalize();
        let mut hex = String::with_capacity(64);
        for b in digest {
            let _ = write!(hex, "{b:02x}");
        }
        JudgeCacheKey(hex)
    }
}

/// Where verdicts are kept between calls.
pub trait JudgeCache: Send + Sync {
    /// The verdict stored under `key`, if any.
    fn get(&self, key: &JudgeCacheKey) -> Option<JudgeVerdict>;
    /// Store `verdict` under `key`.
    fn set(&self, key: &JudgeCacheKey, verdict: &JudgeVerdict);
}

/// A [`JudgeCache`] in memory.
#[derive(Debug, Default)]
pub struct InMemoryJudgeCache {
    map: Mutex<HashMap<JudgeCacheKey, JudgeVerdict>>,
}

impl InMemoryJudgeCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many verdicts it holds.
    pub fn len(&self) -> usize {
        self.map.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl JudgeCache for InMemoryJudgeCache {
    fn get(&self, key: &JudgeCacheKey) -> Option<JudgeVerdict> {
        self.map.lock().ok()?.get(key).cloned()
    }

    fn set(&self, key: &JudgeCacheKey, verdict: &JudgeVerdict) {
        if let Ok(mut m) = self.map.lock() {
            m.insert(key.clone(), verdict.clone());
        }
    }
}

/// The model that grades `llm.judge` assertions.
///
/// ```
/// use scaffold::assert::{Assertion, EvalContext, Judge, evaluate_all};
/// use scaffold::provider::{RecordingId, ScriptedProvider, ScriptedReply};
/// use serde_json::json;
///
/// let provider = ScriptedProvider::new("judge-model")
///     .reply(ScriptedReply::json(json!({"score": 0.9, "reasoning": "polite and correct"})));
/// let judge = Judge::new(provider)
///     .recording_id(RecordingId::new("ds", "case-1", "baseline", "judge", 0));
/// let ctx = EvalContext::new(&[]).output(json!("Thank you! The answer is 4.")).judge(&judge);
/// let a = Assertion::llm_judge(["is polite", "answers 2+2 correctly"], 0.7);
/// let results = tokio::runtime::Runtime::new().unwrap().block_on(evaluate_all(&[a], &ctx));
/// assert!(results[0].passed, "{}", results[0].message);
/// ```
#[derive(Clone)]
pub struct Judge {
    provider: Arc<dyn Provider>,
    by_model: Vec<(String, Arc<dyn Provider>)>,
    recording: Option<RecordingId>,
    cache: Arc<dyn JudgeCache>,
}

impl std::fmt::Debug for Judge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Judge")
            .field("model", &self.provider.model())
            .field(
                "models",
                &self.by_model.iter().map(|(m, _)| m).collect::<Vec<_>>(),
            )
            .field("recording", &self.recording)
            .finish_non_exhaustive()
    }
}

/// The JSON schema the judge answers in.
pub fn verdict_schema() -> OutputSchema {
    OutputSchema {
        name: "judgement".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "score": {"type": "number", "minimum": 0, "maximum": 1},
                "reasoning": {"type": "string"}
            },
            "required": ["score", "reasoning"],
            "additionalProperties": false
        }),
    }
}

const SYSTEM: &str = "You are an impartial evaluator. Grade the output against every \
criterion (and the rubric, if there is one). Answer only with JSON: \
{\"score\": a number from 0 (fails every criterion) to 1 (meets all of them), \
\"reasoning\": one short paragraph}.";

impl Judge {
    /// A judge calling `provider`, with a fresh in-memory cache.
    pub fn new(provider: impl Provider + 'static) -> Self {
        Judge::from_arc(Arc::new(provider))
    }

    /// A judge calling a shared provider.
    pub fn from_arc(provider: Arc<dyn Provider>) -> Self {
        Judge {
            provider,
            by_model: Vec::new(),
            recording: None,
            cache: Arc::new(InMemoryJudgeCache::new()),
        }
    }

    /// Use `provider` for assertions that ask for `model`.
    pub fn with_model(mut self, model: impl Into<String>, provider: Arc<dyn Provider>) -> Self {
        self.by_model.push((model.into(), provider));
        self
    }

    /// The recording id of the first judge call (node `judge`); later ones
    /// count up from its invocation.
    pub fn recording_id(mut self, id: RecordingId) -> Self {
        self.recording = Some(id);
        self
    }

    /// Keep verdicts in `cache` (share one between judges to share verdicts).
    ///
    /// A verdict found in the cache makes no provider call, so no recording
    /// is written for it in record mode. A cache shared between cells that
    /// run in a different order in playback can then miss a recording; share
    /// one only where that order is fixed, or through a persistent cache
    /// that travels with the recordings.
    pub fn cache(mut self, cache: Arc<dyn JudgeCache>) -> Self {
        self.cache = cache;
        self
    }

    fn provider_for(&self, model: Option<&str>) -> Result<&Arc<dyn Provider>, String> {
        let Some(model) = model else {
            return Ok(&self.provider);
        };
        if self.provider.model() == model {
            return Ok(&self.provider);
        }
        self.by_model
            .iter()
            .find(|(m, _)| m == model)
            .map(|(_, p)| p)
            .ok_or_else(|| {
                let mut known = vec![self.provider.model().to_string()];
                known.extend(self.by_model.iter().map(|(m, _)| m.clone()));
                format!(
                    "the judge has no provider for model `{model}` (it has: {}); add one with Judge::with_model",
                    known.join(", ")
                )
            })
    }

    fn recording_for(&self, k: u32) -> Option<String> {
        self.recording.as_ref().map(|base| {
            let mut id = base.clone();
            id.invocation = base.invocation.saturating_add(k);
            id.to_string()
        })
    }
}

fn prompt(a: &LlmJudge, output: &str) -> String {
    let mut p = String::from("Criteria:\n");
    for c in &a.criteria {
        p.push_str("- ");
        p.push_str(c);
        p.push('\n');
    }
    if let Some(r) = &a.rubric {
        p.push_str("\nRubric:\n");
        p.push_str(r);
        p.push('\n');
    }
    p.push_str("\nOutput to grade:\n<output>\n");
    p.push_str(output);
    p.push_str("\n</output>\n");
    p
}

/// Read `{score, reasoning}` out of the judge's text.
fn parse_verdict(text: &str, model: &str) -> Result<JudgeVerdict, String> {
    let t = text.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .and_then(|r| r.strip_suffix("```"))
        .unwrap_or(t)
        .trim();
    let v: Value = serde_json::from_str(t).map_err(|e| {
        format!(
            "the judge did not answer with JSON ({e}): {:?}",
            display::cut(text, 200)
        )
    })?;
    let score = match v.get("score") {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    }
    .ok_or_else(|| {
        format!(
            "the judge's answer has no numeric `score`: {}",
            display::value(&v)
        )
    })?;
    if !(0.0..=1.0).contains(&score) {
        return Err(format!(
            "the judge's score {score} is outside 0..=1: {}",
            display::value(&v)
        ));
    }
    let reasoning = v
        .get("reasoning")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    Ok(JudgeVerdict {
        score,
        reasoning,
        model: model.to_string(),
    })
}

/// Evaluate one `llm.judge`, the `k`-th of its evaluation.
pub(crate) async fn run(a: &LlmJudge, ctx: &EvalContext<'_>, k: u32) -> Outcome {
    let Some(judge) = ctx.get_judge() else {
        return Outcome::fail(
            "llm.judge needs a judge: give the context one with EvalContext::judge(&Judge::new(provider))",
        );
    };
    let provider = match judge.provider_for(a.model.as_deref()) {
        Ok(p) => p,
        Err(e) => return Outcome::fail(e),
    };
    let Some(output) = ctx.get_output() else {
        return Outcome::fail("the run produced no output to judge");
    };
    let target = match a.path.as_deref().filter(|p| !p.is_empty()) {
        None => output,
        Some(p) => match Path::parse(p) {
            Err(e) => return Outcome::fail(format!("invalid path: {e}")),
            Ok(path) => match path.resolve(output) {
                Some(v) => v,
                None => {
                    return Outcome::fail(format!("the output has nothing at `{p}` to judge"));
                }
            },
        },
    };
    let output_text = text(target);
    let model = provider.model().to_string();
    let key = JudgeCacheKey::new(&model, a.rubric.as_deref(), &a.criteria, &output_text);
    let expected = json!({"minScore": a.min_score, "criteria": a.criteria});

    let (verdict, cached) = match judge.cache.get(&key) {
        Some(v) => (v, true),
        None => {
            let request = CompletionRequest {
                system: Some(SYSTEM.to_string()),
                messages: vec![Message::user(prompt(a, &output_text))],
                output_schema: Some(verdict_schema()),
                options: ProviderOptions {
                    temperature: Some(a.temperature.unwrap_or(0.0)),
                    ..ProviderOptions::default()
                },
                context: CallContext {
                    recording_id: judge.recording_for(k),
                },
                ..CompletionRequest::default()
            };
            let response = match provider.complete(&request, &mut ()).await {
                Ok(r) => r,
                Err(e) => {
                    return Outcome::fail(format!("the judge call to {model} failed: {e}"))
                        .expected(expected);
                }
            };
            match parse_verdict(&response.text, &model) {
                Ok(v) => {
                    judge.cache.set(&key, &v);
                    (v, false)
                }
                Err(e) => return Outcome::fail(e).expected(expected),
            }
        }
    };
    let passed = verdict.score >= a.min_score;
    let message = format!(
        "judge {model}{} scored {}, {} {}: {}",
        if cached { " (cached)" } else { "" },
        display::num(verdict.score),
        if passed {
            "at least"
        } else {
            "below the minimum"
        },
        display::num(a.min_score),
        display::cut(&verdict.reasoning, 300)
    );
    Outcome::new(passed, message)
        .expected(expected)
        .actual(json!({
            "score": verdict.score,
            "reasoning": verdict.reasoning,
            "model": verdict.model,
            "cached": cached,
        }))
}
