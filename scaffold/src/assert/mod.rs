//! Assertions as data, evaluated over a session's signals, state, output
//! and metrics.
//!
//! An [`Assertion`] is what a dataset writes (`type: signal.trajectory`, …);
//! [`evaluate`] checks one against an [`EvalContext`] and says, in an
//! [`AssertionResult`], whether it held and why. Everything is synchronous
//! except `llm.judge`, which calls a model: use [`evaluate_all`] (async) when
//! a list may hold one.
//!
//! ```
//! use scaffold::assert::{Assertion, EvalContext, evaluate_all_sync};
//! use scaffold::signal::Signal;
//! use serde_json::json;
//!
//! let sig = |index, name: &str, payload| Signal { index, name: name.into(), payload, at_ms: index, agent: None };
//! let signals = vec![
//!     sig(0, "harness:start", json!({"state": {}})),
//!     sig(1, "agent:activated", json!({"agent": "reviewer", "trigger": "phase:entered"})),
//!     sig(2, "review:complete", json!({"agent": "reviewer"})),
//!     sig(3, "agent:activated", json!({"agent": "fixer", "trigger": "review:complete"})),
//!     sig(4, "harness:end", json!({"durationMs": 1200})),
//! ];
//! let assertions: Vec<Assertion> = serde_json::from_value(json!([
//!     {"type": "signal.trajectory", "patterns": [
//!         "harness:start",
//!         {"pattern": "agent:activated", "payload": {"agent": "reviewer"}},
//!         "review:complete",
//!         {"pattern": "agent:activated", "payload": {"agent": "fixer"}},
//!     ]},
//!     {"type": "agent.causedBy", "agentId": "fixer", "triggerPattern": "review:*"},
//!     {"type": "metric.latency_ms.max", "value": 30000},
//! ])).unwrap();
//! let ctx = EvalContext::new(&signals);
//! for r in evaluate_all_sync(&assertions, &ctx) {
//!     assert!(r.passed, "{r}");
//! }
//! ```
//!
//! # Signal-name globs
//!
//! Names are colon paths; a [`Glob`] matches them segment by segment:
//! `agent:*` is `agent:` plus exactly one segment (`agent:activated`, not
//! `agent:a:b`); `tool:**` is `tool` followed by any number of segments,
//! zero included (`tool`, `tool:call`, `tool:a:b`); `state:*:changed`;
//! `review*` is one segment starting with `review`. `**` must be a whole
//! segment.
//!
//! # Paths
//!
//! State and output paths ([`Path`]) use dots and brackets:
//! `analysis.confidence`, `files[0].path`, `files[-1]` (from the end),
//! `["weird key"].x`, `files.0.path` (an all-digit key also indexes an
//! array). The empty path is the whole value.
//!
//! # Expected values
//!
//! Wherever an assertion takes an expected value (`payload`, `args`,
//! snapshot `value`), the same rules apply (`matches_value`):
//!
//! - **Objects are subsets**: every expected key must be present and match;
//!   other keys are ignored, at every depth.
//! - **Arrays are ordered subsequences**: each expected element must match
//!   an actual element, in order, with anything between: `[a, c]` matches
//!   `[a, b, c]` but not `[c, a]`. Use `{equals: [...]}` for an exact array.
//! - **Leaves are equal** (numbers by value: `1` equals `1.0`), unless the
//!   expected leaf is a **value matcher**, an object whose keys are all
//!   matcher names; several keys must all hold (`{gte: 1, lte: 5}`):
//!
//! | matcher | holds when the actual value |
//! |---|---|
//! | `gte`, `gt`, `lte`, `lt: n` | is a number in that relation to `n`; for an array or object, its length |
//! | `between: [a, b]` | is a number (or length) with `a <= x <= b` |
//! | `contains: x` | is a string containing `x`; an array with an element that contains (strings) or partially matches `x`; an object with key `x` |
//! | `startsWith: s`, `endsWith: s` | is a string starting / ending with `s` |
//! | `matches: re` | is a string (numbers and booleans as written) in which the regex finds a match |
//! | `equals: v` | is exactly `v` (deep; the way to compare with an object that looks like a matcher) |
//!
//! # Trajectories
//!
//! `signal.trajectory` steps are a name glob and an optional partial
//! payload. Not strict (the default), they must occur in order with anything
//! between. Strict, they must be consecutive: between two steps there may be
//! only signals that the `ignore` globs name (text deltas, provider calls,
//! the noise a user allows), at some placement of the steps: every start and
//! every choice is searched, so a strict trajectory that holds holds for
//! each of its contiguous parts too.
//!
//! # Seed 001's names
//!
//! Seed 001's assertion names load as the assertion they stand for:
//! `metric.latency_ms.max` → `metric.latency.max`, `metric.total_cost_usd.max`
//! → `metric.cost.max`, `metric.tokens.input|output.max` →
//! `metric.tokens.max` with that `field`, `behavior.no_errors` →
//! `signal.not error:**`, `behavior.node_executed {nodeId}` →
//! `agent.activated`, `behavior.node_invocations.max {nodeId, value}` →
//! `agent.activated {max}`; `output.contains` takes `value` for `text`.
//!
//! # Cost
//!
//! A context borrows the signals. On first use it interns every signal name
//! to a small id (two threads for long sessions); each glob is then matched
//! once per distinct name, and scans run over the ids. Payload fields that
//! several assertions filter on (`agent`, a tool's `name`) are read once
//! into shared columns. `snapshot.at` walks back from its signal over the
//! changes of the path's top-level key only, cloning one value. 20 mixed
//! assertions over a 1M-signal session take about 50 ms (see
//! `benches/assertions.rs`).

