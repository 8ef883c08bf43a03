//! One cell: a variant run on a case, once, then graded.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Cell, Eval, OnError};
use crate::assert::{AssertionResult, EvalContext, Judge};
use crate::metrics::Metrics;
use crate::provider::bridge::BridgeHost;
use crate::provider::recorder::{ProviderRecorder, ToolRecorder};
use crate::provider::transport::{Transport, with_transport};
use crate::provider::{ProviderError, RecordingId};
use crate::scorer::{Score, ScorerContext};
use crate::session::{ForkFrom, Grader, SessionError, fork_at, scope_tags};
use crate::store::Store;
use crate::util::file_safe;
use crate::workflow::{
    RecordingScope, RunError, RunOptions, RunResult, RunStatus, State, run_with,
};

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
    /// Where the cell's snapshot lives in the snapshot folder, without its
    /// `.snap`: `{eval}/{case}/{variant}`, plus `__t{n}` when the eval runs
    /// several trials, each part made file-name safe.
    ///
    /// A folder per case keeps its variants side by side, and keeps every
    /// folder small: insta lists the folder of each snapshot it writes, so a
    /// folder of all the cells made a run that changed them quadratic.
    pub fn snapshot_path(&self) -> String {
        let trial = self.trial.map(|t| format!("__t{t}")).unwrap_or_default();
        format!(
            "{}/{}/{}{trial}",
            file_safe(&self.eval),
            file_safe(&self.case),
            file_safe(&self.variant)
        )
    }

    /// Where the snapshot lived before [`CellId::snapshot_path`]: one flat
    /// folder, `{eval}__{variant}__{case}[__t{n}]`. The harness moves a file
    /// it finds there.
    pub(crate) fn legacy_snapshot_name(&self) -> String {
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
    /// Whether runs keep playback's virtual time ([`RunOptions::virtual_time`]):
    /// set when the transport plays recordings back.
    pub virtual_time: bool,
    /// Where recorded tools keep their results ([`RunOptions::tool_recorder`]).
    pub tools: Option<ToolRecorder>,
    /// The recorder bridged agents' calls go through (in playback, their
    /// recordings are found by content with it).
    pub recorder: Option<ProviderRecorder>,
    /// The server bridged agents' calls reach (one per run).
    pub bridges: Option<BridgeHost>,
}

