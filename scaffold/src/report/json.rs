//! The results document as JSON, and its validation against the schema.
//!
//! The shape is [`EvalResults`]; the JSON Schema is
//! [`RESULTS_SCHEMA`] and
//! `scaffold/docs/results-schema.md` explains each field.

use std::io::{self, Write};

use serde_json::Value;

pub use super::stream::STREAM_CHUNK;
use super::stream::{Details, Splice, each_whole};
use crate::eval::results::RESULTS_SCHEMA;
use crate::eval::{Comparison, EvalResults};

/// The results document, pretty-printed, ending in a newline.
pub fn render(results: &EvalResults) -> String {
    let mut s = results.to_json();
    s.push('\n');
    s
}

/// Write the results document as [`render`] does, cell by cell, when the
/// cells of `results` are summaries
/// ([`CellRecord::into_summary`](crate::eval::CellRecord::into_summary)) whose
/// whole records are elsewhere (the store): `details` gets up to
/// [`STREAM_CHUNK`] cells at a time and returns their whole records (see
/// `Details`), so memory holds one chunk of whole records, not the run's.
pub fn write_streamed<W: Write>(
    results: &mut EvalResults,
    out: W,
    mut details: impl Details,
) -> io::Result<()> {
    // The document is serialized without its cells, straight to `out`; they
    // are written into its empty `results` array as it passes.
    let cells = std::mem::take(&mut results.results);
    let mut splice = Splice::new(out, "\n  \"results\": [", |out: &mut W| {
        let mut first = true;
        let mut text = String::new();
        each_whole(&cells, &mut details, |cell| {
            text.clear();
            text.push_str(if first { "\n" } else { ",\n" });
            first = false;
            let pretty = serde_json::to_string_pretty(cell).map_err(io::Error::other)?;
            // Nested two levels deep: every line four spaces further in.
            for (i, line) in pretty.lines().enumerate() {
                if i > 0 {
                    text.push('\n');
                }
                text.push_str("    ");
                text.push_str(line);
            }
            out.write_all(text.as_bytes())
        })?;
        if !first {
            out.write_all(b"\n  ")?;
        }
        Ok(())
    });
    let mut written = serde_json::to_writer_pretty(&mut splice, &results.document(&cells))
        .map_err(io::Error::from);
    if written.is_ok() {
        written = splice.write_all(b"\n");
    }
    let finished = written.and_then(|()| splice.finish().map(drop));
    results.results = cells;
    finished
}

/// A baseline comparison, pretty-printed, ending in a newline.
pub fn render_comparison(comparison: &Comparison) -> String {
    let mut s = serde_json::to_string_pretty(comparison).unwrap_or_default();
    s.push('\n');
    s
}

/// Check `document` against the results schema: `Err` lists the first
/// violations as `/path: what is wrong`.
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

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn streamed_json_with_the_cells_filled_in_is_the_whole_render() {
        (|| {
            use crate::eval::{CellRecord, EvalResults};
            use crate::report::json;
            let mut cell = CellRecord::new("a", "c1");
            cell.input = serde_json::json!("the question");
            // Nested values and a line break inside a string, which the
            // cells' indentation must leave as it is.
            let mut other = CellRecord::new("a", "c2");
            other.input = serde_json::json!({"text": "one\ntwo", "list": [1, {"empty": []}]});
            let cells = vec![cell, other];
            let full = EvalResults::for_tests("qa", 1, cells.clone());
            let summaries = cells.iter().map(|c| c.clone().into_summary()).collect();
            let mut summaries = EvalResults::for_tests("qa", 1, summaries);
            let mut out = Vec::new();
            json::write_streamed(&mut summaries, &mut out, |chunk| {
                let whole = |s: &CellRecord| cells.iter().find(|c| c.case == s.case).cloned();
                Ok(chunk.iter().map(whole).collect())
            })?;
            assert_eq!(String::from_utf8(out).unwrap(), json::render(&full));
            Ok::<(), std::io::Error>(())
        })()
        .unwrap();
    }

    #[test]
    fn a_results_document_meets_the_schema_and_a_stub_does_not() {
        use crate::eval::{CellRecord, EvalResults};
        use crate::report::json::validate;
        let results = EvalResults::for_tests("qa", 1, vec![CellRecord::new("a", "c1")]);
        validate(&serde_json::to_value(&results).unwrap()).unwrap();
        assert!(validate(&serde_json::json!({"eval": "qa"})).is_err());
    }
}
