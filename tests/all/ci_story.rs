//! One story in CI: whether a run passed is told the same by the process's
//! exit, libtest's closing line, the JUnit file (read by a JUnit parser),
//! the Markdown step summary, `cargo scaffold gate` and, with the
//! documented recipe, a real `cargo nextest run`; and a failed cell stays
//! visibly failed in each. On the fixture suite: eight cells, `alpha::c1`
//! failing its assertion, a gate of 75%.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::common::{self, TempDir, nextest_available, text};
use crate::fixture::{FixtureDir, run};

const FAILING: &str = "resume-fixture::alpha::c1";

/// The `cargo-scaffold` executable, built once with a nested `cargo build`.
fn cargo_scaffold() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        common::built_executable(&["build", "-p", "cargo-scaffold-evals"], "cargo-scaffold")
    })
}

/// `cargo scaffold {args}`.
fn scaffold_cli(args: &[&str]) -> Output {
    common::clean(Command::new(cargo_scaffold()))
        .args(args)
        .output()
        .expect("cargo-scaffold runs")
}

/// The fixture's run with every report, its step summary in `dir`.
fn run_reported(dir: &TempDir, envs: &[(&str, &str)]) -> (Output, String) {
    let summary = dir.join("step-summary.md");
    let summary_path = summary.to_string_lossy().into_owned();
    let mut all: Vec<(&str, &str)> = vec![
        ("SCAFFOLD_FORMAT", "table,json,markdown,junit"),
        ("GITHUB_STEP_SUMMARY", &summary_path),
    ];
    all.extend_from_slice(envs);
    let out = run(dir, &["--test-threads", "2"], &all);
    let md = std::fs::read_to_string(&summary).unwrap_or_default();
    (out, md)
}

fn junit(dir: &TempDir) -> junit_parser::TestSuite {
    let file = std::fs::File::open(dir.out().join("resume-fixture.junit.xml")).unwrap();
    let mut parsed = junit_parser::from_reader(std::io::BufReader::new(file)).unwrap();
    parsed.suites.remove(0)
}

fn case<'a>(suite: &'a junit_parser::TestSuite, name: &str) -> &'a junit_parser::TestCase {
    suite
        .cases
        .iter()
        .find(|c| c.original_name == name)
        .unwrap_or_else(|| panic!("no testcase {name}"))
}

/// `cargo scaffold gate` on the reports the run wrote: whether it passed.
fn cli_gate_passes(dir: &TempDir) -> bool {
    let out = scaffold_cli(&["gate", "--results", &dir.out().to_string_lossy()]);
    assert!(out.status.code().is_some_and(|c| c < 2), "{}", text(&out));
    out.status.success()
}

#[test]
fn a_failure_the_gate_allows_is_ignored_by_libtest_skipped_in_junit_and_the_run_passes() {
    let dir = TempDir::new("ci-allowed");
    let (out, md) = run_reported(&dir, &[]);
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains(&format!(
            "test [eval] {FAILING} ... ignored (FAILED, allowed by the gate: min_pass_rate 75%)"
        )),
        "{all}"
    );
    assert!(
        all.contains(&format!("ALLOWED FAILURE {FAILING} failed;")),
        "{all}"
    );
    assert!(
        all.contains("test [gate] resume-fixture            ... ok"),
        "{all}"
    );
    assert!(
        all.contains("test result: ok. 8 passed; 0 failed; 1 ignored"),
        "{all}"
    );
    assert!(
        all.contains("7 passed, 1 failed (1 allowed by their gate); gates 1/1 passed;")
            && all.contains("run passed"),
        "{all}"
    );
    let suite = junit(&dir);
    assert_eq!((suite.failures, suite.errors, suite.skipped), (0, 0, 1));
    match &case(&suite, "alpha::c1").status {
        junit_parser::TestStatus::Skipped(s) => assert!(
            s.message
                .starts_with("failed, allowed by the gate (min_pass_rate 75%): "),
            "{}",
            s.message
        ),
        other => panic!("alpha::c1 is {other:?}"),
    }
    assert!(case(&suite, "gate").status.is_success());
    assert!(md.starts_with("## ✅ Eval `resume-fixture`: 7/8"), "{md}");
    assert!(md.contains("(allowed by the gate)"), "{md}");
    assert!(cli_gate_passes(&dir));
}

#[test]
fn a_gate_that_fails_fails_its_test_the_exit_the_junit_and_cargo_scaffold_gate() {
    let dir = TempDir::new("ci-gate-fails");
    let (out, md) = run_reported(&dir, &[("RESUME_FIXTURE_MIN_PASS_RATE", "0.9")]);
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(
        all.contains("test [gate] resume-fixture            ... FAILED"),
        "{all}"
    );
    assert!(
        all.contains("test result: FAILED. 7 passed; 1 failed; 1 ignored"),
        "{all}"
    );
    // The gate's failure names the cells that failed.
    assert!(
        all.contains("gate FAILED: pass rate 87.5%") && all.contains("  alpha::c1: "),
        "{all}"
    );
    assert!(
        all.contains("run FAILED: the gate of resume-fixture failed"),
        "{all}"
    );
    // The gate did not allow the failure after all: JUnit says so.
    let suite = junit(&dir);
    assert!(!case(&suite, "gate").status.is_success());
    assert!(matches!(
        case(&suite, "alpha::c1").status,
        junit_parser::TestStatus::Failure(_)
    ));
    assert_eq!((suite.failures, suite.skipped), (2, 0));
    assert!(md.starts_with("## ❌ Eval `resume-fixture`"), "{md}");
    assert!(!cli_gate_passes(&dir));
}