mod agent;
mod compose;
mod context;
mod display;
pub(crate) mod glob;
mod judge;
mod legacy;
mod matcher;
mod metric;
mod output;
pub(crate) mod path;
mod result;
mod signal;
mod snapshot;
mod tool;

pub(crate) use agent::{AgentActivated, AgentCausedBy, AgentCompleted, AgentEmitted, AgentSkipped};
pub(crate) use compose::{All, Any, Not};
pub use context::EvalContext;
pub(crate) use glob::Glob;
pub(crate) use judge::LlmJudge;
pub use judge::{
    Borderline, InMemoryJudgeCache, Judge, JudgeCache, JudgeCacheKey, JudgeKey, JudgeVerdict,
};
#[cfg(test)]
pub(crate) use legacy::LEGACY_TYPES;
pub(crate) use matcher::MATCHER_KEYS;
pub(crate) use metric::{ActivationBounds, MetricBound, TokenBound};
pub(crate) use output::{
    OutputContains, OutputEquals, OutputJson, OutputLength, OutputMatches, OutputNotContains,
    build_regex,
};
pub(crate) use path::Path;
pub use result::AssertionResult;
pub use signal::SignalPattern;
pub(crate) use signal::{
    SignalContains, SignalCount, SignalFirst, SignalLast, SignalNot, SignalTrajectory,
};
pub(crate) use snapshot::{Occurrence, SnapshotAt, SnapshotFinal};
pub(crate) use tool::{ToolCalled, ToolCalledWith, ToolNotCalled, ToolSequence};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use metric::Side;
use result::Outcome;

/// One assertion, as datasets write it (tagged by `type`): read from a
/// dataset's YAML or JSON, or built with the constructors below
/// ([`Assertion::output_contains`], [`Assertion::trajectory`], ...).
///
/// Seed 001's names deserialize into the type they stand for;
/// serializing always writes the canonical form.
///
/// ```
/// use scaffold::assert::Assertion;
/// let a: Assertion = serde_json::from_value(serde_json::json!({
///     "type": "output.contains", "text": "4"
/// })).unwrap();
/// assert_eq!(a, Assertion::output_contains("4"));
/// assert_eq!(a.type_name(), "output.contains");
/// ```
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Assertion(pub(crate) Kind);

impl std::fmt::Debug for Assertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl From<Kind> for Assertion {
    fn from(kind: Kind) -> Assertion {
        Assertion(kind)
    }
}

