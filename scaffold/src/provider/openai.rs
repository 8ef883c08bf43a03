//! The OpenAI chat completions provider, for OpenAI and compatible servers
//! (Ollama, vLLM, llama.cpp server, ... at their `/v1` base URL).
//!
//! Request shape (`POST {base_url}/chat/completions`): `model`, `messages`
//! (a `system` message, `user` messages, `assistant` messages with
//! `tool_calls` whose `function.arguments` is a JSON string, `tool` messages
//! with `tool_call_id`), `tools` (`{type: function, function: {name,
//! description, parameters}}`), `response_format` (`{type: json_schema,
//! json_schema: {name, schema, strict}}`, the schema in strict form, see
//! [`OpenAi::strict_schema`]), `temperature`,
//! `max_completion_tokens` (or the deprecated `max_tokens`, see
//! [`MaxTokensField`]), and for streams `stream: true` with
//! `stream_options: {include_usage: true}`.
//! Tool `parameters` go as they are, without `strict`: openai-python makes a
//! tool strict only when asked to (`pydantic_function_tool`).
//!
//! Embeddings: [`OpenAi::embeddings`] (`POST {base_url}/embeddings`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::http::{
    HttpClient, HttpConfig, HttpProvider, ProviderEnv, RetryPolicy, api_name,
    http_provider_builder, message_from_json, parse_event, parse_json, status_for_error_type,
    without_secrets,
};
use super::limit::RateLimit;
use super::recorder::secrets_of;
use super::schema::openai_strict;
use super::transport::{HttpRequest, Transport};
use super::{
    CallContext, CompletionRequest, CompletionResponse, ContentPart, Provider, ProviderError, Role,
    StopReason, StreamSink, ToolCall, Usage,
};

/// The default base URL.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

const NAME: &str = "openai";

/// Where the base URL and the API key come from.
const ENV: ProviderEnv = ProviderEnv {
    base_url: "OPENAI_BASE_URL",
    default_base_url: DEFAULT_BASE_URL,
    api_key: "OPENAI_API_KEY",
};

/// Which request field carries [`ProviderOptions::max_tokens`](super::ProviderOptions::max_tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxTokensField {
    /// `max_completion_tokens`: the current field, required by reasoning
    /// models; accepted by vLLM and recent llama.cpp servers.
    #[default]
    MaxCompletionTokens,
    /// `max_tokens`: deprecated by OpenAI, but the one older
    /// OpenAI-compatible servers (e.g. Ollama) read.
    MaxTokens,
}

/// An OpenAI-compatible chat completions provider.
///
/// Built with a model name and optional settings; all HTTP goes through its
/// [`Transport`] (by default a shared reqwest client), so the recorder can
/// record and play it back.
///
/// ```
/// use std::time::Duration;
/// use scaffold::provider::Provider;
/// use scaffold::provider::http::RetryPolicy;
/// use scaffold::provider::openai::OpenAi;
///
/// // OpenAI, key from OPENAI_API_KEY:
/// let gpt = OpenAi::new("gpt-4o-mini");
/// assert_eq!(gpt.model(), "gpt-4o-mini");
///
/// // A local Ollama server: no key needed.
/// let local = OpenAi::new("llama3.2")
///     .base_url("http://localhost:11434/v1")
///     .retry(RetryPolicy::new(2))
///     .timeout(Duration::from_secs(120));
/// assert_eq!(local.name(), "openai");
/// ```
#[derive(Clone)]
pub struct OpenAi {
    model: String,
    http: HttpProvider,
    max_tokens_field: MaxTokensField,
    strict_schema: bool,
}

impl std::fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut f = f.debug_struct("OpenAi");
        f.field("model", &self.model);
        self.http.debug_fields(&mut f);
        f.field("max_tokens_field", &self.max_tokens_field)
            .field("strict_schema", &self.strict_schema)
            .finish_non_exhaustive()
    }
}

impl OpenAi {
    /// A provider for `model` at `OPENAI_BASE_URL` if set, else `DEFAULT_BASE_URL`, with the API key from
    /// `OPENAI_API_KEY` if set (no key is fine for local servers).
    pub fn new(model: impl Into<String>) -> Self {
        OpenAi {
            model: model.into(),
            http: HttpProvider::from_env(NAME, ENV),
            max_tokens_field: MaxTokensField::default(),
            strict_schema: true,
        }
    }

    http_provider_builder! {
        base_url: "Use another base URL (one ending in `/v1` for compatible servers).",
        api_key: "Use this API key (sent as `Authorization: Bearer …`), overriding the environment.",
        header: "Add a header to every request (e.g. `OpenAI-Organization`).",
    }

