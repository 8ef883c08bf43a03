//! Score: grade a stored session without running anything; and the grading
//! code that eval cells share.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::{SessionError, recording_scope};
use crate::assert::{Assertion, AssertionResult, EvalContext, Judge, evaluate_lists};
use crate::metrics::Metrics;
use crate::provider::Provider;
use crate::provider::transport::{Transport, with_transport};
use crate::scorer::{Score, Scorer, ScorerContext};
use crate::store::{SessionStatus, Store, fold_state};
use crate::workflow::State;

/// What grades a session: assertions (with the judge `llm.judge` calls),
/// scorers, and the transport model calls made while grading go through.
pub(crate) struct Grader<'a, S> {
    /// Evaluated first (a dataset's default assertions).
    pub defaults: &'a [Assertion],
    /// Evaluated after `defaults`.
    pub assertions: &'a [Assertion],
    pub scorers: &'a [Arc<dyn Scorer<S>>],
    pub judge: Option<&'a Judge>,
    pub transport: Option<&'a Arc<dyn Transport>>,
}

/// Assertion results and scores of one session.
pub(crate) struct Grades {
    pub assertions: Vec<AssertionResult>,
    pub scores: Vec<Score>,
}

impl Grades {
    /// Whether a session with (or without) an error passes: no error, every
    /// assertion and every scorer passes.
    pub fn passed(&self, error: Option<&str>) -> bool {
        error.is_none()
            && self.assertions.iter().all(|a| a.passed)
            && self.scores.iter().all(|s| s.pass)
    }
}

impl<'a, S: Sync> Grader<'a, S> {
    /// Evaluate the assertions over `ctx` and the scorers over `scorer_ctx`.
    pub async fn grade<'c>(&self, ctx: EvalContext<'c>, scorer_ctx: &ScorerContext<'_, S>) -> Grades
    where
        'a: 'c,
    {
        let ctx = match self.judge {
            Some(judge) => ctx.judge(judge),
            None => ctx,
        };
        let grade = async {
            let assertions = evaluate_lists(&[self.defaults, self.assertions], &ctx).await;
            let mut scores = Vec::with_capacity(self.scorers.len());
            for scorer in self.scorers {
                scores.push(scorer.score(scorer_ctx).await);
            }
            Grades { assertions, scores }
        };
        // Judges and scorers that call models go through the recorder too.
        match self.transport {
            Some(transport) => with_transport(transport.clone(), grade).await,
            None => grade.await,
        }
    }
}

/// How to grade a stored session: scorers over its final state (of type
/// `S`; `serde_json::Value` grades any session), assertions (a dataset
/// case's, say), the judge of `llm.judge` assertions, and the transport for
/// model calls made while grading (a recorder's, for playback).
pub struct ScoreOptions<S> {
    scorers: Vec<Arc<dyn Scorer<S>>>,
    assertions: Vec<Assertion>,
    judge: Option<Arc<dyn Provider>>,
    transport: Option<Arc<dyn Transport>>,
    allow_running: bool,
}

impl<S> Default for ScoreOptions<S> {
    fn default() -> Self {
        ScoreOptions {
            scorers: Vec::new(),
            assertions: Vec::new(),
            judge: None,
            transport: None,
            allow_running: false,
        }
    }
}

impl<S> std::fmt::Debug for ScoreOptions<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScoreOptions")
            .field(
                "scorers",
                &self.scorers.iter().map(|s| s.name()).collect::<Vec<_>>(),
            )
            .field("assertions", &self.assertions.len())
            .field("judge", &self.judge.is_some())
            .field("transport", &self.transport.is_some())
            .field("allow_running", &self.allow_running)
            .finish()
    }
}

impl<S> ScoreOptions<S> {
    /// No scorers, no assertions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Grade with `scorer` too.
    pub fn scorer(mut self, scorer: impl Scorer<S> + 'static) -> Self {
        self.scorers.push(Arc::new(scorer));
        self
    }

    /// Grade with a shared scorer too.
    pub fn scorer_arc(mut self, scorer: Arc<dyn Scorer<S>>) -> Self {
        self.scorers.push(scorer);
        self
    }

    /// Check these assertions too.
    pub fn assertions(mut self, assertions: impl IntoIterator<Item = Assertion>) -> Self {
        self.assertions.extend(assertions);
        self
    }

