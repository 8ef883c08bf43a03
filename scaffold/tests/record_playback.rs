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
