//! Reports: golden files for every format (deterministic inputs, a fixed
//! timestamp), the JSON against its schema, the JUnit XML well-formed, and
//! the HTML rendered by headless Chromium with its SVG plots.
//!
//! Bless changed goldens with `SCAFFOLD_BLESS=1 cargo test -p scaffold-evals --test all -- reports::`.

use std::path::{Path, PathBuf};
use std::process::Command;

use scaffold::_cargo_scaffold_support::eval::results::{AssertionRecord, ScoreRecord};
use scaffold::_cargo_scaffold_support::eval::{
    CellRecord, CompareOptions, Comparison, EvalResults, RunConfig, compare,
};
use scaffold::_cargo_scaffold_support::report::{self, Format};
use scaffold::eval::GateOptions;
use scaffold::workflow::RunStatus;
use serde_json::json;

const TIMESTAMP: &str = "2026-01-28T12:00:00Z";

fn score(pass: bool, value: f64, detail: Option<&str>) -> ScoreRecord {
    ScoreRecord {
        pass,
        value,
        unit: None,
        detail: detail.map(str::to_string),
        borderline: false,
    }
}

fn assertion(kind: &str, passed: bool, message: &str) -> AssertionRecord {
    AssertionRecord {
        assertion: json!({"type": kind, "value": "fix"}),
        passed,
        message: message.into(),
        expected: Some(json!("fix")),
        actual: None,
        trajectory: None,
        children: Vec::new(),
        borderline: false,
    }
}

/// Three variants × four cases, with a failed assertion, a failed run and
/// text that needs escaping everywhere; `plan-quality` is the primary scorer.
fn results() -> EvalResults {
    let variants = [
        ("opus-planner", 4200u64, 0.12, [0.95, 0.9, 0.92, 0.97]),
        ("sonnet-planner", 2100, 0.04, [0.7, 0.65, 0.8, 0.72]),
        (
            "gpt4o <mini> | \"fast\"",
            1300,
            0.01,
            [0.5, 0.3, 0.45, 0.55],
        ),
    ];
    let cases = ["todo-api", "blog-graphql", "chat-ws", "auth & roles"];
    let mut cells = Vec::new();
    for (vi, (variant, latency, cost, quality)) in variants.iter().enumerate() {
        for (ci, case) in cases.iter().enumerate() {
            let mut c = CellRecord::new(*variant, *case);
            c.dataset = "planner.v1".into();
            c.input = json!({"goal": format!("Build {case}")});
            c.session_id = format!("session-{vi}-{ci}");
            c.metrics.latency_ms = latency + (ci as u64) * 150;
            c.metrics.cost_usd = cost * (1.0 + ci as f64 * 0.1);
            c.metrics.input_tokens = 800 + 100 * ci as u64;
            c.metrics.output_tokens = 200 + 50 * vi as u64;
            c.metrics.total_tokens = c.metrics.input_tokens + c.metrics.output_tokens;
            c.metrics.provider_calls = 2;
            c.metrics.activations = 2;
            c.events = 12 + ci;
            c.duration_ms = c.metrics.latency_ms;
            let q = quality[ci];
            c.scores
                .insert("output-valid".into(), score(true, 1.0, None));
            c.scores.insert(
                "plan-quality".into(),
                score(
                    q >= 0.5,
                    q,
                    Some(&format!("{} of 4 <tasks>", (q * 4.0).round())),
                ),
            );
            c.output = Some(json!(format!(
                "Plan for {case}: 1. design 2. build 3. test"
            )));
            c.assertions.push(assertion(
                "output.contains",
                true,
                "the output contains \"test\"",
            ));
            c.passed = q >= 0.5;
            if !c.passed {
                c.assertions.push(assertion(
                    "output.contains",
                    false,
                    "the output does not contain \"auth\" | expected <auth>",
                ));
            }
            cells.push(c);
        }
    }
    // A run that failed outright.
    let failed = &mut cells[5];
    failed.passed = false;
    failed.status = RunStatus::Failed;
    failed.error =
        Some("agent `planner`: openai returned HTTP 500: <overloaded> & retrying".into());
    failed.output = None;
    failed.scores.insert(
        "output-valid".into(),
        score(false, 0.0, Some("the run failed")),
    );
    let config = RunConfig {
        trials: 1,
        inputs: cases.len(),
        variants: variants.iter().map(|v| v.0.to_string()).collect(),
        scorers: vec!["output-valid".into(), "plan-quality".into()],
        min_pass_rate: 0.8,
    };
    let options = GateOptions {
        primary_scorer: Some("plan-quality".into()),
        ..GateOptions::default()
    };
    EvalResults::new_with("api-builder-planner", TIMESTAMP, config, options, cells)
}

/// A baseline in which everything passed and was cheaper.
fn comparison(candidate: &EvalResults) -> Comparison {
    let mut base = candidate.clone();
    base.timestamp = "2026-01-27T09:30:00Z".into();
    for c in &mut base.results {
        c.passed = true;
        c.error = None;
        c.metrics.cost_usd *= 0.5;
        c.assertions.retain(|a| a.passed);
    }
    let base = EvalResults::new(
        base.eval.clone(),
        base.timestamp.clone(),
        base.config.clone(),
        base.results,
    );
    compare(&base, candidate, &CompareOptions::default())
}

// ---------------------------------------------------------------- trials

/// Two variants × three cases × three trials: `gpt-4o::sqli` flaky and
/// quarantined, `claude::xss` flaky, `gpt-4o::clean` quarantined but
/// passing every trial, a pattern that matches nothing, and a borderline
/// judgement (an `llm.judge` assertion and a judge scorer).
fn trial_results() -> EvalResults {
    let passes: [(&str, &str, [bool; 3]); 6] = [
        ("gpt-4o", "sqli", [false, false, true]),
        ("gpt-4o", "xss", [true, true, true]),
        ("gpt-4o", "clean", [true, true, true]),
        ("claude", "sqli", [true, true, true]),
        ("claude", "xss", [false, true, false]),
        ("claude", "clean", [true, true, true]),
    ];
    let mut cells = Vec::new();
    for (vi, (variant, case, trials)) in passes.iter().enumerate() {
        for (t, passed) in trials.iter().enumerate() {
            let mut c = CellRecord::new(*variant, *case);
            c.dataset = "review.v1".into();
            c.trial = t as u32;
            c.passed = *passed;
            c.session_id = format!("session-{vi}-{t}");
            c.metrics.latency_ms = 900 + 100 * vi as u64;
            c.metrics.cost_usd = 0.002;
            c.scores.insert(
                "quality".into(),
                score(*passed, if *passed { 0.9 } else { 0.4 }, None),
            );
            if !passed {
                c.assertions
                    .push(assertion("output.contains", false, "no \"injection\""));
            }
            cells.push(c);
        }
    }
    // claude::sqli::t1: the judge scored 0.72 against a minimum of 0.7.
    let judged = &mut cells[10];
    assert_eq!(
        (judged.variant.as_str(), judged.case.as_str(), judged.trial),
        ("claude", "sqli", 1)
    );
    let mut judge = assertion(
        "llm.judge",
        true,
        "judge judge-model scored 0.72, at least 0.7 (borderline: within 0.05 of the minimum): names the flaw",
    );
    judge.borderline = true;
    judged.assertions.push(judge);
    let quality = judged.scores.get_mut("quality").unwrap();
    quality.value = 0.74;
    quality.detail = Some("judge judge-model scored a mean of 0.74 over 3 asks [0.72, 0.78, 0.72], 95% CI 0.6403–0.8397, at least 0.7 (borderline: within 0.05 of the minimum): ok".into());
    quality.borderline = true;
    let config = RunConfig {
        trials: 3,
        inputs: 3,
        variants: vec!["gpt-4o".into(), "claude".into()],
        scorers: vec!["quality".into()],
        min_pass_rate: 0.8,
    };
    EvalResults::new("flaky-review", TIMESTAMP, config, cells).with_gate_options(GateOptions {
        quarantine: vec![
            "gpt-4o::sqli".into(),
            "gpt-4o::clean".into(),
            "nothing-here".into(),
        ],
        min_trials_for_winner: 5,
        primary_scorer: Some("quality".into()),
        ..GateOptions::default()
    })
}

