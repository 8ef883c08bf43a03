//! Tools: Rust functions the model can call, with JSON-schema arguments.
//!
//! A tool is **async** (its future runs on the agent's runtime without
//! blocking it; [`Tool::timeout`] bounds it), may be **stateful** (it gets
//! a [`ToolContext`] through which it reads the workflow's state and
//! changes it: each change is emitted as `state:<key>:changed` with the
//! agent and the tool call's id, so `snapshot.at` and `state_at` see it),
//! and may be **recorded** ([`Tool::recorded`]: in record mode its result
//! is kept beside the provider recordings and in playback it is answered
//! from there without running; an unrecorded tool always runs for real, it
//! is the user's code). Arguments that do not deserialize, errors the tool
//! returns and timeouts go back to the model as tool errors.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::provider::ToolSpec;

type ToolFn<S> = dyn Fn(Value, Option<ToolContext<S>>) -> BoxFuture<'static, Result<Value, String>>
    + Send
    + Sync;

/// What a stateful tool sees of the run: the workflow's state (read it,
/// change it) and which call it is answering. Clones share the state.
pub struct ToolContext<S> {
    state: Arc<Mutex<S>>,
    agent: Arc<str>,
    call_id: Arc<str>,
}

impl<S> Clone for ToolContext<S> {
    fn clone(&self) -> Self {
        ToolContext {
            state: self.state.clone(),
            agent: self.agent.clone(),
            call_id: self.call_id.clone(),
        }
    }
}

impl<S> fmt::Debug for ToolContext<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("agent", &self.agent)
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}

impl<S> ToolContext<S> {
    /// A context over `state` for call `call_id` of `agent` (for calling a
    /// tool outside a workflow, e.g. in a test).
    pub fn new(state: S, agent: &str, call_id: &str) -> ToolContext<S> {
        ToolContext {
            state: Arc::new(Mutex::new(state)),
            agent: agent.into(),
            call_id: call_id.into(),
        }
    }

    /// Read the state.
    pub fn read<R>(&self, f: impl FnOnce(&S) -> R) -> R {
        f(&self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Change the state (the change is emitted when the tool returns).
    pub fn update(&self, f: impl FnOnce(&mut S)) {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// The agent whose model called the tool.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The id of the tool call being answered.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The state as the tool left it.
    pub fn into_state(self) -> S
    where
        S: Clone,
    {
        match Arc::try_unwrap(self.state) {
            Ok(mutex) => mutex.into_inner().unwrap_or_else(PoisonError::into_inner),
            Err(shared) => shared
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        }
    }
}

/// A function the model can call, offered to an agent over state `S`
/// (inferred from the agent it is given to; `Tool` alone is `Tool<()>`).
///
/// ```
/// use scaffold::workflow::Tool;
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: i64, b: i64 }
/// let add: Tool = Tool::new("add", "Adds two integers", |args: Add| Ok::<_, String>(args.a + args.b));
/// assert_eq!(add.name(), "add");
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// assert_eq!(add.call(serde_json::json!({"a": 2, "b": 3})).await, Ok(serde_json::json!(5)));
/// assert!(add.call(serde_json::json!({"a": "x"})).await.is_err());
/// # });
/// ```
pub struct Tool<S = ()> {
    spec: ToolSpec,
    call: Arc<ToolFn<S>>,
    stateful: bool,
    timeout: Option<Duration>,
    recorded: bool,
}

impl<S> Clone for Tool<S> {
    fn clone(&self) -> Self {
        Tool {
            spec: self.spec.clone(),
            call: self.call.clone(),
            stateful: self.stateful,
            timeout: self.timeout,
            recorded: self.recorded,
        }
    }
}

impl<S> fmt::Debug for Tool<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.spec.name)
            .field("stateful", &self.stateful)
            .field("timeout", &self.timeout)
            .field("recorded", &self.recorded)
            .finish()
    }
}

/// The typed arguments of a call to tool `name`.
fn arguments<A: DeserializeOwned>(name: &str, args: Value) -> Result<A, String> {
    serde_json::from_value(args).map_err(|e| format!("invalid arguments for tool `{name}`: {e}"))
}

/// A tool's typed outcome as the JSON the model gets.
fn outcome<R: Serialize, E: fmt::Display>(name: &str, out: Result<R, E>) -> Result<Value, String> {
    let out = out.map_err(|e| e.to_string())?;
    serde_json::to_value(out).map_err(|e| format!("tool `{name}` result: {e}"))
}

/// A future that is already done.
fn done(result: Result<Value, String>) -> BoxFuture<'static, Result<Value, String>> {
    Box::pin(std::future::ready(result))
}

/// The call of an async tool: typed arguments to `run`, its output to JSON.
fn call_async<A, R, E, Fut>(
    name: &Arc<str>,
    args: Value,
    run: impl FnOnce(A) -> Fut,
) -> BoxFuture<'static, Result<Value, String>>
where
    A: DeserializeOwned,
    R: Serialize,
    E: fmt::Display,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
{
    match arguments(name, args) {
        Ok(args) => {
            let future = run(args);
            let name = name.clone();
            Box::pin(async move { outcome(&name, future.await) })
        }
        Err(message) => done(Err(message)),
    }
}

fn spec_of<A: JsonSchema>(name: String, description: String) -> ToolSpec {
    ToolSpec {
        name,
        description,
        parameters: super::agent::schema_of::<A>(),
    }
}

