//! Re-recording changes only what changed: record mode answers a call its
//! recording still answers from that recording (no API call, no write),
//! records what is missing or stale, writes a file only when its bytes
//! change (`SCAFFOLD_RECORD=all` too), keeps every attempt of a call that
//! failed them all, and takes a fake server's simulated timing.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use scaffold::prelude::*;
use scaffold::provider::anthropic::Anthropic;
use scaffold::provider::openai::OpenAi;
use scaffold::provider::recorder::{ProviderRecorder, RecordPolicy, RecorderMode};
use scaffold::provider::transport::with_transport;
use scaffold::testing::{FakeProviderServer, SimulatedTiming};
use scaffold::workflow::RecordingScope;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Doc {
    topic: String,
    draft: String,
    review: String,
}

/// A streamed gpt-4o-mini writer, then a claude-haiku reviewer asked
/// `review` (a prompt prefix).
fn workflow(server: &FakeProviderServer, review: &'static str) -> Workflow<Doc> {
    let writer = Agent::<Doc>::new("writer")
        .provider(
            OpenAi::new("gpt-4o-mini")
                .base_url(server.openai_base_url())
                .api_key("sk-test"),
        )
        .stream(true)
        .prompt(|s| format!("Write about {}", s.topic))
        .update(|t, s| s.draft = t);
    let reviewer = Agent::<Doc>::new("reviewer")
        .provider(
            Anthropic::new("claude-haiku-4-5")
                .base_url(server.anthropic_base_url())
                .api_key("sk-test"),
        )
        .prompt(move |s| format!("{review}: {}", s.draft))
        .update(|t, s| s.review = t);
    Workflow::new("write-review", Doc::default())
        .start(|input, s| s.topic = input.as_str().unwrap_or_default().to_string())
        .phase("write", Phase::run(writer).next("review"))
        .phase("review", Phase::run(reviewer))
}

fn scope() -> RecordingScope {
    RecordingScope {
        dataset: "docs".into(),
        case: "rust".into(),
        variant: "v".into(),
        trial: None,
    }
}

fn options() -> RunOptions {
    RunOptions::new().recording(scope())
}

/// A fake provider stating simulated times; a fresh one answers the same
/// requests with the same ids and times.
async fn server() -> FakeProviderServer {
    FakeProviderServer::builder()
        .simulated_timing(SimulatedTiming::realistic())
        .start()
        .await
        .expect("fake provider")
}

async fn record(
    dir: &Path,
    policy: RecordPolicy,
    wf: &Workflow<Doc>,
) -> scaffold::workflow::RunResult<Doc> {
    let recorder = ProviderRecorder::new(dir, RecorderMode::Record).record_policy(policy);
    let run = with_transport(
        recorder.transport(),
        run_with(wf, json!("rust"), &options()),
    )
    .await;
    assert_eq!(run.error, None);
    run
}

/// Every file of `dir`: its bytes and modification time.
fn files(dir: &Path) -> BTreeMap<String, (Vec<u8>, SystemTime)> {
    std::fs::read_dir(dir)
        .expect("recordings")
        .map(|entry| {
            let path = entry.expect("entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let bytes = std::fs::read(&path).expect("file");
            let modified = std::fs::metadata(&path).and_then(|m| m.modified());
            (name, (bytes, modified.expect("mtime")))
        })
        .collect()
}

fn cassette(dir: &Path, agent: &str) -> Value {
    let id = scope().recording_id(agent, 0);
    let text = std::fs::read_to_string(dir.join(format!("{id}.json"))).expect("cassette");
    serde_json::from_str(&text).expect("json")
}

fn ms(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not a whole number: {v}"))
}

fn ends(run: &scaffold::workflow::RunResult<Doc>) -> Vec<u64> {
    run.signals
        .iter()
        .filter(|s| s.name == "provider:end")
        .map(|s| ms(&s.payload["durationMs"]))
        .collect()
}

/// Let the file system's clock move on, so a rewrite would show in the
/// modification time.
fn tick() {
    std::thread::sleep(std::time::Duration::from_millis(20));
}

#[tokio::test]
async fn by_default_an_up_to_date_recording_is_answered_from_its_file_left_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = server().await;
    let wf = workflow(&server, "Review");
    let first = record(dir.path(), RecordPolicy::Missing, &wf).await;
    assert_eq!(server.request_count(), 2);
    let before = files(dir.path());
    assert_eq!(before.len(), 2);
    tick();

    let again = record(dir.path(), RecordPolicy::Missing, &wf).await;
    assert_eq!(server.request_count(), 2, "no API was called");
    assert_eq!(files(dir.path()), before, "a file was written");
    assert_eq!(again.state.review, first.state.review);
    // Each call answered from its recording lasted its recorded time.
    let recorded: Vec<u64> = ["writer", "reviewer"]
        .iter()
        .map(|agent| ms(&cassette(dir.path(), agent)["timing"]["durationMs"]))
        .collect();
    for (took, recorded) in ends(&again).into_iter().zip(recorded) {
        assert!(
            (recorded..recorded + 500).contains(&took),
            "{took} ms for a call recorded at {recorded} ms"
        );
    }
}

