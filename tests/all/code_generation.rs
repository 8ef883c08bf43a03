//! The code generation workflow of the example suite on scripted models:
//! its dataset's assertions catch a coder that misuses its tools, `Bash`
//! runs over the files `Write` put in the state and reports a failing
//! command to the model, and an infeasible plan skips the coder.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::graded::failing;
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
}
