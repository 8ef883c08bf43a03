//! The refactoring and debugging workflows of the example suite on scripted
//! models: their in-state `Edit`, `Read` and `Grep` tools report failures
//! to the model (the files left as they were), their datasets' assertions
//! catch an agent that skips work, and the verifier fork eval's committed
//! session still forks at its verification phase from its case's input.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::graded::failing;
use scaffold::prelude::*;
use scaffold_examples::debugging as debug;
use scaffold_examples::refactoring::{self as refactor, RefactorState};
use serde_json::{Value, json};

fn model(replies: Vec<ScriptedReply>) -> Arc<dyn Provider> {
    Arc::new(replies.into_iter().fold(
        ScriptedProvider::new("gpt-4o-mini"),
        ScriptedProvider::reply,
    ))
}

fn edit(id: &str, path: &str, old: &str, new: &str) -> ScriptedReply {
    let args = json!({"file_path": path, "old_string": old, "new_string": new});
    ScriptedReply::tool_call(id, "Edit", args)
}

/// The `tool:result` payloads of a run, in order.
fn tool_results<S>(result: &RunResult<S>) -> Vec<&Value> {
    result
        .signals
        .iter()
        .filter(|s| s.name == "tool:result")
        .map(|s| &s.payload)
        .collect()
}

fn rename_input() -> Value {
    json!({
        "task": "Rename function 'getData' to 'fetchData' across the codebase",
        "files": [
            {"path": "src/api.ts", "content": "export function getData() { ... }"},
            {"path": "src/handler.ts", "content": "import { getData } from './api'; getData();"},
            {"path": "tests/api.test.ts", "content": "import { getData } from '../src/api';"},
        ],
    })
}

fn analysed_and_planned(files: &[&str]) -> Vec<ScriptedReply> {
    vec![
        ScriptedReply::json(json!({"affectedFiles": files, "summary": "rename"})),
        ScriptedReply::json(json!({"steps": ["rename everywhere"]})),
    ]
}

fn verified() -> ScriptedReply {
    ScriptedReply::json(json!({"passed": true, "issues": [], "summary": "done"}))
}

/// `Edit` refuses text that is absent or occurs twice (without
/// `replace_all`) and an unknown file, leaving the files and
/// `filesModified` as they were; the model gets each reason as a tool
/// error and the run goes on to the edits that apply.
#[tokio::test]
async fn edit_refuses_absent_ambiguous_and_unknown_targets_and_changes_nothing() {
    let mut replies = analysed_and_planned(&["src/api.ts", "src/handler.ts", "tests/api.test.ts"]);
    replies.extend([
        edit(
            "c1",
            "src/api.ts",
            "function loadData(",
            "function fetchData(",
        ),
        edit("c2", "src/handler.ts", "getData", "fetchData"),
        edit("c3", "src/missing.ts", "getData", "fetchData"),
        ScriptedReply::tool_call(
            "c4",
            "Edit",
            json!({"file_path": "src/handler.ts", "old_string": "getData",
                   "new_string": "fetchData", "replace_all": true}),
        ),
        ScriptedReply::text("Renamed in src/handler.ts."),
        verified(),
    ]);
    let workflow = refactor::workflow(model(replies), refactor::prompts::VERIFIER);
    let result = run(&workflow, rename_input()).await;
    assert_eq!(result.error, None);
    let results = tool_results(&result);
    let text = |i: usize| results[i]["result"].as_str().unwrap_or_default();
    assert_eq!(results.len(), 4, "{results:?}");
    for failed in &results[..3] {
        assert_eq!(failed["isError"], true, "{failed}");
    }
    assert_eq!(text(0), "old_string not found in src/api.ts");
    assert!(
        text(1).contains("occurs 2 times in src/handler.ts"),
        "{}",
        text(1)
    );
    assert!(
        text(2).contains("no file `src/missing.ts`") && text(2).contains("tests/api.test.ts"),
        "{}",
        text(2)
    );
    assert_eq!(results[3]["isError"], false, "{}", results[3]);
    let files = &result.state.files;
    assert_eq!(files["src/api.ts"], "export function getData() { ... }");
    assert_eq!(
        files["src/handler.ts"],
        "import { fetchData } from './api'; fetchData();"
    );
    assert_eq!(result.state.files_modified, ["src/handler.ts"]);
    // Only one file was edited: the rename case fails on the output naming
    // the files. Not on `tool.called Edit min: 3`: failed calls count too.
    let expected: BTreeSet<String> = ["output.contains"].map(String::from).into();
    assert_eq!(
        failing("refactoring.yaml", "rename-function-across-files", &result),
        expected
    );
}

fn null_error_input() -> Value {
    json!({
        "error": "TypeError: Cannot read property 'name' of undefined\nat getUserName (src/user.ts:15)\n",
        "testFile": "tests/user.test.ts",
        "sourceFile": "src/user.ts",
        "files": [
            {"path": "src/user.ts", "content": "export function getUserName(id) {\n  const user = users.get(id);\n  return user.name;\n}\n"},
            {"path": "tests/user.test.ts", "content": "expect(getUserName(\"nobody\")).toBe(\"\");\n"},
        ],
    })
}

fn diagnosis(category: &str, root_cause: &str) -> ScriptedReply {
    ScriptedReply::json(
        json!({"category": category, "rootCause": root_cause, "file": "src/user.ts"}),
    )
}