#[tokio::test]
async fn a_stale_recording_is_recorded_again_and_nothing_else_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = server().await;
    record(
        dir.path(),
        RecordPolicy::Missing,
        &workflow(&server, "Review"),
    )
    .await;
    let before = files(dir.path());
    tick();

    let edited = workflow(&server, "Review strictly");
    let run = record(dir.path(), RecordPolicy::Missing, &edited).await;
    assert_eq!(server.request_count(), 3, "only the stale call was sent");
    let after = files(dir.path());
    let writer = scope().recording_id("writer", 0);
    let reviewer = scope().recording_id("reviewer", 0);
    let (writer, reviewer) = (format!("{writer}.json"), format!("{reviewer}.json"));
    assert_eq!(
        after[&writer], before[&writer],
        "the writer's was rewritten"
    );
    assert_ne!(after[&reviewer].0, before[&reviewer].0);
    assert!(String::from_utf8_lossy(&after[&reviewer].0).contains("Review strictly"));
    assert!(run.state.review.contains("Review strictly"));

    // Played back, the new recording answers.
    let playback = ProviderRecorder::new(dir.path(), RecorderMode::Playback);
    let played = with_transport(
        playback.transport(),
        run_with(&edited, json!("rust"), &options().virtual_time(true)),
    )
    .await;
    assert_eq!(played.error, None);
}

#[tokio::test]
async fn record_all_calls_every_api_and_writes_only_the_files_whose_bytes_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = server().await;
    record(dir.path(), RecordPolicy::All, &workflow(&first, "Review")).await;
    let before = files(dir.path());
    tick();

    // A deterministic server (a fresh one: the same ids, the same times).
    let second = server().await;
    record(dir.path(), RecordPolicy::All, &workflow(&second, "Review")).await;
    assert_eq!(second.request_count(), 2, "`all` calls every API");
    assert_eq!(
        files(dir.path()),
        before,
        "nothing changed, nothing written"
    );

    tick();
    let third = server().await;
    let edited = workflow(&third, "Review strictly");
    record(dir.path(), RecordPolicy::All, &edited).await;
    assert_eq!(third.request_count(), 2);
    let after = files(dir.path());
    let changed: Vec<&String> = after
        .iter()
        .filter(|(name, file)| before.get(*name) != Some(file))
        .map(|(name, _)| name)
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert!(changed[0].contains("__reviewer__"), "{changed:?}");
}

#[tokio::test]
async fn the_fake_providers_simulated_timing_is_deterministic_and_lands_in_the_cassette() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let server_one = server().await;
    let recorded = record(
        one.path(),
        RecordPolicy::Missing,
        &workflow(&server_one, "Review"),
    )
    .await;
    let server_two = server().await;
    record(
        two.path(),
        RecordPolicy::Missing,
        &workflow(&server_two, "Review"),
    )
    .await;
    let names = |f: BTreeMap<String, (Vec<u8>, SystemTime)>| {
        f.into_iter()
            .map(|(name, (bytes, _))| (name, bytes))
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(
        names(files(one.path())),
        names(files(two.path())),
        "two recordings from the same answers differ"
    );

    // The reviewer's whole answer: its time is the model's for this
    // request and these output tokens; its first byte is its end.
    let reviewer = cassette(one.path(), "reviewer");
    let body = serde_json::to_vec(&reviewer["request"]["body"]).unwrap();
    let tokens = ms(&reviewer["response"]["body"]["usage"]["output_tokens"]);
    let (first_byte, duration) =
        SimulatedTiming::realistic().timing("claude-haiku-4-5", &body, tokens, false);
    assert_eq!(
        reviewer["timing"],
        json!({"durationMs": duration, "firstByteMs": first_byte})
    );
    assert!(duration >= 450, "{duration} ms is not a model's time");
    // The writer's stream: a first byte well before its end.
    let writer = cassette(one.path(), "writer");
    let (first, total) = (
        ms(&writer["timing"]["firstByteMs"]),
        ms(&writer["timing"]["durationMs"]),
    );
    assert!(first >= 280 && first < total, "{writer}");
    // The header is not kept in the cassette.
    assert!(!reviewer.to_string().contains("x-scaffold"), "{reviewer}");

    // The record run's own figures are the simulated ones, as playback's.
    let played = with_transport(
        ProviderRecorder::new(one.path(), RecorderMode::Playback).transport(),
        run_with(
            &workflow(&server_one, "Review"),
            json!("rust"),
            &options().virtual_time(true),
        ),
    )
    .await;
    assert_eq!(ends(&played), vec![total, duration]);
    for (live, played) in ends(&recorded).into_iter().zip(ends(&played)) {
        assert!(
            (played..played + 500).contains(&live),
            "{live} against {played}"
        );
    }
}

