//! Agents in another language: a program per cell (Python's standard
//! library here, and `sh` for the ways a program goes wrong), its calls
//! through the bridge's URLs from its environment.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::bridge::{env, run_cell};
use scaffold::dataset::{Format, load_str};
use scaffold::prelude::*;
use scaffold::provider::recorder::RecorderMode;
use scaffold::testing::{Answer, FakeProviderServer, Rule};
use serde_json::json;

const CANARY: &str = "sk-proj-canary-bridged-5d1f8a0b2c7e";

/// A Python agent on the standard library alone: one chat completion to
/// `OPENAI_BASE_URL`, as any OpenAI client reads its environment.
const PYTHON_AGENT: &str = r#"
import json, os, sys, urllib.request
question = json.load(sys.stdin)
body = {"model": os.environ["SCAFFOLD_MODEL"], "messages": [
    {"role": "system", "content": os.environ.get("SCAFFOLD_PROMPT", "")},
    {"role": "user", "content": question}]}
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps(body).encode(), method="POST",
    headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
answer = json.load(urllib.request.urlopen(request))
print(json.dumps({"output": answer["choices"][0]["message"]["content"],
                  "state": {"asked": question},
                  "signals": [{"name": "python:done", "payload": {"ok": True}}]}))
"#;

const DATASET: &str = r#"
name: capitals
cases:
  - id: france
    input: "Capital of France?"
    assertions:
      - type: output.contains
        text: Paris
      - type: signal.contains
        pattern: "python:done"
      - type: snapshot.final
        path: asked
        value: "Capital of France?"
"#;

fn eval(command: AgentCommand, upstream: &str) -> Eval<AgentState> {
    Eval::new()
        .name("capitals")
        .command(command)
        .variant(
            "mini",
            Variant::new()
                .model("gpt-4o-mini")
                .prompt("Answer in one word."),
        )
        .bridge_openai(OpenAi::new("").base_url(upstream))
        .dataset(load_str(DATASET, Format::Yaml, "capitals.yaml").expect("dataset"))
}

fn python(dir: &Path) -> AgentCommand {
    let script = dir.join("agent.py");
    std::fs::write(&script, PYTHON_AGENT).expect("script");
    AgentCommand::new("python3")
        .arg(script.to_string_lossy())
        .json_output()
        .env("OPENAI_API_KEY", CANARY)
}

