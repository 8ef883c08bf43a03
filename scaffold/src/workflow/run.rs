//! Executing a workflow: the one execution path every feature builds on.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::agent::OutputSpec;
use super::sink::{SessionEnd, SessionMeta, SessionSink, SessionStatus, new_session_id};
use super::tool::ToolContext;
use super::{Agent, Next, State, Workflow};
use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::provider::anthropic::Anthropic;
use crate::provider::bridge::BridgeHost;
use crate::provider::openai::OpenAi;
use crate::provider::recorder::{ProviderRecorder, RecorderMode, ToolRecorder};
use crate::provider::{
    CallContext, CompletionRequest, ContentPart, Message, Pricing, ProviderError, RecordingId,
    Role, StreamSink, ToolCall,
};
use crate::signal::{ErrorKind, Signal, names};
use crate::util::now_ms;

/// Where a run sits in an eval, so each provider call gets its recording id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordingScope {
    /// Dataset id or name.
    pub dataset: String,
    /// Case id.
    pub case: String,
    /// Variant name.
    pub variant: String,
    /// Trial, when the eval runs several.
    pub trial: Option<u32>,
}

impl RecordingScope {
    /// The id of `node`'s `invocation`-th call.
    pub fn recording_id(&self, node: &str, invocation: u32) -> RecordingId {
        RecordingId::new(&self.dataset, &self.case, &self.variant, node, invocation)
            .with_trial(self.trial)
    }
}

/// How to run: where to store, how to tag, how to price, time limits.
///
/// ```
/// use scaffold::prelude::*;
/// use std::time::Duration;
/// let options = RunOptions::new()
///     .variant("gpt-4o")
///     .tag("smoke")
///     .timeout(Duration::from_secs(30));
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub(crate) store: Option<Arc<dyn SessionSink>>,
    pub(crate) session_id: Option<String>,
    pub(crate) variant: Option<String>,
    pub(crate) tags: Vec<String>,
    pub(crate) recording: Option<RecordingScope>,
    pub(crate) pricing: Option<Arc<Pricing>>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) parent: Option<(String, Value)>,
    pub(crate) virtual_time: bool,
    pub(crate) tools: Option<ToolRecorder>,
    pub(crate) recorder: Option<ProviderRecorder>,
    pub(crate) upstream: Upstream,
    pub(crate) bridges: Option<BridgeHost>,
}

/// Where a bridged agent's calls go on to, per API, when not from the
/// environment (see [`Eval::bridge_openai`](crate::eval::Eval::bridge_openai)).
#[derive(Debug, Clone, Default)]
pub(crate) struct Upstream {
    pub(crate) openai: Option<Arc<OpenAi>>,
    pub(crate) anthropic: Option<Arc<Anthropic>>,
}

impl RunOptions {
    /// Defaults: no store, built-in pricing, no time limit.
    pub fn new() -> Self {
        Self::default()
    }

