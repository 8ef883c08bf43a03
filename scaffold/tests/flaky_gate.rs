//! A planted flaky cell through the harness, in child processes of this
//! binary: the summary flags it, quarantined (by the package's
//! `evals/quarantine.yaml` or by `Eval::quarantine`) it no longer fails the
//! gate and the summary says so loudly, the lower-bound gate judges on the
//! Wilson interval, and a broken quarantine file fails the run.
//!
//! `harness = false`: `main` is a libtest-mimic harness of one test that
//! runs this same binary again as an eval suite (`SCAFFOLD_FLAKY_CHILD`
//! set) with different environments.

use std::path::Path;
use std::process::{ExitCode, Output};

use common::{check, child_command, junit_case, junit_failure, junit_suite, stderr};
use libtest_mimic::{Arguments, Failed, Trial};
use scaffold::_cargo_scaffold_support::eval::EvalResults;
use scaffold::dataset::{Dataset, DatasetError, Format as DatasetFormat, load_str};
use scaffold::eval::Eval;
use scaffold::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Set in children: the directory they use as their package.
mod common;

const CHILD_ENV: &str = "SCAFFOLD_FLAKY_CHILD";
/// Set in children whose eval quarantines the flaky case itself.
const API_QUARANTINE_ENV: &str = "SCAFFOLD_FLAKY_API_QUARANTINE";
/// Set in children whose eval gates on the Wilson lower bound.
const LOWER_BOUND_ENV: &str = "SCAFFOLD_FLAKY_LOWER_BOUND";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Sum {
    question: String,
    answer: String,
}

/// Three trials, every cell must pass.
#[scaffold::eval(name = "flaky")]
fn flaky() -> Eval<Sum> {
    let mut eval = Eval::new().trials(3).min_pass_rate(1.0);
    if std::env::var_os(API_QUARANTINE_ENV).is_some() {
        eval = eval.quarantine(["alternating::sometimes"]);
    }
    if std::env::var_os(LOWER_BOUND_ENV).is_some() {
        eval = eval.min_pass_rate(0.5).gate_on_lower_bound(true);
    }
    eval
}

/// Answers `sometimes` wrong on trial 1 only: the trial is in the recording
/// id of every call, so the flakiness does not depend on scheduling.
#[scaffold::variant(eval = "flaky", name = "alternating")]
fn alternating() -> Workflow<Sum> {
    let model = ScriptedProvider::responder("alternating-1", |req| {
        let id = req.context.recording_id.clone().unwrap_or_default();
        let q = req.messages[0].text();
        let wrong = q == "sometimes" && id.ends_with("__t1");
        ScriptedReply::text(if wrong { "no" } else { "yes" })
    });
    let agent = Agent::<Sum>::new("answerer")
        .provider(model)
        .prompt(|s| s.question.clone())
        .update(|text, s| s.answer = text);
    Workflow::new("flaky", Sum::default())
        .start(|input: &Value, s| {
            s.question = input["question"].as_str().unwrap_or_default().into()
        })
        .phase("answer", Phase::run(agent))
        .output(|s| json!(s.answer))
}

#[scaffold::dataset(eval = "flaky")]
fn cases() -> Result<Dataset, DatasetError> {
    load_str(
        r#"{"name": "yes", "cases": [
            {"id": "always", "input": {"question": "always"},
             "assertions": [{"type": "output.equals", "value": "yes"}]},
            {"id": "sometimes", "input": {"question": "sometimes"},
             "assertions": [{"type": "output.equals", "value": "yes"}]}
        ]}"#,
        DatasetFormat::Json,
        "yes.json",
    )
}

fn main() -> ExitCode {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        return scaffold::harness::main_in(&dir);
    }
    let args = Arguments::from_args();
    let trials = vec![Trial::test(
        "a_flaky_cell_is_flagged_and_quarantine_keeps_it_out_of_the_gate",
        scenario,
    )];
    libtest_mimic::run(&args, trials).exit_code()
}

