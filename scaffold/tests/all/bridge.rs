//! Agents written on other code (here: a hand-written tool loop over plain
//! reqwest) run through the agent bridge: recorded from the fake provider,
//! played back without it, their signals read from their traffic, and
//! their failures told.

use std::path::Path;

use scaffold::_cargo_scaffold_support::eval::{CellEnv, CellResult};
use scaffold::dataset::{Format, load_str};
use scaffold::prelude::*;
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

fn env(dir: &Path, mode: RecorderMode) -> CellEnv {
    let recorder = ProviderRecorder::new(dir, mode);
    CellEnv {
        store: None,
        transport: Some(recorder.transport()),
        virtual_time: mode == RecorderMode::Playback,
        tools: Some(recorder.tools()),
        recorder: Some(recorder),
    }
}

async fn run_cell(eval: &Eval<AgentState>, env: &CellEnv) -> (CellResult, RunResult<AgentState>) {
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