#[test]
fn trial_statistics_flag_flaky_cells_and_quarantine_keeps_them_out_of_the_gate() {
    let r = trial_results();
    let flaky: Vec<String> = r.flaky().map(|t| t.label()).collect();
    assert_eq!(flaky, ["gpt-4o::sqli", "claude::xss"]);
    let sqli = r
        .trial_stats()
        .find(|t| t.label() == "gpt-4o::sqli")
        .unwrap();
    assert_eq!((sqli.trials, sqli.passes, sqli.quarantined), (3, 1, true));
    // pass@1 = 1/3, pass@3 = 1 − C(2,3)/C(3,3) = 1, pass^3 = C(1,3)/C(3,3) = 0.
    assert!((sqli.pass_at_k[&1] - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!((sqli.pass_at_k[&3], sqli.pass_hat_k[&3]), (1.0, 0.0));
    let gate = r.gate_verdict();
    // Counted: 12 cells (6 quarantined left out), 10 passed: 83% ≥ 80%.
    assert_eq!(
        (gate.cells, gate.passes, gate.quarantined_cells),
        (12, 10, 6)
    );
    assert!(gate.passed, "{}", gate.describe());
    assert_eq!(gate.quarantined, ["gpt-4o::clean", "gpt-4o::sqli"]);
    assert_eq!(gate.release_candidates, ["gpt-4o::clean"]);
    assert_eq!(gate.unmatched_quarantine, ["nothing-here"]);
    // Without the quarantine the flaky cells fail the gate: 14/18 = 78%.
    let unquarantined = r.clone().with_gate_options(GateOptions::default());
    assert!(!unquarantined.gate_passed());
    // On the Wilson lower bound the same run fails.
    let strict = r.clone().with_gate_options(GateOptions {
        on_lower_bound: true,
        ..r.gate_options.clone()
    });
    let g = strict.gate_verdict();
    assert!(!g.passed);
    // Clustered by case (4 variant × case cells of 3 trials each), the
    // bound is lower than 12 independent cells would give (0.552).
    assert!((g.value - 0.4192).abs() < 1e-4, "{}", g.value);
    assert!(
        g.value
            < scaffold::_cargo_scaffold_support::eval::stats::wilson_interval(10, 12, 0.95).lower
    );
    assert!(
        g.describe()
            .starts_with("FAILED: Wilson lower bound 41.9% of pass rate 83.3% (95% CI 41.9%–"),
        "{}",
        g.describe()
    );
    // Five trials are needed for a winner; three ran.
    let cmp = r.comparison.as_ref().unwrap();
    assert_eq!(
        cmp.verdict_message(),
        "not enough trials (3 < 5) to call a winner"
    );
    assert!(
        cmp.recommendation
            .as_ref()
            .unwrap()
            .reason
            .ends_with("; not enough trials (3 < 5) to call a winner")
    );
    // The borderline judgements, from an assertion and a scorer.
    let borderline = r.borderline();
    assert_eq!(borderline.len(), 2);
    assert!(
        borderline
            .iter()
            .all(|(cell, _)| cell == "claude::sqli::t1")
    );
}

#[test]
fn every_format_marks_flaky_quarantined_and_borderline_cells() {
    let r = trial_results();
    let table = report::render(Format::Table, &r, None);
    assert!(
        table.contains("  Flaky: 2 of 6 cells disagree across trials"),
        "{table}"
    );
    assert!(table.contains("    FLAKY, QUARANTINED gpt-4o::sqli: 1/3 passed (95% CI 6–79%; pass@1 0.33, pass@3 1.00, pass^3 0.00)"), "{table}");
    assert!(
        table.contains("    QUARANTINED gpt-4o::clean: 3/3 passed"),
        "{table}"
    );
    assert!(
        table.contains("  Borderline: 2 judgements within the margin of the threshold"),
        "{table}"
    );
    assert!(
        table.contains("  Significance: not enough trials (3 < 5) to call a winner"),
        "{table}"
    );
    golden("trials.txt", &table);

    let md = report::render(Format::Markdown, &r, None);
    assert!(md.contains("> **warning: 2 quarantined cells did not count towards the gate: gpt-4o::clean (3/3 passed), gpt-4o::sqli (1/3 passed)**"), "{md}");
    assert!(
        md.contains("| `gpt-4o::sqli` | **FLAKY, QUARANTINED** | 1/3 |"),
        "{md}"
    );
    assert!(md.contains("### Borderline judgements (2)"), "{md}");
    assert!(md.contains("| `gpt-4o::sqli::t0` (QUARANTINED) |"), "{md}");
    golden("trials.md", &md);

    let xml = report::render(Format::Junit, &r, None);
    assert_well_formed(&xml);
    assert!(
        xml.contains(r#"<property name="flakyCells" value="gpt-4o::sqli,claude::xss"/>"#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<property name="quarantinedCells" value="gpt-4o::clean,gpt-4o::sqli"/>"#),
        "{xml}"
    );
    assert!(
        xml.contains("FLAKY: claude::xss passed 1/3 trials"),
        "{xml}"
    );
    assert!(
        xml.contains("QUARANTINED: not counted by the gate or baseline blocking"),
        "{xml}"
    );
    golden("trials.junit.xml", &xml);

    let html = report::render(Format::Html, &r, None);
    assert!(
        html.contains("<section id=\"flaky\">") && html.contains("<section id=\"borderline\">")
    );
    // Three trials of gpt-4o::sqli carry both badges; claude::xss's three the flaky one.
    assert_eq!(
        html.matches("<span class=\"badge quarantined\"").count(),
        6 + 2
    );
    assert_eq!(html.matches("<span class=\"badge flaky\">").count(), 6 + 2);
    golden("trials.html", &html);

    let json = report::render(Format::Json, &r, None);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    report::json::validate(&value).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(value["trialStats"][1]["label"], serde_json::Value::Null);
    assert_eq!(
        (
            &value["trialStats"][1]["case"],
            &value["trialStats"][1]["flaky"]
        ),
        (&json!("sqli"), &json!(true))
    );
    assert_eq!(value["results"][0]["quarantined"], true);
    assert_eq!(value["gate"]["releaseCandidates"], json!(["gpt-4o::clean"]));
    assert_eq!(EvalResults::from_json(&json).unwrap(), r);
    golden("trials.json", &json);
}

#[test]
fn documents_without_trial_statistics_still_load_and_get_them() {
    let r = trial_results();
    let mut value = serde_json::to_value(&r).unwrap();
    let doc = value.as_object_mut().unwrap();
    doc.remove("trialStats");
    doc.remove("gate");
    for s in doc["summary"].as_object_mut().unwrap().values_mut() {
        s.as_object_mut().unwrap().remove("passRateInterval");
    }
    let back = EvalResults::from_json(&value.to_string()).unwrap();
    assert_eq!(back, r, "derived fields are recomputed on load");
    // A document written before quarantine existed: no gate options at all.
    doc_without_options(&r);
}

fn doc_without_options(r: &EvalResults) {
    let mut value = serde_json::to_value(r).unwrap();
    let doc = value.as_object_mut().unwrap();
    doc.remove("gateOptions");
    for c in doc["results"].as_array_mut().unwrap() {
        c.as_object_mut().unwrap().remove("quarantined");
    }
    let back = EvalResults::from_json(&value.to_string()).unwrap();
    assert_eq!(back.gate_options, GateOptions::default());
    assert!(back.results.iter().all(|c| !c.quarantined));
    assert_eq!(back.flaky().count(), 2);
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compare `actual` with `tests/golden/{name}`, or write it with `SCAFFOLD_BLESS=1`.
fn golden(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("SCAFFOLD_BLESS").is_some() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {} ({e}); create it with SCAFFOLD_BLESS=1 cargo test -p scaffold-evals --test all -- reports::",
            path.display()
        )
    });
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs from the rendered report at line {}:\n  golden: {:?}\n  actual: {:?}\n\
             (bless intended changes with SCAFFOLD_BLESS=1 cargo test -p scaffold-evals --test all -- reports::)",
            path.display(),
            line + 1,
            expected.lines().nth(line),
            actual.lines().nth(line)
        );
    }
}

