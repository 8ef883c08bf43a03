//! Tests of the provider recorder: record, playback, secrets, staleness.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;
use scaffold::_cargo_scaffold_support::provider::recorder::REDACTED;
use scaffold::provider::anthropic::Anthropic;
use scaffold::provider::http::ReqwestTransport;
use scaffold::provider::openai::OpenAi;
use scaffold::provider::recorder::{
    ProviderRecorder, RecorderMode, RedactPattern, rerecord_command,
};
use scaffold::provider::transport::{
    HttpBody, HttpRequest, HttpResponse, Transport, TransportError,
};
use scaffold::provider::{
    CallContext, CompletionRequest, Message, Provider, ProviderError, ProviderOptions, RecordingId,
    StreamSink, ToolSpec,
};
use scaffold::testing::{FakeProviderServer, FakeReply, Fault};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

// ---------------------------------------------------------------- helpers

/// A fresh, empty folder under the target dir.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("recorder-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn id(case: &str, inv: u32) -> RecordingId {
    RecordingId::new("recorder.v1", case, "default", "assistant", inv)
}

fn ctx(id: &RecordingId) -> CallContext {
    CallContext {
        recording_id: Some(id.to_string()),
        ..CallContext::default()
    }
}

fn chat_body(prompt: &str) -> Value {
    json!({
        "model": "gpt-4o-mini",
        "temperature": 0.2,
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": prompt}
        ]
    })
}

fn chat_request(base: &str, prompt: &str) -> HttpRequest {
    HttpRequest {
        method: "POST".into(),
        url: format!("{base}/v1/chat/completions"),
        headers: vec![
            (
                "authorization".into(),
                "Bearer sk-test-0000000000000000".into(),
            ),
            ("content-type".into(), "application/json".into()),
        ],
        body: Some(chat_body(prompt)),
    }
}

async fn body_bytes(response: HttpResponse) -> Vec<u8> {
    match response.body {
        HttpBody::Full(bytes) => bytes.to_vec(),
        HttpBody::Stream(mut stream) => {
            let mut all = Vec::new();
            while let Some(chunk) = stream.next().await {
                all.extend_from_slice(&chunk.unwrap());
            }
            all
        }
    }
}

/// The real HTTP transport of the providers.
fn http() -> Arc<dyn Transport> {
    ReqwestTransport::shared()
}

/// An in-process upstream: answers every request with a canned response
/// and remembers the requests it saw.
struct Fake {
    seen: Mutex<Vec<HttpRequest>>,
    answer: Box<dyn Fn(&HttpRequest) -> HttpResponse + Send + Sync>,
}

impl Fake {
    fn new(answer: impl Fn(&HttpRequest) -> HttpResponse + Send + Sync + 'static) -> Arc<Fake> {
        Arc::new(Fake {
            seen: Mutex::new(Vec::new()),
            answer: Box::new(answer),
        })
    }
}

#[async_trait]
impl Transport for Fake {
    async fn send(
        &self,
        request: HttpRequest,
        _context: &CallContext,
    ) -> Result<HttpResponse, TransportError> {
        let response = (self.answer)(&request);
        self.seen.lock().unwrap().push(request);
        Ok(response)
    }
}

fn json_response(body: &Value) -> HttpResponse {
    HttpResponse {
        status: 200,
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-request-id".into(), "req_123".into()),
            ("set-cookie".into(), "session=abc".into()),
        ],
        body: HttpBody::Full(Bytes::from(serde_json::to_vec(body).unwrap())),
    }
}

/// SSE events of a small OpenAI-style stream.
fn sse_events() -> Vec<String> {
    let mut events: Vec<String> = ["Hel", "lo", " wörld"]
        .iter()
        .map(|t| {
            format!(
                "data: {}\n\n",
                json!({"choices": [{"delta": {"content": t}}]})
            )
        })
        .collect();
    events.push("data: [DONE]\n\n".into());
    events
}

fn sse_response(chunks: Vec<Result<Bytes, TransportError>>) -> HttpResponse {
    HttpResponse {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        body: HttpBody::Stream(Box::pin(futures_util::stream::iter(chunks))),
    }
}

/// Every file under `dir`, recursively, as text.
fn all_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(all_files(&path));
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            out.push((path, text));
        }
    }
    out
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

async fn upstream_chat(answer: &Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&server)
        .await;
    server
}

fn chat_answer(text: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3}
    })
}

// ------------------------------------------------------------------ tests

