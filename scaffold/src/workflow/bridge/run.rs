//! A bridged agent's run: start a bridge, run the agent with its
//! context, and turn its exchanges and what it added into the run's
//! signals, state, output and error.
//!
//! Signals are placed on a timeline. Live and recording runs keep real
//! time and the order things happened in. Playback keeps virtual time:
//! calls count one after another for their recorded durations (so calls
//! made in parallel count as if made in turn), in the order they were
//! recorded in, whichever arrives first; what the agent adds goes after
//! the calls that had ended before it (of its agent, with
//! [`AgentCx::emit_as`]). So its signals are the same run after run.

use std::collections::{BTreeMap, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::{Value, json};

use super::cx::{Added, AddedKind};
use super::{AgentCx, AgentFn, Bridged};
use crate::provider::anthropic::Anthropic;
use crate::provider::bridge::{Bridge, BridgeSetup, Exchange, RecordingIds};
use crate::provider::http::{install_default_tls, resolve_transport};
use crate::provider::limit::run_limits;
use crate::provider::openai::OpenAi;
use crate::provider::recorder::RecorderMode;
use crate::provider::{ContentPart, ProviderError, Role, Usage};
use crate::signal::names;
use crate::workflow::State;
use crate::workflow::run::{Execution, RunError, RunOptions, prompt_of, with_retries};

/// How long streams the agent left open get to end once it returned.
const GRACE: Duration = Duration::from_secs(2);

/// What happened in a bridged run, in the order it is told.
enum Item {
    Call(Box<Exchange>),
    Added(Added),
}

impl Item {
    fn ticks(&self) -> (u64, u64) {
        match self {
            Item::Call(e) => e.ticks,
            Item::Added(a) => (a.tick, a.tick),
        }
    }
}

impl Execution {
    /// Run `bridged`'s agent on `input`: the run's signals come from its
    /// calls through the bridge and what it added through its context.
    pub(crate) async fn execute_bridged<S: State>(
        &mut self,
        bridged: &Bridged,
        input: &Value,
        state: &mut S,
        options: &RunOptions,
    ) -> Result<(), RunError> {
        let Some(agent) = &bridged.agent else {
            return Err(RunError::Workflow("no agent runs this variant".into()));
        };
        self.diff_state(state, None)?;
        install_default_tls();
        let mode = match &options.recorder {
            Some(recorder) => recorder.mode(),
            None if self.clock.is_virtual() => RecorderMode::Playback,
            None => RecorderMode::Live,
        };
        let start = self.clock.elapsed_ms();
        let bridge = Bridge::start(self.bridge_setup(options), options.bridges.clone())
            .await
            .map_err(|e| RunError::Agent(format!("could not start its bridge: {e}")))?;
        let cx = AgentCx::new(input.clone(), bridged.variant.clone(), &bridge, mode);
        let ran = self.run_agent(agent, cx.clone()).await;
        let log = bridge.finish(GRACE).await;
        let items: Vec<Item> = log
            .exchanges
            .into_iter()
            .map(|e| Item::Call(Box::new(e)))
            .chain(cx.take_added().into_iter().map(Item::Added))
            .collect();
        let items = order(items, self.clock.is_virtual());
        let told = self.tell(&items, start)?;
        if let Some(reported) = told.state {
            *state = serde_json::from_value(reported).map_err(|e| {
                RunError::Agent(format!(
                    "the state it reported is not a `{}`: {e}",
                    std::any::type_name::<S>()
                ))
            })?;
        }
        let output = match &ran {
            Ok(Value::Null) | Err(_) => told.last_answer.clone().map(Value::String),
            Ok(output) => Some(output.clone()),
        };
        if output.is_some() {
            self.last_output = output;
        }
        if !log.problems.is_empty() {
            return Err(RunError::Agent(log.problems.join("; ")));
        }
        if mode == RecorderMode::Playback && items.iter().all(|i| matches!(i, Item::Added(_))) {
            let recorded = self.cell_recordings(options);
            if !recorded.is_empty() {
                return Err(RunError::Agent(format!(
                    "the agent made no call through the cell's base URLs, though this cell has \
                     recordings ({}): a client that calls its API itself (a hard-coded \
                     api.openai.com) must take cx.openai_base_url(..) or \
                     cx.anthropic_base_url(..), and cx.openai_api_key()",
                    recorded.join(", ")
                )));
            }
        }
        if let Some((agent, source)) = told.unplayable {
            return Err(RunError::Provider { agent, source });
        }
        match ran {
            Err(RunError::Agent(message)) => match told.last_failure {
                Some((agent, source)) => Err(RunError::Provider { agent, source }),
                None => Err(RunError::Agent(message)),
            },
            Err(other) => Err(other),
            Ok(_) if self.past_virtual_deadline() => Err(RunError::Timeout {
                agent: told.last_agent.unwrap_or_else(|| "agent".into()),
                after_ms: self.timeout.map_or(0, |t| t.as_millis() as u64),
            }),
            Ok(_) => Ok(()),
        }
    }

    /// The names of (at most three of) the recordings of this run's cell.
    fn cell_recordings(&self, options: &RunOptions) -> Vec<String> {
        let (Some(scope), Some(recorder)) = (&self.recording, &options.recorder) else {
            return Vec::new();
        };
        let probe = scope.recording_id("agent", 0);
        let prefix = format!(
            "eval__{}__{}__{}__",
            probe.dataset, probe.case, probe.variant
        );
        let trial = probe.trial.map(|t| format!("__t{t}"));
        let Ok(entries) = std::fs::read_dir(recorder.recordings_dir()) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter_map(|name| name.strip_suffix(".json").map(str::to_string))
            .filter(|name| name.starts_with(&prefix))
            .filter(|name| match &trial {
                Some(trial) => name.ends_with(trial.as_str()),
                None => !name
                    .rsplit("__")
                    .next()
                    .unwrap_or_default()
                    .starts_with('t'),
            })
            .collect();
        names.sort();
        names.truncate(3);
        names
    }

    fn bridge_setup(&self, options: &RunOptions) -> BridgeSetup {
        let ids: Option<RecordingIds> = self.recording.clone().map(|scope| {
            Arc::new(move |node: &str, n: u32| scope.recording_id(node, n)) as RecordingIds
        });
        BridgeSetup {
            transport: match &options.recorder {
                Some(recorder) => recorder.bridge_transport(),
                None => resolve_transport(&None),
            },
            recorder: options.recorder.clone(),
            ids,
            virtual_time: self.clock.is_virtual(),
            limits: run_limits(),
            openai: match &options.upstream.openai {
                Some(provider) => provider.http().clone(),
                None => OpenAi::new("").http().clone(),
            },
            anthropic: match &options.upstream.anthropic {
                Some(provider) => provider.http().clone(),
                None => Anthropic::new("").http().clone(),
            },
        }
    }

    /// Run the agent within the run's time limit, catching its panic. The
    /// limit holds in real time in playback too (the agent is real code
    /// that may hang); there, the recorded time is judged against it after.
    async fn run_agent(&self, agent: &AgentFn, cx: AgentCx) -> Result<Value, RunError> {
        panics::watch();
        let call = AssertUnwindSafe(agent.call(cx)).catch_unwind();
        let caught = match self.deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline.into(), call).await {
                Ok(caught) => caught,
                Err(_) => {
                    return Err(RunError::Timeout {
                        agent: "agent".into(),
                        after_ms: self.clock.elapsed_ms(),
                    });
                }
            },
            None => call.await,
        };
        match caught {
            Ok(Ok(output)) => Ok(output),
            Ok(Err(message)) => Err(RunError::Agent(format!("the agent failed: {message}"))),
            Err(panic) => Err(RunError::Agent(format!(
                "the agent panicked{}: {}",
                panics::last_location()
                    .map(|at| format!(" at {at}"))
                    .unwrap_or_default(),
                panics::message(panic.as_ref())
            ))),
        }
    }

    /// Emit the signals of `items` on the run's timeline, from `start`
    /// (when the bridge started, in ms of the run's clock).
    fn tell(&mut self, items: &[Item], start: u64) -> Result<Told, RunError> {
        let mut told = Told::default();
        let mut now = start;
        for item in items {
            match item {
                Item::Call(exchange) => {
                    let (began, ended) = if self.clock.is_virtual() {
                        let recorded = exchange.recorded.as_millis() as u64;
                        (now, now.saturating_add(recorded))
                    } else {
                        (
                            start + exchange.real.0.as_millis() as u64,
                            start + exchange.real.1.as_millis() as u64,
                        )
                    };
                    self.tell_call(exchange, (began, ended), &mut told);
                    now = now.max(ended);
                }
                Item::Added(added) => {
                    let at = if self.clock.is_virtual() {
                        now
                    } else {
                        start + added.real.as_millis() as u64
                    };
                    self.stamp = Some(at);
                    let agent = added.agent.as_deref();
                    match &added.what {
                        AddedKind::Signal { name, payload } => {
                            self.emit(name, payload.clone(), agent);
                        }
                        AddedKind::State(value) => {
                            self.diff_value(value.clone(), agent, None)?;
                            told.state = Some(value.clone());
                        }
                    }
                }
            }
        }
        if !self.clock.is_virtual() {
            now = now.max(self.clock.elapsed_ms());
        }
        self.stamp = Some(now);
        for (agent, (duration, usage)) in std::mem::take(&mut told.agents) {
            self.emit(
                names::AGENT_COMPLETED,
                json!({"agent": agent, "durationMs": duration, "usage": usage}),
                Some(&agent),
            );
        }
        self.stamp = None;
        // Playback's clock moves by the recorded time told (a real one
        // ignores this).
        self.clock
            .advance(Duration::from_millis(now.saturating_sub(start)));
        Ok(told)
    }

    /// The signals of one call, from `began` to `ended` (ms).
    fn tell_call(&mut self, e: &Exchange, (began, ended): (u64, u64), told: &mut Told) {
        self.stamp = Some(began);
        self.tell_asked(e, told);
        self.stamp = Some(ended);
        let duration = ended.saturating_sub(began);
        told.agents.entry(e.agent.clone()).or_default().0 += duration;
        told.last_agent = Some(e.agent.clone());
        match &e.error {
            Some(error) => self.tell_failure(e, error, told),
            None => self.tell_answer(e, duration, told),
        }
    }

    /// What a call asked: its agent's activation (the first time), its
    /// recording, the tool results it sends back, `provider:start`.
    fn tell_asked(&mut self, e: &Exchange, told: &mut Told) {
        let agent = Some(e.agent.as_str());
        if !told.agents.contains_key(&e.agent) {
            self.emit(
                names::AGENT_ACTIVATED,
                json!({"agent": e.agent, "trigger": "bridge"}),
                agent,
            );
        }
        let id = e.recording_id.as_ref().map(ToString::to_string);
        if let Some(id) = &id {
            self.emit(
                names::RECORDING_LINKED,
                json!({"recordingId": id, "node": e.agent, "invocation": e.invocation}),
                agent,
            );
        }
        self.tell_results(e, told);
        self.emit(
            names::PROVIDER_START,
            json!({"provider": e.provider, "model": e.model, "recordingId": id, "request": prompt_of(&e.asked)}),
            agent,
        );
    }

    /// `provider:error` of a call that failed (a key it quotes redacted).
    fn tell_failure(&mut self, e: &Exchange, error: &ProviderError, told: &mut Told) {
        let error = error.clone().redacted();
        let mut payload = json!({"error": error.to_string(), "code": error.code()});
        with_retries(&mut payload, e.attempts);
        self.emit(names::PROVIDER_ERROR, payload, Some(&e.agent));
        if matches!(error, ProviderError::Playback { .. }) {
            told.unplayable
                .get_or_insert((e.agent.clone(), error.clone()));
        }
        told.last_failure = Some((e.agent.clone(), error));
    }

    /// `provider:end` of a call that was answered, its streamed text and
    /// the tool calls the answer asks for.
    fn tell_answer(&mut self, e: &Exchange, duration: u64, told: &mut Told) {
        let agent = Some(e.agent.as_str());
        told.last_failure = None;
        let mut payload = json!({"provider": e.provider, "model": e.model, "durationMs": duration});
        if let Some(answer) = &e.answer {
            told.agents.entry(e.agent.clone()).or_default().1 += answer.usage;
            let output = if answer.tool_calls.is_empty() {
                Value::String(answer.text.clone())
            } else {
                json!({"text": answer.text, "toolCalls": answer.tool_calls})
            };
            payload["model"] = json!(answer.model);
            payload["output"] = output;
            payload["usage"] = json!(answer.usage);
            payload["costUsd"] = json!(self.pricing.cost(&answer.model, answer.usage));
            payload["stopReason"] = json!(answer.stop_reason);
        }
        if let Some(why) = &e.unread {
            payload["unread"] = json!(why);
        }
        with_retries(&mut payload, e.attempts);
        self.emit(names::PROVIDER_END, payload, agent);
        let Some(answer) = &e.answer else { return };
        if e.streamed && !answer.text.is_empty() {
            self.emit(names::TEXT_COMPLETE, json!({"content": answer.text}), agent);
        }
        if !answer.text.is_empty() || answer.tool_calls.is_empty() {
            told.last_answer = Some(answer.text.clone());
        }
        let pending = told.pending.entry(e.agent.clone()).or_default();
        for call in &answer.tool_calls {
            pending.insert(call.id.clone(), call.name.clone());
            self.emit(
                names::TOOL_CALL,
                json!({"id": call.id, "name": call.name, "input": call.arguments}),
                agent,
            );
        }
    }

    /// `tool:result` for each result the request sends back to a call the
    /// agent's model made before.
    fn tell_results(&mut self, e: &Exchange, told: &mut Told) {
        let pending = told.pending.entry(e.agent.clone()).or_default();
        let since = e
            .asked
            .messages
            .iter()
            .rposition(|m| m.role == Role::Assistant)
            .map_or(0, |i| i + 1);
        for part in e.asked.messages[since..].iter().flat_map(|m| &m.content) {
            let ContentPart::ToolResult {
                call_id,
                content,
                is_error,
            } = part
            else {
                continue;
            };
            let Some(name) = pending.remove(call_id) else {
                continue;
            };
            let result = serde_json::from_str::<Value>(content)
                .unwrap_or_else(|_| Value::String(content.clone()));
            self.emit(
                names::TOOL_RESULT,
                json!({"id": call_id, "name": name, "result": result, "isError": is_error}),
                Some(&e.agent),
            );
        }
    }
}

