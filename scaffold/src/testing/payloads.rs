//! Response bodies and event streams in the shapes the real APIs send.
//!
//! Build a [`Message`] (what the model says, its ids and token counts),
//! then render it with [`openai`] (chat completions), [`responses`] (the
//! OpenAI Responses API) or [`anthropic`] (Messages), whole or as the
//! server-sent events of a stream:
//!
//! ```
//! use scaffold::testing::payloads::{self, Content, Message};
//!
//! let message = Message::new("chatcmpl-1", "gpt-4o", Content::text("Hello"), (12, 2));
//! let body = payloads::openai::chat_completion(&message);
//! assert_eq!(body["choices"][0]["message"]["content"], "Hello");
//! let events = payloads::anthropic::message_stream(&message);
//! assert!(events.last().is_some_and(|e| e.contains("message_stop")));
//! ```

use std::borrow::Cow;

use serde_json::{Map, Value, json};

/// What the model answers: text, or tool calls.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A text answer (a structured answer is its JSON text).
    Text(String),
    /// Tool calls, in order.
    Tools(Vec<ToolUse>),
}

/// One tool call in an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    /// The call id (`call_…` for OpenAI, `toolu_…` for Anthropic).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// Its arguments.
    pub arguments: Value,
}

/// One answer with what surrounds it in a response.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The response id (`chatcmpl-…`, `resp_…`, `msg_…`).
    pub id: String,
    /// The model named in the response.
    pub model: String,
    /// What the model says.
    pub content: Content,
    /// Input and output tokens.
    pub usage: (u64, u64),
    /// OpenAI's `created` (Unix seconds), the Responses API's `created_at`
    /// and `completed_at`.
    pub created: u64,
    /// OpenAI's `system_fingerprint`.
    pub fingerprint: String,
}

impl Message {
    /// A message with a fixed `created` time and fingerprint.
    pub fn new(
        id: impl Into<String>,
        model: impl Into<String>,
        content: Content,
        usage: (u64, u64),
    ) -> Self {
        Message {
            id: id.into(),
            model: model.into(),
            content,
            usage,
            created: CREATED,
            fingerprint: "fp_fake".to_string(),
        }
    }
}

impl Content {
    /// A text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text(text.into())
    }

    fn output_len(&self) -> usize {
        match self {
            Content::Text(t) => t.chars().count(),
            Content::Tools(calls) => calls
                .iter()
                .map(|c| c.name.len() + c.arguments.to_string().len())
                .sum(),
        }
    }
}

/// Deterministic token counts for a request `body` and its answer: about
/// four characters a token.
pub fn usage_for(body: &Value, answer: &Content) -> (u64, u64) {
    // Chat's and Anthropic's `messages` and `system`, the Responses API's
    // `input` and `instructions`.
    let prompt_chars: usize = ["messages", "system", "input", "instructions"]
        .iter()
        .filter_map(|key| body.get(key))
        .map(|m| m.to_string().len())
        .sum();
    let input = (prompt_chars as u64).div_ceil(4).max(1);
    let output = (answer.output_len() as u64).div_ceil(4).max(1);
    (input, output)
}

/// The text of the last message of a request body (tool results included):
/// of chat's or Anthropic's `messages`, or of the Responses API's `input`.
pub fn last_message_text(body: &Value) -> String {
    let messages = conversation(body);
    let Some(last) = messages.last() else {
        return String::new();
    };
    // A Responses tool result (`function_call_output`) has an `output`.
    let content = last.get("content").or_else(|| last.get("output"));
    content_text(content.unwrap_or(&Value::Null))
}

/// The messages of a request body: chat's or Anthropic's `messages`, or the
/// items of the Responses API's `input` (a plain string is one user
/// message; tool calls and their results are items without a role).
pub(crate) fn conversation(body: &Value) -> Cow<'_, [Value]> {
    match body.get("messages").or_else(|| body.get("input")) {
        Some(Value::Array(items)) => Cow::Borrowed(items.as_slice()),
        Some(Value::String(text)) => Cow::Owned(vec![json!({"role": "user", "content": text})]),
        _ => Cow::Borrowed(&[]),
    }
}

