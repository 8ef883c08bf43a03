//! The OpenAI and Anthropic providers against the fake provider server
//! (real TCP, real reqwest) and against recorded-shape payload fixtures.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use serde_json::{Value, json};

use scaffold::provider::anthropic::{Anthropic, StructuredOutput};
use scaffold::provider::http::{ReqwestTransport, RetryPolicy};
use scaffold::provider::openai::{MaxTokensField, OpenAi};
use scaffold::provider::transport::{
    HttpBody, HttpRequest, HttpResponse, Transport, TransportError,
};
use scaffold::provider::{
    CallContext, CompletionRequest, CompletionResponse, ContentPart, Message, OutputSchema,
    Provider, ProviderError, ProviderOptions, Role, StopReason, StreamSink, ToolCall, ToolSpec,
};
use scaffold::testing::{FakeProviderServer, FakeReply, FakeToolCall, Fault};

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

#[derive(Default)]
struct Deltas(Vec<String>);

impl StreamSink for Deltas {
    fn text_delta(&mut self, delta: &str) {
        self.0.push(delta.to_string());
    }
}

impl Deltas {
    fn joined(&self) -> String {
        self.0.concat()
    }
}

fn ask(text: &str) -> CompletionRequest {
    CompletionRequest {
        system: Some("You are terse.".into()),
        messages: vec![Message::user(text)],
        ..CompletionRequest::default()
    }
}

fn streamed(mut request: CompletionRequest) -> CompletionRequest {
    request.options.stream = true;
    request
}

fn fast_retry(attempts: u32) -> RetryPolicy {
    RetryPolicy::new(attempts)
        .base_delay(Duration::from_millis(5))
        .max_delay(Duration::from_millis(20))
        .jitter(0.0)
}

fn openai(server: &FakeProviderServer) -> OpenAi {
    OpenAi::new("gpt-4o-mini")
        .base_url(server.openai_base_url())
        .api_key("sk-test")
        .retry(fast_retry(3))
        .timeout(Duration::from_secs(5))
}

fn anthropic(server: &FakeProviderServer) -> Anthropic {
    Anthropic::new("claude-sonnet-4-5")
        .base_url(server.anthropic_base_url())
        .api_key("sk-ant-test")
        .retry(fast_retry(3))
        .timeout(Duration::from_secs(5))
}

async fn server() -> FakeProviderServer {
    FakeProviderServer::start()
        .await
        .expect("fake server starts")
}

async fn server_with(faults: Vec<Fault>) -> FakeProviderServer {
    FakeProviderServer::builder()
        .fault_plan(faults)
        .start()
        .await
        .expect("fake server starts")
}

async fn call(
    provider: &dyn Provider,
    request: &CompletionRequest,
) -> (Result<CompletionResponse, ProviderError>, Deltas) {
    let mut sink = Deltas::default();
    let result = provider.complete(request, &mut sink).await;
    (result, sink)
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Get the current weather in a given location".into(),
        parameters: json!({
            "type": "object",
            "properties": {"location": {"type": "string", "description": "City and country"}},
            "required": ["location"],
            "additionalProperties": false
        }),
    }
}

fn report_schema() -> OutputSchema {
    OutputSchema {
        name: "weather report".into(),
        schema: json!({
            "type": "object",
            "properties": {"summary": {"type": "string"}, "celsius": {"type": "number"}},
            "required": ["summary", "celsius"],
            "additionalProperties": false
        }),
    }
}

/// A conversation with a tool round trip, tools, a schema and options.
fn conversation(call_id: &str) -> CompletionRequest {
    CompletionRequest {
        system: Some("You are a weather assistant.".into()),
        messages: vec![
            Message::user("What's the weather in Paris?"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentPart::Text {
                        text: "Let me check.".into(),
                    },
                    ContentPart::ToolCall(ToolCall {
                        id: call_id.into(),
                        name: "get_weather".into(),
                        arguments: json!({"location": "Paris, France"}),
                    }),
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    ContentPart::ToolResult {
                        call_id: call_id.into(),
                        content: "{\"temperature\":18}".into(),
                        is_error: false,
                    },
                    ContentPart::Text {
                        text: "Answer in one line.".into(),
                    },
                ],
            },
        ],
        tools: vec![weather_tool()],
        output_schema: Some(report_schema()),
        options: ProviderOptions {
            temperature: Some(0.2),
            max_tokens: Some(256),
            stream: true,
        },
        context: CallContext::default(),
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests",
        "fixtures",
        "providers",
        name,
    ]
    .iter()
    .collect();
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn fixture_json(name: &str) -> Value {
    serde_json::from_slice(&fixture(name)).expect("fixture is JSON")
}