#[tokio::test]
async fn record_then_playback_over_http() {
    let dir = fresh_dir("record-playback");
    let answer = chat_answer("Hello!");
    let upstream = upstream_chat(&answer).await;
    let rid = id("hello", 0);

    let recorder = ProviderRecorder::new(&dir, RecorderMode::Record).inner(http());
    let recorded = recorder
        .transport()
        .send(chat_request(&upstream.uri(), "Say hello"), &ctx(&rid))
        .await
        .unwrap();
    assert_eq!(recorded.status, 200);
    let recorded_body = body_bytes(recorded).await;
    assert!(recorder.recording_path(&rid).is_file());

    // Playback never reaches the upstream: drop it first.
    drop(upstream);
    let player = ProviderRecorder::new(&dir, RecorderMode::Playback).inner(http());
    let transport = player.transport();
    let first = transport
        .send(
            chat_request("https://api.openai.com", "Say hello"),
            &ctx(&rid),
        )
        .await
        .unwrap();
    assert_eq!(first.status, 200);
    assert_eq!(
        first.header("content-type"),
        Some("application/json"),
        "{:?}",
        first.headers
    );
    let first = body_bytes(first).await;
    assert_eq!(
        serde_json::from_slice::<Value>(&first).unwrap(),
        serde_json::from_slice::<Value>(&recorded_body).unwrap()
    );
    // Deterministic: byte-identical on replay.
    let second = transport
        .send(
            chat_request("https://api.openai.com", "Say hello"),
            &ctx(&rid),
        )
        .await
        .unwrap();
    assert_eq!(body_bytes(second).await, first);
}

#[tokio::test]
async fn cassette_is_readable_versioned_json() {
    let dir = fresh_dir("cassette-format");
    let fake = Fake::new(|_| json_response(&chat_answer("Hi")));
    let recorder = ProviderRecorder::new(&dir, RecorderMode::Record).inner(fake);
    let rid = id("format", 0);
    recorder
        .transport()
        .send(chat_request("https://api.openai.com", "Say hi"), &ctx(&rid))
        .await
        .unwrap();
    let path = recorder.recording_path(&rid);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("\n  \"version\": 1,"),
        "pretty-printed:\n{text}"
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["version"], 1);
    assert_eq!(v["id"], rid.to_string());
    assert_eq!(v["request"]["method"], "POST");
    assert_eq!(v["request"]["path"], "/v1/chat/completions");
    assert!(v["request"].get("query").is_none());
    assert_eq!(v["request"]["headers"]["authorization"], REDACTED);
    assert_eq!(v["request"]["headers"]["content-type"], "application/json");
    assert_eq!(v["request"]["body"], chat_body("Say hi"));
    assert_eq!(v["response"]["status"], 200);
    assert_eq!(
        v["response"]["headers"],
        json!({"content-type": "application/json", "x-request-id": "req_123"})
    );
    assert_eq!(v["response"]["body"], chat_answer("Hi"));
    assert!(v["response"].get("sse").is_none());
    assert!(v["timing"]["durationMs"].is_u64());
    assert!(v["timing"]["firstByteMs"].is_u64());
    // Only the cassette is left behind (no temporary files).
    assert_eq!(all_files(&dir).len(), 1);
}

#[tokio::test]
async fn streamed_chunks_pass_through_as_they_arrive_and_are_recorded() {
    let dir = fresh_dir("stream-tee");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Result<Bytes, TransportError>>();
    let rx = Arc::new(Mutex::new(Some(rx)));
    let fake = Fake::new(move |_| {
        let rx = rx.lock().unwrap().take().unwrap();
        HttpResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: HttpBody::Stream(Box::pin(futures_util::stream::unfold(
                rx,
                |mut rx| async move { rx.recv().await.map(|item| (item, rx)) },
            ))),
        }
    });
    let recorder = ProviderRecorder::new(&dir, RecorderMode::Record).inner(fake);
    let rid = id("stream", 0);
    let response = recorder
        .transport()
        .send(
            chat_request("https://api.openai.com", "Stream it"),
            &ctx(&rid),
        )
        .await
        .unwrap();
    let HttpBody::Stream(mut stream) = response.body else {
        panic!("expected a stream")
    };
    // Chunk boundaries inside events, and a multi-byte character split in two.
    let raw = sse_events().concat().into_bytes();
    let cut = raw.iter().position(|&b| b == 0xc3).unwrap() + 1;
    let pieces: Vec<Vec<u8>> = vec![raw[..7].to_vec(), raw[7..cut].to_vec(), raw[cut..].to_vec()];
    for piece in &pieces {
        tx.send(Ok(Bytes::from(piece.clone()))).unwrap();
        let got = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("chunk passed through before the stream ended")
            .unwrap()
            .unwrap();
        assert_eq!(&got[..], &piece[..]);
        assert!(
            !recorder.recording_path(&rid).exists(),
            "written only at the end"
        );
    }
    drop(tx);
    assert!(stream.next().await.is_none());
    let v = read_json(&recorder.recording_path(&rid));
    let events: Vec<String> = serde_json::from_value(v["response"]["sse"].clone()).unwrap();
    assert_eq!(events, sse_events());
    assert!(v["response"].get("truncated").is_none());
    assert!(v["response"].get("body").is_none());
}

