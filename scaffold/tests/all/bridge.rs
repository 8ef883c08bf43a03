//! Agents written on other code (here: a hand-written tool loop over plain
//! reqwest) run through the agent bridge: recorded from the fake provider,
//! played back without it, their signals read from their traffic, and
//! their failures told.

use std::path::Path;

use scaffold::_cargo_scaffold_support::eval::{CellEnv, CellResult};
use scaffold::_cargo_scaffold_support::provider::bridge::BridgeHost;
use scaffold::dataset::{Format, load_str};
use scaffold::prelude::*;
use scaffold::provider::anthropic::Anthropic;
use scaffold::provider::recorder::{ProviderRecorder, RecorderMode};
use scaffold::testing::{Answer, FakeProviderServer, Rule};
use serde_json::{Value, json};

/// A weather agent on plain reqwest: chat completions with one tool, the
/// loop written by hand, as a team would have it before scaffold.
async fn weather_agent(cx: AgentCx) -> Result<String, String> {
    let client = http_client();
    let url = format!("{}/chat/completions", cx.openai_base_url("forecaster"));
    let model = cx.variant().model.clone().unwrap_or_default();
    let mut messages = vec![
        json!({"role": "system", "content": cx.variant().prompt.clone().unwrap_or_default()}),
        json!({"role": "user", "content": cx.input_text()}),
    ];
    let tools = json!([{"type": "function", "function": {
        "name": "get_weather",
        "description": "Today's weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
    for _ in 0..4 {
        let body = json!({"model": model, "messages": messages, "tools": tools});
        let answer = post(&client, &url, &cx.openai_api_key(), &body).await?;
        let message = answer["choices"][0]["message"].clone();
        let calls = message["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if calls.is_empty() {
            return Ok(message["content"].as_str().unwrap_or_default().to_string());
        }
        messages.push(message.clone());
        for call in calls {
            let arguments: Value =
                serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}"))
                    .map_err(|e| e.to_string())?;
            let city = arguments["city"].as_str().unwrap_or("nowhere");
            cx.emit("weather:looked-up", json!({"city": city}));
            messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": format!("sunny in {city}")}));
        }
        cx.state(&json!({"turns": messages.len()}));
    }
    Err("still calling tools after 4 rounds".into())
}

fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    body: &Value,
) -> Result<Value, String> {
    let response = client
        .post(url)
        .bearer_auth(key)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status();
    let text = response.text().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("HTTP {status}: {text}"));
    }
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

const DATASET: &str = r#"
name: weather
cases:
  - id: paris
    input: "What is the weather in Paris?"
    assertions:
      - type: tool.called
        name: get_weather
      - type: tool.calledWith
        name: get_weather
        args: {city: Paris}
      - type: signal.trajectory
        patterns: ["provider:end", "tool:call", "tool:result", "provider:end"]
      - type: output.contains
        text: sunny
      - type: signal.contains
        pattern: "weather:looked-up"
      - type: snapshot.final
        path: turns
        value: 4
"#;

async fn fake() -> FakeProviderServer {
    FakeProviderServer::builder()
        .rule(
            Rule::when()
                .tool_result_contains("sunny")
                .then(Answer::text("It is sunny in Paris today.").usage(40, 8)),
        )
        .rule(
            Rule::when()
                .then(Answer::tool_call("get_weather", json!({"city": "Paris"})).usage(30, 5)),
        )
        .start()
        .await
        .expect("fake provider")
}

fn eval(upstream: &str, prompt: &str) -> Eval<AgentState> {
    Eval::new()
        .name("weather")
        .agent(weather_agent)
        .variant("mini", Variant::new().model("gpt-4o-mini").prompt(prompt))
        .bridge_openai(OpenAi::new("").base_url(upstream))
        .dataset(load_str(DATASET, Format::Yaml, "weather.yaml").expect("dataset"))
}

/// A cell's environment with a recorder on `dir` in `mode` (also the
/// program agents' tests').
pub(crate) fn env(dir: &Path, mode: RecorderMode) -> CellEnv {
    let recorder = ProviderRecorder::new(dir, mode);
    CellEnv {
        store: None,
        transport: Some(recorder.transport()),
        virtual_time: mode == RecorderMode::Playback,
        tools: Some(recorder.tools()),
        recorder: Some(recorder),
        bridges: Some(BridgeHost::new()),
    }
}

/// The result and the run of `eval`'s first cell.
pub(crate) async fn run_cell(
    eval: &Eval<AgentState>,
    env: &CellEnv,
) -> (CellResult, RunResult<AgentState>) {
    let cell = eval.cells().next().expect("one cell");
    eval.run_cell(&cell, env).await
}

fn names(signals: &[Signal]) -> Vec<String> {
    signals.iter().map(|s| s.name.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reqwest_agent_is_recorded_then_played_back_with_its_tool_trajectory() {
    let server = fake().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let eval = eval(&server.openai_base_url(), "You report the weather.");

    let (recorded, run_recorded) = run_cell(&eval, &env(dir.path(), RecorderMode::Record)).await;
    assert!(recorded.passed, "{:#?}", recorded.failures());
    assert_eq!(server.request_count(), 2);
    for inv in 0..2 {
        let file = dir.path().join(format!(
            "eval__weather__paris__mini__forecaster__inv{inv}.json"
        ));
        assert!(file.exists(), "{}", file.display());
    }
    assert_eq!(recorded.output, Some(json!("It is sunny in Paris today.")));
    assert_eq!(recorded.metrics.input_tokens, 70);

    let (played, run_played) = run_cell(&eval, &env(dir.path(), RecorderMode::Playback)).await;
    assert!(played.passed, "{:#?}", played.failures());
    assert_eq!(
        server.request_count(),
        2,
        "playback sent nothing to the API"
    );
    assert_eq!(names(&run_played.signals), names(&run_recorded.signals));
    assert_eq!(
        names(&run_played.signals),
        [
            "harness:start",
            "agent:activated",
            "recording:linked",
            "provider:start",
            "provider:end",
            "tool:call",
            "weather:looked-up",
            "state:turns:changed",
            "recording:linked",
            "tool:result",
            "provider:start",
            "provider:end",
            "agent:completed",
            "harness:end"
        ]
    );
    let tool_result = run_played
        .signals
        .iter()
        .find(|s| s.name == "tool:result")
        .expect("tool:result");
    assert_eq!(tool_result.payload["name"], "get_weather");
    assert_eq!(tool_result.payload["result"], "sunny in Paris");
    let end = run_played
        .signals
        .iter()
        .find(|s| s.name == "provider:end")
        .expect("provider:end");
    assert_eq!(
        end.payload["usage"],
        json!({"inputTokens": 30, "outputTokens": 5})
    );
    assert!(
        end.payload["costUsd"].as_f64().is_some_and(|c| c > 0.0),
        "{end:?}"
    );

    // Playback is virtual time: the same figures every run.
    let (again, _) = run_cell(&eval, &env(dir.path(), RecorderMode::Playback)).await;
    assert_eq!(again.metrics, played.metrics);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_prompt_fails_playback_with_the_diff_and_the_rerecord_command() {
    let server = fake().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (recorded, _) = run_cell(
        &eval(&server.openai_base_url(), "You report the weather."),
        &env(dir.path(), RecorderMode::Record),
    )
    .await;
    assert!(recorded.passed, "{:#?}", recorded.failures());

    let changed = eval(&server.openai_base_url(), "You report the weather tersely.");
    let (played, run) = run_cell(&changed, &env(dir.path(), RecorderMode::Playback)).await;
    assert!(!played.passed);
    let error = played.error.clone().unwrap_or_default();
    assert!(error.contains("differs from recording"), "{error}");
    assert!(error.contains("tersely"), "{error}");
    assert!(error.contains("SCAFFOLD_MODE=record"), "{error}");
    assert!(
        matches!(
            run.error,
            Some(scaffold::workflow::RunError::Provider { .. })
        ),
        "{:?}",
        run.error
    );
    assert_eq!(server.request_count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_recording_names_its_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let eval = eval("http://127.0.0.1:9/v1", "You report the weather.");
    let (played, _) = run_cell(&eval, &env(dir.path(), RecorderMode::Playback)).await;
    let error = played.error.unwrap_or_default();
    assert!(
        error.contains("no recording `eval__weather__paris__mini__forecaster__inv0`"),
        "{error}"
    );
}

async fn panicking(cx: AgentCx) -> Result<String, String> {
    if cx.input_text().contains("Paris") {
        panic!("the agent broke on {}", cx.input_text());
    }
    Ok(String::new())
}

async fn failing(_cx: AgentCx) -> Result<String, std::io::Error> {
    Err(std::io::Error::other("the agent's own error"))
}

async fn off_the_map(cx: AgentCx) -> Result<String, String> {
    let url = format!("{}/nowhere/v1/chat/completions", cx.bridge_url());
    post(&http_client(), &url, "k", &json!({}))
        .await
        .map(|answer| answer.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panics_errors_and_stray_paths_fail_the_cell_with_what_happened() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dataset = || load_str(DATASET, Format::Yaml, "weather.yaml").expect("dataset");
    let variant = || Variant::new().model("m");

    let eval = Eval::<AgentState>::new()
        .name("e")
        .agent(panicking)
        .variant("v", variant())
        .dataset(dataset());
    let (result, run) = run_cell(&eval, &env(dir.path(), RecorderMode::Playback)).await;
    let error = result.error.unwrap_or_default();
    assert!(error.contains("the agent panicked at "), "{error}");
    assert!(error.contains("bridge.rs:"), "{error}");
    assert!(
        error.contains("the agent broke on What is the weather in Paris?"),
        "{error}"
    );
    assert!(run.signals.iter().any(|s| s.name == "error:workflow"));

    let eval = Eval::<AgentState>::new()
        .name("e")
        .agent(failing)
        .variant("v", variant())
        .dataset(dataset());
    let (result, _) = run_cell(&eval, &env(dir.path(), RecorderMode::Playback)).await;
    assert_eq!(
        result.error.as_deref(),
        Some("agent: the agent failed: the agent's own error")
    );

    let eval = Eval::<AgentState>::new()
        .name("e")
        .agent(off_the_map)
        .variant("v", variant())
        .dataset(dataset());
    let (result, _) = run_cell(&eval, &env(dir.path(), RecorderMode::Playback)).await;
    let error = result.error.unwrap_or_default();
    assert!(error.contains("/nowhere/v1/chat/completions"), "{error}");
    assert!(
        error.contains("not under a base URL it handed out"),
        "{error}"
    );
    assert!(error.contains("cx.openai_base_url"), "{error}");
}

#[test]
fn a_variant_that_is_data_needs_an_agent() {
    let eval = Eval::<AgentState>::new()
        .name("e")
        .variant("v", Variant::new().model("m"))
        .dataset(load_str(DATASET, Format::Yaml, "weather.yaml").expect("dataset"));
    let erased = scaffold::__private::erase(eval);
    let error = erased.check().unwrap_err();
    assert!(error.contains("no agent runs it"), "{error}");
    assert!(error.contains("Eval::agent"), "{error}");
}

/// Which of two parallel calls an agent sends first, switched between
/// runs to show that playback does not depend on arrival order.
static BETA_FIRST: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

async fn ask(cx: &AgentCx, agent: &str, question: &str, delay_ms: u64) -> Result<String, String> {
    tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
    let url = format!("{}/chat/completions", cx.openai_base_url(agent));
    let body = json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": question}]});
    let answer = post(&http_client(), &url, &cx.openai_api_key(), &body).await?;
    Ok(answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

/// Two agents at once, and one agent asking two questions at once.
async fn parallel_agents(cx: AgentCx) -> Result<String, String> {
    let beta_first = BETA_FIRST.load(std::sync::atomic::Ordering::SeqCst);
    let (early, late) = (0, 60);
    let (a, b) = if beta_first {
        (late, early)
    } else {
        (early, late)
    };
    let told = |agent: &'static str, answer: Result<String, String>| {
        if let Ok(text) = &answer {
            cx.emit_as(agent, "capital:found", json!({"capital": text}));
        }
        answer
    };
    let (alpha, beta, g1, g2) = tokio::join!(
        async {
            told(
                "alpha",
                ask(&cx, "alpha", "alpha: capital of France?", a).await,
            )
        },
        async { told("beta", ask(&cx, "beta", "beta: capital of Italy?", b).await) },
        ask(&cx, "gamma", "gamma: capital of Spain?", a),
        ask(&cx, "gamma", "gamma: capital of Japan?", b),
    );
    Ok(format!("{}|{}|{}|{}", alpha?, beta?, g1?, g2?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_calls_are_matched_by_content_and_told_in_one_order() {
    let server = FakeProviderServer::builder()
        .rule(
            Rule::when()
                .prompt_contains("France")
                .then(Answer::text("Paris")),
        )
        .rule(
            Rule::when()
                .prompt_contains("Italy")
                .then(Answer::text("Rome")),
        )
        .rule(
            Rule::when()
                .prompt_contains("Spain")
                .then(Answer::text("Madrid")),
        )
        .rule(
            Rule::when()
                .prompt_contains("Japan")
                .then(Answer::text("Tokyo")),
        )
        .start()
        .await
        .expect("fake provider");
    let dir = tempfile::tempdir().expect("tempdir");
    let eval = Eval::<AgentState>::new()
        .name("parallel")
        .agent(parallel_agents)
        .variant("v", Variant::new())
        .bridge_openai(OpenAi::new("").base_url(server.openai_base_url()))
        .dataset(
            load_str(
                "name: p\ncases:\n  - id: c\n    input: go\n    assertions:\n      - type: output.equals\n        value: Paris|Rome|Madrid|Tokyo\n",
                Format::Yaml,
                "p.yaml",
            )
            .expect("dataset"),
        );
    BETA_FIRST.store(false, std::sync::atomic::Ordering::SeqCst);
    let (recorded, _) = run_cell(&eval, &env(dir.path(), RecorderMode::Record)).await;
    assert!(recorded.passed, "{:#?}", recorded.failures());

    let mut told = Vec::new();
    for beta_first in [false, true, true, false] {
        BETA_FIRST.store(beta_first, std::sync::atomic::Ordering::SeqCst);
        let (played, run) = run_cell(&eval, &env(dir.path(), RecorderMode::Playback)).await;
        assert!(
            played.passed,
            "beta first {beta_first}: {:#?}",
            played.failures()
        );
        let signals: Vec<(String, Option<String>, Value, u64)> = run
            .signals
            .iter()
            .map(|s| (s.name.clone(), s.agent.clone(), s.payload.clone(), s.at_ms))
            .collect();
        told.push(signals);
    }
    assert_eq!(server.request_count(), 4, "playback sent nothing");
    let found: Vec<(&str, Option<&str>)> = told[0]
        .iter()
        .map(|s| (s.0.as_str(), s.1.as_deref()))
        .filter(|s| s.0 == "capital:found" || s.0 == "provider:end")
        .collect();
    for agent in ["alpha", "beta"] {
        let end = found
            .iter()
            .position(|s| *s == ("provider:end", Some(agent)));
        let emitted = found
            .iter()
            .position(|s| *s == ("capital:found", Some(agent)));
        assert!(
            end < emitted,
            "{agent}'s signal comes after its answer: {found:?}"
        );
    }
    for other in &told[1..] {
        assert_eq!(
            other, &told[0],
            "playback told the same signals whatever arrived first"
        );
    }
    // Told in the order the calls were recorded in.
    let ids: Vec<String> = told[0]
        .iter()
        .filter(|s| s.0 == "provider:start")
        .map(|s| s.2["recordingId"].as_str().unwrap_or_default().to_string())
        .collect();
    let mut by_order = ids.clone();
    by_order.sort_by_key(|id| {
        let text =
            std::fs::read_to_string(dir.path().join(format!("{id}.json"))).expect("recording");
        serde_json::from_str::<Value>(&text).expect("json")["order"].as_u64()
    });
    assert_eq!(ids, by_order);
    assert_eq!(ids.len(), 4);
}

/// An agent that streams, from either API, reading the events itself.
async fn streaming_agent(cx: AgentCx) -> Result<String, String> {
    let anthropic = cx.variant().get("api") == Some(&json!("anthropic"));
    let question = cx.input_text();
    let (url, body) = if anthropic {
        (
            format!("{}/v1/messages", cx.anthropic_base_url("writer")),
            json!({"model": "claude-haiku-4-5", "max_tokens": 256, "stream": true, "messages": [{"role": "user", "content": question}]}),
        )
    } else {
        (
            format!("{}/chat/completions", cx.openai_base_url("writer")),
            json!({"model": "gpt-4o-mini", "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": question}]}),
        )
    };
    let response = http_client()
        .post(url)
        .header("x-api-key", cx.anthropic_api_key())
        .header("anthropic-version", "2023-06-01")
        .bearer_auth(cx.openai_api_key())
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let events = response.text().await.map_err(|e| e.to_string())?;
    let mut text = String::new();
    for data in events.lines().filter_map(|l| l.strip_prefix("data: ")) {
        let Ok(event) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        let piece = if anthropic {
            event["delta"]["text"].as_str()
        } else {
            event["choices"][0]["delta"]["content"].as_str()
        };
        text.push_str(piece.unwrap_or_default());
    }
    Ok(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_pass_through_and_play_back_for_both_apis() {
    let server = FakeProviderServer::builder()
        .rule(Rule::when().then(Answer::text("A long streamed answer about rivers.")))
        .start()
        .await
        .expect("fake provider");
    let dir = tempfile::tempdir().expect("tempdir");
    let eval = Eval::<AgentState>::new()
        .name("streams")
        .agent(streaming_agent)
        .variant("openai", Variant::new().setting("api", "openai"))
        .variant("anthropic", Variant::new().setting("api", "anthropic"))
        .bridge_openai(OpenAi::new("").base_url(server.openai_base_url()))
        .bridge_anthropic(Anthropic::new("").base_url(server.anthropic_base_url()))
        .dataset(
            load_str(
                "name: s\ncases:\n  - id: rivers\n    input: Tell me about rivers\n    assertions:\n      - type: output.equals\n        value: A long streamed answer about rivers.\n      - type: metric.tokens.max\n        value: 1000\n",
                Format::Yaml,
                "s.yaml",
            )
            .expect("dataset"),
        );
    for mode in [RecorderMode::Record, RecorderMode::Playback] {
        for cell in eval.cells() {
            let (result, run) = eval.run_cell(&cell, &env(dir.path(), mode)).await;
            assert!(
                result.passed,
                "{mode} {}: {:#?}",
                result.id,
                result.failures()
            );
            let end = run
                .signals
                .iter()
                .find(|s| s.name == "provider:end")
                .expect("provider:end");
            assert_eq!(
                end.payload["output"], "A long streamed answer about rivers.",
                "{mode}"
            );
            assert!(
                end.payload["usage"]["outputTokens"].as_u64().unwrap_or(0) > 0,
                "{end:?}"
            );
            assert!(
                run.signals.iter().any(|s| s.name == "text:complete"),
                "{mode}"
            );
        }
    }
    assert_eq!(server.request_count(), 2);
}

/// One chat completion, the answer's text; the HTTP status in the error.
async fn one_call(cx: AgentCx) -> Result<String, String> {
    ask(&cx, "agent", &cx.input_text(), 0).await
}

/// `n` calls at once.
async fn four_at_once(cx: AgentCx) -> Result<String, String> {
    let (a, b, c, d) = tokio::join!(
        ask(&cx, "agent", "one", 0),
        ask(&cx, "agent", "two", 0),
        ask(&cx, "agent", "three", 0),
        ask(&cx, "agent", "four", 0),
    );
    Ok([a?, b?, c?, d?].join(","))
}

fn one_case(input: &str) -> scaffold::dataset::Dataset {
    load_str(
        &format!("name: one\ncases:\n  - id: c\n    input: {input}\n    assertions: []\n"),
        Format::Yaml,
        "one.yaml",
    )
    .expect("dataset")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn retries_rate_limits_and_time_limits_hold_for_bridged_calls() {
    use scaffold::provider::RateLimit;
    use scaffold::testing::Fault;
    use std::time::{Duration, Instant};

    // A 429 is retried by the bridge, recorded with its attempt, and
    // played back the same: the agent sees one answer.
    let server = FakeProviderServer::builder()
        .fault_plan(vec![Fault::RateLimited {
            retry_after: Some(Duration::from_millis(20)),
        }])
        .start()
        .await
        .expect("fake provider");
    let dir = tempfile::tempdir().expect("tempdir");
    let eval = Eval::<AgentState>::new()
        .name("retry")
        .agent(one_call)
        .variant("v", Variant::new())
        .bridge_openai(OpenAi::new("").base_url(server.openai_base_url()))
        .dataset(one_case("hello"));
    for mode in [RecorderMode::Record, RecorderMode::Playback] {
        let (result, run) = run_cell(&eval, &env(dir.path(), mode)).await;
        assert!(result.passed, "{mode}: {:#?}", result.failures());
        let end = run
            .signals
            .iter()
            .find(|s| s.name == "provider:end")
            .expect("provider:end");
        assert_eq!(end.payload["attempts"], 2, "{mode}: {end:?}");
    }
    assert_eq!(server.request_count(), 2, "the 429 and its retry, once");

    // A rate limit on the upstream provider holds for the agent's
    // parallel calls.
    let server = FakeProviderServer::builder()
        .latency(Duration::from_millis(30))
        .start()
        .await
        .expect("fake provider");
    let eval = Eval::<AgentState>::new()
        .name("limited")
        .agent(four_at_once)
        .variant("v", Variant::new())
        .bridge_openai(
            OpenAi::new("")
                .base_url(server.openai_base_url())
                .rate_limit(RateLimit::none().concurrent(1)),
        )
        .dataset(one_case("go"));
    let (result, _) = run_cell(&eval, &env(dir.path(), RecorderMode::Live)).await;
    assert!(result.passed, "{:#?}", result.failures());
    assert_eq!(server.request_count(), 4);
    assert_eq!(server.max_in_flight(), 1, "one call at a time");

    // A cell's time limit stops an agent whose API does not answer.
    let server = FakeProviderServer::builder()
        .fault_plan(vec![Fault::Hang])
        .start()
        .await
        .expect("fake provider");
    let eval = Eval::<AgentState>::new()
        .name("slow")
        .agent(one_call)
        .variant("v", Variant::new())
        .bridge_openai(OpenAi::new("").base_url(server.openai_base_url()))
        .timeout(Duration::from_millis(300))
        .dataset(one_case("hello"));
    let started = Instant::now();
    let (result, run) = run_cell(&eval, &env(dir.path(), RecorderMode::Live)).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    let error = result.error.unwrap_or_default();
    assert!(error.contains("timed out after"), "{error}");
    assert!(run.signals.iter().any(|s| s.name == "error:timeout"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_agent_sends_is_nowhere_even_when_the_api_echoes_it() {
    const CANARY: &str = "sk-proj-CANARYbridged0123456789abcdef";
    let server = FakeProviderServer::builder()
        .require_api_key("sk-proj-the-right-key-000000000000")
        .start()
        .await
        .expect("fake provider");
    async fn with_canary(cx: AgentCx) -> Result<String, String> {
        let url = format!("{}/chat/completions", cx.openai_base_url("agent"));
        let body = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]});
        post(&http_client(), &url, CANARY, &body)
            .await
            .map(|answer| answer.to_string())
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("scaffold.db");
    let store = Store::open(&db).expect("store");
    let eval = Eval::<AgentState>::new()
        .name("secrets")
        .agent(with_canary)
        .variant("v", Variant::new())
        .bridge_openai(
            OpenAi::new("")
                .base_url(server.openai_base_url())
                .retry(scaffold::provider::http::RetryPolicy::none()),
        )
        .dataset(one_case("hi"));
    let mut env = env(dir.path(), RecorderMode::Record);
    env.store = Some(store.clone());
    let (result, run) = run_cell(&eval, &env).await;
    let error = result.error.clone().unwrap_or_default();
    assert!(
        error.contains("401") && error.contains("[REDACTED]"),
        "the API echoed it: {error}"
    );
    store.flush().expect("flush");
    let mut written = format!(
        "{result:?} {:?} {}",
        result.failures(),
        serde_json::to_string(&run.signals).expect("json")
    );
    for entry in std::fs::read_dir(dir.path()).expect("dir") {
        let bytes = std::fs::read(entry.expect("entry").path()).expect("read");
        written.push_str(&String::from_utf8_lossy(&bytes));
    }
    assert!(!written.contains(CANARY), "the key was written");
    assert!(
        !written.contains("CANARYbridged"),
        "a piece of the key was written"
    );
}

/// The cell's bridge root, kept for a call after the cell ended.
static LAST_ROOT: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

async fn remembering(cx: AgentCx) -> Result<String, String> {
    *LAST_ROOT.lock().unwrap_or_else(|e| e.into_inner()) = cx.openai_base_url("agent");
    ask(&cx, "agent", &cx.input_text(), 0).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cells_of_a_run_share_one_server_and_a_late_call_finds_its_cell_ended() {
    let server = FakeProviderServer::start().await.expect("fake provider");
    let dir = tempfile::tempdir().expect("tempdir");
    let eval = Eval::<AgentState>::new()
        .name("shared")
        .agent(remembering)
        .variant("a", Variant::new())
        .variant("b", Variant::new().model("m"))
        .bridge_openai(OpenAi::new("").base_url(server.openai_base_url()))
        .dataset(one_case("hello"));
    let env = env(dir.path(), RecorderMode::Live);
    let mut roots = Vec::new();
    for cell in eval.cells() {
        let (result, _) = eval.run_cell(&cell, &env).await;
        assert!(result.passed, "{:#?}", result.failures());
        roots.push(LAST_ROOT.lock().unwrap_or_else(|e| e.into_inner()).clone());
    }
    let port = |root: &str| root.split('/').nth(2).map(str::to_string);
    assert_eq!(port(&roots[0]), port(&roots[1]), "one server: {roots:?}");
    assert_ne!(roots[0], roots[1], "a path each");
    let late = post(
        &http_client(),
        &format!("{}/chat/completions", roots[0]),
        "k",
        &json!({"model": "m", "messages": []}),
    )
    .await
    .unwrap_err();
    assert!(
        late.contains("404") && late.contains("its cell has ended"),
        "{late}"
    );
}

/// Embeddings: a path the bridge reads nothing of, passed on, recorded and
/// played back as it is; and a `user` field that changes every run.
async fn embedder(cx: AgentCx) -> Result<String, String> {
    let url = format!("{}/embeddings", cx.openai_base_url("embedder"));
    let run = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let body = json!({"model": "text-embedding-3-small", "input": ["a", "b"], "user": format!("run-{run}")});
    let answer = post(&http_client(), &url, &cx.openai_api_key(), &body).await?;
    Ok(format!(
        "{} vectors",
        answer["data"].as_array().map_or(0, Vec::len)
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_paths_pass_through_and_matching_forgives_what_the_rules_say() {
    use scaffold::provider::recorder::MatchRules;
    let server = FakeProviderServer::builder()
        .embedding_dimensions(3)
        .start()
        .await
        .expect("fake provider");
    let dir = tempfile::tempdir().expect("tempdir");
    let eval = |rules: MatchRules| {
        Eval::<AgentState>::new()
            .name("embed")
            .agent(embedder)
            .variant("v", Variant::new())
            .bridge_openai(OpenAi::new("").base_url(server.openai_base_url()))
            .match_requests(rules)
            .dataset(one_case("x"))
    };
    let with_rules = |mode, rules: MatchRules| {
        let mut env = env(dir.path(), mode);
        let recorder = ProviderRecorder::new(dir.path(), mode).match_requests(rules);
        env.transport = Some(recorder.transport());
        env.recorder = Some(recorder);
        env
    };
    let (recorded, _) = run_cell(
        &eval(MatchRules::default()),
        &with_rules(RecorderMode::Record, MatchRules::default()),
    )
    .await;
    assert_eq!(
        recorded.output,
        Some(json!("2 vectors")),
        "{:?}",
        recorded.error
    );
    let erased = scaffold::__private::erase(eval(MatchRules::exact()));
    assert_eq!(
        erased.match_rules(),
        MatchRules::exact(),
        "the harness gets the eval's rules"
    );

    // The default rules forgive `user`: played back, with provider signals.
    let (played, run) = run_cell(
        &eval(MatchRules::default()),
        &with_rules(RecorderMode::Playback, MatchRules::default()),
    )
    .await;
    assert!(played.passed, "{:#?}", played.failures());
    assert_eq!(played.output, Some(json!("2 vectors")));
    let end = run
        .signals
        .iter()
        .find(|s| s.name == "provider:end")
        .expect("provider:end");
    assert!(
        end.payload.get("output").is_none(),
        "nothing read of it: {end:?}"
    );
    assert_eq!(server.request_count(), 1);

    // Rules that forgive nothing: the changed `user` is a stale recording.
    let (strict, _) = run_cell(
        &eval(MatchRules::exact()),
        &with_rules(RecorderMode::Playback, MatchRules::exact()),
    )
    .await;
    let error = strict.error.unwrap_or_default();
    assert!(error.contains("user: \"run-"), "{error}");
}

#[tokio::test]
async fn a_bridged_agent_is_not_forked() {
    let eval = Eval::<AgentState>::new()
        .name("fork")
        .agent(one_call)
        .variant("v", Variant::new())
        .fork_from(ForkFrom::session("parent").at(ForkPoint::phase("p").first()))
        .dataset(one_case("x"));
    let dir = tempfile::tempdir().expect("tempdir");
    let (result, _) = run_cell(&eval, &env(dir.path(), RecorderMode::Playback)).await;
    let error = result.error.unwrap_or_default();
    assert!(error.contains("a bridged agent"), "{error}");
    assert!(error.contains("remove fork_from"), "{error}");
}

/// An agent whose client ignores the cell's base URL (a hard-coded API).
async fn hard_coded(_cx: AgentCx) -> Result<String, String> {
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hello"}]});
    post(
        &http_client(),
        "http://127.0.0.1:9/v1/chat/completions",
        "k",
        &body,
    )
    .await
    .map(|answer| answer.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_playback_an_agent_that_goes_around_its_bridge_is_told_so() {
    let server = FakeProviderServer::start().await.expect("fake provider");
    let dir = tempfile::tempdir().expect("tempdir");
    let eval = |agent_is_bridged: bool| {
        let eval = Eval::<AgentState>::new().name("around");
        let eval = if agent_is_bridged {
            eval.agent(one_call)
        } else {
            eval.agent(hard_coded)
        };
        eval.variant("v", Variant::new())
            .bridge_openai(OpenAi::new("").base_url(server.openai_base_url()))
            .dataset(one_case("hello"))
    };
    let (recorded, _) = run_cell(&eval(true), &env(dir.path(), RecorderMode::Record)).await;
    assert!(recorded.passed, "{:#?}", recorded.failures());
    let (played, _) = run_cell(&eval(false), &env(dir.path(), RecorderMode::Playback)).await;
    let error = played.error.unwrap_or_default();
    assert!(
        error.contains("made no call through the cell's base URLs"),
        "{error}"
    );
    assert!(error.contains("eval__one__c__v__agent__inv0"), "{error}");
    assert!(error.contains("cx.openai_base_url"), "{error}");
}