/// The assertion types, tagged by `type` (seed 001's names are read as
/// the type they stand for, see `legacy.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", tag = "type")]
pub(crate) enum Kind {
    /// `signal.contains`
    #[serde(rename = "signal.contains")]
    SignalContains(SignalContains),
    /// `signal.not`
    #[serde(rename = "signal.not")]
    SignalNot(SignalNot),
    /// `signal.count`
    #[serde(rename = "signal.count")]
    SignalCount(SignalCount),
    /// `signal.trajectory`
    #[serde(rename = "signal.trajectory")]
    SignalTrajectory(SignalTrajectory),
    /// `signal.first`
    #[serde(rename = "signal.first")]
    SignalFirst(SignalFirst),
    /// `signal.last`
    #[serde(rename = "signal.last")]
    SignalLast(SignalLast),
    /// `snapshot.at`
    #[serde(rename = "snapshot.at")]
    SnapshotAt(SnapshotAt),
    /// `snapshot.final`
    #[serde(rename = "snapshot.final")]
    SnapshotFinal(SnapshotFinal),
    /// `agent.activated`
    #[serde(rename = "agent.activated")]
    AgentActivated(AgentActivated),
    /// `agent.completed`
    #[serde(rename = "agent.completed")]
    AgentCompleted(AgentCompleted),
    /// `agent.causedBy`
    #[serde(rename = "agent.causedBy")]
    AgentCausedBy(AgentCausedBy),
    /// `agent.emitted`
    #[serde(rename = "agent.emitted")]
    AgentEmitted(AgentEmitted),
    /// `agent.skipped`
    #[serde(rename = "agent.skipped")]
    AgentSkipped(AgentSkipped),
    /// `metric.latency.max` (milliseconds)
    #[serde(rename = "metric.latency.max")]
    LatencyMax(MetricBound),
    /// `metric.latency.min` (milliseconds)
    #[serde(rename = "metric.latency.min")]
    LatencyMin(MetricBound),
    /// `metric.cost.max` (USD)
    #[serde(rename = "metric.cost.max")]
    CostMax(MetricBound),
    /// `metric.cost.min` (USD)
    #[serde(rename = "metric.cost.min")]
    CostMin(MetricBound),
    /// `metric.tokens.max`
    #[serde(rename = "metric.tokens.max")]
    TokensMax(TokenBound),
    /// `metric.tokens.min`
    #[serde(rename = "metric.tokens.min")]
    TokensMin(TokenBound),
    /// `metric.activations`
    #[serde(rename = "metric.activations")]
    Activations(ActivationBounds),
    /// `output.contains`
    #[serde(rename = "output.contains")]
    OutputContains(OutputContains),
    /// `output.notContains`
    #[serde(rename = "output.notContains")]
    OutputNotContains(OutputNotContains),
    /// `output.matches`
    #[serde(rename = "output.matches")]
    OutputMatches(OutputMatches),
    /// `output.json`
    #[serde(rename = "output.json")]
    OutputJson(OutputJson),
    /// `output.length`
    #[serde(rename = "output.length")]
    OutputLength(OutputLength),
    /// `output.equals`
    #[serde(rename = "output.equals")]
    OutputEquals(OutputEquals),
    /// `tool.called`
    #[serde(rename = "tool.called")]
    ToolCalled(ToolCalled),
    /// `tool.notCalled`
    #[serde(rename = "tool.notCalled")]
    ToolNotCalled(ToolNotCalled),
    /// `tool.calledWith`
    #[serde(rename = "tool.calledWith")]
    ToolCalledWith(ToolCalledWith),
    /// `tool.sequence`
    #[serde(rename = "tool.sequence")]
    ToolSequence(ToolSequence),
    /// `llm.judge`
    #[serde(rename = "llm.judge")]
    LlmJudge(LlmJudge),
    /// `all`
    #[serde(rename = "all")]
    All(All),
    /// `any`
    #[serde(rename = "any")]
    Any(Any),
    /// `not`
    #[serde(rename = "not")]
    Not(Not),
}

impl Serialize for Kind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Kind::serialize(self, serializer)
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut value = Value::deserialize(deserializer)?;
        if let Value::Object(map) = &mut value {
            legacy::rewrite(map);
        }
        Kind::deserialize(value).map_err(serde::de::Error::custom)
    }
}

