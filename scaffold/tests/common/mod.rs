//! What the harness scenario tests share (`baseline_gate.rs`,
//! `flaky_gate.rs`): each test binary is also the eval suite it checks, run
//! as a child process over a temporary package.
#![allow(dead_code)] // Each test binary uses its own part.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use libtest_mimic::Failed;

/// This test binary as the eval suite of the package in `dir` (the child
/// sees `child_env` = `dir`), in playback, with reports under
/// `dir/target/scaffold/` and none of the caller's scaffold, nextest, CI or
/// insta settings.
pub fn child_command(child_env: &str, dir: &Path) -> Command {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = Command::new(exe);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("SCAFFOLD_") || key.starts_with("NEXTEST") || key.starts_with("INSTA_") {
            cmd.env_remove(key.as_ref());
        }
    }
    cmd.env(child_env, dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env("SCAFFOLD_DATABASE", ":memory:")
        .env("SCAFFOLD_MODE", "playback")
        .env_remove("CI")
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

/// The child's standard error.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `Ok` when `cond` holds, else a failure saying `what` with the child's output.
pub fn check(cond: bool, what: &str, o: &Output) -> Result<(), Failed> {
    if cond {
        Ok(())
    } else {
        Err(format!(
            "{what}\n--- exit: {}\n--- stdout:\n{}\n--- stderr:\n{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            stderr(o)
        )
        .into())
    }
}

/// Run `scenario` in a fresh directory named after `name`, kept when it fails.
pub fn in_temp_dir(
    name: &str,
    scenario: impl FnOnce(&Path) -> Result<(), Failed>,
) -> Result<(), Failed> {
    let dir: PathBuf = std::env::temp_dir().join(format!(
        "scaffold-{name}-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let outcome = scenario(&dir);
    if outcome.is_ok() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    outcome
}

/// The JUnit report at `path` as a JUnit parser reads it (what CI test
/// reporters go by): its one suite.
pub fn junit_suite(path: &Path) -> Result<junit_parser::TestSuite, Failed> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut parsed = junit_parser::from_reader(std::io::BufReader::new(file))
        .map_err(|e| format!("{} is not JUnit: {e}", path.display()))?;
    match parsed.suites.len() {
        1 => Ok(parsed.suites.remove(0)),
        n => Err(format!("{}: {n} suites, expected one", path.display()).into()),
    }
}

/// The testcase `name` (without its classname) of `suite`, if any.
pub fn junit_case<'a>(
    suite: &'a junit_parser::TestSuite,
    name: &str,
) -> Option<&'a junit_parser::TestCase> {
    suite.cases.iter().find(|c| c.original_name == name)
}

/// The failure message of a testcase, `None` when it did not fail.
pub fn junit_failure(case: Option<&junit_parser::TestCase>) -> Option<&str> {
    match &case?.status {
        junit_parser::TestStatus::Failure(f) => Some(&f.message),
        _ => None,
    }
}
