//! The eval harness as a user drives it: `cargo test --test evals` with
//! libtest flags and scaffold's environment variables.

use std::path::Path;
use std::process::Output;

use scaffold::_cargo_scaffold_support::report::Format;
use serde_json::Value;

use crate::common;

use common::text;

fn evals(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = common::cargo(&["test", "--quiet", "--test", "evals", "--"]);
    cmd.args(args).env("SCAFFOLD_DATABASE", ":memory:");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("cargo runs")
}

/// The example suite's evals, as their results files and snapshot folders are named.
const EVALS: [&str; 6] = [
    "code-generation",
    "code-review",
    "debugging",
    "fix-quality",
    "refactoring",
    "refactoring-verifier",
];

/// The results document a run wrote into `out` for `eval`.
fn results_of(out: &Path, eval: &str) -> Value {
    let raw =
        std::fs::read_to_string(out.join(format!("{eval}.json"))).expect("results JSON written");
    serde_json::from_str(&raw).expect("results JSON parses")
}

/// The results without what is the run's own: its timestamp and the ids
/// of its sessions. Everything else, latency included, is the recordings'.
fn without_run_ids(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "timestamp" | "sessionId"))
                .map(|(k, v)| (k.clone(), without_run_ids(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_run_ids).collect()),
        other => other.clone(),
    }
}