    /// Persist the session and its signals in `store` (a
    /// [`Store`](crate::store::Store), or any other [`SessionSink`]).
    pub fn store(mut self, store: impl SessionSink + 'static) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// Use this session id instead of a fresh one.
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// The variant name stored with the session.
    pub fn variant(mut self, variant: impl Into<String>) -> Self {
        self.variant = Some(variant.into());
        self
    }

    /// Add a tag to the session.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// Key provider calls for recording and playback.
    pub fn recording(mut self, scope: RecordingScope) -> Self {
        self.recording = Some(scope);
        self
    }

    /// Price calls with `pricing` instead of the built-in table.
    pub fn pricing(mut self, pricing: Pricing) -> Self {
        self.pricing = Some(Arc::new(pricing));
        self
    }

    /// Time limit for the whole run; a call still under way when it passes
    /// fails with `error:timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Keep playback's virtual time (see [`crate::clock`]): the run's clock
    /// starts at zero and moves only by the recorded timing of the calls it
    /// plays back, so its durations, timestamps and time limit are the same
    /// run after run. For runs whose providers play back recordings (the
    /// eval harness sets it in playback mode); a live provider's calls
    /// would take no time at all.
    pub fn virtual_time(mut self, on: bool) -> Self {
        self.virtual_time = on;
        self
    }

    /// Record [recorded tools](super::Tool::recorded)' results with
    /// `recorder` (in its mode: record keeps them, playback answers from
    /// them); without one, every tool runs. The eval harness sets it.
    pub fn tool_recorder(mut self, recorder: ToolRecorder) -> Self {
        self.tools = Some(recorder);
        self
    }

    /// Send a bridged agent's calls with `recorder` (its transport, and in
    /// playback its recordings found by content); the eval harness sets it.
    pub(crate) fn recorder(mut self, recorder: ProviderRecorder) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Serve a bridged agent's calls on `host`'s server (the harness shares
    /// one between the cells of a run); without one, a server of its own.
    pub(crate) fn bridges(mut self, host: BridgeHost) -> Self {
        self.bridges = Some(host);
        self
    }

    /// Send a bridged agent's calls on as these providers send their own.
    pub(crate) fn upstream(mut self, upstream: Upstream) -> Self {
        self.upstream = upstream;
        self
    }

    /// Record lineage: this run continues `parent` from `fork_point`.
    pub fn parent(mut self, parent_id: impl Into<String>, fork_point: Value) -> Self {
        self.parent = Some((parent_id.into(), fork_point));
        self
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Reached a terminal phase or the end of the phases.
    Completed,
    /// An error stopped it.
    Failed,
    /// The activation bound cut it short.
    Terminated,
}

/// Why a run did not complete.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The provider call failed.
    #[error("agent `{agent}`: {source}")]
    Provider {
        /// The agent.
        agent: String,
        /// The provider's error.
        source: ProviderError,
    },
    /// A time limit passed.
    #[error("agent `{agent}`: timed out after {after_ms} ms")]
    Timeout {
        /// The agent under way.
        agent: String,
        /// Time since the run started.
        after_ms: u64,
    },
    /// The tool loop failed.
    #[error("agent `{agent}`: {message}")]
    Tool {
        /// The agent.
        agent: String,
        /// What went wrong.
        message: String,
    },
    /// The answer did not parse into the agent's output type.
    #[error("agent `{agent}`: output does not match its schema: {message}")]
    Output {
        /// The agent.
        agent: String,
        /// The parse error.
        message: String,
    },
    /// The workflow is misconfigured or went somewhere that does not exist.
    #[error("workflow: {0}")]
    Workflow(String),
    /// The activation bound was reached.
    #[error("runaway workflow: {limit} activations reached (next agent `{agent}`)")]
    MaxActivations {
        /// The bound.
        limit: u32,
        /// The agent that would have run next.
        agent: String,
    },
    /// The session could not be stored.
    #[error("store: {0}")]
    Store(String),
    /// A bridged agent (your own function or program) failed, panicked,
    /// or called what its bridge does not serve.
    #[error("agent: {0}")]
    Agent(String),
}

impl RunError {
    fn kind(&self) -> ErrorKind {
        match self {
            RunError::Provider { source, .. } if source.is_timeout() => ErrorKind::Timeout,
            RunError::Provider { .. } => ErrorKind::Provider,
            RunError::Timeout { .. } => ErrorKind::Timeout,
            RunError::Tool { .. } => ErrorKind::Tool,
            RunError::Output { .. } => ErrorKind::Output,
            RunError::Workflow(_)
            | RunError::MaxActivations { .. }
            | RunError::Store(_)
            | RunError::Agent(_) => ErrorKind::Workflow,
        }
    }

    fn agent(&self) -> Option<&str> {
        match self {
            RunError::Provider { agent, .. }
            | RunError::Timeout { agent, .. }
            | RunError::Tool { agent, .. }
            | RunError::Output { agent, .. }
            | RunError::MaxActivations { agent, .. } => Some(agent),
            RunError::Workflow(_) | RunError::Store(_) | RunError::Agent(_) => None,
        }
    }
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunResult<S> {
    /// The session id (also the store key).
    pub session_id: String,
    /// How it ended.
    pub status: RunStatus,
    /// The final state.
    pub state: S,
    /// The output: the workflow's output function of the final state, or the last agent's answer.
    pub output: Option<Value>,
    /// Every signal, in order.
    pub signals: Vec<Signal>,
    /// Wall time.
    pub duration: Duration,
    /// Latency, tokens, cost, activations.
    pub metrics: Metrics,
    /// Why it did not complete, if it did not.
    pub error: Option<RunError>,
}

impl<S> RunResult<S> {
    /// A run that could not start (its session was never begun): failed
    /// with `error`, in state `state`, without signals.
    pub(crate) fn not_started(state: S, error: RunError) -> Self {
        RunResult {
            session_id: String::new(),
            status: RunStatus::Failed,
            state,
            output: None,
            signals: Vec::new(),
            duration: Duration::ZERO,
            metrics: Metrics::default(),
            error: Some(error),
        }
    }
}

/// Run `workflow` on `input` with default options.
pub async fn run<S: State>(workflow: &Workflow<S>, input: Value) -> RunResult<S> {
    run_with(workflow, input, &RunOptions::default()).await
}

/// Run `workflow` on `input`. Never panics on provider, tool or output
/// failures: they end the run with an error signal and [`RunResult::error`].
pub async fn run_with<S: State>(
    workflow: &Workflow<S>,
    input: Value,
    options: &RunOptions,
) -> RunResult<S> {
    run_from(workflow, input, options, None).await
}

/// Where a run begins when it does not begin at the workflow's start: a
/// phase and the state it is entered with (a fork).
pub(crate) struct Resume<S> {
    /// The phase entered first.
    pub phase: String,
    /// The state it is entered with.
    pub state: S,
}

/// [`run_with`], optionally resuming at a phase with a given state: then the
/// workflow's `start` hook does not run, the stored initial state is that
/// state, and phase occurrences count from the resumed phase.
pub(crate) async fn run_from<S: State>(
    workflow: &Workflow<S>,
    input: Value,
    options: &RunOptions,
    resume: Option<Resume<S>>,
) -> RunResult<S> {
    let session_id = options.session_id.clone().unwrap_or_else(new_session_id);
    let pricing = options
        .pricing
        .clone()
        .unwrap_or_else(|| Arc::new(Pricing::builtin()));
    let (state, resume_phase) = match resume {
        Some(Resume { phase, state }) => (state, Some(phase)),
        None => (workflow.initial_state.clone(), None),
    };
    let clock = if options.virtual_time {
        Clock::virtual_time()
    } else {
        Clock::real()
    };
    let mut exec = Execution {
        session_id: session_id.clone(),
        deadline: options.timeout.map(|t| Instant::now() + t),
        timeout: options.timeout,
        clock,
        signals: Vec::new(),
        stored: 0,
        store: options.store.clone(),
        store_error: None,
        recording: options.recording.clone(),
        tools: options.tools.clone(),
        pricing,
        invocations: HashMap::new(),
        last_state: Value::Null,
        last_output: None,
        stamp: None,
    };
    let initial_json = serde_json::to_value(&state).unwrap_or(Value::Null);
    exec.begin(workflow, options, &input, &initial_json);
    let (state, outcome) = exec
        .execute(
            workflow,
            &input,
            state,
            initial_json,
            options,
            resume_phase.as_deref(),
        )
        .await;

    let status = match &outcome {
        Ok(()) => RunStatus::Completed,
        Err(RunError::MaxActivations { .. }) => RunStatus::Terminated,
        Err(_) => RunStatus::Failed,
    };
    let output = match &workflow.output {
        Some(f) if outcome.is_ok() => Some(f(&state)),
        _ => exec.last_output.take(),
    };
    let duration = exec.clock.elapsed();
    let activations = exec.count(names::AGENT_ACTIVATED);
    exec.emit(
        names::HARNESS_END,
        json!({
            "durationMs": duration.as_millis() as u64,
            "activations": activations,
            "status": status,
            "state": exec.last_state,
        }),
        None,
    );
    let mut error = outcome.err();
    if let Err(e) = exec.finish(status, error.as_ref(), &output, duration) {
        error.get_or_insert(e);
    }
    let metrics = Metrics::from_signals(&exec.signals);
    RunResult {
        session_id,
        status,
        state,
        output,
        signals: exec.signals,
        duration,
        metrics,
        error,
    }
}

/// The mutable bookkeeping of one run.
pub(super) struct Execution {
    pub(super) session_id: String,
    /// Where durations and `at_ms` come from.
    pub(super) clock: Clock,
    /// When a real-time run's time limit passes.
    pub(super) deadline: Option<Instant>,
    /// The run's time limit.
    pub(super) timeout: Option<Duration>,
    pub(super) signals: Vec<Signal>,
    pub(super) stored: usize,
    pub(super) store: Option<Arc<dyn SessionSink>>,
    pub(super) store_error: Option<String>,
    pub(super) recording: Option<RecordingScope>,
    pub(super) tools: Option<ToolRecorder>,
    pub(super) pricing: Arc<Pricing>,
    /// Calls so far per agent (provider calls) and per `agent.tool.name`
    /// (recorded tools), for recording ids.
    pub(super) invocations: HashMap<String, u32>,
    pub(super) last_state: Value,
    pub(super) last_output: Option<Value>,
    /// When set, the time every signal emitted is stamped with (a bridged
    /// run places its signals on the timeline of its calls).
    pub(super) stamp: Option<u64>,
}

/// Collects streamed text as `text:delta` signals.
struct DeltaSink<'a> {
    exec: &'a mut Execution,
    agent: &'a str,
}

impl StreamSink for DeltaSink<'_> {
    fn text_delta(&mut self, delta: &str) {
        self.exec.emit(
            names::TEXT_DELTA,
            json!({ "content": delta }),
            Some(self.agent),
        );
    }
}

impl Execution {
    pub(super) fn emit(&mut self, name: &str, payload: Value, agent: Option<&str>) -> u64 {
        let index = self.signals.len() as u64;
        self.signals.push(Signal {
            index,
            name: name.to_string(),
            payload,
            at_ms: self.stamp.unwrap_or_else(|| self.clock.elapsed_ms()),
            agent: agent.map(str::to_string),
        });
        index
    }

