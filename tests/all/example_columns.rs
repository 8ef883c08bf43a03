//! The example suite's scorer columns and bounds say something: on the
//! played-back run, each scorer measures what its name says where the
//! variants differ, and every latency and cost bound sits just above the
//! recorded figures it bounds, where a regression crosses it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use crate::common::{self, TempDir, text};

/// How far above the worst recorded figure a bound may sit: a cell half
/// again as slow or as dear as the worst one fails it.
const MARGIN: f64 = 1.5;

/// The example suite played back into `out`: each eval's results document.
fn played_back(out: &Path) -> BTreeMap<String, Value> {
    let run = common::cargo(&["test", "--quiet", "--test", "evals"])
        .env("SCAFFOLD_DATABASE", ":memory:")
        .env("SCAFFOLD_OUTPUT", out)
        .output()
        .expect("cargo runs");
    assert!(run.status.success(), "{}", text(&run));
    std::fs::read_dir(out)
        .expect("results written")
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            let eval = path.file_stem()?.to_str()?.to_string();
            (path.extension()? == "json").then_some(())?;
            let doc = std::fs::read_to_string(&path).expect("results JSON");
            Some((
                eval,
                serde_json::from_str(&doc).expect("results JSON parses"),
            ))
        })
        .collect()
}

/// The cells of a results document.
fn cells(doc: &Value) -> &[Value] {
    doc["results"].as_array().map_or(&[], Vec::as_slice)
}

/// `variant::case` of a cell.
fn name(cell: &Value) -> String {
    format!(
        "{}::{}",
        cell["variant"].as_str().unwrap_or_default(),
        cell["case"].as_str().unwrap_or_default()
    )
}

/// A variant's mean of scorer `scorer`, as the table shows it.
fn mean(doc: &Value, variant: &str, scorer: &str) -> f64 {
    doc["summary"][variant]["scores"][scorer]["mean"]
        .as_f64()
        .unwrap_or_else(|| panic!("{variant} has no mean {scorer}"))
}

