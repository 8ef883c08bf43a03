//! The signal stream: every run is a sequence of [`Signal`]s.
//!
//! Names are colon paths (`agent:activated`, `state:plan:changed`) so that
//! globs such as `agent:*` or `tool:**` match them segment by segment.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One event of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Signal {
    /// Position in the session, starting at 0, without gaps.
    pub index: u64,
    /// Colon path, e.g. `agent:activated`.
    pub name: String,
    /// What the signal carries (an object for every built-in signal).
    pub payload: Value,
    /// Milliseconds since the session started.
    pub at_ms: u64,
    /// The agent that emitted it, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl Signal {
    /// The value of a top-level payload field, if the payload is an object that has it.
    pub fn field(&self, key: &str) -> Option<&Value> {
        self.payload.get(key)
    }

    /// For a `state:<key>:changed` signal, the state key it changes.
    ///
    /// ```
    /// use scaffold::signal::Signal;
    /// let s = Signal { index: 0, name: "state:plan:changed".into(), payload: serde_json::json!({}), at_ms: 0, agent: None };
    /// assert_eq!(s.state_key(), Some("plan"));
    /// ```
    pub fn state_key(&self) -> Option<&str> {
        names::state_key(&self.name)
    }
}

/// The built-in signal names.
pub(crate) mod names {
    /// A run starts: `{agents, state}`.
    pub const HARNESS_START: &str = "harness:start";
    /// A run ends: `{durationMs, activations, state}`.
    pub const HARNESS_END: &str = "harness:end";
    /// A run is cut short: `{reason, agent, state}`.
    pub const HARNESS_TERMINATING: &str = "harness:terminating";
    /// `{phase, occurrence}`.
    pub const PHASE_ENTERED: &str = "phase:entered";
    /// `{phase, occurrence}`.
    pub const PHASE_EXITED: &str = "phase:exited";
    /// `{agent, trigger}`.
    pub const AGENT_ACTIVATED: &str = "agent:activated";
    /// `{agent, reason, trigger}`.
    pub const AGENT_SKIPPED: &str = "agent:skipped";
    /// `{agent, durationMs, usage}`.
    pub const AGENT_COMPLETED: &str = "agent:completed";
    /// `{provider, model, recordingId}`.
    pub const PROVIDER_START: &str = "provider:start";
    /// `{output, usage: {inputTokens, outputTokens}, costUsd, durationMs}`.
    pub const PROVIDER_END: &str = "provider:end";
    /// `{error, code}`.
    pub const PROVIDER_ERROR: &str = "provider:error";
    /// `{content}`.
    pub const TEXT_DELTA: &str = "text:delta";
    /// `{content}`.
    pub const TEXT_COMPLETE: &str = "text:complete";
    /// `{id, name, input}`.
    pub const TOOL_CALL: &str = "tool:call";
    /// `{id, result, isError}`.
    pub const TOOL_RESULT: &str = "tool:result";
    /// `{recordingId, node, invocation}`.
    pub const RECORDING_LINKED: &str = "recording:linked";

    /// `state:<key>:changed` for a top-level state key.
    pub fn state_changed(key: &str) -> String {
        format!("state:{key}:changed")
    }

    /// The key of a `state:<key>:changed` name.
    pub fn state_key(name: &str) -> Option<&str> {
        name.strip_prefix("state:")?.strip_suffix(":changed")
    }

    /// `error:<kind>`.
    pub fn error(kind: super::ErrorKind) -> String {
        format!("error:{}", kind.as_str())
    }
}

/// The kinds of `error:<kind>` signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// The provider call failed.
    Provider,
    /// A tool failed or the tool loop ran out of rounds.
    Tool,
    /// The model's output did not parse into the agent's output type.
    Output,
    /// A time limit was reached.
    Timeout,
    /// The workflow itself is wrong (unknown phase, runaway loop, bad configuration).
    Workflow,
}

impl ErrorKind {
    /// The name used in `error:<kind>`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Provider => "provider",
            ErrorKind::Tool => "tool",
            ErrorKind::Output => "output",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Workflow => "workflow",
        }
    }
}
