//! The harness end to end, in child processes of this binary: it writes
//! every report format (the JSON valid against the schema, the Markdown
//! appended to `GITHUB_STEP_SUMMARY`), and `SCAFFOLD_BASELINE` makes a
//! planted regression fail the run while an unchanged run passes.
//!
//! `harness = false`: `main` is a libtest-mimic harness of one test that
//! runs this same binary again as an eval suite (`SCAFFOLD_GATE_CHILD` set)
//! with different environments.

use std::path::Path;
use std::process::{ExitCode, Output};

use common::{check, child_command, junit_case, junit_failure, junit_suite, stderr};
use libtest_mimic::{Arguments, Failed, Trial};
use scaffold::_cargo_scaffold_support::eval::EvalResults;
use scaffold::dataset::{Dataset, DatasetError, Format as DatasetFormat, load_str};
use scaffold::eval::Eval;
use scaffold::prelude::*;
use scaffold::scorer::{Algorithm, Expected, output_valid, similarity};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Set in children: the directory they use as their package.
mod common;

const CHILD_ENV: &str = "SCAFFOLD_GATE_CHILD";
/// Set in children that should answer 2 + 2 wrong.
const PLANT_ENV: &str = "SCAFFOLD_GATE_PLANT";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Sum {
    question: String,
    answer: String,
}

/// Passes whatever the pass rate: only the baseline can fail this run.
#[scaffold::eval(name = "arithmetic")]
fn arithmetic() -> Eval<Sum> {
    Eval::new()
        .min_pass_rate(0.0)
        .scorer(output_valid())
        .scorer(similarity(Expected::input("expected"), Algorithm::Exact).named("correct"))
}

#[scaffold::variant(eval = "arithmetic", name = "calculator")]
fn calculator() -> Workflow<Sum> {
    let planted = std::env::var_os(PLANT_ENV).is_some();
    let model = ScriptedProvider::responder("calculator-1", move |req| {
        let q = req.messages[0].text();
        let answer = match q.as_str() {
            "2+2" if planted => "5",
            "2+2" => "4",
            "3+3" => "6",
            _ => "10",
        };
        ScriptedReply::text(answer)
    });
    let agent = Agent::<Sum>::new("solver")
        .provider(model)
        .prompt(|s| s.question.clone())
        .update(|text, s| s.answer = text);
    Workflow::new("arithmetic", Sum::default())
        .start(|input: &Value, s| {
            s.question = input["question"].as_str().unwrap_or_default().into()
        })
        .phase("solve", Phase::run(agent))
        .output(|s| json!(s.answer))
}

#[scaffold::dataset(eval = "arithmetic")]
fn cases() -> Result<Dataset, DatasetError> {
    load_str(
        r#"{"name": "sums", "cases": [
            {"id": "two-plus-two", "input": {"question": "2+2", "expected": "4"},
             "assertions": [{"type": "output.equals", "value": "4"}]},
            {"id": "three-plus-three", "input": {"question": "3+3", "expected": "6"}, "assertions": []},
            {"id": "five-plus-five", "input": {"question": "5+5", "expected": "10"}, "assertions": []}
        ]}"#,
        DatasetFormat::Json,
        "sums.json",
    )
}

fn main() -> ExitCode {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        return scaffold::harness::main_in(&dir);
    }
    let args = Arguments::from_args();
    let trials = vec![Trial::test(
        "harness_writes_reports_and_gates_on_a_baseline",
        scenario,
    )];
    libtest_mimic::run(&args, trials).exit_code()
}

/// Run this binary as the eval suite in `dir` with `env`.
fn child(dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = child_command(CHILD_ENV, dir);
    // One database for every run: the baseline's sessions are there too.
    cmd.env("SCAFFOLD_FORMAT", "table,json,markdown,junit,html")
        .env("SCAFFOLD_DATABASE", dir.join("sessions.db"))
        .env("GITHUB_STEP_SUMMARY", dir.join("step-summary.md"))
        .env("INSTA_UPDATE", "always");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the child runs")
}

fn scenario() -> Result<(), Failed> {
    common::in_temp_dir("baseline-gate", run_scenario)
}

