//! Evals expand into cells; cells run, are graded and explain failures.

use scaffold::_cargo_scaffold_support::eval::CellEnv;
use scaffold::dataset::{Format, load_str};
use scaffold::eval::Eval;
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
    let erased = scaffold::__private::erase(eval());
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
    let cells = scaffold::__private::erase(eval).cells();
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
        tools: None,
        recorder: None,
        bridges: None,
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

/// One case, one variant whose provider fails `errors` times, then answers.
fn flaky_eval(errors: usize, policy: scaffold::eval::OnError) -> Eval<Qa> {
    let mut provider = ScriptedProvider::new("gpt-4o");
    for n in 0..errors {
        provider = provider.reply(ScriptedReply::error(format!("HTTP 500 (call {n})")));
    }
    let provider = provider.reply(ScriptedReply::text("Paris").with_usage(100, 10));
    let agent = Agent::<Qa>::new("answerer")
        .provider(provider)
        .prompt(|s| s.question.clone())
        .update(|t, s| s.answer = t);
    let (workflow, dataset) = capital_qa(agent);
    let always = scaffold::scorer::custom(
        "always-one",
        |_: &scaffold::scorer::ScorerContext<'_, Qa>| 1.0,
    );
    Eval::new()
        .name("qa")
        .variant("flaky", workflow)
        .dataset(dataset)
        .scorer(scaffold::scorer::cost(0.05, 0.01))
        .scorer(always)
        .on_error(policy)
}

/// A workflow that runs `agent` on the question of its input, and a
/// dataset of one case, `capital`.
fn capital_qa(agent: Agent<Qa>) -> (Workflow<Qa>, scaffold::dataset::Dataset) {
    let workflow = Workflow::new("qa", Qa::default())
        .start(|input, s| s.question = input["q"].as_str().unwrap_or_default().into())
        .phase("answer", Phase::run(agent))
        .output(|s| json!(s.answer));
    let dataset = load_str(
        "name: qa.v1\ncases:\n  - id: capital\n    input: {q: \"Capital?\"}\n    assertions: []\n",
        Format::Yaml,
        "qa.yaml",
    )
    .unwrap();
    (workflow, dataset)
}

async fn only_cell(eval: &Eval<Qa>) -> scaffold::_cargo_scaffold_support::eval::CellResult {
    let cell = eval.cells().next().unwrap();
    eval.run_cell(&cell, &CellEnv::default()).await.0
}

/// The default policy counts an errored run as zero: it fails, and no
/// scorer rewards it (the cost of a call that failed at once is $0).
#[tokio::test]
async fn an_errored_cell_counts_as_zero_by_default() {
    let result = only_cell(&flaky_eval(1, Default::default())).await;
    assert!(!result.passed && result.error.is_some());
    assert!(!result.excluded && result.retries == 0);
    for score in &result.scores {
        assert_eq!((score.value, score.pass), (0.0, false), "{score:?}");
    }
}

/// `retry(n)` runs an errored cell again, up to n more times; the last run
/// is graded and the record says how many retries it took.
#[tokio::test]
async fn an_errored_cell_is_retried_up_to_n_times() {
    use scaffold::eval::OnError;
    let recovered = only_cell(&flaky_eval(2, OnError::Retry(2))).await;
    assert!(recovered.passed, "{:?}", recovered.failures());
    assert_eq!((recovered.retries, recovered.error.as_deref()), (2, None));
    let record = scaffold::_cargo_scaffold_support::eval::CellRecord::from(&recovered);
    assert_eq!(record.retries, 2);

    let exhausted = only_cell(&flaky_eval(2, OnError::Retry(1))).await;
    assert!(!exhausted.passed);
    assert_eq!(exhausted.retries, 1);
    let error = exhausted.error.unwrap_or_default();
    assert!(error.contains("call 1"), "{error}");
}

/// `exclude` leaves an errored cell out of every statistic and of the
/// gate, and lists it with its error.
#[tokio::test]
async fn an_errored_cell_can_be_excluded_from_the_statistics() {
    use scaffold::_cargo_scaffold_support::eval::{CellRecord, EvalResults, RunConfig};
    use scaffold::eval::OnError;
    let excluded = only_cell(&flaky_eval(1, OnError::Exclude)).await;
    assert!(excluded.excluded && !excluded.passed);
    let ok = only_cell(&flaky_eval(0, OnError::Exclude)).await;
    assert!(ok.passed && !ok.excluded);
    let mut cells = vec![CellRecord::from(&ok), CellRecord::from(&excluded)];
    cells[1].case = "other".into();
    let config = RunConfig {
        trials: 1,
        inputs: 2,
        variants: vec!["flaky".into()],
        scorers: vec!["cost".into(), "always-one".into()],
        min_pass_rate: 1.0,
    };
    let results = EvalResults::new("qa", "2026-11-26T00:00:00Z", config, cells);
    let summary = &results.summary["flaky"];
    assert_eq!((summary.cells, summary.passed), (1, 1));
    assert_eq!(summary.scores["always-one"].count, 1);
    assert!(results.gate_passed());
    assert_eq!(results.gate.as_ref().map(|g| g.cells), Some(1));
    assert_eq!(results.trial_stats().len(), 1);
    let line = results.excluded_line().unwrap();
    assert!(
        line.contains("flaky::other") && line.contains("HTTP 500"),
        "{line}"
    );
    let document: serde_json::Value = serde_json::from_str(&results.to_json()).unwrap();
    scaffold::_cargo_scaffold_support::report::json::validate(&document).unwrap();
    let back = EvalResults::from_json(&results.to_json()).unwrap();
    assert!(back.results[1].excluded);
    assert_eq!(back.summary["flaky"].cells, 1);

    // Nor does it count against a baseline, or fail JUnit.
    assert_eq!((results.pass_rate(), results.passed_count()), (1.0, 1));
    let mut baseline = results.clone();
    baseline.results[1].excluded = false;
    baseline.results[1].passed = true;
    baseline.results[1].error = None;
    let strict = scaffold::_cargo_scaffold_support::eval::CompareOptions {
        block_on_metric_regressions: true,
        ..Default::default()
    };
    let cmp = scaffold::_cargo_scaffold_support::eval::compare(&baseline, &results, &strict);
    assert!(!cmp.summary.should_block, "{cmp:?}");
    assert_ne!(
        cmp.summary.verdict,
        scaffold::_cargo_scaffold_support::eval::Verdict::Worse
    );
    let junit = scaffold::_cargo_scaffold_support::report::render(
        scaffold::_cargo_scaffold_support::report::Format::Junit,
        &results,
        None,
    );
    assert!(
        junit.contains("<skipped message=\"excluded: run failed:"),
        "{junit}"
    );
    assert!(
        junit.contains("errors=\"0\"") && junit.contains("skipped=\"1\""),
        "{junit}"
    );
}