/// One OpenAI call, retried `retry` times on a 500.
fn one_call(server: &FakeProviderServer, retry: u32) -> Workflow<Doc> {
    use scaffold::provider::http::RetryPolicy;
    let writer = Agent::<Doc>::new("writer")
        .provider(
            OpenAi::new("gpt-4o-mini")
                .base_url(server.openai_base_url())
                .api_key("sk-test")
                .retry(
                    RetryPolicy::new(retry)
                        .base_delay(std::time::Duration::from_millis(100))
                        .jitter(0.0),
                ),
        )
        .prompt(|s| format!("Write about {}", s.topic))
        .update(|t, s| s.draft = t);
    Workflow::new("write", Doc::default())
        .start(|input, s| s.topic = input.as_str().unwrap_or_default().to_string())
        .phase("write", Phase::run(writer))
}

#[tokio::test]
async fn a_call_failing_every_attempt_plays_back_as_long_as_it_took() {
    use scaffold::testing::Fault;
    let dir = tempfile::tempdir().expect("tempdir");
    let server = FakeProviderServer::builder()
        .fault_plan(vec![Fault::ServerError; 4])
        .start()
        .await
        .expect("fake provider");
    let recorder = ProviderRecorder::new(dir.path(), RecorderMode::Record);
    let wf = one_call(&server, 4);
    let recorded = with_transport(
        recorder.transport(),
        run_with(&wf, json!("rust"), &options()),
    )
    .await;
    assert!(recorded.error.is_some());
    assert_eq!(server.request_count(), 4);

    // Every attempt is kept, with the waits between them.
    let c = cassette(dir.path(), "writer");
    let attempts = c["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 3, "{c}");
    assert_eq!(c["response"]["status"], 500);
    let waits: Vec<u64> = attempts.iter().map(|a| ms(&a["waitMs"])).collect();
    assert!(waits.iter().all(|w| *w >= 90), "{waits:?}");
    let in_cassette = attempts
        .iter()
        .map(|a| ms(&a["timing"]["durationMs"]) + ms(&a["waitMs"]))
        .sum::<u64>()
        + ms(&c["timing"]["durationMs"]);

    // Played back: the four attempts in turn, their waits counted.
    let playback = ProviderRecorder::new(dir.path(), RecorderMode::Playback);
    let wf = one_call(&FakeProviderServer::start().await.unwrap(), 4);
    let started = std::time::Instant::now();
    let played = with_transport(
        playback.transport(),
        run_with(&wf, json!("rust"), &options().virtual_time(true)),
    )
    .await;
    assert!(
        started.elapsed().as_millis() < u128::from(in_cassette),
        "playback slept"
    );
    let error = played.error.expect("it fails as recorded").to_string();
    assert!(
        error.contains("500") && error.contains("4 attempts"),
        "{error}"
    );
    assert_eq!(played.duration.as_millis() as u64, in_cassette);
    let (recorded_ms, played_ms) = (
        recorded.duration.as_millis() as u64,
        played.duration.as_millis() as u64,
    );
    // The cassette holds the attempts and the waits, never more than the
    // recording took (give or take each figure's rounding to a ms); what
    // it leaves out is the recording machine's own
    // overhead between them (scheduling, on a loaded machine some hundred
    // ms), never most of the run: played back without the waits (at
    // least 3 × 90 ms), it would be a few ms.
    assert!(
        played_ms <= recorded_ms + 10 && played_ms * 2 >= recorded_ms,
        "recorded {recorded_ms} ms, played back {played_ms} ms"
    );

    // A re-record that fails again keeps what it recorded, rewritten with
    // this run's attempts; one that succeeds replaces it.
    server.set_fault_plan(Vec::new());
    let fixed = with_transport(
        recorder.transport(),
        run_with(&one_call(&server, 4), json!("rust"), &options()),
    )
    .await;
    assert_eq!(fixed.error, None, "a recorded failure is recorded again");
    assert_eq!(cassette(dir.path(), "writer")["response"]["status"], 200);
}

/// A recorded tool follows the same rule: answered from its recording
/// (not run, not written) while it answers the call, run under `all`.
#[tokio::test]
async fn a_recorded_tool_is_run_again_only_when_its_recording_does_not_answer() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Query {
        q: String,
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let fetch = Tool::new("fetch", "Fetches", move |query: Query| {
        counted.fetch_add(1, Ordering::SeqCst);
        Ok::<_, String>(format!("page {}", query.q))
    })
    .recorded();
    let wf = |q: &str| {
        let provider = ScriptedProvider::new("claude-sonnet-4-5")
            .reply(ScriptedReply::tool_call("c1", "fetch", json!({"q": q})))
            .reply(ScriptedReply::text("done"));
        let agent = Agent::<Doc>::new("coder")
            .provider(provider)
            .prompt(|_| "go".to_string())
            .tool(fetch.clone());
        Workflow::new("tools", Doc::default()).phase("go", Phase::run(agent))
    };
    let run = |policy, q: &'static str| {
        let recorder =
            ProviderRecorder::new(dir.path(), RecorderMode::Record).record_policy(policy);
        let wf = wf(q);
        async move {
            let run = run_with(&wf, json!("x"), &options().tool_recorder(recorder.tools())).await;
            assert_eq!(run.error, None);
        }
    };
    run(RecordPolicy::Missing, "a").await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let before = files(dir.path());
    tick();
    run(RecordPolicy::Missing, "a").await;
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the tool ran again");
    assert_eq!(files(dir.path()), before);
    run(RecordPolicy::Missing, "b").await;
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "a stale recording is run again"
    );
    run(RecordPolicy::All, "b").await;
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// Which of its two questions the bridged agent sends first.
static JAPAN_FIRST: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