    /// Send no API key, whatever the environment holds.
    pub fn without_api_key(mut self) -> Self {
        self.http.api_key = None;
        self
    }

    /// Choose the field that carries the token limit.
    pub fn max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.max_tokens_field = field;
        self
    }

    /// Ask for strict schema adherence in structured output (default
    /// `true`): the schema is sent in the form strict mode accepts (see
    /// [`openai_strict`]), or as it is with `strict: false` when strict mode
    /// cannot express it (maps, free-form values). `false` sends every
    /// schema as it is, non-strict.
    pub fn strict_schema(mut self, strict: bool) -> Self {
        self.strict_schema = strict;
        self
    }

    /// The JSON body of the chat completions request for `request`.
    pub fn request_body(&self, request: &CompletionRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert("messages".into(), Value::Array(messages(request)));
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.parameters,
                        }
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(schema) = &request.output_schema {
            let strict = self
                .strict_schema
                .then(|| openai_strict(&schema.schema))
                .flatten();
            let strict_mode = strict.is_some();
            body.insert(
                "response_format".into(),
                json!({
                    "type": "json_schema",
                    "json_schema": {
                        "name": api_name(&schema.name),
                        "schema": strict.unwrap_or_else(|| schema.schema.clone()),
                        "strict": strict_mode,
                    }
                }),
            );
        }
        let options = &request.options;
        if let Some(t) = options.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(max) = options.max_tokens {
            let field = match self.max_tokens_field {
                MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
                MaxTokensField::MaxTokens => "max_tokens",
            };
            body.insert(field.into(), json!(max));
        }
        if options.stream {
            body.insert("stream".into(), json!(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Value::Object(body)
    }

    /// Embed `inputs` with this provider's model (an embeddings model such
    /// as `text-embedding-3-small`), one vector per input, in order.
    pub async fn embeddings<S: AsRef<str>>(
        &self,
        inputs: &[S],
    ) -> Result<Vec<Vec<f32>>, ProviderError> {
        self.embeddings_with_context(inputs, &CallContext::default())
            .await
    }

    /// [`embeddings`](Self::embeddings) with a recording context.
    pub async fn embeddings_with_context<S: AsRef<str>>(
        &self,
        inputs: &[S],
        context: &CallContext,
    ) -> Result<Vec<Vec<f32>>, ProviderError> {
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        let input: Vec<&str> = inputs.iter().map(AsRef::as_ref).collect();
        let body = json!({"model": self.model, "input": input, "encoding_format": "float"});
        let request = self.http_request("/embeddings", body);
        let transport = self.resolved_transport();
        let secrets = secrets_of(&request);
        let client = self.client(transport.as_ref());
        let bytes = without_secrets(secrets, client.send_json(request, context)).await?;
        let parsed: EmbeddingsResponse = parse_json(NAME, "embeddings response", &bytes)?;
        let mut data = parsed.data;
        data.sort_by_key(|d| d.index);
        if data.len() != inputs.len() {
            return Err(protocol(format!(
                "asked for {} embeddings, got {}",
                inputs.len(),
                data.len()
            )));
        }
        Ok(data.into_iter().map(|d| d.embedding).collect())
    }

    fn resolved_transport(&self) -> Arc<dyn Transport> {
        self.http.resolved_transport()
    }

    fn client<'a>(&'a self, transport: &'a dyn Transport) -> HttpClient<'a> {
        self.http.client(transport)
    }

    fn http_request(&self, path: &str, body: Value) -> HttpRequest {
        let auth = self
            .http
            .api_key
            .as_ref()
            .map(|key| ("authorization".to_string(), format!("Bearer {key}")));
        self.http.post(path, auth.into_iter().collect(), body)
    }

    async fn complete_full(
        &self,
        transport: &dyn Transport,
        http: HttpRequest,
        context: &CallContext,
        sink: &mut dyn StreamSink,
    ) -> Result<CompletionResponse, ProviderError> {
        let bytes = self.client(transport).send_json(http, context).await?;
        let parsed: ChatResponse = parse_json(NAME, "chat completion response", &bytes)?;
        let choice = parsed
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| protocol("the chat completion response has no choices"))?;
        let message = choice.message;
        let mut text = message.content.unwrap_or_default();
        if text.is_empty()
            && let Some(refusal) = message.refusal
        {
            text = refusal;
        }
        if !text.is_empty() {
            sink.text_delta(&text);
        }
        let tool_calls = message
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .map(|c| ToolCall {
                id: c.id.unwrap_or_default(),
                name: c.function.name,
                arguments: arguments_value(c.function.arguments),
            })
            .collect::<Vec<_>>();
        Ok(CompletionResponse {
            model: parsed.model.unwrap_or_else(|| self.model.clone()),
            text,
            stop_reason: stop_reason(choice.finish_reason.as_deref(), !tool_calls.is_empty()),
            tool_calls,
            usage: parsed.usage.map(OaUsage::into_usage).unwrap_or_default(),
        })
    }

    async fn complete_stream(
        &self,
        transport: &dyn Transport,
        http: HttpRequest,
        context: &CallContext,
        sink: &mut dyn StreamSink,
    ) -> Result<CompletionResponse, ProviderError> {
        let mut stream = self.client(transport).send_stream(http, context).await?;
        let mut model: Option<String> = None;
        let mut text = String::new();
        let mut refusal = String::new();
        let mut calls: BTreeMap<usize, PartialCall> = BTreeMap::new();
        let mut finish: Option<String> = None;
        let mut usage: Option<Usage> = None;
        let mut done = false;
        // Whether any chunk carried a choice: a stream of none is no answer.
        let mut answered = false;
        while let Some(event) = stream.next_event().await? {
            if event.data.trim() == "[DONE]" {
                done = true;
                break;
            }
            let index = stream.events_read();
            let chunk: ChatChunk = parse_event(NAME, &event, index)?;
            if let Some(error) = chunk.error {
                return Err(stream_error(&error, stream.attempts()));
            }
            if model.is_none() {
                model = chunk.model;
            }
            if let Some(u) = chunk.usage {
                usage = Some(u.into_usage());
            }
            for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
                answered = true;
                if let Some(delta) = choice.delta {
                    if let Some(piece) = delta.content.filter(|p| !p.is_empty()) {
                        sink.text_delta(&piece);
                        text.push_str(&piece);
                    }
                    if let Some(piece) = delta.refusal {
                        refusal.push_str(&piece);
                    }
                    for call in delta.tool_calls.unwrap_or_default() {
                        merge_call_delta(&mut calls, call);
                    }
                }
                if let Some(reason) = choice.finish_reason {
                    finish = Some(reason);
                }
            }
        }
        if !done && finish.is_none() {
            return Err(stream.protocol(format!(
                "the stream ended after {} events without a finish_reason or data: [DONE]",
                stream.events_read()
            )));
        }
        if !answered {
            // As the whole-answer path fails on a body without `choices`.
            return Err(stream.protocol(format!(
                "the stream ended after {} events without any choice (no chunk had `choices`)",
                stream.events_read()
            )));
        }
        if text.is_empty() && !refusal.is_empty() {
            sink.text_delta(&refusal);
            text = refusal;
        }
        let tool_calls: Vec<ToolCall> = calls
            .into_values()
            .map(|c| ToolCall {
                id: c.id,
                name: c.name,
                arguments: c
                    .value
                    .unwrap_or_else(|| arguments_value(Some(Value::String(c.args)))),
            })
            .collect();
        Ok(CompletionResponse {
            model: model.unwrap_or_else(|| self.model.clone()),
            text,
            stop_reason: stop_reason(finish.as_deref(), !tool_calls.is_empty()),
            tool_calls,
            usage: usage.unwrap_or_default(),
        })
    }
}