/// A confidence that is no probability stops the suite at set-up, saying
/// what to write; it is never clamped into another one silently.
#[test]
fn a_confidence_that_is_no_probability_is_a_set_up_error() {
    let with = |confidence: f64| scaffold::__private::erase(eval().confidence(confidence)).check();
    assert_eq!(with(0.9), Ok(()));
    assert_eq!(
        with(95.0),
        Err("confidence 95 is not a probability between 0 and 1 (write 0.95 for 95%)".into())
    );
    for bad in [f64::NAN, 0.0, 1.0, -0.5] {
        let e = with(bad).unwrap_err();
        assert!(
            e.starts_with("confidence ") && e.contains("between 0 and 1"),
            "{e}"
        );
    }
}

/// A primary scorer the eval does not have stops the suite at set-up,
/// naming it and the scorers there are.
#[test]
fn a_primary_scorer_the_eval_has_not_is_a_set_up_error() {
    let with = |name: &str| scaffold::__private::erase(eval().primary_scorer(name)).check();
    assert_eq!(with("output-valid"), Ok(()));
    assert_eq!(
        with("findings"),
        Err("primary scorer `findings` is not one of the eval's scorers (`output-valid`)".into())
    );
}

/// `Eval::pricing` prices a model the built-in table lacks (a proxy alias):
/// without it the cell's calls are unpriced, with it they cost.
#[tokio::test]
async fn an_eval_prices_a_model_the_table_lacks() {
    use scaffold::provider::{ModelPrice, Pricing};
    let alias = || {
        let agent = Agent::<Qa>::new("answerer")
            .provider(ScriptedProvider::responder("my-proxy-gpt", |_| {
                ScriptedReply::text("Paris").with_usage(1_000_000, 0)
            }))
            .prompt(|s| s.question.clone())
            .update(|t, s| s.answer = t);
        Workflow::new("qa", Qa::default()).phase("answer", Phase::run(agent))
    };
    let dataset = load_str(DATASET, Format::Yaml, "qa.yaml").unwrap();
    let plain = Eval::new()
        .name("qa")
        .variant("alias", alias())
        .dataset(dataset.clone());
    let priced = Eval::new()
        .name("qa")
        .variant("alias", alias())
        .dataset(dataset)
        .pricing(Pricing::builtin().with_model("my-proxy-gpt", ModelPrice::per_mtok(2.5, 10.0)));
    let env = CellEnv::default();
    let cell = plain.cells().next().unwrap();
    let (result, _) = plain.run_cell(&cell, &env).await;
    assert_eq!(
        (result.metrics.unpriced_calls, result.metrics.cost_usd),
        (1, 0.0)
    );
    let cell = priced.cells().next().unwrap();
    let (result, _) = priced.run_cell(&cell, &env).await;
    assert_eq!(
        (result.metrics.unpriced_calls, result.metrics.cost_usd),
        (0, 2.5)
    );
}

/// A run retried after an error was billed all the same: every run's
/// tokens, cost and calls count in the cell's metrics (and so in the
/// budget), its latency is the last run's.
#[tokio::test]
async fn a_retried_cell_counts_what_every_run_spent() {
    use scaffold::eval::OnError;

    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    struct Capital {
        city: String,
    }

    // Two answers that are not the JSON asked for, then one that is: each
    // a billed call of 100 + 10 tokens.
    let provider = ScriptedProvider::new("gpt-4o")
        .reply(ScriptedReply::text("Paris, I think").with_usage(100, 10))
        .reply(ScriptedReply::text("It is Paris").with_usage(100, 10))
        .reply(ScriptedReply::text("{\"city\": \"Paris\"}").with_usage(100, 10));
    let agent = Agent::<Qa>::new("answerer")
        .provider(provider)
        .prompt(|s| s.question.clone())
        .output(|c: Capital, s: &mut Qa| s.answer = c.city);
    let (workflow, dataset) = capital_qa(agent);
    let eval = Eval::new()
        .name("qa")
        .variant("structured", workflow)
        .dataset(dataset)
        .on_error(OnError::Retry(2));
    let result = only_cell(&eval).await;
    assert!(result.passed, "{:?}", result.failures());
    assert_eq!(result.retries, 2);
    assert_eq!(result.metrics.provider_calls, 3, "{:?}", result.metrics);
    assert_eq!(
        (result.metrics.input_tokens, result.metrics.output_tokens),
        (300, 30)
    );
    let one_call = result.metrics.cost_usd / 3.0;
    assert!(one_call > 0.0, "{:?}", result.metrics);
}
