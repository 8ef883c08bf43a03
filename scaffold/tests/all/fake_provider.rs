//! `testing::FakeProvider`: a fake model API that answers by request
//! content, through the real OpenAI and Anthropic providers (real TCP).

use std::time::Duration;

use serde_json::{Value, json};

use scaffold::provider::anthropic::{Anthropic, StructuredOutput};
use scaffold::provider::http::RetryPolicy;
use scaffold::provider::openai::OpenAi;
use scaffold::provider::{
    CompletionRequest, CompletionResponse, ContentPart, Message, OutputSchema, Provider,
    ProviderError, ProviderOptions, Role, StopReason, ToolCall, ToolSpec,
};
use scaffold::testing::payloads::{self, Content};
use scaffold::testing::{Answer, Api, FakeProvider, FakeProviderServer, Rule};

fn openai(server: &FakeProviderServer, model: &str) -> OpenAi {
    OpenAi::new(model)
        .base_url(server.openai_base_url())
        .api_key("sk-test")
        .retry(RetryPolicy::new(1))
        .timeout(Duration::from_secs(5))
}

fn anthropic(server: &FakeProviderServer, model: &str) -> Anthropic {
    Anthropic::new(model)
        .base_url(server.anthropic_base_url())
        .api_key("sk-ant-test")
        .retry(RetryPolicy::new(1))
        .timeout(Duration::from_secs(5))
}

fn ask(system: &str, text: &str, stream: bool) -> CompletionRequest {
    CompletionRequest {
        system: Some(system.into()),
        messages: vec![Message::user(text)],
        options: ProviderOptions {
            stream,
            max_tokens: Some(256),
            ..ProviderOptions::default()
        },
        ..CompletionRequest::default()
    }
}

async fn call(
    provider: &dyn Provider,
    request: &CompletionRequest,
) -> Result<CompletionResponse, ProviderError> {
    provider.complete(request, &mut ()).await
}

fn lookup_tool() -> ToolSpec {
    ToolSpec {
        name: "lookup".into(),
        description: "Look a word up".into(),
        parameters: json!({
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
            "additionalProperties": false
        }),
    }
}

/// The second turn of a tool round trip: the result of `lookup` is `result`.
fn after_tool(result: &str, stream: bool) -> CompletionRequest {
    let mut request = ask("You define words.", "Define ossify.", stream);
    request.tools = vec![lookup_tool()];
    request.messages.push(Message {
        role: Role::Assistant,
        content: vec![ContentPart::ToolCall(ToolCall {
            id: "call_1".into(),
            name: "lookup".into(),
            arguments: json!({"word": "ossify"}),
        })],
    });
    request.messages.push(Message {
        role: Role::User,
        content: vec![ContentPart::ToolResult {
            call_id: "call_1".into(),
            content: result.into(),
            is_error: false,
        }],
    });
    request
}

fn review_schema() -> OutputSchema {
    OutputSchema {
        name: "review".into(),
        schema: json!({
            "type": "object",
            "properties": {"verdict": {"type": "string"}},
            "required": ["verdict"],
            "additionalProperties": false
        }),
    }
}

/// Rules for two agents told apart by their system prompts, and two models.
async fn two_agents() -> FakeProviderServer {
    FakeProvider::builder()
        .rule(
            Rule::when()
                .model("gpt-4o")
                .system_contains("reviewer")
                .prompt_contains("SELECT *")
                .then(Answer::text("gpt-4o reviews SQL").usage(120, 40)),
        )
        .rule(
            Rule::when()
                .api(Api::Anthropic)
                .system_contains("reviewer")
                .then(Answer::text("claude reviews")),
        )
        .rule(
            Rule::when()
                .system_contains("fixer")
                .then(Answer::text("fixed")),
        )
        .start()
        .await
        .expect("server")
}

