//! The harness with insta and Cargo, in child processes of this binary over a
//! temporary package: every snapshot a cell checks counts as referenced for
//! `cargo insta test --unreferenced`, a snapshot's header names the suite's
//! file (no path of this machine) and each assertion's type, a stale
//! recording is reported once per cell with the suite's own re-record
//! command and no snapshot diff, and `cargo insta review` is recommended
//! only when a snapshot changed.
//!
//! `harness = false`: `main` is a libtest-mimic harness of one test that
//! runs this same binary again as an eval suite (`SCAFFOLD_INSTA_CHILD`
//! set) with different environments.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Output};

use common::{check, child_command, stderr};
use libtest_mimic::{Arguments, Failed, Trial};
use scaffold::dataset::{Dataset, DatasetError, Format as DatasetFormat, load_str};
use scaffold::eval::Eval;
use scaffold::prelude::*;
use scaffold::provider::openai::OpenAi;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

mod common;

/// Set in children: the directory they use as their package.
const CHILD_ENV: &str = "SCAFFOLD_INSTA_CHILD";
/// The fake provider's base URL (record mode).
const BASE_ENV: &str = "SCAFFOLD_INSTA_BASE";
/// In children whose prompt differs from the recorded one: the topic whose
/// prompt does, or `all`.
const STALE_ENV: &str = "SCAFFOLD_INSTA_STALE";
/// In children whose output differs from the snapshot's: the topic whose
/// output does, or `all`.
const DRIFT_ENV: &str = "SCAFFOLD_INSTA_DRIFT";

/// Whether the child's `env` names `topic`.
fn names(env: &str, topic: &str) -> bool {
    std::env::var(env).is_ok_and(|v| v == topic || v == "all")
}
/// How the suite says it re-records.
const RERECORD: &str = "cargo run --example record_insta_suite -- {filter}";
/// Set in children whose eval does not say how it re-records.
const NO_COMMAND_ENV: &str = "SCAFFOLD_INSTA_NO_COMMAND";
/// Set in children whose eval quarantines the `rust` case.
const QUARANTINE_ENV: &str = "SCAFFOLD_INSTA_QUARANTINE";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Echo {
    topic: String,
    answer: String,
}

#[scaffold::eval(name = "echo")]
fn echo() -> Eval<Echo> {
    let mut eval = Eval::new().scorer(scaffold::scorer::output_valid());
    if std::env::var_os(QUARANTINE_ENV).is_some() {
        eval = eval.quarantine(["mini::rust"]);
    }
    match std::env::var_os(NO_COMMAND_ENV) {
        Some(_) => eval,
        None => eval.rerecord_command(RERECORD),
    }
}

#[scaffold::variant(eval = "echo", name = "mini")]
fn mini() -> Workflow<Echo> {
    let base = std::env::var(BASE_ENV).unwrap_or_else(|_| "http://127.0.0.1:9/v1".into());
    let model = OpenAi::new("gpt-4o-mini")
        .base_url(base)
        .api_key("sk-insta-test-0000");
    let agent = Agent::<Echo>::new("writer")
        .provider(model)
        .prompt(|s| match names(STALE_ENV, &s.topic) {
            true => format!("Write briefly about {}", s.topic),
            false => format!("Write about {}", s.topic),
        })
        .update(|text, s| s.answer = text);
    Workflow::new("echo", Echo::default())
        .start(|input: &Value, s| s.topic = input["topic"].as_str().unwrap_or_default().into())
        .phase("write", Phase::run(agent))
        .output(|s| match names(DRIFT_ENV, &s.topic) {
            true => json!(format!("{} (changed)", s.answer)),
            false => json!(s.answer),
        })
}

#[scaffold::dataset(eval = "echo")]
fn cases() -> Result<Dataset, DatasetError> {
    load_str(
        r#"{"name": "topics", "cases": [
            {"id": "rust", "input": {"topic": "rust"},
             "assertions": [{"type": "output.contains", "text": "rust"},
                            {"type": "agent.completed", "agentId": "writer"}]},
            {"id": "tea", "input": {"topic": "tea"},
             "assertions": [{"type": "output.contains", "text": "tea"}]}
        ]}"#,
        DatasetFormat::Json,
        "topics.json",
    )
}

fn main() -> ExitCode {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        return scaffold::harness::main_for(&dir, file!(), line!());
    }
    let args = Arguments::from_args();
    let trials = vec![Trial::test(
        "snapshots_play_well_with_insta_and_cargo",
        scenario,
    )];
    libtest_mimic::run(&args, trials).exit_code()
}

/// Run this binary as the eval suite in `dir` with `env`.
fn child(dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = child_command(CHILD_ENV, dir);
    cmd.env("SCAFFOLD_FORMAT", "json")
        .env("SCAFFOLD_PROGRESS", "0")
        .args(["--test-threads", "2"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the child runs")
}

fn scenario() -> Result<(), Failed> {
    common::in_temp_dir("insta-cargo", run_scenario)
}

/// Every `.snap` file under `dir`, canonical.
fn snap_files(dir: &Path) -> BTreeSet<PathBuf> {
    files_ending(dir, ".snap")
        .into_iter()
        .map(|path| path.canonicalize().unwrap_or(path))
        .collect()
}

/// The files with `extension` under `dir`.
fn files_ending(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.to_string_lossy().ends_with(extension) {
                out.push(path);
            }
        }
    }
    out
}

