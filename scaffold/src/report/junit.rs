//! JUnit XML: one `<testsuite>` per eval, one `<testcase>` per cell, plus
//! one for the gate and, against a baseline, one for baseline blocking, so
//! that the document fails exactly when the run does.
//!
//! The `gate` testcase (classname the eval) fails with the gate's verdict
//! as its message when the gate fails (on the lower bound too) or the
//! results are of a run that is not finished; the `baseline` testcase fails
//! with the reason it blocks. A cell whose run failed has an `<error>`; a
//! cell that ran but failed assertions or scorers has a `<failure>` whose
//! `message` is the first failure and whose text lists them all; a
//! quarantined cell that failed is `<skipped message="quarantined: …">`
//! (its test is ignored, and the gate leaves it out), and so is a failure
//! its eval's gate allows (`min_pass_rate` below 1, not strict, and the
//! gate passed:
//! `<skipped message="failed, allowed by the gate (min_pass_rate 75%): …">`,
//! as pytest writes an expected failure; when the gate fails, its failed
//! cells are failures). A cell that could not be played back or whose snapshot changed
//! is never skipped: it fails the run. `time` is the cell's
//! latency in seconds; `<system-out>` holds the session id, the output (cut
//! at 4000 characters) and, for flaky or quarantined cells, a `FLAKY` /
//! `QUARANTINED` line. The suite's properties include the gate's statistic,
//! its interval, and the flaky and quarantined cells.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use super::escape::xml;
use super::stream::{self, Details};
use crate::eval::compare::Severity;
use crate::eval::results::{CellRecord, REPORTED_OUTPUT_CHARS};
use crate::eval::{CaseTrials, Comparison, EvalResults, Gate};

fn seconds(ms: u64) -> String {
    format!("{:.3}", ms as f64 / 1000.0)
}

/// Render `results` as a JUnit XML document.
pub fn render(results: &EvalResults, comparison: Option<&Comparison>) -> String {
    let mut out = Vec::new();
    // Writing into memory with the cells as they are cannot fail.
    let _ = write_streamed(results, comparison, &mut out, stream::as_they_are);
    String::from_utf8(out).unwrap_or_default()
}

/// Write the document [`render`] gives, one `<testcase>` at a time, when the
/// cells of `results` are summaries whose whole records (the output) come
/// from `details` (see [`json::write_streamed`](super::json::write_streamed)).
pub fn write_streamed<W: Write>(
    results: &EvalResults,
    comparison: Option<&Comparison>,
    mut out: W,
    mut details: impl Details,
) -> io::Result<()> {
    let cells = &results.results;
    let gate = results.gate_verdict();
    let mut verdicts = String::new();
    let gate_failed = gate_case(&mut verdicts, results, &gate);
    let blocked = comparison.is_some_and(|cmp| baseline_case(&mut verdicts, results, cmp));
    let tests = cells.len() + 1 + usize::from(comparison.is_some());
    // Quarantined, excluded and allowed cells are ignored by libtest: skipped here.
    let skipped_cell = |c: &&CellRecord| skipped_as(results, c).is_some();
    let counted = || cells.iter().filter(|c| !c.passed && !skipped_cell(c));
    let errors = counted().filter(|c| c.error.is_some()).count();
    let failures = counted().filter(|c| c.error.is_none()).count()
        + usize::from(gate_failed)
        + usize::from(blocked);
    let skipped = cells.iter().filter(skipped_cell).count();
    let time = seconds(cells.iter().map(|c| c.metrics.latency_ms).sum());
    let name = xml(&results.eval);
    let stamp = xml(&results.timestamp);
    let mut head = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        head,
        "<testsuites name=\"scaffold\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{time}\">",
    );
    let _ = writeln!(
        head,
        "  <testsuite name=\"{name}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{time}\" timestamp=\"{stamp}\">",
    );
    head.push_str("    <properties>\n");
    let c = &results.config;
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
    head.push_str(&verdicts);
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

/// Write the `gate` testcase; returns whether it failed: the gate failed
/// (a run not finished, unplayable cells and changed snapshots included).
fn gate_case(out: &mut String, results: &EvalResults, gate: &Gate) -> bool {
    let mut said = vec![gate.describe()];
    said.extend(gate.notes(&results.eval, &results.notable_trials()));
    let failure = (!gate.passed).then(|| gate.describe());
    verdict_case(out, results, "gate", failure, &said);
    !gate.passed
}

