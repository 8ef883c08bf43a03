//! Where a run's session goes as it runs: a [`SessionSink`] is told when
//! the session begins, each batch of its signals in order, and how it ended.
//! The store is one ([`Store`](crate::store::Store) persists them in SQLite);
//! the workflow layer knows only this trait.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::signal::Signal;
use crate::util::now_ms;

/// Why a sink did not take a write.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// Receives a run's session: its start, its signals, its end.
pub trait SessionSink: fmt::Debug + Send + Sync {
    /// A session begins.
    fn begin_session(&self, meta: &SessionMeta) -> Result<(), SinkError>;
    /// More signals of session `session_id`, in order.
    fn append(&self, session_id: &str, signals: &[Signal]) -> Result<(), SinkError>;
    /// Session `id` ended.
    fn finish_session(&self, id: &str, end: &SessionEnd) -> Result<(), SinkError>;
}

/// A fresh session id: a UUID v7, which starts with the time, so that the
/// rows of new sessions (keyed by id) are appended at the end of the tables'
/// B-trees instead of at random pages (a write rewrites every page it touches).
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// How a session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// Begun and not finished (or the process died before finishing it).
    Running,
    /// Ran to a terminal phase.
    Completed,
    /// Stopped by an error.
    Failed,
    /// Cut short (activation bound, timeout, cancellation).
    Terminated,
    /// Its process ended (was killed) before it did: marked so by the
    /// resume of its eval run.
    Interrupted,
}

impl SessionStatus {
    /// The lowercase name, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Running => "running",
            SessionStatus::Completed => "completed",
            SessionStatus::Failed => "failed",
            SessionStatus::Terminated => "terminated",
            SessionStatus::Interrupted => "interrupted",
        }
    }
}

impl fmt::Display for SessionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is known of a session when it begins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMeta {
    /// Unique id (a UUID by default, see [`SessionMeta::generate`]).
    pub id: String,
    /// The workflow's name.
    pub workflow: String,
    /// The variant id, for eval cells.
    #[serde(default)]
    pub variant: Option<String>,
    /// The session this one was forked from.
    #[serde(default)]
    pub parent_id: Option<String>,
    /// Where in the parent the fork happened (an index, a signal name, …).
    #[serde(default)]
    pub fork_point: Option<Value>,
    /// The workflow's input.
    #[serde(default)]
    pub input: Value,
    /// The state before the first signal (a JSON object).
    #[serde(default)]
    pub initial_state: Value,
    /// Free labels; [`SessionFilter::tag`](crate::store::SessionFilter::tag) lists by them.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Unix time in milliseconds.
    pub started_at_ms: u64,
}

impl SessionMeta {
    /// A session of `workflow` starting now, with a `null` input, an empty
    /// object as initial state and no tags.
    pub fn new(id: impl Into<String>, workflow: impl Into<String>) -> Self {
        SessionMeta {
            id: id.into(),
            workflow: workflow.into(),
            variant: None,
            parent_id: None,
            fork_point: None,
            input: Value::Null,
            initial_state: Value::Object(serde_json::Map::new()),
            tags: Vec::new(),
            started_at_ms: now_ms(),
        }
    }

    /// Like [`SessionMeta::new`] with a fresh id from `new_session_id`.
    pub fn generate(workflow: impl Into<String>) -> Self {
        SessionMeta::new(new_session_id(), workflow)
    }

    /// Set the variant id.
    pub fn variant(mut self, variant: impl Into<String>) -> Self {
        self.variant = Some(variant.into());
        self
    }

    /// Set the parent session and the fork point.
    pub fn forked_from(mut self, parent_id: impl Into<String>, fork_point: Value) -> Self {
        self.parent_id = Some(parent_id.into());
        self.fork_point = Some(fork_point);
        self
    }

    /// Set the input.
    pub fn input(mut self, input: Value) -> Self {
        self.input = input;
        self
    }

    /// Set the initial state.
    pub fn initial_state(mut self, state: Value) -> Self {
        self.initial_state = state;
        self
    }

    /// Add a tag.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// Add several tags.
    pub fn tags<I, T>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.tags.extend(tags.into_iter().map(Into::into));
        self
    }

    /// Set the start time (Unix milliseconds).
    pub fn started_at_ms(mut self, ms: u64) -> Self {
        self.started_at_ms = ms;
        self
    }
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEnd {
    /// The final status.
    pub status: SessionStatus,
    /// The error of a failed or terminated run.
    #[serde(default)]
    pub error: Option<String>,
    /// Unix time in milliseconds.
    pub ended_at_ms: u64,
    /// Wall time of the run.
    pub duration_ms: u64,
    /// The workflow's output.
    #[serde(default)]
    pub output: Option<Value>,
    /// The state at the end.
    #[serde(default)]
    pub final_state: Option<Value>,
}

impl SessionEnd {
    /// An end with `status`, now, of zero duration and without error, output or state.
    pub fn new(status: SessionStatus) -> Self {
        SessionEnd {
            status,
            error: None,
            ended_at_ms: now_ms(),
            duration_ms: 0,
            output: None,
            final_state: None,
        }
    }

    /// A failed end with its error.
    pub fn failed(error: impl Into<String>) -> Self {
        SessionEnd::new(SessionStatus::Failed).error(error)
    }

    /// Set the error.
    pub fn error(mut self, error: impl Into<String>) -> Self {
        self.error = Some(error.into());
        self
    }

    /// Set the end time (Unix milliseconds).
    pub fn ended_at_ms(mut self, ms: u64) -> Self {
        self.ended_at_ms = ms;
        self
    }

    /// Set the duration.
    pub fn duration_ms(mut self, ms: u64) -> Self {
        self.duration_ms = ms;
        self
    }

    /// Set the output.
    pub fn output(mut self, output: Value) -> Self {
        self.output = Some(output);
        self
    }

    /// Set the final state.
    pub fn final_state(mut self, state: Value) -> Self {
        self.final_state = Some(state);
        self
    }
}
