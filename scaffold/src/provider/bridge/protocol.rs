//! What a bridged call says, read from its request and its answer: the
//! conversation it sent (with the tool results in it) and the answer's
//! text, tool calls, usage and stop reason, for the three APIs the bridge
//! understands. Chat completions and Messages answers are read by the
//! providers' own code; the Responses API is read here.

use bytes::Bytes;
use serde_json::Value;

use std::sync::Arc;

use crate::provider::anthropic::Anthropic;
use crate::provider::http::{RetryPolicy, SseParser};
use crate::provider::openai::OpenAi;
use crate::provider::transport::Canned;
use crate::provider::{
    CallContext, CompletionRequest, CompletionResponse, ContentPart, Message, Provider,
    ProviderOptions, Role, StopReason, ToolCall, Usage,
};

/// The API a call was made to, known by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    /// OpenAI chat completions (`/v1/chat/completions`).
    Chat,
    /// The OpenAI Responses API (`/v1/responses`).
    Responses,
    /// Anthropic Messages (`/v1/messages`).
    Messages,
    /// Any other path: passed on and recorded, read for nothing.
    Other,
}

impl Api {
    /// The API of a call to `path` under the OpenAI (`anthropic` false) or
    /// Anthropic base URL.
    pub(crate) fn of(anthropic: bool, path: &str) -> Api {
        let path = path.trim_end_matches('/');
        let path = match path.strip_prefix("/v1") {
            Some(rest) if rest.starts_with('/') => rest,
            _ => path,
        };
        match (anthropic, path) {
            (false, "/chat/completions") => Api::Chat,
            (false, "/responses") => Api::Responses,
            (true, "/messages") => Api::Messages,
            _ => Api::Other,
        }
    }
}

/// The provider name of a call to the Anthropic (`anthropic`) or the
/// OpenAI-compatible base URL, in signals and rate limits.
pub(crate) fn provider_name(anthropic: bool) -> &'static str {
    if anthropic { "anthropic" } else { "openai" }
}

/// The conversation a request sent, in the providers' common model.
pub(crate) fn asked(api: Api, body: Option<&Value>) -> CompletionRequest {
    let Some(body) = body else {
        return CompletionRequest::default();
    };
    let (system, messages) = match api {
        Api::Chat => chat_messages(body),
        Api::Responses => responses_messages(body),
        Api::Messages => messages_messages(body),
        Api::Other => (None, Vec::new()),
    };
    CompletionRequest {
        system,
        messages,
        ..CompletionRequest::default()
    }
}

/// The model a request asked for.
pub(crate) fn model_of(body: Option<&Value>) -> Option<String> {
    body?.get("model")?.as_str().map(str::to_string)
}