impl Assertion {
    /// Every canonical type name.
    pub const TYPES: &'static [&'static str] = &[
        "signal.contains",
        "signal.not",
        "signal.count",
        "signal.trajectory",
        "signal.first",
        "signal.last",
        "snapshot.at",
        "snapshot.final",
        "agent.activated",
        "agent.completed",
        "agent.causedBy",
        "agent.emitted",
        "agent.skipped",
        "metric.latency.max",
        "metric.latency.min",
        "metric.cost.max",
        "metric.cost.min",
        "metric.tokens.max",
        "metric.tokens.min",
        "metric.activations",
        "output.contains",
        "output.notContains",
        "output.matches",
        "output.json",
        "output.length",
        "output.equals",
        "tool.called",
        "tool.notCalled",
        "tool.calledWith",
        "tool.sequence",
        "llm.judge",
        "all",
        "any",
        "not",
    ];

    /// The `type` this assertion is written with.
    pub fn type_name(&self) -> &'static str {
        match &self.0 {
            Kind::SignalContains(_) => "signal.contains",
            Kind::SignalNot(_) => "signal.not",
            Kind::SignalCount(_) => "signal.count",
            Kind::SignalTrajectory(_) => "signal.trajectory",
            Kind::SignalFirst(_) => "signal.first",
            Kind::SignalLast(_) => "signal.last",
            Kind::SnapshotAt(_) => "snapshot.at",
            Kind::SnapshotFinal(_) => "snapshot.final",
            Kind::AgentActivated(_) => "agent.activated",
            Kind::AgentCompleted(_) => "agent.completed",
            Kind::AgentCausedBy(_) => "agent.causedBy",
            Kind::AgentEmitted(_) => "agent.emitted",
            Kind::AgentSkipped(_) => "agent.skipped",
            Kind::LatencyMax(_) => "metric.latency.max",
            Kind::LatencyMin(_) => "metric.latency.min",
            Kind::CostMax(_) => "metric.cost.max",
            Kind::CostMin(_) => "metric.cost.min",
            Kind::TokensMax(_) => "metric.tokens.max",
            Kind::TokensMin(_) => "metric.tokens.min",
            Kind::Activations(_) => "metric.activations",
            Kind::OutputContains(_) => "output.contains",
            Kind::OutputNotContains(_) => "output.notContains",
            Kind::OutputMatches(_) => "output.matches",
            Kind::OutputJson(_) => "output.json",
            Kind::OutputLength(_) => "output.length",
            Kind::OutputEquals(_) => "output.equals",
            Kind::ToolCalled(_) => "tool.called",
            Kind::ToolNotCalled(_) => "tool.notCalled",
            Kind::ToolCalledWith(_) => "tool.calledWith",
            Kind::ToolSequence(_) => "tool.sequence",
            Kind::LlmJudge(_) => "llm.judge",
            Kind::All(_) => "all",
            Kind::Any(_) => "any",
            Kind::Not(_) => "not",
        }
    }

    /// Whether evaluating this needs the judge (an `llm.judge` anywhere inside).
    pub fn needs_judge(&self) -> bool {
        match &self.0 {
            Kind::LlmJudge(_) => true,
            Kind::All(All { assertions }) | Kind::Any(Any { assertions }) => {
                assertions.iter().any(Assertion::needs_judge)
            }
            Kind::Not(Not { assertion }) => assertion.needs_judge(),
            _ => false,
        }
    }

    /// `signal.contains` with a name glob.
    pub fn signal_contains(pattern: &str) -> Assertion {
        Assertion(Kind::SignalContains(SignalContains {
            pattern: pattern.into(),
            payload: None,
        }))
    }

    /// `signal.contains` with a name glob and a partial payload.
    pub fn signal_contains_with(pattern: &str, payload: Value) -> Assertion {
        Assertion(Kind::SignalContains(SignalContains {
            pattern: pattern.into(),
            payload: Some(payload),
        }))
    }

    /// `signal.not` with a name glob.
    pub fn signal_not(pattern: &str) -> Assertion {
        Assertion(Kind::SignalNot(SignalNot {
            pattern: pattern.into(),
            payload: None,
        }))
    }

    /// `signal.count` with bounds.
    pub fn signal_count(
        pattern: &str,
        min: Option<u64>,
        max: Option<u64>,
        exact: Option<u64>,
    ) -> Assertion {
        Assertion(Kind::SignalCount(SignalCount {
            pattern: pattern.into(),
            payload: None,
            min,
            max,
            exact,
        }))
    }

    /// `signal.trajectory` (not strict).
    pub fn trajectory(steps: impl IntoIterator<Item = SignalPattern>) -> Assertion {
        Assertion(Kind::SignalTrajectory(SignalTrajectory {
            patterns: steps.into_iter().collect(),
            strict: false,
            ignore: Vec::new(),
        }))
    }

    /// `signal.trajectory` with `strict: true`.
    pub fn strict_trajectory(steps: impl IntoIterator<Item = SignalPattern>) -> Assertion {
        Assertion(Kind::SignalTrajectory(SignalTrajectory {
            patterns: steps.into_iter().collect(),
            strict: true,
            ignore: Vec::new(),
        }))
    }

    /// `snapshot.at` with an expected value or matcher.
    pub fn snapshot_at(after_signal: &str, path: &str, value: Value) -> Assertion {
        Assertion(Kind::SnapshotAt(SnapshotAt {
            after_signal: after_signal.into(),
            occurrence: Occurrence::First,
            path: path.into(),
            value: Some(value),
            exists: None,
        }))
    }

    /// `snapshot.final` with an expected value or matcher.
    pub fn snapshot_final(path: &str, value: Value) -> Assertion {
        Assertion(Kind::SnapshotFinal(SnapshotFinal {
            path: path.into(),
            value: Some(value),
            exists: None,
        }))
    }

    /// `agent.activated` at least once.
    pub fn agent_activated(agent_id: &str) -> Assertion {
        Assertion(Kind::AgentActivated(AgentActivated {
            agent_id: agent_id.into(),
            ..AgentActivated::default()
        }))
    }

    /// `tool.called` at least once.
    pub fn tool_called(name: &str) -> Assertion {
        Assertion(Kind::ToolCalled(ToolCalled {
            name: name.into(),
            ..ToolCalled::default()
        }))
    }

    /// `output.contains` (case-sensitive).
    pub fn output_contains(text: &str) -> Assertion {
        Assertion(Kind::OutputContains(OutputContains {
            text: text.into(),
            path: None,
            case_sensitive: None,
        }))
    }

    /// `output.matches` without flags.
    pub fn output_matches(regex: &str) -> Assertion {
        Assertion(Kind::OutputMatches(OutputMatches {
            regex: regex.into(),
            flags: None,
            path: None,
        }))
    }

    /// `llm.judge` with criteria and a minimum score.
    pub fn llm_judge<I, S>(criteria: I, min_score: f64) -> Assertion
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Assertion(Kind::LlmJudge(LlmJudge {
            criteria: criteria.into_iter().map(Into::into).collect(),
            rubric: None,
            min_score,
            model: None,
            temperature: None,
            path: None,
            borderline_margin: None,
            reask: None,
        }))
    }

    /// `all` of these.
    pub fn all(assertions: Vec<Assertion>) -> Assertion {
        Assertion(Kind::All(All { assertions }))
    }

    /// `any` of these.
    pub fn any(assertions: Vec<Assertion>) -> Assertion {
        Assertion(Kind::Any(Any { assertions }))
    }

    /// `not` this.
    pub fn negate(assertion: Assertion) -> Assertion {
        Assertion(Kind::Not(Not {
            assertion: Box::new(assertion),
        }))
    }
}