async fn ask(cx: &AgentCx, question: &str, delay_ms: u64) -> Result<String, String> {
    tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
    let url = format!("{}/chat/completions", cx.openai_base_url("asker"));
    let body = json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": question}]});
    let response = http_client()
        .post(url)
        .bearer_auth(cx.openai_api_key())
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let text = response.text().await.map_err(|e| e.to_string())?;
    let answer: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    Ok(answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

/// A bridged agent asking two questions at once.
async fn two_at_once(cx: AgentCx) -> Result<String, String> {
    let japan_first = JAPAN_FIRST.load(std::sync::atomic::Ordering::SeqCst);
    let (spain, japan) = if japan_first { (150, 0) } else { (0, 150) };
    let (a, b) = tokio::join!(
        ask(&cx, "capital of Spain?", spain),
        ask(&cx, "capital of Japan?", japan)
    );
    Ok(format!("{}|{}", a?, b?))
}

/// The agent bridge follows the same rule: a bridged call its recording
/// answers (found by content, whatever order the calls came in) is
/// answered from it, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridged_agents_calls_are_answered_from_their_recordings_in_any_order() {
    use scaffold::dataset::{Format, load_str};
    let server = server().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let eval = Eval::<AgentState>::new()
        .name("bridged")
        .agent(two_at_once)
        .variant("v", Variant::new())
        .bridge_openai(OpenAi::new("").base_url(server.openai_base_url()))
        .dataset(
            load_str(
                "name: b\ncases:\n  - id: c\n    input: go\n    assertions:\n      - type: output.contains\n        text: Echo\n",
                Format::Yaml,
                "b.yaml",
            )
            .expect("dataset"),
        );
    JAPAN_FIRST.store(false, std::sync::atomic::Ordering::SeqCst);
    let env = crate::bridge::env(dir.path(), RecorderMode::Record);
    let (recorded, _) = crate::bridge::run_cell(&eval, &env).await;
    assert!(recorded.passed, "{:#?}", recorded.failures());
    assert_eq!(server.request_count(), 2);
    let before = files(dir.path());
    assert_eq!(before.len(), 2);
    tick();
    // Whichever question comes first.
    for japan_first in [true, false] {
        JAPAN_FIRST.store(japan_first, std::sync::atomic::Ordering::SeqCst);
        let env = crate::bridge::env(dir.path(), RecorderMode::Record);
        let (again, _) = crate::bridge::run_cell(&eval, &env).await;
        assert!(again.passed, "{:#?}", again.failures());
        assert_eq!(server.request_count(), 2, "a bridged call reached the API");
        assert_eq!(files(dir.path()), before, "a file was written");
    }
}