/// Why failed `cell` is `<skipped>` (its test ignored, not failed), if it
/// is: quarantined, excluded, or a failure its eval's gate allows (the
/// `gate` testcase then judges the run).
fn skipped_as(results: &EvalResults, cell: &CellRecord) -> Option<String> {
    if cell.passed || cell.fails_the_run() {
        return None;
    }
    match (cell.quarantined, cell.excluded) {
        (true, _) => Some("quarantined".into()),
        (false, true) => Some("excluded".into()),
        _ if results.allowed_failure(cell) => Some(format!(
            "failed, allowed by the gate (min_pass_rate {})",
            crate::util::fmt::pct(results.config.min_pass_rate)
        )),
        _ => None,
    }
}

/// Write a testcase of the run's own verdict (`gate`, `baseline`), failed
/// with `failure` when it holds one, saying `said`.
fn verdict_case(
    out: &mut String,
    results: &EvalResults,
    name: &str,
    failure: Option<String>,
    said: &[String],
) {
    let said = xml(&said.join("\n"));
    let _ = writeln!(
        out,
        "    <testcase name=\"{name}\" classname=\"{}\" time=\"0.000\">",
        xml(&results.eval)
    );
    if let Some(failure) = failure {
        let _ = writeln!(
            out,
            "      <failure message=\"{}\" type=\"{name}\">{said}</failure>",
            xml(&failure)
        );
    }
    let _ = writeln!(out, "      <system-out>{said}</system-out>");
    out.push_str("    </testcase>\n");
}

/// Write the `baseline` testcase; returns whether the comparison blocks.
fn baseline_case(out: &mut String, results: &EvalResults, cmp: &Comparison) -> bool {
    let s = &cmp.summary;
    let mut said = vec![format!(
        "against the baseline of {}: {}; pass rate {:+.1} pts; {} regression(s), {} improvement(s)",
        cmp.baseline.timestamp,
        s.verdict.as_str(),
        s.pass_rate_delta * 100.0,
        cmp.regressions.len(),
        cmp.improvements.len()
    )];
    // Critical regressions come first (see `compare`).
    said.extend(cmp.regressions.iter().map(|r| {
        let severity = match r.severity {
            Severity::Critical => "critical",
            Severity::Warning => "warning",
        };
        format!("[{severity}] {}: {}", r.case_id, r.description)
    }));
    let failure = s.should_block.then(|| {
        format!(
            "blocked: {}",
            s.block_reason.as_deref().unwrap_or("regressions")
        )
    });
    verdict_case(out, results, "baseline", failure, &said);
    s.should_block
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
    if let Some(why) = skipped_as(results, cell) {
        let first = failures.first().cloned().unwrap_or_else(|| "failed".into());
        let _ = writeln!(
            out,
            "      <skipped message=\"{why}: {}\">{}</skipped>",
            xml(&first),
            xml(&failures.join("\n"))
        );
    } else if !cell.passed {
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
    if let Some(text) = cell.output_text() {
        let cut: String = text.chars().take(REPORTED_OUTPUT_CHARS).collect();
        let _ = write!(system_out, "\noutput:\n{cut}");
        if cut.len() < text.len() {
            system_out.push('…');
        }
    }
    let _ = writeln!(out, "      <system-out>{}</system-out>", xml(&system_out));
    out.push_str("    </testcase>\n");
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn junit_counts_a_failed_cell_as_a_failure_and_a_run_error_as_an_error() {
        use crate::eval::{CellRecord, EvalResults};
        let mut ok = CellRecord::new("gpt-4o", "clean");
        ok.passed = true;
        let mut bad = CellRecord::new("gpt-4o", "xss");
        bad.error = Some("provider <timeout>".into());
        let xml =
            crate::report::junit::render(&EvalResults::for_tests("qa", 1, vec![ok, bad]), None);
        assert!(
            xml.contains(r#"<testsuite name="qa" tests="3" failures="1" errors="1" skipped="0""#)
        );
        assert!(xml.contains(r#"<failure message="FAILED: pass rate 50.0%"#));
        assert!(
            xml.contains(r#"<error message="run failed: provider &lt;timeout&gt;" type="run">"#)
        );
    }

    #[test]
    fn streamed_junit_is_the_whole_render_and_summaries_alone_leave_outputs_out() {
        (|| {
            use crate::eval::{CellRecord, EvalResults};
            use crate::report::junit;
            let mut cell = CellRecord::new("a", "c1");
            cell.output = Some(serde_json::json!("the answer"));
            let whole = EvalResults::for_tests("qa", 1, vec![cell.clone()]);
            let summaries = EvalResults::for_tests("qa", 1, vec![cell.clone().into_summary()]);
            let mut out = Vec::new();
            junit::write_streamed(&summaries, None, &mut out, |chunk| {
                Ok(chunk.iter().map(|_| Some(cell.clone())).collect())
            })?;
            assert_eq!(String::from_utf8(out).unwrap(), junit::render(&whole, None));
            assert!(!junit::render(&summaries, None).contains("the answer"));
            Ok::<(), std::io::Error>(())
        })()
        .unwrap();
    }
}