/// Walks assertions, handing out precomputed `llm.judge` outcomes in
/// depth-first order.
struct Evaluator {
    judged: Option<std::vec::IntoIter<Outcome>>,
}

impl Evaluator {
    fn eval(&mut self, a: &Assertion, ctx: &EvalContext<'_>) -> AssertionResult {
        let outcome = match &a.0 {
            Kind::SignalContains(x) => signal::contains(x, ctx),
            Kind::SignalNot(x) => signal::not(x, ctx),
            Kind::SignalCount(x) => signal::count(x, ctx),
            Kind::SignalTrajectory(x) => signal::trajectory(x, ctx),
            Kind::SignalFirst(x) => signal::first(x, ctx),
            Kind::SignalLast(x) => signal::last(x, ctx),
            Kind::SnapshotAt(x) => snapshot::at(x, ctx),
            Kind::SnapshotFinal(x) => snapshot::final_(x, ctx),
            Kind::AgentActivated(x) => agent::activated(x, ctx),
            Kind::AgentCompleted(x) => agent::completed(x, ctx),
            Kind::AgentCausedBy(x) => agent::caused_by(x, ctx),
            Kind::AgentEmitted(x) => agent::emitted(x, ctx),
            Kind::AgentSkipped(x) => agent::skipped(x, ctx),
            Kind::LatencyMax(x) => metric::latency(x, Side::Max, ctx),
            Kind::LatencyMin(x) => metric::latency(x, Side::Min, ctx),
            Kind::CostMax(x) => metric::cost(x, Side::Max, ctx),
            Kind::CostMin(x) => metric::cost(x, Side::Min, ctx),
            Kind::TokensMax(x) => metric::tokens(x, Side::Max, ctx),
            Kind::TokensMin(x) => metric::tokens(x, Side::Min, ctx),
            Kind::Activations(x) => metric::activations(x, ctx),
            Kind::OutputContains(x) => output::contains(x, ctx),
            Kind::OutputNotContains(x) => output::not_contains(x, ctx),
            Kind::OutputMatches(x) => output::matches(x, ctx),
            Kind::OutputJson(x) => output::json(x, ctx),
            Kind::OutputLength(x) => output::length(x, ctx),
            Kind::OutputEquals(x) => output::equals(x, ctx),
            Kind::ToolCalled(x) => tool::called(x, ctx),
            Kind::ToolNotCalled(x) => tool::not_called(x, ctx),
            Kind::ToolCalledWith(x) => tool::called_with(x, ctx),
            Kind::ToolSequence(x) => tool::sequence(x, ctx),
            Kind::LlmJudge(_) => match self.judged.as_mut().and_then(Iterator::next) {
                Some(o) => o,
                None => Outcome::fail(
                    "llm.judge calls a model: evaluate it with evaluate_all or evaluate_async (async)",
                ),
            },
            Kind::All(x) => {
                let children = x.assertions.iter().map(|c| self.eval(c, ctx)).collect();
                compose::all(children)
            }
            Kind::Any(x) => {
                let children = x.assertions.iter().map(|c| self.eval(c, ctx)).collect();
                compose::any(children)
            }
            Kind::Not(x) => compose::not(self.eval(&x.assertion, ctx)),
        };
        outcome.into_result(a)
    }
}