#[test]
fn rendering_is_deterministic() {
    let r = results();
    let cmp = comparison(&r);
    for &f in report::ALL_FORMATS {
        assert_eq!(
            report::render(f, &r, Some(&cmp)),
            report::render(f, &results(), Some(&comparison(&results()))),
            "{f}"
        );
    }
}

#[test]
fn golden_table() {
    let out = report::render(Format::Table, &results(), None);
    assert!(
        out.contains("  Best: opus-planner (plan-quality 0.94 ±0.03, pass rate 100%)"),
        "{out}"
    );
    golden("report.txt", &out);
}

#[test]
fn golden_json_follows_the_schema() {
    let r = results();
    let out = report::render(Format::Json, &r, None);
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    report::json::validate(&value).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(EvalResults::from_json(&out).unwrap(), r);
    golden("report.json", &out);
    let cmp = report::json::render_comparison(&comparison(&r));
    golden("comparison.json", &cmp);
}

#[test]
fn the_schema_rejects_what_readers_would_misread() {
    let mut value = serde_json::to_value(results()).unwrap();
    value["results"][0]["passed"] = json!("yes");
    value["summary"]["opus-planner"]["passRate"] = json!(1.5);
    value["schemaVersion"] = json!(2);
    let errors = report::json::validate(&value).unwrap_err();
    assert_eq!(errors.len(), 3, "{errors:#?}");
    assert!(
        errors.iter().any(|e| e.starts_with("/results/0/passed")),
        "{errors:#?}"
    );
}

#[test]
fn golden_markdown() {
    let r = results();
    let out = report::render(Format::Markdown, &r, Some(&comparison(&r)));
    assert!(out.starts_with("## ❌ Eval `api-builder-planner`: 9/12 cells passed (75%)"));
    // Pipes in variant names and messages must not break the tables.
    assert!(
        out.contains("| gpt4o &lt;mini&gt; \\| \"fast\" | 2/4 (50%) |"),
        "{out}"
    );
    assert!(out.contains("<details><summary>3 failed cells</summary>"));
    assert!(out.contains("**Verdict: worse** · ⛔ blocks: 3 cell(s) went from pass to fail"));
    golden("report.md", &out);
}

#[test]
fn golden_junit_is_well_formed() {
    let out = report::render(Format::Junit, &results(), None);
    assert_well_formed(&out);
    assert!(
        out.contains(r#"<testsuite name="api-builder-planner" tests="13" failures="3" errors="1""#)
    );
    assert!(out.contains(
        r#"<error message="run failed: agent `planner`: openai returned HTTP 500: &lt;overloaded&gt; &amp; retrying" type="run">"#
    ));
    assert_eq!(
        out.matches("<testcase ").count(),
        12 + 1,
        "the cells and the gate"
    );
    golden("report.junit.xml", &out);
}

// ---------------------------------------------------------------- JUnit as CI reads it

/// The document as a JUnit parser reads it (what GitLab, Jenkins and
/// GitHub's test reporters go by): its one suite.
fn junit_suite(xml: &str) -> junit_parser::TestSuite {
    let mut parsed = junit_parser::from_reader(std::io::Cursor::new(xml.as_bytes()))
        .unwrap_or_else(|e| panic!("not JUnit: {e}\n{xml}"));
    assert_eq!(parsed.suites.len(), 1, "{xml}");
    parsed.suites.remove(0)
}

fn junit_case<'a>(suite: &'a junit_parser::TestSuite, name: &str) -> &'a junit_parser::TestCase {
    suite
        .cases
        .iter()
        .find(|c| c.original_name == name)
        .unwrap_or_else(|| panic!("no testcase {name}"))
}

/// The failure message of a testcase, `None` when it did not fail.
fn failure(case: &junit_parser::TestCase) -> Option<&str> {
    match &case.status {
        junit_parser::TestStatus::Failure(f) => Some(&f.message),
        _ => None,
    }
}

