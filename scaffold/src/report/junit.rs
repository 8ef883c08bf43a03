//! JUnit XML: one `<testsuite>` per eval, one `<testcase>` per cell.
//!
//! A cell whose run failed has an `<error>`; a cell that ran but failed
//! assertions or scorers has a `<failure>` whose `message` is the first
//! failure and whose text lists them all. `time` is the cell's latency in
//! seconds; `<system-out>` holds the session id, the output (cut at 4000
//! characters) and, for flaky or quarantined cells, a `FLAKY` /
//! `QUARANTINED` line (a quarantined cell's failure does not count towards
//! the gate). The suite's properties include the gate's statistic, its
//! interval, and the flaky and quarantined cells.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use super::escape::xml;
use super::stream::{self, Details};
use crate::eval::results::{CellRecord, REPORTED_OUTPUT_CHARS};
use crate::eval::{CaseTrials, EvalResults};

fn seconds(ms: u64) -> String {
    format!("{:.3}", ms as f64 / 1000.0)
}

/// Render `results` as a JUnit XML document.
///
/// ```
/// use scaffold::eval::{CellRecord, EvalResults, RunConfig};
/// let mut ok = CellRecord::new("gpt-4o", "clean");
/// ok.passed = true;
/// let mut bad = CellRecord::new("gpt-4o", "xss");
/// bad.error = Some("provider <timeout>".into());
/// let config = RunConfig { trials: 1, inputs: 2, variants: vec!["gpt-4o".into()], scorers: vec![], min_pass_rate: 1.0 };
/// let xml = scaffold::report::junit::render(&EvalResults::new("qa", "2026-01-28T12:00:00Z", config, vec![ok, bad]));
/// assert!(xml.contains(r#"<testsuite name="qa" tests="2" failures="0" errors="1""#));
/// assert!(xml.contains(r#"<error message="run failed: provider &lt;timeout&gt;" type="run">"#));
/// ```
pub fn render(results: &EvalResults) -> String {
    let mut out = Vec::new();
    // Writing into memory with the cells as they are cannot fail.
    let _ = write_streamed(results, &mut out, stream::as_they_are);
    String::from_utf8(out).unwrap_or_default()
}

