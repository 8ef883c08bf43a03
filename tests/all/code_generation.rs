//! The code generation workflow of the example suite on scripted models:
//! its dataset's assertions catch a coder that misuses its tools, `Bash`
//! runs over the files `Write` put in the state and reports a failing
//! command to the model, the `tests-pass` scorer reads the exit status of
//! the tester's `RunTests`, not its word, and an infeasible plan skips the
//! coder, which the scorers count as right only there.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::graded::{failing, input_of};
use scaffold::prelude::*;
use scaffold_examples::code_generation::{self as codegen, CodeGenState};
use serde_json::{Value, json};

/// The workflow with every agent answered by `replies`, in order.
fn scripted(replies: Vec<ScriptedReply>) -> Workflow<CodeGenState> {
    let model = replies.into_iter().fold(
        ScriptedProvider::new("gpt-4o-mini"),
        ScriptedProvider::reply,
    );
    let root = std::env::temp_dir().join(format!("scaffold-codegen-test-{}", std::process::id()));
    codegen::workflow(Arc::new(model), root)
}

fn plan(verdict: &str) -> ScriptedReply {
    ScriptedReply::json(json!({"verdict": verdict, "steps": ["write it"], "reason": "because"}))
}

fn tested_and_approved() -> Vec<ScriptedReply> {
    vec![
        ScriptedReply::json(
            json!({"cases": ["a", "b"], "count": 2, "passed": true, "summary": "2 pass"}),
        ),
        ScriptedReply::json(json!({"approved": true, "summary": "fine"})),
    ]
}

fn tool_results(result: &RunResult<CodeGenState>) -> Vec<&Value> {
    result
        .signals
        .iter()
        .filter(|s| s.name == "tool:result")
        .map(|s| &s.payload)
        .collect()
}

/// Seed 003's "Should call Write tool, not Bash echo": a coder that
/// creates utils.ts with `echo` fails the case's four tool and state
/// assertions (the file never reaches the state); with `Write` it passes.
#[tokio::test]
async fn the_file_creation_case_fails_a_coder_that_writes_with_bash_echo() {
    let task = json!({"task": "Create a new file called utils.ts with a helper function", "language": "typescript"});
    let mut echo = vec![
        plan("feasible"),
        ScriptedReply::tool_call(
            "c1",
            "Bash",
            json!({"command": "echo 'export const one = 1;' > utils.ts"}),
        ),
        ScriptedReply::text("Created utils.ts."),
    ];
    echo.extend(tested_and_approved());
    let result = run(&scripted(echo), task.clone()).await;
    assert_eq!(result.error, None);
    let expected: BTreeSet<String> = [
        "tool.called",
        "tool.notCalled",
        "tool.calledWith",
        "snapshot.final",
    ]
    .map(String::from)
    .into();
    assert_eq!(
        failing("code-generation.yaml", "file-creation-tools", &result),
        expected
    );

    let mut write = vec![
        plan("feasible"),
        ScriptedReply::tool_call(
            "c1",
            "Write",
            json!({"file_path": "utils.ts", "content": "export const one = 1;\n"}),
        ),
        ScriptedReply::text("Created utils.ts."),
    ];
    write.extend(tested_and_approved());
    let result = run(&scripted(write), task).await;
    assert_eq!(
        failing("code-generation.yaml", "file-creation-tools", &result),
        BTreeSet::new()
    );
    assert_eq!(result.state.files["utils.ts"], "export const one = 1;\n");
}

