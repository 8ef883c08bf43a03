//! Resuming an interrupted eval run, for real: the fixture suite
//! (`tests/fixtures/resume_fixture.rs`, eight cells) is killed with SIGKILL
//! part-way, then run again with `SCAFFOLD_RESUME=1`. Also the harness's
//! other environment variables on the same fixture.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use scaffold::eval::EvalResults;
use scaffold::store::Store;
use serde_json::Value;

mod common;

use common::{TempDir, text};

const CELLS: [&str; 8] = [
    "resume-fixture::alpha::c1",
    "resume-fixture::beta::c1",
    "resume-fixture::alpha::c2",
    "resume-fixture::beta::c2",
    "resume-fixture::alpha::c3",
    "resume-fixture::beta::c3",
    "resume-fixture::alpha::c4",
    "resume-fixture::beta::c4",
];

/// The fixture's test executable, built once per process with a nested
/// `cargo test --no-run` (it is `test = false`, so `cargo test` does not build it).
fn fixture() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let out = Command::new(env!("CARGO"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args([
                "test",
                "--test",
                "resume_fixture",
                "--no-run",
                "--message-format=json",
            ])
            .stderr(Stdio::inherit())
            .output()
            .expect("cargo runs");
        assert!(out.status.success(), "building the fixture failed");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|m| {
                m["reason"] == "compiler-artifact" && m["target"]["name"] == "resume_fixture"
            })
            .find_map(|m| m["executable"].as_str().map(PathBuf::from))
            .expect("cargo names the fixture's executable")
    })
}

/// The files of one fixture run.
trait FixtureDir {
    fn db(&self) -> PathBuf;
    fn log(&self) -> PathBuf;
    fn out(&self) -> PathBuf;
    /// How many times each cell started, from the fixture's log.
    fn started(&self) -> BTreeMap<String, usize>;
}

impl FixtureDir for TempDir {
    fn db(&self) -> PathBuf {
        self.join("scaffold.db")
    }

    fn log(&self) -> PathBuf {
        self.join("cells.log")
    }

    fn out(&self) -> PathBuf {
        self.join("reports")
    }

    fn started(&self) -> BTreeMap<String, usize> {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        let mut counts = BTreeMap::new();
        for line in text.lines().filter(|l| !l.is_empty()) {
            *counts.entry(line.to_string()).or_insert(0) += 1;
        }
        counts
    }
}

/// The fixture, set up to use `dir` and nothing of the caller's environment.
fn fixture_command(dir: &TempDir, args: &[&str], envs: &[(&str, &str)]) -> Command {
    let mut cmd = common::clean(Command::new(fixture()));
    cmd.current_dir(dir.path())
        .args(args)
        .env("SCAFFOLD_DATABASE", dir.db())
        .env("SCAFFOLD_SNAPSHOTS", "off")
        .env("SCAFFOLD_OUTPUT", dir.out())
        .env("RESUME_FIXTURE_LOG", dir.log())
        .env_remove("RESUME_FIXTURE_SLEEP_MS")
        .env_remove("RESUME_FIXTURE_QUARANTINE");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd
}

fn run(dir: &TempDir, args: &[&str], envs: &[(&str, &str)]) -> Output {
    fixture_command(dir, args, envs)
        .output()
        .expect("the fixture runs")
}

/// The lines of stderr that are errors.
fn error_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("error"))
        .map(str::to_string)
        .collect()
}