fn run_scenario(dir: &Path) -> Result<(), Failed> {
    let reports = dir.join("target").join("scaffold");
    let json_path = reports.join("arithmetic.json");

    // 1. A clean run writes every report; the JSON follows the schema.
    let o = child(dir, &[]);
    check(o.status.success(), "the clean run passes", &o)?;
    let err = stderr(&o);
    check(
        err.contains("│ Eval: arithmetic"),
        "the table is printed",
        &o,
    )?;
    for ext in ["json", "md", "junit.xml", "html"] {
        let p = reports.join(format!("arithmetic.{ext}"));
        check(p.is_file(), &format!("{} is written", p.display()), &o)?;
    }
    let text = std::fs::read_to_string(&json_path).map_err(|e| e.to_string())?;
    let value: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    scaffold::_cargo_scaffold_support::report::json::validate(&value)
        .map_err(|e| format!("the harness's JSON breaks the schema: {e:#?}"))?;
    let results = EvalResults::from_json(&text).map_err(|e| e.to_string())?;
    check(
        results.results.len() == 3 && results.results.iter().all(|c| c.passed),
        "three passing cells",
        &o,
    )?;
    check(
        results.results[0].scores.contains_key("correct"),
        "scorers are recorded",
        &o,
    )?;
    let summary = std::fs::read_to_string(dir.join("step-summary.md")).unwrap_or_default();
    check(
        summary.starts_with("## ✅ Eval `arithmetic`: 3/3 cells passed (100%)"),
        "the Markdown goes to the step summary",
        &o,
    )?;
    let baseline = dir.join("baseline.json");
    std::fs::copy(&json_path, &baseline).map_err(|e| e.to_string())?;

    // 2. A planted regression without a baseline: the gate (0%) lets it through.
    let o = child(dir, &[(PLANT_ENV, "1")]);
    check(o.status.success(), "no baseline, no block", &o)?;

    // 3. The same regression against the baseline fails the run and says why.
    let base = baseline.to_string_lossy().into_owned();
    let o = child(dir, &[(PLANT_ENV, "1"), ("SCAFFOLD_BASELINE", &base)]);
    let err = stderr(&o);
    check(
        !o.status.success(),
        "the planted regression fails the run",
        &o,
    )?;
    check(
        err.contains("Baseline: BLOCKED"),
        "the block is explained",
        &o,
    )?;
    check(
        err.contains("[critical] calculator::two-plus-two: passed in the baseline, fails now"),
        "the regression is listed",
        &o,
    )?;
    let cmp = std::fs::read_to_string(reports.join("arithmetic.comparison.json"))
        .map_err(|e| e.to_string())?;
    check(
        cmp.contains("\"shouldBlock\": true"),
        "the comparison is written",
        &o,
    )?;
    let md = std::fs::read_to_string(reports.join("arithmetic.md")).map_err(|e| e.to_string())?;
    check(
        md.contains("### Against the baseline"),
        "the Markdown shows the comparison",
        &o,
    )?;
    // The HTML report embeds the regressed cell's transcript, with the
    // baseline's beside it (its session is in the same database), and the
    // Markdown links the failed cell there.
    let anchor = "cell-arithmetic-calculator-two-plus-two-t0";
    let html =
        std::fs::read_to_string(reports.join("arithmetic.html")).map_err(|e| e.to_string())?;
    check(
        html.contains(&format!(
            "<script type=\"application/json\" id=\"t-{anchor}\">"
        )) && html.contains(&format!("<tr id=\"{anchor}\" class=\"cell failed\""))
            && html.contains("data-status=\"fail regressed\""),
        "the HTML embeds the regressed cell's transcript",
        &o,
    )?;
    let data = html
        .split(&format!("id=\"t-{anchor}\">"))
        .nth(1)
        .and_then(|rest| rest.split("</script>").next())
        .unwrap_or_default();
    check(
        data.contains("\"b\":{\"entries\""),
        "with the baseline's transcript",
        &o,
    )?;
    check(
        md.contains(&format!("](arithmetic.html#{anchor})")),
        "the Markdown links the failed cell to its transcript",
        &o,
    )?;
    // And the failed test's message, which CI logs show, points at it.
    let page = reports.join("arithmetic.html");
    check(
        String::from_utf8_lossy(&o.stdout)
            .contains(&format!("transcript: {}#{anchor}", page.display())),
        "the failed cell's message links its transcript",
        &o,
    )?;
    let suite = junit_suite(&reports.join("arithmetic.junit.xml"))?;
    let blocked = junit_failure(junit_case(&suite, "baseline"));
    check(
        blocked.is_some_and(|m| {
            m.starts_with("blocked: 1 cell(s) went from pass to fail: calculator::two-plus-two")
        }) && junit_case(&suite, "gate").is_some_and(|c| c.status.is_success()),
        "the JUnit fails the baseline testcase with the reason",
        &o,
    )?;

    // 4. An unchanged run against a directory of baselines passes.
    let baselines = dir.join("baselines");
    std::fs::create_dir_all(&baselines).map_err(|e| e.to_string())?;
    std::fs::copy(&baseline, baselines.join("arithmetic.json")).map_err(|e| e.to_string())?;
    let o = child(dir, &[("SCAFFOLD_BASELINE", &baselines.to_string_lossy())]);
    check(o.status.success(), "no regression, no block", &o)?;
    check(
        stderr(&o).contains(": equivalent;"),
        "the verdict is printed",
        &o,
    )?;
    let suite = junit_suite(&reports.join("arithmetic.junit.xml"))?;
    check(
        junit_case(&suite, "baseline").is_some_and(|c| c.status.is_success())
            && suite.failures == 0,
        "the JUnit's baseline testcase passes",
        &o,
    )?;

    // 5. Misconfiguration is loud.
    let o = child(dir, &[("SCAFFOLD_BASELINE", "/nonexistent/baseline.json")]);
    check(!o.status.success(), "a missing baseline fails", &o)?;
    check(
        stderr(&o).contains("SCAFFOLD_BASELINE"),
        "and says which setting",
        &o,
    )?;
    let o = child(dir, &[("SCAFFOLD_REPORT_TRANSCRIPTS", "some")]);
    check(!o.status.success(), "a bad transcript selection fails", &o)?;
    check(
        stderr(&o).contains("SCAFFOLD_REPORT_TRANSCRIPTS=`some` is not one of: all, failing, none"),
        "and names the variable and the values",
        &o,
    )?;
    let o = child(dir, &[("SCAFFOLD_FORMAT", "json,pdf")]);
    check(!o.status.success(), "an unknown format fails", &o)?;
    check(
        stderr(&o).contains("unknown report format `pdf`"),
        "and names it",
        &o,
    )?;
    Ok(())
}