    /// Whether a virtual-time run has passed its time limit.
    pub(super) fn past_virtual_deadline(&self) -> bool {
        self.clock.is_virtual()
            && self
                .timeout
                .is_some_and(|limit| self.clock.elapsed() > limit)
    }

    fn count(&self, name: &str) -> usize {
        self.signals.iter().filter(|s| s.name == name).count()
    }

    /// Hand the signals not yet stored to the store (batched by its writer).
    pub(super) fn persist(&mut self) {
        if let Some(store) = &self.store
            && self.stored < self.signals.len()
        {
            if let Err(e) = store.append(&self.session_id, &self.signals[self.stored..]) {
                self.store_error.get_or_insert(e.to_string());
            }
            self.stored = self.signals.len();
        }
    }

    fn begin<S: State>(
        &mut self,
        workflow: &Workflow<S>,
        options: &RunOptions,
        input: &Value,
        initial: &Value,
    ) {
        if let Some(store) = &self.store {
            let (parent_id, fork_point) = match &options.parent {
                Some((id, point)) => (Some(id.clone()), Some(point.clone())),
                None => (None, None),
            };
            let meta = SessionMeta {
                id: self.session_id.clone(),
                workflow: workflow.name.clone(),
                variant: options.variant.clone(),
                parent_id,
                fork_point,
                input: input.clone(),
                initial_state: initial.clone(),
                tags: options.tags.clone(),
                started_at_ms: now_ms(),
            };
            if let Err(e) = store.begin_session(&meta) {
                self.store_error.get_or_insert(e.to_string());
            }
        }
    }

