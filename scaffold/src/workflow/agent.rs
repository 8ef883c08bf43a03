//! Agents: a provider, a prompt from state, and how the answer updates state.

use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::tool::Tool;
use crate::provider::schema::AnswerCheck;
use crate::provider::{OutputSchema, Provider, ProviderOptions};

type PromptFn<S> = dyn Fn(&S) -> String + Send + Sync;
type GuardFn<S> = dyn Fn(&S) -> bool + Send + Sync;
type AttachFn<S> = dyn Fn(&S) -> Value + Send + Sync;
type TextUpdateFn<S> = dyn Fn(String, &mut S) + Send + Sync;
type ValueUpdateFn<S> = dyn Fn(Value, &mut S) -> Result<(), String> + Send + Sync;

/// How an agent's answer is read.
pub(crate) enum OutputSpec<S> {
    /// Plain text, optionally folded into state.
    Text(Option<Arc<TextUpdateFn<S>>>),
    /// JSON following a schema, deserialized into a type and folded into state.
    Structured {
        schema: OutputSchema,
        apply: Arc<ValueUpdateFn<S>>,
    },
}

impl<S> Clone for OutputSpec<S> {
    fn clone(&self) -> Self {
        match self {
            OutputSpec::Text(f) => OutputSpec::Text(f.clone()),
            OutputSpec::Structured { schema, apply } => OutputSpec::Structured {
                schema: schema.clone(),
                apply: apply.clone(),
            },
        }
    }
}

/// A custom signal an agent emits when it completes.
pub(crate) struct Emit<S> {
    pub(crate) name: String,
    pub(crate) attach: Option<Arc<AttachFn<S>>>,
}

impl<S> Clone for Emit<S> {
    fn clone(&self) -> Self {
        Emit {
            name: self.name.clone(),
            attach: self.attach.clone(),
        }
    }
}

/// The JSON schema of `T` as a plain JSON value.
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
    }
    schema
}

/// An agent: a named call to a model over the workflow's state.
///
/// ```
/// use scaffold::prelude::*;
/// #[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
/// struct State { code: String, review: String }
///
/// let reviewer = Agent::<State>::new("reviewer")
///     .provider(ScriptedProvider::new("gpt-4o").reply(ScriptedReply::text("looks fine")))
///     .system("You are a careful code reviewer.")
///     .prompt(|s| format!("Review this code:\n{}", s.code))
///     .update(|text, s| s.review = text)
///     .emits("review:complete")
///     .temperature(0.0);
/// assert_eq!(reviewer.name(), "reviewer");
/// ```
pub struct Agent<S> {
    pub(crate) name: String,
    pub(crate) provider: Option<Arc<dyn Provider>>,
    pub(crate) system: Option<String>,
    pub(crate) prompt: Arc<PromptFn<S>>,
    pub(crate) output: OutputSpec<S>,
    pub(crate) when: Option<(Arc<GuardFn<S>>, String)>,
    pub(crate) tools: Vec<Tool<S>>,
    pub(crate) options: ProviderOptions,
    pub(crate) emits: Vec<Emit<S>>,
    pub(crate) max_tool_rounds: u32,
}

impl<S> Clone for Agent<S> {
    fn clone(&self) -> Self {
        Agent {
            name: self.name.clone(),
            provider: self.provider.clone(),
            system: self.system.clone(),
            prompt: self.prompt.clone(),
            output: self.output.clone(),
            when: self.when.clone(),
            tools: self.tools.clone(),
            options: self.options.clone(),
            emits: self.emits.clone(),
            max_tool_rounds: self.max_tool_rounds,
        }
    }
}

impl<S> fmt::Debug for Agent<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.name)
            .field(
                "provider",
                &self
                    .provider
                    .as_ref()
                    .map(|p| format!("{}:{}", p.name(), p.model())),
            )
            .field("tools", &self.tools)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Default bound on model ↔ tool round trips in one activation.
pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 8;

