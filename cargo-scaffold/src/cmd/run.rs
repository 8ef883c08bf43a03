//! `cargo scaffold run`: `cargo test --test evals` with scaffold's settings
//! as environment variables (the harness reads nothing else: nextest and
//! `cargo insta test` pass no custom flags).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use scaffold::_cargo_scaffold_support::harness::{
    BASELINE_ENV, DATABASE_ENV, FAKE_ENV, FORMAT_ENV, OUTPUT_ENV, RESUME_ENV, TAGS_ENV, TRIALS_ENV,
    VARIANTS_ENV,
};
use scaffold::_cargo_scaffold_support::without_package_vars;
use scaffold::provider::recorder::{MODE_ENV, RecorderMode};

use crate::cli::RunArgs;
use crate::cmd::report_formats;
use crate::error::{CliError, CmdResult, Exit};
use crate::paths;
use crate::results::Baseline;

/// The cargo command a `run` spawns, checked and ready.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// `cargo` (`$CARGO` when cargo runs us).
    pub program: OsString,
    /// `test --test evals [-p …] [-- …]`.
    pub args: Vec<OsString>,
    /// The `SCAFFOLD_*` variables to set.
    pub envs: Vec<(&'static str, OsString)>,
    /// `--output`, absolute.
    pub output: Option<PathBuf>,
}

