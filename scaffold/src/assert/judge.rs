//! `llm.judge`: a model grades the output against criteria.
//!
//! The judge is called through the [`Provider`] trait like every other model
//! call, so it is recorded and played back: give the [`Judge`] a
//! [`RecordingId`] whose node is `judge`; the k-th `llm.judge` assertion of an
//! evaluation (counting depth-first, cached or not) uses invocation
//! `base + k`, so numbering does not depend on what the cache held.
//!
//! The model is asked for structured output `{score, reasoning}` (score in
//! 0..=1) with an [`OutputSchema`]. Verdicts are cached by a SHA-256 of
//! everything the judge's answer depends on ([`JudgeKey`]): model, rubric,
//! criteria, output text, temperature, the trial and which ask it is, so
//! that repeated trials and re-asks never replay one cached answer.
//! [`InMemoryJudgeCache`] by default (one per [`Judge`]), or any
//! [`JudgeCache`] (the persistent one in the store implements the same
//! trait). The minimum score is not part of the key: it is not in the
//! prompt, and the pass/fail decision is made afresh from the cached score.
//!
//! # Borderline verdicts
//!
//! A score `s` is **borderline** when `|s − minScore| ≤ margin` (bounds
//! included; default margin 0.05, see [`Borderline`]): a judge that
//! scores on both sides of the threshold from run to run lands here. The
//! result is marked `borderline`. With `reask: n`, a borderline verdict
//! makes the judge answer `n` more times (each its own call: recording id
//! node `judge-reask{i}`, cache key ask `i`) and the assertion is decided on
//! the mean of the `n + 1` scores, `mean ≥ minScore`, reported with every
//! score and the mean's Student t interval (`x̄ ± t(1 − α/2, n)·s/√(n+1)`,
//! at [`Borderline::confidence`]). Re-asking a judge at temperature 0
//! mostly returns the same score: give borderline-prone judges a
//! temperature.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::context::EvalContext;
use super::display;
use super::output::text;
use super::path::Path;
use super::result::Outcome;
use crate::provider::{
    CallContext, CompletionRequest, Message, OutputSchema, Provider, ProviderOptions, RecordingId,
};
use crate::stats::Interval;
use crate::util::Fingerprint;

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
    /// Scores within this distance of `minScore` are borderline (default:
    /// the judge's, 0.05).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub borderline_margin: Option<f64>,
    /// Re-ask the judge this many more times when borderline and decide on
    /// the mean (default: the judge's, 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reask: Option<u32>,
}

/// When a judge's score is too close to its threshold to trust, and what to
/// do about it: a score within `margin` of the threshold (inclusive) is
/// marked borderline, and `reask(n)` asks the judge `n` more times and
/// decides on the mean.
///
/// ```
/// use scaffold::assert::Borderline;
/// let b = Borderline::margin(0.05).reask(4);
/// assert!(b.is_borderline(0.75, 0.7) && b.is_borderline(0.65, 0.7));
/// assert!(!b.is_borderline(0.751, 0.7) && !b.is_borderline(0.649, 0.7));
/// assert!(!Borderline::off().is_borderline(0.7, 0.7));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Borderline {
    /// `|score − minScore| ≤ margin` is borderline (default 0.05; negative: never).
    pub margin: f64,
    /// Extra asks when borderline (default 0: just mark it).
    pub reask: u32,
    /// Confidence of the mean's interval after re-asking (default 0.95).
    pub confidence: f64,
}

impl Default for Borderline {
    fn default() -> Self {
        Borderline {
            margin: 0.05,
            reask: 0,
            confidence: crate::stats::DEFAULT_CONFIDENCE,
        }
    }
}

impl Borderline {
    /// Borderline within `margin` of the threshold, no re-asking.
    pub fn margin(margin: f64) -> Self {
        Borderline {
            margin,
            ..Borderline::default()
        }
    }

    /// Never borderline.
    pub fn off() -> Self {
        Borderline::margin(-1.0)
    }

    /// Re-ask the judge `n` more times when borderline.
    pub fn reask(mut self, n: u32) -> Self {
        self.reask = n;
        self
    }

    /// The confidence of the mean's interval after re-asking.
    pub fn confidence(mut self, confidence: f64) -> Self {
        self.confidence = confidence;
        self
    }