/// `Bash` runs in a directory holding the files written so far; a command
/// that fails goes back to the model as a tool error with its exit status
/// and output, and the run goes on.
#[tokio::test]
async fn bash_runs_over_the_written_files_and_reports_a_failing_command() {
    let mut replies = vec![
        plan("feasible"),
        ScriptedReply::tool_call(
            "c1",
            "Write",
            json!({"file_path": "src/math.mjs", "content": "export const add = (a, b) => a + b;\n"}),
        ),
        ScriptedReply::tool_call("c2", "Bash", json!({"command": "cat src/math.mjs"})),
        ScriptedReply::tool_call(
            "c3",
            "Bash",
            json!({"command": "echo 1 test failed; exit 3"}),
        ),
        ScriptedReply::text("One test fails."),
    ];
    replies.extend(tested_and_approved());
    let result = run(
        &scripted(replies),
        json!({"task": "Write and run tests for the math module", "language": "typescript"}),
    )
    .await;
    assert_eq!(result.error, None);
    let results = tool_results(&result);
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[1]["isError"], false, "{}", results[1]);
    assert!(
        results[1]["result"]
            .as_str()
            .is_some_and(|out| out.contains("export const add")),
        "{}",
        results[1]
    );
    assert_eq!(results[2]["isError"], true, "{}", results[2]);
    let failed = results[2]["result"].as_str().unwrap_or_default();
    assert!(
        failed.contains("exit status: 3") && failed.contains("1 test failed"),
        "{failed}"
    );
    // Bash only reads the state: the files are the ones Write put there.
    assert_eq!(
        result.state.files.keys().collect::<Vec<_>>(),
        ["src/math.mjs"]
    );
    assert!(failing("code-generation.yaml", "test-execution-tools", &result).is_empty());
}

/// `Write` and a command in the project's directory: a file whose path
/// would leave it is refused, and the command does not run.
#[tokio::test]
async fn a_file_outside_the_project_is_never_written_by_a_command() {
    let replies = vec![
        plan("feasible"),
        ScriptedReply::tool_call(
            "c1",
            "Write",
            json!({"file_path": "../escaped.txt", "content": "outside\n"}),
        ),
        ScriptedReply::tool_call("c2", "Bash", json!({"command": "touch ran"})),
        ScriptedReply::text("Done."),
    ];
    let result = run(
        &scripted(replies),
        json!({"task": "Write and run tests for the math module", "language": "typescript"}),
    )
    .await;
    let results = tool_results(&result);
    assert_eq!(results[1]["isError"], true, "{}", results[1]);
    assert_eq!(
        results[1]["result"],
        "`../escaped.txt` is not a path inside the project"
    );
}

/// The tester says its tests pass; the run says otherwise: `RunTests`
/// refuses a file the project does not hold, then its last run exits 1
/// (its `package.json` does not parse, so `npm install` fails before any
/// test). `tests-pass` scores the run, 0 with its exit status, while the
/// seed's `tests.passed` assertion, the tester's word, passes.
#[tokio::test]
async fn tests_pass_is_the_exit_status_of_the_test_run_not_the_testers_word() {
    let input = input_of("code-generation.yaml", "fibonacci-function");
    let replies = vec![
        plan("feasible"),
        ScriptedReply::tool_call(
            "c1",
            "Write",
            json!({"file_path": "fibonacci.ts", "content": "export const fibonacci = (n: number): number => n;\n"}),
        ),
        ScriptedReply::text("Wrote fibonacci.ts."),
        ScriptedReply::tool_call("t1", "RunTests", json!({"files": ["missing.test.ts"]})),
        ScriptedReply::tool_call(
            "t2",
            "Write",
            json!({"file_path": "package.json", "content": "{ not json"}),
        ),
        ScriptedReply::tool_call(
            "t3",
            "Write",
            json!({"file_path": "fibonacci.test.ts", "content": "import \"./fibonacci\";\n"}),
        ),
        ScriptedReply::tool_call("t4", "RunTests", json!({"files": ["fibonacci.test.ts"]})),
        ScriptedReply::json(
            json!({"cases": ["fibonacci(10) is 55"], "count": 1, "passed": true, "summary": "all pass"}),
        ),
        ScriptedReply::json(json!({"approved": true, "summary": "fine"})),
    ];
    let result = run(&scripted(replies), input.clone()).await;
    assert_eq!(result.error, None);
    let runs: Vec<&Value> = tool_results(&result)
        .into_iter()
        .filter(|r| r["name"] == codegen::RUN_TESTS)
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0]["isError"], true);
    assert!(
        runs[0]["result"]
            .as_str()
            .is_some_and(|r| r.starts_with("no file `missing.test.ts`")),
        "{}",
        runs[0]
    );
    assert_eq!(runs[1]["isError"], true, "{}", runs[1]);
    assert!(
        runs[1]["result"]
            .as_str()
            .is_some_and(|r| r.starts_with("exit status: 1: ")),
        "{}",
        runs[1]
    );
    let ctx =
        ScorerContext::new(&result.state, &result.signals, &result.metrics).with_input(&input);
    let tests = codegen::scoring::tests_pass(&ctx);
    assert_eq!((tests.value, tests.pass), (0.0, Some(false)), "{tests:?}");
    assert!(
        tests
            .detail
            .as_deref()
            .is_some_and(|d| d.starts_with("the test run failed (exit status 1): ")),
        "{tests:?}"
    );
    // The tester's word and the reviewer's, as they said them.
    assert!(result.state.tests.as_ref().is_some_and(|t| t.passed));
    assert_eq!(codegen::scoring::approved(&ctx).pass, Some(true));
    let wrong = failing("code-generation.yaml", "fibonacci-function", &result);
    assert!(!wrong.contains("snapshot.final"), "{wrong:?}");
}