#[tokio::test]
async fn failed_stream_is_recorded_as_truncated() {
    let dir = fresh_dir("stream-truncated");
    let fake = Fake::new(|_| {
        sse_response(vec![
            Ok(Bytes::from(sse_events()[0].clone())),
            Ok(Bytes::from("data: {\"cho")),
            Err(TransportError::Connection("reset by peer".into())),
        ])
    });
    let recorder = ProviderRecorder::new(&dir, RecorderMode::Record).inner(fake);
    let rid = id("cut", 0);
    let response = recorder
        .transport()
        .send(
            chat_request("https://api.openai.com", "Stream it"),
            &ctx(&rid),
        )
        .await
        .unwrap();
    let HttpBody::Stream(mut stream) = response.body else {
        panic!("expected a stream")
    };
    assert!(stream.next().await.unwrap().is_ok());
    assert!(stream.next().await.unwrap().is_ok());
    let err = stream.next().await.unwrap().unwrap_err();
    assert_eq!(err, TransportError::Connection("reset by peer".into()));
    let v = read_json(&recorder.recording_path(&rid));
    assert_eq!(v["response"]["truncated"], true);
    assert!(
        v["response"]["error"]
            .as_str()
            .unwrap()
            .contains("reset by peer")
    );
    assert_eq!(
        v["response"]["sse"],
        json!([sse_events()[0].clone(), "data: {\"cho"])
    );
}

#[tokio::test]
async fn streaming_round_trip_is_byte_identical() {
    let dir = fresh_dir("stream-round-trip");
    let raw = sse_events().concat();
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(raw.clone().into_bytes(), "text/event-stream"),
        )
        .mount(&upstream)
        .await;
    let rid = id("stream-http", 0);
    let mut request = chat_request(&upstream.uri(), "Stream it");
    request.body.as_mut().unwrap()["stream"] = json!(true);

    let recorder = ProviderRecorder::new(&dir, RecorderMode::Record).inner(http());
    let live = recorder
        .transport()
        .send(request.clone(), &ctx(&rid))
        .await
        .unwrap();
    assert_eq!(body_bytes(live).await, raw.as_bytes());

    let player = ProviderRecorder::new(&dir, RecorderMode::Playback).inner(http());
    for _ in 0..2 {
        let mut replay_request = request.clone();
        replay_request.url = "https://api.openai.com/v1/chat/completions".into();
        let replayed = player
            .transport()
            .send(replay_request, &ctx(&rid))
            .await
            .unwrap();
        assert_eq!(replayed.header("content-type"), Some("text/event-stream"));
        assert!(matches!(replayed.body, HttpBody::Stream(_)));
        assert_eq!(body_bytes(replayed).await, raw.as_bytes());
    }
}