fn sh(script: &str) -> AgentCommand {
    AgentCommand::new("sh").arg("-c").arg(script)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_program_is_recorded_and_played_back_and_its_key_is_never_written() {
    let server = FakeProviderServer::builder()
        .rule(
            Rule::when()
                .prompt_contains("France")
                .then(Answer::text("Paris")),
        )
        .start()
        .await
        .expect("fake provider");
    let recordings = tempfile::tempdir().expect("tempdir");
    let scripts = tempfile::tempdir().expect("tempdir");
    let eval = eval(python(scripts.path()), &server.openai_base_url());

    let (recorded, _) = run_cell(&eval, &env(recordings.path(), RecorderMode::Record)).await;
    assert!(recorded.passed, "{:#?}", recorded.failures());
    assert_eq!(
        server
            .last_request()
            .and_then(|r| r.header("authorization").map(str::to_string)),
        Some(format!("Bearer {CANARY}")),
        "the program's own key reaches the API"
    );
    let (played, run) = run_cell(&eval, &env(recordings.path(), RecorderMode::Playback)).await;
    assert!(played.passed, "{:#?}", played.failures());
    assert_eq!(server.request_count(), 1);
    assert_eq!(played.output, Some(json!("Paris")));
    let exit = run
        .signals
        .iter()
        .find(|s| s.name == "process:exit")
        .expect("process:exit");
    assert_eq!(exit.payload["status"], 0);

    for entry in std::fs::read_dir(recordings.path()).expect("recordings") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("read");
        assert!(!text.contains(CANARY), "{text}");
    }
    let everything = format!("{recorded:?} {played:?} {:?}", run.signals);
    assert!(!everything.contains(CANARY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_playback_a_call_around_the_base_url_fails_and_never_leaves_the_machine() {
    let scripts = tempfile::tempdir().expect("tempdir");
    let script = scripts.path().join("direct.py");
    std::fs::write(
        &script,
        "import urllib.request\nurllib.request.urlopen('https://api.openai.com/v1/models', timeout=5)\n",
    )
    .expect("script");
    let command = AgentCommand::new("python3").arg(script.to_string_lossy());
    let recordings = tempfile::tempdir().expect("tempdir");
    let (result, _) = run_cell(
        &eval(command, "http://127.0.0.1:9/v1"),
        &env(recordings.path(), RecorderMode::Playback),
    )
    .await;
    let error = result.error.unwrap_or_default();
    assert!(
        error.contains("called api.openai.com:443 itself"),
        "{error}"
    );
    assert!(error.contains("OPENAI_BASE_URL"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_program_is_killed_with_its_children_at_its_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("child.pid");
    let script = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
    let command = sh(&script).timeout(Duration::from_millis(500));
    let started = Instant::now();
    let (result, _) = run_cell(
        &eval(command, "http://127.0.0.1:9/v1"),
        &env(dir.path(), RecorderMode::Playback),
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(20));
    let error = result.error.unwrap_or_default();
    assert!(error.contains("did not finish within 0.5 s"), "{error}");
    assert!(error.contains("every process it started"), "{error}");
    let pid = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .to_string();
    // The grandchild is gone (give the kernel a moment to reap it).
    let mut alive = true;
    for _ in 0..50 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        alive = !status.is_empty() && !status.contains("State:\tZ");
        if !alive {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive, "sleep {pid} outlived its program");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn floods_bad_json_and_failures_are_told_plainly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |command: AgentCommand| {
        let eval = eval(command, "http://127.0.0.1:9/v1");
        let env = env(dir.path(), RecorderMode::Playback);
        async move { run_cell(&eval, &env).await.0 }
    };

    let flood = run(sh("head -c 3000000 /dev/zero | tr '\\0' x").max_output(1000)).await;
    let output = flood
        .output
        .and_then(|o| o.as_str().map(str::to_string))
        .unwrap_or_default();
    assert!(
        output.starts_with(&"x".repeat(1000)),
        "{}",
        &output[..output.len().min(50)]
    );
    assert!(
        output.ends_with("[stdout cut at 1000 bytes: the program printed 3000000 bytes]"),
        "{}",
        &output[output.len().saturating_sub(120)..]
    );

    let bad = run(sh("echo 'not json at all'").json_output()).await;
    let error = bad.error.unwrap_or_default();
    assert!(error.contains("its stdout is not JSON"), "{error}");
    assert!(error.contains("it begins: \"not json at all"), "{error}");

    let array = run(sh("echo '[1, 2]'").json_output()).await;
    let error = array.error.unwrap_or_default();
    assert!(error.contains("printed an array"), "{error}");

    let failed = run(sh("echo working; echo 'Traceback: boom' >&2; exit 3")).await;
    let error = failed.error.unwrap_or_default();
    assert!(error.contains("`sh` exited with status 3"), "{error}");
    assert!(error.contains("  Traceback: boom"), "{error}");

    let missing = run(AgentCommand::new("no-such-program-scaffold")).await;
    let error = missing.error.unwrap_or_default();
    assert!(
        error.contains("could not start `no-such-program-scaffold`"),
        "{error}"
    );

    let left_running = std::time::Instant::now();
    let done = run(sh("sleep 30 & echo done").timeout(Duration::from_secs(20))).await;
    assert_eq!(done.output, Some(json!("done")), "{:?}", done.error);
    assert!(
        left_running.elapsed() < Duration::from_secs(10),
        "what it left running kept it"
    );

    let input = run(sh("printf '%s' \"$0\"").arg("{input}")).await;
    assert_eq!(input.output, Some(json!("Capital of France?")));
}
