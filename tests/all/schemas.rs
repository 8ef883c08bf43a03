//! The example suite's structured output in the form each API accepts, and
//! answers checked against the full schema.

use scaffold::_cargo_scaffold_support::provider::schema::{
    AnswerCheck, anthropic_subset, openai_strict,
};
use scaffold_examples::code_review::ReviewOutput;
use schemars::JsonSchema;
use serde_json::{Value, json};

fn schema_of<T: JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    schema.as_object_mut().map(|m| m.remove("$schema"));
    schema
}

/// The object schemas of the review: the answer and its `Finding`.
fn objects(schema: &Value) -> [&Value; 2] {
    [schema, &schema["$defs"]["Finding"]]
}

#[test]
fn the_review_is_strict_for_openai() {
    let original = schema_of::<ReviewOutput>();
    let strict = openai_strict(&original).expect("ReviewOutput has a strict form");
    for object in objects(&strict) {
        assert_eq!(object["additionalProperties"], json!(false), "{object:#}");
    }
    assert_eq!(strict["required"], json!(["findings", "summary"]));
    assert_eq!(
        strict["$defs"]["Finding"]["required"],
        json!(["issue", "severity", "explanation"])
    );
    // Nothing else changes: the derived schema only lacked `additionalProperties`.
    let mut closed = original.clone();
    for path in ["", "/$defs/Finding"] {
        closed
            .pointer_mut(path)
            .and_then(Value::as_object_mut)
            .unwrap()
            .insert("additionalProperties".into(), json!(false));
    }
    assert_eq!(strict, closed);
}

#[test]
fn the_review_is_in_anthropics_subset() {
    let original = schema_of::<ReviewOutput>();
    let subset = anthropic_subset(&original);
    for object in objects(&subset) {
        assert_eq!(object["additionalProperties"], json!(false), "{object:#}");
    }
    assert_eq!(
        subset["properties"]["findings"],
        json!({"type": "array", "items": {"$ref": "#/$defs/Finding"},
               "description": "Problems found; empty when the code is fine."})
    );
    assert_eq!(
        subset["$defs"]["Finding"]["properties"],
        original["$defs"]["Finding"]["properties"]
    );
    assert_eq!(subset["title"], json!("ReviewOutput"));
}

#[test]
fn review_answers_are_checked_against_the_full_schema() {
    let check = AnswerCheck::new(&schema_of::<ReviewOutput>()).unwrap();
    let answer = json!({"findings": [{"issue": "SQL injection", "severity": "high",
        "explanation": "string concatenation"}], "summary": "one problem"});
    let checked = check.check(answer).unwrap();
    let review: ReviewOutput = serde_json::from_value(checked).unwrap();
    assert_eq!(review.findings[0].severity, "high");

    let missing = json!({"findings": [{"issue": "x", "severity": "low"}], "summary": "s"});
    let err = check.check(missing).unwrap_err().to_string();
    assert!(
        err.starts_with("/findings/0 (required): \"explanation\" is a required property"),
        "{err}"
    );
}