impl fmt::Debug for CellEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CellEnv")
            .field("store", &self.store.is_some())
            .field("transport", &self.transport.is_some())
            .field("virtual_time", &self.virtual_time)
            .field("tools", &self.tools)
            .field("recorder", &self.recorder.is_some())
            .field("bridges", &self.bridges)
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
    /// How many times the run was retried after it errored
    /// ([`OnError::Retry`](super::OnError::Retry)).
    pub retries: u32,
    /// Left out of the statistics: the run errored under
    /// [`OnError::Exclude`](super::OnError::Exclude).
    pub excluded: bool,
    /// The run failed because a call could not be played back: a recording
    /// is missing, or the request differs from its recording. What the run
    /// took and spent is not what the cell would take: its latency and cost
    /// are unknown.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unplayable: bool,
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
            retries: 0,
            excluded: false,
            unplayable: false,
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
    ///
    /// With [`Eval::fork_from`] the cell forks from the parent session
    /// instead of running from the start; a fork that cannot be made (the
    /// parent is missing, the point does not resolve, the case's input is
    /// not the parent's) fails the cell with that error.
    #[doc(hidden)]
    pub async fn run_cell(&self, cell: &Cell<'_, S>, env: &CellEnv) -> (CellResult, RunResult<S>) {
        let Cell {
            id,
            dataset,
            case,
            workflow,
        } = cell;
        let scope = RecordingScope {
            dataset: dataset.key().to_string(),
            case: case.id.clone(),
            variant: id.variant.clone(),
            trial: id.trial,
        };
        let mut options = RunOptions::new()
            .virtual_time(env.virtual_time)
            .variant(id.variant.clone())
            .tag(format!("eval:{}", id.eval));
        // The scope in tags too, so the session can be replayed and scored as this cell.
        for tag in scope_tags(&scope)
            .into_iter()
            .chain(case.tags.iter().cloned())
        {
            options = options.tag(tag);
        }
        options = options.recording(scope);
        if let Some(tools) = &env.tools {
            options = options.tool_recorder(tools.clone());
        }
        if let Some(recorder) = &env.recorder {
            options = options.recorder(recorder.clone());
        }
        options = options.upstream(self.upstream.clone());
        if let Some(host) = &env.bridges {
            options = options.bridges(host.clone());
        }
        if let Some(pricing) = &self.pricing {
            options.pricing = Some(pricing.clone());
        }
        if let Some(store) = &env.store {
            options = options.store(store.clone());
        }
        let timeout = case.timeout_ms.map(Duration::from_millis).or(self.timeout);
        if let Some(timeout) = timeout {
            options = options.timeout(timeout);
        }
        let input = case.input();
        let tries = match self.on_error {
            OnError::Retry(retries) => retries.saturating_add(1),
            OnError::CountAsZero | OnError::Exclude => 1,
        };
        let mut retries = 0;
        // What the runs retried after an error spent: billed all the same.
        let mut spent_before = Metrics::default();
        let (mut graded, run) = loop {
            let result = match &self.fork_from {
                None => in_env(env, run_with(workflow, input.clone(), &options)).await,
                Some(_) if workflow.bridged.is_some() => {
                    let message = "fork_from continues a workflow from a point of a parent \
                                   session, and a bridged agent (Eval::agent, Eval::command) \
                                   runs from its start: remove fork_from (or SCAFFOLD_FORK_FROM) \
                                   for this eval"
                        .to_string();
                    break unrunnable(cell, input, message);
                }
                Some(from) => match fork_cell(from, cell, &input, options.clone(), env).await {
                    Ok(result) => result,
                    Err(e) => {
                        let message =
                            format!("fork from {} at {}: {e}", from.origin(), from.point());
                        break unrunnable(cell, input, message);
                    }
                },
            };
            if result.error.is_none() || retries + 1 >= tries {
                break self.grade_cell(cell, input, env, result).await;
            }
            spent_before.add_spend(&result.metrics);
            retries += 1;
        };
        graded.retries = retries;
        graded.metrics.add_spend(&spent_before);
        // A recording that no longer fits is the suite's fault, not the
        // provider's: it is never excluded.
        // A bridged agent's call that could not be played back shows as
        // its `provider:error` signal, whatever error the agent returned.
        let unplayable = playback_failed(&run.signals)
            || matches!(
                &run.error,
                Some(RunError::Provider {
                    source: ProviderError::Playback { .. },
                    ..
                })
            );
        graded.excluded =
            self.on_error == OnError::Exclude && graded.error.is_some() && !unplayable;
        graded.unplayable = unplayable;
        if graded.error.is_some() {
            count_as_zero(&mut graded.scores);
        }
        (graded, run)
    }

    /// Grade a cell's run (from `input`, the case's) with the case's
    /// assertions and the eval's scorers.
    async fn grade_cell(
        &self,
        cell: &Cell<'_, S>,
        input: Value,
        env: &CellEnv,
        result: RunResult<S>,
    ) -> (CellResult, RunResult<S>) {
        let Cell {
            id, dataset, case, ..
        } = cell;
        // One judge per cell, its recording id and cache keys carrying the
        // trial: repeats never replay another trial's verdict.
        let judge = self.judge.as_ref().map(|provider| {
            let judge = Judge::from_arc(provider.clone()).recording_id(
                RecordingId::new(dataset.key(), &case.id, &id.variant, "judge", 0)
                    .with_trial(id.trial),
            );
            match self.borderline {
                Some(b) => judge.borderline(b),
                None => judge,
            }
        });
        let error = result.error.as_ref().map(|e| e.to_string());
        let scorer_ctx = ScorerContext {
            state: &result.state,
            signals: &result.signals,
            output: result.output.as_ref(),
            metrics: &result.metrics,
            session_id: &result.session_id,
            variant: Some(&id.variant),
            error: error.as_deref(),
            input: Some(&input),
            dataset: Some(dataset.key()),
            case: Some(&case.id),
            trial: id.trial,
            store: env.store.as_ref(),
        };
        let grader = Grader {
            defaults: case.default_assertions(),
            assertions: case.own_assertions(),
            scorers: &self.scorers,
            judge: judge.as_ref(),
            transport: env.transport.as_ref(),
        };
        // The initial state is `harness:start`'s: the workflow's, or a fork's copied state.
        let grades = grader
            .grade(EvalContext::from_run(&result), &scorer_ctx)
            .await;
        let passed = grades.passed(error.as_deref());
        let cell = CellResult {
            id: id.clone(),
            dataset: dataset.key().to_string(),
            session_id: result.session_id.clone(),
            status: result.status,
            passed,
            error,
            input,
            output: result.output.clone(),
            assertions: grades.assertions,
            scores: grades.scores,
            metrics: result.metrics,
            signal_count: result.signals.len(),
            retries: 0,
            excluded: false,
            unplayable: false,
        };
        (cell, result)
    }
}

