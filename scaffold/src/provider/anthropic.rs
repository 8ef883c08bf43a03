//! The Anthropic Messages provider.
//!
//! Request shape (`POST {base_url}/v1/messages`, headers `x-api-key` and
//! `anthropic-version: 2023-06-01`): `model`, `max_tokens` (required; the
//! request's option or the provider's default), top-level `system`,
//! `messages` of content blocks (`text`, `tool_use`, `tool_result`), `tools`
//! (`{name, description, input_schema}`), `temperature`, `stream`.
//!
//! Structured output uses the documented JSON outputs feature by default:
//! `output_config: {format: {type: json_schema, schema}}`; the answer's text
//! is the JSON. For models without it, [`StructuredOutput::ForcedTool`]
//! forces a tool whose input schema is the output schema
//! (`tool_choice: {type: tool, name}`) and returns the tool input as the text.
//! Either way the schema goes in the subset the API accepts
//! ([`anthropic_subset`]: unsupported constraints moved into descriptions);
//! the tools' own `input_schema`s go as they are, as the SDKs send them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::http::{
    HttpClient, HttpConfig, HttpProvider, ProviderEnv, RetryPolicy, SseStream, api_name,
    http_provider_builder, message_from_json, parse_event, parse_json, status_for_error_type,
    without_secrets,
};
use super::limit::RateLimit;
use super::recorder::secrets_of;
use super::schema::anthropic_subset;
use super::transport::{HttpRequest, Transport};
use super::{
    CompletionRequest, CompletionResponse, ContentPart, Provider, ProviderError, Role, StopReason,
    StreamSink, ToolCall, Usage,
};

/// The default base URL.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The `anthropic-version` header sent.
pub(crate) const API_VERSION: &str = "2023-06-01";
/// `max_tokens` when the request sets none.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 4096;

const NAME: &str = "anthropic";

/// Where the base URL and the API key come from.
const ENV: ProviderEnv = ProviderEnv {
    base_url: "ANTHROPIC_BASE_URL",
    default_base_url: DEFAULT_BASE_URL,
    api_key: "ANTHROPIC_API_KEY",
};

/// How a request's [`OutputSchema`](super::OutputSchema) is asked of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StructuredOutput {
    /// `output_config.format` with a JSON schema (constrained decoding; the
    /// answer text is the JSON). Works alongside tools. Claude 4.5 models
    /// and later.
    #[default]
    JsonSchema,
    /// A tool named after the schema, forced with `tool_choice`; its input is
    /// returned as the answer text. Works on older models, but the model
    /// cannot call other tools in the same turn.
    ForcedTool,
}

/// An Anthropic Messages API provider.
///
/// ```
/// use std::time::Duration;
/// use scaffold::provider::Provider;
/// use scaffold::provider::anthropic::{Anthropic, StructuredOutput};
///
/// let claude = Anthropic::new("claude-sonnet-4-5")
///     .max_tokens(2048)
///     .timeout(Duration::from_secs(300));
/// assert_eq!(claude.name(), "anthropic");
///
/// // Explicit key and the forced-tool structured output for an older model.
/// let haiku = Anthropic::new("claude-3-5-haiku-latest")
///     .api_key("sk-ant-...")
///     .structured_output(StructuredOutput::ForcedTool);
/// assert_eq!(haiku.model(), "claude-3-5-haiku-latest");
/// ```
#[derive(Clone)]
pub struct Anthropic {
    model: String,
    http: HttpProvider,
    max_tokens: u32,
    structured: StructuredOutput,
}

impl std::fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut f = f.debug_struct("Anthropic");
        f.field("model", &self.model);
        self.http.debug_fields(&mut f);
        f.field("max_tokens", &self.max_tokens)
            .field("structured", &self.structured)
            .finish_non_exhaustive()
    }
}

impl Anthropic {
    /// A provider for `model` at `ANTHROPIC_BASE_URL` if set, else `DEFAULT_BASE_URL`, with the API key from
    /// `ANTHROPIC_API_KEY` if set.
    pub fn new(model: impl Into<String>) -> Self {
        Anthropic {
            model: model.into(),
            http: HttpProvider::from_env(NAME, ENV),
            max_tokens: DEFAULT_MAX_TOKENS,
            structured: StructuredOutput::default(),
        }
    }

    http_provider_builder! {
        base_url: "Use another base URL (without `/v1`).",
        api_key: "Use this API key (sent as `x-api-key`), overriding the environment.",
        header: "Add a header to every request (e.g. `anthropic-beta`).",
    }