#[test]
fn junit_fails_the_gate_testcase_when_only_the_gate_fails() {
    let cells: Vec<CellRecord> = (0..10)
        .map(|i| {
            let mut c = CellRecord::new("v", format!("case-{i}"));
            c.passed = true;
            c
        })
        .collect();
    let config = RunConfig {
        trials: 1,
        inputs: 10,
        variants: vec!["v".into()],
        scorers: vec![],
        min_pass_rate: 0.9,
    };
    let options = GateOptions {
        on_lower_bound: true,
        ..GateOptions::default()
    };
    let r = EvalResults::new_with("qa", TIMESTAMP, config, options, cells);
    assert!(
        !r.gate_passed(),
        "every cell passed; the lower bound did not"
    );
    let xml = report::render(Format::Junit, &r, None);
    let suite = junit_suite(&xml);
    assert_eq!((suite.tests, suite.failures, suite.errors), (11, 1, 0));
    let gate = junit_case(&suite, "gate");
    assert_eq!(gate.classname.as_deref(), Some("qa"));
    let message = failure(gate).unwrap_or_else(|| panic!("the gate passes: {xml}"));
    assert!(
        message.starts_with("FAILED: Wilson lower bound 72.2% of pass rate 100.0%")
            && message.ends_with("is below min_pass_rate 90.0%"),
        "{message}"
    );
    let cells_failed = suite
        .cases
        .iter()
        .filter(|c| c.original_name != "gate" && !c.status.is_success())
        .count();
    assert_eq!(cells_failed, 0);

    // Gated on the pass rate, it passes: so does the testcase.
    let r = r.with_gate_options(GateOptions::default());
    let suite = junit_suite(&report::render(Format::Junit, &r, None));
    assert_eq!((suite.tests, suite.failures), (11, 0));
    assert!(junit_case(&suite, "gate").status.is_success());
}

#[test]
fn junit_skips_quarantined_and_allowed_failures_as_their_tests_are_ignored() {
    let r = trial_results();
    let xml = report::render(Format::Junit, &r, None);
    let suite = junit_suite(&xml);
    let trials = r.config.trials;
    for cell in &r.results {
        let case = junit_case(&suite, &cell.label(trials));
        match &case.status {
            junit_parser::TestStatus::Skipped(s) if cell.quarantined => {
                assert!(!cell.passed, "{}", case.name);
                assert!(
                    s.message.starts_with("quarantined: output.contains: "),
                    "{}",
                    s.message
                );
            }
            // The gate (80%) allows the rest: pytest's xfail, as skipped.
            junit_parser::TestStatus::Skipped(s) => {
                assert!(!cell.passed && r.allowed_failure(cell), "{}", case.name);
                assert!(
                    s.message.starts_with(
                        "failed, allowed by the gate (min_pass_rate 80%): output.contains: "
                    ),
                    "{}",
                    s.message
                );
            }
            junit_parser::TestStatus::Failure(_) => panic!("{}: failed", case.name),
            junit_parser::TestStatus::Success => assert!(cell.passed, "{}", case.name),
            junit_parser::TestStatus::Error(e) => panic!("{}: {}", case.name, e.message),
        }
    }
    // gpt-4o::sqli failed two trials, quarantined; claude::xss two, allowed.
    assert_eq!((suite.skipped, suite.failures, suite.errors), (4, 0, 0));
    assert_eq!(suite.tests, r.results.len() as u64 + 1);
    assert!(r.gate_passed());
    assert!(junit_case(&suite, "gate").status.is_success());
}

#[test]
fn junit_fails_the_baseline_testcase_when_the_baseline_blocks() {
    let r = results();
    let cmp = comparison(&r);
    assert!(cmp.summary.should_block);
    let xml = report::render(Format::Junit, &r, Some(&cmp));
    let suite = junit_suite(&xml);
    assert_eq!(suite.tests, r.results.len() as u64 + 2);
    let baseline = junit_case(&suite, "baseline");
    let message = failure(baseline).unwrap_or_else(|| panic!("the baseline passes: {xml}"));
    assert!(
        message.starts_with("blocked: 3 cell(s) went from pass to fail: "),
        "{message}"
    );
    // Against itself nothing blocks: the testcase passes.
    let same = compare(&r, &r, &CompareOptions::default());
    let suite = junit_suite(&report::render(Format::Junit, &r, Some(&same)));
    assert!(junit_case(&suite, "baseline").status.is_success());
    // Without a baseline there is no such testcase.
    let suite = junit_suite(&report::render(Format::Junit, &r, None));
    assert!(suite.cases.iter().all(|c| c.original_name != "baseline"));
}

#[test]
fn an_unfinished_run_fails_the_gate_testcase_and_says_so_in_json() {
    let r = trial_results();
    assert!(r.gate_passed());
    let planned = r.results.len() + 7;
    let partial = r.clone().with_planned_cells(planned);
    let suite = junit_suite(&report::render(Format::Junit, &partial, None));
    let gate = failure(junit_case(&suite, "gate")).expect("the gate testcase fails");
    let message = format!(
        "run not finished: 7 of {planned} planned cells missing ({} recorded)",
        r.results.len()
    );
    // Never `complete: false` beside a passing gate, in any report.
    assert!(
        gate.starts_with(&format!("FAILED: {message} (pass rate 83.3%")),
        "{gate}"
    );
    assert!(!partial.gate_verdict().passed);
    assert_eq!(
        partial.gate_verdict().blocked_by,
        std::slice::from_ref(&message)
    );
    let table = report::render(Format::Table, &partial, None);
    assert!(
        table.contains(&format!("  Partial: {message}\n")),
        "{table}"
    );
    let md = report::render(Format::Markdown, &partial, None);
    assert!(md.starts_with("## ❌ Eval `flaky-review`"), "{md}");
    assert!(md.contains(&format!("> **error: {message}**")), "{md}");
    let json = report::render(Format::Json, &partial, None);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    report::json::validate(&value).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(value["complete"], json!(false));
    assert_eq!(
        value["cellCounts"],
        json!({"planned": planned, "recorded": 18, "missing": 7})
    );
    assert_eq!(value["gate"]["passed"], json!(false));
    assert_eq!(EvalResults::from_json(&json).unwrap(), partial);
    // A whole run says so too; a document without the field reads as whole.
    let value: serde_json::Value =
        serde_json::from_str(&report::render(Format::Json, &r, None)).unwrap();
    assert_eq!(value["complete"], json!(true));
    assert!(value.get("cellCounts").is_none());
    let mut old = value;
    old.as_object_mut().unwrap().remove("complete");
    assert!(EvalResults::from_json(&old.to_string()).unwrap().complete);
}

