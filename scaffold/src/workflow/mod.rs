//! Workflows: agents in named phases over a typed state.
//!
//! ```
//! use scaffold::prelude::*;
//! #[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
//! struct State { goal: String, plan: String, approved: bool }
//!
//! let planner = Agent::<State>::new("planner")
//!     .provider(ScriptedProvider::new("gpt-4o").reply(ScriptedReply::text("1. build it")))
//!     .prompt(|s| format!("Plan: {}", s.goal))
//!     .update(|text, s| s.plan = text);
//! let reviewer = Agent::<State>::new("reviewer")
//!     .provider(ScriptedProvider::new("gpt-4o").reply(ScriptedReply::text("APPROVED")))
//!     .prompt(|s| format!("Review: {}", s.plan))
//!     .update(|text, s| s.approved = text.contains("APPROVED"));
//!
//! let workflow = Workflow::new("planning", State::default())
//!     .start(|input, s| s.goal = input.as_str().unwrap_or_default().to_string())
//!     .phase("planning", Phase::run(planner).next("review"))
//!     .phase("review", Phase::run(reviewer).next_with(|s| if s.approved { "done" } else { "planning" }))
//!     .terminal("done");
//!
//! let result = tokio::runtime::Runtime::new().unwrap()
//!     .block_on(run(&workflow, serde_json::json!("a todo API")));
//! assert!(result.error.is_none());
//! assert!(result.state.approved);
//! ```

mod agent;
pub(crate) mod bridge;
mod run;
mod sink;
mod tool;

pub use agent::Agent;
pub use bridge::{AgentCommand, AgentCx, AgentState, IntoVariant, Variant};
pub use run::{RecordingScope, RunError, RunOptions, RunResult, RunStatus, run, run_with};
pub(crate) use run::{Resume, Upstream, run_from};
pub use sink::{SessionEnd, SessionMeta, SessionSink, SessionStatus, SinkError};
pub use tool::{Tool, ToolContext};

use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The bounds a workflow's state meets.
pub trait State: Serialize + DeserializeOwned + Clone + Send + Sync + 'static {}
impl<T: Serialize + DeserializeOwned + Clone + Send + Sync + 'static> State for T {}

type StartFn<S> = dyn Fn(&Value, &mut S) + Send + Sync;
type NextFn<S> = dyn Fn(&S) -> String + Send + Sync;
type OutputFn<S> = dyn Fn(&S) -> Value + Send + Sync;

/// Where a phase goes next.
pub(crate) enum Next<S> {
    /// The workflow ends after this phase.
    End,
    /// Always the same phase.
    Fixed(String),
    /// Computed from state (loops, branches).
    Dynamic(Arc<NextFn<S>>),
}

impl<S> Clone for Next<S> {
    fn clone(&self) -> Self {
        match self {
            Next::End => Next::End,
            Next::Fixed(p) => Next::Fixed(p.clone()),
            Next::Dynamic(f) => Next::Dynamic(f.clone()),
        }
    }
}

/// A phase: an agent to run and where to go next, or a terminal phase.
pub struct Phase<S> {
    pub(crate) agent: Option<Agent<S>>,
    pub(crate) next: Next<S>,
}

impl<S> Clone for Phase<S> {
    fn clone(&self) -> Self {
        Phase {
            agent: self.agent.clone(),
            next: self.next.clone(),
        }
    }
}

impl<S> fmt::Debug for Phase<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let next = match &self.next {
            Next::End => "end".to_string(),
            Next::Fixed(p) => p.clone(),
            Next::Dynamic(_) => "<computed>".to_string(),
        };
        f.debug_struct("Phase")
            .field("agent", &self.agent.as_ref().map(|a| a.name.clone()))
            .field("next", &next)
            .finish()
    }
}

impl<S: 'static> Phase<S> {
    /// A phase that runs `agent`; without `next` the workflow ends after it.
    pub fn run(agent: Agent<S>) -> Self {
        Phase {
            agent: Some(agent),
            next: Next::End,
        }
    }

    /// A terminal phase: entering it ends the workflow.
    pub fn terminal() -> Self {
        Phase {
            agent: None,
            next: Next::End,
        }
    }

    /// Go to `phase` next.
    pub fn next(mut self, phase: impl Into<String>) -> Self {
        self.next = Next::Fixed(phase.into());
        self
    }

    /// Compute the next phase from state.
    pub fn next_with<P: Into<String>>(
        mut self,
        next: impl Fn(&S) -> P + Send + Sync + 'static,
    ) -> Self {
        self.next = Next::Dynamic(Arc::new(move |s| next(s).into()));
        self
    }

    /// Whether entering this phase ends the workflow.
    pub fn is_terminal(&self) -> bool {
        self.agent.is_none()
    }
}

/// Default bound on agent activations in one run.
pub(crate) const DEFAULT_MAX_ACTIVATIONS: u32 = 50;

/// A workflow definition. Cheap to clone; [`Workflow::with_agent`] makes variants.
pub struct Workflow<S> {
    pub(crate) name: String,
    pub(crate) initial_state: S,
    pub(crate) start: Option<Arc<StartFn<S>>>,
    pub(crate) phases: Vec<(String, Phase<S>)>,
    pub(crate) output: Option<Arc<OutputFn<S>>>,
    pub(crate) max_activations: u32,
    pub(crate) config_errors: Vec<String>,
    /// A bridged agent's run instead of phases.
    pub(crate) bridged: Option<bridge::Bridged>,
}

