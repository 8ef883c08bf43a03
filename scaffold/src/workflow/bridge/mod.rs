//! Agents not written on this runtime: an async function of yours, or a
//! program in any language, run as the thing under test.
//!
//! The run hands the agent a [`AgentCx`]: the case's input, the
//! [`Variant`] (data: model, prompt, settings) and base URLs for the
//! OpenAI-compatible and Anthropic APIs that lead through the run's
//! recorder. Point the agent's own client at them and nothing else
//! changes in it: its calls are recorded and played back, and the run's
//! signals (`provider:*`, `tool:call`, `tool:result`, the output) are read
//! from its traffic, so assertions, scorers, snapshots and gates work as
//! for a native workflow.
//!
//! ```
//! use scaffold::prelude::*;
//!
//! /// Your agent, on any client: only its base URL and key come from `cx`.
//! async fn my_agent(cx: AgentCx) -> Result<String, String> {
//!     let base_url = cx.openai_base_url("agent"); // http://127.0.0.1:{port}/agent/openai/v1
//!     let api_key = cx.openai_api_key(); // a placeholder in playback
//!     let model = cx.variant().model.clone().unwrap_or_default();
//!     // let client = MyClient::new(base_url, api_key); client.run(model, cx.input()).await
//!     # let _ = (base_url, api_key, model);
//!     Ok("the answer".to_string())
//! }
//!
//! let eval = Eval::<AgentState>::new()
//!     .agent(my_agent)
//!     .variant("gpt-4o-mini", Variant::new().model("gpt-4o-mini").prompt("Be terse."));
//! # let _ = eval;
//! ```

mod command;
mod cx;
pub(super) mod run;

pub use command::AgentCommand;
pub use cx::AgentCx;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{State, Workflow};

/// The state of a bridged agent's run when the eval names no type of its
/// own: a JSON object, what the agent last reported with
/// [`AgentCx::state`] (empty when it reported none).
pub type AgentState = Map<String, Value>;

/// What a variant of a bridged agent is: data the agent reads from its
/// [`AgentCx`] (a model, a prompt, any settings), not code.
///
/// ```
/// use scaffold::workflow::Variant;
/// let v = Variant::new()
///     .model("gpt-4o-mini")
///     .prompt("You are terse.")
///     .setting("temperature", 0.2);
/// assert_eq!(v.model.as_deref(), Some("gpt-4o-mini"));
/// assert_eq!(v.get("temperature"), Some(&serde_json::json!(0.2)));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    /// The model to ask for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A prompt (a system prompt, instructions, a template).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Anything else the agent reads (temperature, a tool set, a flag).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub settings: Map<String, Value>,
}

impl Variant {
    /// No model, prompt or settings.
    pub fn new() -> Variant {
        Variant::default()
    }

    /// Set the model.
    pub fn model(mut self, model: impl Into<String>) -> Variant {
        self.model = Some(model.into());
        self
    }

    /// Set the prompt.
    pub fn prompt(mut self, prompt: impl Into<String>) -> Variant {
        self.prompt = Some(prompt.into());
        self
    }

    /// Set the setting `key` (any value that serializes to JSON).
    pub fn setting(mut self, key: impl Into<String>, value: impl Serialize) -> Variant {
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        self.settings.insert(key.into(), value);
        self
    }

    /// The setting `key`, if set.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.settings.get(key)
    }
}

/// A boxed run of a bridged agent: its output, or why it failed.
pub(crate) type AgentFuture = Pin<Box<dyn Future<Output = Result<Value, String>> + Send>>;

/// A bridged agent: called once per run with its context.
#[derive(Clone)]
pub(crate) struct AgentFn(Arc<dyn Fn(AgentCx) -> AgentFuture + Send + Sync>);

