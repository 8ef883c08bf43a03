//! Replay: run a stored session again through its recordings and compare.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use super::fork::resume_in;
use super::{SessionError, recording_scope};
use crate::provider::recorder::{ProviderRecorder, RecorderMode};
use crate::provider::transport::{Transport, with_transport};
use crate::signal::{Signal, names};
use crate::store::{SessionRecord, Store};
use crate::workflow::{RecordingScope, RunOptions, RunResult, State, Workflow, run_from};

/// Payload fields that differ between two runs of the same recordings
/// (times, durations, session ids); comparisons ignore them at any depth,
/// as they ignore [`Signal::at_ms`].
pub const VOLATILE_FIELDS: &[&str] = &[
    "durationMs",
    "latencyMs",
    "sessionId",
    "startedAtMs",
    "endedAtMs",
    "timestamp",
];

/// How many differences a [`ReplayReport`] lists; the rest are counted.
pub const MAX_DIFFERENCES: usize = 50;

/// How to replay: where the recorded responses come from, and the
/// recording scope when the session does not say it.
#[derive(Clone, Default)]
pub struct ReplayOptions {
    transport: Option<Arc<dyn Transport>>,
    recordings: Option<PathBuf>,
    scope: Option<RecordingScope>,
    timeout: Option<Duration>,
    save: bool,
}

impl fmt::Debug for ReplayOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReplayOptions")
            .field("transport", &self.transport.is_some())
            .field("recordings", &self.recordings)
            .field("scope", &self.scope)
            .field("timeout", &self.timeout)
            .field("save", &self.save)
            .finish()
    }
}

impl ReplayOptions {
    /// No transport (the ambient one, if any), the session's own scope, not saved.
    pub fn new() -> Self {
        Self::default()
    }

    /// Send provider calls through `transport` (a playback recorder's).
    pub fn transport(mut self, transport: Arc<dyn Transport>) -> Self {
        self.transport = Some(transport);
        self
    }

    /// Play back the recordings in `dir` (a [`ProviderRecorder`] in
    /// playback mode), unless a transport is given.
    pub fn recordings(mut self, dir: impl Into<PathBuf>) -> Self {
        self.recordings = Some(dir.into());
        self
    }

    /// Key provider calls with `scope` instead of the one the session's
    /// tags (`dataset:`, `case:`, `trial:`, its variant) or recording ids give.
    pub fn scope(mut self, scope: RecordingScope) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Time limit for the replay.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Store the replayed session beside the original (with the original's
    /// tags plus `replay-of:{id}`); by default it is not stored.
    pub fn save(mut self, save: bool) -> Self {
        self.save = save;
        self
    }
}

/// One way the replayed signals differ from the original's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SignalDifference {
    /// The signal index.
    pub index: u64,
    /// The original signal's name (the replayed one's, for an extra signal).
    pub name: String,
    /// What differs: `name`, `agent`, `payload` or `payload.<field>`;
    /// `missing` when the replay has no signal at this index, `extra` when
    /// the original had none.
    pub field: String,
    /// The original value (the whole signal for `missing`).
    pub original: Option<Value>,
    /// The replayed value (the whole signal for `extra`).
    pub replayed: Option<Value>,
}

impl fmt::Display for SignalDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: &Option<Value>| v.as_ref().map_or("-".to_owned(), Value::to_string);
        write!(
            f,
            "#{} {} {}: {} -> {}",
            self.index,
            self.name,
            self.field,
            show(&self.original),
            show(&self.replayed)
        )
    }
}

/// A stored session and its replay, compared signal by signal.
#[derive(Debug)]
pub struct ReplayReport<S> {
    /// The stored session.
    pub original: SessionRecord,
    /// The replay.
    pub replayed: RunResult<S>,
    /// Whether the signal streams match (volatile fields aside).
    pub identical: bool,
    /// The first `MAX_DIFFERENCES` differences, in index order.
    pub differences: Vec<SignalDifference>,
    /// How many more differences there are.
    pub more_differences: usize,
}

