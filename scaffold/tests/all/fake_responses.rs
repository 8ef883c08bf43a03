//! `testing::FakeProvider` on the OpenAI Responses API (`POST
//! /v1/responses`): whole and streamed answers, rules reading its
//! `instructions` and `input` items, and faults, as plain JSON over TCP.

use std::time::Duration;

use serde_json::{Value, json};

use scaffold::testing::payloads::{self, Content};
use scaffold::testing::{Answer, Api, FakeProvider, FakeProviderServer, Fault, Rule};

/// What the server answered: status, head (lower-cased) and body, de-chunked.
struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.head
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("JSON body")
    }

    /// The stream's events: each `event:` name and its `data:` JSON.
    fn events(&self) -> Vec<(String, Value)> {
        self.body
            .split("\n\n")
            .filter(|e| !e.trim().is_empty())
            .map(|event| {
                let name = event
                    .lines()
                    .find_map(|l| l.strip_prefix("event: "))
                    .expect("event line");
                let data = event
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .expect("data line");
                (
                    name.to_string(),
                    serde_json::from_str(data).expect("JSON data"),
                )
            })
            .collect()
    }
}

/// Posts `body` to `/v1/responses`: the answer, its body de-chunked.
async fn respond(server: &FakeProviderServer, body: &Value) -> Reply {
    let out = respond_raw(server, body).await;
    let (head, body) = out.split_once("\r\n\r\n").expect("response");
    let head = head.to_ascii_lowercase();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let body = if head.contains("transfer-encoding: chunked") {
        dechunk(body)
    } else {
        body.to_string()
    };
    Reply { status, head, body }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").expect("chunk size");
        let size = usize::from_str_radix(size.trim(), 16).expect("hex size");
        if size == 0 {
            return out;
        }
        out.push_str(&after[..size]);
        rest = after[size..].strip_prefix("\r\n").expect("chunk end");
    }
}

/// Rules for a poet (by its instructions) and a word lookup round trip.
async fn server() -> FakeProviderServer {
    FakeProvider::builder()
        .rules(rules())
        .start()
        .await
        .expect("server")
}

fn rules() -> Vec<Rule> {
    vec![
        Rule::when()
            .api(Api::OpenAi)
            .then(Answer::text("chat completions only")),
        Rule::when()
            .api(Api::Responses)
            .system_contains("poet")
            .prompt_contains("haiku")
            .then(Answer::text("Old pond, a frog leaps: the sound of water.").usage(12, 9)),
        Rule::when()
            .tool_result_contains("to turn into bone")
            .then(Answer::text("Ossify: to turn into bone.")),
        Rule::when()
            .prompt_contains("Define")
            .then(Answer::tool_call("lookup", json!({"word": "ossify"}))),
        Rule::when()
            .model("gpt-4o-mini")
            .then(Answer::structured(json!({"verdict": "approve"}))),
    ]
}

fn haiku(stream: bool) -> Value {
    json!({
        "model": "gpt-4o",
        "instructions": "You are a poet.",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Write a haiku"}]}],
        "stream": stream
    })
}

fn define(stream: bool) -> Value {
    json!({
        "model": "gpt-4o",
        "instructions": "You define words.",
        "input": [{"type": "message", "role": "user", "content": "Define ossify."}],
        "tools": [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}],
        "stream": stream
    })
}

#[tokio::test]
async fn a_text_answer_is_a_completed_response_object() {
    let server = server().await;
    let reply = respond(&server, &haiku(false)).await;
    assert_eq!(reply.status, 200);
    assert!(
        reply
            .header("content-type")
            .is_some_and(|t| t.starts_with("application/json"))
    );
    assert!(
        reply
            .header("x-request-id")
            .is_some_and(|id| id.starts_with("req_"))
    );
    let body = reply.json();
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["model"], "gpt-4o");
    assert_eq!(body["instructions"], "You are a poet.");
    assert_eq!(body["error"], Value::Null);
    assert!(body["created_at"].is_u64() && body["completed_at"].is_u64());
    let id = body["id"].as_str().expect("id");
    assert!(id.starts_with("resp_"), "{id}");
    let output = body["output"].as_array().expect("output");
    assert_eq!(output.len(), 1);
    let message = &output[0];
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["status"], "completed");
    assert!(
        message["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("msg_"))
    );
    assert_eq!(
        message["content"],
        json!([{"type": "output_text", "text": "Old pond, a frog leaps: the sound of water.", "annotations": []}])
    );
    assert_eq!(
        body["usage"],
        json!({
            "input_tokens": 12,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 9,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 21
        })
    );
    // The same request again: the very same bytes (recordings stay stable).
    let again = respond(&server, &haiku(false)).await;
    assert_eq!(again.body, reply.body);
    assert_eq!(again.header("x-request-id"), reply.header("x-request-id"));
}