    fn finish(
        &mut self,
        status: RunStatus,
        error: Option<&RunError>,
        output: &Option<Value>,
        duration: Duration,
    ) -> Result<(), RunError> {
        self.persist();
        if let Some(store) = &self.store {
            let end = SessionEnd {
                status: match status {
                    RunStatus::Completed => SessionStatus::Completed,
                    RunStatus::Failed => SessionStatus::Failed,
                    RunStatus::Terminated => SessionStatus::Terminated,
                },
                error: error.map(|e| e.to_string()),
                ended_at_ms: now_ms(),
                duration_ms: duration.as_millis() as u64,
                output: output.clone(),
                final_state: Some(self.last_state.clone()),
            };
            if let Err(e) = store.finish_session(&self.session_id, &end) {
                self.store_error.get_or_insert(e.to_string());
            }
        }
        match self.store_error.take() {
            Some(e) => Err(RunError::Store(e)),
            None => Ok(()),
        }
    }

    /// Emit `state:<key>:changed` for every top-level key that differs from
    /// the last state seen (with the tool call that changed it, if one did).
    pub(super) fn diff_state<S: State>(
        &mut self,
        state: &S,
        agent: Option<&str>,
    ) -> Result<(), RunError> {
        self.diff_state_by(state, agent, None)
    }

    fn diff_state_by<S: State>(
        &mut self,
        state: &S,
        agent: Option<&str>,
        tool_call: Option<&str>,
    ) -> Result<(), RunError> {
        let new = serde_json::to_value(state)
            .map_err(|e| RunError::Workflow(format!("state does not serialize: {e}")))?;
        self.diff_value(new, agent, tool_call)
    }

    /// [`Execution::diff_state_by`] of a state already in JSON.
    pub(super) fn diff_value(
        &mut self,
        new: Value,
        agent: Option<&str>,
        tool_call: Option<&str>,
    ) -> Result<(), RunError> {
        let (Value::Object(old_map), Value::Object(new_map)) = (&self.last_state, &new) else {
            return Err(RunError::Workflow(
                "state must serialize to a JSON object (a struct or a map)".into(),
            ));
        };
        let mut changes: Vec<(String, Value)> = Vec::new();
        for (key, value) in new_map {
            let old = old_map.get(key);
            if old != Some(value) {
                changes.push((
                    key.clone(),
                    json!({
                        "key": key,
                        "oldValue": old.cloned().unwrap_or(Value::Null),
                        "newValue": value,
                        "agent": agent,
                    }),
                ));
            }
        }
        for (key, old) in old_map {
            if !new_map.contains_key(key) {
                changes.push((
                    key.clone(),
                    json!({"key": key, "oldValue": old, "newValue": null, "removed": true, "agent": agent}),
                ));
            }
        }
        for (key, mut payload) in changes {
            if let Some(id) = tool_call {
                payload["toolCallId"] = Value::String(id.to_string());
            }
            self.emit(&names::state_changed(&key), payload, agent);
        }
        self.last_state = new;
        Ok(())
    }

