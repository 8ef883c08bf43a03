//! The harness's own fixture suite (`tests/fixtures/resume_fixture.rs`,
//! two variants × four cases, `alpha::c1` failing its assertion under a
//! gate of 75%), built once and run in child processes by the tests of
//! `resume.rs` and `ci_story.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use scaffold::_cargo_scaffold_support::eval::EvalResults;

use crate::common::{self, TempDir, text};

pub const CELLS: [&str; 8] = [
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
pub fn fixture() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        common::built_executable(
            &["test", "--test", "resume_fixture", "--no-run"],
            "resume_fixture",
        )
    })
}

/// The files of one fixture run.
pub trait FixtureDir {
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
pub fn fixture_command(dir: &TempDir, args: &[&str], envs: &[(&str, &str)]) -> Command {
    let mut cmd = common::clean(Command::new(fixture()));
    cmd.current_dir(dir.path())
        .args(args)
        .env("SCAFFOLD_DATABASE", dir.db())
        .env("SCAFFOLD_SNAPSHOTS", "off")
        .env("SCAFFOLD_OUTPUT", dir.out())
        .env("RESUME_FIXTURE_LOG", dir.log())
        .env_remove("RESUME_FIXTURE_SLEEP_MS")
        .env_remove("RESUME_FIXTURE_QUARANTINE")
        .env_remove("RESUME_FIXTURE_PRICED")
        .env_remove("RESUME_FIXTURE_MAX_COST")
        .env_remove("RESUME_FIXTURE_MIN_PASS_RATE")
        .env_remove("RESUME_FIXTURE_STRICT");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd
}

pub fn run(dir: &TempDir, args: &[&str], envs: &[(&str, &str)]) -> Output {
    fixture_command(dir, args, envs)
        .output()
        .expect("the fixture runs")
}

/// Run `cells` each in a process of its own, as nextest does, in the run
/// `run_id`: their results are recorded and the run is left unfinished.
pub fn run_as_nextest(dir: &TempDir, run_id: &str, cells: &[&str]) {
    for cell in cells {
        let out = run(dir, &["--exact", cell], &[("NEXTEST_RUN_ID", run_id)]);
        assert!(out.status.success(), "{}", text(&out));
        assert!(!text(&out).contains("Run: "), "no summary under nextest");
    }
}

/// The results document the fixture wrote, and its cells' test names, sorted.
pub fn written_results(dir: &TempDir) -> (EvalResults, Vec<String>) {
    let json = EvalResults::load(dir.out().join("resume-fixture.json")).unwrap();
    let mut cells: Vec<String> = json
        .results
        .iter()
        .map(|c| c.test_name(&json.eval, json.config.trials))
        .collect();
    cells.sort();
    (json, cells)
}