/// An errored run is never rewarded: each of its scores counts as zero.
fn count_as_zero(scores: &mut [Score]) {
    for score in scores.iter_mut().filter(|s| s.pass || s.value != 0.0) {
        let why = "the run errored: its scores count as zero";
        score.detail = Some(match score.detail.take() {
            Some(detail) => format!("{why} (the scorer said {}: {detail})", score.value),
            None => format!("{why} (the scorer said {})", score.value),
        });
        score.value = 0.0;
        score.pass = false;
    }
}

/// Run `future` with the cell's transport, if it has one.
async fn in_env<F: Future>(env: &CellEnv, future: F) -> F::Output {
    match &env.transport {
        Some(transport) => with_transport(transport.clone(), future).await,
        None => future.await,
    }
}

/// Fork the cell's variant from the eval's parent point.
async fn fork_cell<S: State>(
    from: &ForkFrom,
    cell: &Cell<'_, S>,
    input: &Value,
    options: RunOptions,
    env: &CellEnv,
) -> Result<RunResult<S>, SessionError> {
    let parent = from.source(env.store.as_ref())?.resolve(from.point())?;
    if parent.input != *input {
        return Err(SessionError::InputMismatch {
            session: parent.parent_id,
            case: cell.case.id.clone(),
            case_input: input.clone(),
            parent_input: parent.input,
        });
    }
    in_env(env, fork_at(&parent, cell.workflow, &options.into())).await
}

/// A cell that could not run (from `input`): failed with `message`, ungraded.
fn unrunnable<S: State>(
    cell: &Cell<'_, S>,
    input: Value,
    message: String,
) -> (CellResult, RunResult<S>) {
    let mut result = CellResult::failed(cell.id.clone(), message.clone());
    result.dataset = cell.dataset.key().to_string();
    result.input = input;
    let run = RunResult::not_started(
        cell.workflow.initial_state().clone(),
        RunError::Workflow(message),
    );
    (result, run)
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn a_snapshot_path_is_the_eval_the_slugged_case_and_the_variant_with_its_trial() {
        use crate::eval::CellId;
        let id = CellId {
            eval: "code-review".into(),
            variant: "gpt-4o".into(),
            case: "sql injection".into(),
            trial: Some(2),
        };
        assert_eq!(id.snapshot_path(), "code-review/sql-injection/gpt-4o__t2");
    }
}

/// Whether a cell's calls could not be played back: a `provider:error`
/// of code `playback` (a request that differs from its recording, a missing
/// or unusable recording).
fn playback_failed(signals: &[crate::signal::Signal]) -> bool {
    signals.iter().any(|s| {
        s.name == crate::signal::names::PROVIDER_ERROR
            && s.payload.get("code").and_then(|c| c.as_str()) == Some("playback")
    })
}

#[cfg(test)]
mod playback_tests {
    use super::*;

    #[test]
    fn only_a_playback_error_makes_a_cell_unplayable() {
        let signal = |name: &str, payload| crate::signal::Signal {
            index: 0,
            name: name.into(),
            payload,
            at_ms: 0,
            agent: None,
        };
        let error = |code| signal("provider:error", serde_json::json!({"code": code}));
        assert!(playback_failed(&[error("playback")]));
        assert!(!playback_failed(&[error("rate_limited")]));
        assert!(!playback_failed(&[signal(
            "error:provider",
            serde_json::json!({"code": "playback"})
        )]));
        assert!(!playback_failed(&[]));
    }
}
