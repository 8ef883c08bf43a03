//! `cargo scaffold` as a user drives it: the real binary, on results files
//! built here, on the example suite of this workspace, and on bad input.

use std::path::{Path, PathBuf};
use std::process::Command;

use scaffold::eval::{CellRecord, EvalResults, RunConfig};
use serde_json::Value;

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
        "MODE", "TAGS", "DATABASE", "FORMAT", "BASELINE", "TRIALS", "VARIANTS", "OUTPUT", "RESUME",
    ] {
        cmd.env_remove(format!("SCAFFOLD_{var}"));
    }
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
        "run", "report", "compare", "gate", "sessions", "fork", "score", "merge",
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
        &["fork"],
        &["score"],
        &["merge"],
    ] {
        let mut args = vec!["scaffold"];
        args.extend_from_slice(sub);
        args.push("--help");
        let out = cli(&args);
        assert_eq!(out.code, 0, "{sub:?}: {}", out.all());
        let usage = format!("Usage: cargo scaffold {}", sub.join(" "));
        assert!(out.stdout.contains(&usage), "{sub:?}: {}", out.stdout);
    }
    let run = cli(&["run", "--help"]).stdout;
    for flag in [
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
    ] {
        assert!(run.contains(flag), "{flag}: {run}");
    }
    assert!(cli(&["fork", "--help"]).stdout.contains("--from <ID>"));
    assert!(
        cli(&["gate", "--help"])
            .stdout
            .contains("--min-pass-rate <RATE>")
    );
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
    // Not in this version yet, and saying so.
    assert_input_error(
        &["merge", ok, "--output", s(dir.path())],
        "not available in this version yet",
    );
    assert_input_error(
        &["fork", "--from", "abc", "--at", "3"],
        "not available in this version yet",
    );
    assert_input_error(
        &["score", "--dataset", "x.yaml"],
        "not available in this version yet",
    );
    assert_input_error(
        &["sessions", "export", "abc"],
        "not available in this version yet",
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
        out.stdout
            .contains("PASS  qa  pass rate 100.0% (4/4) ≥ min 90.0%"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("gate: passed"), "{}", out.stdout);
    let out = cli(&["gate", "--results", cand]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stdout
            .contains("FAIL  qa  pass rate 50.0% (2/4) < min 90.0%"),
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
    ] {
        assert!(site.join(file).is_file(), "{file} written: {}", out.stderr);
    }
    let again = EvalResults::load(site.join("qa.json")).expect("the JSON report loads");
    assert_eq!(again, EvalResults::load(cand).expect("loads"));
    let md = std::fs::read_to_string(site.join("qa.md")).expect("md");
    assert!(md.contains("**Verdict: worse**"), "{md}");
    let out = cli(&["report", "--results", base, "--format", "junit"]);
    assert!(out.stdout.starts_with("<?xml"), "{}", out.stdout);
}

#[test]
fn run_drives_the_example_suite_and_the_other_commands_read_what_it_left() {
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
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    let text = out.all();
    assert!(text.contains("10 passed"), "{text}");
    assert!(text.contains("│ Eval: code-review"), "{text}");
    assert!(text.contains("Gate: passed"), "{text}");
    let results = out_dir.join("code-review.json");
    let loaded = EvalResults::load(&results).expect("results JSON in --output");
    assert_eq!(loaded.cell_count(), 10);
    assert!(out_dir.join("code-review.md").is_file());

    // The commands that read results.
    let r = s(&results);
    let gate = cli(&["gate", "--results", s(&out_dir)]);
    assert_eq!(gate.code, 0, "{}", gate.all());
    assert!(
        gate.stdout
            .contains("PASS  code-review  pass rate 100.0% (10/10)"),
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
        report.stdout.contains("Cheapest: gpt-4o"),
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
        "WORKFLOW",
        "VARIANT",
        "STATUS",
        "SIGNALS",
        "STARTED (UTC)",
        "PARENT",
    ] {
        assert!(lines[0].contains(col), "{col}: {}", lines[0]);
    }
    assert_eq!(lines.len(), 11, "{}", list.stdout);
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
        "gpt-4o",
    ]);
    assert_eq!(tagged.stdout.lines().count(), 2, "{}", tagged.stdout);
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
        "variant:   gpt-4o",
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
    assert!(id.starts_with(short_id));
    assert_eq!(doc["signals"][0]["name"], "harness:start");
    assert_eq!(
        doc["signals"].as_array().map(Vec::len),
        doc["session"]["signalCount"].as_u64().map(|n| n as usize)
    );
    let cell = loaded
        .results
        .iter()
        .find(|c| c.variant == "gpt-4o" && c.case == "sql-injection")
        .expect("the cell");
    assert_eq!(cell.session_id, id, "the results name the stored session");

    // Tags go to the harness; its exit status comes back.
    let tagged = cli(&[
        "run",
        "--database",
        ":memory:",
        "--tags",
        "xss,negative",
        "--format",
        "json",
    ]);
    assert_eq!(tagged.code, 0, "{}", tagged.all());
    assert!(tagged.all().contains("4 passed"), "{}", tagged.all());
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
}
