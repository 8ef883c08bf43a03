//! [`AgentCx`]: what a bridged agent gets for one run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::Variant;
use crate::provider::bridge::{Bridge, valid_agent_name};
use crate::provider::recorder::RecorderMode;

/// The API key an agent is handed in playback: no call leaves the
/// machine, and key-shaped text is redacted wherever it would be written.
const PLAYBACK_OPENAI_KEY: &str = "sk-scaffold-playback";
/// The Anthropic key an agent is handed in playback.
const PLAYBACK_ANTHROPIC_KEY: &str = "sk-ant-scaffold-playback";

/// What a bridged agent gets for one run: the case's input, the variant's
/// data, the base URLs its clients must use, and a way to add what its
/// traffic cannot show (its own signals, its state).
///
/// Clones share the run; hand one to each task of a multi-agent program.
#[derive(Clone)]
pub struct AgentCx {
    inner: Arc<Inner>,
}

struct Inner {
    input: Value,
    variant: Arc<Variant>,
    url: String,
    proxy: Option<String>,
    mode: RecorderMode,
    marker: crate::provider::bridge::Marker,
    added: Mutex<Vec<Added>>,
}

/// Something the agent added, stamped with when.
#[derive(Debug, Clone)]
pub(crate) struct Added {
    /// Order mark among the exchanges.
    pub(crate) tick: u64,
    /// Real time since the bridge started.
    pub(crate) real: Duration,
    /// The agent it speaks for, if it names one.
    pub(crate) agent: Option<String>,
    /// What it is.
    pub(crate) what: AddedKind,
}

/// A signal or a state snapshot.
#[derive(Debug, Clone)]
pub(crate) enum AddedKind {
    Signal { name: String, payload: Value },
    State(Value),
}

impl AgentCx {
    pub(crate) fn new(
        input: Value,
        variant: Arc<Variant>,
        bridge: &Bridge,
        mode: RecorderMode,
    ) -> AgentCx {
        AgentCx {
            inner: Arc::new(Inner {
                input,
                variant,
                url: bridge.url().to_string(),
                proxy: bridge.proxy_url(),
                mode,
                marker: bridge.marker(),
                added: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A proxy URL that refuses what comes through it and fails the run
    /// naming the host (a program's `HTTPS_PROXY` in playback).
    pub(crate) fn proxy_url(&self) -> Option<&str> {
        self.inner.proxy.as_deref()
    }

    /// The case's input.
    pub fn input(&self) -> &Value {
        &self.inner.input
    }

    /// The case's input as a `T` (a string input as the string's JSON
    /// value too: `"\"hi\""` and `"hi"` both give `"hi"`).
    pub fn input_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match (T::deserialize(&self.inner.input), &self.inner.input) {
            (Ok(value), _) => Ok(value),
            (Err(e), Value::String(text)) => serde_json::from_str(text).map_err(|_| e),
            (Err(e), _) => Err(e),
        }
    }

    /// The case's input as text: a string as it is, anything else as JSON.
    pub fn input_text(&self) -> String {
        match &self.inner.input {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    /// The variant's data.
    pub fn variant(&self) -> &Variant {
        &self.inner.variant
    }

    /// `live`, `record` or `playback`.
    pub fn mode(&self) -> RecorderMode {
        self.inner.mode
    }

    /// The bridge's root, `http://127.0.0.1:{port}/{cell}`: a program
    /// builds its agents' base URLs from it (`{root}/{agent}/openai/v1`).
    pub fn bridge_url(&self) -> &str {
        &self.inner.url
    }

    /// The OpenAI-compatible base URL for the agent named `agent` (with
    /// `/v1`, as the OpenAI SDKs, async-openai and rig take it). Each
    /// agent of a program that runs several at once should have its own
    /// name: its calls carry it and are recorded under it.
    ///
    /// # Panics
    /// When `agent` is not 1 to 64 of `[A-Za-z0-9_-]`.
    pub fn openai_base_url(&self, agent: &str) -> String {
        check_name(agent);
        format!("{}/{agent}/openai/v1", self.inner.url)
    }

    /// The Anthropic base URL for the agent named `agent` (without `/v1`,
    /// as the Anthropic SDKs take it).
    ///
    /// # Panics
    /// When `agent` is not 1 to 64 of `[A-Za-z0-9_-]`.
    pub fn anthropic_base_url(&self, agent: &str) -> String {
        check_name(agent);
        format!("{}/{agent}/anthropic", self.inner.url)
    }

    /// The key to give an OpenAI client: a placeholder in playback
    /// (`sk-scaffold-playback`), else `OPENAI_API_KEY` (the placeholder
    /// when it is not set: a local server may need none).
    pub fn openai_api_key(&self) -> String {
        self.key("OPENAI_API_KEY", PLAYBACK_OPENAI_KEY)
    }

    /// The key to give an Anthropic client (see [`AgentCx::openai_api_key`]).
    pub fn anthropic_api_key(&self) -> String {
        self.key("ANTHROPIC_API_KEY", PLAYBACK_ANTHROPIC_KEY)
    }

    fn key(&self, var: &str, placeholder: &str) -> String {
        match self.inner.mode {
            RecorderMode::Playback => placeholder.to_string(),
            _ => std::env::var(var)
                .ok()
                .filter(|k| !k.trim().is_empty())
                .unwrap_or_else(|| placeholder.to_string()),
        }
    }

    /// Add a signal of your own (`review:complete`, say) to the run, where
    /// it happens among the agent's calls.
    pub fn emit(&self, name: impl Into<String>, payload: Value) {
        self.add(
            None,
            AddedKind::Signal {
                name: name.into(),
                payload,
            },
        );
    }

    /// [`AgentCx::emit`] on behalf of the agent named `agent`.
    pub fn emit_as(&self, agent: &str, name: impl Into<String>, payload: Value) {
        self.add(
            Some(agent.to_string()),
            AddedKind::Signal {
                name: name.into(),
                payload,
            },
        );
    }

    /// Report the program's state now: it must serialize to a JSON object
    /// (its keys become `state:<key>:changed` signals, the last one the
    /// run's final state), so `snapshot.at` and `snapshot.final` work.
    pub fn state(&self, state: &impl Serialize) {
        let value = serde_json::to_value(state).unwrap_or_else(|e| {
            Value::String(format!("(the state does not serialize to JSON: {e})"))
        });
        self.add(None, AddedKind::State(value));
    }

    fn add(&self, agent: Option<String>, what: AddedKind) {
        let (tick, real) = self.inner.marker.mark();
        let added = Added {
            tick,
            real,
            agent,
            what,
        };
        self.inner
            .added
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(added);
    }

    /// What the agent added, in order.
    pub(crate) fn take_added(&self) -> Vec<Added> {
        std::mem::take(&mut *self.inner.added.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl std::fmt::Debug for AgentCx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentCx")
            .field("input", &self.inner.input)
            .field("variant", &self.inner.variant)
            .field("bridge", &self.inner.url)
            .field("mode", &self.inner.mode)
            .finish()
    }
}

fn check_name(agent: &str) {
    assert!(
        valid_agent_name(agent),
        "agent name `{agent}` cannot name a base URL: use 1 to 64 of A-Z a-z 0-9 _ -"
    );
}