    /// `max_tokens` for requests that set none (default `DEFAULT_MAX_TOKENS`).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Choose how structured output is requested.
    pub fn structured_output(mut self, mode: StructuredOutput) -> Self {
        self.structured = mode;
        self
    }

    /// The JSON body of the Messages request for `request`.
    pub fn request_body(&self, request: &CompletionRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert(
            "max_tokens".into(),
            json!(request.options.max_tokens.unwrap_or(self.max_tokens)),
        );
        if let Some(system) = request.system.as_ref().filter(|s| !s.is_empty()) {
            body.insert("system".into(), json!(system));
        }
        body.insert("messages".into(), Value::Array(messages(request)));
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                })
            })
            .collect();
        if let Some(schema) = &request.output_schema {
            match self.structured {
                StructuredOutput::JsonSchema => {
                    body.insert(
                        "output_config".into(),
                        json!({"format": {
                            "type": "json_schema",
                            "schema": anthropic_subset(&schema.schema),
                        }}),
                    );
                }
                StructuredOutput::ForcedTool => {
                    let name = api_name(&schema.name);
                    tools.push(json!({
                        "name": name,
                        "description": "Give the final answer as this tool's input.",
                        "input_schema": anthropic_subset(&schema.schema),
                    }));
                    body.insert("tool_choice".into(), json!({"type": "tool", "name": name}));
                }
            }
        }
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(t) = request.options.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if request.options.stream {
            body.insert("stream".into(), json!(true));
        }
        Value::Object(body)
    }

    fn resolved_transport(&self) -> Arc<dyn Transport> {
        self.http.resolved_transport()
    }

    fn client<'a>(&'a self, transport: &'a dyn Transport) -> HttpClient<'a> {
        self.http.client(transport)
    }

    fn http_request(&self, body: Value) -> HttpRequest {
        let mut headers = vec![("anthropic-version".to_string(), API_VERSION.to_string())];
        if let Some(key) = &self.http.api_key {
            headers.push(("x-api-key".to_string(), key.clone()));
        }
        self.http.post("/v1/messages", headers, body)
    }

    /// The forced tool's name, when structured output goes through one.
    fn output_tool(&self, request: &CompletionRequest) -> Option<String> {
        match (&request.output_schema, self.structured) {
            (Some(schema), StructuredOutput::ForcedTool) => Some(api_name(&schema.name)),
            _ => None,
        }
    }

    async fn complete_full(
        &self,
        request: &CompletionRequest,
        transport: &dyn Transport,
        http: HttpRequest,
        sink: &mut dyn StreamSink,
    ) -> Result<CompletionResponse, ProviderError> {
        let bytes = self
            .client(transport)
            .send_json(http, &request.context)
            .await?;
        let parsed: MessageResponse = parse_json(NAME, "messages response", &bytes)?;
        let output_tool = self.output_tool(request);
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        let mut structured = false;
        for block in parsed.content {
            match block {
                Block::Text { text: t } => text.push_str(&t),
                Block::ToolUse { id, name, input } => {
                    if Some(&name) == output_tool.as_ref() {
                        text = input.to_string();
                        structured = true;
                    } else {
                        tool_calls.push(ToolCall {
                            id,
                            name,
                            arguments: input,
                        });
                    }
                }
                Block::Other => {}
            }
        }
        if !text.is_empty() {
            sink.text_delta(&text);
        }
        Ok(CompletionResponse {
            model: parsed.model.unwrap_or_else(|| self.model.clone()),
            text,
            stop_reason: stop_reason(parsed.stop_reason.as_deref(), structured),
            tool_calls,
            usage: parsed.usage.into_usage(),
        })
    }

    async fn complete_stream(
        &self,
        request: &CompletionRequest,
        transport: &dyn Transport,
        http: HttpRequest,
        sink: &mut dyn StreamSink,
    ) -> Result<CompletionResponse, ProviderError> {
        let mut stream = self
            .client(transport)
            .send_stream(http, &request.context)
            .await?;
        let mut message = StreamedMessage {
            output_tool: self.output_tool(request),
            ..StreamedMessage::default()
        };
        while let Some(event) = stream.next_event().await? {
            let index = stream.events_read();
            let value: Value = parse_event(NAME, &event, index)?;
            let kind = value
                .get("type")
                .and_then(Value::as_str)
                .or(event.event.as_deref())
                .unwrap_or("")
                .to_string();
            if message.take(&kind, value, index, sink, &stream)? {
                break;
            }
        }
        message.into_response(&self.model, &stream)
    }
}