/// A content part of text: chat's and Anthropic's `text`, the Responses
/// API's `input_text` (user, system, tool output) and `output_text` (assistant).
pub(crate) fn is_text_part(part: &Value) -> bool {
    matches!(
        part.get("type").and_then(Value::as_str),
        Some("text" | "input_text" | "output_text")
    )
}

pub(crate) fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p.get("type").and_then(Value::as_str) {
                _ if is_text_part(p) => p
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                Some("tool_result") => content_text(p.get("content").unwrap_or(&Value::Null)),
                _ => String::new(),
            })
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A minimal value of `schema` (`$ref`s into `$defs` / `definitions`
/// followed), with `text` in string fields.
pub(crate) fn schema_instance(schema: &Value, text: &str) -> Value {
    instance(schema, schema, text, 0)
}

fn instance(schema: &Value, root: &Value, text: &str, depth: usize) -> Value {
    if depth > 16 {
        return Value::Null;
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix("#/")
            .map(|path| {
                path.split('/')
                    .try_fold(root, |node, key| node.get(key))
                    .unwrap_or(&Value::Null)
            })
            .unwrap_or(&Value::Null);
        return instance(target, root, text, depth + 1);
    }
    if let Some(value) = schema.get("const") {
        return value.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(alternatives) = schema.get(key).and_then(Value::as_array) {
            let pick = alternatives
                .iter()
                .find(|a| a.get("type").and_then(Value::as_str) != Some("null"))
                .or_else(|| alternatives.first());
            if let Some(pick) = pick {
                return instance(pick, root, text, depth + 1);
            }
        }
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .or(Some("null")),
        _ if schema.get("properties").is_some() => Some("object"),
        _ => None,
    };
    match kind {
        Some("object") => {
            let mut out = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    out.insert(name.clone(), instance(prop, root, text, depth + 1));
                }
            }
            Value::Object(out)
        }
        Some("array") => {
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let items = schema.get("items").unwrap_or(&Value::Null);
            Value::Array(
                (0..min.min(8))
                    .map(|_| instance(items, root, text, depth + 1))
                    .collect(),
            )
        }
        Some("string") => json!(text),
        Some("integer") => json!(schema.get("minimum").and_then(Value::as_i64).unwrap_or(0)),
        Some("number") => json!(schema.get("minimum").and_then(Value::as_f64).unwrap_or(0.0)),
        Some("boolean") => json!(false),
        _ => Value::Null,
    }
}

/// Split text into pieces of about `size` characters, on char boundaries.
pub(crate) fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

// ---------------------------------------------------------------------------
// OpenAI
// ---------------------------------------------------------------------------

const CREATED: u64 = 1_735_689_600;

fn openai_usage(input: u64, output: u64) -> Value {
    json!({
        "prompt_tokens": input,
        "completion_tokens": output,
        "total_tokens": input + output,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0
        }
    })
}

pub(crate) fn openai_completion(m: &Message) -> Value {
    let (message, finish) = match &m.content {
        Content::Text(text) => (
            json!({"role": "assistant", "content": text, "refusal": null, "annotations": []}),
            "stop",
        ),
        Content::Tools(calls) => (
            json!({
                "role": "assistant",
                "content": null,
                "refusal": null,
                "annotations": [],
                "tool_calls": calls.iter().map(|c| json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments.to_string()}
                })).collect::<Vec<_>>()
            }),
            "tool_calls",
        ),
    };
    json!({
        "id": m.id,
        "object": "chat.completion",
        "created": m.created,
        "model": m.model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
        "usage": openai_usage(m.usage.0, m.usage.1),
        "service_tier": "default",
        "system_fingerprint": m.fingerprint
    })
}