    pub(super) fn fail(&mut self, error: RunError) -> RunError {
        let payload = json!({ "message": error.to_string(), "agent": error.agent() });
        let agent = error.agent().map(str::to_string);
        self.emit(&names::error(error.kind()), payload, agent.as_deref());
        error
    }

    async fn execute<S: State>(
        &mut self,
        workflow: &Workflow<S>,
        input: &Value,
        mut state: S,
        initial: Value,
        options: &RunOptions,
        resume_phase: Option<&str>,
    ) -> (S, Result<(), RunError>) {
        let agents: Vec<&str> = workflow.agents().iter().map(|a| a.name()).collect();
        let mut start =
            json!({"workflow": workflow.name, "agents": agents, "input": input, "state": initial});
        if let Some((parent, point)) = &options.parent {
            start["forkedFrom"] = json!({"sessionId": parent, "forkPoint": point});
        }
        self.emit(names::HARNESS_START, start, None);
        self.last_state = initial;
        let outcome = match &workflow.bridged {
            Some(bridged) => {
                self.execute_bridged(bridged, input, &mut state, options)
                    .await
            }
            None => {
                self.execute_phases(workflow, input, &mut state, resume_phase)
                    .await
            }
        };
        let outcome = outcome.map_err(|e| self.fail(e));
        self.persist();
        (state, outcome)
    }

    async fn execute_phases<S: State>(
        &mut self,
        workflow: &Workflow<S>,
        input: &Value,
        state: &mut S,
        resume_phase: Option<&str>,
    ) -> Result<(), RunError> {
        if let Err(errors) = workflow.validate() {
            return Err(RunError::Workflow(errors.join("; ")));
        }
        // A resumed run continues from its state: `start` already ran in the parent.
        if let (Some(start), None) = (&workflow.start, resume_phase) {
            start(input, state);
        }
        self.diff_state(state, None)?;

        let mut occurrences: HashMap<&str, u32> = HashMap::new();
        let mut activations = 0u32;
        let mut trigger = names::PHASE_ENTERED.to_string();
        let mut current = resume_phase.unwrap_or(workflow.phases[0].0.as_str());
        loop {
            let Some((name, phase)) = workflow.phases.iter().find(|(n, _)| n == current) else {
                return Err(RunError::Workflow(format!(
                    "next phase `{current}` is not a phase of `{}` (phases: {})",
                    workflow.name,
                    workflow.phase_names().collect::<Vec<_>>().join(", ")
                )));
            };
            let occurrence = occurrences.entry(name.as_str()).or_insert(0);
            *occurrence += 1;
            let occurrence = *occurrence;
            let entered = json!({"phase": name, "occurrence": occurrence});
            self.emit(names::PHASE_ENTERED, entered.clone(), None);
            let Some(agent) = &phase.agent else {
                // Terminal phase.
                return Ok(());
            };
            if trigger.is_empty() {
                trigger = names::PHASE_ENTERED.to_string();
            }
            let guard = agent.when.as_ref().filter(|(guard, _)| !guard(state));
            if let Some((_, reason)) = guard {
                self.emit(
                    names::AGENT_SKIPPED,
                    json!({"agent": agent.name, "reason": reason, "trigger": trigger}),
                    Some(&agent.name),
                );
                trigger = names::PHASE_ENTERED.to_string();
            } else {
                if activations >= workflow.max_activations {
                    self.emit(
                        names::HARNESS_TERMINATING,
                        json!({
                            "reason": format!("max activations ({}) reached", workflow.max_activations),
                            "agent": agent.name,
                            "state": self.last_state,
                        }),
                        Some(&agent.name),
                    );
                    return Err(RunError::MaxActivations {
                        limit: workflow.max_activations,
                        agent: agent.name.clone(),
                    });
                }
                activations += 1;
                trigger = self.activate(agent, state, &trigger).await?;
            }
            self.emit(names::PHASE_EXITED, entered, None);
            self.persist();
            current = match &phase.next {
                Next::End => return Ok(()),
                Next::Fixed(next) => next.as_str(),
                Next::Dynamic(next) => {
                    let next = next(state);
                    match workflow.phases.iter().find(|(n, _)| *n == next) {
                        Some((n, _)) => n.as_str(),
                        None => {
                            return Err(RunError::Workflow(format!(
                                "phase `{name}` chose next phase `{next}`, which is not a phase of `{}` (phases: {})",
                                workflow.name,
                                workflow.phase_names().collect::<Vec<_>>().join(", ")
                            )));
                        }
                    }
                }
            };
        }
    }

