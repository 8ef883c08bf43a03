//! What a dataset's assertions say of a run, for the tests of the example
//! suite's workflows on scripted models.

use std::collections::BTreeSet;

use scaffold::assert::{EvalContext, evaluate_all_sync};
use scaffold::prelude::*;
use serde::Serialize;
use serde_json::Value;

/// Case `id` of the example suite's dataset `file`.
fn case(file: &str, id: &str) -> Case {
    let path = format!("{}/evals/{file}", env!("CARGO_MANIFEST_DIR"));
    let ds = dataset::load(&path).expect("the dataset loads");
    ds.cases.into_iter().find(|c| c.id == id).expect("the case")
}

/// The input of case `id` of dataset `file`.
pub(crate) fn input_of(file: &str, id: &str) -> Value {
    case(file, id).input()
}

/// The types of the assertions of case `id` of dataset `file` that fail on `result`.
pub(crate) fn failing<S: Serialize>(
    file: &str,
    id: &str,
    result: &RunResult<S>,
) -> BTreeSet<String> {
    let case = case(file, id);
    let output = result.output.clone().unwrap_or(Value::Null);
    let ctx = EvalContext::new(&result.signals).output(output);
    evaluate_all_sync(case.assertions(), &ctx)
        .into_iter()
        .filter(|r| !r.passed)
        .map(|r| {
            let kind = serde_json::to_value(&r.assertion).expect("serializes");
            kind["type"].as_str().unwrap_or_default().to_string()
        })
        .collect()
}