/// The SSE events of a streamed chat completion, `data: [DONE]` last.
pub(crate) fn openai_stream(m: &Message, include_usage: bool) -> Vec<String> {
    let usage = m.usage;
    let chunk = |choices: Value, usage: Value| {
        let mut value = json!({
            "id": m.id,
            "object": "chat.completion.chunk",
            "created": m.created,
            "model": m.model,
            "service_tier": "default",
            "system_fingerprint": m.fingerprint,
            "choices": choices,
        });
        if include_usage {
            value["usage"] = usage;
        }
        sse(None, &value)
    };
    let delta = |delta: Value, finish: Value| json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]);
    let mut events = Vec::new();
    let finish = match &m.content {
        Content::Text(text) => {
            events.push(chunk(
                delta(
                    json!({"role": "assistant", "content": "", "refusal": null}),
                    Value::Null,
                ),
                Value::Null,
            ));
            for piece in pieces(text, 4) {
                events.push(chunk(
                    delta(json!({"content": piece}), Value::Null),
                    Value::Null,
                ));
            }
            "stop"
        }
        Content::Tools(calls) => {
            events.push(chunk(
                delta(json!({"role": "assistant", "content": null}), Value::Null),
                Value::Null,
            ));
            for (i, call) in calls.iter().enumerate() {
                events.push(chunk(
                    delta(
                        json!({"tool_calls": [{
                            "index": i,
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""}
                        }]}),
                        Value::Null,
                    ),
                    Value::Null,
                ));
                for fragment in pieces(&call.arguments.to_string(), 5) {
                    events.push(chunk(
                        delta(
                            json!({"tool_calls": [{"index": i, "function": {"arguments": fragment}}]}),
                            Value::Null,
                        ),
                        Value::Null,
                    ));
                }
            }
            "tool_calls"
        }
    };
    events.push(chunk(delta(json!({}), json!(finish)), Value::Null));
    if include_usage {
        events.push(chunk(json!([]), openai_usage(usage.0, usage.1)));
    }
    events.push("data: [DONE]\n\n".to_string());
    events
}

pub(crate) fn openai_error(status: u16) -> Value {
    let (message, kind, code) = match status {
        401 => (
            "Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            json!("invalid_api_key"),
        ),
        429 => (
            "Rate limit reached for gpt-4o-mini in organization org-fake on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.",
            "requests",
            json!("rate_limit_exceeded"),
        ),
        400 => ("Invalid request.", "invalid_request_error", Value::Null),
        404 => (
            "Unknown request URL.",
            "invalid_request_error",
            json!("unknown_url"),
        ),
        503 => (
            "The engine is currently overloaded, please try again later.",
            "server_error",
            Value::Null,
        ),
        _ => (
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            Value::Null,
        ),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

/// A 401 for a wrong key, which echoes the key presented as OpenAI's
/// does ("Incorrect API key provided: sk-…").
pub(crate) fn wrong_key_error(anthropic: bool, presented: &str) -> Value {
    if anthropic {
        anthropic_error_message(
            "authentication_error",
            &format!("invalid x-api-key: {presented}"),
        )
    } else {
        openai_error_message(
            &format!(
                "Incorrect API key provided: {presented}. You can find your API key at https://platform.openai.com/account/api-keys."
            ),
            "invalid_api_key",
        )
    }
}

pub(crate) fn openai_error_message(message: &str, code: &str) -> Value {
    json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": code}})
}

/// A deterministic embedding: hashed character trigrams, unit length, so
/// similar texts get close vectors.
pub(crate) fn embedding(text: &str, dims: usize) -> Vec<f32> {
    let dims = dims.max(1);
    let mut v = vec![0f32; dims];
    let chars: Vec<char> = format!("  {}  ", text.to_lowercase()).chars().collect();
    for w in chars.windows(3) {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for c in w {
            for b in (*c as u32).to_le_bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        let slot = (h % dims as u64) as usize;
        v[slot] += if (h >> 40) & 1 == 0 { 1.0 } else { -1.0 };
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    } else {
        v[0] = 1.0;
    }
    v
}

pub(crate) fn openai_embeddings(model: &str, body: &Value, default_dims: usize) -> Value {
    let inputs: Vec<String> = match body.get("input") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| i.to_string())
            })
            .collect(),
        _ => Vec::new(),
    };
    let dims = body
        .get("dimensions")
        .and_then(Value::as_u64)
        .map(|d| d as usize)
        .unwrap_or(default_dims);
    let tokens: u64 = inputs.iter().map(|i| (i.len() as u64).div_ceil(4)).sum();
    json!({
        "object": "list",
        "data": inputs.iter().enumerate().map(|(i, text)| json!({
            "object": "embedding",
            "index": i,
            "embedding": embedding(text, dims),
        })).collect::<Vec<_>>(),
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}
    })
}