#[tokio::test]
async fn requests_sent_at_once_get_the_answers_their_content_asks_for() {
    let server = two_agents().await;
    for stream in [false, true] {
        let gpt = openai(&server, "gpt-4o-2024-08-06");
        let claude = anthropic(&server, "claude-sonnet-4-5");
        let sql = ask("You are a reviewer.", "Review: SELECT * FROM t", stream);
        let fix = ask("You are a fixer.", "Fix: SELECT * FROM t", stream);
        // Sent together, arriving in any order: each gets its own answer.
        let (a, b, c, d) = tokio::join!(
            call(&gpt, &fix),
            call(&claude, &sql),
            call(&gpt, &sql),
            call(&claude, &fix),
        );
        assert_eq!(a.expect("fixer").text, "fixed");
        assert_eq!(b.expect("claude reviewer").text, "claude reviews");
        let gpt_review = c.expect("gpt reviewer");
        assert_eq!(gpt_review.text, "gpt-4o reviews SQL");
        assert_eq!(gpt_review.usage.input_tokens, 120);
        assert_eq!(gpt_review.usage.output_tokens, 40);
        assert_eq!(d.expect("fixer").text, "fixed");
    }
}

#[tokio::test]
async fn a_request_no_rule_matches_fails_naming_what_it_got() {
    let server = two_agents().await;
    // gpt-4o-mini is not gpt-4o: the first rule does not apply, nor any other.
    let mini = openai(&server, "gpt-4o-mini");
    let err = call(
        &mini,
        &ask("You are a reviewer.", "Review: SELECT * FROM t", false),
    )
    .await
    .expect_err("no rule matches");
    let message = err.to_string();
    for part in [
        "no rule of the fake provider matches",
        "3 rules",
        "model `gpt-4o-mini`",
        "You are a reviewer.",
        "Review: SELECT * FROM t",
    ] {
        assert!(message.contains(part), "`{part}` missing from: {message}");
    }
    let claude = anthropic(&server, "claude-haiku-4-5");
    let err = call(&claude, &ask("You are a poet.", "Write a haiku", true))
        .await
        .expect_err("no rule matches");
    assert!(
        err.to_string().contains("model `claude-haiku-4-5`"),
        "{err}"
    );
    assert!(err.to_string().contains("Write a haiku"), "{err}");
}

#[tokio::test]
async fn a_tool_round_trip_is_routed_by_the_tool_result() {
    let server = FakeProvider::builder()
        .rule(
            Rule::when()
                .tool_result_contains("to turn into bone")
                .then(Answer::text("Ossify: to turn into bone.")),
        )
        .rule(
            Rule::when()
                .tool_result_contains("")
                .then(Answer::text("no definition")),
        )
        .rule(
            Rule::when()
                .prompt_contains("Define")
                .then(Answer::tool_call("lookup", json!({"word": "ossify"}))),
        )
        .start()
        .await
        .expect("server");
    for stream in [false, true] {
        let providers: [Box<dyn Provider>; 2] = [
            Box::new(openai(&server, "gpt-4o")),
            Box::new(anthropic(&server, "claude-sonnet-4-5")),
        ];
        for provider in &providers {
            let mut first = ask("You define words.", "Define ossify.", stream);
            first.tools = vec![lookup_tool()];
            let call1 = call(provider.as_ref(), &first).await.expect("tool call");
            assert_eq!(call1.stop_reason, StopReason::ToolUse);
            assert_eq!(call1.tool_calls.len(), 1);
            assert_eq!(call1.tool_calls[0].name, "lookup");
            assert_eq!(call1.tool_calls[0].arguments, json!({"word": "ossify"}));

            let found = after_tool("{\"meaning\": \"to turn into bone\"}", stream);
            let answer = call(provider.as_ref(), &found).await.expect("answer");
            assert_eq!(answer.text, "Ossify: to turn into bone.");
            let missing = after_tool("{\"meaning\": null}", stream);
            let answer = call(provider.as_ref(), &missing).await.expect("answer");
            assert_eq!(answer.text, "no definition");
        }
    }
}