fn collect_judges<'a>(a: &'a Assertion, out: &mut Vec<&'a LlmJudge>) {
    match &a.0 {
        Kind::LlmJudge(j) => out.push(j),
        Kind::All(All { assertions }) | Kind::Any(Any { assertions }) => {
            for c in assertions {
                collect_judges(c, out);
            }
        }
        Kind::Not(Not { assertion }) => collect_judges(assertion, out),
        _ => {}
    }
}

/// The signals (by index) that `assertion`, in the JSON form a results
/// record keeps, matched or compared over `signals`, its inner assertions'
/// included; empty for an assertion that does not parse, looks at no signal
/// or calls a model (`llm.judge` is not called again). What the HTML
/// transcript highlights next to the verdict the record already holds.
pub(crate) fn matched_signals(assertion: &Value, signals: &[crate::signal::Signal]) -> Vec<u64> {
    let Ok(assertion) = serde_json::from_value::<Assertion>(assertion.clone()) else {
        return Vec::new();
    };
    let result = evaluate(&assertion, &EvalContext::new(signals));
    let mut out = Vec::new();
    collect_matched(&result, &mut out);
    out.sort_unstable();
    out.dedup();
    out
}

fn collect_matched(result: &AssertionResult, out: &mut Vec<u64>) {
    out.extend_from_slice(&result.matched);
    for c in &result.children {
        collect_matched(c, out);
    }
}

/// Evaluate one assertion, synchronously. An `llm.judge` (anywhere inside)
/// fails with a message pointing at [`evaluate_async`].
pub fn evaluate(assertion: &Assertion, ctx: &EvalContext<'_>) -> AssertionResult {
    Evaluator { judged: None }.eval(assertion, ctx)
}

/// Evaluate assertions synchronously (see [`evaluate`]): a slice, a `Vec`
/// or any iterator of them, such as a dataset case's
/// [`assertions()`](crate::dataset::Case::assertions).
pub fn evaluate_all_sync<'a>(
    assertions: impl IntoIterator<Item = &'a Assertion>,
    ctx: &EvalContext<'_>,
) -> Vec<AssertionResult> {
    let mut ev = Evaluator { judged: None };
    assertions.into_iter().map(|a| ev.eval(a, ctx)).collect()
}