// ---------------------------------------------------------------------------
// OpenAI Responses
// ---------------------------------------------------------------------------

fn responses_usage(input: u64, output: u64) -> Value {
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output
    })
}

/// `id` under another prefix: `resp_x` gives the message item `msg_x`,
/// `call_x` the function call item `fc_x`, so item ids follow the
/// response's and the calls' ids.
fn item_id(prefix: &str, id: &str, from: &str) -> String {
    format!("{prefix}{}", id.strip_prefix(from).unwrap_or(id))
}

/// The id of the message item of a text answer.
fn responses_message_id(m: &Message) -> String {
    item_id("msg_", &m.id, "resp_")
}

/// A `message` output item: complete with its text, or (`None`) as it
/// opens in a stream.
fn responses_message_item(m: &Message, text: Option<&str>) -> Value {
    let (status, content) = match text {
        Some(text) => (
            "completed",
            json!([{"type": "output_text", "text": text, "annotations": []}]),
        ),
        None => ("in_progress", json!([])),
    };
    json!({
        "id": responses_message_id(m),
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": content
    })
}

/// A `function_call` output item: complete, or (`done` false) as it opens
/// in a stream, with no arguments yet.
fn responses_call_item(call: &ToolUse, done: bool) -> Value {
    let (status, arguments) = if done {
        ("completed", call.arguments.to_string())
    } else {
        ("in_progress", String::new())
    };
    json!({
        "id": item_id("fc_", &call.id, "call_"),
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": call.id,
        "name": call.name
    })
}

/// The output items of a complete answer.
fn responses_output(m: &Message) -> Vec<Value> {
    match &m.content {
        Content::Text(text) => vec![responses_message_item(m, Some(text))],
        Content::Tools(calls) => calls.iter().map(|c| responses_call_item(c, true)).collect(),
    }
}

/// A `response` object answering `request`: `completed` with its output and
/// usage, or (`done` false) `in_progress` with neither, as a stream opens.
fn responses_object(m: &Message, request: &Value, done: bool) -> Value {
    let (status, completed_at, output, usage) = if done {
        (
            "completed",
            json!(m.created),
            Value::Array(responses_output(m)),
            responses_usage(m.usage.0, m.usage.1),
        )
    } else {
        ("in_progress", Value::Null, json!([]), Value::Null)
    };
    json!({
        "id": m.id,
        "object": "response",
        "created_at": m.created,
        "status": status,
        "completed_at": completed_at,
        "error": null,
        "incomplete_details": null,
        "instructions": request.get("instructions").cloned().unwrap_or(Value::Null),
        "max_output_tokens": null,
        "model": m.model,
        "output": output,
        "parallel_tool_calls": true,
        "previous_response_id": null,
        "reasoning": {"effort": null, "summary": null},
        "store": false,
        "temperature": null,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": null,
        "truncation": "disabled",
        "usage": usage,
        "user": null,
        "metadata": {}
    })
}

pub(crate) fn responses_response(m: &Message, request: &Value) -> Value {
    responses_object(m, request, true)
}