    /// The model that grades `llm.judge` assertions.
    pub fn judge(mut self, provider: Arc<dyn Provider>) -> Self {
        self.judge = Some(provider);
        self
    }

    /// Send model calls made while grading through `transport`.
    pub fn transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.transport = Some(transport);
        self
    }

    /// Grade a session that is still `running` (its signals so far, its
    /// state folded from them) instead of refusing it.
    pub fn allow_running(mut self) -> Self {
        self.allow_running = true;
        self
    }
}

/// The grades of one stored session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoreReport {
    /// The session.
    pub session_id: String,
    /// How it stands.
    pub status: SessionStatus,
    /// Whether it ended without error and every assertion and scorer passed.
    pub passed: bool,
    /// The session's error, if it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Every scorer's grade, in order.
    pub scores: Vec<Score>,
    /// Every assertion's result, in order.
    pub assertions: Vec<AssertionResult>,
    /// The final state graded.
    pub final_state: Value,
    /// The session's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Latency, tokens, cost, activations (from the signals).
    pub metrics: Metrics,
    /// How many signals it has.
    pub signal_count: usize,
}

/// Grade stored session `id`: no workflow runs, no provider is called
/// (except the judge of `llm.judge` assertions and scorers that call models).
///
/// The final state is the stored one (folded from the signals if absent)
/// and is deserialized into `S` for the scorers. A session still `running`
/// is refused ([`SessionError::StillRunning`]) unless
/// [`ScoreOptions::allow_running`]: its grades would describe half a run.
/// When the session was an eval cell, the scorers see its dataset, case,
/// variant and trial, and the judge uses the cell's recording id.
pub async fn score<S: State>(
    store: &Store,
    id: &str,
    options: &ScoreOptions<S>,
) -> Result<ScoreReport, SessionError> {
    let record = store.session(id)?.ok_or_else(|| SessionError::NotFound {
        id: id.to_owned(),
        store: store.path().to_owned(),
    })?;
    if record.status == SessionStatus::Running && !options.allow_running {
        return Err(SessionError::StillRunning {
            session: id.to_owned(),
        });
    }
    let signals = store.signals(id)?;
    let meta = &record.meta;
    let final_state = match &record.final_state {
        Some(state) if record.status != SessionStatus::Running => state.clone(),
        _ => fold_state(meta.initial_state.clone(), &signals),
    };
    let state = S::deserialize(&final_state).map_err(|e| SessionError::State {
        session: id.to_owned(),
        what: "final state".into(),
        type_name: std::any::type_name::<S>(),
        message: e.to_string(),
    })?;
    let metrics = Metrics::from_signals(&signals);
    let scope = recording_scope(&record, &signals);
    let judge = options.judge.as_ref().map(|provider| {
        let judge = Judge::from_arc(provider.clone());
        match &scope {
            Some(scope) => judge.recording_id(scope.recording_id("judge", 0)),
            None => judge,
        }
    });

    let mut ctx = EvalContext::new(&signals)
        .initial_state_ref(&meta.initial_state)
        .final_state_ref(&final_state)
        .metrics(metrics);
    if let Some(output) = &record.output {
        ctx = ctx.output_ref(output);
    }
    let mut scorer_ctx = ScorerContext::new(&state, &signals, &metrics)
        .with_session_id(id)
        .with_input(&meta.input)
        .with_store(store);
    scorer_ctx.output = record.output.as_ref();
    scorer_ctx.error = record.error.as_deref();
    scorer_ctx.variant = meta.variant.as_deref();
    if let Some(scope) = &scope {
        scorer_ctx = scorer_ctx.with_cell(&scope.dataset, &scope.case, &scope.variant, scope.trial);
    }
    let grader = Grader {
        defaults: &[],
        assertions: &options.assertions,
        scorers: &options.scorers,
        judge: judge.as_ref(),
        transport: options.transport.as_ref(),
    };
    let grades = grader.grade(ctx, &scorer_ctx).await;
    Ok(ScoreReport {
        session_id: id.to_owned(),
        status: record.status,
        passed: grades.passed(record.error.as_deref()),
        error: record.error.clone(),
        scores: grades.scores,
        assertions: grades.assertions,
        final_state,
        output: record.output.clone(),
        metrics,
        signal_count: signals.len(),
    })
}