/// Run this binary as the eval suite in `dir` with `env`.
fn child(dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = child_command(CHILD_ENV, dir);
    cmd.env("SCAFFOLD_FORMAT", "table,json,markdown,junit")
        .env("SCAFFOLD_SNAPSHOTS", "off")
        .args(["--test-threads", "2"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the child runs")
}

fn scenario() -> Result<(), Failed> {
    common::in_temp_dir("flaky-gate", run_scenario)
}

fn junit(dir: &Path) -> Result<junit_parser::TestSuite, Failed> {
    junit_suite(&dir.join("target").join("scaffold").join("flaky.junit.xml"))
}

fn results(dir: &Path) -> Result<EvalResults, Failed> {
    let path = dir.join("target").join("scaffold").join("flaky.json");
    Ok(EvalResults::load(&path).map_err(|e| e.to_string())?)
}

fn run_scenario(dir: &Path) -> Result<(), Failed> {
    std::fs::create_dir_all(dir.join("evals")).map_err(|e| e.to_string())?;
    let quarantine_file = dir.join("evals").join("quarantine.yaml");

    // 1. Unquarantined, the flaky cell is flagged and fails the gate.
    let o = child(dir, &[]);
    let err = stderr(&o);
    check(!o.status.success(), "the flaky cell fails the gate", &o)?;
    check(
        err.contains("  Flaky: 1 of 2 cells disagree across trials"),
        "the flaky count is printed",
        &o,
    )?;
    check(
        err.contains(
            "    FLAKY alternating::sometimes: 2/3 passed (95% CI 21–94%; pass@1 0.67, pass@3 1.00, pass^3 0.00)",
        ),
        "the flaky cell is listed with its trials",
        &o,
    )?;
    check(
        err.contains("  Gate: FAILED: pass rate 83.3% (95% CI 43.6%–97.0%, 6 cells) is below min_pass_rate 100.0%"),
        "the gate says what it judged",
        &o,
    )?;
    check(
        err.contains(
            "Total: 1 eval(s), 6 cells: 5 passed, 1 failed, 1 flaky; gates 0/1 passed; cost $0; \
             run FAILED: the gate of flaky failed",
        ),
        "the whole run's line agrees with the exit code",
        &o,
    )?;
    let r = results(dir)?;
    let flaky: Vec<String> = r.flaky().map(|t| t.label()).collect();
    check(
        flaky == ["alternating::sometimes"],
        "the JSON flags the cell",
        &o,
    )?;
    let suite = junit(dir)?;
    let gate = junit_failure(junit_case(&suite, "gate"));
    check(
        gate.is_some_and(|m| m.starts_with("FAILED: pass rate 83.3%"))
            && junit_failure(junit_case(&suite, "alternating::sometimes::t1")).is_some()
            && (suite.failures, suite.skipped) == (2, 0),
        "the JUnit fails the cell and the gate",
        &o,
    )?;

    // 2. Quarantined by the package's file: run, reported, not gated; loudly.
    std::fs::write(
        &quarantine_file,
        "# cells that may fail without failing the run\nflaky:\n  - alternating::sometimes  # flaky on trial 1\n  - no-such-case\n",
    )
    .map_err(|e| e.to_string())?;
    let o = child(dir, &[]);
    let err = stderr(&o);
    check(o.status.success(), "quarantined, the run passes", &o)?;
    check(
        err.contains(
            "Total: 1 eval(s), 6 cells: 3 passed, 0 failed, 3 quarantined, 1 flaky; \
             gates 1/1 passed; cost $0; run passed",
        ),
        "the whole run's line counts quarantined cells apart",
        &o,
    )?;
    check(
        err.contains("    FLAKY, QUARANTINED alternating::sometimes: 2/3 passed"),
        "the table marks it quarantined",
        &o,
    )?;
    check(
        err.contains("  Gate: passed: pass rate 100.0% (95% CI 20.7%–100.0%, 3 cells, 3 quarantined left out) ≥ min_pass_rate 100.0%"),
        "the gate counts only the other cells",
        &o,
    )?;
    check(
        err.contains("  warning: 1 quarantined cell did not count towards the gate: alternating::sometimes (2/3 passed)"),
        "the summary says so loudly",
        &o,
    )?;
    check(
        err.contains(
            "  warning: quarantine pattern `no-such-case` matches no cell of eval `flaky`",
        ),
        "a stale pattern is reported",
        &o,
    )?;
    let r = results(dir)?;
    let gate = r.gate.clone().ok_or("the JSON has the gate")?;
    check(
        gate.passed && gate.quarantined == ["alternating::sometimes"],
        "the JSON records the quarantine",
        &o,
    )?;
    let md =
        std::fs::read_to_string(dir.join("target/scaffold/flaky.md")).map_err(|e| e.to_string())?;
    check(
        md.contains("| `alternating::sometimes` | **FLAKY, QUARANTINED** | 2/3 |"),
        "the Markdown lists it",
        &o,
    )?;
    // The run passes: so does its JUnit, the failed trial skipped as quarantined.
    let suite = junit(dir)?;
    let skipped = junit_case(&suite, "alternating::sometimes::t1").map(|c| &c.status);
    check(
        matches!(skipped, Some(junit_parser::TestStatus::Skipped(s))
            if s.message.starts_with("quarantined: output.equals: "))
            && (suite.failures, suite.errors, suite.skipped) == (0, 0, 1)
            && junit_case(&suite, "gate").is_some_and(|c| c.status.is_success()),
        "the JUnit skips the quarantined failure and passes the gate",
        &o,
    )?;
    std::fs::remove_file(&quarantine_file).map_err(|e| e.to_string())?;

    // 3. The same through Eval::quarantine.
    let o = child(dir, &[(API_QUARANTINE_ENV, "1")]);
    check(o.status.success(), "Eval::quarantine works too", &o)?;
    check(
        stderr(&o).contains("warning: 1 quarantined cell did not count towards the gate"),
        "and is as loud",
        &o,
    )?;

    // 4. On the lower bound: 3/3 counted cells, three trials of one case,
    // are one case of evidence: a Wilson lower bound of 20.7% (43.9% if
    // they were independent), below 50%, although every one passed.
    let o = child(dir, &[(API_QUARANTINE_ENV, "1"), (LOWER_BOUND_ENV, "1")]);
    check(!o.status.success(), "the lower bound fails the gate", &o)?;
    check(
        stderr(&o).contains("  Gate: FAILED: Wilson lower bound 20.7% of pass rate 100.0% (95% CI 20.7%–100.0%, 3 cells, 3 quarantined left out) is below min_pass_rate 50.0%"),
        "and says which statistic it used",
        &o,
    )?;
    // Only the gate failed: the JUnit says so with a failing testcase.
    let suite = junit(dir)?;
    let gate = junit_failure(junit_case(&suite, "gate"));
    check(
        gate.is_some_and(|m| m.starts_with("FAILED: Wilson lower bound 20.7%"))
            && (suite.failures, suite.errors) == (1, 0),
        "the JUnit fails the gate testcase, and nothing else",
        &o,
    )?;

    // 5. A quarantine file that is not a mapping of lists fails the run.
    std::fs::write(&quarantine_file, "flaky: alternating::sometimes\n")
        .map_err(|e| e.to_string())?;
    let o = child(dir, &[(API_QUARANTINE_ENV, "1")]);
    check(!o.status.success(), "a broken quarantine file fails", &o)?;
    check(
        stderr(&o).contains("error: quarantine: ") && stderr(&o).contains("quarantine.yaml"),
        "and names the file",
        &o,
    )?;
    Ok(())
}