    /// Whether `score` is within the margin of `threshold`, bounds included
    /// (up to 1e-9, so 0.75 is within 0.05 of 0.7 despite binary fractions).
    pub fn is_borderline(&self, score: f64, threshold: f64) -> bool {
        self.margin >= 0.0 && (score - threshold).abs() <= self.margin + 1e-9
    }

    /// This policy with an assertion's own `borderlineMargin` and `reask`.
    fn for_assertion(mut self, a: &LlmJudge) -> Self {
        if let Some(m) = a.borderline_margin {
            self.margin = m;
        }
        if let Some(n) = a.reask {
            self.reask = n;
        }
        self
    }
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

/// The cache key of a verdict: hex SHA-256 of a [`JudgeKey`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct JudgeCacheKey(pub String);

impl JudgeCacheKey {
    /// The key of a first ask at temperature 0 outside any trial
    /// (`JudgeKey::new(..).key()`).
    ///
    /// ```
    /// use scaffold::assert::JudgeCacheKey;
    /// let a = JudgeCacheKey::new("gpt-4o", None, &["is polite".into()], "hello");
    /// let b = JudgeCacheKey::new("gpt-4o", None, &["is polite".into()], "hello!");
    /// assert_ne!(a, b);
    /// assert_eq!(a.0.len(), 64);
    /// ```
    pub fn new(model: &str, rubric: Option<&str>, criteria: &[String], output: &str) -> Self {
        JudgeKey::new(model, rubric, criteria, output).key()
    }
}

/// Everything a judge's answer depends on: what is hashed into its
/// [`JudgeCacheKey`], each field tagged and length-prefixed so that no two
/// keys collide by concatenation.
///
/// ```
/// use scaffold::assert::JudgeKey;
/// let criteria = ["is polite".to_string()];
/// let key = |trial, ask| JudgeKey::new("gpt-4o", None, &criteria, "hello").trial(trial).ask(ask).key();
/// // Three trials of the same output are three verdicts; so are re-asks.
/// assert_ne!(key(Some(0), 0), key(Some(1), 0));
/// assert_ne!(key(Some(0), 0), key(Some(0), 1));
/// let warm = JudgeKey::new("gpt-4o", None, &criteria, "hello").temperature(0.7).key();
/// assert_ne!(warm, key(None, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JudgeKey<'a> {
    /// The judge model.
    pub model: &'a str,
    /// The rubric.
    pub rubric: Option<&'a str>,
    /// The criteria, in order.
    pub criteria: &'a [String],
    /// The output text judged.
    pub output: &'a str,
    /// The sampling temperature.
    pub temperature: f64,
    /// The trial of the cell judged, when the eval runs several.
    pub trial: Option<u32>,
    /// Which ask: 0 the first, `i` the i-th re-ask of a borderline verdict.
    pub ask: u32,
}

impl<'a> JudgeKey<'a> {
    /// A first ask at temperature 0, outside any trial.
    pub fn new(
        model: &'a str,
        rubric: Option<&'a str>,
        criteria: &'a [String],
        output: &'a str,
    ) -> Self {
        JudgeKey {
            model,
            rubric,
            criteria,
            output,
            temperature: 0.0,
            trial: None,
            ask: 0,
        }
    }

    /// At this temperature.
    pub fn temperature(mut self, t: f64) -> Self {
        self.temperature = t;
        self
    }

    /// For this trial.
    pub fn trial(mut self, trial: Option<u32>) -> Self {
        self.trial = trial;
        self
    }

    /// The `ask`-th re-ask (0: the first ask).
    pub fn ask(mut self, ask: u32) -> Self {
        self.ask = ask;
        self
    }