#[tokio::test]
async fn canary_secrets_are_never_written() {
    const AUTH: &str = "CANARY-auth-7f3a9c1e5b";
    const XKEY: &str = "CANARY-xkey-2d8e4f6a0c";
    const QKEY: &str = "CANARY-qkey-9b1d3f5e7a";
    const ORG: &str = "CANARY-org-4c6e8a0b2d";
    const USER: &str = "acct-314159";
    let dir = fresh_dir("canary");
    // The upstream echoes secrets back, in the body, the SSE chunks and headers.
    let fake = Fake::new(|request| {
        let echoed = format!("you sent {AUTH} and {XKEY} and {QKEY} for {USER}");
        if request.body.as_ref().is_some_and(|b| b["stream"] == true) {
            sse_response(vec![
                Ok(Bytes::from(format!("data: {}\n\n", json!({"t": echoed})))),
                Ok(Bytes::from("data: [DONE]\n\n")),
            ])
        } else {
            HttpResponse {
                status: 200,
                headers: vec![
                    ("content-type".into(), "application/json".into()),
                    ("x-request-id".into(), format!("req-{AUTH}")),
                ],
                body: HttpBody::Full(Bytes::from(
                    serde_json::to_vec(&json!({"echo": echoed, "key": QKEY})).unwrap(),
                )),
            }
        }
    });
    let recorder = ProviderRecorder::new(&dir, RecorderMode::Record)
        .redact_pattern(RedactPattern::regex(r"acct-[0-9]{6}").unwrap())
        .inner(fake.clone());
    let transport = recorder.transport();
    let make_request = |stream: bool| HttpRequest {
        method: "POST".into(),
        url: format!(
            "https://generativelanguage.example.com/v1/models/x:generate?alt=json&key={QKEY}"
        ),
        headers: vec![
            ("Authorization".into(), format!("Bearer {AUTH}")),
            ("x-api-key".into(), XKEY.into()),
            ("api-key".into(), XKEY.into()),
            ("OpenAI-Organization".into(), ORG.into()),
            ("content-type".into(), "application/json".into()),
        ],
        body: Some(json!({
            "model": "m",
            "stream": stream,
            "account": USER,
            "messages": [{"role": "user", "content": format!("my account is {USER}; key {XKEY}")}],
        })),
    };
    for (i, stream) in [false, true].into_iter().enumerate() {
        let request = make_request(stream);
        let response = transport
            .send(request, &ctx(&id("canary", i as u32)))
            .await
            .unwrap();
        // The caller gets the real, unscrubbed answer.
        assert!(
            String::from_utf8(body_bytes(response).await)
                .unwrap()
                .contains(AUTH)
        );
    }
    // The upstream got the real credentials.
    assert_eq!(
        fake.seen.lock().unwrap()[0].header("authorization"),
        Some(format!("Bearer {AUTH}").as_str())
    );

    let files = all_files(&dir);
    assert_eq!(files.len(), 2, "{files:?}");
    for (path, text) in &files {
        for canary in [AUTH, XKEY, QKEY, ORG, USER, "CANARY"] {
            assert!(
                !text.contains(canary),
                "{} contains {canary}:\n{text}",
                path.display()
            );
        }
        assert!(text.contains(REDACTED));
    }
    let v = read_json(&recorder.recording_path(&id("canary", 0)));
    assert_eq!(v["request"]["path"], "/v1/models/x:generate");
    assert_eq!(v["request"]["query"], format!("alt=json&key={REDACTED}"));
    assert_eq!(v["request"]["headers"]["x-api-key"], REDACTED);
    assert_eq!(v["request"]["body"]["account"], REDACTED);

    // Playback of the same request (secrets and all) matches the scrubbed
    // recording, and serves the scrubbed answer.
    let player = ProviderRecorder::new(&dir, RecorderMode::Playback)
        .redact_pattern(RedactPattern::regex(r"acct-[0-9]{6}").unwrap())
        .inner(http());
    for (i, stream) in [false, true].into_iter().enumerate() {
        let response = player
            .transport()
            .send(make_request(stream), &ctx(&id("canary", i as u32)))
            .await
            .unwrap();
        let text = String::from_utf8(body_bytes(response).await).unwrap();
        assert!(
            !text.contains("CANARY") && text.contains(REDACTED),
            "{text}"
        );
    }
}

#[tokio::test]
async fn changed_prompt_is_reported_as_stale_with_a_diff_and_the_command() {
    let dir = fresh_dir("stale");
    let fake = Fake::new(|_| json_response(&chat_answer("ok")));
    let rid = id("stale-case", 1);
    ProviderRecorder::new(&dir, RecorderMode::Record)
        .inner(fake)
        .transport()
        .send(
            chat_request("https://api.openai.com", "Review this diff please"),
            &ctx(&rid),
        )
        .await
        .unwrap();

    let player = ProviderRecorder::new(&dir, RecorderMode::Playback).inner(http());
    let mut changed = chat_request(
        "https://api.openai.com",
        "Review this diff carefully please",
    );
    changed.body.as_mut().unwrap()["temperature"] = json!(0.7);
    let err = player
        .transport()
        .send(changed, &ctx(&rid))
        .await
        .unwrap_err();
    let TransportError::Playback(message) = err else {
        panic!("expected a playback error, got {err:?}")
    };
    println!("{message}");
    assert!(message.contains(&rid.to_string()), "{message}");
    assert!(
        message.contains(
            "messages[1].content: \"Review this diff please\" → \"Review this diff carefully please\""
        ),
        "{message}"
    );
    assert!(message.contains("temperature: 0.2 → 0.7"), "{message}");
    assert!(!message.contains("model:"), "{message}");
    assert!(message.contains(&rerecord_command(&rid)), "{message}");
    assert!(
        message.contains("SCAFFOLD_MODE=record cargo test --test evals -- default::stale-case"),
        "{message}"
    );

    // A different endpoint is reported by path.
    let mut moved = chat_request("https://api.openai.com", "Review this diff please");
    moved.url = "https://api.openai.com/v1/responses".into();
    let err = player
        .transport()
        .send(moved, &ctx(&rid))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("(path): \"/v1/chat/completions\" → \"/v1/responses\""),
        "{err}"
    );
}

