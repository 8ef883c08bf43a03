//! One cell: a variant run on a case, once, then graded.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Cell, Eval};
use crate::assert::{AssertionResult, EvalContext, Judge, evaluate_all};
use crate::metrics::Metrics;
use crate::provider::RecordingId;
use crate::provider::transport::{Transport, with_transport};
use crate::scorer::{Score, ScorerContext};
use crate::store::Store;
use crate::workflow::{RecordingScope, RunOptions, RunResult, RunStatus, State, run_with};

/// Which cell: `{eval}::{variant}::{case}` plus `::t{n}` when there are several trials.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CellId {
    /// The eval.
    pub eval: String,
    /// The variant.
    pub variant: String,
    /// The case id.
    pub case: String,
    /// The trial, when the eval runs more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
}

impl fmt::Display for CellId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}::{}::{}", self.eval, self.variant, self.case)?;
        if let Some(t) = self.trial {
            write!(f, "::t{t}")?;
        }
        Ok(())
    }
}

impl CellId {
    /// The cell's snapshot name: `{eval}__{variant}__{case}[__t{n}]`.
    pub fn snapshot_name(&self) -> String {
        self.to_string().replace("::", "__")
    }
}

/// What a cell runs with: the store, the transport its providers use.
#[derive(Clone, Default)]
pub struct CellEnv {
    /// Where sessions go.
    pub store: Option<Store>,
    /// The transport providers without their own use (the recorder's, in evals).
    pub transport: Option<Arc<dyn Transport>>,
}

impl fmt::Debug for CellEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CellEnv")
            .field("store", &self.store.is_some())
            .field("transport", &self.transport.is_some())
            .finish()
    }
}

/// The graded outcome of one cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CellResult {
    /// Which cell.
    pub id: CellId,
    /// The dataset the case came from.
    pub dataset: String,
    /// The stored session.
    pub session_id: String,
    /// How the run ended.
    pub status: RunStatus,
    /// Whether the run, every assertion and every scorer passed.
    pub passed: bool,
    /// The run's error, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The case's input.
    pub input: Value,
    /// The run's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Every assertion's result.
    pub assertions: Vec<AssertionResult>,
    /// Every scorer's grade.
    pub scores: Vec<Score>,
    /// Latency, tokens, cost, activations.
    pub metrics: Metrics,
    /// Number of signals.
    pub signal_count: usize,
}

impl CellResult {
    /// A cell that could not run at all.
    pub fn failed(id: CellId, error: String) -> CellResult {
        CellResult {
            id,
            dataset: String::new(),
            session_id: String::new(),
            status: RunStatus::Failed,
            passed: false,
            error: Some(error),
            input: Value::Null,
            output: None,
            assertions: Vec::new(),
            scores: Vec::new(),
            metrics: Metrics::default(),
            signal_count: 0,
        }
    }

    /// The failure messages, one per failed check, for a person.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(e) = &self.error {
            out.push(format!("run failed: {e}"));
        }
        for a in self.assertions.iter().filter(|a| !a.passed) {
            out.push(format!("assertion failed: {}", a.message));
        }
        for s in self.scores.iter().filter(|s| !s.pass) {
            let detail = s.detail.as_deref().unwrap_or("");
            out.push(format!(
                "scorer `{}` failed: value {} {}",
                s.name, s.value, detail
            ));
        }
        out
    }
}

impl<S: State> Eval<S> {
    /// Run one cell and grade it. Returns the graded result and the run
    /// itself (for snapshots).
    pub async fn run_cell(&self, cell: &Cell<'_, S>, env: &CellEnv) -> (CellResult, RunResult<S>) {
        let Cell {
            id,
            dataset,
            case,
            workflow,
        } = cell;
        let mut options = RunOptions::new()
            .variant(id.variant.clone())
            .tag(format!("eval:{}", id.eval))
            .tag(format!("case:{}", case.id))
            .recording(RecordingScope {
                dataset: dataset.key().to_string(),
                case: case.id.clone(),
                variant: id.variant.clone(),
                trial: id.trial,
            });
        for tag in &case.tags {
            options = options.tag(tag.clone());
        }
        if let Some(store) = &env.store {
            options = options.store(store.clone());
        }
        let timeout = case.timeout_ms.map(Duration::from_millis).or(self.timeout);
        if let Some(timeout) = timeout {
            options = options.timeout(timeout);
        }
        let run = run_with(workflow, case.input.clone(), &options);
        let result = match &env.transport {
            Some(transport) => with_transport(transport.clone(), run).await,
            None => run.await,
        };

        let initial = serde_json::to_value(workflow.initial_state()).unwrap_or(Value::Null);
        let judge = self.judge.as_ref().map(|provider| {
            Judge::from_arc(provider.clone()).recording_id(
                RecordingId::new(dataset.key(), &case.id, &id.variant, "judge", 0)
                    .with_trial(id.trial),
            )
        });
        let mut ctx = EvalContext::from_run(&result).initial_state(initial);
        if let Some(judge) = &judge {
            ctx = ctx.judge(judge);
        }
        let grade = evaluate_all(&case.assertions, &ctx);
        let assertion_results = match &env.transport {
            Some(transport) => with_transport(transport.clone(), grade).await,
            None => grade.await,
        };

        let error = result.error.as_ref().map(|e| e.to_string());
        let scorer_ctx = ScorerContext {
            state: &result.state,
            signals: &result.signals,
            output: result.output.as_ref(),
            metrics: &result.metrics,
            session_id: &result.session_id,
            variant: Some(&id.variant),
            error: error.as_deref(),
            input: Some(&case.input),
            dataset: Some(dataset.key()),
            case: Some(&case.id),
            trial: id.trial,
            store: env.store.as_ref(),
        };
        // Scorers that call models (judge, embeddings) go through the recorder too.
        let grade_scores = async {
            let mut scores = Vec::with_capacity(self.scorers.len());
            for scorer in &self.scorers {
                scores.push(scorer.score(&scorer_ctx).await);
            }
            scores
        };
        let scores = match &env.transport {
            Some(transport) => with_transport(transport.clone(), grade_scores).await,
            None => grade_scores.await,
        };
        let passed = error.is_none()
            && assertion_results.iter().all(|a| a.passed)
            && scores.iter().all(|s| s.pass);
        let cell = CellResult {
            id: id.clone(),
            dataset: dataset.key().to_string(),
            session_id: result.session_id.clone(),
            status: result.status,
            passed,
            error,
            input: case.input.clone(),
            output: result.output.clone(),
            assertions: assertion_results,
            scores,
            metrics: result.metrics,
            signal_count: result.signals.len(),
        };
        (cell, result)
    }
}
