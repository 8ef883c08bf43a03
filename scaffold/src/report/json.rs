//! The results document as JSON, and its validation against the schema.
//!
//! The shape is [`EvalResults`]; the JSON Schema is
//! [`RESULTS_SCHEMA`] and
//! `scaffold/docs/results-schema.md` explains each field.

use std::io::{self, Write};

use serde_json::Value;

use crate::eval::results::RESULTS_SCHEMA;
use crate::eval::{CellRecord, Comparison, EvalResults};

/// How many whole cell records [`write_streamed`] asks for at a time.
pub const STREAM_CHUNK: usize = 256;

/// The results document, pretty-printed, ending in a newline.
pub fn render(results: &EvalResults) -> String {
    let mut s = results.to_json();
    s.push('\n');
    s
}

/// Write the results document as [`render`] does, cell by cell, when the
/// cells of `results` are summaries ([`CellRecord::into_summary`]) whose
/// whole records are elsewhere (the store): `details` gets up to
/// [`STREAM_CHUNK`] cells at a time and returns their whole records (`None`
/// writes the cell as it is), so memory holds one chunk of whole records,
/// not the run's.
///
/// ```
/// use scaffold::eval::{CellRecord, EvalResults, RunConfig};
/// use scaffold::report::json;
/// let config = RunConfig { trials: 1, inputs: 1, variants: vec!["a".into()], scorers: vec![], min_pass_rate: 1.0 };
/// let mut cell = CellRecord::new("a", "c1");
/// cell.input = serde_json::json!("the question");
/// let full = EvalResults::new("qa", "2026-01-28T12:00:00Z", config.clone(), vec![cell.clone()]);
/// let mut summaries = EvalResults::new("qa", "2026-01-28T12:00:00Z", config, vec![cell.clone().into_summary()]);
/// let mut out = Vec::new();
/// json::write_streamed(&mut summaries, &mut out, |chunk| Ok(chunk.iter().map(|_| Some(cell.clone())).collect()))?;
/// assert_eq!(String::from_utf8(out).unwrap(), json::render(&full));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_streamed<W: Write>(
    results: &mut EvalResults,
    mut out: W,
    mut details: impl FnMut(&[CellRecord]) -> Result<Vec<Option<CellRecord>>, String>,
) -> io::Result<()> {
    // The document without its cells, to write around them.
    let cells = std::mem::take(&mut results.results);
    let skeleton = results.to_json();
    results.results = cells;
    if results.results.is_empty() {
        out.write_all(skeleton.as_bytes())?;
        out.write_all(b"\n")?;
        return out.flush();
    }
    const EMPTY: &str = "\n  \"results\": []";
    // Right before the `]` of the empty cell array.
    let split = skeleton
        .find(EMPTY)
        .map(|at| at + EMPTY.len() - 1)
        .ok_or_else(|| io::Error::other("the results document has no top-level `results` array"))?;
    out.write_all(&skeleton.as_bytes()[..split])?;
    let mut first = true;
    let mut text = String::new();
    for chunk in results.results.chunks(STREAM_CHUNK) {
        let whole = details(chunk).map_err(io::Error::other)?;
        if whole.len() != chunk.len() {
            return Err(io::Error::other(format!(
                "asked for {} cell records, got {}",
                chunk.len(),
                whole.len()
            )));
        }
        for (summary, whole) in chunk.iter().zip(whole) {
            let cell = match whole {
                Some(whole) => summary.clone().with_details(whole),
                None => summary.clone(),
            };
            text.clear();
            text.push_str(if first { "\n" } else { ",\n" });
            first = false;
            let pretty = serde_json::to_string_pretty(&cell).map_err(io::Error::other)?;
            // Nested two levels deep: every line four spaces further in.
            for (i, line) in pretty.lines().enumerate() {
                if i > 0 {
                    text.push('\n');
                }
                text.push_str("    ");
                text.push_str(line);
            }
            out.write_all(text.as_bytes())?;
        }
    }
    out.write_all(b"\n  ")?;
    out.write_all(&skeleton.as_bytes()[split..])?;
    out.write_all(b"\n")?;
    out.flush()
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