#[tokio::test]
async fn missing_recording_names_the_id_the_path_and_the_command() {
    let dir = fresh_dir("missing");
    let player = ProviderRecorder::new(&dir, RecorderMode::Playback).inner(http());
    let rid = id("never-recorded", 0);
    let err = player
        .transport()
        .send(chat_request("https://api.openai.com", "hi"), &ctx(&rid))
        .await
        .unwrap_err();
    let TransportError::Playback(message) = err else {
        panic!("expected a playback error, got {err:?}")
    };
    println!("{message}");
    assert!(message.contains(&rid.to_string()), "{message}");
    assert!(
        message.contains(&player.recording_path(&rid).display().to_string()),
        "{message}"
    );
    assert!(
        message.contains("SCAFFOLD_MODE=record cargo test --test evals -- default::never-recorded"),
        "{message}"
    );
}

#[tokio::test]
async fn a_suite_that_records_its_own_way_is_named_in_every_playback_failure() {
    let dir = fresh_dir("rerecord-command");
    let fake = Fake::new(|_| json_response(&chat_answer("ok")));
    let rid = id("own-way", 0);
    ProviderRecorder::new(&dir, RecorderMode::Record)
        .inner(fake)
        .transport()
        .send(chat_request("https://api.openai.com", "hi"), &ctx(&rid))
        .await
        .unwrap();
    let player = |command: &str| {
        ProviderRecorder::new(&dir, RecorderMode::Playback)
            .inner(http())
            .rerecord_command(command)
            .transport()
    };
    let message = |err: TransportError| match err {
        TransportError::Playback(message) => message,
        other => panic!("expected a playback error, got {other:?}"),
    };
    // Stale: `{filter}` is the cell's test filter.
    let stale = player("cargo run --example record_suite -- {filter}")
        .send(chat_request("https://api.openai.com", "hello"), &ctx(&rid))
        .await
        .unwrap_err();
    let stale = message(stale);
    assert!(
        stale.contains("re-record it with: cargo run --example record_suite -- default::own-way"),
        "{stale}"
    );
    assert!(!stale.contains("SCAFFOLD_MODE"), "{stale}");
    // Missing, with a command without a filter: the command as it is.
    let missing = player("make recordings")
        .send(
            chat_request("https://api.openai.com", "hi"),
            &ctx(&id("never-recorded", 0)),
        )
        .await
        .unwrap_err();
    let missing = message(missing);
    assert!(
        missing.ends_with("record it with: make recordings"),
        "{missing}"
    );
    // The recorders of one folder keep their own commands.
    let default = ProviderRecorder::new(&dir, RecorderMode::Playback)
        .inner(http())
        .transport()
        .send(chat_request("https://api.openai.com", "hello"), &ctx(&rid))
        .await
        .unwrap_err();
    assert!(message(default).contains(&rerecord_command(&rid)));
}

#[tokio::test]
async fn calls_without_a_recording_id_are_refused_with_an_explanation() {
    let dir = fresh_dir("no-id");
    let fake = Fake::new(|_| json_response(&json!({})));
    for mode in [RecorderMode::Record, RecorderMode::Playback] {
        let err = ProviderRecorder::new(&dir, mode)
            .inner(fake.clone())
            .transport()
            .send(
                chat_request("https://api.openai.com", "hi"),
                &CallContext::default(),
            )
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(&format!("{mode} mode needs a recording id")),
            "{text}"
        );
        assert!(text.contains("SCAFFOLD_MODE=live"), "{text}");
    }
    assert!(fake.seen.lock().unwrap().is_empty());
    assert!(all_files(&dir).is_empty());
    // Live mode passes through without one.
    ProviderRecorder::new(&dir, RecorderMode::Live)
        .inner(fake.clone())
        .transport()
        .send(
            chat_request("https://api.openai.com", "hi"),
            &CallContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(fake.seen.lock().unwrap().len(), 1);
    assert!(all_files(&dir).is_empty());
}

