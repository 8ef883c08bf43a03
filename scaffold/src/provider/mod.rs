//! Providers: the model APIs agents call.
//!
//! The request and response model here is the common ground of the OpenAI
//! chat completions and Anthropic Messages APIs: a system prompt, messages
//! with text, tool calls and tool results, tool definitions, an optional JSON
//! schema for structured output, sampling options, streamed text deltas and
//! token usage.

pub mod anthropic;
pub(crate) mod bridge;
mod error;
pub mod http;
pub(crate) mod limit;
pub mod openai;
pub(crate) mod pricing;
pub mod recorder;
pub(crate) mod recording_id;
pub(crate) mod schema;
mod scripted;
pub mod transport;

pub use error::ProviderError;
pub use limit::RateLimit;
pub use pricing::ModelPrice;
pub use pricing::Pricing;
pub use recording_id::RecordingId;
pub use recording_id::RecordingIdError;
pub use scripted::{ScriptedProvider, ScriptedReply};

use crate::clock::Clock;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The caller.
    User,
    /// The model.
    Assistant,
}

/// A tool invocation asked for by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; results refer to it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as a JSON value.
    pub arguments: Value,
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// The assistant asks for a tool call.
    ToolCall(ToolCall),
    /// The result of a tool call, sent back by the user side.
    ToolResult {
        /// The id of the call this answers.
        call_id: String,
        /// The result, serialized as the model will read it.
        content: String,
        /// Whether the tool failed.
        is_error: bool,
    },
}

/// A message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub content: Vec<ContentPart>,
}

impl Message {
    /// A user message of plain text.
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![ContentPart::Text { text: text.into() }],
        }
    }

    /// An assistant message of plain text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: vec![ContentPart::Text { text: text.into() }],
        }
    }

    /// The concatenated text parts.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Name the model uses.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

/// A JSON schema the response must follow (structured output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    /// Name of the schema (OpenAI requires one).
    pub name: String,
    /// The JSON schema.
    pub schema: Value,
}

/// Sampling and length options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderOptions {
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Upper bound on generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Ask for a streamed (SSE) response.
    #[serde(default)]
    pub stream: bool,
}

/// Where a call sits in an eval, so recordings can be keyed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallContext {
    /// The recording id of this call (`eval__{dataset}__{case}__{variant}__{node}__inv{n}`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recording_id: Option<String>,
    /// Which attempt this is: 0, then 1, 2, ... as the HTTP client retries.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempt: u32,
    /// The run's clock: playback moves a virtual one by each exchange's
    /// recorded timing (see [`crate::clock`]). Not part of what is asked.
    #[serde(skip)]
    pub clock: Option<Clock>,
    /// Where the HTTP client tells how many attempts the call took (its
    /// retries), for `provider:end` and `provider:error`. Not part of what
    /// is asked.
    #[serde(skip)]
    pub attempts: Attempts,
    /// The call's place among the calls of its run, kept in its recording
    /// (the agent bridge numbers its calls so: playback tells calls that
    /// were made at once in the order they were recorded in).
    #[serde(skip)]
    pub order: Option<u64>,
}

/// How many attempts a call took, told by the HTTP client as it retries;
/// clones share the count.
///
/// ```
/// use scaffold::provider::Attempts;
/// let attempts = Attempts::default();
/// let told = attempts.clone();
/// told.set(3);
/// assert_eq!(attempts.get(), 3);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Attempts(std::sync::Arc<std::sync::atomic::AtomicU32>);

impl Attempts {
    /// Attempts made so far (0 before the first, or for a provider
    /// without HTTP).
    pub fn get(&self) -> u32 {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Record that the call is on its `n`-th attempt.
    pub fn set(&self, n: u32) {
        self.0.store(n, std::sync::atomic::Ordering::Relaxed);
    }
}

impl PartialEq for Attempts {
    /// A count to be told, not part of what is asked: always equal.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl CallContext {
    /// The context of a call that sends nothing over the network (an
    /// answer read again): virtual time, so no rate limit is asked.
    pub(crate) fn offline() -> CallContext {
        CallContext {
            clock: Some(crate::clock::Clock::virtual_time()),
            ..CallContext::default()
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One call to a model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionRequest {
    /// System prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Structured output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<OutputSchema>,
    /// Sampling options.
    #[serde(default)]
    pub options: ProviderOptions,
    /// Recording key and other eval context.
    #[serde(default)]
    pub context: CallContext,
}

/// Token usage of a call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Input plus output.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Natural end of the answer.
    EndTurn,
    /// The model asks for tool calls.
    ToolUse,
    /// `max_tokens` reached.
    MaxTokens,
    /// Anything else the provider reported.
    Other,
}

/// The model's answer to one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionResponse {
    /// The model that answered, as the provider reports it.
    pub model: String,
    /// The text of the answer (empty when it only calls tools).
    pub text: String,
    /// Tool calls asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used.
    pub usage: Usage,
    /// Why generation stopped.
    pub stop_reason: StopReason,
}

/// Receives streamed pieces of an answer while a call is under way.
pub trait StreamSink: Send {
    /// A piece of generated text.
    fn text_delta(&mut self, delta: &str);
}

/// A sink that drops everything.
impl StreamSink for () {
    fn text_delta(&mut self, _delta: &str) {}
}

/// A model API.
///
/// Implementations: [`ScriptedProvider`] for unit tests; the OpenAI and
/// Anthropic HTTP providers for real use.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Short provider name, e.g. `openai`, `anthropic`, `scripted`.
    fn name(&self) -> &str;

    /// The model asked for.
    fn model(&self) -> &str;

    /// The environment variable that should hold the API key this provider
    /// needs and does not have (`OPENAI_API_KEY`, say): record mode checks
    /// every provider before its first call. `None` (the default) when it
    /// has a key or needs none.
    fn missing_key(&self) -> Option<&'static str> {
        None
    }

    /// Make one call. Streamed text deltas go to `sink` as they arrive.
    async fn complete(
        &self,
        request: &CompletionRequest,
        sink: &mut dyn StreamSink,
    ) -> Result<CompletionResponse, ProviderError>;
}