#[test]
fn strict_fails_every_failed_cell_per_eval_and_by_environment() {
    for (name, env) in [
        ("ci-strict-eval", ("RESUME_FIXTURE_STRICT", "1")),
        ("ci-strict-env", ("SCAFFOLD_STRICT", "1")),
    ] {
        let dir = TempDir::new(name);
        let (out, md) = run_reported(&dir, &[env]);
        let all = text(&out);
        assert!(!out.status.success(), "{all}");
        assert!(
            all.contains(&format!("test [eval] {FAILING} ... FAILED")),
            "{all}"
        );
        assert!(
            all.contains("test [gate] resume-fixture            ... FAILED"),
            "{all}"
        );
        assert!(
            all.contains("Gate: FAILED: strict: 1 of 8 cells failed"),
            "{all}"
        );
        let suite = junit(&dir);
        assert!(matches!(
            case(&suite, "alpha::c1").status,
            junit_parser::TestStatus::Failure(_)
        ));
        assert_eq!(suite.failures, 2, "the cell and the gate");
        assert!(md.starts_with("## ❌"), "{md}");
        assert!(!cli_gate_passes(&dir));
    }
    let dir = TempDir::new("ci-strict-bad");
    let out = run(&dir, &[], &[("SCAFFOLD_STRICT", "always")]);
    assert!(
        text(&out).contains("SCAFFOLD_STRICT: expected `1`"),
        "{}",
        text(&out)
    );
}

/// `cargo nextest run` of the fixture into `dir`'s database, then `cargo
/// scaffold gate --run latest` on it (the recipe of `docs/ci.md`): the two
/// exit statuses.
fn nextest_recipe(dir: &TempDir, envs: &[(&str, &str)]) -> (Output, Output) {
    let mut cmd = common::cargo(&[
        "nextest",
        "run",
        "--locked",
        "--test",
        "resume_fixture",
        "--no-fail-fast",
    ]);
    cmd.env("SCAFFOLD_DATABASE", dir.db())
        .env("SCAFFOLD_SNAPSHOTS", "off")
        .env("SCAFFOLD_OUTPUT", dir.out());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let nextest = cmd.output().expect("cargo nextest runs");
    let db = dir.db().to_string_lossy().into_owned();
    let gate = scaffold_cli(&["gate", "--run", "latest", "--database", &db]);
    (nextest, gate)
}

#[test]
fn the_nextest_recipes_job_status_is_the_gates_verdict() {
    if !nextest_available("the_nextest_recipes_job_status_is_the_gates_verdict") {
        return;
    }
    // The gate allows the failure: nextest passes (the cell's process
    // reports it ignored), so does the gate, and the run is finished.
    let dir = TempDir::new("ci-nextest-pass");
    let (nextest, gate) = nextest_recipe(&dir, &[]);
    assert!(nextest.status.success(), "{}", text(&nextest));
    assert!(
        text(&nextest).contains("8 tests run: 8 passed"),
        "{}",
        text(&nextest)
    );
    assert!(
        !text(&nextest).contains("[gate]"),
        "no gate test under nextest"
    );
    assert!(gate.status.success(), "{}", text(&gate));
    let db = dir.db().to_string_lossy().into_owned();
    let runs = scaffold_cli(&["runs", "list", "--database", &db]);
    assert!(
        text(&runs).contains("nextest") && text(&runs).contains("finished in"),
        "{}",
        text(&runs)
    );
    // A gate of 90%: every cell passes its own test, the gate fails.
    let dir = TempDir::new("ci-nextest-gate");
    let (nextest, gate) = nextest_recipe(&dir, &[("RESUME_FIXTURE_MIN_PASS_RATE", "0.9")]);
    assert!(nextest.status.success(), "{}", text(&nextest));
    assert!(!gate.status.success(), "{}", text(&gate));
    assert!(
        text(&gate).contains("FAIL  resume-fixture"),
        "{}",
        text(&gate)
    );
    // Strict: the cell fails under nextest too, and so does the gate.
    let dir = TempDir::new("ci-nextest-strict");
    let (nextest, gate) = nextest_recipe(&dir, &[("SCAFFOLD_STRICT", "1")]);
    assert!(!nextest.status.success(), "{}", text(&nextest));
    assert!(
        text(&nextest).contains(&format!("[eval] {FAILING}")),
        "{}",
        text(&nextest)
    );
    assert!(!gate.status.success(), "{}", text(&gate));
}