/// Whether a request asks for a streamed answer.
pub(crate) fn streams(body: Option<&Value>) -> bool {
    body.and_then(|b| b.get("stream"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The answer of a successful call; `None` for [`Api::Other`].
pub(crate) async fn answered(
    api: Api,
    model: &str,
    body: Bytes,
    streamed: bool,
) -> Option<Result<CompletionResponse, String>> {
    let read = match api {
        Api::Chat => {
            let reader = OpenAi::new(model).transport(Arc::new(Canned::new(body, streamed)));
            read_as(&reader.retry(RetryPolicy::none()), streamed).await
        }
        Api::Messages => {
            let reader = Anthropic::new(model).transport(Arc::new(Canned::new(body, streamed)));
            read_as(&reader.retry(RetryPolicy::none()), streamed).await
        }
        Api::Responses => responses_answer(model, &body, streamed),
        Api::Other => return None,
    };
    Some(read)
}

/// The answer `provider` reads from its transport (one that hands over a
/// body that reached the process another way): the provider's own
/// reading of whole and streamed answers. Offline, so no rate limit is
/// asked.
async fn read_as(provider: &dyn Provider, streamed: bool) -> Result<CompletionResponse, String> {
    let request = CompletionRequest {
        options: ProviderOptions {
            stream: streamed,
            ..ProviderOptions::default()
        },
        context: CallContext::offline(),
        ..CompletionRequest::default()
    };
    provider
        .complete(&request, &mut ())
        .await
        .map_err(|e| e.to_string())
}

/// Text of a content value: a string, or the `text` of its parts (other
/// parts named by their type, as `[image]`).
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|part| match part.get("text").and_then(Value::as_str) {
                Some(text) => text.to_string(),
                None => match part.get("type").and_then(Value::as_str) {
                    Some(kind) => format!("[{kind}]"),
                    None => String::new(),
                },
            })
            .collect(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Tool arguments sent as a JSON string, parsed (kept as the string when
/// they are not JSON).
fn arguments(value: Option<&Value>) -> Value {
    match value {
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(other) => other.clone(),
        None => Value::Object(Default::default()),
    }
}

/// The items of the array at `key`, none when there is no such array.
fn array<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn str_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Add `part` to the conversation, joining a run of one speaker's parts.
fn push(messages: &mut Vec<Message>, role: Role, part: ContentPart) {
    match messages.last_mut() {
        Some(last) if last.role == role && !matches!(part, ContentPart::Text { .. }) => {
            last.content.push(part)
        }
        _ => messages.push(Message {
            role,
            content: vec![part],
        }),
    }
}

fn join_system(system: &mut Option<String>, text: String) {
    match system {
        Some(s) => {
            s.push('\n');
            s.push_str(&text);
        }
        None => *system = Some(text),
    }
}

fn chat_messages(body: &Value) -> (Option<String>, Vec<Message>) {
    let mut system = None;
    let mut messages = Vec::new();
    for message in array(body, "messages") {
        let content = message.get("content").unwrap_or(&Value::Null);
        match message
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "system" | "developer" => join_system(&mut system, text_of(content)),
            "assistant" => {
                let text = text_of(content);
                let mut parts = Vec::new();
                if !text.is_empty() {
                    parts.push(ContentPart::Text { text });
                }
                for call in array(message, "tool_calls") {
                    let function = call.get("function").unwrap_or(&Value::Null);
                    parts.push(ContentPart::ToolCall(ToolCall {
                        id: str_field(call, "id"),
                        name: str_field(function, "name"),
                        arguments: arguments(function.get("arguments")),
                    }));
                }
                messages.push(Message {
                    role: Role::Assistant,
                    content: parts,
                });
            }
            "tool" => push(
                &mut messages,
                Role::User,
                ContentPart::ToolResult {
                    call_id: str_field(message, "tool_call_id"),
                    content: text_of(content),
                    is_error: false,
                },
            ),
            _ => messages.push(Message::user(text_of(content))),
        }
    }
    (system, messages)
}

fn responses_messages(body: &Value) -> (Option<String>, Vec<Message>) {
    let mut system = body
        .get("instructions")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut messages = Vec::new();
    let items = match body.get("input") {
        Some(Value::String(text)) => return (system, vec![Message::user(text.clone())]),
        Some(Value::Array(items)) => items.as_slice(),
        _ => &[],
    };
    for item in items {
        let content = item.get("content").unwrap_or(&Value::Null);
        match item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message")
        {
            "message" => match item.get("role").and_then(Value::as_str).unwrap_or("user") {
                "system" | "developer" => join_system(&mut system, text_of(content)),
                "assistant" => messages.push(Message::assistant(text_of(content))),
                _ => messages.push(Message::user(text_of(content))),
            },
            "function_call" => push(
                &mut messages,
                Role::Assistant,
                ContentPart::ToolCall(ToolCall {
                    id: str_field(item, "call_id"),
                    name: str_field(item, "name"),
                    arguments: arguments(item.get("arguments")),
                }),
            ),
            "function_call_output" => push(
                &mut messages,
                Role::User,
                ContentPart::ToolResult {
                    call_id: str_field(item, "call_id"),
                    content: text_of(item.get("output").unwrap_or(&Value::Null)),
                    is_error: false,
                },
            ),
            // Reasoning and other items carry no turn of the conversation.
            _ => {}
        }
    }
    (system, messages)
}

fn messages_messages(body: &Value) -> (Option<String>, Vec<Message>) {
    let system = body.get("system").map(text_of).filter(|s| !s.is_empty());
    let mut messages = Vec::new();
    for message in array(body, "messages") {
        let role = match message.get("role").and_then(Value::as_str) {
            Some("assistant") => Role::Assistant,
            _ => Role::User,
        };
        let blocks = match message.get("content") {
            Some(Value::Array(blocks)) => blocks.as_slice(),
            Some(other) => {
                messages.push(Message {
                    role,
                    content: vec![ContentPart::Text {
                        text: text_of(other),
                    }],
                });
                continue;
            }
            None => &[],
        };
        let mut parts = Vec::new();
        for block in blocks {
            match block
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
            {
                "tool_use" => parts.push(ContentPart::ToolCall(ToolCall {
                    id: str_field(block, "id"),
                    name: str_field(block, "name"),
                    arguments: block.get("input").cloned().unwrap_or(Value::Null),
                })),
                "tool_result" => parts.push(ContentPart::ToolResult {
                    call_id: str_field(block, "tool_use_id"),
                    content: text_of(block.get("content").unwrap_or(&Value::Null)),
                    is_error: block
                        .get("is_error")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                }),
                _ => parts.push(ContentPart::Text {
                    text: text_of(&Value::Array(vec![block.clone()])),
                }),
            }
        }
        messages.push(Message {
            role,
            content: parts,
        });
    }
    (system, messages)
}

/// A Responses API answer: the response object of a whole body, or of
/// the stream's closing `response.completed` (`.incomplete`, `.failed`).
fn responses_answer(
    model: &str,
    body: &[u8],
    streamed: bool,
) -> Result<CompletionResponse, String> {
    let response = if streamed {
        closing_response(body)?
    } else {
        serde_json::from_slice::<Value>(body)
            .map_err(|e| format!("the Responses API answer is not JSON: {e}"))?
    };
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for item in array(&response, "output") {
        match item.get("type").and_then(Value::as_str).unwrap_or_default() {
            "message" => text.push_str(&text_of(item.get("content").unwrap_or(&Value::Null))),
            "function_call" => tool_calls.push(ToolCall {
                id: str_field(item, "call_id"),
                name: str_field(item, "name"),
                arguments: arguments(item.get("arguments")),
            }),
            _ => {}
        }
    }
    let usage = response.get("usage").unwrap_or(&Value::Null);
    let tokens = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let stop_reason = match response.get("status").and_then(Value::as_str) {
        _ if !tool_calls.is_empty() => StopReason::ToolUse,
        Some("incomplete") => StopReason::MaxTokens,
        None | Some("completed") => StopReason::EndTurn,
        Some(_) => StopReason::Other,
    };
    Ok(CompletionResponse {
        model: response
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(model)
            .to_string(),
        text,
        tool_calls,
        usage: Usage {
            input_tokens: tokens("input_tokens"),
            output_tokens: tokens("output_tokens"),
        },
        stop_reason,
    })
}

/// The response object of a Responses API stream's closing event.
fn closing_response(body: &[u8]) -> Result<Value, String> {
    let mut parser = SseParser::new();
    let events = parser.feed(body).map_err(|e| e.to_string())?;
    for event in events.iter().rev() {
        let Ok(value) = serde_json::from_str::<Value>(&event.data) else {
            continue;
        };
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if matches!(
            kind,
            "response.completed" | "response.incomplete" | "response.failed"
        ) && let Some(response) = value.get("response")
        {
            return Ok(response.clone());
        }
    }
    Err(format!(
        "the Responses API stream ended after {} events without response.completed",
        events.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn apis_are_known_by_their_path() {
        assert_eq!(Api::of(false, "/v1/chat/completions"), Api::Chat);
        assert_eq!(Api::of(false, "/chat/completions/"), Api::Chat);
        assert_eq!(Api::of(false, "/v1/responses"), Api::Responses);
        assert_eq!(Api::of(true, "/v1/messages"), Api::Messages);
        assert_eq!(Api::of(true, "/v1/chat/completions"), Api::Other);
        assert_eq!(Api::of(false, "/v1/models"), Api::Other);
    }

    fn tool_results(request: &CompletionRequest) -> Vec<(String, String, bool)> {
        request
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|p| match p {
                ContentPart::ToolResult {
                    call_id,
                    content,
                    is_error,
                } => Some((call_id.clone(), content.clone(), *is_error)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_three_apis_tool_rounds_read_alike() {
        let chat = json!({"model": "m", "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":1}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "2"}]});
        let responses = json!({"model": "m", "instructions": "sys", "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "add", "arguments": "{\"a\":1}"},
            {"type": "function_call_output", "call_id": "c1", "output": "2"}]});
        let messages = json!({"model": "m", "system": [{"type": "text", "text": "sys"}], "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 1}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": "2"}], "is_error": true}]}]});
        for (api, body, error) in [
            (Api::Chat, chat, false),
            (Api::Responses, responses, false),
            (Api::Messages, messages, true),
        ] {
            let request = asked(api, Some(&body));
            assert_eq!(request.system.as_deref(), Some("sys"), "{api:?}");
            assert_eq!(request.messages[0], Message::user("hi"), "{api:?}");
            assert_eq!(
                request.messages[1].content[0],
                ContentPart::ToolCall(ToolCall {
                    id: "c1".into(),
                    name: "add".into(),
                    arguments: json!({"a": 1})
                }),
                "{api:?}"
            );
            assert_eq!(tool_results(&request), [("c1".into(), "2".into(), error)]);
        }
    }

    #[test]
    fn responses_answers_read_whole_or_streamed() {
        let response = json!({"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-x",
            "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi", "annotations": []}]},
                {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "add", "arguments": "{\"a\":1}"}],
            "usage": {"input_tokens": 12, "output_tokens": 7, "total_tokens": 19}});
        let whole = responses_answer("m", response.to_string().as_bytes(), false).unwrap();
        assert_eq!(whole.text, "Hi");
        assert_eq!(whole.model, "gpt-x");
        assert_eq!(whole.tool_calls[0].arguments, json!({"a": 1}));
        assert_eq!(whole.usage.total(), 19);
        assert_eq!(whole.stop_reason, StopReason::ToolUse);
        let stream = format!(
            "event: response.created\ndata: {{\"type\":\"response.created\",\"sequence_number\":0}}\n\n\
             event: response.completed\ndata: {}\n\n",
            json!({"type": "response.completed", "sequence_number": 1, "response": response})
        );
        assert_eq!(
            responses_answer("m", stream.as_bytes(), true).unwrap(),
            whole
        );
        let cut = "data: {\"type\":\"response.created\"}\n\n";
        let e = responses_answer("m", cut.as_bytes(), true).unwrap_err();
        assert!(e.contains("without response.completed"), "{e}");
    }
}