    /// Run one activation of `agent`; returns the trigger for the next one.
    async fn activate<S: State>(
        &mut self,
        agent: &Agent<S>,
        state: &mut S,
        trigger: &str,
    ) -> Result<String, RunError> {
        let began = self.clock.elapsed_ms();
        self.emit(
            names::AGENT_ACTIVATED,
            json!({"agent": agent.name, "trigger": trigger}),
            Some(&agent.name),
        );
        let (text, usage) = self.converse(agent, state).await?;

        // Read the answer and fold it into state.
        let output = match &agent.output {
            OutputSpec::Text(update) => {
                if let Some(update) = update {
                    update(text.clone(), state);
                }
                Value::String(text)
            }
            OutputSpec::Structured { apply, .. } => {
                let value = parse_json_answer(&text).map_err(|message| RunError::Output {
                    agent: agent.name.clone(),
                    message,
                })?;
                apply(value.clone(), state).map_err(|message| RunError::Output {
                    agent: agent.name.clone(),
                    message,
                })?;
                value
            }
        };
        self.last_output = Some(output);
        self.diff_state(state, Some(&agent.name))?;
        self.emit(
            names::AGENT_COMPLETED,
            json!({
                "agent": agent.name,
                "durationMs": self.clock.elapsed_ms().saturating_sub(began),
                "usage": usage,
            }),
            Some(&agent.name),
        );
        let mut next_trigger = names::PHASE_ENTERED.to_string();
        for emit in &agent.emits {
            let mut payload = Map::new();
            payload.insert("agent".into(), Value::String(agent.name.clone()));
            if let Some(attach) = &emit.attach {
                match attach(state) {
                    Value::Object(extra) => payload.extend(extra),
                    other => {
                        payload.insert("value".into(), other);
                    }
                }
            }
            self.emit(&emit.name, Value::Object(payload), Some(&agent.name));
            next_trigger = emit.name.clone();
        }
        Ok(next_trigger)
    }

    /// The model ↔ tool loop. Returns the final text and the summed usage.
    async fn converse<S: State>(
        &mut self,
        agent: &Agent<S>,
        state: &mut S,
    ) -> Result<(String, crate::provider::Usage), RunError> {
        let Some(provider) = agent.provider.clone() else {
            return Err(RunError::Workflow(format!(
                "agent `{}` has no provider",
                agent.name
            )));
        };
        let mut request = first_request(agent, state);
        let mut usage = crate::provider::Usage::default();
        for _round in 0..=agent.max_tool_rounds {
            self.link_recording(agent, &mut request);
            let response = self.call_provider(agent, &*provider, &request).await?;
            usage += response.usage;
            if response.tool_calls.is_empty() {
                return Ok((response.text, usage));
            }
            self.answer_tool_calls(agent, &mut request, response, state)
                .await?;
            self.persist();
        }
        Err(RunError::Tool {
            agent: agent.name.clone(),
            message: format!(
                "the model was still calling tools after {} rounds (raise it with Agent::max_tool_rounds)",
                agent.max_tool_rounds
            ),
        })
    }

    /// Give the next call of `agent` its recording id (`recording:linked`)
    /// and the run's clock.
    fn link_recording<S>(&mut self, agent: &Agent<S>, request: &mut CompletionRequest) {
        let invocation = {
            let n = self.invocations.entry(agent.name.clone()).or_insert(0);
            *n += 1;
            *n - 1
        };
        let recording_id = self
            .recording
            .as_ref()
            .map(|scope| scope.recording_id(&agent.name, invocation).to_string());
        if let Some(id) = &recording_id {
            self.emit(
                names::RECORDING_LINKED,
                json!({"recordingId": id, "node": agent.name, "invocation": invocation}),
                Some(&agent.name),
            );
        }
        request.context.recording_id = recording_id;
        request.context.clock = Some(self.clock.clone());
    }