impl<S: 'static> Agent<S> {
    /// An agent with no provider yet, an empty prompt and text output.
    pub fn new(name: impl Into<String>) -> Self {
        Agent {
            name: name.into(),
            provider: None,
            system: None,
            prompt: Arc::new(|_| String::new()),
            output: OutputSpec::Text(None),
            when: None,
            tools: Vec::new(),
            options: ProviderOptions::default(),
            emits: Vec::new(),
            max_tool_rounds: DEFAULT_MAX_TOOL_ROUNDS,
        }
    }

    /// The agent's name (the node of its recordings).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The provider it calls, if set.
    pub fn provider_ref(&self) -> Option<&Arc<dyn Provider>> {
        self.provider.as_ref()
    }

    /// The model it calls.
    pub fn provider(mut self, provider: impl Provider + 'static) -> Self {
        self.provider = Some(Arc::new(provider));
        self
    }

    /// The model it calls, shared.
    pub fn provider_arc(mut self, provider: Arc<dyn Provider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// The system prompt.
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// The user prompt, computed from state.
    pub fn prompt(mut self, prompt: impl Fn(&S) -> String + Send + Sync + 'static) -> Self {
        self.prompt = Arc::new(prompt);
        self
    }

    /// Fold the text answer into state.
    pub fn update(mut self, update: impl Fn(String, &mut S) + Send + Sync + 'static) -> Self {
        self.output = OutputSpec::Text(Some(Arc::new(update)));
        self
    }

    /// Ask for structured output of type `O` (its JSON schema is sent to the
    /// model, in the form its API accepts) and fold the parsed value into
    /// state. An answer that does not follow the full schema (constraints
    /// the API was only told in a description included, see
    /// [`AnswerCheck`]) or does not parse is an `error:output`.
    pub fn output<O, F>(mut self, update: F) -> Self
    where
        O: DeserializeOwned + JsonSchema + 'static,
        F: Fn(O, &mut S) + Send + Sync + 'static,
    {
        let schema = OutputSchema {
            name: O::schema_name().into_owned(),
            schema: schema_of::<O>(),
        };
        let check = AnswerCheck::new(&schema.schema);
        let apply = move |value: Value, state: &mut S| -> Result<(), String> {
            let value = match &check {
                Ok(check) => check.check(value).map_err(|e| e.to_string())?,
                Err(e) => return Err(e.to_string()),
            };
            let out: O = serde_json::from_value(value).map_err(|e| e.to_string())?;
            update(out, state);
            Ok(())
        };
        self.output = OutputSpec::Structured {
            schema,
            apply: Arc::new(apply),
        };
        self
    }

    /// Run only when `guard` holds; otherwise the agent is skipped (`agent:skipped`).
    pub fn when(self, guard: impl Fn(&S) -> bool + Send + Sync + 'static) -> Self {
        self.when_because(guard, "when guard returned false")
    }

    /// Like [`Agent::when`], with the reason reported on `agent:skipped`.
    pub fn when_because(
        mut self,
        guard: impl Fn(&S) -> bool + Send + Sync + 'static,
        reason: impl Into<String>,
    ) -> Self {
        self.when = Some((Arc::new(guard), reason.into()));
        self
    }

    /// Offer a tool to the model (see [`Tool`]: async, stateful, recorded).
    pub fn tool(mut self, tool: Tool<S>) -> Self {
        self.tools.push(tool);
        self
    }

    /// Bound the model ↔ tool round trips of one activation (default 8).
    pub fn max_tool_rounds(mut self, rounds: u32) -> Self {
        self.max_tool_rounds = rounds;
        self
    }

    /// Sampling temperature.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.options.temperature = Some(temperature);
        self
    }

    /// Upper bound on generated tokens.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.options.max_tokens = Some(max_tokens);
        self
    }

    /// Stream the answer (`text:delta` signals).
    pub fn stream(mut self, stream: bool) -> Self {
        self.options.stream = stream;
        self
    }

    /// Emit a custom signal (e.g. `review:complete`) when the agent completes.
    pub fn emits(mut self, signal: impl Into<String>) -> Self {
        self.emits.push(Emit {
            name: signal.into(),
            attach: None,
        });
        self
    }

    /// Emit a custom signal with a payload computed from the state after the update.
    pub fn emits_with(
        mut self,
        signal: impl Into<String>,
        attach: impl Fn(&S) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.emits.push(Emit {
            name: signal.into(),
            attach: Some(Arc::new(attach)),
        });
        self
    }
}