#[tokio::test]
async fn a_structured_answer_fits_each_way_of_asking_for_one() {
    let verdict = json!({"verdict": "approve"});
    let server = FakeProvider::builder()
        .rule(Rule::when().then(Answer::structured(verdict.clone())))
        .start()
        .await
        .expect("server");
    let providers: [Box<dyn Provider>; 3] = [
        Box::new(openai(&server, "gpt-4o")),
        Box::new(anthropic(&server, "claude-sonnet-4-5")),
        Box::new(
            anthropic(&server, "claude-sonnet-4-5").structured_output(StructuredOutput::ForcedTool),
        ),
    ];
    for provider in &providers {
        for stream in [false, true] {
            let mut request = ask("You review.", "Review this.", stream);
            request.output_schema = Some(review_schema());
            let response = call(provider.as_ref(), &request).await.expect("answer");
            let parsed: Value = serde_json::from_str(&response.text).expect("JSON answer");
            assert_eq!(parsed, verdict, "{} stream={stream}", provider.name());
        }
    }
}

#[tokio::test]
async fn ids_default_to_the_request_and_can_be_set() {
    let server = FakeProvider::builder()
        .rule(
            Rule::when()
                .prompt_contains("fixed ids")
                .then(Answer::text("ok").id("chatcmpl-abc").request_id("req_abc")),
        )
        .rule(Rule::when().then_with(|request| {
            let words = request.json()["messages"].to_string().len() as u64;
            Answer::text("computed").usage(words, 1)
        }))
        .start()
        .await
        .expect("server");
    let fixed = chat(&server, "fixed ids").await;
    assert_eq!(fixed.0["id"], "chatcmpl-abc");
    assert_eq!(fixed.1.as_deref(), Some("req_abc"));
    // The same request twice: the same default ids, whatever the arrival order.
    let one = chat(&server, "same").await;
    let two = chat(&server, "same").await;
    assert_eq!(one.0["id"], two.0["id"]);
    assert_eq!(one.1, two.1);
    assert!(
        one.0["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("chatcmpl-"))
    );
    assert_ne!(one.0["id"], chat(&server, "other").await.0["id"]);
    assert_eq!(one.0["choices"][0]["message"]["content"], "computed");
    assert!(one.0["usage"]["prompt_tokens"].as_u64() > Some(1));
}

/// Posts a chat request with one user message; the body and `x-request-id`.
async fn chat(server: &FakeProviderServer, text: &str) -> (Value, Option<String>) {
    let url = format!("{}/chat/completions", server.openai_base_url());
    let body = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": text}]});
    post(&url, &body).await
}

/// A minimal HTTP/1.1 POST over TCP (the test crate has no HTTP client of its own).
async fn post(url: &str, body: &Value) -> (Value, Option<String>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.trim_start_matches("http://");
    let (host, path) = rest.split_once('/').expect("path");
    let mut socket = tokio::net::TcpStream::connect(host).await.expect("connect");
    let body = body.to_string();
    let head = format!(
        "POST /{path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await.expect("write");
    socket.write_all(body.as_bytes()).await.expect("write");
    let mut out = String::new();
    socket.read_to_string(&mut out).await.expect("read");
    let (head, body) = out.split_once("\r\n\r\n").expect("response");
    let request_id = head
        .lines()
        .find_map(|l| l.strip_prefix("x-request-id: "))
        .map(str::to_string);
    (serde_json::from_str(body).expect("JSON body"), request_id)
}

#[test]
fn the_public_builders_give_both_apis_shapes() {
    let message = payloads::Message::new(
        "msg_1",
        "claude-sonnet-4-5",
        Content::Tools(vec![payloads::ToolUse {
            id: "toolu_1".into(),
            name: "lookup".into(),
            arguments: json!({"word": "ossify"}),
        }]),
        (10, 5),
    );
    let body = payloads::anthropic::message(&message);
    assert_eq!(body["stop_reason"], "tool_use");
    assert_eq!(body["content"][0]["input"], json!({"word": "ossify"}));
    assert_eq!(body["usage"]["output_tokens"], 5);
    let events = payloads::anthropic::message_stream(&message);
    assert!(events[0].starts_with("event: message_start"));

    let body = payloads::openai::chat_completion(&message);
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(
        body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
        "{\"word\":\"ossify\"}"
    );
    let events = payloads::openai::chat_completion_stream(&message, true);
    assert_eq!(events.last().map(String::as_str), Some("data: [DONE]\n\n"));
    assert_eq!(
        payloads::openai::error(429)["error"]["code"],
        "rate_limit_exceeded"
    );
    assert_eq!(
        payloads::anthropic::error(529)["error"]["type"],
        "overloaded_error"
    );
}