impl AgentFn {
    /// An agent of `f`: its `Ok` value (anything that serializes) is the
    /// run's output; its `Err`, displayed, the run's error.
    pub(crate) fn new<F, Fut, T, E>(f: F) -> AgentFn
    where
        F: Fn(AgentCx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: Serialize,
        E: fmt::Display,
    {
        let f = Arc::new(f);
        AgentFn(Arc::new(move |cx| {
            let f = f.clone();
            // Called inside the future: a panic in it is caught with the
            // rest of the run.
            Box::pin(async move {
                match f(cx).await {
                    Ok(output) => serde_json::to_value(output)
                        .map_err(|e| format!("its output does not serialize to JSON: {e}")),
                    Err(e) => Err(format!("{e:#}")),
                }
            })
        }))
    }

    pub(crate) fn call(&self, cx: AgentCx) -> AgentFuture {
        (self.0)(cx)
    }
}

/// What a bridged workflow runs: the agent (the eval's, until it is given
/// one) and its variant's data.
#[derive(Clone)]
pub(crate) struct Bridged {
    pub(crate) agent: Option<AgentFn>,
    pub(crate) variant: Arc<Variant>,
}

/// What a `#[variant]` function (or [`Eval::variant`](crate::eval::Eval::variant))
/// may give: a [`Workflow`] over the eval's state, or the [`Variant`] data
/// of a bridged agent.
#[diagnostic::on_unimplemented(
    message = "a variant of an eval over `{S}` is a `Workflow<{S}>` or a `Variant`, not `{Self}`",
    label = "expected `Workflow<{S}>` or `Variant`"
)]
pub trait IntoVariant<S> {
    /// The workflow the variant runs.
    fn into_workflow(self) -> Workflow<S>;
}

impl<S> IntoVariant<S> for Workflow<S> {
    fn into_workflow(self) -> Workflow<S> {
        self
    }
}

impl<S: State + Default> IntoVariant<S> for Variant {
    /// A workflow that runs the eval's agent with this data.
    fn into_workflow(self) -> Workflow<S> {
        Workflow::bridged(self)
    }
}

impl<S: State> Workflow<S> {
    /// A workflow that runs a bridged agent with `variant`'s data, from
    /// the state's default; its agent comes from the eval
    /// ([`Eval::agent`](crate::eval::Eval::agent)) or
    /// [`Workflow::with_agent_fn`].
    pub(crate) fn bridged(variant: Variant) -> Workflow<S>
    where
        S: Default,
    {
        let mut workflow = Workflow::new("agent", S::default());
        workflow.bridged = Some(Bridged {
            agent: None,
            variant: Arc::new(variant),
        });
        workflow
    }

    /// A workflow that runs `agent`, your own async function, with
    /// `variant`'s data: the run's signals come from its calls through the
    /// base URLs of its [`AgentCx`].
    ///
    /// ```
    /// use scaffold::prelude::*;
    /// async fn agent(cx: AgentCx) -> Result<String, String> { Ok(cx.input().to_string()) }
    /// let workflow = Workflow::<AgentState>::agent_fn(agent, Variant::new().model("m"));
    /// assert!(workflow.validate().is_ok());
    /// ```
    pub fn agent_fn<F, Fut, T, E>(agent: F, variant: Variant) -> Workflow<S>
    where
        S: Default,
        F: Fn(AgentCx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: Serialize,
        E: fmt::Display,
    {
        Workflow::bridged(variant).with_agent_fn(&AgentFn::new(agent))
    }

    /// This workflow with `agent` as its bridged agent, if it is a bridged
    /// workflow without one.
    pub(crate) fn with_agent_fn(mut self, agent: &AgentFn) -> Workflow<S> {
        self.give_agent_fn(agent);
        self
    }

    /// Make `agent` this workflow's bridged agent, if it is a bridged
    /// workflow without one.
    pub(crate) fn give_agent_fn(&mut self, agent: &AgentFn) {
        if let Some(bridged) = &mut self.bridged
            && bridged.agent.is_none()
        {
            bridged.agent = Some(agent.clone());
        }
    }

    /// The variant data of a bridged workflow.
    pub fn variant_data(&self) -> Option<&Variant> {
        self.bridged.as_ref().map(|b| b.variant.as_ref())
    }
}