/// What telling the items found out.
#[derive(Default)]
struct Told {
    /// Per agent: the time its calls took and their usage.
    agents: BTreeMap<String, (u64, Usage)>,
    /// Per agent: its model's tool calls not yet answered, id → name.
    pending: HashMap<String, HashMap<String, String>>,
    /// The last state the agent reported.
    state: Option<Value>,
    /// The text of the last answer that was not only tool calls.
    last_answer: Option<String>,
    /// The agent of the last call.
    last_agent: Option<String>,
    /// The last call's failure, if the last call failed.
    last_failure: Option<(String, ProviderError)>,
    /// The first call that could not be played back.
    unplayable: Option<(String, ProviderError)>,
}

/// `items` in the order they are told. Live and record: as they
/// happened (by their first order mark). Playback: the calls in the order
/// their recordings were made in, so calls made at once (agents in
/// parallel) are told the same way every run, and what the agent added
/// after the calls that had ended before it.
fn order(mut items: Vec<Item>, playback: bool) -> Vec<Item> {
    items.sort_by_key(|item| item.ticks().0);
    if !playback {
        return items;
    }
    let (mut calls, added): (Vec<Item>, Vec<Item>) = items
        .into_iter()
        .partition(|item| matches!(item, Item::Call(_)));
    calls.sort_by_key(|call| match call {
        Item::Call(e) => (e.recorded_order.unwrap_or(u64::MAX), e.ticks.0),
        Item::Added(a) => (u64::MAX, a.tick),
    });
    // What the agent added goes after the last call (in the told order)
    // that had ended before it: of its own agent when it names one, whose
    // calls come one after another, so the place is the same every run.
    let mut added: Vec<(usize, Item)> = added
        .into_iter()
        .map(|item| {
            let at = item.ticks().0;
            let named = match &item {
                Item::Added(a) => a.agent.as_deref(),
                Item::Call(_) => None,
            };
            let after = calls
                .iter()
                .rposition(|call| match call {
                    Item::Call(e) => e.ticks.1 < at && named.is_none_or(|agent| agent == e.agent),
                    Item::Added(_) => false,
                })
                .map_or(0, |i| i + 1);
            (after, item)
        })
        .collect();
    added.sort_by_key(|(after, item)| (*after, item.ticks().0));
    added.reverse();
    let mut told = Vec::with_capacity(calls.len() + added.len());
    for (index, call) in calls.into_iter().enumerate() {
        while added.last().is_some_and(|(after, _)| *after <= index) {
            told.extend(added.pop().map(|(_, item)| item));
        }
        told.push(call);
    }
    told.extend(added.into_iter().rev().map(|(_, item)| item));
    told
}

/// Where a bridged agent panicked: a panic hook, set once and chained to
/// the one before it (which still prints the panic), keeps the location
/// of the last panic of each thread; the run catches the panic on the
/// thread it happened on and reads it there.
mod panics {
    use std::cell::RefCell;
    use std::sync::Once;

    thread_local! {
        static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
    }

    /// Keep panics' locations from now on.
    pub(super) fn watch() {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let before = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                let at = info.location().map(ToString::to_string);
                LAST.with(|last| *last.borrow_mut() = at);
                before(info);
            }));
        });
        LAST.with(|last| *last.borrow_mut() = None);
    }

    /// Where this thread last panicked.
    pub(super) fn last_location() -> Option<String> {
        LAST.with(|last| last.borrow_mut().take())
    }

    /// A panic's message.
    pub(super) fn message(payload: &(dyn std::any::Any + Send)) -> String {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(a panic without a message)".to_string())
    }
}