#[test]
fn golden_html() {
    let r = results();
    let out = report::render(Format::Html, &r, Some(&comparison(&r)));
    // Single file: inline scripts only, links within the page, nothing fetched.
    assert!(!out.contains("<script src"), "the report loads a script");
    assert!(!out.contains("src="), "the report loads something");
    for (i, _) in out.match_indices("href=\"") {
        assert!(out[i + 6..].starts_with('#'), "a link out of the page");
    }
    for fetch in ["@import", "url("] {
        assert!(!out.contains(fetch), "the report loads something: {fetch}");
    }
    golden("report.html", &out);
}

/// Tags open and close in order; attributes are quoted; no stray `<` or `&`.
fn assert_well_formed(xml: &str) {
    let body = xml
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        .expect("XML declaration");
    let mut stack: Vec<&str> = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find('<') {
        let text = &rest[..start];
        check_text(text);
        let end = rest[start..].find('>').expect("unclosed tag") + start;
        let tag = &rest[start + 1..end];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop(), Some(name), "closing </{name}>");
        } else {
            let self_closing = tag.ends_with('/');
            let tag = tag.trim_end_matches('/');
            let name = tag.split_whitespace().next().expect("tag name");
            let attrs = &tag[name.len()..];
            assert_eq!(attrs.matches('"').count() % 2, 0, "quotes in <{tag}>");
            check_text(&attrs.replace('"', ""));
            if !self_closing {
                stack.push(name);
            }
        }
        rest = &rest[end + 1..];
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    assert!(rest.trim().is_empty());
}

fn check_text(text: &str) {
    assert!(!text.contains('<'), "raw < in {text:?}");
    for (i, _) in text.match_indices('&') {
        let entity = &text[i..text[i..].find(';').map_or(text.len(), |e| i + e + 1)];
        assert!(
            ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].contains(&entity),
            "bad entity {entity:?}"
        );
    }
}

// ---------------------------------------------------------------- Chromium

/// Render `html` with headless Chromium and return the DOM it built; `None`
/// (with a message) when Chromium is not installed outside CI.
fn chromium_dom(html: &str) -> Option<String> {
    chromium_dom_at(html, "")
}