/// An infeasible plan: the coder is skipped saying why, so are the tester
/// and the reviewer, and the impossible-task case passes; the same case
/// fails when the planner goes ahead anyway.
#[tokio::test]
async fn an_infeasible_plan_skips_the_coder_and_a_feasible_one_fails_the_case() {
    let task = json!({"task": "Write a function that solves P=NP", "language": "typescript"});
    let infeasible = ScriptedReply::json(
        json!({"verdict": "infeasible", "steps": [], "reason": "This cannot be done: P vs NP is open."}),
    );
    let result = run(&scripted(vec![infeasible]), task.clone()).await;
    assert_eq!(result.error, None);
    let skipped: Vec<(&str, &str)> = result
        .signals
        .iter()
        .filter(|s| s.name == "agent:skipped")
        .map(|s| {
            (
                s.payload["agent"].as_str().unwrap_or_default(),
                s.payload["reason"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        skipped,
        [
            ("coder", "the planner found the task infeasible"),
            ("tester", "no code was written"),
            ("reviewer", "the code was not tested"),
        ]
    );
    assert_eq!(
        failing("code-generation.yaml", "impossible-task", &result),
        BTreeSet::new()
    );
    // No code is what this case expects: both scorers count it right.
    let input = input_of("code-generation.yaml", "impossible-task");
    let scores = |result: &RunResult<CodeGenState>| {
        let ctx =
            ScorerContext::new(&result.state, &result.signals, &result.metrics).with_input(&input);
        [
            codegen::scoring::tests_pass(&ctx),
            codegen::scoring::approved(&ctx),
        ]
    };
    for score in scores(&result) {
        assert_eq!(score.pass, Some(true), "{score:?}");
        assert_eq!(
            score.detail.as_deref(),
            Some("no code, as the case expects: the task is infeasible")
        );
    }

    let mut ahead = vec![
        plan("feasible"),
        ScriptedReply::tool_call(
            "c1",
            "Write",
            json!({"file_path": "pnp.ts", "content": "export function solve() { return true; }\n"}),
        ),
        ScriptedReply::text("Solved it."),
    ];
    ahead.extend(tested_and_approved());
    let result = run(&scripted(ahead), task).await;
    let expected: BTreeSet<String> = ["agent.skipped", "output.matches"].map(String::from).into();
    assert_eq!(
        failing("code-generation.yaml", "impossible-task", &result),
        expected
    );
    // Code for a task the case says cannot be done: tested and approved,
    // and still wrong.
    for score in scores(&result) {
        assert_eq!((score.value, score.pass), (0.0, Some(false)), "{score:?}");
        assert_eq!(
            score.detail.as_deref(),
            Some("the task is infeasible, yet 1 file(s) were written")
        );
    }
}