#[tokio::test]
async fn a_tool_call_is_answered_by_its_result() {
    let server = server().await;
    let first = respond(&server, &define(false)).await.json();
    let call = &first["output"][0];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["status"], "completed");
    assert_eq!(call["name"], "lookup");
    let arguments: Value =
        serde_json::from_str(call["arguments"].as_str().expect("arguments string"))
            .expect("arguments JSON");
    assert_eq!(arguments, json!({"word": "ossify"}));
    let call_id = call["call_id"].as_str().expect("call_id");
    assert!(call_id.starts_with("call_"), "{call_id}");
    assert!(call["id"].as_str().is_some_and(|id| id.starts_with("fc_")));
    // Computed usage: about four characters a token, both ways.
    let tokens = |key: &str| first["usage"][key].as_u64().expect("token count");
    assert!(tokens("input_tokens") > 1);
    assert!(tokens("output_tokens") >= 1);
    assert_eq!(
        tokens("total_tokens"),
        tokens("input_tokens") + tokens("output_tokens")
    );

    // The second turn sends the call back with its output, as clients do.
    let mut second = define(false);
    let input = second["input"].as_array_mut().expect("input");
    input.push(call.clone());
    input.push(json!({
        "type": "function_call_output",
        "call_id": call_id,
        "output": "{\"meaning\": \"to turn into bone\"}"
    }));
    let answer = respond(&server, &second).await.json();
    assert_eq!(
        answer["output"][0]["content"][0]["text"],
        "Ossify: to turn into bone."
    );
    // An output in parts is read the same way.
    input_output_parts(&mut second);
    let answer = respond(&server, &second).await.json();
    assert_eq!(
        answer["output"][0]["content"][0]["text"],
        "Ossify: to turn into bone."
    );
}

/// Replace the `function_call_output` of `request` by the same text in parts.
fn input_output_parts(request: &mut Value) {
    for item in request["input"].as_array_mut().into_iter().flatten() {
        if item["type"] == "function_call_output" {
            let text = item["output"].clone();
            item["output"] = json!([{"type": "input_text", "text": text}]);
        }
    }
}

/// `value` without its `id` and `call_id` fields, which come from a hash
/// of the request (and a streamed request differs by its `stream`).
fn without_ids(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "id" | "call_id"))
                .map(|(k, v)| (k.clone(), without_ids(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_ids).collect()),
        other => other.clone(),
    }
}

#[tokio::test]
async fn a_streamed_response_is_numbered_events_ending_in_the_whole_response() {
    let server = server().await;
    for (request, item) in [
        (haiku as fn(bool) -> Value, "message"),
        (define, "function_call"),
    ] {
        let whole = respond(&server, &request(false)).await.json();
        let reply = respond(&server, &request(true)).await;
        assert_eq!(reply.status, 200);
        assert!(
            reply
                .header("content-type")
                .is_some_and(|t| t.starts_with("text/event-stream"))
        );
        assert!(!reply.body.contains("[DONE]"));
        let events = reply.events();
        for (n, (name, data)) in events.iter().enumerate() {
            assert_eq!(data["type"], name.as_str());
            assert_eq!(data["sequence_number"], n, "{name}");
        }
        let mut kinds: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
        // Deltas, however many, are one step.
        kinds.dedup();
        let middle: &[&str] = if item == "message" {
            &[
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
            ]
        } else {
            &[
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
            ]
        };
        let mut expected = vec![
            "response.created",
            "response.in_progress",
            "response.output_item.added",
        ];
        expected.extend(middle);
        expected.extend(["response.output_item.done", "response.completed"]);
        assert_eq!(kinds, expected);

        let created = &events[0].1["response"];
        assert_eq!(created["status"], "in_progress");
        assert_eq!(created["output"], json!([]));
        assert_eq!(created["usage"], Value::Null);
        let (_, completed) = events.last().expect("events");
        let response = &completed["response"];
        assert_eq!(response["status"], "completed");
        assert_eq!(response["id"], created["id"]);
        assert_eq!(without_ids(response), without_ids(&whole), "{item}");

        // The item's id is the same in every event that names it.
        let item_id = &response["output"][0]["id"];
        assert_eq!(events[2].1["item"]["id"], *item_id);
        assert_eq!(events[2].1["item"]["type"], item);
        for (_, data) in &events[3..events.len() - 2] {
            assert_eq!(data["item_id"], *item_id);
            assert_eq!(data["output_index"], 0);
        }
        let deltas: String = events
            .iter()
            .filter(|(name, _)| name.ends_with(".delta"))
            .filter_map(|(_, data)| data["delta"].as_str())
            .collect();
        let streamed_whole = if item == "message" {
            &response["output"][0]["content"][0]["text"]
        } else {
            &response["output"][0]["arguments"]
        };
        assert_eq!(streamed_whole.as_str(), Some(deltas.as_str()));
    }
}