impl<S: Clone> Clone for Workflow<S> {
    fn clone(&self) -> Self {
        Workflow {
            name: self.name.clone(),
            initial_state: self.initial_state.clone(),
            start: self.start.clone(),
            phases: self.phases.clone(),
            output: self.output.clone(),
            max_activations: self.max_activations,
            config_errors: self.config_errors.clone(),
            bridged: self.bridged.clone(),
        }
    }
}

impl<S> fmt::Debug for Workflow<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workflow")
            .field("name", &self.name)
            .field("phases", &self.phases)
            .field("max_activations", &self.max_activations)
            .finish_non_exhaustive()
    }
}

impl<S: State> Workflow<S> {
    /// A workflow named `name` starting from `initial_state`.
    pub fn new(name: impl Into<String>, initial_state: S) -> Self {
        Workflow {
            name: name.into(),
            initial_state,
            start: None,
            phases: Vec::new(),
            output: None,
            max_activations: DEFAULT_MAX_ACTIVATIONS,
            config_errors: Vec::new(),
            bridged: None,
        }
    }

    /// The workflow's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The state before `start` runs.
    pub fn initial_state(&self) -> &S {
        &self.initial_state
    }

    /// Fold the run's input into the initial state.
    pub fn start(mut self, start: impl Fn(&Value, &mut S) + Send + Sync + 'static) -> Self {
        self.start = Some(Arc::new(start));
        self
    }

    /// Add a phase. The first phase added is where runs begin.
    pub fn phase(mut self, name: impl Into<String>, phase: Phase<S>) -> Self {
        let name = name.into();
        if self.phases.iter().any(|(n, _)| *n == name) {
            self.config_errors
                .push(format!("phase `{name}` is defined twice"));
        }
        self.phases.push((name, phase));
        self
    }

    /// Add a terminal phase.
    pub fn terminal(self, name: impl Into<String>) -> Self {
        self.phase(name, Phase::terminal())
    }

    /// The run's output, computed from the final state (default: the last agent's answer).
    pub fn output(mut self, output: impl Fn(&S) -> Value + Send + Sync + 'static) -> Self {
        self.output = Some(Arc::new(output));
        self
    }

    /// Bound agent activations; a run that reaches it ends with `harness:terminating`.
    pub fn max_activations(mut self, max: u32) -> Self {
        self.max_activations = max;
        self
    }

    /// The names of the phases, in order.
    pub fn phase_names(&self) -> impl Iterator<Item = &str> {
        self.phases.iter().map(|(n, _)| n.as_str())
    }

    /// The distinct agents, in phase order.
    pub fn agents(&self) -> Vec<&Agent<S>> {
        let mut seen: Vec<&Agent<S>> = Vec::new();
        for (_, phase) in &self.phases {
            if let Some(agent) = &phase.agent
                && !seen.iter().any(|a| a.name == agent.name)
            {
                seen.push(agent);
            }
        }
        seen
    }

    /// The agent named `name`.
    pub fn agent(&self, name: &str) -> Option<&Agent<S>> {
        self.phases
            .iter()
            .filter_map(|(_, p)| p.agent.as_ref())
            .find(|a| a.name == name)
    }

    /// A variant with the agent `name` changed by `change`, in every phase
    /// that runs it. The original workflow is unchanged; calls chain.
    ///
    /// An unknown agent name makes every run of the variant fail with an
    /// `error:workflow` naming it (see also [`Workflow::validate`]).
    pub fn with_agent(&self, name: &str, change: impl FnOnce(Agent<S>) -> Agent<S>) -> Self {
        let mut variant = self.clone();
        let Some(original) = self.agent(name) else {
            let known: Vec<&str> = self.agents().iter().map(|a| a.name()).collect();
            variant.config_errors.push(format!(
                "with_agent: workflow `{}` has no agent `{name}` (agents: {})",
                self.name,
                known.join(", ")
            ));
            return variant;
        };
        let changed = change(original.clone());
        for (_, phase) in &mut variant.phases {
            if phase.agent.as_ref().is_some_and(|a| a.name == name) {
                phase.agent = Some(changed.clone());
            }
        }
        variant
    }

    /// Every configuration error: duplicate or missing phases, unknown
    /// `next` targets, agents without a provider, unknown `with_agent` names.
    pub fn validate(&self) -> Result<(), Vec<String>> {
        let mut errors = self.config_errors.clone();
        if let Some(bridged) = &self.bridged {
            if bridged.agent.is_none() {
                errors.push(
                    "its variant is data (model, prompt, settings) but no agent runs it: give \
                     the eval one with Eval::agent(..) or Eval::command(..)"
                        .to_string(),
                );
            }
            return if errors.is_empty() {
                Ok(())
            } else {
                Err(errors)
            };
        }
        if self.phases.is_empty() {
            errors.push(format!("workflow `{}` has no phases", self.name));
        }
        for (name, phase) in &self.phases {
            if let Next::Fixed(target) = &phase.next
                && !self.phases.iter().any(|(n, _)| n == target)
            {
                errors.push(format!(
                    "phase `{name}` goes to `{target}`, which is not a phase of `{}`",
                    self.name
                ));
            }
            if let Some(agent) = &phase.agent
                && agent.provider.is_none()
            {
                errors.push(format!("agent `{}` has no provider", agent.name));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}