fn run_scenario(dir: &Path) -> Result<(), Failed> {
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let server = runtime
        .block_on(scaffold::testing::FakeProviderServer::start())
        .map_err(|e| e.to_string())?;
    let snapshots = dir.join("snapshots");

    // 1. Record, accepting the new snapshots.
    let base = server.openai_base_url();
    let o = child(
        dir,
        &[
            ("SCAFFOLD_MODE", "record"),
            (BASE_ENV, base.as_str()),
            ("INSTA_UPDATE", "always"),
            ("INSTA_FORCE_PASS", "1"),
        ],
    );
    check(o.status.success(), "the record run passes", &o)?;
    let snaps = snap_files(&snapshots);
    check(snaps.len() == 2, "one snapshot per cell", &o)?;

    // 2. The header names the suite's file, relative to its package, and
    //    each assertion names its type.
    let rust = std::fs::read_to_string(snapshots.join("echo/rust/mini.snap"))
        .map_err(|e| e.to_string())?;
    let source = rust
        .lines()
        .find_map(|l| l.strip_prefix("source: "))
        .unwrap_or_default();
    check(
        source == file!(),
        &format!("the header's source is the suite's file, got `{source}`"),
        &o,
    )?;
    check(
        rust.contains("assertions:\n  - assertion: output.contains\n    passed: true\n  - assertion: agent.completed\n    passed: true\n"),
        &format!("each assertion names its type:\n{rust}"),
        &o,
    )?;

    // 3. A passing playback run names every snapshot it checked in insta's
    //    references file, as cargo-insta asks (`--unreferenced`).
    let refs = dir.join("references.txt");
    let refs_env = refs.to_string_lossy().into_owned();
    let o = child(
        dir,
        &[("INSTA_SNAPSHOT_REFERENCES_FILE", refs_env.as_str())],
    );
    check(o.status.success(), "playback passes", &o)?;
    let listed: BTreeSet<PathBuf> = std::fs::read_to_string(&refs)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| Path::new(l).canonicalize().ok())
        .collect();
    check(
        listed == snaps,
        &format!("every snapshot is referenced: {listed:?} vs {snaps:?}"),
        &o,
    )?;
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    check(
        !out.contains("cargo insta review"),
        "no review is recommended when nothing changed",
        &o,
    )?;

    // 4. A stale recording: its diff once, the suite's re-record command,
    //    no snapshot diff, no pending snapshot, no `cargo insta review`.
    let o = child(dir, &[(STALE_ENV, "all"), ("INSTA_UPDATE", "new")]);
    check(!o.status.success(), "a stale recording fails", &o)?;
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    for case in ["rust", "tea"] {
        let change = format!("\"Write about {case}\" → \"Write briefly about {case}\"");
        check(
            out.matches(&change).count() == 1,
            &format!("the diff of {case} is printed once"),
            &o,
        )?;
        let command = format!("cargo run --example record_insta_suite -- mini::{case}");
        check(
            out.contains(&command),
            &format!("the suite's re-record command for {case}"),
            &o,
        )?;
    }
    check(
        !out.contains("SCAFFOLD_MODE=record"),
        "not the default command",
        &o,
    )?;
    check(
        !out.contains("Snapshot Summary"),
        "no snapshot diff for a stale recording",
        &o,
    )?;
    check(
        files_ending(&snapshots, ".snap.new").is_empty(),
        "no pending snapshot for a stale recording",
        &o,
    )?;
    check(
        !out.contains("cargo insta review"),
        "no review is recommended for a stale recording",
        &o,
    )?;
    check(
        out.contains("2 cell(s) could not be played back"),
        "the closing line says to re-record",
        &o,
    )?;
    check(!out.contains("crashed"), "no cell crashed", &o)?;

    // 5. A changed session: the snapshot's diff and `cargo insta review`.
    let o = child(dir, &[(DRIFT_ENV, "all"), ("INSTA_UPDATE", "new")]);
    check(!o.status.success(), "a changed session fails", &o)?;
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    check(out.contains("Snapshot Summary"), "the snapshot's diff", &o)?;
    check(
        out.contains("2 session snapshot(s) changed: review them with `cargo insta review`."),
        "the closing line recommends the review",
        &o,
    )?;
    check(
        !out.contains("could not be played back"),
        "no re-record line when the recordings match",
        &o,
    )?;
    check(
        files_ending(&snapshots, ".snap.new").len() == 2,
        "the changed snapshots are pending",
        &o,
    )?;
    check(!out.contains("crashed"), "no cell crashed", &o)?;

    // 6. One of each: each closing line counts its own, and a cell that
    //    failed on its snapshot alone is not taken for a crash.
    let o = child(
        dir,
        &[
            (STALE_ENV, "rust"),
            (DRIFT_ENV, "tea"),
            ("INSTA_UPDATE", "new"),
        ],
    );
    check(!o.status.success(), "both fail", &o)?;
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    check(
        out.contains("1 session snapshot(s) changed: review them with `cargo insta review`."),
        "the changed snapshot is counted",
        &o,
    )?;
    check(
        out.contains("1 cell(s) could not be played back"),
        "the stale cell is counted",
        &o,
    )?;
    check(!out.contains("crashed"), "no cell crashed", &o)?;

    // 7. Without a command of its own, the default names this test target
    //    (`insta_cargo`, not `evals`).
    let o = child(dir, &[(STALE_ENV, "rust"), (NO_COMMAND_ENV, "1")]);
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    check(
        out.contains(
            "re-record it with: SCAFFOLD_MODE=record cargo test --test insta_cargo -- mini::rust",
        ),
        "the default command names the suite's test target",
        &o,
    )?;

    // 8. Quarantine excuses a failing workflow, not recordings that no
    //    longer fit its requests.
    let o = child(dir, &[(STALE_ENV, "rust"), (QUARANTINE_ENV, "1")]);
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    check(
        !o.status.success(),
        "a quarantined stale cell still fails",
        &o,
    )?;
    check(
        out.contains("echo::mini::rust ... FAILED") && !out.contains("QUARANTINED"),
        "its test fails",
        &o,
    )?;
    drop(server);
    Ok(())
}