#[tokio::test]
async fn a_string_input_is_the_user_prompt() {
    let server = server().await;
    let request =
        json!({"model": "gpt-4o", "instructions": "You are a poet.", "input": "Write a haiku"});
    let body = respond(&server, &request).await.json();
    assert_eq!(
        body["output"][0]["content"][0]["text"],
        "Old pond, a frog leaps: the sound of water."
    );
    // A structured answer is a message whose text is the JSON.
    let request = json!({"model": "gpt-4o-mini-2024-07-18", "input": "Review this."});
    let body = respond(&server, &request).await.json();
    assert_eq!(body["model"], "gpt-4o-mini-2024-07-18");
    let text = body["output"][0]["content"][0]["text"]
        .as_str()
        .expect("text");
    assert_eq!(
        serde_json::from_str::<Value>(text).expect("JSON text"),
        json!({"verdict": "approve"})
    );
    // No rule matches: a 400 in OpenAI's shape naming the prompt.
    let request = json!({"model": "o3", "input": "Tell me a joke"});
    let reply = respond(&server, &request).await;
    assert_eq!(reply.status, 400);
    let message = reply.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("model `o3`"), "{message}");
    assert!(message.contains("Tell me a joke"), "{message}");
}

#[tokio::test]
async fn without_rules_a_schema_gets_an_instance_and_text_an_echo() {
    let server = FakeProviderServer::start().await.expect("server");
    let request = json!({
        "model": "gpt-4o",
        "input": [{"role": "user", "content": "Review this."}],
        "text": {"format": {"type": "json_schema", "name": "review", "strict": true, "schema": {
            "type": "object",
            "properties": {"verdict": {"type": "string"}},
            "required": ["verdict"]
        }}}
    });
    let body = respond(&server, &request).await.json();
    assert_eq!(body["id"], "resp_fake000000");
    let text = body["output"][0]["content"][0]["text"]
        .as_str()
        .expect("text");
    let parsed: Value = serde_json::from_str(text).expect("JSON text");
    assert!(parsed["verdict"].is_string());
    let body = respond(&server, &json!({"model": "gpt-4o", "input": "hello"}))
        .await
        .json();
    assert_eq!(body["output"][0]["content"][0]["text"], "Echo: hello");
}

#[tokio::test]
async fn faults_answer_in_openai_error_shape() {
    let server = FakeProvider::builder()
        .rules(rules())
        .fault_plan(vec![
            Fault::RateLimited {
                retry_after: Some(Duration::from_millis(1500)),
            },
            Fault::ServerError,
            Fault::TruncatedStream { after_events: 3 },
        ])
        .start()
        .await
        .expect("server");
    let limited = respond(&server, &haiku(false)).await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.header("retry-after-ms"), Some("1500"));
    assert_eq!(limited.header("retry-after"), Some("2"));
    let error = &limited.json()["error"];
    assert_eq!(error["code"], "rate_limit_exceeded");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("Rate limit"))
    );

    let failed = respond(&server, &haiku(false)).await;
    assert_eq!(failed.status, 500);
    assert_eq!(failed.json()["error"]["type"], "server_error");

    // A stream cut mid-event: three whole events, then half of one.
    let cut = respond_raw(&server, &haiku(true)).await;
    assert_eq!(cut.matches("event: ").count(), 4, "{cut}");
    assert!(!cut.contains("response.completed"));

    let answered = respond(&server, &haiku(false)).await;
    assert_eq!(answered.status, 200);
    assert_eq!(answered.json()["status"], "completed");
}

/// The raw answer to a POST of `body` to `/v1/responses`: a minimal
/// HTTP/1.1 request over TCP (the test crate has no HTTP client of its own).
async fn respond_raw(server: &FakeProviderServer, body: &Value) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = server.addr().to_string();
    let mut socket = tokio::net::TcpStream::connect(&host)
        .await
        .expect("connect");
    let body = body.to_string();
    let head = format!(
        "POST /v1/responses HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await.expect("write");
    socket.write_all(body.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    socket.read_to_end(&mut out).await.expect("read");
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn the_public_builders_give_the_responses_shapes() {
    let message = payloads::Message::new("resp_1", "gpt-4o", Content::text("Hi"), (10, 1));
    let request = json!({"instructions": "Be kind.", "input": "Hello"});
    let body = payloads::responses::response(&message, &request);
    assert_eq!(body["instructions"], "Be kind.");
    assert_eq!(body["output"][0]["id"], "msg_1");
    assert_eq!(body["usage"]["total_tokens"], 11);
    let events = payloads::responses::response_stream(&message, &request);
    assert!(events[0].starts_with("event: response.created\ndata: "));
    let last = events.last().expect("events");
    assert!(last.starts_with("event: response.completed\n"), "{last}");
    let data: Value = serde_json::from_str(
        last.lines()
            .find_map(|l| l.strip_prefix("data: "))
            .expect("data"),
    )
    .expect("JSON");
    assert_eq!(data["response"], body);
    assert_eq!(data["sequence_number"], events.len() - 1);
}