/// `Read` of a file that is not there is a tool error naming the files
/// that are; `Grep` that finds nothing says so (not an error), a bad
/// pattern is an error, and a match lists `path:line: text`.
#[tokio::test]
async fn read_of_a_missing_file_errs_and_grep_without_a_match_says_so() {
    let replies = vec![
        ScriptedReply::tool_call("c1", "Read", json!({"file_path": "src/users.ts"})),
        ScriptedReply::tool_call("c2", "Grep", json!({"pattern": "fetchUser"})),
        ScriptedReply::tool_call("c3", "Grep", json!({"pattern": "user(", "path": "src"})),
        ScriptedReply::tool_call(
            "c4",
            "Grep",
            json!({"pattern": "user\\.name", "path": "src"}),
        ),
        ScriptedReply::tool_call("c5", "Read", json!({"file_path": "src/user.ts"})),
        diagnosis("null", "user is undefined for an unknown id: no null check"),
        edit(
            "c6",
            "src/user.ts",
            "return user.name;",
            "return user?.name ?? \"\";",
        ),
        ScriptedReply::text("Added a null check."),
    ];
    let workflow = debug::workflow(model(replies), debug::prompts::DEBUGGER);
    let result = run(&workflow, null_error_input()).await;
    assert_eq!(result.error, None);
    let results = tool_results(&result);
    let text = |i: usize| results[i]["result"].as_str().unwrap_or_default();
    assert_eq!(results.len(), 6, "{results:?}");
    assert_eq!(results[0]["isError"], true);
    assert_eq!(
        text(0),
        "no file `src/users.ts` (the files are: src/user.ts, tests/user.test.ts)"
    );
    assert_eq!(results[1]["isError"], false);
    assert_eq!(text(1), "no match for `fetchUser`");
    assert_eq!(results[2]["isError"], true);
    assert!(text(2).starts_with("bad pattern `user(`"), "{}", text(2));
    assert_eq!(text(3), "src/user.ts:3:   return user.name;");
    assert!(text(4).contains("   3\t  return user.name;"), "{}", text(4));
    assert!(
        result.state.files["src/user.ts"].contains("return user?.name ?? \"\";"),
        "{:?}",
        result.state.files
    );
    // Tool errors are not `error:*` signals: the null case passes.
    assert_eq!(
        failing("debugging.yaml", "failing-test-null-error", &result),
        BTreeSet::new()
    );
}

/// `diagnosis:complete` is checked with `snapshot.at`: a debugger whose
/// diagnosis does not name the null fails both the root cause check and
/// (having read one file) the `Read` count; an answer that is no
/// diagnosis ends the run before the fixer.
#[tokio::test]
async fn the_null_case_fails_a_debugger_that_reads_one_file_and_misses_the_null() {
    let replies = vec![
        ScriptedReply::tool_call("c1", "Read", json!({"file_path": "src/user.ts"})),
        diagnosis("logic", "the map lookup uses the wrong key"),
        edit(
            "c2",
            "src/user.ts",
            "users.get(id)",
            "users.get(String(id))",
        ),
        ScriptedReply::text("Fixed the key."),
    ];
    let workflow = debug::workflow(model(replies), debug::prompts::DEBUGGER);
    let result = run(&workflow, null_error_input()).await;
    assert_eq!(result.error, None);
    let expected: BTreeSet<String> = ["tool.called", "snapshot.at", "output.matches"]
        .map(String::from)
        .into();
    assert_eq!(
        failing("debugging.yaml", "failing-test-null-error", &result),
        expected
    );

    // An answer that is no diagnosis stops the run before `diagnosis:complete`:
    // no fix, and the case fails its trajectory and snapshots.
    let broken = vec![ScriptedReply::text("not a diagnosis")];
    let workflow = debug::workflow(model(broken), debug::prompts::DEBUGGER);
    let result = run(&workflow, null_error_input()).await;
    assert!(result.error.is_some());
    assert!(result.state.fix.is_none());
    assert!(
        !result
            .signals
            .iter()
            .any(|s| s.name == "diagnosis:complete")
    );
    let failed = failing("debugging.yaml", "failing-test-null-error", &result);
    assert!(
        failed.contains("signal.trajectory") && failed.contains("snapshot.at"),
        "{failed:?}"
    );
}

/// The verifier fork eval's committed session resolves at its first entry
/// into `verification`, with the refactoring the parent left (two files of
/// three renamed), and its input is the fork dataset's case's: a change to
/// either would fail every cell of that eval. Only the verifier is
/// recorded for it.
#[test]
fn the_committed_parent_session_forks_at_verification_from_the_cases_input() {
    let root = env!("CARGO_MANIFEST_DIR");
    let source = ForkSource::file(format!(
        "{root}/evals/sessions/refactoring-rename-gpt-4o-mini.json"
    ))
    .expect("the session file loads");
    let parent = source
        .resolve(&ForkPoint::phase("verification").first())
        .expect("the point resolves");
    assert_eq!(parent.resolved.phase, "verification");
    let state: RefactorState =
        serde_json::from_value(parent.resolved.state.clone()).expect("a refactoring state");
    assert_eq!(state.files_modified, ["src/api.ts", "src/handler.ts"]);
    assert!(state.verification.is_none(), "{:?}", state.verification);
    assert!(state.files["tests/api.test.ts"].contains("getData"));

    let ds = dataset::load(format!("{root}/evals/refactoring-verifier.yaml")).expect("loads");
    assert_eq!(ds.cases.len(), 1);
    assert_eq!(ds.cases[0].input(), parent.input);
    assert_eq!(parent.input, rename_input());

    let fork_recordings: Vec<String> = std::fs::read_dir(format!("{root}/evals/recordings"))
        .expect("the recordings")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.contains("Refactoring-Verifier-Fork-Eval"))
        .collect();
    assert_eq!(fork_recordings.len(), 2, "{fork_recordings:?}");
    assert!(
        fork_recordings.iter().all(|n| n.contains("__verifier__")),
        "{fork_recordings:?}"
    );
}
