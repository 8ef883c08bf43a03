//! The results document as JSON, and its validation against the schema.
//!
//! The shape is [`EvalResults`]; the JSON Schema is
//! [`RESULTS_SCHEMA`] and
//! `scaffold/docs/results-schema.md` explains each field.

use serde_json::Value;

use crate::eval::results::RESULTS_SCHEMA;
use crate::eval::{Comparison, EvalResults};

/// The results document, pretty-printed, ending in a newline.
pub fn render(results: &EvalResults) -> String {
    let mut s = results.to_json();
    s.push('\n');
    s
}

/// A baseline comparison, pretty-printed, ending in a newline.
pub fn render_comparison(comparison: &Comparison) -> String {
    let mut s = serde_json::to_string_pretty(comparison).unwrap_or_default();
    s.push('\n');
    s
}

/// Check `document` against the results schema: `Err` lists the first
/// violations as `/path: what is wrong`.
///
/// ```
/// use scaffold::eval::{CellRecord, EvalResults, RunConfig};
/// use scaffold::report::json::validate;
/// let config = RunConfig { trials: 1, inputs: 1, variants: vec!["a".into()], scorers: vec![], min_pass_rate: 1.0 };
/// let results = EvalResults::new("qa", "2026-01-28T12:00:00Z", config, vec![CellRecord::new("a", "c1")]);
/// validate(&serde_json::to_value(&results).unwrap()).unwrap();
/// assert!(validate(&serde_json::json!({"eval": "qa"})).is_err());
/// ```
pub fn validate(document: &Value) -> Result<(), Vec<String>> {
    let schema: Value = serde_json::from_str(RESULTS_SCHEMA)
        .map_err(|e| vec![format!("the bundled results schema is not JSON: {e}")])?;
    let validator = jsonschema::validator_for(&schema)
        .map_err(|e| vec![format!("the bundled results schema is invalid: {e}")])?;
    let errors: Vec<String> = validator
        .iter_errors(document)
        .take(20)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}