impl<S: Send + 'static> Tool<S> {
    /// A tool from a function of typed arguments, run in place (keep it
    /// quick: use [`Tool::new_async`] for anything that waits).
    pub fn new<A, R, E, F>(name: impl Into<String>, description: impl Into<String>, f: F) -> Tool<S>
    where
        A: DeserializeOwned + JsonSchema,
        R: Serialize,
        E: fmt::Display,
        F: Fn(A) -> Result<R, E> + Send + Sync + 'static,
    {
        let name: Arc<str> = name.into().into();
        let spec = spec_of::<A>(name.to_string(), description.into());
        let call = move |args: Value, _: Option<ToolContext<S>>| {
            done(arguments(&name, args).and_then(|a| outcome(&name, f(a))))
        };
        Tool::made(spec, call, false)
    }

    /// A tool from an async function of typed arguments.
    ///
    /// ```
    /// use scaffold::workflow::Tool;
    /// use std::time::Duration;
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Wait { ms: u64 }
    /// let wait: Tool = Tool::new_async("wait", "Waits", |w: Wait| async move {
    ///     tokio::time::sleep(Duration::from_millis(w.ms)).await;
    ///     Ok::<_, String>("done")
    /// })
    /// .timeout(Duration::from_millis(50));
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// assert_eq!(wait.call(serde_json::json!({"ms": 1})).await, Ok(serde_json::json!("done")));
    /// let slow = wait.call(serde_json::json!({"ms": 5000})).await.unwrap_err();
    /// assert_eq!(slow, "tool `wait` timed out after 50ms");
    /// # });
    /// ```
    pub fn new_async<A, R, E, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> Tool<S>
    where
        A: DeserializeOwned + JsonSchema,
        R: Serialize,
        E: fmt::Display,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
    {
        let name: Arc<str> = name.into().into();
        let spec = spec_of::<A>(name.to_string(), description.into());
        let call = move |args: Value, _: Option<ToolContext<S>>| call_async(&name, args, &f);
        Tool::made(spec, call, false)
    }

    /// A tool that reads and changes the workflow's state through its
    /// [`ToolContext`]; each change is emitted as `state:<key>:changed`
    /// with the agent and the tool call's id.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use scaffold::workflow::{Tool, ToolContext};
    /// #[derive(Clone, Default)]
    /// struct State { files: BTreeMap<String, String> }
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Write { path: String, content: String }
    /// let write = Tool::stateful("write", "Writes a file", |w: Write, ctx: ToolContext<State>| async move {
    ///     ctx.update(|s| { s.files.insert(w.path.clone(), w.content); });
    ///     Ok::<_, String>(format!("wrote {}", w.path))
    /// });
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let ctx = ToolContext::new(State::default(), "coder", "call_1");
    /// let out = write.call_with(serde_json::json!({"path": "a.ts", "content": "x"}), ctx.clone()).await;
    /// assert_eq!(out, Ok(serde_json::json!("wrote a.ts")));
    /// assert_eq!(ctx.read(|s| s.files["a.ts"].clone()), "x");
    /// # });
    /// ```
    pub fn stateful<A, R, E, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> Tool<S>
    where
        A: DeserializeOwned + JsonSchema,
        R: Serialize,
        E: fmt::Display,
        F: Fn(A, ToolContext<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
    {
        let name: Arc<str> = name.into().into();
        let spec = spec_of::<A>(name.to_string(), description.into());
        let call = move |args: Value, ctx: Option<ToolContext<S>>| match ctx {
            Some(ctx) => call_async(&name, args, |a| f(a, ctx)),
            None => done(Err(format!("tool `{name}` needs the workflow's state"))),
        };
        Tool::made(spec, call, true)
    }
}

impl Tool {
    /// Run a tool without state on JSON arguments (outside a workflow).
    pub async fn call(&self, args: Value) -> Result<Value, String> {
        self.run(args, None).await
    }
}

impl<S> Tool<S> {
    fn made(
        spec: ToolSpec,
        call: impl Fn(Value, Option<ToolContext<S>>) -> BoxFuture<'static, Result<Value, String>>
        + Send
        + Sync
        + 'static,
        stateful: bool,
    ) -> Tool<S> {
        Tool {
            spec,
            call: Arc::new(call),
            stateful,
            timeout: None,
            recorded: false,
        }
    }

    /// Give up on a call after `limit`: the model gets a tool error saying so.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Record the tool's results: in record mode each call's arguments and
    /// result are written beside the provider recordings, and playback
    /// answers from them without running the tool (a call whose arguments
    /// differ from the recorded ones fails the run as a stale recording).
    /// For tools whose effects playback must not repeat or cannot reach
    /// (network, paid APIs, slow commands). A recorded tool should not
    /// change the state: playback would not repeat the change.
    pub fn recorded(mut self) -> Self {
        self.recorded = true;
        self
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// What the model is told about the tool.
    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Whether it gets the state (see [`Tool::stateful`]).
    pub fn is_stateful(&self) -> bool {
        self.stateful
    }

    /// Whether its results are recorded (see [`Tool::recorded`]).
    pub fn is_recorded(&self) -> bool {
        self.recorded
    }

    /// Run the tool on JSON arguments with `ctx`, within its timeout.
    pub async fn call_with(&self, args: Value, ctx: ToolContext<S>) -> Result<Value, String> {
        self.run(args, Some(ctx)).await
    }

    /// Run the tool within its timeout; a tool without state gets no
    /// context (nothing of the state is copied for it).
    pub(crate) async fn run(
        &self,
        args: Value,
        ctx: Option<ToolContext<S>>,
    ) -> Result<Value, String> {
        let future = (self.call)(args, ctx);
        match self.timeout {
            None => future.await,
            Some(limit) => tokio::time::timeout(limit, future)
                .await
                .unwrap_or_else(|_| {
                    Err(format!(
                        "tool `{}` timed out after {limit:?}",
                        self.spec.name
                    ))
                }),
        }
    }
}
