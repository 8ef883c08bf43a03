//! A workflow recorded against the fake provider server plays back with the
//! same signals, and the API key never reaches a file or a signal.

use scaffold::prelude::*;
use scaffold::provider::anthropic::Anthropic;
use scaffold::provider::openai::OpenAi;
use scaffold::provider::recorder::{ProviderRecorder, RecorderMode};
use scaffold::provider::transport::with_transport;
use scaffold::testing::FakeProviderServer;
use scaffold::workflow::RecordingScope;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const CANARY_OPENAI: &str = "sk-proj-canary-7c1e0d9a5b3f4e21";
const CANARY_ANTHROPIC: &str = "sk-ant-canary-0a9b8c7d6e5f4a3b";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Doc {
    topic: String,
    draft: String,
    review: String,
}

fn workflow(base_openai: &str, base_anthropic: &str) -> Workflow<Doc> {
    let writer = Agent::<Doc>::new("writer")
        .provider(
            OpenAi::new("gpt-4o-mini")
                .base_url(base_openai)
                .api_key(CANARY_OPENAI),
        )
        .stream(true)
        .prompt(|s| format!("Write about {}", s.topic))
        .update(|t, s| s.draft = t)
        .emits("draft:ready");
    let reviewer = Agent::<Doc>::new("reviewer")
        .provider(
            Anthropic::new("claude-haiku-4-5")
                .base_url(base_anthropic)
                .api_key(CANARY_ANTHROPIC),
        )
        .prompt(|s| format!("Review: {}", s.draft))
        .update(|t, s| s.review = t);
    Workflow::new("write-review", Doc::default())
        .start(|input, s| s.topic = input.as_str().unwrap_or_default().to_string())
        .phase("write", Phase::run(writer).next("review"))
        .phase("review", Phase::run(reviewer))
}

/// Signals without what legitimately varies between two runs: times.
fn comparable(signals: &[Signal]) -> Vec<(String, Value)> {
    signals
        .iter()
        .map(|s| {
            let mut payload = s.payload.clone();
            if let Some(obj) = payload.as_object_mut() {
                obj.remove("durationMs");
            }
            (s.name.clone(), payload)
        })
        .collect()
}

fn scope() -> RecordingScope {
    RecordingScope {
        dataset: "docs.v1".into(),
        case: "rust".into(),
        variant: "mini".into(),
        trial: None,
    }
}

#[tokio::test]
async fn recorded_run_plays_back_with_identical_signals_and_no_key() {
    let dir = std::env::temp_dir().join(format!("scaffold-rp-{}", uuid_like()));
    let server = FakeProviderServer::start().await.unwrap();
    let options = RunOptions::new().recording(scope());

    let recorder = ProviderRecorder::new(&dir, RecorderMode::Record);
    let wf = workflow(&server.openai_base_url(), &server.anthropic_base_url());
    let recorded =
        with_transport(recorder.transport(), run_with(&wf, json!("rust"), &options)).await;
    assert_eq!(recorded.error, None);
    assert!(recorded.signals.iter().any(|s| s.name == "text:delta"));
    assert!(
        recorded
            .signals
            .iter()
            .any(|s| s.name == "recording:linked")
    );
    let calls = server.request_count();
    assert_eq!(calls, 2);

    // Playback against a dead address: everything comes from the cassettes.
    let playback = ProviderRecorder::new(&dir, RecorderMode::Playback);
    let wf = workflow("http://127.0.0.1:9/v1", "http://127.0.0.1:9");
    let replayed =
        with_transport(playback.transport(), run_with(&wf, json!("rust"), &options)).await;
    assert_eq!(replayed.error, None);
    assert_eq!(
        server.request_count(),
        calls,
        "playback must not call the server"
    );
    assert_eq!(comparable(&recorded.signals), comparable(&replayed.signals));
    assert_eq!(recorded.state.review, replayed.state.review);
    assert_eq!(recorded.metrics.total_tokens, replayed.metrics.total_tokens);

    // The keys are nowhere: not in the cassettes, not in the signals.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!text.contains(CANARY_OPENAI) && !text.contains(CANARY_ANTHROPIC));
        assert!(!text.contains("canary"), "{text}");
    }
    let signals = serde_json::to_string(&replayed.signals).unwrap()
        + &serde_json::to_string(&recorded.signals).unwrap();
    assert!(!signals.contains("canary"));

    // A changed prompt is stale: the cell fails with the diff and the command.
    let edited = workflow("http://127.0.0.1:9/v1", "http://127.0.0.1:9")
        .with_agent("writer", |a| {
            a.prompt(|s: &Doc| format!("Write a poem about {}", s.topic))
        });
    let stale = with_transport(
        playback.transport(),
        run_with(&edited, json!("rust"), &options),
    )
    .await;
    let message = stale
        .error
        .expect("stale recording fails the run")
        .to_string();
    assert!(message.contains("Write a poem about rust"), "{message}");
    assert!(
        message.contains("SCAFFOLD_MODE=record cargo test --test evals"),
        "{message}"
    );
    assert!(stale.signals.iter().any(|s| s.name == "error:provider"));
    let _ = std::fs::remove_dir_all(&dir);
}