/// What a Messages event stream has said so far.
#[derive(Default)]
struct StreamedMessage {
    /// The tool that carries a structured answer, if one was forced.
    output_tool: Option<String>,
    model: Option<String>,
    blocks: BTreeMap<usize, BlockState>,
    usage: Usage,
    stop: Option<String>,
    started: bool,
    stopped: bool,
}

impl StreamedMessage {
    /// Take in event number `index` of type `kind`; `true` at `message_stop`.
    fn take(
        &mut self,
        kind: &str,
        value: Value,
        index: usize,
        sink: &mut dyn StreamSink,
        stream: &SseStream,
    ) -> Result<bool, ProviderError> {
        match kind {
            "message_start" => {
                let start: MessageStart = from_event(value, index, kind)?;
                self.started = true;
                self.model = start.message.model;
                self.usage = start.message.usage.into_usage();
            }
            "content_block_start" => {
                let start: BlockStart = from_event(value, index, kind)?;
                let state = self.block_state(start.content_block, sink);
                self.blocks.insert(start.index, state);
            }
            "content_block_delta" => {
                let delta: BlockDelta = from_event(value, index, kind)?;
                self.block_delta(delta, index, sink, stream)?;
            }
            "message_delta" => {
                let delta: MessageDelta = from_event(value, index, kind)?;
                self.message_delta(delta);
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(true);
            }
            "error" => return Err(stream_error(&value, stream.attempts())),
            // content_block_stop, ping and events of later API versions.
            _ => {}
        }
        Ok(false)
    }

    /// A block as it starts: text goes to the sink at once.
    fn block_state(&self, block: Block, sink: &mut dyn StreamSink) -> BlockState {
        match block {
            Block::Text { text } => {
                if !text.is_empty() {
                    sink.text_delta(&text);
                }
                BlockState::Text(text)
            }
            Block::ToolUse { id, name, input } => {
                let structured = Some(&name) == self.output_tool.as_ref();
                BlockState::Tool {
                    id,
                    name,
                    json: String::new(),
                    initial: input,
                    structured,
                }
            }
            Block::Other => BlockState::Ignored,
        }
    }

    /// A piece of a started block's text or tool input.
    fn block_delta(
        &mut self,
        delta: BlockDelta,
        index: usize,
        sink: &mut dyn StreamSink,
        stream: &SseStream,
    ) -> Result<(), ProviderError> {
        match (self.blocks.get_mut(&delta.index), delta.delta) {
            (Some(BlockState::Text(text)), DeltaKind::TextDelta { text: piece }) => {
                sink.text_delta(&piece);
                text.push_str(&piece);
            }
            (
                Some(BlockState::Tool {
                    json, structured, ..
                }),
                DeltaKind::InputJsonDelta { partial_json },
            ) => {
                if *structured && !partial_json.is_empty() {
                    sink.text_delta(&partial_json);
                }
                json.push_str(&partial_json);
            }
            (None, _) => {
                return Err(stream.protocol(format!(
                    "content_block_delta for block {} that was never started (event {index})",
                    delta.index
                )));
            }
            _ => {}
        }
        Ok(())
    }

    /// The stop reason and the final usage.
    fn message_delta(&mut self, delta: MessageDelta) {
        if let Some(reason) = delta.delta.stop_reason {
            self.stop = Some(reason);
        }
        if let Some(u) = delta.usage {
            if let Some(out) = u.output_tokens {
                self.usage.output_tokens = out;
            }
            if u.input_tokens.is_some() {
                self.usage.input_tokens = u.input_total();
            }
        }
    }

    /// The whole answer, once the stream ended.
    fn into_response(
        self,
        default_model: &str,
        stream: &SseStream,
    ) -> Result<CompletionResponse, ProviderError> {
        if !self.started || !self.stopped {
            return Err(stream.protocol(format!(
                "the stream ended after {} events without {}",
                stream.events_read(),
                if self.started {
                    "message_stop"
                } else {
                    "message_start"
                }
            )));
        }
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        let mut structured_answer = false;
        for state in self.blocks.into_values() {
            match state {
                BlockState::Text(t) => text.push_str(&t),
                BlockState::Tool {
                    id,
                    name,
                    json,
                    initial,
                    structured,
                } => {
                    // Input that is not JSON stays the text it was, as the
                    // other paths keep it: the tool layer tells the model
                    // its arguments are invalid (a structured answer fails
                    // to parse as the agent's output).
                    let input = if json.trim().is_empty() {
                        initial
                    } else {
                        serde_json::from_str(&json).unwrap_or(Value::String(json))
                    };
                    if structured {
                        text = input.to_string();
                        structured_answer = true;
                    } else {
                        tool_calls.push(ToolCall {
                            id,
                            name,
                            arguments: input,
                        });
                    }
                }
                BlockState::Ignored => {}
            }
        }
        Ok(CompletionResponse {
            model: self.model.unwrap_or_else(|| default_model.to_string()),
            text,
            stop_reason: stop_reason(self.stop.as_deref(), structured_answer),
            tool_calls,
            usage: self.usage,
        })
    }
}