#[async_trait]
impl Provider for OpenAi {
    fn name(&self) -> &str {
        NAME
    }

    fn model(&self) -> &str {
        &self.model
    }

    /// `OPENAI_API_KEY` when there is no key for OpenAI's own API (a local
    /// or compatible server may need none).
    fn missing_key(&self) -> Option<&'static str> {
        self.http.missing_key()
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        sink: &mut dyn StreamSink,
    ) -> Result<CompletionResponse, ProviderError> {
        let http = self.http_request("/chat/completions", self.request_body(request));
        let transport = self.resolved_transport();
        without_secrets(secrets_of(&http), async {
            if request.options.stream {
                self.complete_stream(transport.as_ref(), http, &request.context, sink)
                    .await
            } else {
                self.complete_full(transport.as_ref(), http, &request.context, sink)
                    .await
            }
        })
        .await
    }
}

/// The `messages` array of a request.
fn messages(request: &CompletionRequest) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(system) = &request.system {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        // Tool results become `tool` messages, which must directly follow
        // the assistant message that asked for them.
        for part in &message.content {
            if let ContentPart::ToolResult {
                call_id, content, ..
            } = part
            {
                out.push(json!({"role": "tool", "tool_call_id": call_id, "content": content}));
            }
        }
        let texts: Vec<&str> = message
            .content
            .iter()
            .filter_map(|p| match p {
                ContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        match message.role {
            Role::User => {
                let has_results = message
                    .content
                    .iter()
                    .any(|p| matches!(p, ContentPart::ToolResult { .. }));
                if texts.is_empty() && has_results {
                    continue;
                }
                let content = if texts.len() > 1 {
                    Value::Array(
                        texts
                            .iter()
                            .map(|t| json!({"type": "text", "text": t}))
                            .collect(),
                    )
                } else {
                    json!(texts.first().copied().unwrap_or(""))
                };
                out.push(json!({"role": "user", "content": content}));
            }
            Role::Assistant => {
                let calls: Vec<Value> = message
                    .content
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::ToolCall(call) => Some(json!({
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": call.arguments.to_string(),
                            }
                        })),
                        _ => None,
                    })
                    .collect();
                let text: String = texts.concat();
                let mut msg = Map::new();
                msg.insert("role".into(), json!("assistant"));
                msg.insert(
                    "content".into(),
                    if text.is_empty() && !calls.is_empty() {
                        Value::Null
                    } else {
                        json!(text)
                    },
                );
                if !calls.is_empty() {
                    msg.insert("tool_calls".into(), Value::Array(calls));
                }
                out.push(Value::Object(msg));
            }
        }
    }
    out
}