    /// One provider call within the run's time limit, between
    /// `provider:start` and `provider:end` (or `provider:error`).
    async fn call_provider<S>(
        &mut self,
        agent: &Agent<S>,
        provider: &dyn crate::provider::Provider,
        request: &CompletionRequest,
    ) -> Result<crate::provider::CompletionResponse, RunError> {
        self.emit(
            names::PROVIDER_START,
            json!({"provider": provider.name(), "model": provider.model(), "recordingId": request.context.recording_id, "request": prompt_of(request)}),
            Some(&agent.name),
        );
        let call_began = self.clock.elapsed_ms();
        let deadline = self.deadline.filter(|_| !self.clock.is_virtual());
        let attempts = request.context.attempts.clone();
        attempts.set(0);
        let response = {
            let mut sink = DeltaSink {
                exec: &mut *self,
                agent: &agent.name,
            };
            let call = provider.complete(request, &mut sink);
            match deadline {
                Some(deadline) => tokio::time::timeout_at(deadline.into(), call).await.ok(),
                None => Some(call.await),
            }
        };
        // In virtual time the limit is judged on the recorded time: the
        // call ran past it when its recorded end lies beyond it.
        let response = response.filter(|_| !self.past_virtual_deadline());
        let Some(response) = response else {
            return Err(self.provider_timeout(agent));
        };
        let response = match response {
            Ok(response) => response,
            Err(source) => {
                // Whatever provider wrote it: no key-shaped string goes on.
                let source = source.redacted();
                let mut payload = json!({"error": source.to_string(), "code": source.code()});
                with_retries(&mut payload, attempts.get());
                self.emit(names::PROVIDER_ERROR, payload, Some(&agent.name));
                return Err(RunError::Provider {
                    agent: agent.name.clone(),
                    source,
                });
            }
        };
        let cost = self.pricing.cost(&response.model, response.usage);
        let output = if response.tool_calls.is_empty() {
            Value::String(response.text.clone())
        } else {
            json!({"text": response.text, "toolCalls": response.tool_calls})
        };
        let mut payload = json!({
            "provider": provider.name(),
            "model": response.model,
            "output": output,
            "usage": response.usage,
            "costUsd": cost,
            "durationMs": self.clock.elapsed_ms().saturating_sub(call_began),
            "stopReason": response.stop_reason,
        });
        with_retries(&mut payload, attempts.get());
        self.emit(names::PROVIDER_END, payload, Some(&agent.name));
        if request.options.stream && !response.text.is_empty() {
            self.emit(
                names::TEXT_COMPLETE,
                json!({"content": response.text}),
                Some(&agent.name),
            );
        }
        Ok(response)
    }

    /// The run's time limit passed during a provider call: `provider:error`.
    fn provider_timeout<S>(&mut self, agent: &Agent<S>) -> RunError {
        let after_ms = match self.timeout {
            Some(limit) if self.clock.is_virtual() => limit.as_millis() as u64,
            _ => self.clock.elapsed_ms(),
        };
        self.emit(
            names::PROVIDER_ERROR,
            json!({"error": format!("run time limit reached after {after_ms} ms"), "code": "timeout"}),
            Some(&agent.name),
        );
        RunError::Timeout {
            agent: agent.name.clone(),
            after_ms,
        }
    }

    /// Continue the conversation with the model's tool calls and their
    /// results.
    async fn answer_tool_calls<S: State>(
        &mut self,
        agent: &Agent<S>,
        request: &mut CompletionRequest,
        response: crate::provider::CompletionResponse,
        state: &mut S,
    ) -> Result<(), RunError> {
        let mut assistant = Vec::new();
        if !response.text.is_empty() {
            assistant.push(ContentPart::Text {
                text: response.text,
            });
        }
        assistant.extend(
            response
                .tool_calls
                .iter()
                .cloned()
                .map(ContentPart::ToolCall),
        );
        request.messages.push(Message {
            role: Role::Assistant,
            content: assistant,
        });
        let mut results = Vec::with_capacity(response.tool_calls.len());
        for call in &response.tool_calls {
            results.push(self.call_tool(agent, call, state).await?);
        }
        request.messages.push(Message {
            role: Role::User,
            content: results,
        });
        Ok(())
    }