/// The printed tables of a run, from the first to the `Total:` line, its
/// results directory `out_dir` written as the default `target/scaffold`
/// and without the run's id.
fn printed_tables(text: &str, out_dir: &str) -> String {
    let start = text.find('┌').expect("a table");
    let end = text.find("Total: ").expect("the whole run's line");
    let end = end + text[end..].find('\n').unwrap_or(text.len() - end);
    text[start..end]
        .replace(out_dir, "target/scaffold")
        .lines()
        .filter(|l| !l.starts_with("Run: "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first fenced block of `page` that holds a table, without `Run:`.
fn shown_block(page: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(page);
    let doc = std::fs::read_to_string(&path).expect("page");
    let block = doc
        .split("```")
        .find(|b| b.contains("┌"))
        .unwrap_or_else(|| panic!("{page} shows no table"));
    block
        .trim()
        .lines()
        .filter(|l| !l.starts_with("Run: "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// docs/example-suite.md shows the whole output of the example suite's
/// tables as printed, and the README the code review eval's part of it.
fn shown_output_is_printed(text: &str, out_dir: &str) {
    let printed = printed_tables(text, out_dir);
    let page = shown_block("docs/example-suite.md");
    assert!(
        page == printed,
        "docs/example-suite.md's output is not what the suite prints:\n{printed}"
    );
    // The README shows parts of it, a line `…` between two.
    let readme = shown_block("README.md");
    for part in readme.split("\n…\n") {
        assert!(
            printed.contains(part),
            "README.md's output is not part of what the suite prints:\n{part}"
        );
    }
}

#[test]
fn playback_is_identical_at_any_thread_count_and_flags_work() {
    // Every figure of a playback run, latency included, comes from the
    // recordings: one thread or the default (eight per CPU), the same
    // results to the last digit, but for the run's own ids and times.
    let dir = common::TempDir::new("harness-identical");
    let (one_out, many_out) = (dir.join("one"), dir.join("many"));
    let output = |dir: &Path| dir.to_str().expect("utf-8 path").to_string();
    let one = evals(
        &["--test-threads", "1"],
        &[("SCAFFOLD_OUTPUT", &output(&one_out))],
    );
    assert!(one.status.success(), "{}", text(&one));
    let out = text(&one);
    // Prompt v1 of code review fails 19 of its 33 cells, and one weaker
    // variant of each of code generation, debugging, refactoring and the
    // verifier fork fails one cell: failures their gates allow (libtest:
    // ignored), and every gate still passes.
    assert!(
        out.contains("75 passed, 23 failed (23 allowed by their gate)"),
        "{out}"
    );
    assert!(
        out.contains("test result: ok. 81 passed; 0 failed; 23 ignored"),
        "{out}"
    );
    assert!(out.contains("Eval: code-review"), "{out}");
    assert!(out.contains("Eval: code-generation"), "{out}");
    assert!(out.contains("Cheapest: "), "{out}");
    shown_output_is_printed(&out, &output(&one_out));
    let many = evals(&[], &[("SCAFFOLD_OUTPUT", &output(&many_out))]);
    assert!(many.status.success(), "{}", text(&many));
    for eval in EVALS {
        let (first, second) = (results_of(&one_out, eval), results_of(&many_out, eval));
        assert_ne!(first["timestamp"], Value::Null);
        assert_eq!(
            without_run_ids(&first),
            without_run_ids(&second),
            "{eval}: results differ between 1 thread and the default"
        );
    }
    // The printed summaries too, from the first table to the last gate.
    let summary = |out: &str| {
        out[out.find("Eval: ").unwrap_or(0)..]
            .lines()
            .filter(|l| !l.contains("Run: ") && !l.contains("Results: "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(summary(&out), summary(&text(&many)));
    // So a run over an identical one as its baseline changes nothing, even
    // with metric regressions blocking.
    let base = one_out.join("code-review.json");
    let again = evals(
        &[],
        &[
            ("SCAFFOLD_OUTPUT", &output(&many_out)),
            ("SCAFFOLD_BASELINE", &output(&base)),
        ],
    );
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        text(&again).contains("equivalent; pass rate +0.0 pts; 0 regression(s), 0 improvement(s)"),
        "{}",
        text(&again)
    );
    let strict = scaffold::_cargo_scaffold_support::eval::CompareOptions {
        block_on_metric_regressions: true,
        ..Default::default()
    };
    let load = |dir: &Path| {
        scaffold::_cargo_scaffold_support::eval::EvalResults::load(dir.join("code-review.json"))
    };
    let cmp = scaffold::_cargo_scaffold_support::eval::compare(
        &load(&one_out).unwrap(),
        &load(&many_out).unwrap(),
        &strict,
    );
    assert!(
        !cmp.summary.should_block && cmp.regressions.is_empty(),
        "{cmp:?}"
    );

    // --list names every cell and runs none.
    let list = evals(&["--list"], &[]);
    let listed = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(
        listed.contains("code-review::prompt-v2::sql-injection::t0: test"),
        "{listed}"
    );
    // Each cell, then each eval's gate.
    let named = |kind: &str| listed.lines().filter(|l| l.starts_with(kind)).count();
    assert_eq!((named("[eval] "), named("[gate] ")), (98, 6), "{listed}");
    assert_eq!(listed.matches(": test").count(), 104, "{listed}");

    // A filter and --exact pick cells; SCAFFOLD_TAGS filters by case tag.
    let filtered = evals(&["sql-injection"], &[]);
    assert!(text(&filtered).contains("7 passed"), "{}", text(&filtered));
    let exact = evals(
        &["--exact", "code-review::prompt-v2::path-traversal::t0"],
        &[],
    );
    assert!(text(&exact).contains("1 passed"), "{}", text(&exact));
    // The name as `--list` prints it (nextest may pass that): the same cell.
    let as_listed = evals(
        &[
            "--exact",
            "[eval] code-review::prompt-v2::path-traversal::t0",
        ],
        &[],
    );
    assert!(
        text(&as_listed).contains("1 passed"),
        "{}",
        text(&as_listed)
    );
    let tagged = evals(&[], &[("SCAFFOLD_TAGS", "xss,negative")]);
    assert!(text(&tagged).contains("12 passed"), "{}", text(&tagged));

    // A bad mode is a clear set-up error.
    let bad = evals(&[], &[("SCAFFOLD_MODE", "replay")]);
    assert!(!bad.status.success());
    assert!(
        text(&bad).contains("SCAFFOLD_MODE") && text(&bad).contains("live, record, playback"),
        "{}",
        text(&bad)
    );
}

#[test]
fn the_results_document_holds_every_cell_whole_from_the_store() {
    // Past SCAFFOLD_WHOLE_RECORDS finished cells (0 here: all of them),
    // memory keeps each cell's summary only and the JSON, JUnit and HTML
    // reports are written from the store, cell by cell; by default a run
    // this small keeps them whole. Either way the reports hold what was
    // stored.
    let dir = common::TempDir::new("harness-results");
    let db = dir.join("scaffold.db");
    let store_path = db.to_str().expect("utf-8 path");
    for whole in ["0", "256"] {
        let out = dir.join(&format!("out-{whole}"));
        let run = evals(
            &[],
            &[
                ("SCAFFOLD_DATABASE", store_path),
                ("SCAFFOLD_OUTPUT", out.to_str().expect("utf-8 path")),
                ("SCAFFOLD_WHOLE_RECORDS", whole),
                ("SCAFFOLD_FORMAT", "table,json,junit,html,markdown"),
            ],
        );
        assert!(run.status.success(), "{}", text(&run));
        let written = scaffold::_cargo_scaffold_support::eval::EvalResults::load(
            out.join("code-review.json"),
        )
        .expect("results JSON written and valid");
        let store = scaffold::store::Store::open(&db).expect("store");
        let runs = store.eval_runs().expect("runs");
        let stored = store.eval_results(&runs[0].id).expect("stored results");
        let stored = stored
            .into_iter()
            .find(|r| r.eval == "code-review")
            .expect("code-review stored");
        assert_eq!(written.results.len(), 66);
        assert_eq!(
            written.results, stored.results,
            "SCAFFOLD_WHOLE_RECORDS={whole}"
        );
        // One shape: the harness's document and the store's have the same
        // fields, `cellCounts` in both, and the same counts.
        let fields = |r: &scaffold::_cargo_scaffold_support::eval::EvalResults| {
            let json = scaffold::_cargo_scaffold_support::report::render(Format::Json, r, None);
            let value: Value = serde_json::from_str(&json).expect("JSON");
            value
                .as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>())
        };
        assert_eq!(fields(&written), fields(&stored));
        assert!(fields(&written).is_some_and(|f| f.contains(&"cellCounts".to_string())));
        assert_eq!(written.cell_counts, stored.cell_counts);
        assert!(written.complete && stored.complete);
        // Whole: inputs and the assertions that passed are there.
        assert!(written.results.iter().all(|c| !c.input.is_null()));
        assert!(
            written
                .results
                .iter()
                .any(|c| c.assertions.iter().any(|a| a.passed)),
            "no passed assertion in the document"
        );
        // The other reports are what the whole records render (the HTML
        // with the store's transcripts, the Markdown linked to it).
        use scaffold::_cargo_scaffold_support::report::html::{
            INDEX_FILE, Page, TranscriptSelection, Transcripts,
        };
        let transcripts = Transcripts::new(&store, TranscriptSelection::Failing);
        // The run's index links each eval's page; each page links back.
        let index = std::fs::read_to_string(out.join(INDEX_FILE)).expect("the run's index");
        for eval in EVALS {
            assert!(
                index.contains(&format!("<a href=\"./{eval}.html\">")),
                "{eval}: {index}"
            );
        }
        for (format, file) in [
            (Format::Junit, "code-review.junit.xml"),
            (Format::Html, "code-review.html"),
            (Format::Markdown, "code-review.md"),
        ] {
            let report = std::fs::read_to_string(out.join(file)).expect("report written");
            let expected = match format {
                Format::Html => Page::new(&written)
                    .transcripts(&transcripts)
                    .index(INDEX_FILE)
                    .render(),
                Format::Markdown => {
                    scaffold::_cargo_scaffold_support::report::markdown::render_linked(
                        &written,
                        None,
                        "code-review.html",
                    )
                }
                _ => scaffold::_cargo_scaffold_support::report::render(format, &written, None),
            };
            assert!(
                report == expected,
                "{file} with SCAFFOLD_WHOLE_RECORDS={whole} is not what the whole records render"
            );
        }
        let junit = std::fs::read_to_string(out.join("code-review.junit.xml")).expect("junit");
        assert_eq!(junit.matches("\noutput:\n").count(), 66, "{junit}");
    }
    let bad = evals(&[], &[("SCAFFOLD_WHOLE_RECORDS", "many")]);
    assert!(!bad.status.success());
    assert!(
        text(&bad).contains("SCAFFOLD_WHOLE_RECORDS: expected a whole number of cells"),
        "{}",
        text(&bad)
    );
}

/// A run's budget spent by its first cell: every later eval ran no cell.
/// Each still gets a results file that says so (not complete, its cells
/// missing), no gate says passed, and the closing line fails the run.
#[test]
fn evals_a_budget_kept_from_running_get_results_that_say_so() {
    let dir = common::TempDir::new("harness-budget");
    let out_dir = dir.join("out");
    let run = evals(
        &["--test-threads", "1"],
        &[
            ("SCAFFOLD_MAX_COST", "0.0001"),
            ("SCAFFOLD_OUTPUT", out_dir.to_str().expect("utf-8 path")),
        ],
    );
    let all = text(&run);
    assert!(!run.status.success(), "{all}");
    assert!(!all.contains("Gate: passed"), "{all}");
    assert!(all.contains("gates 0/6 passed"), "{all}");
    assert!(all.contains("run FAILED: "), "{all}");
    let mut none_ran = 0;
    for eval in EVALS {
        let json = results_of(&out_dir, eval);
        assert_eq!(json["complete"], Value::Bool(false), "{eval}");
        assert_eq!(json["gate"]["passed"], Value::Bool(false), "{eval}");
        let counts = &json["cellCounts"];
        assert!(
            counts["missing"].as_u64().is_some_and(|n| n > 0),
            "{eval}: {counts}"
        );
        if counts["recorded"] == 0 {
            none_ran += 1;
            assert_eq!(json["results"].as_array().map(Vec::len), Some(0));
        }
    }
    assert!(none_ran >= 5, "{none_ran} evals ran no cell");
}

#[test]
fn a_suite_without_harness_false_does_not_compile_and_says_what_to_add() {
    let out = common::cargo(&["test", "--test", "harness_missing", "--no-run"])
        .output()
        .expect("cargo runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "it compiled:\n{err}");
    // rustc indents the lines after the first.
    let lines: Vec<&str> = err.lines().map(str::trim).collect();
    assert!(
        err.contains("error: scaffold::main!() runs its own test harness")
            && lines
                .windows(3)
                .any(|w| w == ["[[test]]", "name = \"harness_missing\"", "harness = false"]),
        "{err}"
    );
}

/// What `cargo insta test --unreferenced=reject` checks after the run: every
/// committed snapshot was named in its references file.
#[test]
fn every_committed_snapshot_counts_as_referenced_for_cargo_insta() {
    let dir = common::TempDir::new("references");
    let refs = dir.join("references.txt");
    let refs_env = refs.to_string_lossy().into_owned();
    let out = evals(
        &[],
        &[("INSTA_SNAPSHOT_REFERENCES_FILE", refs_env.as_str())],
    );
    assert!(out.status.success(), "{}", text(&out));
    let canonical = |p: &std::path::Path| p.canonicalize().expect("the file exists");
    let listed: std::collections::BTreeSet<std::path::PathBuf> = std::fs::read_to_string(&refs)
        .unwrap_or_default()
        .lines()
        .map(|l| canonical(std::path::Path::new(l)))
        .collect();
    let mut committed = std::collections::BTreeSet::new();
    for eval in EVALS {
        let snapshots = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("snapshots")
            .join(eval);
        for case in std::fs::read_dir(&snapshots).expect("the snapshots folder") {
            for snap in std::fs::read_dir(case.expect("an entry").path()).expect("a case folder") {
                let path = snap.expect("an entry").path();
                if path.extension().is_some_and(|e| e == "snap") {
                    committed.insert(canonical(&path));
                }
            }
        }
    }
    assert_eq!(committed.len(), 98);
    assert_eq!(listed, committed);
}

/// Record mode without the keys it needs stops before its first call,
/// naming each variable, and leaves every recording as it was (before, a
/// keyless re-record replaced good recordings by 401 answers).
#[test]
fn record_mode_without_keys_stops_before_any_call_naming_the_variables() {
    let recordings = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("evals/recordings");
    let before = common::snapshot_dir(&recordings);
    let mut cmd = common::cargo(&["test", "--quiet", "--test", "evals", "--"]);
    cmd.env("SCAFFOLD_MODE", "record")
        .env("SCAFFOLD_DATABASE", ":memory:");
    for var in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd.output().expect("cargo runs");
    let text = text(&out);
    assert!(!out.status.success(), "{text}");
    for expected in [
        "SCAFFOLD_MODE=record calls the real APIs",
        "code-review: variant `prompt-v1`, agent `reviewer`: set OPENAI_API_KEY",
        "code-review: variant `prompt-v2`, agent `fixer`: set OPENAI_API_KEY",
        "fix-quality: the judge of its llm.judge assertions: set ANTHROPIC_API_KEY",
        "fix-quality: scorer `fix-quality`: set ANTHROPIC_API_KEY",
        "code-generation: variant `gpt-4o-mini`, agent `coder`: set OPENAI_API_KEY",
        "code-generation: variant `claude-sonnet-4-5`, agent `clarifier`: set ANTHROPIC_API_KEY",
        "nothing was called and no recording changed",
    ] {
        assert!(text.contains(expected), "{expected}:\n{text}");
    }
    assert!(!text.contains("test result"), "cells ran:\n{text}");
    assert_eq!(common::snapshot_dir(&recordings), before);
}

/// More trials than were recorded (`SCAFFOLD_TRIALS=4`; the code review
/// eval records three): such a cell fails with one message, the missing
/// recording and the command that records it with as many trials, not with
/// every check that could not run for want of it.
#[test]
fn a_trial_without_recordings_fails_naming_the_recording_and_the_command() {
    let cell = "code-review::prompt-v2::sql-injection::t3";
    let out = evals(&[cell], &[("SCAFFOLD_TRIALS", "4")]);
    let text = text(&out);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("0 passed; 1 failed"), "{text}");
    let failure: Vec<&str> = text
        .split(&format!("---- {cell} ----\n"))
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_default()
        .lines()
        .collect();
    let id = "eval__Code-Review-Agent-Eval__sql-injection__prompt-v2__reviewer__inv0__t3";
    assert_eq!(failure.len(), 3, "{text}");
    assert_eq!(
        failure[0],
        format!("run failed: agent `reviewer`: playback: no recording `{id}`")
    );
    assert!(
        failure[1].starts_with("  looked for: ") && failure[1].ends_with(&format!("{id}.json")),
        "{text}"
    );
    assert_eq!(
        failure[2],
        "  record it with: SCAFFOLD_TRIALS=4 cargo run --example record_example_suite -- prompt-v2::sql-injection::t3"
    );
}
