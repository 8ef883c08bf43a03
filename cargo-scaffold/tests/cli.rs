//! `cargo scaffold` as a user drives it: the real binary, on results files
//! built here, on the example suite of this workspace (run, sessions,
//! export and import, score, fork, runs, report, merge of nextest shards,
//! gate), and on bad input.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use scaffold::_cargo_scaffold_support::eval::{CellRecord, EvalResults, RunConfig};
use scaffold::_cargo_scaffold_support::eval::{EvalPlan, EvalRunMeta, RecordedCell};
use scaffold::eval::GateOptions;
use scaffold::store::Store;
use serde_json::Value;

/// The root package's test helpers (the nextest check is shared).
#[path = "../../tests/common/mod.rs"]
mod common;

const BIN: &str = env!("CARGO_BIN_EXE_cargo-scaffold");

/// The workspace root (the example suite's package).
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate is in the workspace")
        .to_path_buf()
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(workspace())
        .env("CARGO", env!("CARGO"))
        .env("CI", "true")
        .env("INSTA_UPDATE", "no")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("NEXTEST_RUN_ID")
        .env_remove("NEXTEST");
    for var in [
        "MODE",
        "TAGS",
        "DATABASE",
        "FORMAT",
        "BASELINE",
        "TRIALS",
        "VARIANTS",
        "OUTPUT",
        "RESUME",
        "SNAPSHOTS",
        "FORK_FROM",
        "FORK_AT",
    ] {
        cmd.env_remove(format!("SCAFFOLD_{var}"));
    }
    cmd.env("SCAFFOLD_PROGRESS", "0");
    cmd
}

fn run_cmd(mut cmd: Command) -> Out {
    let out = cmd.output().expect("cargo-scaffold runs");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn cli(args: &[&str]) -> Out {
    run_cmd(command(args))
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// An error of the CLI's own: exit 2, one line on stderr, nothing on stdout.
fn assert_input_error(args: &[&str], expected: &str) {
    let out = cli(args);
    assert_eq!(out.code, 2, "{args:?}: {}", out.all());
    let line = out.stderr.trim_end();
    assert_eq!(line.lines().count(), 1, "{args:?}: not one line: {line}");
    assert!(line.starts_with("error: "), "{args:?}: {line}");
    assert!(line.contains(expected), "{args:?}: {line} lacks {expected}");
    assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
}

/// A results document of eval `qa` with two variants × two cases; `failing`
/// lists the cells (`variant::case`) that fail.
fn results(failing: &[&str], latency_ms: u64) -> EvalResults {
    let mut cells = Vec::new();
    for variant in ["fast", "smart"] {
        for case in ["add", "sub"] {
            let mut c = CellRecord::new(variant, case);
            c.dataset = "arith".into();
            c.passed = !failing.contains(&format!("{variant}::{case}").as_str());
            if !c.passed {
                c.error = Some("expected 4, got 5".into());
            }
            c.metrics.latency_ms = latency_ms;
            c.duration_ms = latency_ms;
            c.session_id = format!("{variant}-{case}");
            cells.push(c);
        }
    }
    let config = RunConfig {
        trials: 1,
        inputs: 2,
        variants: vec!["fast".into(), "smart".into()],
        scorers: vec![],
        min_pass_rate: 0.9,
    };
    EvalResults::new("qa", "2026-01-28T12:00:00Z", config, cells)
}

fn write(dir: &Path, name: &str, r: &EvalResults) -> PathBuf {
    std::fs::create_dir_all(dir).expect("dir");
    let path = dir.join(name);
    std::fs::write(&path, r.to_json()).expect("write results");
    path
}

#[test]
fn every_subcommand_has_help() {
    let top = cli(&["--help"]);
    assert_eq!(top.code, 0, "{}", top.all());
    for sub in [
        "run", "report", "compare", "gate", "sessions", "runs", "fork", "score", "merge",
        "validate", "plan",
    ] {
        assert!(
            top.stdout.contains(&format!("\n  {sub} ")),
            "{sub}: {}",
            top.stdout
        );
    }
    // As cargo runs it: `cargo-scaffold scaffold …`.
    assert_eq!(cli(&["scaffold", "--help"]).stdout, top.stdout);
    for sub in [
        &["run"][..],
        &["report"],
        &["compare"],
        &["gate"],
        &["sessions"],
        &["sessions", "list"],
        &["sessions", "show"],
        &["sessions", "export"],
        &["sessions", "import"],
        &["runs"],
        &["runs", "list"],
        &["fork"],
        &["score"],
        &["merge"],
        &["validate"],
    ] {
        let mut args = vec!["scaffold"];
        args.extend_from_slice(sub);
        args.push("--help");
        let out = cli(&args);
        assert_eq!(out.code, 0, "{sub:?}: {}", out.all());
        let usage = format!("Usage: cargo scaffold {}", sub.join(" "));
        assert!(out.stdout.contains(&usage), "{sub:?}: {}", out.stdout);
    }
    let documented: [(&str, &[&str]); 7] = [
        (
            "run",
            &[
                "--trials",
                "--parallel",
                "--filter",
                "--tags",
                "--format",
                "--output",
                "--mode",
                "--database",
                "--baseline",
                "--resume",
                "--package",
                "--test",
                "Examples:",
            ],
        ),
        (
            "fork",
            &[
                "--from <ID|FILE.json>",
                "--at <POINT>",
                "--filter",
                "phase:fix:first",
            ],
        ),
        (
            "score",
            &[
                "--dataset <FILE>",
                "--sessions",
                "--tag",
                "--run",
                "--case",
                "--scorer",
            ],
        ),
        (
            "merge",
            &["<SHARD>...", "--output <DIR>", "--run <RUN_ID>", "--format"],
        ),
        ("report", &["--run <RUN_ID>"]),
        ("gate", &["--min-pass-rate <RATE>"]),
        (
            "plan",
            &["--effect <EFFECT>", "--power <POWER>", "--run <RUN_ID>"],
        ),
    ];
    for (sub, parts) in documented {
        let help = cli(&[sub, "--help"]).stdout;
        for part in parts {
            assert!(help.contains(part), "{sub}: {part}: {help}");
        }
    }
}

/// Every `cargo scaffold …` command of the README and the guides, each as
/// the words after `cargo scaffold` (to the end of its code span or line).
fn documented_commands() -> Vec<(String, Vec<String>)> {
    let root = workspace();
    let mut pages = vec![root.join("README.md")];
    let mut guides: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    guides.sort();
    pages.extend(guides);
    let mut commands = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).expect("read the page");
        let name = page
            .strip_prefix(&root)
            .unwrap_or(&page)
            .display()
            .to_string();
        for line in text.lines() {
            for (at, _) in line.match_indices("cargo scaffold ") {
                let rest = &line[at + "cargo scaffold ".len()..];
                let command = rest.split('`').next().unwrap_or_default();
                let words = command.split_whitespace().map(str::to_string).collect();
                commands.push((name.clone(), words));
            }
        }
    }
    commands
}

/// Whether `word` is a subcommand's name (not an argument).
fn is_name(word: &str) -> bool {
    !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase())
}

/// Whether `help` lists `flag` (`--run`, not `--run-id`).
fn has_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        let next = help[at + flag.len()..].chars().next();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
    })
}

/// What is wrong with one documented command: a subcommand or a flag that
/// its `--help` does not know.
fn check_documented(words: &[String]) -> Result<(), String> {
    let Some(sub) = words.first().filter(|w| is_name(w)) else {
        return Ok(()); // `cargo scaffold …`: no subcommand named
    };
    let help = cli(&["scaffold", sub, "--help"]);
    if help.code != 0 {
        return Err(format!("`{sub}` is not a subcommand: {}", help.all()));
    }
    let nested: Vec<&str> = words
        .get(1)
        .map(|w| w.split('|').collect())
        .unwrap_or_default();
    let nested: Vec<&str> = nested
        .into_iter()
        .filter(|w| is_name(w) && help.stdout.contains(&format!("\n  {w} ")))
        .collect();
    let mut helps = vec![help.stdout];
    for w in nested {
        let out = cli(&["scaffold", sub, w, "--help"]);
        if out.code != 0 {
            return Err(format!("`{sub} {w}`: {}", out.all()));
        }
        helps.push(out.stdout);
    }
    let flags = words
        .iter()
        .take_while(|w| *w != "--")
        .filter(|w| w.starts_with("--"))
        .map(|w| w.split('=').next().unwrap_or(w));
    // A nested subcommand's flags are its own.
    let own = &helps[helps.len().min(2) - 1..];
    for flag in flags {
        if !own.iter().all(|h| has_flag(h, flag)) {
            return Err(format!("`{sub}` has no flag {flag}"));
        }
    }
    Ok(())
}

#[test]
fn every_documented_command_exists_with_its_flags() {
    let commands = documented_commands();
    let named: std::collections::BTreeSet<&str> = commands
        .iter()
        .filter_map(|(_, words)| words.first().map(String::as_str).filter(|w| is_name(w)))
        .collect();
    assert!(
        named.len() >= 10,
        "the docs name the subcommands: {named:?}"
    );
    for (page, words) in &commands {
        if let Err(why) = check_documented(words) {
            panic!("{page}: cargo scaffold {}: {why}", words.join(" "));
        }
    }
}