    /// Answer one tool call: run the tool (a recorded one in playback:
    /// answer from its recording), emit the state it changed, and return
    /// the result for the model. A tool's failure goes back to the model;
    /// the run fails only on a playback failure or its time limit.
    async fn call_tool<S: State>(
        &mut self,
        agent: &Agent<S>,
        call: &ToolCall,
        state: &mut S,
    ) -> Result<ContentPart, RunError> {
        self.emit(
            names::TOOL_CALL,
            json!({"id": call.id, "name": call.name, "input": call.arguments}),
            Some(&agent.name),
        );
        let result = match agent.tools.iter().find(|t| t.name() == call.name) {
            Some(tool) => self.run_tool(agent, tool, call, state).await?,
            None => Err(format!(
                "unknown tool `{}` (tools: {})",
                call.name,
                agent
                    .tools
                    .iter()
                    .map(|t| t.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
        let (result, is_error) = match result {
            Ok(value) => (value, false),
            Err(message) => (Value::String(message), true),
        };
        self.emit(
            names::TOOL_RESULT,
            json!({"id": call.id, "name": call.name, "result": result, "isError": is_error}),
            Some(&agent.name),
        );
        let content = match &result {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        Ok(ContentPart::ToolResult {
            call_id: call.id.clone(),
            content,
            is_error,
        })
    }

    /// Run `tool` for `call` (or play its recording back), within the run's
    /// time limit; a stateful tool's changes land in `state` and are emitted.
    async fn run_tool<S: State>(
        &mut self,
        agent: &Agent<S>,
        tool: &super::Tool<S>,
        call: &ToolCall,
        state: &mut S,
    ) -> Result<Result<Value, String>, RunError> {
        let recording = self.tool_recording(agent, tool);
        if let Some((recorder, id)) = &recording
            && let Some(answer) =
                recorder
                    .recorded_answer(id, &call.arguments)
                    .map_err(|message| RunError::Tool {
                        agent: agent.name.clone(),
                        message,
                    })?
        {
            self.clock.credit(answer.duration);
            return Ok(answer.result);
        }
        // A stateful tool works on a copy, taken back when it returns; a
        // tool without state gets none.
        let ctx = tool
            .is_stateful()
            .then(|| ToolContext::new(state.clone(), &agent.name, &call.id));
        let began = Instant::now();
        let future = tool.run(call.arguments.clone(), ctx.clone());
        let deadline = self.deadline.filter(|_| !self.clock.is_virtual());
        let result = match deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline.into(), future).await {
                Ok(result) => result,
                Err(_) => {
                    return Err(RunError::Timeout {
                        agent: agent.name.clone(),
                        after_ms: self.clock.elapsed_ms(),
                    });
                }
            },
            None => future.await,
        };
        if let Some((recorder, id)) = &recording
            && recorder.mode() == RecorderMode::Record
        {
            recorder
                .record(id, tool.name(), &call.arguments, &result, began.elapsed())
                .map_err(|message| RunError::Tool {
                    agent: agent.name.clone(),
                    message,
                })?;
        }
        if let Some(ctx) = ctx {
            *state = ctx.into_state();
            self.diff_state_by(state, Some(&agent.name), Some(&call.id))?;
        }
        Ok(result)
    }

    /// The recorder and recording id of this call of a recorded tool (none
    /// for other tools, in live mode, or outside an eval).
    fn tool_recording<S>(
        &mut self,
        agent: &Agent<S>,
        tool: &super::Tool<S>,
    ) -> Option<(ToolRecorder, RecordingId)> {
        if !tool.is_recorded() {
            return None;
        }
        let recorder = self
            .tools
            .clone()
            .filter(|r| r.mode() != RecorderMode::Live)?;
        let node = format!("{}.tool.{}", agent.name, tool.name());
        let scope = self.recording.as_ref()?;
        let n = self.invocations.entry(node.clone()).or_insert(0);
        let invocation = *n;
        *n += 1;
        Some((recorder, scope.recording_id(&node, invocation)))
    }
}

/// `attempts` on a `provider:end`/`provider:error` payload when the call
/// was retried (a call that took one attempt says nothing, as before).
pub(super) fn with_retries(payload: &mut Value, attempts: u32) {
    if attempts > 1 {
        payload["attempts"] = json!(attempts);
    }
}

/// An agent's first request: its system prompt, its prompt of `state`,
/// its tools, its output schema and options.
fn first_request<S>(agent: &Agent<S>, state: &S) -> CompletionRequest {
    CompletionRequest {
        system: agent.system.clone(),
        messages: vec![Message::user((agent.prompt)(state))],
        tools: agent.tools.iter().map(|t| t.spec().clone()).collect(),
        output_schema: match &agent.output {
            OutputSpec::Structured { schema, .. } => Some(schema.clone()),
            OutputSpec::Text(_) => None,
        },
        options: agent.options.clone(),
        context: CallContext::default(),
    }
}

/// Parse a structured answer, tolerating a surrounding Markdown code fence.
fn parse_json_answer(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .unwrap_or(trimmed);
    serde_json::from_str(body.trim()).map_err(|e| {
        let preview: String = trimmed.chars().take(120).collect();
        format!("answer is not JSON ({e}): {preview:?}")
    })
}

/// What `provider:start` shows of a request (for the transcript): the
/// system prompt and the messages since the model's latest answer (all of
/// them on the first call; in a tool loop, the tool results, whose calls
/// the signals before already show), with `earlier` the count left out;
/// key-shaped strings redacted.
pub(super) fn prompt_of(request: &CompletionRequest) -> Value {
    let from = request
        .messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .map_or(0, |i| i + 1);
    let prompt = json!({
        "system": request.system,
        "messages": request.messages[from..],
        "earlier": from,
    });
    crate::provider::recorder::builtin_scrubber().json(&prompt)
}