/// Run `cells` each in a process of its own, as nextest does, in the run
/// `run_id`: their results are recorded and the run is left unfinished.
fn run_as_nextest(dir: &TempDir, run_id: &str, cells: &[&str]) {
    for cell in cells {
        let out = run(dir, &["--exact", cell], &[("NEXTEST_RUN_ID", run_id)]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(!text(&out).contains("Run: "), "no summary under nextest");
    }
}

/// The results document the fixture wrote, and its cells' test names, sorted.
fn written_results(dir: &TempDir) -> (EvalResults, Vec<String>) {
    let json = EvalResults::load(dir.out().join("resume-fixture.json")).unwrap();
    let mut cells: Vec<String> = json
        .results
        .iter()
        .map(|c| c.test_name(&json.eval, json.config.trials))
        .collect();
    cells.sort();
    (json, cells)
}

/// `CELLS[i]` for each of `indices`, sorted.
fn sorted_cells(indices: impl IntoIterator<Item = usize>) -> Vec<String> {
    let mut cells: Vec<String> = indices.into_iter().map(|i| CELLS[i].to_string()).collect();
    cells.sort();
    cells
}

#[test]
fn a_killed_run_resumes_without_redoing_finished_cells() {
    let started = Instant::now();
    let dir = TempDir::new("resume");
    let stdout = std::fs::File::create(dir.join("first.out")).unwrap();
    let stderr = std::fs::File::create(dir.join("first.err")).unwrap();
    let mut child = fixture_command(
        &dir,
        &["--test-threads", "1"],
        &[("RESUME_FIXTURE_SLEEP_MS", "400")],
    )
    .stdout(stdout)
    .stderr(stderr)
    .spawn()
    .expect("the fixture starts");

    // Wait until at least three cells are recorded, then kill -9.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut store = None;
    let run_id = loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the fixture ended ({status}) before it was killed:\n{}{}",
                std::fs::read_to_string(dir.join("first.out")).unwrap_or_default(),
                std::fs::read_to_string(dir.join("first.err")).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "no 3 cells recorded in time");
        if store.is_none() && dir.db().exists() {
            store = Store::open(dir.db()).ok();
        }
        let recorded = store
            .as_ref()
            .and_then(|s| s.eval_runs().ok())
            .and_then(|runs| runs.into_iter().next())
            .filter(|run| run.cells >= 3);
        if let Some(run) = recorded {
            break run.id;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    let store = store.unwrap();

    let before = store.eval_run(&run_id).unwrap().unwrap();
    assert!(!before.finished, "{before:?}");
    let finished_before: BTreeSet<String> = store
        .recorded_cells(&run_id)
        .unwrap()
        .into_iter()
        .map(|c| c.cell)
        .collect();
    assert!(
        (3..CELLS.len()).contains(&finished_before.len()),
        "killed too late to test anything: {finished_before:?}"
    );
    assert!(finished_before.contains(CELLS[0]), "{finished_before:?}");

    let resumed = run(&dir, &["--test-threads", "1"], &[("SCAFFOLD_RESUME", "1")]);
    let out = text(&resumed);
    assert!(resumed.status.success(), "{out}");
    assert!(
        out.contains(&format!(
            "resuming run {run_id}: {} of {} cells already finished",
            finished_before.len(),
            CELLS.len()
        )),
        "{out}"
    );
    // The first cell fails on purpose: its stored verdict is reported, with a note.
    assert!(
        out.contains(&format!(
            "(finished in run {run_id} before the interruption; not run again)"
        )),
        "{out}"
    );
    assert!(
        out.contains("8 tests") && out.contains("7 passed; 1 failed"),
        "{out}"
    );
    assert!(out.contains(&format!("Run: {run_id}")), "{out}");

    // No finished cell ran twice; only the cell killed in flight may have.
    let counts = dir.started();
    for cell in CELLS {
        let n = counts.get(cell).copied().unwrap_or(0);
        if finished_before.contains(cell) {
            assert_eq!(n, 1, "{cell} finished before the kill but ran {n} times");
        } else {
            assert!((1..=2).contains(&n), "{cell} ran {n} times");
        }
    }
    assert!(
        counts.values().filter(|&&n| n == 2).count() <= 1,
        "{counts:?}"
    );
    assert_eq!(counts.len(), CELLS.len(), "{counts:?}");

    // The run is finished and holds every cell once; no other run was begun.
    let runs = store.eval_runs().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs[0].finished && runs[0].finished_at_ms.is_some());
    assert_eq!((runs[0].cells, runs[0].passed), (8, 7));
    let results = store.eval_results(&run_id).unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].cell_count(), 8);
    assert!(results[0].gate_passed());

    // So does the results JSON.
    let (json, cells) = written_results(&dir);
    assert_eq!(cells, sorted_cells(0..CELLS.len()));
    assert_eq!((json.passed_count(), json.config.inputs), (7, 4));
    eprintln!(
        "kill -9 and resume: {} cells before the kill, {:.1}s",
        finished_before.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn resuming_with_nothing_to_resume_is_one_clear_error() {
    let dir = TempDir::new("resume-nothing");
    // An empty database.
    let out = run(&dir, &[], &[("SCAFFOLD_RESUME", "1")]);
    assert!(!out.status.success());
    let errors = error_lines(&out);
    assert_eq!(errors.len(), 1, "{}", text(&out));
    assert!(
        errors[0].contains("SCAFFOLD_RESUME")
            && errors[0].contains("no unfinished eval run")
            && errors[0].contains("unset SCAFFOLD_RESUME to start a fresh run"),
        "{}",
        errors[0]
    );
    assert!(dir.started().is_empty(), "no cell may run");

    // After a run that finished, there is still nothing to resume.
    let first = run(&dir, &[], &[]);
    assert!(first.status.success(), "{}", text(&first));
    let store = Store::open(dir.db()).unwrap();
    let runs = store.eval_runs().unwrap();
    assert!(runs.len() == 1 && runs[0].finished, "{runs:?}");
    let again = run(&dir, &[], &[("SCAFFOLD_RESUME", "latest")]);
    assert!(!again.status.success());
    assert!(
        error_lines(&again)[0].contains("no unfinished eval run"),
        "{}",
        text(&again)
    );
    // Naming it: already finished.
    let named = run(&dir, &[], &[("SCAFFOLD_RESUME", &runs[0].id)]);
    assert!(
        error_lines(&named)[0].contains("already finished"),
        "{}",
        text(&named)
    );
    // An unknown id.
    let unknown = run(&dir, &[], &[("SCAFFOLD_RESUME", "no-such-run")]);
    assert!(
        error_lines(&unknown)[0].contains("no eval run no-such-run"),
        "{}",
        text(&unknown)
    );
    // In memory, nothing outlives a run.
    let memory = run(
        &dir,
        &[],
        &[("SCAFFOLD_RESUME", "1"), ("SCAFFOLD_DATABASE", ":memory:")],
    );
    let errors = error_lines(&memory);
    assert_eq!(errors.len(), 1, "{}", text(&memory));
    assert!(errors[0].contains(":memory:"), "{}", errors[0]);
    assert_eq!(dir.started().values().sum::<usize>(), CELLS.len());
}

#[test]
fn processes_of_one_nextest_run_share_its_run() {
    let dir = TempDir::new("resume-nextest");
    run_as_nextest(&dir, "nextest-run-1", &[CELLS[1], CELLS[2]]);
    let store = Store::open(dir.db()).unwrap();
    let runs = store.eval_runs().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(
        (runs[0].id.as_str(), runs[0].origin.as_str(), runs[0].cells),
        ("nextest-run-1", "nextest", 2)
    );
    assert!(!runs[0].finished);
    let results = store.eval_results("nextest-run-1").unwrap();
    assert_eq!(results[0].cell_count(), 2);

    // `cargo test` resumes it by id: the six other cells run, then the summary.
    let out = run(&dir, &[], &[("SCAFFOLD_RESUME", "nextest-run-1")]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("resuming run nextest-run-1: 2 of 8 cells already finished"),
        "{}",
        text(&out)
    );
    assert!(store.eval_run("nextest-run-1").unwrap().unwrap().finished);
    assert!(
        dir.started().values().all(|&n| n == 1),
        "{:?}",
        dir.started()
    );
}

/// A resume that runs only some cells (a filter) still reports the whole
/// run: the cells the interrupted run finished that this process leaves
/// out are added to the results from the store, and none of them runs again.
#[test]
fn a_filtered_resume_keeps_the_cells_finished_before_it() {
    let dir = TempDir::new("resume-filtered");
    // Two beta cells finish in a run that is never summarized (nextest
    // runs one cell per process and leaves the run open).
    run_as_nextest(&dir, "interrupted", &[CELLS[1], CELLS[3]]);

    // Resume it with only the alpha cells.
    let out = run(
        &dir,
        &["resume-fixture::alpha::"],
        &[("SCAFFOLD_RESUME", "interrupted")],
    );
    let printed = text(&out);
    assert!(out.status.success(), "{printed}");
    assert!(
        printed.contains("resuming run interrupted: 0 of 4 cells already finished"),
        "{printed}"
    );
    assert!(
        printed.contains("Run: interrupted (resumed: 2 cell(s) finished before the interruption)"),
        "{printed}"
    );

    // The results: the four alpha cells run now and the two beta cells
    // finished before; the beta cells that never ran are not made up.
    let (json, cells) = written_results(&dir);
    assert_eq!(cells, sorted_cells([0, 1, 2, 3, 4, 6]));
    // alpha::c1 fails on purpose; the gate (0.75) passes at 5 of 6.
    assert_eq!(json.passed_count(), 5);
    assert!(json.gate_passed());

    let store = Store::open(dir.db()).unwrap();
    let resumed = store.eval_run("interrupted").unwrap().unwrap();
    assert!(resumed.finished, "{resumed:?}");
    assert_eq!((resumed.cells, resumed.passed), (6, 5));
    let started = dir.started();
    assert!(started.values().all(|&n| n == 1), "{started:?}");
    assert_eq!(started.len(), 6, "{started:?}");
    assert!(!started.contains_key(CELLS[5]) && !started.contains_key(CELLS[7]));
}

#[test]
fn trials_variants_output_and_snapshot_settings() {
    let dir = TempDir::new("resume-settings");
    let listed = |envs: &[(&str, &str)]| {
        let out = run(&dir, &["--list"], envs);
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.ends_with(": test"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(listed(&[]).len(), 8);
    let three = listed(&[("SCAFFOLD_TRIALS", "3")]);
    assert_eq!(three.len(), 24);
    assert!(
        three
            .iter()
            .any(|l| l.contains("resume-fixture::beta::c4::t2"))
    );
    let beta = listed(&[("SCAFFOLD_VARIANTS", "b?t*")]);
    assert_eq!(beta.len(), 4);
    assert!(beta.iter().all(|l| l.contains("::beta::")), "{beta:?}");
    assert_eq!(listed(&[("SCAFFOLD_VARIANTS", "alpha, beta")]).len(), 8);

    // A run with two trials of beta only, reports in SCAFFOLD_OUTPUT.
    let out = run(
        &dir,
        &[],
        &[("SCAFFOLD_TRIALS", "2"), ("SCAFFOLD_VARIANTS", "beta")],
    );
    assert!(out.status.success(), "{}", text(&out));
    let json = EvalResults::load(dir.out().join("resume-fixture.json")).unwrap();
    assert_eq!((json.config.trials, json.cell_count()), (2, 8));
    assert!(json.results.iter().all(|c| c.variant == "beta"));

    // Invalid values: one error line naming the variable.
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let file = file.display().to_string();
    for (var, value, expected) in [
        ("SCAFFOLD_TRIALS", "zero", "whole number"),
        ("SCAFFOLD_TRIALS", "0", "at least 1"),
        ("SCAFFOLD_VARIANTS", "gpt-*", "alpha, beta"),
        ("SCAFFOLD_VARIANTS", " , ", "globs"),
        ("SCAFFOLD_OUTPUT", file.as_str(), "not a directory"),
        ("SCAFFOLD_SNAPSHOTS", file.as_str(), "`off`"),
        ("SCAFFOLD_RESUME", "two words", "run id"),
        ("RUST_TEST_THREADS", "many", "whole number"),
        ("RUST_TEST_THREADS", "0", "at least 1"),
    ] {
        let out = run(&dir, &[], &[(var, value)]);
        assert!(!out.status.success(), "{var}={value}");
        let errors = error_lines(&out);
        assert_eq!(errors.len(), 1, "{var}={value}: {}", text(&out));
        assert!(
            errors[0].starts_with(&format!("error: {var}")) && errors[0].contains(expected),
            "{var}={value}: {}",
            errors[0]
        );
    }

    // Snapshots in a directory of our own: new ones are not accepted silently.
    let snaps = dir.join("snaps");
    let out = run(
        &dir,
        &["--exact", CELLS[1]],
        &[
            ("SCAFFOLD_SNAPSHOTS", snaps.to_str().unwrap()),
            ("INSTA_UPDATE", "always"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let snap = snaps.join("resume-fixture/c1/beta.snap");
    assert!(snap.is_file(), "{}", text(&out));
    let snapshot_run = || {
        run(
            &dir,
            &["--exact", CELLS[1]],
            &[("SCAFFOLD_SNAPSHOTS", snaps.to_str().unwrap())],
        )
    };
    // Unchanged: it passes, and a stale pending snapshot is cleaned up.
    let pending = snaps.join("resume-fixture/c1/beta.snap.new");
    std::fs::write(&pending, "stale").unwrap();
    let out = snapshot_run();
    assert!(out.status.success(), "{}", text(&out));
    assert!(!pending.exists());
    // Drift: the committed snapshot says another answer.
    let committed = std::fs::read_to_string(&snap).unwrap();
    assert!(committed.contains("answer from beta"), "{committed}");
    std::fs::write(
        &snap,
        committed.replace("answer from beta", "answer from gamma"),
    )
    .unwrap();
    // insta prints the diff; the harness fails the cell without the panic
    // insta reports it with (nor its backtrace, which CI often asks for).
    let out = run(
        &dir,
        &["--exact", CELLS[1]],
        &[
            ("SCAFFOLD_SNAPSHOTS", snaps.to_str().unwrap()),
            ("RUST_BACKTRACE", "1"),
        ],
    );
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(all.contains("the session differs from"), "{all}");
    assert!(all.contains("answer from gamma"), "{all}");
    assert!(
        !all.contains("panicked at") && !all.contains("stack backtrace"),
        "{all}"
    );
    std::fs::write(&snap, &committed).unwrap();
    assert!(snapshot_run().status.success());

    // A snapshot in the flat folder of old is moved to its case's folder
    // and checked there; one beside a snapshot already moved stays put.
    let legacy = snaps.join("resume-fixture__beta__c1.snap");
    std::fs::rename(&snap, &legacy).unwrap();
    let out = snapshot_run();
    assert!(out.status.success(), "{}", text(&out));
    assert!(snap.is_file() && !legacy.exists(), "{}", text(&out));
    assert!(
        text(&out).contains("snapshots now live in a folder per case"),
        "{}",
        text(&out)
    );
    std::fs::write(&legacy, committed.replace("answer from beta", "stale")).unwrap();
    let out = snapshot_run();
    assert!(out.status.success(), "{}", text(&out));
    assert!(legacy.is_file(), "{}", text(&out));
}

#[test]
fn a_quarantined_cell_fails_loudly_without_failing_its_test_or_the_gate() {
    let dir = TempDir::new("resume-quarantine");
    // Not quarantined: the failing cell fails its test (the run passes the
    // gate at 75%, but under nextest that cell's process would fail).
    let out = run(&dir, &["--test-threads", "1"], &[]);
    let all = text(&out);
    assert!(
        all.contains("test [eval] resume-fixture::alpha::c1 ... FAILED"),
        "{all}"
    );

    let out = run(
        &dir,
        &["--test-threads", "1"],
        &[("RESUME_FIXTURE_QUARANTINE", "alpha::c1,gone")],
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains("test [eval] resume-fixture::alpha::c1 ... ok"),
        "{all}"
    );
    assert!(
        all.contains("QUARANTINED resume-fixture::alpha::c1 failed; not counted, its test passes:"),
        "{all}"
    );
    assert!(
        all.contains(
            "warning: 1 quarantined cell did not count towards the gate: alpha::c1 (0/1 passed)"
        ),
        "{all}"
    );
    assert!(
        all.contains("warning: quarantine pattern `gone` matches no cell of eval `resume-fixture`"),
        "{all}"
    );
    assert!(
        all.contains(
            "Gate: passed: pass rate 100.0% (95% CI 64.6%–100.0%, 7 cells, 1 quarantined left out)"
        ),
        "{all}"
    );
    let json = EvalResults::load(dir.out().join("resume-fixture.json")).unwrap();
    let cell = json
        .results
        .iter()
        .find(|c| c.case == "c1" && c.variant == "alpha")
        .unwrap();
    assert!(cell.quarantined && !cell.passed);
}