#[test]
fn bad_mode_value_is_a_clear_error() {
    let err = "replay".parse::<RecorderMode>().unwrap_err().to_string();
    assert!(err.contains("SCAFFOLD_MODE"), "{err}");
    assert!(err.contains("replay"), "{err}");
    assert!(err.contains("live, record, playback"), "{err}");
    assert_eq!(
        RecorderMode::from_env_value("").unwrap(),
        RecorderMode::Playback
    );
    assert_eq!(
        RecorderMode::from_env_value("RECORD").unwrap(),
        RecorderMode::Record
    );

    // `from_env` itself, in a child process (setting the variable here
    // would race with the other tests' threads).
    let exe = std::env::current_exe().unwrap();
    for (value, expect_ok) in [("bogus", false), ("live", true)] {
        let out = std::process::Command::new(&exe)
            .args(["--exact", "mode_from_env_child", "--nocapture"])
            .env("SCAFFOLD_MODE", value)
            .env("SCAFFOLD_MODE_CHILD", "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        if expect_ok {
            assert!(text.contains("mode=live"), "{text}");
        } else {
            assert!(
                text.contains("SCAFFOLD_MODE=`bogus` is not a recorder mode; allowed values: live, record, playback"),
                "{text}"
            );
        }
    }
}

/// Runs only as the child of `bad_mode_value_is_a_clear_error`.
#[test]
fn mode_from_env_child() {
    if std::env::var("SCAFFOLD_MODE_CHILD").is_err() {
        return;
    }
    match RecorderMode::from_env() {
        Ok(mode) => println!("mode={mode}"),
        Err(e) => println!("error={e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_playback_of_many_ids() {
    const N: u32 = 64;
    let dir = fresh_dir("concurrent");
    let fake = Fake::new(|request| {
        let prompt = request.body.as_ref().unwrap()["messages"][1]["content"].clone();
        json_response(&json!({"answer": prompt}))
    });
    let recorder = ProviderRecorder::new(&dir, RecorderMode::Record).inner(fake);
    let transport = recorder.transport();
    for i in 0..N {
        transport
            .send(
                chat_request("https://api.openai.com", &format!("prompt {i}")),
                &ctx(&id("many", i)),
            )
            .await
            .unwrap();
    }

    let player = ProviderRecorder::new(&dir, RecorderMode::Playback)
        .inner(http())
        .transport();
    let calls = (0..N).map(|i| {
        let player = player.clone();
        tokio::spawn(async move {
            let response = player
                .send(
                    chat_request("https://api.openai.com", &format!("prompt {i}")),
                    &ctx(&id("many", i)),
                )
                .await
                .unwrap();
            let body: Value = serde_json::from_slice(&body_bytes(response).await).unwrap();
            (i, body)
        })
    });
    for call in futures_util::future::join_all(calls).await {
        let (i, body) = call.unwrap();
        assert_eq!(body["answer"], format!("prompt {i}"));
    }
}

#[tokio::test]
async fn committed_fixture_plays_back() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recordings");
    let rid: RecordingId = "eval__fixture.v1__greeting__default__assistant__inv0"
        .parse()
        .unwrap();
    let player = ProviderRecorder::new(&dir, RecorderMode::Playback).inner(http());
    let request = HttpRequest {
        method: "POST".into(),
        url: "https://api.anthropic.com/v1/messages".into(),
        headers: vec![
            ("x-api-key".into(), "whatever-key-in-ci".into()),
            ("anthropic-version".into(), "2023-06-01".into()),
            ("content-type".into(), "application/json".into()),
        ],
        body: Some(json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 256,
            "system": "You are terse.",
            "messages": [{"role": "user", "content": "Say hello"}]
        })),
    };
    let response = player.transport().send(request, &ctx(&rid)).await.unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.header("request-id"), Some("req_fixture_01"));
    let body: Value = serde_json::from_slice(&body_bytes(response).await).unwrap();
    assert_eq!(body["content"][0]["text"], "Hello!");
}

// ------------------------------------------------- providers end to end

/// Collects streamed text deltas.
#[derive(Default)]
struct Deltas(Vec<String>);

impl StreamSink for Deltas {
    fn text_delta(&mut self, delta: &str) {
        self.0.push(delta.to_string());
    }
}

fn completion_request(
    recording: &RecordingId,
    stream: bool,
    with_tools: bool,
) -> CompletionRequest {
    CompletionRequest {
        system: Some("You are a careful reviewer.".into()),
        messages: vec![Message::user(
            "Review: fn add(a: i32, b: i32) -> i32 { a - b } ✓",
        )],
        tools: if with_tools {
            vec![ToolSpec {
                name: "run_tests".into(),
                description: "Run the test suite".into(),
                parameters: json!({"type": "object", "properties": {"filter": {"type": "string"}}}),
            }]
        } else {
            Vec::new()
        },
        options: ProviderOptions {
            temperature: Some(0.3),
            max_tokens: Some(300),
            stream,
        },
        context: ctx(recording),
        ..CompletionRequest::default()
    }
}