/// Evaluate one assertion, calling the judge for `llm.judge`.
pub async fn evaluate_async(assertion: &Assertion, ctx: &EvalContext<'_>) -> AssertionResult {
    let mut results = evaluate_all(std::slice::from_ref(assertion), ctx).await;
    results
        .pop()
        .unwrap_or_else(|| Outcome::fail("internal error: no result").into_result(assertion))
}

/// Evaluate assertions, calling the judge (concurrently) for every
/// `llm.judge` among them; the rest is evaluated synchronously.
///
/// The k-th `llm.judge` found depth-first across `assertions` records as
/// invocation k of the judge's recording id.
pub async fn evaluate_all(assertions: &[Assertion], ctx: &EvalContext<'_>) -> Vec<AssertionResult> {
    evaluate_lists(&[assertions], ctx).await
}

/// [`evaluate_all`] over `lists` one after the other, as if they were one
/// list (a dataset's default assertions, then a case's own).
pub(crate) async fn evaluate_lists(
    lists: &[&[Assertion]],
    ctx: &EvalContext<'_>,
) -> Vec<AssertionResult> {
    let mut judges = Vec::new();
    for a in lists.iter().copied().flatten() {
        collect_judges(a, &mut judges);
    }
    let judged = if judges.is_empty() {
        Vec::new()
    } else {
        futures_util::future::join_all(
            judges
                .iter()
                .enumerate()
                .map(|(k, j)| judge::run(j, ctx, k as u32)),
        )
        .await
    };
    let mut ev = Evaluator {
        judged: Some(judged.into_iter()),
    };
    lists
        .iter()
        .copied()
        .flatten()
        .map(|a| ev.eval(a, ctx))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signal::Signal;
    use serde_json::json;

    fn signals() -> Vec<Signal> {
        let sig = |index: u64, name: &str, payload: Value| Signal {
            index,
            name: name.into(),
            payload,
            at_ms: index,
            agent: None,
        };
        vec![
            sig(0, "harness:start", json!({"state": {}})),
            sig(1, "agent:activated", json!({"agent": "a"})),
            sig(
                2,
                "tool:call",
                json!({"id": "1", "name": "pay", "input": {"n": 5}}),
            ),
            sig(3, "state:plan:changed", json!({"newValue": 1})),
            sig(
                4,
                "tool:call",
                json!({"id": "2", "name": "pay", "input": {"n": 7}}),
            ),
            sig(5, "agent:activated", json!({"agent": "b"})),
        ]
    }

    fn matched(assertion: Value) -> Vec<u64> {
        matched_signals(&assertion, &signals())
    }

    #[test]
    fn each_assertion_says_which_signals_it_matched_or_compared() {
        // A trajectory: its steps; failing, the steps it got to.
        let steps = json!({"type": "signal.trajectory", "patterns": ["agent:activated", "state:*:changed"]});
        assert_eq!(matched(steps), [1, 3]);
        let stuck = json!({"type": "signal.trajectory", "patterns": ["agent:activated", "state:*:changed", "review:done"]});
        assert_eq!(matched(stuck), [1, 3]);
        // Strict: the signal that came between.
        let strict = json!({"type": "signal.trajectory", "strict": true, "patterns": [
            {"pattern": "agent:activated", "payload": {"agent": "a"}}, "agent:activated"]});
        assert_eq!(matched(strict), [2]);
        // snapshot.at: the signal it looked after, held or not.
        let at = json!({"type": "snapshot.at", "afterSignal": "state:plan:changed", "path": "plan", "value": 2});
        assert_eq!(matched(at), [3]);
        // tool.calledWith: the call that matched, else every call compared.
        assert_eq!(
            matched(json!({"type": "tool.calledWith", "name": "pay", "args": {"n": 7}})),
            [4]
        );
        assert_eq!(
            matched(json!({"type": "tool.calledWith", "name": "pay", "args": {"n": 9}})),
            [2, 4]
        );
        // Inside `all`, and nothing for what looks at no signal or does not parse.
        let all = json!({"type": "all", "assertions": [
            {"type": "snapshot.at", "afterSignal": "state:plan:changed", "path": "plan", "value": 1},
            {"type": "tool.calledWith", "name": "pay", "args": {"n": 5}}]});
        assert_eq!(matched(all), [2, 3]);
        assert!(matched(json!({"type": "output.contains", "text": "x"})).is_empty());
        assert!(matched(json!({"type": "no.such"})).is_empty());
    }
}