#[test]
fn the_scorer_columns_tell_the_variants_apart_and_the_bounds_can_fail() {
    let dir = TempDir::new("example-columns");
    let docs = played_back(&dir.join("out"));

    // Code review: `fixed` is 0 where the case's code holds a problem and
    // the reviewer found nothing (prompt v1 on the bugs, the quality
    // problems and the stub it is not asked about), 1 for clean code left
    // alone, whichever the variant.
    let review = &docs["code-review"];
    let mut not_fixed = BTreeSet::new();
    for cell in cells(review) {
        let problems = cell["input"]["problems"]
            .as_array()
            .expect("every case says what its code holds");
        let fixed = &cell["scores"]["fixed"];
        let detail = fixed["detail"].as_str().unwrap_or_default();
        if problems.is_empty() {
            assert_eq!(fixed["pass"], true, "{}: {fixed}", name(cell));
            assert_eq!(detail, "clean code, left alone", "{}", name(cell));
        } else if fixed["pass"] == false {
            assert!(
                detail.starts_with("not fixed: the reviewer found nothing in code with "),
                "{}: {detail}",
                name(cell)
            );
            not_fixed.insert(name(cell));
        }
    }
    let missed_by_v1: BTreeSet<String> = [
        "division-by-zero",
        "empty-function",
        "magic-numbers",
        "null-dereference",
        "race-condition",
        "unused-variable",
    ]
    .map(|case| format!("prompt-v1::{case}"))
    .into();
    assert_eq!(not_fixed, missed_by_v1);
    assert!(mean(review, "prompt-v1", "fixed") < 0.5);
    assert_eq!(mean(review, "prompt-v2", "fixed"), 1.0);

    // Code generation: `tests-pass` is the exit status the recorded
    // `RunTests` ran with, whatever the tester said; a case that expects no
    // code passes both scorers only without code.
    let codegen = &docs["code-generation"];
    let recordings = Path::new(env!("CARGO_MANIFEST_DIR")).join("evals/recordings");
    let mut failing_tests = BTreeSet::new();
    for cell in cells(codegen) {
        let tests = &cell["scores"]["tests-pass"];
        if cell["input"]["expect"] != "feasible" {
            for score in [tests, &cell["scores"]["approved"]] {
                assert_eq!(score["pass"], true, "{}: {score}", name(cell));
                assert!(
                    score["detail"]
                        .as_str()
                        .is_some_and(|d| d.starts_with("no code, as the case expects")),
                    "{}: {score}",
                    name(cell)
                );
            }
            continue;
        }
        let run = recordings.join(format!(
            "eval__Code-Generation-Agent-Eval__{}__{}__tester.tool.RunTests__inv0.json",
            cell["case"].as_str().unwrap_or_default(),
            cell["variant"].as_str().unwrap_or_default()
        ));
        let run: Value = serde_json::from_str(
            &std::fs::read_to_string(&run).unwrap_or_else(|e| panic!("{}: {e}", run.display())),
        )
        .expect("a tool recording");
        assert_eq!(
            tests["pass"],
            run["isError"] == false,
            "{}: {tests} after {run}",
            name(cell)
        );
        if tests["pass"] == false {
            failing_tests.insert(name(cell));
        }
    }
    assert_eq!(
        failing_tests,
        BTreeSet::from(["gpt-4o-mini::fibonacci-function".to_string()])
    );
    let mini = &cells(codegen)
        .iter()
        .find(|c| name(c) == "gpt-4o-mini::fibonacci-function")
        .expect("the cell")["scores"];
    assert_eq!(
        mini["tests-pass"]["detail"],
        "the test run failed (exit status 1): 3 test(s), 2 passed, 1 failed"
    );
    assert_eq!(mini["approved"]["pass"], false);
    for scorer in ["tests-pass", "approved"] {
        assert!(
            mean(codegen, "gpt-4o-mini", scorer) < mean(codegen, "claude-sonnet-4-5", scorer),
            "{scorer}"
        );
    }

    // Every bound, the datasets' `metric.latency.max` and `metric.cost.max`
    // and the `cost` scorers' maximum: the worst figure it bounds passes,
    // and one MARGIN times that would not.
    let mut bounds: BTreeMap<(String, String, String), (f64, f64)> = BTreeMap::new();
    let mut bound = |eval: &str, what: &str, max: f64, actual: f64| {
        let key = (eval.to_string(), what.to_string(), max.to_string());
        let worst = bounds.entry(key).or_insert((max, actual));
        worst.1 = worst.1.max(actual);
    };
    for (eval, doc) in &docs {
        for cell in cells(doc) {
            for a in cell["assertions"].as_array().into_iter().flatten() {
                let kind = a["assertion"]["type"].as_str().unwrap_or_default();
                if matches!(kind, "metric.latency.max" | "metric.cost.max") {
                    let max = a["expected"]["max"].as_f64().expect("a maximum");
                    bound(eval, kind, max, a["actual"].as_f64().expect("a figure"));
                }
            }
            if let Some(detail) = cell["scores"]["cost"]["detail"].as_str() {
                // "$0.00116 (ideal ≤ $0.002, max $0.008)"
                let max = detail
                    .rsplit_once("max $")
                    .and_then(|(_, max)| max.trim_end_matches(')').parse().ok())
                    .unwrap_or_else(|| panic!("{eval}: no maximum in {detail}"));
                let cost = cell["metrics"]["costUsd"].as_f64().expect("a cost");
                bound(eval, "cost scorer", max, cost);
            }
        }
    }
    // Code review's three latency bounds, code generation's two and its
    // cost scorer, refactoring's latency bound, and the cost scorers of
    // code review, debugging and refactoring.
    assert_eq!(bounds.len(), 10, "{bounds:#?}");
    for ((eval, what, _), (max, worst)) in &bounds {
        assert!(
            *worst <= *max && *max <= worst * MARGIN,
            "{eval}: {what} {max} is not just above the worst recorded figure, {worst}"
        );
    }
}