/// Check `args` and turn them into the cargo command. `extra` variables
/// (e.g. a fork's) are added as they are.
pub fn plan(args: &RunArgs, extra: &[(&'static str, String)]) -> Result<Plan, CliError> {
    let mut envs: Vec<(&'static str, OsString)> = Vec::new();
    if args.trials == Some(0) {
        return Err(CliError::input(
            "--trials 0: every case needs at least one trial (use --trials 1 or more)",
        ));
    }
    if let Some(n) = args.trials {
        envs.push((TRIALS_ENV, n.to_string().into()));
    }
    if args.parallel == Some(0) {
        return Err(CliError::input(
            "--parallel 0: at least one cell must run at a time (use --parallel 1 or more)",
        ));
    }
    if args.parallel.is_some()
        && args
            .harness_args
            .iter()
            .any(|a| a == "--test-threads" || a.starts_with("--test-threads="))
    {
        return Err(CliError::input(
            "--parallel and --test-threads after `--` both set how many cells run at once: keep one",
        ));
    }
    // The harness matches the globs (`*`, `?`) and names the variants when
    // one matches none.
    let filter: Vec<&str> = args
        .filter
        .iter()
        .map(|g| g.trim())
        .filter(|g| !g.is_empty())
        .collect();
    if !args.filter.is_empty() && filter.is_empty() {
        return Err(CliError::input(
            "--filter: no variant glob given (use e.g. --filter 'gpt-*')",
        ));
    }
    if !filter.is_empty() {
        envs.push((VARIANTS_ENV, filter.join(",").into()));
    }
    let tags: Vec<&str> = args
        .tags
        .iter()
        .map(|t| t.trim())
        .filter(|t| !t.is_empty())
        .collect();
    if !args.tags.is_empty() && tags.is_empty() {
        return Err(CliError::input(
            "--tags: no tag given (use e.g. --tags security,smoke)",
        ));
    }
    if !tags.is_empty() {
        envs.push((TAGS_ENV, tags.join(",").into()));
    }
    if let Some(list) = &args.format {
        let formats = report_formats(list, "--format")?;
        let names: Vec<&str> = formats.iter().map(|f| f.name()).collect();
        envs.push((FORMAT_ENV, names.join(",").into()));
    }
    let output = match &args.output {
        Some(dir) => {
            let dir = paths::absolute(dir)?;
            if dir.exists() && !dir.is_dir() {
                return Err(CliError::input(format!(
                    "--output {}: this is a file; give a directory for the reports",
                    dir.display()
                )));
            }
            envs.push((OUTPUT_ENV, dir.clone().into()));
            Some(dir)
        }
        None => None,
    };
    let mode = match &args.mode {
        Some(mode) => Some(mode.parse::<RecorderMode>().map_err(|_| {
            CliError::input(format!(
                "--mode `{mode}`: not a recorder mode (use playback, record or live)"
            ))
        })?),
        // Rules answer record and live runs: recording is what they are for.
        None => args.fake.as_ref().map(|_| RecorderMode::Record),
    };
    if let Some(mode) = mode {
        envs.push((MODE_ENV, mode.as_str().into()));
    }
    if let Some(fake) = &args.fake {
        envs.push((FAKE_ENV, fake_rules(fake, mode)?.into()));
    }
    if let Some(db) = &args.database {
        if db == ":memory:" {
            if args.resume.is_some() {
                return Err(CliError::input(
                    "--resume with --database :memory:: an in-memory database forgets the run, so there is nothing to resume (pass a database file)",
                ));
            }
            envs.push((DATABASE_ENV, db.into()));
        } else if db.trim().is_empty() {
            return Err(CliError::input(
                "--database: empty path (give a file, or `:memory:`)",
            ));
        } else {
            let path = paths::absolute(Path::new(db))?;
            if path.is_dir() {
                return Err(CliError::input(format!(
                    "--database {}: this is a directory; give a database file (e.g. {}/scaffold.db)",
                    path.display(),
                    path.display()
                )));
            }
            envs.push((DATABASE_ENV, path.into()));
        }
    }
    if let Some(baseline) = &args.baseline {
        let path = paths::absolute(baseline)?;
        // Fails now, before the suite builds, when the baseline is unreadable.
        Baseline::open(&path, "--baseline")?;
        envs.push((BASELINE_ENV, path.into()));
    }
    if let Some(resume) = &args.resume {
        let resume = resume.trim();
        if resume.is_empty() {
            return Err(CliError::input(
                "--resume: empty run id (use --resume alone for the last run)",
            ));
        }
        envs.push((RESUME_ENV, resume.into()));
    }
    for (k, v) in extra {
        envs.push((k, v.into()));
    }

    let mut cargo_args: Vec<OsString> = vec!["test".into(), "--test".into()];
    cargo_args.push(args.test_target.clone().into());
    if let Some(p) = &args.package {
        cargo_args.push("-p".into());
        cargo_args.push(p.into());
    }
    let mut harness: Vec<OsString> = Vec::new();
    if let Some(n) = args.parallel {
        harness.push("--test-threads".into());
        harness.push(n.to_string().into());
    }
    harness.extend(args.harness_args.iter().map(OsString::from));
    if !harness.is_empty() {
        cargo_args.push("--".into());
        cargo_args.extend(harness);
    }
    Ok(Plan {
        program: std::env::var_os("CARGO")
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| "cargo".into()),
        args: cargo_args,
        envs,
        output,
    })
}

/// `--fake`'s file, absolute, checked: it exists, and the run is not a
/// playback (which no fake answers).
fn fake_rules(fake: &Path, mode: Option<RecorderMode>) -> Result<PathBuf, CliError> {
    if mode == Some(RecorderMode::Playback) {
        return Err(CliError::input(
            "--fake with --mode playback: the rules answer record and live runs only (drop --mode to record)",
        ));
    }
    let path = paths::absolute(fake)?;
    if !path.is_file() {
        return Err(CliError::input(format!(
            "--fake {}: no such file (give the YAML file of fake-provider rules, e.g. evals/fake.yaml)",
            path.display()
        )));
    }
    Ok(path)
}

/// `cargo scaffold run`.
pub fn run(args: &RunArgs) -> CmdResult {
    let plan = plan(args, &[])?;
    execute(&plan)
}

/// Spawn the plan's cargo, wait, and pass its exit status through.
pub fn execute(plan: &Plan) -> CmdResult {
    if let Some(dir) = &plan.output {
        std::fs::create_dir_all(dir).map_err(|e| {
            CliError::input(format!("--output {}: cannot create it: {e}", dir.display()))
        })?;
    }
    // Under a test or `cargo run`, without the variables cargo set for
    // that package: they would make this build's dependencies rebuild.
    let status = without_package_vars(&mut Command::new(&plan.program))
        .args(&plan.args)
        .envs(plan.envs.iter().map(|(k, v)| (k, v)))
        .status()
        .map_err(|e| {
            CliError::failed(format!(
                "cannot start `{}`: {e} (is cargo on PATH? set CARGO to its path)",
                plan.program.to_string_lossy()
            ))
        })?;
    match status.code() {
        Some(0) => Ok(Exit::Success),
        Some(code) => Ok(Exit::Code(u8::try_from(code).unwrap_or(1).max(1))),
        None => {
            eprintln!("error: `cargo test` was stopped by a signal");
            Ok(Exit::Failed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn run_args(list: &[&str]) -> RunArgs {
        let mut argv = vec!["cargo-scaffold", "run"];
        argv.extend_from_slice(list);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Run(a) => a,
            _ => unreachable!(),
        }
    }

    fn env<'a>(plan: &'a Plan, key: &str) -> Option<&'a str> {
        plan.envs
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.to_str())
    }

    fn err(list: &[&str]) -> String {
        plan(&run_args(list), &[]).unwrap_err().to_string()
    }

    #[test]
    fn fake_rules_record_unless_told_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let rules = dir.path().join("fake.yaml");
        std::fs::write(&rules, "rules: []\n").unwrap();
        let rules = rules.to_str().unwrap();
        let p = plan(&run_args(&["--fake", rules]), &[]).unwrap();
        assert_eq!(env(&p, MODE_ENV), Some("record"));
        assert_eq!(env(&p, FAKE_ENV), Some(rules));
        let p = plan(&run_args(&["--fake", rules, "--mode", "live"]), &[]).unwrap();
        assert_eq!(env(&p, MODE_ENV), Some("live"));
        let e = err(&["--fake", rules, "--mode", "playback"]);
        assert!(e.contains("--fake with --mode playback"), "{e}");
        let missing = dir.path().join("nope.yaml");
        let e = err(&["--fake", missing.to_str().unwrap()]);
        assert!(e.contains("nope.yaml: no such file"), "{e}");
    }

    #[test]
    fn flags_become_environment_variables() {
        let p = plan(
            &run_args(&[
                "--trials",
                "3",
                "--filter",
                "gpt-*",
                "--filter",
                "opus-*",
                "--tags",
                "a, b",
                "--format",
                "json,md",
                "--mode",
                "RECORD",
                "--database",
                "/tmp/s.db",
                "--resume",
                "run-7",
            ]),
            &[("SCAFFOLD_FORK_FROM", "abc".into())],
        )
        .unwrap();
        assert_eq!(env(&p, "SCAFFOLD_TRIALS"), Some("3"));
        assert_eq!(env(&p, "SCAFFOLD_VARIANTS"), Some("gpt-*,opus-*"));
        assert_eq!(env(&p, "SCAFFOLD_TAGS"), Some("a,b"));
        assert_eq!(env(&p, "SCAFFOLD_FORMAT"), Some("json,markdown"));
        assert_eq!(env(&p, "SCAFFOLD_MODE"), Some("record"));
        assert_eq!(env(&p, "SCAFFOLD_DATABASE"), Some("/tmp/s.db"));
        assert_eq!(env(&p, "SCAFFOLD_RESUME"), Some("run-7"));
        assert_eq!(env(&p, "SCAFFOLD_FORK_FROM"), Some("abc"));
        assert_eq!(p.args, ["test", "--test", "evals"]);
    }

    #[test]
    fn paths_are_made_absolute_and_threads_go_after_the_double_dash() {
        let p = plan(
            &run_args(&[
                "--database",
                "x/s.db",
                "--output",
                "out",
                "--parallel",
                "4",
                "-p",
                "app",
                "--test",
                "my-evals",
                "--",
                "--exact",
                "e::v::c",
            ]),
            &[],
        )
        .unwrap();
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(env(&p, "SCAFFOLD_DATABASE"), cwd.join("x/s.db").to_str());
        assert_eq!(env(&p, "SCAFFOLD_OUTPUT"), cwd.join("out").to_str());
        assert_eq!(
            p.args,
            [
                "test",
                "--test",
                "my-evals",
                "-p",
                "app",
                "--",
                "--test-threads",
                "4",
                "--exact",
                "e::v::c"
            ]
        );
    }

    #[test]
    fn bad_values_are_one_line_with_the_fix() {
        assert!(err(&["--trials", "0"]).contains("--trials 1 or more"));
        assert!(err(&["--parallel", "0"]).contains("--parallel 1 or more"));
        assert!(err(&["--format", "table,pdf"]).contains("unknown report format `pdf`"));
        assert!(err(&["--format", ","]).contains("no format given"));
        assert!(err(&["--mode", "replay"]).contains("use playback, record or live"));
        assert!(err(&["--filter", " , "]).contains("no variant glob given"));
        assert!(err(&["--parallel", "2", "--", "--test-threads", "3"]).contains("keep one"));
        assert!(err(&["--database", ":memory:", "--resume"]).contains("nothing to resume"));
        assert!(err(&["--baseline", "no/such/file.json"]).contains("no such file or directory"));
        for e in [err(&["--trials", "0"]), err(&["--format", "pdf"])] {
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