/// A transport that answers from canned responses, streaming SSE bodies in
/// chunks of `chunk` bytes, and keeps the requests it was sent.
struct FixtureTransport {
    responses: Mutex<VecDeque<(u16, &'static str, Vec<u8>)>>,
    chunk: usize,
    sent: Mutex<Vec<HttpRequest>>,
}

impl FixtureTransport {
    fn new(responses: Vec<(u16, &'static str, Vec<u8>)>, chunk: usize) -> Arc<Self> {
        Arc::new(FixtureTransport {
            responses: Mutex::new(responses.into()),
            chunk,
            sent: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl Transport for FixtureTransport {
    async fn send(
        &self,
        request: HttpRequest,
        _context: &CallContext,
    ) -> Result<HttpResponse, TransportError> {
        self.sent.lock().unwrap().push(request);
        let Some((status, content_type, body)) = self.responses.lock().unwrap().pop_front() else {
            return Err(TransportError::Other("no more canned responses".into()));
        };
        let headers = vec![("content-type".to_string(), content_type.to_string())];
        let body = if content_type.starts_with("text/event-stream") {
            let chunks: Vec<Result<Bytes, TransportError>> = body
                .chunks(self.chunk)
                .map(|c| Ok(Bytes::copy_from_slice(c)))
                .collect();
            HttpBody::Stream(Box::pin(futures_util::stream::iter(chunks)))
        } else {
            HttpBody::Full(Bytes::from(body))
        };
        Ok(HttpResponse {
            status,
            headers,
            body,
        })
    }
}

const SSE: &str = "text/event-stream; charset=utf-8";
const JSON: &str = "application/json";

// ---------------------------------------------------------------------------
// OpenAI against the fake server
// ---------------------------------------------------------------------------

#[tokio::test]
async fn openai_text_non_streaming() {
    let server = server().await;
    let (result, sink) = call(&openai(&server), &ask("hello there")).await;
    let response = result.expect("answer");
    assert_eq!(response.text, "Echo: hello there");
    assert_eq!(response.model, "gpt-4o-mini");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert!(response.usage.input_tokens > 0 && response.usage.output_tokens > 0);
    assert_eq!(sink.joined(), "Echo: hello there");

    let sent = server.last_request().expect("a request");
    assert_eq!(sent.method, "POST");
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.header("content-type"), Some("application/json"));
    assert_eq!(
        sent.json(),
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "hello there"}
            ]
        })
    );
}

#[tokio::test]
async fn openai_text_streaming_with_usage() {
    let server = FakeProviderServer::builder()
        .write_chunk_size(7)
        .start()
        .await
        .unwrap();
    let (result, sink) = call(
        &openai(&server),
        &streamed(ask("stream me, s'il vous plaît")),
    )
    .await;
    let response = result.expect("answer");
    assert_eq!(response.text, "Echo: stream me, s'il vous plaît");
    assert!(sink.0.len() > 3, "text arrives in pieces: {:?}", sink.0);
    assert_eq!(sink.joined(), response.text);
    assert!(response.usage.input_tokens > 0 && response.usage.output_tokens > 0);
    assert_eq!(response.stop_reason, StopReason::EndTurn);

    let body = server.last_request().unwrap().json();
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn openai_tool_calls_streamed_in_fragments() {
    let args = json!({"location": "Paris, France", "unit": "celsius", "days": [1, 2, 3]});
    let server = FakeProviderServer::builder()
        .replies(vec![FakeReply::ToolCalls(vec![
            FakeToolCall {
                name: "get_weather".into(),
                arguments: args.clone(),
            },
            FakeToolCall {
                name: "get_time".into(),
                arguments: json!({}),
            },
        ])])
        .start()
        .await
        .unwrap();
    let mut request = streamed(ask("weather?"));
    request.tools = vec![weather_tool()];
    let (result, _) = call(&openai(&server), &request).await;
    let response = result.expect("answer");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.text, "");
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(response.tool_calls[0].name, "get_weather");
    assert_eq!(response.tool_calls[0].arguments, args);
    assert!(response.tool_calls[0].id.starts_with("call_"));
    assert_eq!(response.tool_calls[1].name, "get_time");
    assert_eq!(response.tool_calls[1].arguments, json!({}));

    let body = server.last_request().unwrap().json();
    assert_eq!(
        body["tools"],
        json!([{
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get the current weather in a given location",
                "parameters": weather_tool().parameters
            }
        }])
    );
}

#[tokio::test]
async fn openai_tool_calls_non_streaming() {
    let server = FakeProviderServer::builder()
        .replies(vec![FakeReply::tool_call(
            "get_weather",
            json!({"location": "Oslo"}),
        )])
        .start()
        .await
        .unwrap();
    let (result, _) = call(&openai(&server), &ask("weather?")).await;
    let response = result.expect("answer");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.tool_calls[0].arguments,
        json!({"location": "Oslo"})
    );
}

#[tokio::test]
async fn openai_request_shape_matches_the_reference() {
    let provider = OpenAi::new("gpt-4o-mini").api_key("sk-test");
    let body = provider.request_body(&conversation("call_Dn2RJJSxzDm49vlVTehseJ0k"));
    assert_eq!(body, fixture_json("openai_request_conversation.json"));

    let legacy = provider
        .clone()
        .max_tokens_field(MaxTokensField::MaxTokens)
        .strict_schema(false)
        .request_body(&conversation("call_1"));
    assert_eq!(legacy["max_tokens"], json!(256));
    assert!(legacy.get("max_completion_tokens").is_none());
    assert_eq!(
        legacy["response_format"]["json_schema"]["strict"],
        json!(false)
    );
}

#[tokio::test]
async fn openai_structured_output() {
    let server = server().await;
    let mut request = ask("report");
    request.output_schema = Some(report_schema());
    let (result, _) = call(&openai(&server), &request).await;
    let response = result.expect("answer");
    let parsed: Value = serde_json::from_str(&response.text).expect("JSON answer");
    assert_eq!(parsed, json!({"summary": "Echo: report", "celsius": 0.0}));

    let body = server.last_request().unwrap().json();
    assert_eq!(
        body["response_format"],
        json!({
            "type": "json_schema",
            "json_schema": {"name": "weather_report", "schema": report_schema().schema, "strict": true}
        })
    );
}

#[tokio::test]
async fn openai_embeddings() {
    let server = server().await;
    let provider = OpenAi::new("text-embedding-3-small")
        .base_url(server.openai_base_url())
        .api_key("sk-test");
    let vectors = provider
        .embeddings(&[
            "the cat sat on the mat",
            "the cat sat on a mat",
            "quarterly tax filing",
        ])
        .await
        .expect("embeddings");
    assert_eq!(vectors.len(), 3);
    assert!(vectors.iter().all(|v| v.len() == 64));
    let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert!(cos(&vectors[0], &vectors[1]) > cos(&vectors[0], &vectors[2]));

    let sent = server.last_request().unwrap();
    assert_eq!(sent.path, "/v1/embeddings");
    assert_eq!(
        sent.json(),
        json!({
            "model": "text-embedding-3-small",
            "input": ["the cat sat on the mat", "the cat sat on a mat", "quarterly tax filing"],
            "encoding_format": "float"
        })
    );
    assert_eq!(
        provider.embeddings::<&str>(&[]).await.unwrap(),
        Vec::<Vec<f32>>::new()
    );
}

// ---------------------------------------------------------------------------
// Faults
// ---------------------------------------------------------------------------

#[tokio::test]
async fn rate_limited_with_retry_after_is_retried() {
    let server = server_with(vec![Fault::RateLimited {
        retry_after: Some(Duration::from_millis(60)),
    }])
    .await;
    let started = Instant::now();
    let (result, _) = call(&openai(&server), &ask("hi")).await;
    assert_eq!(result.expect("answer after a retry").text, "Echo: hi");
    assert_eq!(server.request_count(), 2);
    assert!(
        started.elapsed() >= Duration::from_millis(60),
        "waited for Retry-After"
    );
}