#[test]
fn the_documented_command_check_refuses_unknown_ones() {
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert!(check_documented(&words("gate --min-pass-rate 90%")).is_ok());
    assert!(check_documented(&words("sessions export|import")).is_ok());
    let unknown = check_documented(&words("publish --results merged/")).unwrap_err();
    assert!(
        unknown.contains("`publish` is not a subcommand"),
        "{unknown}"
    );
    let flag = check_documented(&words("gate --min-pass 90%")).unwrap_err();
    assert!(flag.contains("no flag --min-pass"), "{flag}");
    let nested = check_documented(&words("sessions list --colour")).unwrap_err();
    assert!(nested.contains("no flag --colour"), "{nested}");
}

#[test]
fn bad_input_is_one_line_with_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ok = write(dir.path(), "qa.json", &results(&[], 10));
    let ok = s(&ok);
    let missing = dir.path().join("missing.json");
    let missing = s(&missing);
    let not_json = dir.path().join("notes.json");
    std::fs::write(&not_json, "not json").expect("write");

    assert_input_error(
        &["report", "--results", ok, "--format", "table,pdf"],
        "--format: unknown report format `pdf` (known: table, json, markdown, junit, html)",
    );
    assert_input_error(&["report", "--results", missing], "--results ");
    assert_input_error(
        &["report", "--results", missing],
        "no such file or directory",
    );
    assert_input_error(
        &["report", "--results", s(&not_json)],
        "is not a scaffold results document",
    );
    assert_input_error(&["gate", "--results", missing], "no such file or directory");
    for rate in ["1.5", "ninety", "-1", "120%"] {
        assert_input_error(
            &["gate", "--results", ok, "--min-pass-rate", rate],
            "expected a fraction from 0 to 1 (e.g. 0.9) or a percentage (e.g. 90%)",
        );
    }
    assert_input_error(
        &["gate", "--results", ok, "--baseline", missing],
        "--baseline ",
    );
    assert_input_error(&["compare", missing, ok], "BASELINE ");
    assert_input_error(
        &["compare", ok, ok, "--format", "html"],
        "text, json or markdown",
    );
    // `run` checks its flags before it spawns cargo.
    assert_input_error(&["run", "--format", "pdf"], "unknown report format `pdf`");
    assert_input_error(&["run", "--trials", "0"], "--trials 1 or more");
    assert_input_error(&["run", "--mode", "replay"], "use playback, record or live");
    assert_input_error(&["run", "--baseline", missing], "no such file or directory");
    let db = dir.path().join("none.db");
    assert_input_error(
        &["sessions", "list", "--database", s(&db)],
        "no session database at",
    );
    assert!(!db.exists(), "reading must not create a database");
    for args in [
        &["sessions", "show", "abc", "--database", s(&db)][..],
        &["sessions", "export", "abc", "--database", s(&db)],
        &["runs", "list", "--database", s(&db)],
        &["report", "--run", "latest", "--database", s(&db)],
        &["gate", "--run", "latest", "--database", s(&db)],
        &[
            "score",
            "--dataset",
            "evals/code-review.yaml",
            "--database",
            s(&db),
        ],
        &["fork", "--from", "abc", "--at", "3", "--database", s(&db)],
    ] {
        assert_input_error(args, "no session database at");
    }
    assert!(!db.exists(), "reading must not create a database");
    // Values checked before anything is read or run.
    assert_input_error(
        &["fork", "--from", "abc", "--at", "phase:fix"],
        "--at: `phase:fix` is not a fork point (the occurrence is missing); expected phase:<name>:first",
    );
    assert_input_error(
        &[
            "fork",
            "--from",
            "abc",
            "--at",
            "3",
            "--database",
            ":memory:",
        ],
        "fork from an export",
    );
    assert_input_error(
        &["fork", "--from", missing, "--at", "3"],
        "--from: session file",
    );
    assert_input_error(
        &["fork", "--from", s(&not_json), "--at", "3"],
        "not a JSON session export",
    );
    assert_input_error(
        &[
            "score",
            "--dataset",
            "evals/code-review.yaml",
            "--scorer",
            "speed",
        ],
        "--scorer `speed`: unknown scorer (use output-valid, latency=MAX_MS,IDEAL_MS",
    );
    assert_input_error(
        &[
            "score",
            "--dataset",
            "evals/code-review.yaml",
            "--scorer",
            "cost=0.01,0.05",
        ],
        "the ideal must not be above the maximum",
    );
    assert_input_error(
        &["score", "--dataset", missing],
        "--dataset: cannot read dataset",
    );
    let bad_dataset = dir.path().join("bad.yaml");
    std::fs::write(
        &bad_dataset,
        "name: x\ncases:\n  - id: a\n    input: 1\n    assertions:\n      - type: signal.contans\n        pattern: x\n",
    )
    .expect("write");
    assert_input_error(
        &["sessions", "import", s(&not_json)],
        "not a JSON session export",
    );
    assert_input_error(&["merge", missing, "--output", s(dir.path())], "SHARD ");
    assert_input_error(
        &["merge", ok, ok, "--output", s(&dir.path().join("m"))],
        "merge: cell qa::fast::add is in ",
    );
    let odd = write(&dir.path().join("odd"), "qa.json", &{
        let mut r = results(&[], 10);
        r.config.trials = 2;
        r
    });
    assert_input_error(
        &["merge", ok, s(&odd), "--output", s(&dir.path().join("m"))],
        "merge: cannot merge results of eval `qa` run with different trials",
    );

    // clap's own errors are usage errors too.
    let unknown = cli(&["gate", "--min-pas-rate", "1"]);
    assert_eq!(unknown.code, 2, "{}", unknown.all());
    assert!(
        unknown.stderr.contains("--min-pass-rate"),
        "{}",
        unknown.stderr
    );
}

