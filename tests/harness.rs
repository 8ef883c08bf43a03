//! The eval harness as a user drives it: `cargo test --test evals` with
//! libtest flags and scaffold's environment variables.

use std::path::PathBuf;
use std::process::Output;

use scaffold::report::Format;
use serde_json::Value;

mod common;

use common::text;

fn evals(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = common::cargo(&["test", "--quiet", "--test", "evals", "--"]);
    cmd.args(args).env("SCAFFOLD_DATABASE", ":memory:");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("cargo runs")
}

fn results() -> Value {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    let raw = std::fs::read_to_string(target.join("scaffold").join("code-review.json"))
        .expect("results JSON written");
    serde_json::from_str(&raw).expect("results JSON parses")
}

/// What must not depend on scheduling: each cell's verdicts, output,
/// tokens and cost (times and session ids do).
fn stable(results: &Value) -> Vec<Value> {
    let mut cells: Vec<Value> = results["results"]
        .as_array()
        .expect("results array")
        .iter()
        .map(|cell| {
            let verdicts: Vec<&Value> = cell["assertions"]
                .as_array()
                .map(|a| a.iter().map(|r| &r["passed"]).collect())
                .unwrap_or_default();
            let field = |name: &str| match &cell[name] {
                Value::Null => cell["id"][name].clone(),
                v => v.clone(),
            };
            serde_json::json!({
                "variant": field("variant"),
                "case": field("case"),
                "passed": cell["passed"],
                "output": cell["output"],
                "inputTokens": cell["metrics"]["inputTokens"],
                "outputTokens": cell["metrics"]["outputTokens"],
                "costUsd": cell["metrics"]["costUsd"],
                "assertions": verdicts,
            })
        })
        .collect();
    cells.sort_by_key(|c| format!("{}::{}", c["variant"], c["case"]));
    cells
}

#[test]
fn playback_is_identical_at_1_and_8_threads_and_flags_work() {
    let one = evals(&["--test-threads", "1"], &[]);
    assert!(one.status.success(), "{}", text(&one));
    let out = text(&one);
    assert!(out.contains("10 passed"), "{out}");
    assert!(out.contains("Eval: code-review"), "{out}");
    assert!(out.contains("Cheapest: "), "{out}");
    let first = stable(&results());

    let eight = evals(&["--test-threads", "8"], &[]);
    assert!(eight.status.success(), "{}", text(&eight));
    assert_eq!(
        first,
        stable(&results()),
        "results differ between 1 and 8 threads"
    );

    // --list names every cell and runs none.
    let list = evals(&["--list"], &[]);
    let listed = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(
        listed.contains("code-review::gpt-4o::sql-injection: test"),
        "{listed}"
    );
    assert_eq!(listed.matches(": test").count(), 10, "{listed}");

    // A filter and --exact pick cells; SCAFFOLD_TAGS filters by case tag.
    let filtered = evals(&["sql-injection"], &[]);
    assert!(text(&filtered).contains("2 passed"), "{}", text(&filtered));
    let exact = evals(
        &["--exact", "code-review::claude-sonnet-4-5::path-traversal"],
        &[],
    );
    assert!(text(&exact).contains("1 passed"), "{}", text(&exact));
    // The name as `--list` prints it (nextest may pass that): the same cell.
    let as_listed = evals(
        &[
            "--exact",
            "[eval] code-review::claude-sonnet-4-5::path-traversal",
        ],
        &[],
    );
    assert!(
        text(&as_listed).contains("1 passed"),
        "{}",
        text(&as_listed)
    );
    let tagged = evals(&[], &[("SCAFFOLD_TAGS", "xss,negative")]);
    assert!(text(&tagged).contains("4 passed"), "{}", text(&tagged));

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
        let written = scaffold::eval::EvalResults::load(out.join("code-review.json"))
            .expect("results JSON written and valid");
        let store = scaffold::store::Store::open(&db).expect("store");
        let runs = store.eval_runs().expect("runs");
        let stored = store.eval_results(&runs[0].id).expect("stored results");
        let stored = stored
            .into_iter()
            .find(|r| r.eval == "code-review")
            .expect("code-review stored");
        assert_eq!(written.results.len(), 10);
        assert_eq!(
            written.results, stored.results,
            "SCAFFOLD_WHOLE_RECORDS={whole}"
        );
        // Whole: inputs and the assertions that passed are there.
        assert!(written.results.iter().all(|c| !c.input.is_null()));
        assert!(
            written
                .results
                .iter()
                .any(|c| c.assertions.iter().any(|a| a.passed)),
            "no passed assertion in the document"
        );
        // The other reports are what the whole records render.
        for (format, file) in [
            (Format::Junit, "code-review.junit.xml"),
            (Format::Html, "code-review.html"),
            (Format::Markdown, "code-review.md"),
        ] {
            let report = std::fs::read_to_string(out.join(file)).expect("report written");
            assert!(
                report == scaffold::report::render(format, &written, None),
                "{file} with SCAFFOLD_WHOLE_RECORDS={whole} is not what the whole records render"
            );
        }
        let junit = std::fs::read_to_string(out.join("code-review.junit.xml")).expect("junit");
        assert_eq!(junit.matches("\noutput:\n").count(), 10, "{junit}");
    }
    let bad = evals(&[], &[("SCAFFOLD_WHOLE_RECORDS", "many")]);
    assert!(!bad.status.success());
    assert!(
        text(&bad).contains("SCAFFOLD_WHOLE_RECORDS: expected a whole number of cells"),
        "{}",
        text(&bad)
    );
}