#[async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        NAME
    }

    fn model(&self) -> &str {
        &self.model
    }

    /// `ANTHROPIC_API_KEY` when there is no key for Anthropic's own API.
    fn missing_key(&self) -> Option<&'static str> {
        self.http.missing_key()
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        sink: &mut dyn StreamSink,
    ) -> Result<CompletionResponse, ProviderError> {
        let http = self.http_request(self.request_body(request));
        let transport = self.resolved_transport();
        without_secrets(secrets_of(&http), async {
            if request.options.stream {
                self.complete_stream(request, transport.as_ref(), http, sink)
                    .await
            } else {
                self.complete_full(request, transport.as_ref(), http, sink)
                    .await
            }
        })
        .await
    }
}

/// The `messages` array: content blocks, tool results first in user turns,
/// empty text blocks (which the API rejects) left out.
fn messages(request: &CompletionRequest) -> Vec<Value> {
    let mut out = Vec::new();
    for message in &request.messages {
        let mut results = Vec::new();
        let mut others = Vec::new();
        for part in &message.content {
            match part {
                ContentPart::Text { text } if text.is_empty() => {}
                ContentPart::Text { text } => others.push(json!({"type": "text", "text": text})),
                ContentPart::ToolCall(call) => others.push(json!({
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": call.arguments,
                })),
                ContentPart::ToolResult {
                    call_id,
                    content,
                    is_error,
                } => {
                    let mut block = json!({
                        "type": "tool_result",
                        "tool_use_id": call_id,
                        "content": content,
                    });
                    if *is_error {
                        block["is_error"] = json!(true);
                    }
                    results.push(block);
                }
            }
        }
        results.extend(others);
        if results.is_empty() {
            continue;
        }
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        out.push(json!({"role": role, "content": results}));
    }
    out
}

fn stop_reason(reason: Option<&str>, structured: bool) -> StopReason {
    match reason {
        Some("tool_use") if structured => StopReason::EndTurn,
        Some("end_turn") | Some("stop_sequence") | None => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some(_) => StopReason::Other,
    }
}

fn stream_error(value: &Value, attempts: u32) -> ProviderError {
    let message = message_from_json(value).unwrap_or_else(|| value.to_string());
    let kind = value
        .get("error")
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let status = status_for_error_type(kind);
    if status == 429 {
        ProviderError::RateLimited {
            provider: NAME.to_string(),
            attempts,
            message: format!("error event in the stream: {message}"),
        }
    } else {
        ProviderError::Http {
            provider: NAME.to_string(),
            status,
            message: format!("error event in the stream: {message}"),
        }
    }
}

fn from_event<T: serde::de::DeserializeOwned>(
    value: Value,
    index: usize,
    kind: &str,
) -> Result<T, ProviderError> {
    serde_json::from_value(value).map_err(|e| ProviderError::Protocol {
        provider: NAME.to_string(),
        message: format!("unexpected {kind} event (event {index}): {e}"),
    })
}

enum BlockState {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
        initial: Value,
        structured: bool,
    },
    Ignored,
}

// ---------------------------------------------------------------------------
// Wire types (only the fields read)
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct MessageResponse {
    #[serde(default)]
    model: Option<String>,
    content: Vec<Block>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: AnUsage,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize, Default)]
struct AnUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl AnUsage {
    /// Input tokens including cache writes and reads (all the prompt).
    fn input_total(&self) -> u64 {
        self.input_tokens.unwrap_or(0)
            + self.cache_creation_input_tokens.unwrap_or(0)
            + self.cache_read_input_tokens.unwrap_or(0)
    }

    fn into_usage(self) -> Usage {
        Usage {
            input_tokens: self.input_total(),
            output_tokens: self.output_tokens.unwrap_or(0),
        }
    }
}

#[derive(Deserialize)]
struct MessageStart {
    message: StartMessage,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: AnUsage,
}

#[derive(Deserialize)]
struct BlockStart {
    index: usize,
    content_block: Block,
}

#[derive(Deserialize)]
struct BlockDelta {
    index: usize,
    delta: DeltaKind,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum DeltaKind {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        #[serde(default)]
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageDelta {
    delta: MessageDeltaBody,
    #[serde(default)]
    usage: Option<AnUsage>,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}