    /// The hash.
    pub fn key(&self) -> JudgeCacheKey {
        let mut h = Fingerprint::new();
        // Version 2: with temperature, trial and ask (version 1 keys, of
        // model, rubric, criteria and output only, are never matched).
        h.field("key", "2")
            .field("model", self.model)
            .field("rubric", self.rubric.unwrap_or(""));
        for c in self.criteria {
            h.field("criterion", c);
        }
        h.field("output", self.output)
            .field("temperature", self.temperature.to_string())
            .field(
                "trial",
                self.trial.map(|t| t.to_string()).unwrap_or_default(),
            )
            .field("ask", self.ask.to_string());
        JudgeCacheKey(h.hex())
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
    trial: Option<u32>,
    cache: Arc<dyn JudgeCache>,
    borderline: Borderline,
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
            .field("trial", &self.trial)
            .field("borderline", &self.borderline)
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
            trial: None,
            cache: Arc::new(InMemoryJudgeCache::new()),
            borderline: Borderline::default(),
        }
    }

    /// Use `provider` for assertions that ask for `model`.
    pub fn with_model(mut self, model: impl Into<String>, provider: Arc<dyn Provider>) -> Self {
        self.by_model.push((model.into(), provider));
        self
    }

    /// The recording id of the first judge call (node `judge`); later ones
    /// count up from its invocation. Its trial is the judge's trial.
    pub fn recording_id(mut self, id: RecordingId) -> Self {
        self.trial = id.trial;
        self.recording = Some(id);
        self
    }

    /// The trial of the cell judged (part of every cache key; set by
    /// [`Judge::recording_id`] too).
    pub fn trial(mut self, trial: Option<u32>) -> Self {
        self.trial = trial;
        self
    }

    /// When verdicts are borderline and whether to re-ask (default
    /// [`Borderline::default`]); an assertion's own settings win.
    pub fn borderline(mut self, borderline: Borderline) -> Self {
        self.borderline = borderline;
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

    /// The recording id of ask `ask` of the `k`-th judgement: node
    /// `{node}` for the first ask, `{node}-reask{ask}` for re-asks.
    fn recording_for(&self, k: u32, ask: u32) -> Option<String> {
        self.recording.as_ref().map(|base| {
            let mut id = base.clone();
            id.invocation = base.invocation.saturating_add(k);
            if ask > 0 {
                id.node = format!("{}-reask{ask}", base.node);
            }
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

/// One judgement's fixed parts: what is asked, of whom, under which key.
struct Asking<'a> {
    a: &'a LlmJudge,
    judge: &'a Judge,
    provider: &'a Arc<dyn Provider>,
    model: &'a str,
    output: &'a str,
    k: u32,
}

impl Asking<'_> {
    /// Ask `ask` (0: first): the verdict and whether it came from the cache.
    async fn ask(&self, ask: u32) -> Result<(JudgeVerdict, bool), String> {
        let temperature = self.a.temperature.unwrap_or(0.0);
        let key = JudgeKey {
            model: self.model,
            rubric: self.a.rubric.as_deref(),
            criteria: &self.a.criteria,
            output: self.output,
            temperature,
            trial: self.judge.trial,
            ask,
        }
        .key();
        if let Some(v) = self.judge.cache.get(&key) {
            return Ok((v, true));
        }
        let request = CompletionRequest {
            system: Some(SYSTEM.to_string()),
            messages: vec![Message::user(prompt(self.a, self.output))],
            output_schema: Some(verdict_schema()),
            options: ProviderOptions {
                temperature: Some(temperature),
                ..ProviderOptions::default()
            },
            context: CallContext {
                recording_id: self.judge.recording_for(self.k, ask),
                ..CallContext::default()
            },
            ..CompletionRequest::default()
        };
        let response = self
            .provider
            .complete(&request, &mut ())
            .await
            .map_err(|e| format!("the judge call to {} failed: {e}", self.model))?;
        let v = parse_verdict(&response.text, self.model)?;
        self.judge.cache.set(&key, &v);
        Ok((v, false))
    }
}

/// Evaluate one `llm.judge`, the `k`-th of its evaluation.
pub(crate) async fn run(a: &LlmJudge, ctx: &EvalContext<'_>, k: u32) -> Outcome {
    let (judge, provider, target) = match setup(a, ctx) {
        Ok(s) => s,
        Err(message) => return Outcome::fail(message),
    };
    let output_text = text(target);
    let model = provider.model().to_string();
    let expected = json!({"minScore": a.min_score, "criteria": a.criteria});
    let asking = Asking {
        a,
        judge,
        provider,
        model: &model,
        output: &output_text,
        k,
    };
    let policy = judge.borderline.for_assertion(a);
    let judgement = match asking.judgement(policy).await {
        Ok(j) => j,
        Err(e) => return Outcome::fail(e).expected(expected),
    };
    let passed = judgement.mean >= a.min_score;
    Outcome::new(passed, judgement.message(&model, a.min_score, passed))
        .expected(expected)
        .actual(judgement.actual())
        .borderline(judgement.borderline)
}

/// The judge of `ctx`, its provider for the assertion's model and the
/// value to judge; or why there is none of one of them.
fn setup<'a, 'c>(
    a: &LlmJudge,
    ctx: &'c EvalContext<'a>,
) -> Result<(&'a Judge, &'a Arc<dyn Provider>, &'c Value), String> {
    let Some(judge) = ctx.get_judge() else {
        return Err(
            "llm.judge needs a judge: give the context one with EvalContext::judge(&Judge::new(provider))"
                .to_string(),
        );
    };
    let provider = judge.provider_for(a.model.as_deref())?;
    let Some(output) = ctx.get_output() else {
        return Err("the run produced no output to judge".to_string());
    };
    let target = match a.path.as_deref().filter(|p| !p.is_empty()) {
        None => output,
        Some(p) => {
            let path = Path::parse(p).map_err(|e| format!("invalid path: {e}"))?;
            path.resolve(output)
                .ok_or_else(|| format!("the output has nothing at `{p}` to judge"))?
        }
    };
    Ok((judge, provider, target))
}

/// The scores of one judgement and what they decide.
struct Judgement {
    /// The first ask's verdict.
    verdict: JudgeVerdict,
    /// The first ask came from the cache.
    cached: bool,
    /// Every ask's score, the first first.
    scores: Vec<f64>,
    /// Their mean (the first's score alone).
    mean: f64,
    /// The mean's interval, with several scores.
    interval: Option<Interval>,
    /// The first score was borderline.
    borderline: bool,
    policy: Borderline,
}

impl Asking<'_> {
    /// The first ask, and when it is borderline the re-asks `policy` wants.
    async fn judgement(&self, policy: Borderline) -> Result<Judgement, String> {
        let (verdict, cached) = self.ask(0).await?;
        let borderline = policy.is_borderline(verdict.score, self.a.min_score);
        let mut scores = vec![verdict.score];
        if borderline {
            for ask in 1..=policy.reask {
                let (v, _) = (self.ask(ask).await)
                    .map_err(|e| format!("re-asking the borderline judge: {e}"))?;
                scores.push(v.score);
            }
        }
        Ok(Judgement {
            mean: crate::stats::mean(&scores).unwrap_or(verdict.score),
            interval: crate::stats::mean_interval(&scores, policy.confidence),
            verdict,
            cached,
            scores,
            borderline,
            policy,
        })
    }
}

impl Judgement {
    /// `judge {model} scored …, at least 0.7 (borderline: …): {reasoning}`.
    fn message(&self, model: &str, min_score: f64, passed: bool) -> String {
        let mut message = format!(
            "judge {model}{} {}, {} {}",
            if self.cached { " (cached)" } else { "" },
            self.how(),
            if passed {
                "at least"
            } else {
                "below the minimum"
            },
            display::num(min_score),
        );
        if self.borderline {
            let _ = write!(
                message,
                " (borderline: within {} of the minimum)",
                display::num(self.policy.margin)
            );
        }
        let _ = write!(message, ": {}", display::cut(&self.verdict.reasoning, 300));
        message
    }

    /// How it scored: the score, or the mean over the asks with each score
    /// and the mean's interval.
    fn how(&self) -> String {
        if self.scores.len() <= 1 {
            return format!("scored {}", display::num(self.verdict.score));
        }
        let listed: Vec<String> = self.scores.iter().map(|s| display::num(*s)).collect();
        let ci = self
            .interval
            .map(|i| {
                format!(
                    ", {:.0}% CI {}–{}",
                    i.confidence * 100.0,
                    display::num(round4(i.lower)),
                    display::num(round4(i.upper))
                )
            })
            .unwrap_or_default();
        format!(
            "scored a mean of {} over {} asks [{}]{ci}",
            display::num(round4(self.mean)),
            self.scores.len(),
            listed.join(", ")
        )
    }

    /// The outcome's `actual`: score, reasoning, model, cached, and the
    /// borderline and re-ask details when there are some.
    fn actual(&self) -> Value {
        let several = self.scores.len() > 1;
        let mut actual = json!({
            "score": if several { self.mean } else { self.verdict.score },
            "reasoning": self.verdict.reasoning,
            "model": self.verdict.model,
            "cached": self.cached,
        });
        if self.borderline {
            actual["borderline"] = json!(true);
            actual["margin"] = json!(self.policy.margin);
        }
        if several {
            actual["scores"] = json!(self.scores);
            if let Some(i) = self.interval {
                actual["interval"] = json!(i);
            }
        }
        actual
    }
}

/// Rounded to 4 decimals (for messages).
fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}