/// [`chromium_dom`] of the page opened at `#hash` (`""`: none): the page's
/// script opens the transcript of the cell the hash names.
fn chromium_dom_at(html: &str, hash: &str) -> Option<String> {
    let chromium = crate::browser::chromium()?;
    let dir = std::env::temp_dir().join(format!(
        "scaffold-html-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ));
    let profile = dir.join("profile");
    std::fs::create_dir_all(&profile).unwrap();
    let page = dir.join("report.html");
    std::fs::write(&page, html).unwrap();
    let output = Command::new(chromium)
        .args(crate::browser::FLAGS)
        .arg("--disable-quic")
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}{hash}", page.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&output.stdout).into_owned();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        output.status.success() && !dom.is_empty(),
        "chromium failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Some(dom)
}

#[test]
fn html_renders_in_chromium_with_its_plots() {
    let r = results();
    let Some(dom) = chromium_dom(&report::render(Format::Html, &r, Some(&comparison(&r)))) else {
        return;
    };
    // Chromium parsed the page: the DOM it serializes has the document's parts.
    assert!(
        dom.contains("<title>Eval api-builder-planner · scaffold</title>"),
        "{dom}"
    );
    for section in ["variants", "plots", "significance", "baseline", "cells"] {
        assert!(
            dom.contains(&format!("<section id=\"{section}\">")),
            "section {section}"
        );
    }
    // One distribution per scorer and one of latency, and the cost/quality scatter.
    for id in [
        "plot-score-output-valid",
        "plot-score-plan-quality",
        "plot-latency",
        "plot-cost-quality",
    ] {
        assert!(dom.contains(&format!("<svg id=\"{id}\"")), "svg {id}");
    }
    assert_eq!(dom.matches("<svg ").count(), 4);
    // Every cell is a dot in each score distribution, and in the latency
    // one but the cell whose run failed: its latency is unknown (3 plots ×
    // 12 cells − 1).
    assert_eq!(dom.matches("class=\"dot\"").count(), 35);
    // The frontier is drawn through the variants on it.
    assert!(dom.contains("<path class=\"frontier\" d=\"M"), "frontier");
    assert_eq!(dom.matches("class=\"point on-frontier\"").count(), 3);
    // Escaped text arrives as text, not markup.
    assert!(dom.contains("gpt4o &lt;mini&gt; | \"fast\""));
    assert!(!dom.contains("<mini>"));
}

/// A run's index page links every eval's page and its other reports, and
/// each page written beside it links back: followed in Chromium.
#[test]
fn a_run_index_links_every_eval_page_and_each_links_back() {
    use report::html::{INDEX_FILE, IndexEntry, Page, render_index};
    let (planner, review) = (results(), trial_results());
    let formats = [Format::Json, Format::Html, Format::Markdown];
    let entries = [
        IndexEntry::new(&planner, &formats),
        IndexEntry::new(&review, &formats),
    ];
    let index = render_index(Some("run-7"), &entries);
    assert!(
        index.contains("<title>Run run-7 · scaffold</title>"),
        "{index}"
    );
    for eval in ["api-builder-planner", "flaky-review"] {
        for ext in ["html", "json", "md"] {
            assert!(
                index.contains(&format!("href=\"./{eval}.{ext}\"")),
                "{eval}.{ext}: {index}"
            );
        }
    }
    assert!(index.contains("Failed"), "{index}");
    assert!(index.contains("9/12 cells passed"), "{index}");
    let page = |r: &EvalResults| Page::new(r).index(INDEX_FILE).render();
    let (planner_page, review_page) = (page(&planner), page(&review));
    assert!(
        planner_page.contains("<a href=\"./index.html\">"),
        "the way back"
    );
    assert!(!report::render(Format::Html, &planner, None).contains("index.html"));
    let Some(mut browser) = crate::browser::Page::open(
        "index",
        &[
            (INDEX_FILE, &index),
            ("api-builder-planner.html", &planner_page),
            ("flaky-review.html", &review_page),
        ],
    ) else {
        return;
    };
    browser.follow("document.querySelector('a[href=\"./flaky-review.html\"]').click()");
    assert_eq!(
        browser.eval("document.title"),
        json!("Eval flaky-review · scaffold")
    );
    browser.follow("document.querySelector('a[href=\"./index.html\"]').click()");
    assert_eq!(
        browser.eval("document.title"),
        json!("Run run-7 · scaffold")
    );
}

#[test]
fn the_schema_doc_describes_every_field() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema: serde_json::Value =
        serde_json::from_str(scaffold::_cargo_scaffold_support::eval::results::RESULTS_SCHEMA)
            .unwrap();
    let doc = std::fs::read_to_string(root.join("docs/results-schema.md")).unwrap();
    fn properties(v: &serde_json::Value, out: &mut Vec<String>) {
        if let Some(obj) = v.as_object() {
            if let Some(props) = obj.get("properties").and_then(|p| p.as_object()) {
                out.extend(props.keys().cloned());
            }
            obj.values().for_each(|child| properties(child, out));
        } else if let Some(arr) = v.as_array() {
            arr.iter().for_each(|child| properties(child, out));
        }
    }
    let mut names = Vec::new();
    properties(&schema, &mut names);
    names.sort();
    names.dedup();
    let missing: Vec<&String> = names
        .iter()
        .filter(|n| !doc.contains(&format!("`{n}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/results-schema.md does not describe {missing:?}"
    );
    assert!(names.len() > 60, "{names:?}");
}

/// `results` with every cell replaced by its summary, as the harness keeps
/// them in memory during a long run.
fn summaries(results: &EvalResults) -> EvalResults {
    EvalResults::new(
        results.eval.clone(),
        results.timestamp.clone(),
        results.config.clone(),
        results
            .results
            .iter()
            .cloned()
            .map(CellRecord::into_summary)
            .collect(),
    )
}

#[test]
fn cell_summaries_render_every_report_as_whole_records_do() {
    // Past SCAFFOLD_WHOLE_RECORDS cells the harness keeps cell summaries:
    // the table and Markdown render from them and must read nothing a
    // summary drops; JSON, JUnit and HTML show what it drops (the input, the
    // output, passed assertions, passed scores' reasons) and are written
    // cell by cell with the whole records from the store. A long output, a
    // passed score's reason and a borderline judgement that passed are the
    // edge cases.
    let mut whole = results();
    whole.results[0].output = Some(json!("é".repeat(5000)));
    whole.results[1].output = Some(json!({"plan": "x".repeat(6000)}));
    whole.results[1]
        .scores
        .insert("judge".into(), score(true, 0.9, Some("cites both sources")));
    let mut judged = assertion("llm.judge", true, "borderline: 0.51 against 0.5");
    judged.borderline = true;
    whole.results[2].assertions.push(judged);
    let whole = EvalResults::new(
        whole.eval.clone(),
        whole.timestamp.clone(),
        whole.config.clone(),
        whole.results,
    );
    let mut cut = summaries(&whole);
    let baseline = comparison(&whole);
    for format in [Format::Table, Format::Markdown] {
        assert_eq!(
            report::render(format, &cut, Some(&baseline)),
            report::render(format, &whole, Some(&baseline)),
            "{format:?} differs when rendered from cell summaries"
        );
    }
    assert_eq!(
        compare(&comparison_base(), &cut, &CompareOptions::default()),
        compare(&comparison_base(), &whole, &CompareOptions::default()),
        "a baseline comparison differs when made from cell summaries"
    );
    // The store's part: the whole record of each cell asked for.
    let mut asked = 0;
    let mut from_store = |chunk: &[CellRecord]| -> Result<Vec<Option<CellRecord>>, String> {
        asked += chunk.len();
        Ok(chunk
            .iter()
            .map(|s| {
                whole
                    .results
                    .iter()
                    .find(|w| w.case_key() == s.case_key() && w.variant == s.variant)
                    .cloned()
            })
            .collect())
    };
    for format in [Format::Json, Format::Junit, Format::Html] {
        let mut out = Vec::new();
        match format {
            Format::Json => report::json::write_streamed(&mut cut, &mut out, &mut from_store),
            Format::Junit => {
                report::junit::write_streamed(&cut, Some(&baseline), &mut out, &mut from_store)
            }
            _ => report::html::write_streamed(&cut, Some(&baseline), &mut out, &mut from_store),
        }
        .unwrap();
        let want = report::render(format, &whole, Some(&baseline));
        assert_eq!(String::from_utf8(out).unwrap(), want, "{format:?} streamed");
        assert_ne!(
            report::render(format, &cut, Some(&baseline)),
            want,
            "{format:?} reads nothing a summary drops: it need not be streamed"
        );
    }
    assert_eq!(asked, 3 * whole.results.len());
    let restored: Vec<CellRecord> = cut
        .results
        .iter()
        .zip(&whole.results)
        .map(|(s, w)| s.clone().with_details(w.clone()))
        .collect();
    assert_eq!(restored, whole.results);
}

/// A baseline for [`cell_summaries_render_every_report_as_whole_records_do`].
fn comparison_base() -> EvalResults {
    let mut base = results();
    for c in &mut base.results {
        c.passed = true;
    }
    base
}

// ---------------------------------------------------------------- frontier

/// Variants of four cases each: `(name, cases passed, cost per cell,
/// latency in ms)`.
fn frontier_results(variants: &[(&str, usize, f64, u64)]) -> EvalResults {
    let mut cells = Vec::new();
    for (variant, passes, cost, latency) in variants {
        for i in 0..4 {
            let mut c = CellRecord::new(*variant, format!("case-{i}"));
            c.passed = i < *passes;
            c.metrics.cost_usd = *cost;
            c.metrics.latency_ms = *latency;
            cells.push(c);
        }
    }
    let config = RunConfig {
        trials: 1,
        inputs: 4,
        variants: variants.iter().map(|v| v.0.to_string()).collect(),
        scorers: Vec::new(),
        min_pass_rate: 0.5,
    };
    EvalResults::new("frontier", TIMESTAMP, config, cells)
}

/// The `<svg id="{id}">…</svg>` element of `html`.
fn svg<'h>(html: &'h str, id: &str) -> &'h str {
    let start = html
        .find(&format!("<svg id=\"{id}\""))
        .unwrap_or_else(|| panic!("no svg {id}"));
    let end = html[start..].find("</svg>").unwrap() + start;
    &html[start..end]
}

/// The value of attribute `name` in the tag that starts `tag`.
fn attr<'t>(tag: &'t str, name: &str) -> &'t str {
    let tag = &tag[..tag.find('>').unwrap()];
    let start = tag
        .find(&format!(" {name}=\""))
        .unwrap_or_else(|| panic!("no {name} in {tag}"))
        + name.len()
        + 3;
    &tag[start..start + tag[start..].find('"').unwrap()]
}

/// Each point of the cost/quality plot: variant, on the frontier, centre.
fn plot_points(plot: &str) -> Vec<(String, bool, (f64, f64))> {
    plot.match_indices("<g class=\"point")
        .map(|(i, _)| {
            let g = &plot[i..];
            let circle = &g[g.find("<circle").unwrap()..];
            let centre = (
                attr(circle, "cx").parse().unwrap(),
                attr(circle, "cy").parse().unwrap(),
            );
            let on = attr(g, "class").split(' ').any(|c| c == "on-frontier");
            (attr(g, "data-variant").to_string(), on, centre)
        })
        .collect()
}