#[tokio::test]
async fn rate_limited_forever_gives_up_after_max_attempts() {
    let limited = Fault::RateLimited {
        retry_after: Some(Duration::from_millis(5)),
    };
    let server = server_with(vec![limited; 10]).await;
    let (result, _) = call(&openai(&server), &ask("hi")).await;
    match result {
        Err(ProviderError::RateLimited {
            attempts, message, ..
        }) => {
            assert_eq!(attempts, 3);
            assert!(message.contains("rate_limit_exceeded"), "{message}");
            assert!(message.contains("req_fake"), "request id in {message}");
        }
        other => panic!("expected RateLimited, got {other:?}"),
    }
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn a_retry_that_would_pass_the_call_timeout_is_not_attempted() {
    let server = server_with(vec![Fault::RateLimited {
        retry_after: Some(Duration::from_secs(5)),
    }])
    .await;
    let started = Instant::now();
    let provider = openai(&server).timeout(Duration::from_millis(500));
    let (result, _) = call(&provider, &ask("hi")).await;
    assert!(started.elapsed() < Duration::from_millis(400));
    match result {
        Err(ProviderError::RateLimited {
            attempts: 1,
            message,
            ..
        }) => {
            assert!(message.contains("call timeout"), "{message}")
        }
        other => panic!("expected RateLimited, got {other:?}"),
    }
}

#[tokio::test]
async fn server_error_then_success() {
    let server = server_with(vec![Fault::ServerError, Fault::ServerError]).await;
    let (result, _) = call(&openai(&server), &ask("hi")).await;
    assert_eq!(result.expect("third attempt answers").text, "Echo: hi");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn retry_after_seconds_and_should_retry_header() {
    let unavailable = Fault::Status {
        status: 503,
        headers: vec![("retry-after".into(), "0".into())],
        body: fixture_json("openai_error_401.json").to_string(),
    };
    let server = server_with(vec![unavailable]).await;
    let (result, _) = call(&openai(&server), &ask("hi")).await;
    assert!(result.is_ok());
    assert_eq!(server.request_count(), 2);

    let no_retry = Fault::Status {
        status: 500,
        headers: vec![("x-should-retry".into(), "false".into())],
        body: "{}".into(),
    };
    let server = server_with(vec![no_retry]).await;
    let (result, _) = call(&openai(&server), &ask("hi")).await;
    assert!(matches!(
        result,
        Err(ProviderError::Http { status: 500, .. })
    ));
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn server_error_forever_is_an_http_error() {
    let server = server_with(vec![Fault::ServerError; 5]).await;
    let (result, _) = call(&openai(&server).retry(fast_retry(2)), &ask("hi")).await;
    match result {
        Err(ProviderError::Http {
            status, message, ..
        }) => {
            assert_eq!(status, 500);
            assert!(message.contains("server_error"), "{message}");
            assert!(message.contains("after 2 attempts"), "{message}");
        }
        other => panic!("expected Http, got {other:?}"),
    }
}

#[tokio::test]
async fn no_answer_times_out_within_the_bound() {
    let server = server_with(vec![Fault::Hang]).await;
    let provider = openai(&server).timeout(Duration::from_millis(300));
    let started = Instant::now();
    let (result, _) = call(&provider, &ask("hi")).await;
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(300) && elapsed < Duration::from_secs(2),
        "{elapsed:?}"
    );
    match result {
        Err(ProviderError::Timeout {
            phase, after_ms, ..
        }) => {
            assert_eq!(phase, "total");
            assert!(after_ms >= 300);
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn connection_reset_is_retried() {
    let server = server_with(vec![Fault::Reset]).await;
    let (result, _) = call(&openai(&server), &ask("hi")).await;
    assert_eq!(result.expect("answer after a retry").text, "Echo: hi");
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn connection_reset_forever_is_a_connection_error() {
    let server = server_with(vec![Fault::Reset; 5]).await;
    let (result, _) = call(&openai(&server), &ask("hi")).await;
    match result {
        Err(ProviderError::Connection { message, .. }) => {
            assert!(message.contains("after 3 attempts"), "{message}");
        }
        other => panic!("expected Connection, got {other:?}"),
    }
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn refused_connection_is_a_connection_error() {
    let addr = {
        let server = server().await;
        server.url()
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    let provider = OpenAi::new("gpt-4o-mini")
        .base_url(format!("{addr}/v1"))
        .retry(fast_retry(2));
    let (result, _) = call(&provider, &ask("hi")).await;
    assert!(
        matches!(result, Err(ProviderError::Connection { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn malformed_json_is_a_protocol_error() {
    let server = server_with(vec![Fault::MalformedJson]).await;
    let (result, _) = call(&openai(&server), &ask("hi")).await;
    match result {
        Err(ProviderError::Protocol { message, .. }) => {
            assert!(message.contains("malformed JSON"), "{message}");
            assert!(
                message.contains("chatcmpl-fake"),
                "shows the body: {message}"
            );
        }
        other => panic!("expected Protocol, got {other:?}"),
    }
    assert_eq!(server.request_count(), 1, "not retried");

    let server = server_with(vec![Fault::MalformedJson]).await;
    let (result, _) = call(&openai(&server), &streamed(ask("hi"))).await;
    match result {
        Err(ProviderError::Protocol { message, .. }) => {
            assert!(
                message.contains("malformed JSON in stream event"),
                "{message}"
            )
        }
        other => panic!("expected Protocol, got {other:?}"),
    }
}

fn provider_for(name: &str, server: &FakeProviderServer) -> Box<dyn Provider> {
    match name {
        "openai" => Box::new(openai(server)),
        _ => Box::new(anthropic(server)),
    }
}

#[tokio::test]
async fn truncated_stream_is_a_protocol_error_not_a_hang() {
    for name in ["openai", "anthropic"] {
        let server = server_with(vec![Fault::TruncatedStream { after_events: 3 }]).await;
        let provider = provider_for(name, &server);
        let started = Instant::now();
        let (result, _) = call(provider.as_ref(), &streamed(ask("a fairly long prompt"))).await;
        assert!(started.elapsed() < Duration::from_secs(2));
        match result {
            Err(ProviderError::Protocol { message, .. }) => {
                assert!(message.contains("truncated"), "{name}: {message}")
            }
            other => panic!("{name}: expected Protocol, got {other:?}"),
        }
        assert_eq!(server.request_count(), 1, "{name}: streams are not retried");
    }
}

#[tokio::test]
async fn stalled_stream_hits_the_idle_timeout() {
    for name in ["openai", "anthropic"] {
        let server = server_with(vec![Fault::StalledStream { after_events: 2 }]).await;
        let provider: Box<dyn Provider> = match name {
            "openai" => Box::new(openai(&server).idle_timeout(Duration::from_millis(200))),
            _ => Box::new(anthropic(&server).idle_timeout(Duration::from_millis(200))),
        };
        let started = Instant::now();
        let (result, _) = call(provider.as_ref(), &streamed(ask("hi"))).await;
        assert!(started.elapsed() < Duration::from_secs(2));
        match result {
            Err(ProviderError::Timeout {
                phase, after_ms, ..
            }) => {
                assert_eq!(phase, "stream idle", "{name}");
                assert_eq!(after_ms, 200);
            }
            other => panic!("{name}: expected Timeout, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn slow_but_alive_streams_are_not_idle() {
    let server = FakeProviderServer::builder()
        .chunk_delay(Duration::from_millis(15))
        .start()
        .await
        .unwrap();
    let provider = openai(&server).idle_timeout(Duration::from_millis(150));
    let (result, sink) = call(&provider, &streamed(ask("a b c d e f g h"))).await;
    assert_eq!(result.expect("answer").text, "Echo: a b c d e f g h");
    assert!(sink.0.len() > 3);
}

#[tokio::test]
async fn wrong_content_type_is_a_protocol_error() {
    for stream in [false, true] {
        let server = server_with(vec![Fault::WrongContentType]).await;
        let mut request = ask("hi");
        request.options.stream = stream;
        let (result, _) = call(&openai(&server), &request).await;
        match result {
            Err(ProviderError::Protocol { message, .. }) => {
                assert!(message.contains("text/html"), "{message}");
                assert!(message.contains("Please sign in"), "{message}");
            }
            other => panic!("expected Protocol, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn wrong_api_key_is_an_http_error_and_not_retried() {
    let server = FakeProviderServer::builder()
        .require_api_key("sk-right")
        .start()
        .await
        .unwrap();
    let (result, _) = call(&openai(&server).api_key("sk-wrong"), &ask("hi")).await;
    match result {
        Err(ProviderError::Http {
            status, message, ..
        }) => {
            assert_eq!(status, 401);
            assert!(message.contains("invalid_api_key"), "{message}");
        }
        other => panic!("expected Http 401, got {other:?}"),
    }
    assert_eq!(server.request_count(), 1);
    let (result, _) = call(&openai(&server).api_key("sk-right"), &ask("hi")).await;
    assert!(result.is_ok());

    let (result, _) = call(&anthropic(&server).api_key("sk-wrong"), &ask("hi")).await;
    assert!(
        matches!(&result, Err(ProviderError::Http { status: 401, message, .. }) if message.contains("authentication_error")),
        "{result:?}"
    );
}

#[tokio::test]
async fn api_keys_come_from_the_environment_unless_given() {
    let server = server().await;
    // SAFETY: these variables are read only when a provider is built; every
    // other test in this binary passes explicit keys.
    unsafe {
        std::env::set_var("OPENAI_API_KEY", "sk-from-env");
        std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-from-env");
    }
    let env_openai = OpenAi::new("gpt-4o-mini").base_url(server.openai_base_url());
    let env_anthropic = Anthropic::new("claude-sonnet-4-5").base_url(server.anthropic_base_url());
    let explicit_openai = env_openai.clone().api_key("sk-explicit");
    let explicit_anthropic = env_anthropic.clone().api_key("sk-ant-explicit");
    let keyless = env_openai.clone().without_api_key();

    call(&env_openai, &ask("1")).await.0.unwrap();
    assert_eq!(
        server.last_request().unwrap().header("authorization"),
        Some("Bearer sk-from-env")
    );
    call(&explicit_openai, &ask("2")).await.0.unwrap();
    assert_eq!(
        server.last_request().unwrap().header("authorization"),
        Some("Bearer sk-explicit")
    );
    call(&keyless, &ask("3")).await.0.unwrap();
    assert_eq!(server.last_request().unwrap().header("authorization"), None);

    call(&env_anthropic, &ask("4")).await.0.unwrap();
    let sent = server.last_request().unwrap();
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-from-env"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    call(&explicit_anthropic, &ask("5")).await.0.unwrap();
    assert_eq!(
        server.last_request().unwrap().header("x-api-key"),
        Some("sk-ant-explicit")
    );
    // Debug output never shows keys.
    assert!(!format!("{explicit_openai:?} {explicit_anthropic:?}").contains("explicit"));
}

#[tokio::test]
async fn every_answer_waits_the_whole_latency() {
    // The server's wait ends on a blocking thread's sleep after tokio's
    // timer: never before the latency is over, whatever the split.
    for latency in [1, 2, 3, 30].map(Duration::from_millis) {
        let server = FakeProviderServer::builder()
            .latency(latency)
            .start()
            .await
            .unwrap();
        let provider = openai(&server);
        for i in 0..3 {
            let started = Instant::now();
            call(&provider, &ask(&format!("call {i}"))).await.0.unwrap();
            let took = started.elapsed();
            assert!(
                took >= latency,
                "answered after {took:?}, latency {latency:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_server_dropped_during_its_latency_closes_the_connection_unanswered() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = FakeProviderServer::builder()
        .latency(Duration::from_secs(30))
        .start()
        .await
        .unwrap();
    let mut socket = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let body = r#"{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}"#;
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: fake\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    while server.request_count() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(server);
    // The wait ends with the server, not 30 s later, and nothing is answered.
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), socket.read_to_end(&mut answer))
        .await
        .expect("the connection is closed when the server is dropped")
        .unwrap();
    assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
}

#[tokio::test]
async fn concurrent_calls_run_in_parallel() {
    let server = FakeProviderServer::builder()
        .latency(Duration::from_millis(100))
        .start()
        .await
        .unwrap();
    let provider = Arc::new(openai(&server));
    let started = Instant::now();
    let calls: Vec<_> = (0..32)
        .map(|i| {
            let provider = provider.clone();
            tokio::spawn(async move {
                let mut sink = ();
                provider
                    .complete(&ask(&format!("call {i}")), &mut sink)
                    .await
            })
        })
        .collect();
    for (i, handle) in calls.into_iter().enumerate() {
        let response = handle.await.unwrap().expect("answer");
        assert_eq!(response.text, format!("Echo: call {i}"));
    }
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_millis(800),
        "32 calls at 100 ms took {elapsed:?}"
    );
    assert_eq!(server.request_count(), 32);
}

// ---------------------------------------------------------------------------
// Anthropic against the fake server
// ---------------------------------------------------------------------------

#[tokio::test]
async fn anthropic_text_non_streaming() {
    let server = server().await;
    let (result, sink) = call(&anthropic(&server), &ask("bonjour")).await;
    let response = result.expect("answer");
    assert_eq!(response.text, "Echo: bonjour");
    assert_eq!(sink.joined(), "Echo: bonjour");
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert!(response.usage.input_tokens > 0 && response.usage.output_tokens > 0);

    let sent = server.last_request().unwrap();
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        sent.json(),
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "system": "You are terse.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "bonjour"}]}]
        })
    );
}

#[tokio::test]
async fn anthropic_text_streaming_with_usage() {
    let server = FakeProviderServer::builder()
        .write_chunk_size(5)
        .start()
        .await
        .unwrap();
    let request = streamed(ask("stream this — with ünïcödé"));
    let (result, sink) = call(&anthropic(&server), &request).await;
    let response = result.expect("answer");
    assert_eq!(response.text, "Echo: stream this — with ünïcödé");
    assert!(sink.0.len() > 3);
    assert_eq!(sink.joined(), response.text);
    assert!(response.usage.input_tokens > 1, "from message_start");
    assert_eq!(
        response.usage.output_tokens,
        (response.text.chars().count() as u64).div_ceil(4),
        "from message_delta"
    );
    assert_eq!(server.last_request().unwrap().json()["stream"], json!(true));
}

#[tokio::test]
async fn anthropic_tool_use_streamed_in_fragments() {
    let args = json!({"location": "San Francisco, CA", "unit": "fahrenheit"});
    let server = FakeProviderServer::builder()
        .replies(vec![FakeReply::tool_call("get_weather", args.clone())])
        .start()
        .await
        .unwrap();
    let mut request = streamed(ask("weather?"));
    request.tools = vec![weather_tool()];
    let (result, _) = call(&anthropic(&server), &request).await;
    let response = result.expect("answer");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.tool_calls.len(), 1);
    assert!(response.tool_calls[0].id.starts_with("toolu_"));
    assert_eq!(response.tool_calls[0].arguments, args);
    assert_eq!(
        server.last_request().unwrap().json()["tools"],
        json!([{
            "name": "get_weather",
            "description": "Get the current weather in a given location",
            "input_schema": weather_tool().parameters
        }])
    );
}

#[tokio::test]
async fn anthropic_request_shape_matches_the_reference() {
    let provider = Anthropic::new("claude-sonnet-4-5").api_key("k");
    let body = provider.request_body(&conversation("toolu_01A09q90qw90lq917835lq9"));
    assert_eq!(body, fixture_json("anthropic_request_conversation.json"));

    let mut failed = conversation("toolu_1");
    if let ContentPart::ToolResult { is_error, .. } = &mut failed.messages[2].content[0] {
        *is_error = true;
    }
    let body = provider.request_body(&failed);
    assert_eq!(body["messages"][2]["content"][0]["is_error"], json!(true));
}

#[tokio::test]
async fn anthropic_structured_output_json_schema() {
    let server = server().await;
    for stream in [false, true] {
        let mut request = ask("report");
        request.output_schema = Some(report_schema());
        request.options.stream = stream;
        let (result, sink) = call(&anthropic(&server), &request).await;
        let response = result.expect("answer");
        let parsed: Value = serde_json::from_str(&response.text).expect("JSON answer");
        assert_eq!(parsed, json!({"summary": "Echo: report", "celsius": 0.0}));
        assert_eq!(sink.joined(), response.text);
        let body = server.last_request().unwrap().json();
        assert_eq!(
            body["output_config"],
            json!({"format": {"type": "json_schema", "schema": report_schema().schema}})
        );
        assert!(body.get("tool_choice").is_none());
    }
}

#[tokio::test]
async fn anthropic_structured_output_forced_tool() {
    let server = server().await;
    let provider = anthropic(&server).structured_output(StructuredOutput::ForcedTool);
    for stream in [false, true] {
        let mut request = ask("report");
        request.output_schema = Some(report_schema());
        request.options.stream = stream;
        let (result, sink) = call(&provider, &request).await;
        let response = result.expect("answer");
        let parsed: Value = serde_json::from_str(&response.text).expect("JSON answer");
        assert_eq!(parsed, json!({"summary": "Echo: report", "celsius": 0.0}));
        assert!(response.tool_calls.is_empty());
        assert_eq!(response.stop_reason, StopReason::EndTurn);
        let streamed: Value = serde_json::from_str(&sink.joined()).expect("streamed JSON");
        assert_eq!(streamed, parsed);
        let body = server.last_request().unwrap().json();
        assert_eq!(
            body["tool_choice"],
            json!({"type": "tool", "name": "weather_report"})
        );
        assert_eq!(body["tools"][0]["name"], json!("weather_report"));
        assert_eq!(body["tools"][0]["input_schema"], report_schema().schema);
        assert!(body.get("output_config").is_none());
    }
}

#[tokio::test]
async fn anthropic_overloaded_is_retried_and_rate_limits_give_up() {
    let server = server_with(vec![Fault::Overloaded]).await;
    let (result, _) = call(&anthropic(&server), &ask("hi")).await;
    assert_eq!(result.expect("answer after a retry").text, "Echo: hi");
    assert_eq!(server.request_count(), 2);

    let limited = Fault::RateLimited {
        retry_after: Some(Duration::from_millis(5)),
    };
    let server = server_with(vec![limited; 5]).await;
    let (result, _) = call(&anthropic(&server).retry(fast_retry(2)), &ask("hi")).await;
    match result {
        Err(ProviderError::RateLimited {
            attempts, message, ..
        }) => {
            assert_eq!(attempts, 2);
            assert!(message.starts_with("rate_limit_error: "), "{message}");
        }
        other => panic!("expected RateLimited, got {other:?}"),
    }
}

#[tokio::test]
async fn anthropic_malformed_json_and_wrong_content_type() {
    let server = server_with(vec![Fault::MalformedJson, Fault::WrongContentType]).await;
    let (result, _) = call(&anthropic(&server), &ask("hi")).await;
    assert!(
        matches!(&result, Err(ProviderError::Protocol { message, .. }) if message.contains("malformed JSON") && message.contains("msg_fake")),
        "{result:?}"
    );
    let (result, _) = call(&anthropic(&server), &streamed(ask("hi"))).await;
    assert!(
        matches!(&result, Err(ProviderError::Protocol { message, .. }) if message.contains("text/event-stream") && message.contains("text/html")),
        "{result:?}"
    );
}

#[tokio::test]
async fn anthropic_timeout() {
    let server = server_with(vec![Fault::Hang]).await;
    let started = Instant::now();
    let (result, _) = call(
        &anthropic(&server).timeout(Duration::from_millis(250)),
        &ask("hi"),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        matches!(result, Err(ProviderError::Timeout { .. })),
        "{result:?}"
    );
}

// ---------------------------------------------------------------------------
// Recorded-shape fixtures through a canned transport
// ---------------------------------------------------------------------------

#[tokio::test]
async fn openai_fixture_stream_at_every_chunk_size() {
    for chunk in [1, 2, 3, 7, 64, 100_000] {
        let transport = FixtureTransport::new(
            vec![(200, SSE, fixture("openai_stream_tool_calls.sse"))],
            chunk,
        );
        let provider = OpenAi::new("gpt-4o-mini").transport(transport.clone());
        let (result, _) = call(&provider, &streamed(ask("weather?"))).await;
        let response = result.expect("parsed");
        assert_eq!(response.model, "gpt-4o-mini-2024-07-18");
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(
            response.tool_calls,
            vec![
                ToolCall {
                    id: "call_r6jfuGWYlwjDk5zhR8zCf7JE".into(),
                    name: "get_weather".into(),
                    arguments: json!({"location": "Paris, Fré"}),
                },
                ToolCall {
                    id: "call_9FZsUNh0ILCGvT6VBhv3qTre".into(),
                    name: "get_time".into(),
                    arguments: json!({"tz": "CET"}),
                },
            ],
            "chunk size {chunk}"
        );
        assert_eq!(response.usage.input_tokens, 81);
        assert_eq!(response.usage.output_tokens, 47);
        assert_eq!(
            transport.sent.lock().unwrap()[0].url,
            "https://api.openai.com/v1/chat/completions"
        );
    }

    let transport = FixtureTransport::new(vec![(200, SSE, fixture("openai_stream_text.sse"))], 3);
    let provider = OpenAi::new("gpt-4o-mini").transport(transport);
    let (result, sink) = call(&provider, &streamed(ask("say"))).await;
    let response = result.expect("parsed");
    assert_eq!(response.text, "This is a test — café.");
    assert_eq!(sink.0, vec!["This", " is a", " test — café."]);
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (13, 7)
    );
}

#[tokio::test]
async fn openai_fixture_non_streaming_tool_calls_and_embeddings() {
    let transport = FixtureTransport::new(
        vec![
            (200, JSON, fixture("openai_chat_tool_calls.json")),
            (200, JSON, fixture("openai_embeddings.json")),
        ],
        1024,
    );
    let provider = OpenAi::new("gpt-4o").transport(transport.clone());
    let (result, _) = call(&provider, &ask("weather and time?")).await;
    let response = result.expect("parsed");
    assert_eq!(response.text, "");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.tool_calls[0].id, "call_Dn2RJJSxzDm49vlVTehseJ0k");
    assert_eq!(
        response.tool_calls[0].arguments,
        json!({"location": "Paris, France", "unit": "celsius"})
    );
    assert_eq!(response.tool_calls[1].arguments, json!({}));
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (82, 51)
    );

    let vectors = provider.embeddings(&["a", "b"]).await.expect("embeddings");
    assert_eq!(
        vectors[0],
        vec![-0.006929283, -0.005336422, 0.024047505],
        "sorted by index"
    );
    assert_eq!(
        transport.sent.lock().unwrap()[1].url,
        "https://api.openai.com/v1/embeddings"
    );
}

#[tokio::test]
async fn openai_fixture_errors() {
    let transport = FixtureTransport::new(
        vec![
            (401, JSON, fixture("openai_error_401.json")),
            (200, SSE, fixture("openai_error_stream.sse")),
        ],
        16,
    );
    let provider = OpenAi::new("gpt-4o").transport(transport);
    let (result, _) = call(&provider, &ask("hi")).await;
    match result {
        Err(ProviderError::Http {
            status, message, ..
        }) => {
            assert_eq!(status, 401);
            assert!(
                message.starts_with("invalid_request_error: Incorrect API key provided"),
                "{message}"
            );
            assert!(message.ends_with("(code invalid_api_key)"), "{message}");
        }
        other => panic!("expected Http, got {other:?}"),
    }
    let (result, _) = call(&provider, &streamed(ask("hi"))).await;
    assert!(
        matches!(&result, Err(ProviderError::Http { status: 500, message, .. }) if message.contains("server_error")),
        "{result:?}"
    );
}

#[tokio::test]
async fn anthropic_fixtures() {
    for chunk in [1, 5, 4096] {
        let transport = FixtureTransport::new(
            vec![(200, SSE, fixture("anthropic_stream_tool_use.sse"))],
            chunk,
        );
        let provider = Anthropic::new("claude-sonnet-4-5")
            .api_key("k")
            .transport(transport.clone());
        let (result, sink) = call(&provider, &streamed(ask("weather?"))).await;
        let response = result.expect("parsed");
        assert_eq!(
            response.text,
            "Okay, let's check the weather for San Francisco, CA:"
        );
        assert_eq!(sink.joined(), response.text);
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(
            response.tool_calls,
            vec![ToolCall {
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                name: "get_weather".into(),
                arguments: json!({"location": "San Francisco, CA", "unit": "fahrenheit"}),
            }]
        );
        assert_eq!(
            (response.usage.input_tokens, response.usage.output_tokens),
            (472, 89)
        );
        assert_eq!(
            transport.sent.lock().unwrap()[0].url,
            "https://api.anthropic.com/v1/messages"
        );
    }

    let transport = FixtureTransport::new(
        vec![
            (200, JSON, fixture("anthropic_message_tool_use.json")),
            (200, SSE, fixture("anthropic_stream_overloaded.sse")),
            (429, JSON, fixture("anthropic_error_429.json")),
        ],
        7,
    );
    let provider = Anthropic::new("claude-sonnet-4-5")
        .api_key("k")
        .transport(transport)
        .retry(RetryPolicy::none());
    let (result, _) = call(&provider, &ask("weather?")).await;
    let response = result.expect("parsed");
    assert_eq!(
        response.text,
        "I'll check the current weather in San Francisco for you."
    );
    assert_eq!(response.tool_calls[0].id, "toolu_01A09q90qw90lq917835lq9");
    assert_eq!(
        response.usage.input_tokens, 484,
        "cache reads count as input"
    );

    let (result, sink) = call(&provider, &streamed(ask("hi"))).await;
    assert_eq!(sink.joined(), "Hello");
    assert!(
        matches!(&result, Err(ProviderError::Http { status: 529, message, .. }) if message.contains("overloaded_error: Overloaded")),
        "{result:?}"
    );

    let (result, _) = call(&provider, &ask("hi")).await;
    match result {
        Err(ProviderError::RateLimited {
            attempts, message, ..
        }) => {
            assert_eq!(attempts, 1);
            assert!(message.contains("50 requests per minute"), "{message}");
        }
        other => panic!("expected RateLimited, got {other:?}"),
    }
}

#[tokio::test]
async fn playback_errors_pass_through_unchanged() {
    struct Missing;
    #[async_trait]
    impl Transport for Missing {
        async fn send(
            &self,
            _request: HttpRequest,
            context: &CallContext,
        ) -> Result<HttpResponse, TransportError> {
            Err(TransportError::Playback(format!(
                "no recording {}",
                context.recording_id.as_deref().unwrap_or("?")
            )))
        }
    }
    let provider = OpenAi::new("gpt-4o").transport(Arc::new(Missing));
    let mut request = ask("hi");
    request.context.recording_id = Some("eval__d__c__v__n__inv0".into());
    let (result, _) = call(&provider, &request).await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Playback {
            message: "no recording eval__d__c__v__n__inv0".into()
        }
    );
}

#[test]
fn the_default_transport_survives_one_runtime_per_test() {
    assert!(ReqwestTransport::new().is_ok());
    let server_runtime = tokio::runtime::Runtime::new().unwrap();
    let server = server_runtime.block_on(server());
    let provider = openai(&server).timeout(Duration::from_secs(2));
    // Each short-lived runtime makes a call and goes away, leaving pooled
    // connections behind; the next runtime must not trip over them.
    for i in 0..3 {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let text = format!("runtime {i}");
        let (result, _) = runtime.block_on(call(&provider, &ask(&text)));
        assert_eq!(result.expect("answer").text, format!("Echo: {text}"));
    }
}

#[tokio::test]
async fn streams_that_end_early_are_protocol_errors() {
    let text = fixture("openai_stream_text.sse");
    let tools = fixture("anthropic_stream_tool_use.sse");
    let boundary = |body: &[u8], events: usize| -> Vec<u8> {
        let mut end = 0;
        for _ in 0..events {
            end += body[end..].windows(2).position(|w| w == b"\n\n").unwrap() + 2;
        }
        body[..end].to_vec()
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "openai",
            text[..text.len() / 2].to_vec(),
            "in the middle of an event",
        ),
        ("openai", boundary(&text, 3), "without a finish_reason"),
        (
            "anthropic",
            tools[..tools.len() / 2].to_vec(),
            "in the middle of an event",
        ),
        ("anthropic", boundary(&tools, 6), "without message_stop"),
        ("anthropic", Vec::new(), "without message_start"),
    ];
    for (flavour, body, expected) in cases {
        let transport = FixtureTransport::new(vec![(200, SSE, body)], 9);
        let provider: Box<dyn Provider> = match flavour {
            "openai" => Box::new(OpenAi::new("gpt-4o").transport(transport)),
            _ => Box::new(Anthropic::new("claude-sonnet-4-5").transport(transport)),
        };
        let (result, _) = call(provider.as_ref(), &streamed(ask("hi"))).await;
        match result {
            Err(ProviderError::Protocol { message, .. }) => {
                assert!(message.contains(expected), "{flavour}: {message}")
            }
            other => panic!("{flavour}: expected Protocol, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn unbounded_limits_do_not_overflow() {
    let server = server_with(vec![Fault::ServerError]).await;
    let provider = openai(&server)
        .timeout(Duration::MAX)
        .idle_timeout(Duration::MAX)
        .retry(RetryPolicy::new(2).base_delay(Duration::from_millis(1)));
    let (result, _) = call(&provider, &streamed(ask("hi"))).await;
    assert_eq!(result.expect("answer").text, "Echo: hi");
}

/// A base URL's query (a key a proxy wants, an `api-version`) stays at the
/// end of the URL, and a 404 names the URL it called (without its query,
/// so no key in it), so a doubled `/v1` is seen at once.
#[tokio::test]
async fn base_url_queries_stay_at_the_end_and_a_404_names_the_url() {
    let server = server().await;
    let with_query = openai(&server).base_url(format!(
        "{}?key=proxy-secret-0123456789&v=2",
        server.openai_base_url()
    ));
    let (result, _) = call(&with_query, &ask("hi")).await;
    assert!(result.is_ok(), "{result:?}");

    let doubled = openai(&server).base_url(format!(
        "{}/v1?key=proxy-secret-0123456789",
        server.openai_base_url()
    ));
    let (result, _) = call(&doubled, &ask("hi")).await;
    let error = result.expect_err("no such route").to_string();
    assert!(error.contains("HTTP 404"), "{error}");
    assert!(error.contains("/v1/v1/chat/completions)"), "{error}");
    assert!(!error.contains("proxy-secret"), "{error}");
    let doubled = anthropic(&server).base_url(format!("{}/v1", server.anthropic_base_url()));
    let (result, _) = call(&doubled, &ask("hi")).await;
    let error = result.expect_err("no such route").to_string();
    assert!(
        error.contains("(the URL called: http://") && error.contains("/v1/v1/messages)"),
        "{error}"
    );
}

/// The corners of streaming agree with the whole-answer path: a tool
/// input that is not JSON goes to the tool layer as text (it tells the
/// model), a stream with no choice at all is no answer, a 200 "stream" that
/// is an HTML page shows the page, and "after 1 attempt" is English.
#[tokio::test]
async fn streaming_corners_agree_with_the_whole_answer_path() {
    let events = |list: &[Value]| -> Vec<u8> {
        list.iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
            .collect::<String>()
            .into_bytes()
    };
    let bad_input = events(&[
        json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [], "usage": {"input_tokens": 5, "output_tokens": 0}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"location\": \"Par"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}}),
        json!({"type": "message_stop"}),
    ]);
    let transport = FixtureTransport::new(vec![(200, SSE, bad_input)], 9);
    let claude = Anthropic::new("claude-sonnet-4-5").transport(transport);
    let (result, _) = call(&claude, &streamed(ask("weather?"))).await;
    let answer = result.expect("a tool call the tool layer rejects, not a failed run");
    assert_eq!(
        answer.tool_calls[0].arguments,
        json!("{\"location\": \"Par")
    );

    let no_choices = b"data: {\"id\":\"c1\",\"model\":\"gpt-4o\"}\n\ndata: [DONE]\n\n".to_vec();
    let transport = FixtureTransport::new(vec![(200, SSE, no_choices)], 9);
    let (result, _) = call(
        &OpenAi::new("gpt-4o").transport(transport),
        &streamed(ask("hi")),
    )
    .await;
    match result {
        Err(ProviderError::Protocol { message, .. }) => {
            assert!(message.contains("without any choice"), "{message}")
        }
        other => panic!("expected Protocol, got {other:?}"),
    }

    let page = b"<html><body><h1>502 Bad Gateway</h1></body></html>".to_vec();
    let transport = FixtureTransport::new(vec![(200, SSE, page)], 9);
    let (result, _) = call(
        &OpenAi::new("gpt-4o").transport(transport),
        &streamed(ask("hi")),
    )
    .await;
    let message = result.expect_err("no events").to_string();
    assert!(
        message.contains("after 0 complete events")
            && message.contains("body starts with: <html><body><h1>502 Bad Gateway"),
        "{message}"
    );

    let once = ProviderError::RateLimited {
        provider: "openai".into(),
        attempts: 1,
        message: "slow down".into(),
    };
    assert!(
        once.to_string().contains("after 1 attempt: slow down"),
        "{once}"
    );
}

/// A server that never sends a stream's headers is given up on after the
/// idle timeout, once, not after the whole call timeout times the retries.
#[tokio::test]
async fn a_silent_server_is_given_up_on_after_the_idle_timeout() {
    let server = server_with(vec![Fault::Hang, Fault::Hang, Fault::Hang]).await;
    let provider = openai(&server)
        .timeout(Duration::from_secs(30))
        .idle_timeout(Duration::from_millis(200));
    let (result, _) = call(&provider, &streamed(ask("hi"))).await;
    match result {
        Err(ProviderError::Timeout {
            phase, after_ms, ..
        }) => {
            assert_eq!(phase, "waiting for the stream's response headers");
            assert_eq!(after_ms, 200);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert_eq!(server.request_count(), 1, "not retried");
}

// ---------------------------------------------------------------------------
// Derived schemas in the form each API accepts
// ---------------------------------------------------------------------------

/// A structured answer as users derive one: bounded integers, an optional
/// field, a defaulted one, a nested struct.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Tally {
    /// Lines counted.
    lines: u32,
    #[schemars(range(min = 1, max = 5))]
    stars: u8,
    #[serde(default)]
    retries: u32,
    note: Option<String>,
    /// Where it was counted.
    place: Place,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Place {
    file: String,
    line: Option<u64>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Labels {
    labels: std::collections::HashMap<String, u32>,
}

fn derived<T: schemars::JsonSchema>() -> OutputSchema {
    let mut schema = schemars::schema_for!(T).to_value();
    schema.as_object_mut().unwrap().remove("$schema");
    OutputSchema {
        name: T::schema_name().into_owned(),
        schema,
    }
}

/// Every object schema in `schema`, and whether any node has `keyword`.
fn objects_and(schema: &Value, keyword: &str, objects: &mut Vec<Value>) -> bool {
    match schema {
        Value::Object(map) => {
            if map.get("type") == Some(&json!("object")) {
                objects.push(schema.clone());
            }
            let here = map.contains_key(keyword);
            // `properties` maps names to schemas: a property may be named like a keyword.
            map.iter()
                .map(|(k, v)| match (k.as_str(), v) {
                    ("properties" | "$defs", Value::Object(children)) => children
                        .values()
                        .map(|c| objects_and(c, keyword, objects))
                        .fold(false, |a, b| a | b),
                    _ => objects_and(v, keyword, objects),
                })
                .fold(here, |a, b| a | b)
        }
        Value::Array(items) => items
            .iter()
            .map(|i| objects_and(i, keyword, objects))
            .fold(false, |a, b| a | b),
        _ => false,
    }
}

#[tokio::test]
async fn openai_sends_a_derived_schema_in_strict_form() {
    let server = server().await;
    let mut request = ask("count");
    request.output_schema = Some(derived::<Tally>());
    let (result, _) = call(&openai(&server), &request).await;
    result.expect("answer");
    let body = server.last_request().unwrap().json();
    let format = &body["response_format"]["json_schema"];
    assert_eq!(format["strict"], json!(true), "{format:#}");
    let schema = &format["schema"];
    let mut objects = Vec::new();
    assert!(!objects_and(schema, "oneOf", &mut objects));
    // The answer, the place inlined with its description, the place in `$defs`.
    assert_eq!(objects.len(), 3, "{schema:#}");
    for object in &objects {
        assert_eq!(object["additionalProperties"], json!(false), "{object:#}");
        let listed = object["properties"].as_object().unwrap().len();
        assert_eq!(object["required"].as_array().unwrap().len(), listed);
    }
    assert_eq!(
        schema["properties"]["retries"]["type"],
        json!(["integer", "null"])
    );
    assert_eq!(schema["properties"]["stars"]["maximum"], json!(5));
    // Strict mode rejects formats it does not know, such as `uint32`.
    assert!(
        !objects_and(schema, "format", &mut Vec::new()),
        "{schema:#}"
    );
    assert_eq!(
        schema["properties"]["lines"]["description"],
        json!("Lines counted.\n\n{format: \"uint32\"}")
    );

    // A map cannot be strict: sent as derived, strict off.
    let mut request = ask("labels");
    request.output_schema = Some(derived::<Labels>());
    call(&openai(&server), &request).await.0.expect("answer");
    let body = server.last_request().unwrap().json();
    let format = &body["response_format"]["json_schema"];
    assert_eq!(format["strict"], json!(false));
    assert_eq!(format["schema"], derived::<Labels>().schema);
}

#[tokio::test]
async fn anthropic_sends_a_derived_schema_in_the_supported_subset() {
    let server = server().await;
    for mode in [StructuredOutput::JsonSchema, StructuredOutput::ForcedTool] {
        let provider = anthropic(&server).structured_output(mode);
        let mut request = ask("count");
        request.output_schema = Some(derived::<Tally>());
        let (result, _) = call(&provider, &request).await;
        let answer: Value = serde_json::from_str(&result.expect("answer").text).unwrap();
        assert!(answer.get("lines").is_some(), "{answer}");
        let body = server.last_request().unwrap().json();
        let schema = match mode {
            StructuredOutput::JsonSchema => &body["output_config"]["format"]["schema"],
            StructuredOutput::ForcedTool => &body["tools"][0]["input_schema"],
        };
        let mut objects = Vec::new();
        for keyword in ["minimum", "maximum", "format", "default"] {
            assert!(
                !objects_and(schema, keyword, &mut objects),
                "{keyword} in {schema:#}"
            );
        }
        assert!(!objects.is_empty());
        for object in &objects {
            assert_eq!(object["additionalProperties"], json!(false), "{object:#}");
        }
        let stars = &schema["properties"]["stars"];
        assert_eq!(
            stars["description"],
            json!("{format: \"uint8\", maximum: 5, minimum: 1}")
        );
    }
}

/// The default transport speaks TLS itself (rustls and its crypto provider
/// built in, none to install): against a server that answers in plain HTTP,
/// an `https` call fails in the handshake, as an error, without a panic.
#[tokio::test]
async fn https_goes_through_the_built_in_tls_stack() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut hello = [0u8; 512];
            let _ = socket.read(&mut hello).await;
            let _ = socket
                .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    });
    let transport = ReqwestTransport::new().expect("the TLS stack is available");
    let provider = OpenAi::new("gpt-4o-mini")
        .base_url(format!("https://127.0.0.1:{port}/v1"))
        .api_key("sk-test")
        .retry(fast_retry(1))
        .timeout(Duration::from_secs(5))
        .transport(Arc::new(transport));

    let err = call(&provider, &ask("hi")).await.0.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("corrupt message") || text.contains("InvalidContentType"),
        "expected a TLS handshake error, got: {text}"
    );
}