/// The SSE events of a streamed response, numbered by `sequence_number`
/// from 0, `response.completed` last (the Responses API sends no `[DONE]`).
pub(crate) fn responses_stream(m: &Message, request: &Value) -> Vec<String> {
    let pending = responses_object(m, request, false);
    let mut events = vec![
        json!({"type": "response.created", "response": pending}),
        json!({"type": "response.in_progress", "response": pending}),
    ];
    match &m.content {
        Content::Text(text) => {
            let id = responses_message_id(m);
            // The events of the message's one content part (index 0).
            let part_event = |kind: &str, key: &str, value: Value| {
                json!({
                    "type": kind,
                    "item_id": id,
                    "output_index": 0,
                    "content_index": 0,
                    key: value
                })
            };
            let part = |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
            events.push(json!({
                "type": "response.output_item.added",
                "output_index": 0,
                "item": responses_message_item(m, None)
            }));
            events.push(part_event("response.content_part.added", "part", part("")));
            let mut deltas = pieces(text, 4);
            if deltas.is_empty() {
                deltas.push(String::new());
            }
            for delta in deltas {
                let mut event = part_event("response.output_text.delta", "delta", json!(delta));
                event["logprobs"] = json!([]);
                events.push(event);
            }
            let mut done = part_event("response.output_text.done", "text", json!(text));
            done["logprobs"] = json!([]);
            events.push(done);
            events.push(part_event("response.content_part.done", "part", part(text)));
            events.push(json!({
                "type": "response.output_item.done",
                "output_index": 0,
                "item": responses_message_item(m, Some(text))
            }));
        }
        Content::Tools(calls) => {
            for (i, call) in calls.iter().enumerate() {
                let id = item_id("fc_", &call.id, "call_");
                let arguments = call.arguments.to_string();
                events.push(json!({
                    "type": "response.output_item.added",
                    "output_index": i,
                    "item": responses_call_item(call, false)
                }));
                for delta in pieces(&arguments, 5) {
                    events.push(json!({
                        "type": "response.function_call_arguments.delta",
                        "item_id": id,
                        "output_index": i,
                        "delta": delta
                    }));
                }
                events.push(json!({
                    "type": "response.function_call_arguments.done",
                    "item_id": id,
                    "output_index": i,
                    "name": call.name,
                    "arguments": arguments
                }));
                events.push(json!({
                    "type": "response.output_item.done",
                    "output_index": i,
                    "item": responses_call_item(call, true)
                }));
            }
        }
    }
    events.push(json!({
        "type": "response.completed",
        "response": responses_object(m, request, true)
    }));
    events
        .into_iter()
        .enumerate()
        .map(|(n, mut event)| {
            let kind = event
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            event["sequence_number"] = json!(n);
            sse(Some(&kind), &event)
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Anthropic
// ---------------------------------------------------------------------------

fn anthropic_usage(input: u64, output: u64) -> Value {
    json!({
        "input_tokens": input,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output,
        "service_tier": "standard"
    })
}

pub(crate) fn anthropic_message(m: &Message) -> Value {
    let (content, stop) = match &m.content {
        Content::Text(text) => (json!([{"type": "text", "text": text}]), "end_turn"),
        Content::Tools(calls) => (
            Value::Array(
                calls
                    .iter()
                    .map(|c| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}))
                    .collect(),
            ),
            "tool_use",
        ),
    };
    json!({
        "id": m.id,
        "type": "message",
        "role": "assistant",
        "model": m.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": anthropic_usage(m.usage.0, m.usage.1)
    })
}

/// The SSE events of a streamed message, `message_stop` last.
pub(crate) fn anthropic_stream(m: &Message) -> Vec<String> {
    let usage = m.usage;
    let mut events = vec![sse(
        Some("message_start"),
        &json!({
            "type": "message_start",
            "message": {
                "id": m.id,
                "type": "message",
                "role": "assistant",
                "model": m.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": anthropic_usage(usage.0, 1)
            }
        }),
    )];
    let stop = match &m.content {
        Content::Text(text) => {
            events.push(sse(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ));
            events.push(sse(Some("ping"), &json!({"type": "ping"})));
            for piece in pieces(text, 4) {
                events.push(sse(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}),
                ));
            }
            events.push(sse(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": 0}),
            ));
            "end_turn"
        }
        Content::Tools(calls) => {
            for (i, call) in calls.iter().enumerate() {
                events.push(sse(
                    Some("content_block_start"),
                    &json!({"type": "content_block_start", "index": i, "content_block": {
                        "type": "tool_use", "id": call.id, "name": call.name, "input": {}
                    }}),
                ));
                if i == 0 {
                    events.push(sse(Some("ping"), &json!({"type": "ping"})));
                }
                let mut fragments = vec![String::new()];
                fragments.extend(pieces(&call.arguments.to_string(), 5));
                for fragment in fragments {
                    events.push(sse(
                        Some("content_block_delta"),
                        &json!({"type": "content_block_delta", "index": i, "delta": {
                            "type": "input_json_delta", "partial_json": fragment
                        }}),
                    ));
                }
                events.push(sse(
                    Some("content_block_stop"),
                    &json!({"type": "content_block_stop", "index": i}),
                ));
            }
            "tool_use"
        }
    };
    events.push(sse(
        Some("message_delta"),
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": usage.1}
        }),
    ));
    events.push(sse(Some("message_stop"), &json!({"type": "message_stop"})));
    events
}