fn uuid_like() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    )
}

/// The cassette of `agent`'s first call in `dir`.
fn cassette(dir: &std::path::Path, agent: &str) -> Value {
    let id = scope().recording_id(agent, 0);
    let text = std::fs::read_to_string(dir.join(format!("{id}.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn ms(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not a whole number: {v}"))
}

/// Played back, a run's durations and timestamps are the recordings':
/// each call lasts its recorded duration, streamed text arrives at its
/// recorded first byte, work between calls takes no time, and two
/// playbacks give the same figures to the millisecond.
#[tokio::test]
async fn playback_keeps_virtual_time_from_the_recordings() {
    let dir = std::env::temp_dir().join(format!("scaffold-rp-time-{}", uuid_like()));
    let server = FakeProviderServer::builder()
        .latency(std::time::Duration::from_millis(40))
        .start()
        .await
        .unwrap();
    let recorder = ProviderRecorder::new(&dir, RecorderMode::Record);
    let wf = workflow(&server.openai_base_url(), &server.anthropic_base_url());
    let options = RunOptions::new().recording(scope());
    let recorded =
        with_transport(recorder.transport(), run_with(&wf, json!("rust"), &options)).await;
    assert_eq!(recorded.error, None);
    let (writer, reviewer) = (cassette(&dir, "writer"), cassette(&dir, "reviewer"));
    let duration = |c: &Value| ms(&c["timing"]["durationMs"]);
    assert!(duration(&writer) >= 40 && duration(&reviewer) >= 40);

    let playback = ProviderRecorder::new(&dir, RecorderMode::Playback);
    let wf = workflow("http://127.0.0.1:9/v1", "http://127.0.0.1:9");
    let options = options.virtual_time(true);
    let play = || with_transport(playback.transport(), run_with(&wf, json!("rust"), &options));
    let first = play().await;
    let second = play().await;
    assert_eq!(first.error, None);
    assert_eq!(first.signals, second.signals, "two playbacks differ");

    let ends: Vec<&Signal> = first
        .signals
        .iter()
        .filter(|s| s.name == "provider:end")
        .collect();
    assert_eq!(ms(&ends[0].payload["durationMs"]), duration(&writer));
    assert_eq!(ms(&ends[1].payload["durationMs"]), duration(&reviewer));
    let total = duration(&writer) + duration(&reviewer);
    let end = first.signals.last().unwrap();
    assert_eq!(end.name, "harness:end");
    assert_eq!((ms(&end.payload["durationMs"]), end.at_ms), (total, total));
    assert_eq!(first.duration.as_millis() as u64, total);
    assert_eq!(first.metrics.latency_ms, total);
    let delta = first
        .signals
        .iter()
        .find(|s| s.name == "text:delta")
        .unwrap();
    assert_eq!(delta.at_ms, ms(&writer["timing"]["firstByteMs"]));
    let _ = std::fs::remove_dir_all(&dir);
}

/// One agent asking OpenAI (at `base`) once, without streaming.
fn one_call(base: &str, retry: scaffold::provider::http::RetryPolicy) -> Workflow<Doc> {
    let writer = Agent::<Doc>::new("writer")
        .provider(
            OpenAi::new("gpt-4o-mini")
                .base_url(base)
                .api_key(CANARY_OPENAI)
                .retry(retry),
        )
        .prompt(|s| format!("Write about {}", s.topic))
        .update(|t, s| s.draft = t);
    Workflow::new("write", Doc::default())
        .start(|input, s| s.topic = input.as_str().unwrap_or_default().to_string())
        .phase("write", Phase::run(writer))
}

/// A call rate-limited once and then answered is recorded with its failed
/// attempt and the wait; played back, it takes no real time to wait and
/// reports the recorded time, the wait included.
#[tokio::test]
async fn a_recorded_429_then_200_plays_back_with_its_recorded_time_and_no_sleep() {
    use scaffold::provider::http::RetryPolicy;
    use scaffold::testing::Fault;
    let dir = std::env::temp_dir().join(format!("scaffold-rp-429-{}", uuid_like()));
    let wait = std::time::Duration::from_millis(1500);
    let server = FakeProviderServer::builder()
        .fault_plan(vec![Fault::RateLimited {
            retry_after: Some(wait),
        }])
        .start()
        .await
        .unwrap();
    let options = RunOptions::new().recording(scope());
    let recorder = ProviderRecorder::new(&dir, RecorderMode::Record);
    let wf = one_call(&server.openai_base_url(), RetryPolicy::new(3));
    let recorded =
        with_transport(recorder.transport(), run_with(&wf, json!("rust"), &options)).await;
    assert_eq!(recorded.error, None);
    assert_eq!(server.request_count(), 2);
    let c = cassette(&dir, "writer");
    assert_eq!(c["attempts"].as_array().map(Vec::len), Some(1), "{c}");
    assert_eq!(c["attempts"][0]["response"]["status"], 429);
    assert_eq!(c["response"]["status"], 200);
    let waited = ms(&c["attempts"][0]["waitMs"]);
    assert!(waited >= 1500, "{c}");
    let recorded_ms =
        ms(&c["attempts"][0]["timing"]["durationMs"]) + waited + ms(&c["timing"]["durationMs"]);

    let playback = ProviderRecorder::new(&dir, RecorderMode::Playback);
    let wf = one_call("http://127.0.0.1:9/v1", RetryPolicy::new(3));
    let options = options.virtual_time(true);
    let started = std::time::Instant::now();
    let replayed =
        with_transport(playback.transport(), run_with(&wf, json!("rust"), &options)).await;
    let real = started.elapsed();
    assert_eq!(replayed.error, None);
    assert_eq!(replayed.state.draft, recorded.state.draft);
    assert!(real < wait, "playback slept: {real:?}");
    let end = replayed
        .signals
        .iter()
        .find(|s| s.name == "provider:end")
        .unwrap();
    assert_eq!(ms(&end.payload["durationMs"]), recorded_ms);
    assert_eq!(replayed.metrics.latency_ms, recorded_ms);
    // The retry stays visible afterwards, live and played back alike.
    let attempts = |r: &scaffold::workflow::RunResult<Doc>| {
        r.signals
            .iter()
            .find(|s| s.name == "provider:end")
            .map(|s| s.payload["attempts"].clone())
    };
    assert_eq!(attempts(&recorded), Some(json!(2)));
    assert_eq!(attempts(&replayed), Some(json!(2)));

    // Whatever the clock (a judge's or an embedding's call has none of the
    // run's), a played-back failure is retried at once: never slept.
    let started = std::time::Instant::now();
    let real_clock = options.clone().virtual_time(false);
    let replayed = with_transport(
        playback.transport(),
        run_with(&wf, json!("rust"), &real_clock),
    )
    .await;
    assert_eq!(replayed.error, None);
    assert!(
        started.elapsed() < wait,
        "playback slept: {:?}",
        started.elapsed()
    );

    // A time limit shorter than the recorded call fails the played-back
    // run as it failed live, whatever the machine's speed.
    let limited = options
        .clone()
        .timeout(std::time::Duration::from_millis(waited / 2));
    let cut = with_transport(playback.transport(), run_with(&wf, json!("rust"), &limited)).await;
    let error = cut
        .error
        .expect("the limit passed in recorded time")
        .to_string();
    assert!(error.contains("timed out after"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A re-record that fails (the API is down) never replaces a recording
/// that succeeded.
#[tokio::test]
async fn a_failed_re_record_keeps_the_good_recording() {
    use scaffold::provider::http::RetryPolicy;
    use scaffold::testing::Fault;
    let dir = std::env::temp_dir().join(format!("scaffold-rp-keep-{}", uuid_like()));
    let server = FakeProviderServer::start().await.unwrap();
    let options = RunOptions::new().recording(scope());
    // Every call re-recorded (by default, the recording would answer it).
    let recorder = ProviderRecorder::new(&dir, RecorderMode::Record)
        .record_policy(scaffold::provider::recorder::RecordPolicy::All);
    let wf = one_call(&server.openai_base_url(), RetryPolicy::none());
    let good = with_transport(recorder.transport(), run_with(&wf, json!("rust"), &options)).await;
    assert_eq!(good.error, None);
    let path = dir.join(format!("{}.json", scope().recording_id("writer", 0)));
    let before = std::fs::read_to_string(&path).unwrap();

    // The API down, then the key rejected: neither replaces the recording.
    let unauthorized = Fault::Status {
        status: 401,
        headers: Vec::new(),
        body: r#"{"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}"#
            .into(),
    };
    for fault in [Fault::ServerError, unauthorized] {
        server.set_fault_plan(vec![fault]);
        let failed =
            with_transport(recorder.transport(), run_with(&wf, json!("rust"), &options)).await;
        assert!(failed.error.is_some());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A call that failed after its retries says how many attempts it took on
/// `provider:error`; one that took one attempt says nothing of it.
#[tokio::test]
async fn a_call_that_ran_out_of_retries_says_how_many_attempts_it_took() {
    use scaffold::provider::http::RetryPolicy;
    use scaffold::testing::Fault;
    let server = FakeProviderServer::builder()
        .fault_plan(vec![
            Fault::ServerError,
            Fault::ServerError,
            Fault::ServerError,
        ])
        .start()
        .await
        .unwrap();
    let policy = RetryPolicy::new(3).base_delay(std::time::Duration::from_millis(1));
    let wf = one_call(&server.openai_base_url(), policy.clone());
    let failed = run_with(&wf, json!("rust"), &RunOptions::new()).await;
    let error = failed
        .signals
        .iter()
        .find(|s| s.name == "provider:error")
        .expect("provider:error");
    assert_eq!(error.payload["attempts"], 3, "{}", error.payload);
    let answered = run_with(&wf, json!("rust"), &RunOptions::new()).await;
    let end = answered
        .signals
        .iter()
        .find(|s| s.name == "provider:end")
        .expect("provider:end");
    assert!(end.payload.get("attempts").is_none(), "{}", end.payload);
}