#[test]
fn report_compare_and_gate_on_stored_results() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base_dir = dir.path().join("base");
    let cand_dir = dir.path().join("cand");
    let base = write(&base_dir, "qa.json", &results(&[], 10));
    // One cell regresses (pass → fail) and a second fails: 50% < 90%.
    let cand = write(
        &cand_dir,
        "qa.json",
        &results(&["fast::add", "smart::sub"], 10),
    );
    let (base, cand) = (s(&base), s(&cand));

    // gate
    let out = cli(&["gate", "--results", base]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout.contains(
            "PASS  qa  pass rate 100.0% (95% CI 51.0%–100.0%, 4 cells) ≥ min_pass_rate 90.0%"
        ),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("gate: passed"), "{}", out.stdout);
    let out = cli(&["gate", "--results", cand]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stdout.contains(
            "FAIL  qa  pass rate 50.0% (95% CI 15.0%–85.0%, 4 cells) is below min_pass_rate 90.0%"
        ),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("fast::add: run failed: expected 4, got 5"),
        "{}",
        out.stdout
    );
    let out = cli(&["gate", "--results", cand, "--min-pass-rate", "50%"]);
    assert_eq!(out.code, 0, "{}", out.all());
    // 2 of 4 is 50%, but its interval's lower bound is not.
    let out = cli(&[
        "gate",
        "--results",
        cand,
        "--min-pass-rate",
        "50%",
        "--lower-bound",
    ]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stdout.contains(
            "FAIL  qa  Wilson lower bound 15.0% of pass rate 50.0% (95% CI 15.0%–85.0%, 4 cells) is below min_pass_rate 50.0%"
        ),
        "{}",
        out.stdout
    );
    let out = cli(&[
        "gate",
        "--results",
        s(&cand_dir),
        "--min-pass-rate",
        "0.5",
        "--baseline",
        s(&base_dir),
    ]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stdout.contains("PASS  qa  pass rate 50.0%"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("FAIL  qa  against "), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("[critical] fast::add: passed in the baseline, fails now"),
        "{}",
        out.stdout
    );

    // compare
    let out = cli(&["compare", base, cand]);
    assert_eq!(out.code, 1, "a regression blocks: {}", out.all());
    assert!(
        out.stdout.starts_with("qa: worse (BLOCKS: "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("pass rate  100.0% → 50.0% (-50.0 pts)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("Regressions (2):"), "{}", out.stdout);
    let out = cli(&["compare", cand, base]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout.starts_with("qa: better (does not block)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("Improvements (2):"), "{}", out.stdout);
    let out = cli(&["compare", s(&base_dir), s(&base_dir)]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(out.stdout.starts_with("qa: equivalent"), "{}", out.stdout);
    let out = cli(&["compare", base, cand, "--format", "json"]);
    assert_eq!(out.code, 1);
    let doc: Value = serde_json::from_str(&out.stdout).expect("compare --format json is JSON");
    assert_eq!(doc["summary"]["shouldBlock"], true);
    assert_eq!(doc["regressions"][0]["caseId"], "fast::add");
    let out = cli(&["compare", base, cand, "--format", "markdown"]);
    assert!(
        out.stdout.contains("**Verdict: worse** · ⛔ blocks"),
        "{}",
        out.stdout
    );
    // Slower by 10× is a metric warning; it blocks only when asked.
    let slow = write(&dir.path().join("slow"), "qa.json", &results(&[], 1000));
    let out = cli(&["compare", base, s(&slow)]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout
            .contains("[warning] fast::add: latency (ms) worsened from 10 to 1000"),
        "{}",
        out.stdout
    );
    let out = cli(&["compare", base, s(&slow), "--block-on-metrics"]);
    assert_eq!(out.code, 1, "{}", out.all());
    // A candidate whose every cell errored measured no latency or cost:
    // unknown, never 0ms or $0.
    let every = ["fast::add", "fast::sub", "smart::add", "smart::sub"];
    let errored = write(&dir.path().join("errored"), "qa.json", &results(&every, 0));
    let out = cli(&["compare", base, s(&errored)]);
    assert!(
        out.stdout
            .contains("latency    10ms → unknown per cell (change unknown)"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("→ 0ms"), "{}", out.stdout);

    // report
    let out = cli(&["report", "--results", cand]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(out.stdout.contains("│ Eval: qa"), "{}", out.stdout);
    assert!(out.stdout.contains("1/2 (50%)"), "{}", out.stdout);
    let site = dir.path().join("site");
    let out = cli(&[
        "report",
        "--results",
        s(&cand_dir),
        "--format",
        "table,json,md,junit,html",
        "--output",
        s(&site),
        "--baseline",
        base,
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(out.stdout.contains("│ Eval: qa"), "{}", out.stdout);
    for file in [
        "qa.json",
        "qa.md",
        "qa.junit.xml",
        "qa.html",
        "qa.comparison.json",
        "index.html",
    ] {
        assert!(site.join(file).is_file(), "{file} written: {}", out.stderr);
    }
    // The index links the eval's reports; its page links back.
    let index = std::fs::read_to_string(site.join("index.html")).expect("index");
    for file in ["qa.html", "qa.json", "qa.md", "qa.junit.xml"] {
        assert!(index.contains(&format!("href=\"./{file}\"")), "{index}");
    }
    let page = std::fs::read_to_string(site.join("qa.html")).expect("html");
    assert!(page.contains("<a href=\"./index.html\">"), "{page}");
    let again = EvalResults::load(site.join("qa.json")).expect("the JSON report loads");
    assert_eq!(again, EvalResults::load(cand).expect("loads"));
    let md = std::fs::read_to_string(site.join("qa.md")).expect("md");
    assert!(md.contains("**Verdict: worse**"), "{md}");
    let out = cli(&["report", "--results", base, "--format", "junit"]);
    assert!(out.stdout.starts_with("<?xml"), "{}", out.stdout);
}

#[test]
fn run_drives_the_example_suite_and_the_other_commands_read_what_it_left() {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("sessions.db");
    let out_dir = dir.path().join("results");
    let out = cli(&[
        "scaffold",
        "run",
        "--database",
        s(&db),
        "--output",
        s(&out_dir),
        "--format",
        "table,json,markdown",
        "--parallel",
        "2",
        // The code review eval's cells of prompt v2 (three trials of each
        // case, all passing): what follows reads their sessions.
        "--",
        "code-review::prompt-v2::",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    let text = out.all();
    assert!(text.contains("33 passed"), "{text}");
    // The other cells, and every eval's [gate] test: the filter leaves
    // them out, so the gate is shown but not judged.
    assert!(text.contains("71 filtered out"), "{text}");
    assert!(text.contains("│ Eval: code-review"), "{text}");
    assert!(
        text.contains("Gate: not judged (the test filter left out `[gate] code-review`): passed"),
        "{text}"
    );
    let results = out_dir.join("code-review.json");
    let loaded = EvalResults::load(&results).expect("results JSON in --output");
    assert_eq!(loaded.cell_count(), 33);
    assert!(out_dir.join("code-review.md").is_file());

    // The commands that read results.
    let r = s(&results);
    let gate = cli(&["gate", "--results", s(&out_dir)]);
    assert_eq!(gate.code, 0, "{}", gate.all());
    assert!(
        gate.stdout
            .contains("PASS  code-review  pass rate 100.0% (95% CI 74.1%–100.0%, 33 cells)"),
        "{}",
        gate.stdout
    );
    let cmp = cli(&["compare", r, r]);
    assert_eq!(cmp.code, 0, "{}", cmp.all());
    assert!(
        cmp.stdout
            .starts_with("code-review: equivalent (does not block)"),
        "{}",
        cmp.stdout
    );
    let report = cli(&["report", "--results", r]);
    assert!(
        report.stdout.contains("Cheapest: prompt-v2"),
        "{}",
        report.stdout
    );

    // The sessions it stored.
    let db = s(&db);
    let list = cli(&["sessions", "list", "--database", db, "--limit", "0"]);
    assert_eq!(list.code, 0, "{}", list.all());
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert!(lines[0].starts_with("ID  "), "{}", list.stdout);
    for col in [
        "WORKFLOW", "VARIANT", "STATUS", "SIGNALS", "STARTED", "PARENT",
    ] {
        assert!(lines[0].contains(col), "{col}: {}", lines[0]);
    }
    assert_eq!(lines.len(), 34, "{}", list.stdout);
    assert!(
        lines[1].contains("code-review") && lines[1].contains("completed"),
        "{}",
        lines[1]
    );
    let tagged = cli(&[
        "sessions",
        "list",
        "--database",
        db,
        "--tag",
        "case:sql-injection",
        "--variant",
        "prompt-v2",
    ]);
    // One session per trial.
    assert_eq!(tagged.stdout.lines().count(), 4, "{}", tagged.stdout);
    let failed = cli(&["sessions", "list", "--database", db, "--status", "failed"]);
    assert_eq!(failed.code, 0);
    assert!(failed.stdout.is_empty() && failed.stderr.contains("no sessions match"));

    let short_id = tagged
        .stdout
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .expect("an id");
    let show = cli(&["sessions", "show", short_id, "--database", db]);
    assert_eq!(show.code, 0, "{}", show.all());
    for part in [
        "workflow:  code-review",
        "variant:   prompt-v2",
        "status:    completed",
        "case:sql-injection",
        "lineage:",
        "(a root session: not forked)",
        "signals:",
        "harness:start",
        "agent:activated",
        "reviewer",
    ] {
        assert!(show.stdout.contains(part), "{part}: {}", show.stdout);
    }
    let json = cli(&["sessions", "show", short_id, "--database", db, "--json"]);
    let doc: Value = serde_json::from_str(&json.stdout).expect("show --json is JSON");
    let id = doc["session"]["id"].as_str().expect("id");
    assert!(id.ends_with(short_id), "{id} does not end with {short_id}");
    assert_eq!(doc["signals"][0]["name"], "harness:start");
    assert_eq!(
        doc["signals"].as_array().map(Vec::len),
        doc["session"]["signalCount"].as_u64().map(|n| n as usize)
    );
    assert!(
        loaded
            .results
            .iter()
            .any(|c| c.variant == "prompt-v2" && c.case == "sql-injection" && c.session_id == id),
        "the results name the stored session"
    );
    transcript_pages(dir.path(), db, short_id);

    // Tags and variant globs go to the harness; its exit status comes back.
    let tagged_dir = dir.path().join("tagged");
    let tagged = cli(&[
        "run",
        "--database",
        ":memory:",
        "--tags",
        "xss,negative",
        "--filter",
        "*-v2",
        "--format",
        "json",
        "--output",
        s(&tagged_dir),
    ]);
    assert_eq!(tagged.code, 0, "{}", tagged.all());
    assert!(tagged.all().contains("6 passed"), "{}", tagged.all());
    let only = EvalResults::load(tagged_dir.join("code-review.json")).expect("--output");
    assert_eq!(only.cell_count(), 6);
    assert!(only.results.iter().all(|c| c.variant == "prompt-v2"));
    let bad = cli(&[
        "run",
        "--database",
        ":memory:",
        "--",
        "--no-such-libtest-flag",
    ]);
    assert_ne!(bad.code, 0, "{}", bad.all());
    assert!(
        bad.stderr.contains("--no-such-libtest-flag"),
        "{}",
        bad.stderr
    );

    let run_id = text
        .lines()
        .find_map(|l| l.strip_prefix("Run: "))
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
        .expect("the harness prints `Run: <id>`");
    sessions_runs_score_and_merge(dir.path(), db, &run_id, &loaded);
    fork_from_stored_sessions(dir.path(), db);
    eprintln!("end to end on the example suite: {:.1?}", started.elapsed());
}

/// `sessions show --html` and `report --run latest --format html` with
/// transcripts, `SCAFFOLD_REPORT_TRANSCRIPTS` and its bad value; prints the
/// bytes a transcript adds per cell and how long Chromium takes to open the
/// page (figures for docs/ci.md, not checked).
fn transcript_pages(dir: &Path, db: &str, session: &str) {
    let page = dir.join("session.html");
    let out = cli(&[
        "sessions",
        "show",
        session,
        "--database",
        db,
        "--html",
        s(&page),
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    let html = std::fs::read_to_string(&page).expect("the page");
    assert!(html.contains("<title>Session "), "{html}");
    assert!(
        html.contains("\"k\":\"provider\""),
        "a provider call: {html}"
    );
    let printed = cli(&["sessions", "show", session, "--database", db, "--html"]);
    assert!(
        printed.stdout.starts_with("<!DOCTYPE html>"),
        "{}",
        printed.all()
    );

    let report = |selection: &str, site: &str| {
        let site = dir.join(site);
        let mut cmd = command(&[
            "report",
            "--run",
            "latest",
            "--database",
            db,
            "--format",
            "html,markdown",
            "--output",
            s(&site),
        ]);
        cmd.env("SCAFFOLD_REPORT_TRANSCRIPTS", selection);
        let out = run_cmd(cmd);
        assert_eq!(out.code, 0, "{}", out.all());
        (
            site.join("code-review.html"),
            std::fs::read_to_string(site.join("code-review.html")).expect("html"),
        )
    };
    let (all_path, all) = report("all", "site-all");
    let (_, failing) = report("failing", "site-failing");
    let (_, none) = report("none", "site-none");
    assert_eq!(all.matches("type=\"application/json\"").count(), 33);
    assert!(
        all.contains("\"k\":\"provider\""),
        "provider calls in the transcripts"
    );
    // Every cell passed: the default embeds none.
    assert_eq!(failing.matches("type=\"application/json\"").count(), 0);
    assert_eq!(none.matches("type=\"application/json\"").count(), 0);
    eprintln!(
        "HTML report of code-review: {} bytes without transcripts, {} with all 10: {} bytes per cell",
        none.len(),
        all.len(),
        (all.len() - none.len()) / 10
    );
    let mut bad = command(&[
        "report",
        "--run",
        "latest",
        "--database",
        db,
        "--format",
        "html",
    ]);
    bad.env("SCAFFOLD_REPORT_TRANSCRIPTS", "most");
    let bad = run_cmd(bad);
    assert_eq!(bad.code, 2, "{}", bad.all());
    assert_eq!(
        bad.stderr.trim_end(),
        "error: SCAFFOLD_REPORT_TRANSCRIPTS=`most` is not one of: all, failing, none"
    );
    open_in_chromium(&all_path);
}

/// How long `page` takes to load in headless Chromium, from navigation
/// start to the load event with its script run (printed, not checked).
fn open_in_chromium(page: &Path) {
    let html = std::fs::read_to_string(page).expect("the page");
    let timed = page.with_extension("timed.html");
    let probe = "<script>window.addEventListener('load', function () { setTimeout(function () { \
        document.body.setAttribute('data-loaded-ms', Math.round(performance.now())); }, 0); });</script>";
    std::fs::write(&timed, html.replace("</body>", &format!("{probe}</body>"))).expect("write");
    let target = format!("file://{}", timed.display());
    let Some(dom) = chromium_dom(&target, &page.with_extension("profile")) else {
        return;
    };
    let ms = dom
        .split("data-loaded-ms=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or("?");
    eprintln!("Chromium loaded {} in {ms} ms", page.display());
}

/// The DOM headless Chromium holds after loading `target` (a URL), with
/// the profile `profile`; `None`, said on stderr, without Chromium.
fn chromium_dom(target: &str, profile: &Path) -> Option<String> {
    let chromium = Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        eprintln!("SKIPPED: no {}", chromium.display());
        return None;
    }
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(target)
        .output()
        .expect("chromium runs");
    assert!(out.status.success(), "chromium failed on {target}");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The id of the stored session of `variant` on `case`.
fn session_of(db: &str, variant: &str, case: &str) -> String {
    let tag = format!("case:{case}");
    let out = cli(&[
        "sessions",
        "list",
        "--database",
        db,
        "--tag",
        &tag,
        "--variant",
        variant,
        "--json",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    let list: Value = serde_json::from_str(&out.stdout).expect("sessions list --json is JSON");
    list.as_array()
        .and_then(|l| l.last())
        .and_then(|s| s["id"].as_str())
        .expect("a session")
        .to_string()
}

/// After one run into `db`: runs list, report --run, export and import,
/// score, merge of a database's runs.
fn sessions_runs_score_and_merge(dir: &Path, db: &str, run_id: &str, loaded: &EvalResults) {
    // runs list
    let runs = cli(&["runs", "list", "--database", db]);
    assert_eq!(runs.code, 0, "{}", runs.all());
    let lines: Vec<&str> = runs.stdout.lines().collect();
    assert!(lines[0].starts_with("RUN "), "{}", runs.stdout);
    assert!(lines[1].starts_with(run_id), "{}", runs.stdout);
    assert!(lines[1].contains("harness") && lines[1].contains("finished in"));
    assert!(lines[1].contains("code-review") && lines[1].ends_with("33/33"));
    // The run says the commit it ran on: this checkout's HEAD, as git says.
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(workspace())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let on_ci = [
        "GITHUB_SHA",
        "CI_COMMIT_SHA",
        "BUILDKITE_COMMIT",
        "CIRCLE_SHA1",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some());
    if let (Some(head), false) = (head, on_ci) {
        let json = cli(&["runs", "list", "--database", db, "--json"]);
        let listed: Value = serde_json::from_str(&json.stdout).expect("runs as JSON");
        assert_eq!(
            listed[0]["source"]["commit"],
            head.as_str(),
            "{}",
            json.stdout
        );
        assert!(
            lines[1].contains(&format!("@{}", &head[..8])),
            "{}",
            runs.stdout
        );
    }

    // report --run: the results rebuilt from the stored cells.
    let report_dir = dir.join("from-run");
    let prefix = &run_id[..8];
    let out = cli(&[
        "report",
        "--run",
        prefix,
        "--database",
        db,
        "--format",
        "table,json",
        "--output",
        s(&report_dir),
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(out.stdout.contains("│ Eval: code-review"), "{}", out.stdout);
    assert!(
        out.stderr
            .contains(&format!("Run: {run_id} (harness, finished, 33 of 33"))
    );
    let rebuilt = EvalResults::load(report_dir.join("code-review.json")).expect("report --run");
    assert_eq!(rebuilt.results, loaded.results);
    let gate = cli(&["gate", "--run", "latest", "--database", db]);
    assert_eq!(gate.code, 0, "{}", gate.all());
    assert!(
        gate.stdout
            .contains("PASS  code-review  pass rate 100.0% (95% CI 74.1%–100.0%, 33 cells)")
    );

    // export → import into another database → show there.
    let id = session_of(db, "prompt-v2", "xss-vulnerability");
    let file = dir.join("exports").join("xss.json");
    let out = cli(&[
        "sessions",
        "export",
        &id[..id.len() - 4],
        "--database",
        db,
        "-o",
        s(&file),
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stderr.contains(&format!("exported session {id}")),
        "{}",
        out.stderr
    );
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("export")).expect("JSON");
    assert_eq!(doc["format"], "scaffold.session");
    assert_eq!(doc["session"]["id"], id.as_str());
    let stdout = cli(&["sessions", "export", &id, "--database", db]);
    let piped: Value = serde_json::from_str(&stdout.stdout).expect("export to stdout");
    assert_eq!(piped, doc);
    let other = dir.join("other.db");
    let out = cli(&["sessions", "import", s(&file), "--database", s(&other)]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stderr.contains("1 session(s) imported"),
        "{}",
        out.stderr
    );
    let show = cli(&[
        "sessions",
        "show",
        &id[..6],
        "--database",
        s(&other),
        "--json",
    ]);
    assert_eq!(show.code, 0, "{}", show.all());
    let shown: Value = serde_json::from_str(&show.stdout).expect("show --json");
    assert_eq!(shown["signals"], doc["signals"]);
    assert_input_error(
        &["sessions", "import", s(&file), "--database", s(&other)],
        &format!("session {id} ({}) is already in ", s(&file)),
    );
    assert_input_error(
        &["sessions", "import", db],
        "is a session database, not a file written by `cargo scaffold sessions export`",
    );

    // score: the newest run's sessions against their own cases, all pass ...
    let out = cli(&[
        "score",
        "--dataset",
        "evals/code-review.yaml",
        "--database",
        db,
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert_eq!(out.stdout.lines().count(), 35, "{}", out.stdout);
    assert!(
        out.stdout.starts_with("SESSION       VARIANT"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("scored 33 session(s) with evals/code-review.yaml: 33 passed, 0 failed"),
        "{}",
        out.stdout
    );
    let out = cli(&[
        "score",
        "--dataset",
        "evals/code-review.yaml",
        "--database",
        s(&other),
        "--tag",
        "eval:code-review",
        "--scorer",
        "output-valid",
        "--scorer",
        "cost=0.05,0.01",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout
            .contains("xss-vulnerability  pass    5/5 assertions, 2/2 scorers"),
        "{}",
        out.stdout
    );
    // ... and one graded with another case's assertions fails, exit 1.
    let out = cli(&[
        "score",
        "--dataset",
        "evals/code-review.yaml",
        "--database",
        db,
        "--sessions",
        &id[id.len() - 12..],
        "--case",
        "sql-injection",
        "--json",
    ]);
    assert_eq!(out.code, 1, "{}", out.all());
    let reports: Value = serde_json::from_str(&out.stdout).expect("score --json");
    assert_eq!(reports[0]["passed"], false);
    assert_eq!(reports[0]["case"], "sql-injection");
    let failed: Vec<&str> = reports[0]["report"]["assertions"]
        .as_array()
        .expect("assertions")
        .iter()
        .filter(|a| a["passed"] == false)
        .filter_map(|a| a["message"].as_str())
        .collect();
    assert!(
        failed
            .iter()
            .any(|m| m.starts_with("output does not contain \"injection\"")),
        "{failed:?}"
    );
    let out = cli(&[
        "score",
        "--dataset",
        "evals/code-review.yaml",
        "--database",
        db,
        "--sessions",
        &id,
        "--case",
        "sql-injection",
    ]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stdout
            .contains("sql-injection  FAIL    8/10 assertions"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("0 passed, 1 failed"), "{}", out.stdout);
    assert_input_error(
        &[
            "score",
            "--dataset",
            "evals/code-review.yaml",
            "--database",
            db,
            "--tag",
            "nope",
        ],
        "no session to score: the sessions tagged nope match none in ",
    );
    assert_input_error(
        &[
            "score",
            "--dataset",
            "evals/code-review.yaml",
            "--database",
            db,
            "--run",
            "nope",
        ],
        "no eval run `nope` in ",
    );

    // merge: a database given twice holds every cell twice.
    let merged = dir.join("merged-run");
    let out = cli(&[
        "merge",
        db,
        "--run",
        run_id,
        "--output",
        s(&merged),
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    let whole = EvalResults::load(merged.join("code-review.json")).expect("merged");
    assert_eq!(whole.results, loaded.results);
    assert_input_error(
        &["merge", db, db, "--output", s(&merged)],
        &format!("is in {db} (run {run_id}) twice: give each shard once"),
    );
}

/// Forks of stored sessions of `db`, at the first phase (every variant)
/// and at a later one (the parent's variant; the others cannot play back).
fn fork_from_stored_sessions(dir: &Path, db: &str) {
    let parent = session_of(db, "prompt-v2", "xss-vulnerability");
    let out_review = dir.join("fork-review");
    let out = cli(&[
        "fork",
        "--from",
        &parent[parent.len() - 12..],
        "--at",
        "phase:review:first",
        "--database",
        db,
        "--output",
        s(&out_review),
        "--format",
        "table,json",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stderr.contains(&format!(
            "fork: the cells start from session {parent} at phase:review:first (phase `review`, signal 3), case `xss-vulnerability`"
        )),
        "{}",
        out.stderr
    );
    // Both variants, three trials each.
    assert!(out.all().contains("6 passed"), "{}", out.all());
    let forked = EvalResults::load(out_review.join("code-review.json")).expect("fork results");
    assert_eq!(forked.cell_count(), 6);
    assert_eq!(forked.config.inputs, 1);
    assert!(
        forked
            .results
            .iter()
            .all(|c| c.case == "xss-vulnerability" && c.passed)
    );
    // The children are stored with their lineage.
    let children = cli(&[
        "sessions",
        "list",
        "--database",
        db,
        "--parent",
        &parent[parent.len() - 12..],
    ]);
    assert_eq!(children.stdout.lines().count(), 7, "{}", children.stdout);
    let child = &forked.results[0].session_id;
    let show = cli(&["sessions", "show", child, "--database", db]);
    assert!(
        show.stdout.contains(&format!("forked from {parent} at {{")),
        "{}",
        show.stdout
    );

    // From an exported file, at the fixer, into no database: the parent's
    // variant plays back (its fixer request is the recorded one) ...
    let file = dir.join("exports").join("xss.json");
    let out_fix = dir.join("fork-fix");
    let out = cli(&[
        "fork",
        "--from",
        s(&file),
        "--at",
        "phase:fix:first",
        "--filter",
        "prompt-v2",
        "--database",
        ":memory:",
        "--output",
        s(&out_fix),
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(out.all().contains("3 passed"), "{}", out.all());
    // ... the other variant's fixer now sees prompt v2's findings: no recording has that request.
    let out_all = dir.join("fork-fix-all");
    let out = cli(&[
        "fork",
        "--from",
        s(&file),
        "--at",
        "phase:fix:first",
        "--database",
        ":memory:",
        "--output",
        s(&out_all),
        "--format",
        "json",
    ]);
    assert_ne!(out.code, 0, "{}", out.all());
    assert!(
        out.all()
            .contains("prompt-v1::xss-vulnerability::t0 ... FAILED"),
        "{}",
        out.all()
    );
    assert!(
        out.all().contains("the request differs from recording"),
        "{}",
        out.all()
    );
    // gate on those results: cells that could not be played back fail it
    // whatever the pass rate (the eval's 70%, or 50%), as they failed the run.
    let gate = cli(&["gate", "--results", s(&out_all)]);
    assert_eq!(gate.code, 1, "{}", gate.all());
    assert!(
        gate.stdout
            .contains("FAIL  code-review  3 cell(s) could not be played back (pass rate 50.0% (95% CI 9.5%–90.5%, 6 cells) is below min_pass_rate 70.0%)"),
        "{}",
        gate.stdout
    );
    let gate = cli(&["gate", "--results", s(&out_all), "--min-pass-rate", "50%"]);
    assert_eq!(gate.code, 1, "{}", gate.all());
    assert!(
        gate.stdout.contains(
            "FAIL  code-review  3 cell(s) could not be played back (pass rate 50.0% (95% CI 9.5%–90.5%, 6 cells) ≥ min_pass_rate 50.0%)"
        ),
        "{}",
        gate.stdout
    );

    // Bad fork input: one line, exit 2, nothing runs.
    assert_input_error(
        &[
            "fork",
            "--from",
            "no-such-session",
            "--at",
            "3",
            "--database",
            db,
        ],
        "no session `no-such-session` in ",
    );
    assert_input_error(
        &[
            "fork",
            "--from",
            &parent,
            "--at",
            "phase:deploy:first",
            "--database",
            db,
        ],
        &format!(
            "--at phase:deploy:first: phase `deploy` was never entered in session {parent} (phases entered: review, fix, done)"
        ),
    );
    assert_input_error(
        &[
            "fork",
            "--from",
            &parent,
            "--at",
            "index:999",
            "--database",
            db,
        ],
        "--at index:999: index 999 is past the end of session ",
    );
}

#[test]
fn nextest_shards_merge_then_gate() {
    if !common::nextest_available("nextest_shards_merge_then_gate") {
        return;
    }
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut shards = Vec::new();
    for k in 1..=2 {
        let db = dir.path().join(format!("shard-{k}.db"));
        let partition = format!("hash:{k}/2");
        let mut cmd = scaffold::_cargo_scaffold_support::nested_cargo();
        cmd.current_dir(workspace())
            .args([
                "nextest",
                "run",
                "--locked",
                "--test",
                "evals",
                "--partition",
                &partition,
            ])
            .args(["--no-tests=pass", "--no-fail-fast"])
            .env("CI", "true")
            .env("INSTA_UPDATE", "no")
            .env("SCAFFOLD_DATABASE", &db)
            .env_remove("NEXTEST_RUN_ID")
            .env_remove("NEXTEST");
        for var in [
            "TAGS",
            "TRIALS",
            "VARIANTS",
            "MODE",
            "RESUME",
            "SNAPSHOTS",
            "FORK_FROM",
            "FORK_AT",
        ] {
            cmd.env_remove(format!("SCAFFOLD_{var}"));
        }
        let out = run_cmd(cmd);
        // The cells the weaker variants fail fail their tests, and no other cell.
        let all = out.all();
        let failed: Vec<&str> = all
            .lines()
            .filter(|l| l.trim_start().starts_with("FAIL "))
            .collect();
        assert!(
            out.code == 0 || !failed.is_empty(),
            "shard {partition}: {all}"
        );
        assert!(
            failed.iter().all(|l| [
                "code-review::prompt-v1::",
                "debugging::prompt-v1::",
                "refactoring::gpt-4o-mini::",
                "refactoring-verifier::prompt-v1::",
            ]
            .iter()
            .any(|weaker| l.contains(weaker))),
            "shard {partition}: {all}"
        );
        assert!(
            db.is_file(),
            "shard {partition} wrote no database: {}",
            out.all()
        );
        shards.push(db);
    }
    let (one, two) = (s(&shards[0]), s(&shards[1]));

    // Each shard is one nextest run, not finished (no process saw all of it).
    let runs = cli(&["runs", "list", "--database", one]);
    assert_eq!(runs.code, 0, "{}", runs.all());
    assert!(
        runs.stdout
            .lines()
            .nth(1)
            .is_some_and(|l| l.contains("nextest") && l.contains("not finished")),
        "{}",
        runs.stdout
    );

    // merge → gate: the whole suite.
    let merged = dir.path().join("merged");
    let out = cli(&["merge", one, two, "--output", s(&merged)]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(out.stdout.contains("│ Eval: code-review"), "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "merged eval `code-review`: 66 cells from 2 part(s), pass rate 71.2% (47/66)"
        ),
        "{}",
        out.stderr
    );
    let whole = EvalResults::load(merged.join("code-review.json")).expect("merged results");
    assert_eq!((whole.cell_count(), whole.config.inputs), (66, 11));
    // Every process planned the whole run: the merge has every cell of it.
    assert!(whole.complete, "{:?}", whole.cell_counts);
    // One shard alone is not the run: the gate says what is missing.
    let gate = cli(&["gate", "--run", "latest", "--database", one]);
    assert_eq!(gate.code, 1, "{}", gate.all());
    let shard = Store::open(&shards[0]).expect("the shard's database");
    let shard_run = shard.eval_runs().expect("the shard's runs").remove(0);
    // The run also holds the code generation eval's cells of the shard.
    let shard_cells = shard
        .eval_results(&shard_run.id)
        .expect("the shard's results")
        .iter()
        .find(|r| r.eval == "code-review")
        .map_or(0, |r| r.cell_count());
    let missing = 66 - shard_cells;
    assert!(
        gate.stdout.contains(&format!(
            "FAIL  code-review  run not finished: {missing} of 66 planned cells missing"
        )),
        "{}",
        gate.stdout
    );
    let gate = cli(&["gate", "--results", s(&merged)]);
    assert_eq!(gate.code, 0, "{}", gate.all());
    assert!(
        gate.stdout
            .contains("PASS  code-review  pass rate 71.2% (95% CI 50.5%–85.7%, 66 cells) ≥ min_pass_rate 70.0%"),
        "{}",
        gate.stdout
    );
    let gate = cli(&[
        "gate",
        "--results",
        s(&merged),
        "--min-pass-rate",
        "50%",
        "--baseline",
        s(&merged),
    ]);
    assert_eq!(gate.code, 0, "{}", gate.all());
    assert!(
        gate.stdout.contains("PASS  code-review  against "),
        "{}",
        gate.stdout
    );

    // A shard's results as JSON (report --run) merge with the other's database.
    let part = dir.path().join("shard-2-results");
    let out = cli(&[
        "report",
        "--run",
        "latest",
        "--database",
        two,
        "--format",
        "json",
        "--output",
        s(&part),
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stderr.contains("(nextest, not finished, "),
        "{}",
        out.stderr
    );
    let again = dir.path().join("merged-again");
    let out = cli(&[
        "merge",
        one,
        s(&part),
        "--output",
        s(&again),
        "--format",
        "json,markdown",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(again.join("code-review.md").is_file());
    let whole_again = EvalResults::load(again.join("code-review.json")).expect("merged");
    assert_eq!(whole_again.results.len(), whole.results.len());
    // The merged document with a shard again: every cell of that shard
    // twice (the first named is of the first eval, code generation).
    assert_input_error(
        &["merge", s(&merged), one, "--output", s(&again)],
        "merge: cell code-generation::",
    );
    eprintln!("nextest shards, merge and gate: {:.1?}", started.elapsed());
}

/// A database holding run `id` of eval `qa` (as [`results`] has it: two
/// variants × two cases, `smart::sub` failing), begun the way the harness
/// begins it, its plan `planned` cells and its gate options quarantining
/// `smart::sub` and judging the Wilson lower bound; `cells` of them
/// recorded, in `results` order, the run never marked finished (killed, or
/// a nextest shard).
fn stored_run(db: &Path, id: &str, planned: usize, cells: std::ops::Range<usize>) {
    let store = Store::open(db).expect("the database opens");
    let mut r = results(&["smart::sub"], 100);
    r.config.min_pass_rate = 0.4;
    let options = GateOptions {
        quarantine: vec!["smart::sub".into()],
        on_lower_bound: true,
        ..GateOptions::default()
    };
    let meta = EvalRunMeta::new(id, "nextest")
        .eval("qa", r.config.clone())
        .plan(
            "qa",
            EvalPlan {
                gate_options: options,
                planned_cells: Some(planned),
            },
        );
    store.begin_eval_run(&meta).expect("the run begins");
    for c in &r.results[cells] {
        let name = c.test_name("qa", 1);
        let mut record = c.clone();
        record.quarantined = false;
        store
            .record_cell(id, &RecordedCell::new("qa", name, record, true))
            .expect("the cell is recorded");
    }
    store.flush().expect("the store flushes");
}

#[test]
fn a_run_that_is_not_finished_fails_the_gate_and_its_results_say_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("killed.db");
    // Killed after 4 of its 20 cells.
    stored_run(&db, "killed", 20, 0..4);
    let (db, out) = (s(&db), dir.path().join("out"));

    let gate = cli(&["gate", "--run", "latest", "--database", db]);
    assert_eq!(gate.code, 1, "{}", gate.all());
    assert!(
        gate.stdout.contains(
            "FAIL  qa  run not finished: 16 of 20 planned cells missing (4 recorded): finish the run"
        ),
        "{}",
        gate.stdout
    );
    assert!(
        gate.stdout.contains("gate: FAILED (1 check(s))"),
        "{}",
        gate.stdout
    );
    // The cells recorded alone pass: gated as the run's own options say.
    let partial = cli(&[
        "gate",
        "--run",
        "latest",
        "--database",
        db,
        "--allow-partial",
    ]);
    assert_eq!(partial.code, 0, "{}", partial.all());
    assert!(
        partial.stdout.contains(
            "warn  qa  run not finished: 16 of 20 planned cells missing (4 recorded): gated on the cells recorded (--allow-partial)"
        ),
        "{}",
        partial.stdout
    );
    assert!(
        partial.stdout.contains(
            "PASS  qa  Wilson lower bound 43.9% of pass rate 100.0% (95% CI 43.9%–100.0%, 3 cells, 1 quarantined left out) ≥ min_pass_rate 40.0%"
        ),
        "{}",
        partial.stdout
    );

    // report --run writes the mark and the counts, and the run's gate options.
    let report = cli(&[
        "report",
        "--run",
        "latest",
        "--database",
        db,
        "--format",
        "json",
        "--output",
        s(&out),
    ]);
    assert_eq!(report.code, 0, "{}", report.all());
    assert!(
        report
            .stderr
            .contains("warning: eval `qa`: run not finished: 16 of 20 planned cells missing"),
        "{}",
        report.stderr
    );
    let text = std::fs::read_to_string(out.join("qa.json")).expect("qa.json");
    let json: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(json["complete"], Value::Bool(false));
    assert_eq!(
        json["cellCounts"],
        serde_json::json!({"planned": 20, "recorded": 4, "missing": 16})
    );
    assert_eq!(json["gate"]["statistic"], "wilsonLowerBound");
    assert_eq!(json["gate"]["quarantinedCells"], 1);
    assert_eq!(json["gate"]["cells"], 3);
    assert_eq!(
        json["gateOptions"]["quarantine"],
        serde_json::json!(["smart::sub"])
    );
    // The document gates as the run did.
    let gate = cli(&["gate", "--results", s(&out)]);
    assert_eq!(gate.code, 1, "{}", gate.all());
    assert!(
        gate.stdout.contains("FAIL  qa  run not finished: 16 of 20"),
        "{}",
        gate.stdout
    );

    // Killed before its first cell: nothing to gate, and it says so.
    let early = dir.path().join("early.db");
    stored_run(&early, "early", 20, 0..0);
    assert_input_error(
        &["gate", "--run", "latest", "--database", s(&early)],
        "eval run early in",
    );
}

#[test]
fn merged_shards_keep_the_runs_gate_options_and_gate_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (one, two) = (dir.path().join("shard-1.db"), dir.path().join("shard-2.db"));
    stored_run(&one, "ci-run", 4, 0..2);
    stored_run(&two, "ci-run", 4, 2..4);
    let merged = dir.path().join("merged");
    let out = cli(&["merge", s(&one), s(&two), "--output", s(&merged)]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(!out.stderr.contains("not finished"), "{}", out.stderr);
    let whole = EvalResults::load(merged.join("qa.json")).expect("merged results");
    assert!(whole.complete, "{:?}", whole.cell_counts);
    assert_eq!(whole.gate_options.quarantine, ["smart::sub"]);
    let gate = whole.gate.expect("the gate");
    assert_eq!((gate.cells, gate.quarantined_cells), (3, 1));
    let out = cli(&["gate", "--results", s(&merged)]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout
            .contains("PASS  qa  Wilson lower bound 43.9% of pass rate 100.0%"),
        "{}",
        out.stdout
    );

    // One shard alone is half the run.
    let half = dir.path().join("half");
    let out = cli(&["merge", s(&one), "--output", s(&half)]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stderr.contains(
            "warning: eval `qa`: run not finished: 2 of 4 planned cells missing (2 recorded)"
        ),
        "{}",
        out.stderr
    );
    let out = cli(&["gate", "--results", s(&half)]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stdout
            .contains("FAIL  qa  run not finished: 2 of 4 planned cells missing"),
        "{}",
        out.stdout
    );
    let out = cli(&[
        "gate",
        "--results",
        s(&half),
        "--allow-partial",
        "--min-pass-rate",
        "30%",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
}

/// A dataset with two errors and two warnings.
const FLAWED: &str = "name: x
cases:
  - id: a
    input: 1
    assertions:
      - type: signal.contans
        pattern: x
  - id: a
    input: 2
    only: true
    assertions: []
";

/// A dataset with one warning and no error.
const WARNED: &str = "name: y\ncases:\n  - id: a\n    input: 1\n    assertions: []\n";

#[test]
fn validate_prints_every_error_and_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flawed = dir.path().join("flawed.yaml");
    let warned = dir.path().join("warned.yaml");
    let latin1 = dir.path().join("latin1.yaml");
    std::fs::write(&flawed, FLAWED).expect("write");
    std::fs::write(&warned, WARNED).expect("write");
    std::fs::write(&latin1, b"name: caf\xe9\ncases: []\n").expect("write");
    let library = |p: &Path| {
        scaffold::dataset::validate(p)
            .expect("readable")
            .to_string()
    };
    let out = cli(&["validate", s(&flawed), s(&warned), s(&latin1)]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert_eq!(
        out.stdout,
        format!(
            "{}{}{}",
            library(&flawed),
            library(&warned),
            library(&latin1)
        )
    );
    assert_eq!(out.stdout.matches(": error: ").count(), 3, "{}", out.stdout);
    assert_eq!(
        out.stdout.matches(": warning: ").count(),
        3,
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("latin1.yaml:1:10: error: byte 0xE9 is not UTF-8"),
        "{}",
        out.stdout
    );
    assert_eq!(
        out.stderr,
        "3 dataset(s) validated: 3 errors, 3 warnings (2 with errors)\n"
    );
    // Warnings alone pass.
    let out = cli(&["validate", s(&warned)]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert_eq!(out.stdout, library(&warned));
    assert_eq!(out.stderr, "1 dataset(s) validated: 0 errors, 1 warning\n");
    // The seeds' examples are clean.
    let out = cli(&["validate", "evals/code-review.yaml"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{}", out.all());
    // A file that cannot be read is an input error, after the others.
    let missing = dir.path().join("missing.yaml");
    let out = cli(&["validate", s(&missing), s(&warned)]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert_eq!(out.stdout, library(&warned));
    assert!(
        out.stderr.starts_with(&format!(
            "error: cannot read dataset {}: ",
            missing.display()
        )),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 2, "{}", out.stderr);
    // No file: clap says so.
    assert_eq!(cli(&["validate"]).code, 2);
}

#[test]
fn score_prints_every_error_and_warning_of_its_dataset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flawed = dir.path().join("flawed.yaml");
    std::fs::write(&flawed, FLAWED).expect("write");
    let out = cli(&["score", "--dataset", s(&flawed)]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    let library = scaffold::dataset::validate(&flawed)
        .expect("readable")
        .to_string();
    assert_eq!(
        out.stderr,
        format!(
            "{library}error: --dataset {}: 2 errors in the dataset (listed above)\n",
            flawed.display()
        )
    );
    // Warnings are shown too, and scoring goes on.
    let warned = dir.path().join("warned.yaml");
    std::fs::write(&warned, WARNED).expect("write");
    let db = dir.path().join("none.db");
    let out = cli(&["score", "--dataset", s(&warned), "--database", s(&db)]);
    assert_eq!(out.code, 2, "{}", out.all());
    let warning = scaffold::dataset::validate(&warned)
        .expect("readable")
        .to_string();
    assert!(out.stderr.starts_with(&warning), "{}", out.stderr);
    assert!(
        out.stderr.contains("no session database at"),
        "{}",
        out.stderr
    );
}

/// `plan` turns stored results into the number of cases a target
/// difference needs, from the spread of their per-case differences.
#[test]
fn plan_says_how_many_cases_an_effect_needs() {
    use scaffold::_cargo_scaffold_support::eval::stats::cases_for_effect;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "qa.json", &results(&["fast::add"], 100));
    let out = cli(&["plan", "--results", s(&file), "--effect", "5%"]);
    assert_eq!(out.code, 0, "{}", out.all());
    // smart vs fast per case: add +1, sub 0: spread √0.5.
    let needed = cases_for_effect(0.05, 0.5f64.sqrt(), 0.05, 0.8);
    assert!(
        out.stdout.contains("qa: to detect 5 points at α = 0.05 with 80% power")
            && out.stdout.contains(&format!(
                "smart vs fast on pass/fail: about {needed} cases (with 2 detects none; spread 0.707"
            )),
        "{}",
        out.stdout
    );
    // Every difference alike: the spread is assumed, and says so.
    let file = write(
        dir.path(),
        "qa.json",
        &results(&["fast::add", "fast::sub"], 100),
    );
    let out = cli(&["plan", "--results", s(&file), "--effect", "0.1"]);
    assert!(
        out.stdout.contains("about 215 cases")
            && out.stdout.contains("spread 0.5 assumed")
            && out.stdout.contains("exact McNemar power"),
        "{}",
        out.all()
    );
    for (flag, value, expected) in [
        ("--effect", "0", "--effect `0`"),
        ("--effect", "2", "--effect `2`: expected a fraction"),
        ("--power", "1", "--power `1`: expected a probability"),
    ] {
        let mut args = vec!["plan", "--results", s(&file), "--effect", "0.1"];
        if flag == "--effect" {
            args[4] = value;
        } else {
            args.extend([flag, value]);
        }
        assert_input_error(&args, expected);
    }
}

/// A finished run `id` of eval `qa` in `db`: `results(failing, 100)` with
/// each cell's output set by `output`.
fn finished_run(db: &Path, id: &str, failing: &[&str], output: impl Fn(&CellRecord) -> String) {
    let store = Store::open(db).expect("the database opens");
    let r = results(failing, 100);
    let meta = EvalRunMeta::new(id, "harness").eval("qa", r.config.clone());
    store.begin_eval_run(&meta).expect("the run begins");
    for c in &r.results {
        let mut record = c.clone();
        let answer = output(c);
        record.output = Some(Value::String(answer.clone()));
        record.session_id = format!("{id}-{}-{}", c.variant, c.case);
        record.metrics.cost_usd = if c.variant == "smart" { 0.002 } else { 0.001 };
        store_session(&store, &record, &answer);
        let name = c.test_name("qa", 1);
        store
            .record_cell(id, &RecordedCell::new("qa", name, record, true))
            .expect("the cell is recorded");
    }
    store.finish_eval_run(id).expect("the run finishes");
    store.flush().expect("the store flushes");
}

/// The session of cell `c`, tagged with its variant's speed: a tool call
/// whose result holds the cell's case, then the model's answer. The second
/// run's sessions are forked from the first's.
fn store_session(store: &Store, c: &CellRecord, answer: &str) {
    use scaffold::signal::Signal;
    use scaffold::store::{SessionEnd, SessionMeta};
    let tag = if c.variant == "fast" {
        "quick"
    } else {
        "careful"
    };
    let mut meta = SessionMeta::new(&c.session_id, "qa").tags([tag]);
    if let Some(rest) = c.session_id.strip_prefix("run-two-") {
        meta.parent_id = Some(format!("run-one-{rest}"));
        meta.fork_point = Some(serde_json::json!({"eventIndex": 1, "phase": "solve"}));
    }
    store.begin_session(&meta).expect("the session begins");
    let signal = |index: u64, name: &str, payload: Value| Signal {
        index,
        name: name.into(),
        payload,
        at_ms: index * 10,
        agent: Some("solver".into()),
    };
    let signals = [
        signal(0, "phase:entered", serde_json::json!({"phase": "solve"})),
        signal(
            1,
            "tool:called",
            serde_json::json!({"tool": "calc", "arguments": {"case": c.case}}),
        ),
        signal(
            2,
            "tool:result",
            serde_json::json!({"tool": "calc", "result": format!("worked out {} in {}", c.case, c.session_id)}),
        ),
        signal(3, "harness:end", serde_json::json!({"output": answer})),
    ];
    store
        .append(&c.session_id, &signals)
        .expect("the signals are stored");
    let end = SessionEnd::new(scaffold::store::SessionStatus::Completed)
        .output(Value::String(answer.into()));
    store
        .finish_session(&c.session_id, &end)
        .expect("the session ends");
}

/// `GET {url}{path}` over HTTP/1.1: the status line and the body.
fn get(url: &str, path: &str) -> (String, String) {
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let (head, body) = request(addr, path, addr);
    (head.lines().next().unwrap_or_default().to_string(), body)
}

/// `GET {path}` from the server at `addr`, naming `host`: the response's
/// head (status line and headers) and body.
fn request(addr: &str, path: &str, host: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("the viewer listens");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (head.to_string(), body.to_string())
}

/// The viewer serves the store: every run, one run's grid (filtered by
/// verdict, variant, tag, words in outputs and transcripts, changes
/// against another run; paged), a cell's transcript with its lineage, both
/// transcripts of a changed cell side by side, two runs compared with the
/// regression first and cost and latency cell by cell, a clear page for a
/// run or cell that is not there. Untrusted outputs and tool results stay
/// text on every page (escaped, under a Content-Security-Policy that runs
/// no script but the viewer's own), checked in Chromium too.
#[test]
fn view_serves_runs_a_runs_grid_and_two_runs_compared() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("view.db");
    let hostile = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\"><a href=\"javascript:alert(1)\">x</a></script>";
    finished_run(&db, "run-one", &[], |c| {
        format!("{} answered {hostile}", c.variant)
    });
    finished_run(&db, "run-two", &["smart::sub"], |c| {
        format!("{} said {} {hostile}", c.variant, c.case)
    });
    /// The viewer's process, stopped however the test ends.
    struct Server(std::process::Child);
    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut server = Server(
        command(&["scaffold", "view", "--database", s(&db), "--port", "0"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("the viewer starts"),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.0.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("the viewer says where it listens");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("a local URL: {line}"))
        .to_string();

    let (status, runs) = get(&url, "/");
    assert!(status.contains("200"), "{status}");
    assert!(
        runs.contains("/runs/run-one") && runs.contains("/runs/run-two"),
        "{runs}"
    );
    assert!(runs.contains("<form action=\"/compare\">"), "{runs}");
    assert!(
        runs.contains("<a href=\"/compare?base=run-one&amp;head=run-two\">compare</a>"),
        "{runs}"
    );
    // Each eval's trend over the runs: its pass rate fell from 100% to 75%.
    assert!(
        runs.contains("qa: pass rate 75% and cost $0.0060 at the last of 2 runs"),
        "{runs}"
    );
    assert!(
        runs.contains("<title>run-one: pass rate 1</title>"),
        "{runs}"
    );
    assert!(
        runs.contains("<title>run-two: pass rate 0.75</title>"),
        "{runs}"
    );

    let (_, grid) = get(&url, "/runs/run-one");
    assert!(grid.contains("4 of 4 cells shown"), "{grid}");
    assert!(
        grid.contains("&lt;script&gt;document.title=&apos;pwned&apos;&lt;/script&gt;"),
        "{grid}"
    );
    assert!(
        !grid.contains("<script>document") && !grid.contains("<img src=x"),
        "{grid}"
    );
    assert!(grid.contains("default-src 'none'"), "{grid}");
    // Each cell links to its transcript.
    assert!(
        grid.contains("<a href=\"/runs/run-one/cells/qa%3A%3Afast%3A%3Aadd\">"),
        "{grid}"
    );
    let shown = |page: &str| -> usize {
        let at = page
            .find(" of 4 cells shown")
            .unwrap_or_else(|| panic!("{page}"));
        let from = page[..at].rfind('>').map_or(0, |i| i + 1);
        page[from..at]
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{page}"))
    };
    let filtered = |query: &str| -> (usize, String) {
        let (status, page) = get(&url, &format!("/runs/run-two?{query}"));
        assert!(status.contains("200"), "{query}: {status}");
        (shown(&page), page)
    };
    let (n, failing) = filtered("status=failing");
    assert!(n == 1 && failing.contains("smart said sub"), "{failing}");
    assert!(!failing.contains("fast said add"), "{failing}");
    // Words of outputs, any case, as prefixes; of transcripts too.
    let (n, searched) = filtered("q=SAID%20AD&variant=fast");
    assert!(n == 1 && searched.contains("fast said add"), "{searched}");
    assert_eq!(filtered("q=worked%20sub").0, 2, "a tool result's words");
    assert_eq!(
        filtered("q=run-two-smart-add").0,
        1,
        "a session id in a tool result"
    );
    let (n, none) = filtered("q=zebra");
    assert!(
        n == 0 && none.contains("No cell holds every word"),
        "{none}"
    );
    let (n, wordless) = filtered("q=%3C%3E");
    assert!(
        n == 4 && wordless.contains("has no word to look for"),
        "{wordless}"
    );
    assert_eq!(filtered("q=%22%20OR%20NEAR(").0, 0, "FTS5 syntax is text");
    // Tags are the sessions'; changed is against another run's verdicts.
    let (n, tagged) = filtered("tag=careful");
    assert!(
        n == 2 && tagged.contains("<option value=\"careful\" selected>"),
        "{tagged}"
    );
    let (n, changed) = filtered("changed=run-one");
    assert!(n == 1 && changed.contains("smart said sub"), "{changed}");
    assert!(
        changed.contains("/runs/run-two/cells/qa%3A%3Asmart%3A%3Asub?base=run-one"),
        "{changed}"
    );
    assert_eq!(filtered("status=flaky").0, 0);
    assert_eq!(
        filtered("status=passing&tag=quick&page=9").0,
        2,
        "a page past the end shows the last"
    );

    // A cell's transcript, its lineage, and beside it the baseline's.
    let cell = "/runs/run-two/cells/qa%3A%3Asmart%3A%3Asub";
    let (status, page) = get(&url, cell);
    assert!(status.contains("200"), "{status}");
    assert!(
        page.contains("<script src=\"/assets/viewer.js\"></script>"),
        "{page}"
    );
    assert!(
        page.contains("\\u003cscript\\u003e"),
        "data stays inside its script: {page}"
    );
    let (status, script) = get(&url, "/assets/viewer.js");
    assert!(
        status.contains("200") && script.contains("sideBySide"),
        "{status}"
    );
    let (status, _) = get(&url, "/runs/run-two/cells/qa%3A%3Anope");
    assert!(status.contains("404"), "{status}");
    for outside in [
        "/assets/../Cargo.toml",
        "/assets/viewer.js/../../etc/passwd",
        "/etc/passwd",
    ] {
        let (status, _) = get(&url, outside);
        assert!(status.contains("404"), "{outside}: {status}");
    }

    let (_, compared) = get(&url, "/compare?base=run-one&head=run-two");
    assert!(
        compared.contains("1 regression(s), 0 improvement(s)"),
        "{compared}"
    );
    assert!(
        compared.contains(
            "class=\"fail\">regression</td><td><a href=\"/runs/run-two/cells/qa%3A%3Asmart%3A%3Asub?base=run-one\">qa::smart::sub</a></td><td>passed in the baseline, fails now"
        ),
        "{compared}"
    );
    // Cost and latency cell by cell: equal here, so no cell moved.
    assert!(compared.contains("0 cell(s) moved"), "{compared}");

    // Several trials: each trial's cell is its own test, linked by its name.
    {
        let store = Store::open(&db).expect("the database opens");
        let mut r = results(&[], 100);
        r.config.trials = 2;
        let meta = EvalRunMeta::new("run-trials", "harness").eval("qa", r.config.clone());
        store.begin_eval_run(&meta).expect("the run begins");
        for trial in [1, 2] {
            let mut c = r.results[0].clone();
            c.trial = trial;
            c.passed = trial == 1;
            c.session_id = format!("run-trials-{trial}");
            let name = c.test_name("qa", 2);
            store
                .record_cell("run-trials", &RecordedCell::new("qa", name, c, true))
                .expect("recorded");
        }
        store.finish_eval_run("run-trials").expect("finished");
    }
    let (_, trials) = get(&url, "/runs/run-trials?status=flaky");
    assert!(trials.contains("2 of 2 cells shown"), "{trials}");
    assert!(
        trials.contains("/runs/run-trials/cells/qa%3A%3Afast%3A%3Aadd%3A%3At2"),
        "{trials}"
    );
    let (status, _) = get(&url, "/runs/run-trials/cells/qa%3A%3Afast%3A%3Aadd%3A%3At2");
    assert!(status.contains("200"), "{status}");

    // A run still going reloads itself and shows its cells as they come.
    assert!(!grid.contains("http-equiv=\"refresh\""), "{grid}");
    let store = Store::open(&db).expect("the database opens");
    let r = results(&[], 100);
    let meta = EvalRunMeta::new("run-live", "nextest").eval("qa", r.config.clone());
    store.begin_eval_run(&meta).expect("the run begins");
    let record = |c: &CellRecord| RecordedCell::new("qa", c.test_name("qa", 1), c.clone(), true);
    store
        .record_cell("run-live", &record(&r.results[0]))
        .expect("recorded");
    store.flush().expect("flushed");
    let (_, live) = get(&url, "/runs/run-live");
    assert!(
        live.contains("<meta http-equiv=\"refresh\" content=\"2\">"),
        "{live}"
    );
    assert!(
        live.contains("going (this page reloads every 2 s)") && live.contains("1 of 1 cells shown"),
        "{live}"
    );
    store
        .record_cell("run-live", &record(&r.results[1]))
        .expect("recorded");
    store.flush().expect("flushed");
    let (_, live) = get(&url, "/runs/run-live");
    assert!(live.contains("2 of 2 cells shown"), "{live}");

    let (status, missing) = get(&url, "/runs/nope");
    assert!(status.contains("404"), "{status}");
    assert!(
        missing.contains("nope") && missing.contains("<title>Not Found</title>"),
        "{missing}"
    );
    // A cell beside a run that lacks it: shown alone, saying so.
    let (status, alone) = get(
        &url,
        "/runs/run-two/cells/qa%3A%3Asmart%3A%3Aadd?base=run-live",
    );
    assert!(status.contains("200"), "{status}");
    assert!(
        alone.contains("run <a href=\"/runs/run-live\">run-live</a> has no such cell"),
        "{alone}"
    );
    // What cannot be read is a page saying so, under the same policy.
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    for (path, code) in [
        ("/runs/run-two?page=-1", "400"),
        ("/compare?base=run-one", "400"),
        ("/runs/run-two?eval=nope", "404"),
        ("/runs/%FF%FE", "400"),
    ] {
        let (head, body) = request(addr, path, addr);
        assert!(
            head.starts_with(&format!("HTTP/1.1 {code}")),
            "{path}: {head}"
        );
        assert!(
            head.contains("content-security-policy: default-src 'none'")
                && head.contains("frame-ancestors 'none'")
                && head.contains("x-content-type-options: nosniff"),
            "{path}: {head}"
        );
        assert!(body.starts_with("<!doctype html>"), "{path}: {body}");
    }
    // Another site's name for this address (DNS rebinding) gets nothing.
    let port = addr.rsplit(':').next().expect("a port");
    for host in ["evil.example", &format!("evil.example:{port}")] {
        let (head, body) = request(addr, "/runs/run-one", host);
        assert!(head.starts_with("HTTP/1.1 421"), "{host}: {head}");
        assert!(!body.contains("answered"), "{host}: {body}");
    }
    let (head, _) = request(addr, "/", &format!("localhost:{port}"));
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");

    // In Chromium: no untrusted text runs on any page, the viewer's own
    // script opens the transcript with its lineage, and side by side.
    let profile = dir.path().join("profile");
    for page in [
        "",
        "runs/run-one",
        "runs/run-two?q=said&changed=run-one",
        "compare?base=run-one&head=run-two",
        "runs/run-one/cells/qa%3A%3Afast%3A%3Aadd",
        "runs/nope",
    ] {
        let Some(dom) = chromium_dom(&format!("{url}{page}"), &profile) else {
            break;
        };
        assert!(dom.contains("<title>"), "{page}: {dom}");
        assert!(
            !dom.contains("pwned</title>") && !dom.contains("<img src=\"x\""),
            "{page}: {dom}"
        );
    }
    if let Some(dom) = chromium_dom(&format!("{url}{}?base=run-one", &cell[1..]), &profile) {
        assert!(
            dom.contains("forked from session run-one-smart-sub at signal #1 (phase solve)"),
            "the lineage: {dom}"
        );
        assert!(dom.contains("class=\"sbs\""), "side by side: {dom}");
        assert!(dom.contains("worked out sub in run-two-smart-sub"), "{dom}");
        assert!(dom.contains("worked out sub in run-one-smart-sub"), "{dom}");
        assert!(!dom.contains("pwned</title>"), "{dom}");
    }
    drop(server);
}