pub(crate) fn anthropic_error(status: u16) -> Value {
    let (kind, message) = match status {
        400 => ("invalid_request_error", "Invalid request."),
        401 => ("authentication_error", "invalid x-api-key"),
        403 => (
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        404 => ("not_found_error", "Not found."),
        429 => (
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit (https://docs.claude.com/en/api/rate-limits); see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.",
        ),
        529 => ("overloaded_error", "Overloaded"),
        _ => ("api_error", "Internal server error"),
    };
    anthropic_error_message(kind, message)
}

pub(crate) fn anthropic_error_message(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_fake"})
}

/// OpenAI chat-completions shapes.
pub mod openai {
    use serde_json::Value;

    use super::Message;

    /// A `chat.completion` response body.
    pub fn chat_completion(message: &Message) -> Value {
        super::openai_completion(message)
    }

    /// The SSE events of a streamed chat completion, `data: [DONE]` last;
    /// with `include_usage`, the usage chunk of `stream_options.include_usage`.
    pub fn chat_completion_stream(message: &Message, include_usage: bool) -> Vec<String> {
        super::openai_stream(message, include_usage)
    }

    /// The API's error body for `status` (401, 404, 429, 500, ...).
    pub fn error(status: u16) -> Value {
        super::openai_error(status)
    }

    /// An `invalid_request_error` body with this message and code.
    pub fn error_message(message: &str, code: &str) -> Value {
        super::openai_error_message(message, code)
    }
}

/// OpenAI Responses API shapes (`POST /v1/responses`); its errors are
/// OpenAI's ([`openai::error`]).
pub mod responses {
    use serde_json::Value;

    use super::Message;

    /// A `response` object answering the `request` body (whose
    /// `instructions` it echoes): a text answer is one `message` output
    /// item, tool calls are `function_call` items.
    pub fn response(message: &Message, request: &Value) -> Value {
        super::responses_response(message, request)
    }

    /// The SSE events of a streamed response (`event:` and `data:` lines,
    /// `sequence_number` from 0), `response.completed` last, holding the
    /// [`response`] object.
    pub fn response_stream(message: &Message, request: &Value) -> Vec<String> {
        super::responses_stream(message, request)
    }
}

/// Anthropic Messages shapes.
pub mod anthropic {
    use serde_json::Value;

    use super::Message;

    /// A `message` response body.
    pub fn message(message: &Message) -> Value {
        super::anthropic_message(message)
    }

    /// The SSE events of a streamed message, `message_stop` last.
    pub fn message_stream(message: &Message) -> Vec<String> {
        super::anthropic_stream(message)
    }

    /// The API's error body for `status` (401, 404, 429, 529, ...).
    pub fn error(status: u16) -> Value {
        super::anthropic_error(status)
    }

    /// An error body of this `type` (e.g. `invalid_request_error`) and message.
    pub fn error_message(kind: &str, message: &str) -> Value {
        super::anthropic_error_message(kind, message)
    }
}
