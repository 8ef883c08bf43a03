//! Evals expand into cells; cells run, are graded and explain failures.

use scaffold::dataset::{Format, load_str};
use scaffold::eval::{CellEnv, Eval};
use scaffold::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Qa {
    question: String,
    answer: String,
}

fn workflow(answer: &'static str) -> Workflow<Qa> {
    let agent = Agent::<Qa>::new("answerer")
        .provider(ScriptedProvider::responder("gpt-4o", move |_| {
            ScriptedReply::text(answer).with_usage(100, 10)
        }))
        .prompt(|s| s.question.clone())
        .update(|t, s| s.answer = t);
    Workflow::new("qa", Qa::default())
        .start(|input, s| s.question = input["q"].as_str().unwrap_or_default().into())
        .phase("answer", Phase::run(agent))
        .output(|s| json!(s.answer))
}

const DATASET: &str = r#"
name: qa.v1
defaultAssertions:
  - type: signal.not
    pattern: "error:*"
cases:
  - id: capital
    input: {q: "Capital of France?"}
    tags: [geo]
    assertions:
      - type: output.contains
        text: Paris
  - id: skipped
    input: {q: "?"}
    skip: true
    assertions: []
  - id: math
    input: {q: "2+2?"}
    tags: [math]
    assertions:
      - type: output.contains
        text: "4"
"#;

fn eval() -> Eval<Qa> {
    let dataset = load_str(DATASET, Format::Yaml, "qa.yaml").unwrap();
    Eval::new()
        .name("qa")
        .variant("paris", workflow("Paris"))
        .variant("four", workflow("4"))
        .dataset(dataset)
        .trials(2)
        .scorer(scaffold::scorer::output_valid())
}

#[test]
fn cells_are_variant_by_case_by_trial_and_skip_is_ignored() {
    let erased = scaffold::harness::erase(eval());
    let cells = erased.cells();
    assert_eq!(cells.len(), 3 * 2 * 2);
    let names: Vec<String> = cells.iter().map(|c| c.id.to_string()).collect();
    assert_eq!(names[0], "qa::paris::capital::t0");
    assert_eq!(names[1], "qa::paris::capital::t1");
    assert_eq!(names[2], "qa::four::capital::t0");
    let ignored: Vec<&str> = cells
        .iter()
        .filter(|c| c.ignored)
        .map(|c| c.id.case.as_str())
        .collect();
    assert_eq!(ignored, ["skipped"; 4]);
    assert_eq!(cells[0].tags, ["geo"]);
}

#[test]
fn only_ignores_the_other_cases_of_its_dataset() {
    let only = DATASET.replace("    tags: [math]\n", "    tags: [math]\n    only: true\n");
    let dataset = load_str(&only, Format::Yaml, "qa.yaml").unwrap();
    let eval = Eval::new()
        .name("qa")
        .variant("four", workflow("4"))
        .dataset(dataset);
    let cells = scaffold::harness::erase(eval).cells();
    let running: Vec<&str> = cells
        .iter()
        .filter(|c| !c.ignored)
        .map(|c| c.id.case.as_str())
        .collect();
    assert_eq!(running, ["math"]);
}

#[tokio::test]
async fn cells_pass_or_fail_with_messages_and_are_stored() {
    let eval = eval();
    let store = Store::in_memory().unwrap();
    let env = CellEnv {
        store: Some(store.clone()),
        transport: None,
        virtual_time: false,
    };
    let mut verdicts = Vec::new();
    for cell in eval.cells().filter(|c| !c.case.skip) {
        let (result, run) = eval.run_cell(&cell, &env).await;
        assert_eq!(result.session_id, run.session_id);
        verdicts.push((result.id.to_string(), result.passed, result.failures()));
    }
    let passed: Vec<&str> = verdicts
        .iter()
        .filter(|v| v.1)
        .map(|v| v.0.as_str())
        .collect();
    assert_eq!(
        passed,
        [
            "qa::paris::capital::t0",
            "qa::paris::capital::t1",
            "qa::four::math::t0",
            "qa::four::math::t1"
        ]
    );
    let (_, _, failures) = verdicts
        .iter()
        .find(|v| v.0 == "qa::four::capital::t0")
        .unwrap();
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].contains("Paris"), "{failures:?}");
    store.flush().unwrap();
    let stored = store
        .list(&scaffold::store::SessionFilter::default().tag("eval:qa"))
        .unwrap();
    assert_eq!(stored.len(), 8);
}