/// Run stored session `id` again with `workflow` through recordings, and
/// compare its signals with the stored ones.
///
/// The input is the stored one; a forked session (one whose fork point has
/// `resumeAt`, as [`fork`](super::fork) writes) resumes at that phase from
/// its stored initial state, as the fork did. Provider calls are keyed with
/// the session's recording scope: [`ReplayOptions::scope`], else the
/// `dataset:`, `case:`, `trial:` tags eval cells carry with the session's
/// variant, else the ids of its `recording:linked` signals. Payload fields in
/// `VOLATILE_FIELDS` and signal times are not compared.
pub async fn replay<S: State>(
    store: &Store,
    id: &str,
    workflow: &Workflow<S>,
    options: &ReplayOptions,
) -> Result<ReplayReport<S>, SessionError> {
    let original = store.session(id)?.ok_or_else(|| SessionError::NotFound {
        id: id.to_owned(),
        store: store.path().to_owned(),
    })?;
    let signals = store.signals(id)?;
    let meta = &original.meta;

    let scope = options
        .scope
        .clone()
        .or_else(|| recording_scope(&original, &signals));
    let recorded = signals.iter().any(|s| s.name == names::RECORDING_LINKED);
    if scope.is_none() && recorded {
        return Err(SessionError::NoRecordingScope {
            session: id.to_owned(),
        });
    }
    let mut run = RunOptions::new();
    if let Some(variant) = &meta.variant {
        run = run.variant(variant.clone());
    }
    if let Some(scope) = scope {
        run = run.recording(scope);
    }
    if let Some(timeout) = options.timeout {
        run = run.timeout(timeout);
    }
    if options.save {
        run = run.store(store.clone()).tag(format!("replay-of:{id}"));
        for tag in &meta.tags {
            run = run.tag(tag.clone());
        }
    }
    if let (Some(parent), Some(point)) = (&meta.parent_id, &meta.fork_point) {
        run = run.parent(parent.clone(), point.clone());
    }
    let resume = match meta
        .fork_point
        .as_ref()
        .and_then(|p| p.get("resumeAt"))
        .and_then(Value::as_str)
    {
        Some(phase) => Some(resume_in(
            workflow,
            id,
            phase,
            &meta.initial_state,
            "initial state",
        )?),
        None => None,
    };

    let transport = options.transport.clone().or_else(|| {
        options
            .recordings
            .as_ref()
            .map(|dir| ProviderRecorder::new(dir, RecorderMode::Playback).transport())
    });
    let execution = run_from(workflow, meta.input.clone(), &run, resume);
    let replayed = match transport {
        Some(transport) => with_transport(transport, execution).await,
        None => execution.await,
    };
    let (differences, more_differences) =
        compare_signals(&signals, &replayed.signals, MAX_DIFFERENCES);
    Ok(ReplayReport {
        identical: differences.is_empty(),
        original,
        replayed,
        differences,
        more_differences,
    })
}

/// The differences between two signal streams, ignoring signal times and
/// [`VOLATILE_FIELDS`]: the first `limit`, and how many more there are.
pub fn compare_signals(
    original: &[Signal],
    replayed: &[Signal],
    limit: usize,
) -> (Vec<SignalDifference>, usize) {
    let mut differences = Vec::new();
    let mut more = 0;
    let mut push = |d: SignalDifference| {
        if differences.len() < limit {
            differences.push(d);
        } else {
            more += 1;
        }
    };
    for i in 0..original.len().max(replayed.len()) {
        match (original.get(i), replayed.get(i)) {
            (Some(o), Some(r)) => {
                for d in signal_differences(o, r) {
                    push(d);
                }
            }
            (Some(o), None) => push(SignalDifference {
                index: o.index,
                name: o.name.clone(),
                field: "missing".into(),
                original: Some(comparable_signal(o)),
                replayed: None,
            }),
            (None, Some(r)) => push(SignalDifference {
                index: r.index,
                name: r.name.clone(),
                field: "extra".into(),
                original: None,
                replayed: Some(comparable_signal(r)),
            }),
            (None, None) => {}
        }
    }
    (differences, more)
}

fn signal_differences(o: &Signal, r: &Signal) -> Vec<SignalDifference> {
    let diff = |field: String, original: Value, replayed: Value| SignalDifference {
        index: o.index,
        name: o.name.clone(),
        field,
        original: Some(original),
        replayed: Some(replayed),
    };
    if o.name != r.name {
        return vec![diff(
            "name".into(),
            o.name.clone().into(),
            r.name.clone().into(),
        )];
    }
    let mut out = Vec::new();
    if o.agent != r.agent {
        out.push(diff(
            "agent".into(),
            o.agent.clone().into(),
            r.agent.clone().into(),
        ));
    }
    let (op, rp) = (stable(&o.payload), stable(&r.payload));
    if op == rp {
        return out;
    }
    match (&op, &rp) {
        (Value::Object(om), Value::Object(rm)) => {
            let keys = om.keys().chain(rm.keys().filter(|k| !om.contains_key(*k)));
            for key in keys {
                let (ov, rv) = (om.get(key), rm.get(key));
                if ov != rv {
                    out.push(diff(
                        format!("payload.{key}"),
                        ov.cloned().unwrap_or(Value::Null),
                        rv.cloned().unwrap_or(Value::Null),
                    ));
                }
            }
        }
        _ => out.push(diff("payload".into(), op, rp)),
    }
    out
}

/// A signal as compared: name, agent and payload without volatile fields.
fn comparable_signal(s: &Signal) -> Value {
    let mut v = Map::new();
    v.insert("name".into(), s.name.clone().into());
    if let Some(agent) = &s.agent {
        v.insert("agent".into(), agent.clone().into());
    }
    v.insert("payload".into(), stable(&s.payload));
    Value::Object(v)
}

/// `value` without [`VOLATILE_FIELDS`], at any depth.
fn stable(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !VOLATILE_FIELDS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), stable(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(stable).collect()),
        other => other.clone(),
    }
}