/// The two HTTP providers, built against `base` (the fake server) with `transport`.
fn providers(
    server: &FakeProviderServer,
    transport: Arc<dyn Transport>,
    key: Option<&str>,
) -> Vec<Box<dyn Provider>> {
    let mut openai = OpenAi::new("gpt-4o-mini")
        .base_url(server.openai_base_url())
        .without_api_key()
        .transport(transport.clone());
    let mut anthropic = Anthropic::new("claude-sonnet-4-5")
        .base_url(server.anthropic_base_url())
        .transport(transport);
    if let Some(key) = key {
        openai = openai.api_key(key);
        anthropic = anthropic.api_key(key);
    }
    vec![Box::new(openai), Box::new(anthropic)]
}

/// The error of a call that must fail, and the deltas streamed before it.
async fn broke_off(provider: &dyn Provider, request: &CompletionRequest) -> (String, Deltas) {
    let mut deltas = Deltas::default();
    let error = provider
        .complete(request, &mut deltas)
        .await
        .expect_err("the stream breaks off")
        .to_string();
    (error, deltas)
}

/// A live stream that broke off fails its replay with the same error, at
/// the same event: a session recorded with that failure is the session
/// playback gives (the playback server can only end its answer cleanly,
/// which alone would read as another failure: an event cut in half).
#[tokio::test]
async fn a_stream_that_broke_off_plays_back_with_the_recorded_failure() {
    let dir = fresh_dir("e2e-broke-off");
    let cut = Fault::TruncatedStream { after_events: 2 };
    let server = FakeProviderServer::builder()
        .fault_plan(vec![cut.clone(), cut])
        .start()
        .await
        .unwrap();
    let recorder = ProviderRecorder::new(&dir, RecorderMode::Record);
    let player = ProviderRecorder::new(&dir, RecorderMode::Playback);
    let recording = providers(&server, recorder.transport(), Some("sk-test-0123456789"));
    let playing = providers(&server, player.transport(), None);
    for (inv, (live, replay)) in (0u32..).zip(recording.iter().zip(&playing)) {
        let rid = RecordingId::new("e2e.v1", "cut", live.name(), "reviewer", inv);
        let request = completion_request(&rid, true, false);
        let (recorded, live_deltas) = broke_off(live.as_ref(), &request).await;
        assert!(
            recorded.contains("broke off after 2 complete events"),
            "{recorded}"
        );
        let v = read_json(&player.recording_path(&rid));
        assert_eq!(v["response"]["truncated"], true, "{v}");
        let before = server.request_count();
        let (replayed, replay_deltas) = broke_off(replay.as_ref(), &request).await;
        assert_eq!(server.request_count(), before, "playback hit the upstream");
        assert_eq!(replayed, recorded, "{}", live.name());
        assert_eq!(replay_deltas.0, live_deltas.0, "{}", live.name());
    }
}