/// Write the document [`render`] gives, one `<testcase>` at a time, when the
/// cells of `results` are summaries whose whole records (the output) come
/// from `details` (see [`json::write_streamed`](super::json::write_streamed)).
///
/// ```
/// use scaffold::eval::{CellRecord, EvalResults, RunConfig};
/// use scaffold::report::junit;
/// let config = RunConfig { trials: 1, inputs: 1, variants: vec!["a".into()], scorers: vec![], min_pass_rate: 1.0 };
/// let mut cell = CellRecord::new("a", "c1");
/// cell.output = Some(serde_json::json!("the answer"));
/// let whole = EvalResults::new("qa", "2026-01-28T12:00:00Z", config.clone(), vec![cell.clone()]);
/// let summaries = EvalResults::new("qa", "2026-01-28T12:00:00Z", config, vec![cell.clone().into_summary()]);
/// let mut out = Vec::new();
/// junit::write_streamed(&summaries, &mut out, |chunk| Ok(chunk.iter().map(|_| Some(cell.clone())).collect()))?;
/// assert_eq!(String::from_utf8(out).unwrap(), junit::render(&whole));
/// assert!(!junit::render(&summaries).contains("the answer"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_streamed<W: Write>(
    results: &EvalResults,
    mut out: W,
    mut details: impl Details,
) -> io::Result<()> {
    let cells = &results.results;
    let errors = cells.iter().filter(|c| c.error.is_some()).count();
    let failures = cells
        .iter()
        .filter(|c| !c.passed && c.error.is_none())
        .count();
    let time = seconds(cells.iter().map(|c| c.metrics.latency_ms).sum());
    let name = xml(&results.eval);
    let stamp = xml(&results.timestamp);
    let mut head = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        head,
        "<testsuites name=\"scaffold\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" time=\"{time}\">",
        cells.len()
    );
    let _ = writeln!(
        head,
        "  <testsuite name=\"{name}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{time}\" timestamp=\"{stamp}\">",
        cells.len()
    );
    head.push_str("    <properties>\n");
    let c = &results.config;
    let gate = results.gate_verdict();
    let flaky: Vec<CaseTrials> = results.flaky().collect();
    let props = [
        ("trials", c.trials.to_string()),
        ("inputs", c.inputs.to_string()),
        ("variants", c.variants.join(",")),
        ("scorers", c.scorers.join(",")),
        ("minPassRate", c.min_pass_rate.to_string()),
        ("passRate", results.pass_rate().to_string()),
        (
            "gate",
            if gate.passed { "passed" } else { "failed" }.to_string(),
        ),
        ("gateDetail", gate.describe()),
        ("flakyCells", labels(&flaky)),
        ("quarantinedCells", gate.quarantined.join(",")),
    ];
    for (k, v) in props {
        let _ = writeln!(head, "      <property name=\"{k}\" value=\"{}\"/>", xml(&v));
    }
    head.push_str("    </properties>\n");
    out.write_all(head.as_bytes())?;
    let flaky: HashMap<(&str, &str, &str), &CaseTrials> = flaky
        .iter()
        .map(|t| ((t.variant.as_str(), t.dataset.as_str(), t.case.as_str()), t))
        .collect();
    let mut text = String::new();
    stream::each_whole(cells, &mut details, |cell| {
        let key = (
            cell.variant.as_str(),
            cell.dataset.as_str(),
            cell.case.as_str(),
        );
        text.clear();
        testcase(&mut text, results, cell, flaky.get(&key).copied());
        out.write_all(text.as_bytes())
    })?;
    out.write_all(b"  </testsuite>\n</testsuites>\n")?;
    out.flush()
}

fn labels(cells: &[CaseTrials]) -> String {
    cells
        .iter()
        .map(|t| t.label())
        .collect::<Vec<_>>()
        .join(",")
}

fn testcase(
    out: &mut String,
    results: &EvalResults,
    cell: &CellRecord,
    flaky: Option<&CaseTrials>,
) {
    let _ = writeln!(
        out,
        "    <testcase name=\"{}\" classname=\"{}.{}\" time=\"{}\">",
        xml(&cell.label(results.config.trials)),
        xml(&results.eval),
        xml(&cell.variant),
        seconds(cell.metrics.latency_ms)
    );
    let failures = cell.failures();
    if !cell.passed {
        let first = failures.first().cloned().unwrap_or_else(|| "failed".into());
        let (tag, kind) = if cell.error.is_some() {
            ("error", "run".to_string())
        } else if let Some(a) = cell.assertions.iter().find(|a| !a.passed) {
            ("failure", a.type_name().to_string())
        } else {
            ("failure", "scorer".to_string())
        };
        let _ = writeln!(
            out,
            "      <{tag} message=\"{}\" type=\"{}\">{}</{tag}>",
            xml(&first),
            xml(&kind),
            xml(&failures.join("\n"))
        );
    }
    let mut system_out = format!("session: {}", cell.session_id);
    if let Some(t) = flaky {
        let _ = write!(
            system_out,
            "\nFLAKY: {} passed {}/{} trials",
            t.label(),
            t.passes,
            t.trials
        );
    }
    if cell.quarantined {
        system_out.push_str("\nQUARANTINED: not counted by the gate or baseline blocking");
    }
    if let Some(output) = &cell.output {
        let text = match output {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let cut: String = text.chars().take(REPORTED_OUTPUT_CHARS).collect();
        let _ = write!(system_out, "\noutput:\n{cut}");
        if cut.len() < text.len() {
            system_out.push('…');
        }
    }
    let _ = writeln!(out, "      <system-out>{}</system-out>", xml(&system_out));
    out.push_str("    </testcase>\n");
}