/// The points the frontier's staircase path goes through (`M x y`, then
/// `H x V y` per step), corners left out.
fn staircase(plot: &str) -> Vec<(f64, f64)> {
    let Some(i) = plot.find("<path class=\"frontier\"") else {
        return Vec::new();
    };
    let d = attr(&plot[i..], "d");
    let tokens: Vec<&str> = d.split_whitespace().collect();
    let num = |t: &str| t[1..].parse::<f64>().unwrap();
    let mut out = vec![(num(tokens[0]), tokens[1].parse().unwrap())];
    for step in tokens[2..].chunks(2) {
        out.push((num(step[0]), num(step[1])));
    }
    out
}

/// The variants the HTML variants table marks as on the frontier.
fn marked_in_table(html: &str) -> Vec<String> {
    let start = html.find("<section id=\"variants\">").unwrap();
    let table = &html[start..start + html[start..].find("</table>").unwrap()];
    table
        .lines()
        .filter(|l| l.contains("title=\"on the Pareto frontier\""))
        .map(|l| {
            let cell = &l[l.find("</span>").unwrap() + 7..];
            cell[..cell.find(" <span").unwrap()].to_string()
        })
        .collect()
}

/// `fast` is better only on latency: the frontier (quality and cost) leaves
/// it out, and the JSON, the Markdown, the HTML table and the plot agree.
#[test]
fn the_json_the_table_and_the_plot_show_one_frontier() {
    let r = frontier_results(&[
        ("best", 4, 0.02, 3000),
        ("cheap", 2, 0.01, 2000),
        ("fast", 2, 0.03, 500),
    ]);
    let json: serde_json::Value =
        serde_json::from_str(&report::render(Format::Json, &r, None)).unwrap();
    assert_eq!(
        json["comparison"]["paretoFrontier"],
        json!(["best", "cheap"])
    );
    assert_eq!(json["comparison"]["byLatency"][0], "fast");
    let md = report::render(Format::Markdown, &r, None);
    assert!(
        md.contains("**Pareto frontier:** `best`, `cheap`\n"),
        "{md}"
    );
    let html = report::render(Format::Html, &r, None);
    assert_eq!(marked_in_table(&html), ["best", "cheap"]);
    let plot = svg(&html, "plot-cost-quality");
    let points = plot_points(plot);
    let on: Vec<&str> = points
        .iter()
        .filter(|p| p.1)
        .map(|p| p.0.as_str())
        .collect();
    assert_eq!(on, ["best", "cheap"]);
    // The staircase goes through those points, cheapest first, and no other.
    let centre = |name: &str| points.iter().find(|p| p.0 == name).unwrap().2;
    assert_eq!(staircase(plot), [centre("cheap"), centre("best")]);
}

/// A frontier of one variant is drawn: a ring around its point (a line
/// needs two).
#[test]
fn a_frontier_of_one_variant_is_visible() {
    let r = frontier_results(&[("best", 4, 0.01, 1000), ("worse", 2, 0.02, 1000)]);
    assert_eq!(r.comparison.as_ref().unwrap().pareto_frontier, ["best"]);
    let html = report::render(Format::Html, &r, None);
    let plot = svg(&html, "plot-cost-quality");
    let (cx, cy) = plot_points(plot)[0].2;
    let ring = plot
        .find("<circle class=\"frontier-mark\"")
        .map(|i| &plot[i..])
        .expect("a ring marks the frontier's point");
    assert_eq!(attr(ring, "cx").parse::<f64>().unwrap(), cx);
    assert_eq!(attr(ring, "cy").parse::<f64>().unwrap(), cy);
    assert!(
        attr(ring, "r").parse::<f64>().unwrap() > 6.0,
        "outside the point"
    );
    assert_ne!(attr(ring, "stroke"), "none");
    assert_eq!(plot.matches("class=\"frontier-mark\"").count(), 1);
    assert!(staircase(plot).is_empty(), "no path that draws nothing");
}

// ------------------------------------------------------------ unknown figures

mod unplayable {
    //! Issue 36 end to end: an eval of two variants recorded against the
    //! fake provider, then played back, one variant never recorded. Its
    //! cells could not be played back: their latency and cost are unknown
    //! in every report (never `0ms`, never `$0`), it is neither cheapest nor
    //! fastest nor on the frontier, and the HTML says why each of its cells
    //! failed once: the missing recording, not every check that wanted its
    //! answer.

    use scaffold::_cargo_scaffold_support::eval::{
        CellEnv, CellRecord, EvalResults, EvalRunMeta, RecordedCell, RunConfig,
    };
    use scaffold::_cargo_scaffold_support::report::html::{
        TranscriptSelection, Transcripts, cell_anchor, render_with_transcripts,
    };
    use scaffold::_cargo_scaffold_support::report::{self, Format, json};
    use scaffold::dataset::{Format as DatasetFormat, load_str};
    use scaffold::eval::Eval;
    use scaffold::prelude::*;
    use scaffold::provider::openai::OpenAi;
    use scaffold::provider::recorder::{ProviderRecorder, RecorderMode};
    use scaffold::testing::{Answer, FakeProviderServer, Rule};
    use serde::{Deserialize, Serialize};
    use serde_json::json as value;

    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    struct Qa {
        question: String,
        answer: String,
    }

    const DATASET: &str = r#"
name: capitals
cases:
  - id: france
    input: {q: "Capital of France?"}
    assertions:
      - type: output.contains
        text: Paris
  - id: spain
    input: {q: "Capital of Spain?"}
    assertions:
      - type: output.contains
        text: Paris
"#;

    fn eval(base_url: &str) -> Eval<Qa> {
        let workflow = || {
            let agent = Agent::<Qa>::new("answerer")
                .provider(
                    OpenAi::new("gpt-4o-mini")
                        .base_url(base_url)
                        .api_key("sk-test"),
                )
                .prompt(|s| s.question.clone())
                .update(|t, s| s.answer = t);
            Workflow::new("qa", Qa::default())
                .start(|input, s| s.question = input["q"].as_str().unwrap_or_default().into())
                .phase("answer", Phase::run(agent))
                .output(|s| value!(s.answer))
        };
        Eval::new()
            .name("capitals")
            .variant("recorded", workflow())
            .variant("unrecorded", workflow())
            .dataset(load_str(DATASET, DatasetFormat::Yaml, "capitals.yaml").unwrap())
            .scorer(scaffold::scorer::output_valid())
    }

    fn env(dir: &std::path::Path, mode: RecorderMode, store: Option<Store>) -> CellEnv {
        let recorder = ProviderRecorder::new(dir, mode);
        CellEnv {
            store,
            transport: Some(recorder.transport()),
            virtual_time: mode == RecorderMode::Playback,
            tools: Some(recorder.tools()),
            recorder: Some(recorder),
            bridges: None,
        }
    }