fn protocol(message: impl Into<String>) -> ProviderError {
    ProviderError::Protocol {
        provider: NAME.to_string(),
        message: message.into(),
    }
}

fn stop_reason(finish: Option<&str>, has_calls: bool) -> StopReason {
    match finish {
        Some("stop") => {
            if has_calls {
                StopReason::ToolUse
            } else {
                StopReason::EndTurn
            }
        }
        Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        None if has_calls => StopReason::ToolUse,
        None => StopReason::EndTurn,
        Some(_) => StopReason::Other,
    }
}

/// Tool call arguments: a JSON string (the API's form) is parsed; an empty
/// string is `{}`; an object (sent by some compatible servers) is kept;
/// arguments that are not valid JSON are kept as a JSON string so the tool
/// layer can report them.
fn arguments_value(raw: Option<Value>) -> Value {
    match raw {
        None | Some(Value::Null) => json!({}),
        Some(Value::String(s)) if s.trim().is_empty() => json!({}),
        Some(Value::String(s)) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
        Some(other) => other,
    }
}

/// An error object sent inside a stream.
fn stream_error(error: &Value, attempts: u32) -> ProviderError {
    let wrapped = json!({ "error": error });
    let message = message_from_json(&wrapped).unwrap_or_else(|| error.to_string());
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .or_else(|| error.get("code").and_then(Value::as_str))
        .unwrap_or("");
    let status = status_for_error_type(kind);
    if status == 429 {
        ProviderError::RateLimited {
            provider: NAME.to_string(),
            attempts,
            message: format!("error in the stream: {message}"),
        }
    } else {
        ProviderError::Http {
            provider: NAME.to_string(),
            status,
            message: format!("error in the stream: {message}"),
        }
    }
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    args: String,
    value: Option<Value>,
}

fn merge_call_delta(calls: &mut BTreeMap<usize, PartialCall>, delta: DeltaToolCall) {
    let index = match delta.index {
        Some(i) => i,
        // Servers that omit `index` send each call whole: a new id is a new call.
        None => match (&delta.id, calls.last_key_value()) {
            (Some(id), Some((last, call))) if call.id == *id => *last,
            (None, Some((last, _))) => *last,
            (_, Some((last, _))) => last + 1,
            (_, None) => 0,
        },
    };
    let entry = calls.entry(index).or_default();
    if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
        entry.id = id;
    }
    if let Some(function) = delta.function {
        if let Some(name) = function.name.filter(|n| !n.is_empty()) {
            entry.name.push_str(&name);
        }
        match function.arguments {
            Some(Value::String(fragment)) => entry.args.push_str(&fragment),
            Some(Value::Null) | None => {}
            Some(other) => entry.value = Some(other),
        }
    }
}

// ---------------------------------------------------------------------------
// Wire types (only the fields read)
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct ChatResponse {
    #[serde(default)]
    model: Option<String>,
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<OaUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize, Default)]
struct OaUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

impl OaUsage {
    fn into_usage(self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.completion_tokens.unwrap_or(0),
        }
    }
}

#[derive(Deserialize)]
struct ChatChunk {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<OaUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<DeltaToolCall>>,
}

#[derive(Deserialize)]
struct DeltaToolCall {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<DeltaFunction>,
}

#[derive(Deserialize)]
struct DeltaFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingData>,
}

#[derive(Deserialize)]
struct EmbeddingData {
    #[serde(default)]
    index: usize,
    embedding: Vec<f32>,
}