#[tokio::test]
async fn providers_record_then_play_back_identically() {
    const KEY: &str = "sk-CANARY-e2e-0123456789abcdef";
    let dir = fresh_dir("e2e");
    let server = FakeProviderServer::builder()
        .require_api_key(KEY)
        .write_chunk_size(7)
        .replies(vec![
            FakeReply::text("Line 1 subtracts: use `a + b`. ✓ done"),
            FakeReply::tool_call("run_tests", json!({"filter": "add"})),
            FakeReply::text("Streaming: the operator is wrong — `-` should be `+`."),
            FakeReply::tool_call("run_tests", json!({"filter": "math"})),
            FakeReply::text("Anthropic says: fix the sign."),
            FakeReply::tool_call("run_tests", json!({"filter": "all"})),
            FakeReply::text("Anthropic streaming: the sign is wrong."),
            FakeReply::tool_call("run_tests", json!({"filter": "sign"})),
        ])
        .start()
        .await
        .unwrap();
    let recorder = ProviderRecorder::new(&dir, RecorderMode::Record);
    let player = ProviderRecorder::new(&dir, RecorderMode::Playback);
    let recording = providers(&server, recorder.transport(), Some(KEY));
    // Playback needs no key.
    let playing = providers(&server, player.transport(), None);

    let mut inv = 0;
    for (live, replay) in recording.iter().zip(&playing) {
        for stream in [false, true] {
            for with_tools in [false, true] {
                let rid = RecordingId::new("e2e.v1", "review", live.name(), "reviewer", inv);
                inv += 1;
                let request = completion_request(&rid, stream, with_tools);
                let mut live_deltas = Deltas::default();
                let recorded = live
                    .complete(&request, &mut live_deltas)
                    .await
                    .unwrap_or_else(|e| {
                        panic!("{} stream={stream} tools={with_tools}: {e}", live.name())
                    });
                let before = server.request_count();
                let mut replay_deltas = Deltas::default();
                let replayed = replay
                    .complete(&request, &mut replay_deltas)
                    .await
                    .unwrap_or_else(|e| {
                        panic!("{} stream={stream} tools={with_tools}: {e}", live.name())
                    });
                assert_eq!(server.request_count(), before, "playback hit the upstream");
                assert_eq!(recorded, replayed, "{} stream={stream}", live.name());
                assert_eq!(live_deltas.0, replay_deltas.0);
                if stream && !with_tools {
                    assert!(
                        !live_deltas.0.is_empty(),
                        "{} streamed no deltas",
                        live.name()
                    );
                    let v = read_json(&player.recording_path(&rid));
                    assert!(
                        v["response"]["sse"].as_array().is_some_and(|a| a.len() > 2),
                        "{v}"
                    );
                }
                if with_tools {
                    assert_eq!(recorded.tool_calls.len(), 1, "{recorded:?}");
                }
            }
        }
    }
    for (path, text) in all_files(&dir) {
        assert!(
            !text.contains("CANARY"),
            "{} has the key:\n{text}",
            path.display()
        );
    }

    // A changed prompt is a playback error at the provider level, with the diff.
    let rid = RecordingId::new("e2e.v1", "review", "openai", "reviewer", 0);
    let mut changed = completion_request(&rid, false, false);
    changed.messages = vec![Message::user("Review: something else entirely")];
    let err = playing[0].complete(&changed, &mut ()).await.unwrap_err();
    let ProviderError::Playback { message } = &err else {
        panic!("expected ProviderError::Playback, got {err:?}")
    };
    assert!(message.contains("messages[1].content"), "{message}");
    assert!(
        message.contains("SCAFFOLD_MODE=record cargo test --test evals -- openai::review"),
        "{message}"
    );
    assert_eq!(err.code(), "playback");
}

/// Prints playback throughput beside a plain wiremock mock served through
/// the same HTTP client (the floor): `cargo test --release --test recorder
/// -- --ignored --nocapture playback_throughput`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark; prints figures"]
async fn playback_throughput() {
    const N: u32 = 5_000;
    const CONCURRENCY: usize = 32;
    let dir = fresh_dir("throughput");
    let answer = chat_answer("Hello there, this is a typical short answer.");
    let fake = {
        let answer = answer.clone();
        Fake::new(move |_| json_response(&answer))
    };
    let transport = ProviderRecorder::new(&dir, RecorderMode::Record)
        .inner(fake)
        .transport();
    for i in 0..N {
        transport
            .send(
                chat_request("https://api.openai.com", &format!("prompt {i}")),
                &ctx(&id("tp", i)),
            )
            .await
            .unwrap();
    }
    let plain = MockServer::builder()
        .disable_request_recording()
        .start()
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(&answer))
        .mount(&plain)
        .await;
    let plain_uri = plain.uri();
    let player = ProviderRecorder::new(&dir, RecorderMode::Playback)
        .inner(http())
        .transport();
    let direct = http();
    for round in 0..2 {
        for (label, use_player) in [("plain wiremock", false), ("playback", true)] {
            let cpu_before = process_cpu_seconds();
            let started = std::time::Instant::now();
            let lengths: Vec<usize> = futures_util::stream::iter(0..N)
                .map(|i| {
                    let transport = if use_player {
                        player.clone()
                    } else {
                        direct.clone()
                    };
                    let base = if use_player {
                        "https://api.openai.com".to_string()
                    } else {
                        plain_uri.clone()
                    };
                    async move {
                        let response = transport
                            .send(
                                chat_request(&base, &format!("prompt {i}")),
                                &ctx(&id("tp", i)),
                            )
                            .await
                            .unwrap();
                        body_bytes(response).await.len()
                    }
                })
                .buffer_unordered(CONCURRENCY)
                .collect()
                .await;
            assert!(lengths.iter().all(|&l| l > 0));
            let elapsed = started.elapsed();
            let cpu = process_cpu_seconds() - cpu_before;
            println!(
                "round {round} {label}: {N} calls at concurrency {CONCURRENCY}: \
                 {:.1} µs wall, {:.1} µs CPU (all threads) per call",
                elapsed.as_secs_f64() * 1e6 / f64::from(N),
                cpu * 1e6 / f64::from(N)
            );
        }
    }
}

/// User plus system CPU time of this process (Linux; 0 elsewhere).
fn process_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces) start at ")".
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 11 and 12 after ")".
    (ticks(11) + ticks(12)) / 100.0
}