    /// The cells of `eval` run in playback after the cells of `recorded`
    /// alone were recorded, as the harness runs and records them.
    async fn played_back(store: &Store) -> EvalResults {
        let server = FakeProviderServer::builder()
            .rule(Rule::when().then(Answer::text("Paris").usage(20, 3)))
            .start()
            .await
            .expect("fake provider");
        let dir = tempfile::tempdir().expect("tempdir");
        let eval = eval(&server.openai_base_url());
        let record = env(dir.path(), RecorderMode::Record, None);
        for cell in eval.cells().filter(|c| c.id.variant == "recorded") {
            let (result, _) = eval.run_cell(&cell, &record).await;
            assert!(result.passed, "{:?}", result.failures());
        }
        let playback = env(dir.path(), RecorderMode::Playback, Some(store.clone()));
        let mut cells = Vec::new();
        for cell in eval.cells() {
            let (result, _) = eval.run_cell(&cell, &playback).await;
            cells.push(CellRecord::from(&result));
        }
        store.flush().unwrap();
        let config = RunConfig {
            trials: 1,
            inputs: 2,
            variants: vec!["recorded".into(), "unrecorded".into()],
            scorers: vec!["output-valid".into()],
            min_pass_rate: 0.5,
        };
        EvalResults::new("capitals", super::TIMESTAMP, config, cells)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_variant_that_could_not_be_played_back_has_unknown_figures_in_every_report() {
        let store = Store::in_memory().unwrap();
        let results = played_back(&store).await;
        let (recorded, unrecorded): (Vec<&CellRecord>, Vec<&CellRecord>) = results
            .results
            .iter()
            .partition(|c| c.variant == "recorded");
        assert!(recorded.iter().all(|c| c.passed && !c.unplayable));
        assert!(unrecorded.iter().all(|c| !c.passed && c.unplayable));
        assert!(
            (unrecorded.iter()).all(|c| c.error.as_deref().unwrap_or("").contains("no recording")),
            "{unrecorded:?}"
        );

        // JSON: the variant's unmeasured cells, counted; ranked on nothing.
        let document: serde_json::Value = serde_json::from_str(&results.to_json()).unwrap();
        json::validate(&document).unwrap();
        assert_eq!(
            document["summary"]["unrecorded"]["unmeasured"],
            value!({"unplayable": 2})
        );
        assert!(document["summary"]["recorded"].get("unmeasured").is_none());
        let comparison = &document["comparison"];
        assert_eq!(comparison["byCost"], value!(["recorded"]));
        assert_eq!(comparison["byLatency"], value!(["recorded"]));
        assert_eq!(comparison["costUnknown"], value!(["unrecorded"]));
        assert_eq!(comparison["latencyUnknown"], value!(["unrecorded"]));
        assert_eq!(comparison["paretoFrontier"], value!(["recorded"]));
        assert_eq!(EvalResults::from_json(&results.to_json()).unwrap(), results);

        // The results rebuilt from the store (`cargo scaffold report --run`)
        // say the same.
        let run = EvalRunMeta::new("run-36", "harness").eval("capitals", results.config.clone());
        store.begin_eval_run(&run).unwrap();
        for c in &results.results {
            let name = c.test_name("capitals", 1);
            let cell = RecordedCell::new("capitals", name, c.clone().into_summary(), true);
            store.record_cell("run-36", &cell).unwrap();
        }
        let rebuilt = store.eval_results("run-36").unwrap().remove(0);
        assert_eq!(rebuilt.summary, results.summary);
        assert_eq!(rebuilt.comparison, results.comparison);

        // The table and Markdown: unknown, with the reason; never $0 or 0ms.
        let why = "unrecorded (2 of 2 cells could not be played back)";
        let table = report::render(Format::Table, &results, None);
        assert!(
            table.contains(&format!("  Latency and cost unknown: {why}\n")),
            "{table}"
        );
        let row = table.lines().find(|l| l.contains("│ unrecorded")).unwrap();
        assert!(row.contains("│ unknown "), "{row}");
        for line in ["Cheapest:", "Fastest:"] {
            let line = table.lines().find(|l| l.contains(line)).unwrap();
            assert!(
                line.contains("recorded (") && !line.contains("unrecorded"),
                "{line}"
            );
        }
        let markdown = report::render(Format::Markdown, &results, None);
        assert!(markdown.contains("| unrecorded | 0/2 (0%) |"), "{markdown}");
        assert!(
            markdown.contains("Latency and cost unknown: `unrecorded` (2 of 2 cells"),
            "{markdown}"
        );

        // HTML, as Chromium builds it, the cell's transcript opened.
        let anchor = cell_anchor("capitals", "unrecorded", "france", 0);
        let transcripts = Transcripts::new(&store, TranscriptSelection::All);
        let html = render_with_transcripts(&results, None, &transcripts);
        let Some(dom) = super::chromium_dom_at(&html, &format!("#{anchor}")) else {
            return;
        };
        let section = |id: &str| {
            let start = dom.find(&format!("<section id=\"{id}\">")).unwrap();
            let end = dom[start..].find("</section>").unwrap() + start;
            &dom[start..end]
        };
        let variants = section("variants");
        let row = variants
            .lines()
            .find(|l| l.contains("unrecorded</td>"))
            .unwrap();
        assert!(!row.contains("frontier"), "{row}");
        assert!(
            row.contains("title=\"2 of 2 cells could not be played back\">unknown</td>"),
            "{row}"
        );
        assert!(!row.contains(">$0<") && !row.contains(">0ms<"), "{row}");
        assert!(
            variants.contains("<strong>by cost:</strong> recorded ·"),
            "{variants}"
        );
        let plots = section("plots");
        let plot = &plots[plots.find("<svg id=\"plot-cost-quality\"").unwrap()..];
        assert!(!plot.contains("data-variant=\"unrecorded\""), "{plot}");
        assert!(plot.contains("Not placed, cost unknown: <code>unrecorded</code>"));

        let cells = section("cells");
        let start = cells.find(&format!("<tr id=\"{anchor}\"")).unwrap();
        let row = &cells[start..start + cells[start..].find("</tr>").unwrap()];
        assert!(
            row.contains("title=\"could not be played back\">unknown</td>"),
            "{row}"
        );
        let why = &row[row.find("<ul class=\"failures\">").unwrap()..];
        assert_eq!(why.matches("<li>").count(), 1, "the cause alone: {why}");
        assert!(
            why.contains("run failed: ") && why.contains("no recording"),
            "{why}"
        );
        // Its transcript, opened by the hash: the cause, not the assertion
        // that failed for want of the recorded answer.
        let detail = &cells[start..];
        let detail = &detail[detail.find("<tr class=\"detail\"").expect("the transcript")..];
        let detail = &detail[..detail.find("</tr>").unwrap()];
        assert!(detail.contains("Could not be played back: "), "{detail}");
        assert!(detail.contains("no recording"), "{detail}");
        assert!(!detail.contains("assertion fail"), "{detail}");
        assert!(detail.contains("1 failed assertion not shown"), "{detail}");
    }
}
