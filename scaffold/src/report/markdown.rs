//! Markdown, written to read well as a CI step summary
//! (`$GITHUB_STEP_SUMMARY`): a headline with the gate's verdict, the
//! per-variant table (with the pass rate's confidence interval), the
//! recommendation and significance, the flaky and quarantined cells, the
//! borderline judgements, the failed cells folded in a `<details>`, and the
//! comparison with a baseline.

use std::fmt::Write as _;

use super::escape::{md_cell, md_code, md_code_cell, md_text, url_path};
use super::fmt::{
    ci_heading, cost_per_case, detectable_cell, duration, figure_notes, gate_rule, interval,
    latency_avg, markers, num, pass_k, pct, points, scorer_heading, sign_flip_cell, t_test_cell,
    usd, wilcoxon_cell,
};
use crate::eval::compare::{Regression, Severity};
use crate::eval::{CaseTrials, Comparison, EvalResults, VariantSummary};

/// Failed cells listed before "and N more".
const MAX_FAILURES: usize = 20;
/// Regressions and improvements listed before "and N more".
const MAX_CHANGES: usize = 20;

/// Render `results` (and the comparison with a baseline, if any).
pub fn render(results: &EvalResults, baseline: Option<&Comparison>) -> String {
    render_page(results, baseline, None)
}

/// [`render`], with each failed cell linked to its transcript in the HTML
/// report at `html` (a path or URL, `code-review.html` beside the Markdown
/// file): `[`cell`](code-review.html#cell-…)`.
pub fn render_linked(results: &EvalResults, baseline: Option<&Comparison>, html: &str) -> String {
    render_page(results, baseline, Some(html))
}

fn render_page(results: &EvalResults, baseline: Option<&Comparison>, html: Option<&str>) -> String {
    let mut out = String::new();
    let passed = results.passed_count();
    let total = results.counted().count();
    let verdict = results.gate_verdict();
    // A run that is not finished is not passed, whatever its cells say.
    let gate = verdict.passed;
    let _ = writeln!(
        out,
        "## {} Eval {}: {passed}/{total} cells passed ({})\n",
        if gate { "✅" } else { "❌" },
        md_code(&results.eval),
        pct(results.pass_rate())
    );
    let c = &results.config;
    let _ = writeln!(
        out,
        "{} input{} × {} variant{} × {} trial{} · gate: {} ({}) · {}\n",
        c.inputs,
        plural(c.inputs),
        c.variants.len(),
        plural(c.variants.len()),
        c.trials,
        plural(c.trials as usize),
        gate_rule(results),
        if gate { "passed" } else { "**failed**" },
        md_cell(&results.timestamp)
    );
    // Computed once for the notes and the flaky section.
    let notable = results.notable_trials();
    for blocked in &verdict.blocked_by {
        let _ = writeln!(out, "> **error: {}**\n", md_text(blocked));
    }
    for note in verdict
        .notes(&results.eval, &notable)
        .into_iter()
        .chain(results.cost_warning())
    {
        let _ = writeln!(out, "> **{}**\n", md_text(&note));
    }
    summary_table(&mut out, results);
    highlights(&mut out, results);
    flaky(&mut out, results, &notable);
    borderline(&mut out, results);
    failures(&mut out, results, html);
    if let Some(cmp) = baseline {
        comparison(&mut out, cmp);
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn summary_table(out: &mut String, results: &EvalResults) {
    let scorers = results.scorer_columns();
    let _ = write!(
        out,
        "| Variant | Pass | Pass {} | Latency avg | p50 | p95 | p99 | Cost / case | Cost total | Tokens / case |",
        ci_heading(results.gate_options.confidence)
    );
    for s in &scorers {
        let _ = write!(out, " {} |", md_cell(&scorer_heading(s)));
    }
    out.push_str("\n|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for _ in &scorers {
        out.push_str("--:|");
    }
    out.push('\n');
    for s in results.summaries() {
        row(out, s, &scorers);
    }
    out.push('\n');
    let entry = |v: &str, why: &str| format!("{} ({})", md_code(v), md_text(why));
    for (heading, entries) in figure_notes(results.summaries(), entry) {
        let _ = writeln!(out, "{heading}: {}.\n", entries.join(", "));
    }
}

fn row(out: &mut String, s: &VariantSummary, scorers: &[String]) {
    // An unknown latency or cost is `unknown` once and `–` beside it.
    let known = |on: bool, v: f64, f: fn(f64) -> String| if on { f(v) } else { "–".into() };
    let latency = s.latency_known();
    let _ = write!(
        out,
        "| {} | {}/{} ({}) | {} | {} | {} | {} | {} | {} | {} | {} |",
        md_cell(&s.variant),
        s.passed,
        s.cells,
        pct(s.pass_rate),
        s.pass_rate_interval
            .map_or_else(|| "–".to_string(), |i| interval(&i)),
        latency_avg(s),
        known(latency, s.latency.p50, duration),
        known(latency, s.latency.p95, duration),
        known(latency, s.latency.p99, duration),
        cost_per_case(s),
        known(s.cost_known(), s.cost.total, usd),
        num(s.tokens.per_case.round()),
    );
    for name in scorers {
        match s.scores.get(name) {
            Some(st) => {
                let _ = write!(
                    out,
                    " {:.2} ± {:.2} ({}) |",
                    st.mean,
                    st.stddev,
                    pct(st.pass_rate)
                );
            }
            None => out.push_str(" – |"),
        }
    }
    out.push('\n');
}

fn highlights(out: &mut String, results: &EvalResults) {
    let Some(cmp) = &results.comparison else {
        return;
    };
    let first = |v: &[String]| v.first().map(|s| md_code(s)).unwrap_or_default();
    let summary = |name: &str| results.summary.get(name);
    let mut line = Vec::new();
    if let Some(s) = cmp.by_cost.first().and_then(|n| summary(n)) {
        line.push(format!(
            "**Cheapest:** {} ({} / case)",
            first(&cmp.by_cost),
            usd(s.cost.per_case)
        ));
    }
    if let Some(s) = cmp.by_latency.first().and_then(|n| summary(n)) {
        line.push(format!(
            "**Fastest:** {} ({} avg)",
            first(&cmp.by_latency),
            duration(s.latency.mean)
        ));
    }
    let frontier: Vec<String> = cmp.pareto_frontier.iter().map(|v| md_code(v)).collect();
    line.push(format!("**Pareto frontier:** {}", frontier.join(", ")));
    let _ = writeln!(out, "{}\n", line.join(" · "));
    if let Some(r) = &cmp.recommendation {
        let _ = writeln!(
            out,
            "**Recommendation:** {} (confidence: {}): {}.",
            md_code(&r.variant),
            r.confidence.as_str(),
            md_text(&r.reason)
        );
        for t in &r.tradeoffs {
            let _ = writeln!(out, "- Trade-off: {}", md_text(t));
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "**Significance:** {} (α = {}, quality = {}).\n",
        cmp.verdict_message(),
        cmp.alpha,
        if cmp.quality == "pass" {
            "pass/fail".to_string()
        } else {
            md_code(&cmp.quality)
        }
    );
    if !cmp.significance.is_empty() {
        out.push_str("| Comparison | Cases | Mean Δ | Sign-flip (decides) | Paired t-test | Wilcoxon signed-rank | Significant | Detectable (80% power) |\n");
        out.push_str("|:--|--:|--:|:--|:--|:--|:-:|:--|\n");
        for t in &cmp.significance {
            let tt = t_test_cell(t);
            let w = wilcoxon_cell(t);
            let sf = sign_flip_cell(t);
            let _ = writeln!(
                out,
                "| {} vs {} | {} | {:+.3} | {sf} | {tt} | {w} | {} | {} |",
                md_code_cell(&t.variant),
                md_code_cell(&t.other),
                t.pairs,
                t.mean_difference,
                if t.significant { "yes" } else { "no" },
                detectable_cell(t)
            );
        }
        out.push('\n');
    }
}

/// The flaky and quarantined cells: trials, interval, pass@k and pass^k.
fn flaky(out: &mut String, results: &EvalResults, notable: &[CaseTrials]) {
    if notable.is_empty() {
        return;
    }
    let flaky = notable.iter().filter(|t| t.flaky).count();
    let cases = results.trial_stats().len();
    let _ = writeln!(
        out,
        "### Flaky and quarantined cells\n\nFlaky (trials disagree): {flaky} of {cases} cell{}.\n",
        plural(cases),
    );
    let _ = writeln!(
        out,
        "| Cell | Status | Passed | Pass rate ({}) | pass@k, pass^k |\n|:--|:--|--:|--:|:--|",
        ci_heading(results.gate_options.confidence)
    );
    for t in notable.iter().take(MAX_FAILURES) {
        let _ = writeln!(
            out,
            "| {} | **{}** | {}/{} | {} ({}) | {} |",
            md_code_cell(&t.label()),
            markers(t),
            t.passes,
            t.trials,
            pct(t.pass_rate),
            interval(&t.interval),
            pass_k(t)
        );
    }
    if notable.len() > MAX_FAILURES {
        let _ = writeln!(
            out,
            "| … | | | | and {} more |",
            notable.len() - MAX_FAILURES
        );
    }
    out.push('\n');
}

/// Judgements within the borderline margin of their threshold.
fn borderline(out: &mut String, results: &EvalResults) {
    let list = results.borderline();
    if list.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "### Borderline judgements ({})\n\n| Cell | Judgement |\n|:--|:--|",
        list.len()
    );
    for (cell, what) in list.iter().take(MAX_FAILURES) {
        let _ = writeln!(out, "| {} | {} |", md_code_cell(cell), md_cell(what));
    }
    if list.len() > MAX_FAILURES {
        let _ = writeln!(out, "| … | and {} more |", list.len() - MAX_FAILURES);
    }
    out.push('\n');
}

fn failures(out: &mut String, results: &EvalResults, html: Option<&str>) {
    let failed: Vec<_> = results.results.iter().filter(|c| !c.passed).collect();
    if failed.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<details><summary>{} failed cell{}</summary>\n",
        failed.len(),
        plural(failed.len())
    );
    out.push_str("| Cell | Why |\n|:--|:--|\n");
    for c in failed.iter().take(MAX_FAILURES) {
        let label = md_code_cell(&c.label(results.config.trials));
        let cell = match html {
            Some(page) => format!(
                "[{label}]({}#{})",
                url_path(page),
                super::html::cell_anchor(&results.eval, &c.variant, &c.case, c.trial)
            ),
            None => label,
        };
        let mark = match () {
            _ if c.quarantined => " (QUARANTINED)",
            _ if results.allowed_failure(c) => " (allowed by the gate)",
            _ => "",
        };
        let _ = writeln!(
            out,
            "| {cell}{mark} | {} |",
            md_cell(&super::why::why(c).join("; "))
        );
    }
    if failed.len() > MAX_FAILURES {
        let _ = writeln!(out, "| … | and {} more |", failed.len() - MAX_FAILURES);
    }
    out.push_str("\n</details>\n\n");
}

/// The comparison with a baseline, as a section of its own.
pub fn render_comparison(cmp: &Comparison) -> String {
    let mut out = String::new();
    comparison(&mut out, cmp);
    out
}

fn comparison(out: &mut String, cmp: &Comparison) {
    let s = &cmp.summary;
    let _ = writeln!(
        out,
        "### Against the baseline of {}\n",
        md_cell(&cmp.baseline.timestamp)
    );
    let _ = write!(out, "**Verdict: {}**", s.verdict.as_str());
    match (&s.should_block, &s.block_reason) {
        (true, Some(reason)) => {
            let _ = writeln!(out, " · ⛔ blocks: {}\n", md_text(reason));
        }
        _ => out.push_str(" · does not block\n\n"),
    }
    out.push_str("| | Baseline | Candidate | Change |\n|:--|--:|--:|--:|\n");
    let (b, c) = (&cmp.baseline, &cmp.candidate);
    let _ = writeln!(
        out,
        "| Pass rate | {} | {} | {} |",
        pct(b.pass_rate),
        pct(c.pass_rate),
        points(s.pass_rate_delta)
    );
    let (latency, cost) = super::fmt::baseline_figures(cmp);
    for (what, [base, cand, change]) in [("Latency / case", latency), ("Cost / case", cost)] {
        let _ = writeln!(out, "| {what} | {base} | {cand} | {change} |");
    }
    let _ = writeln!(out, "| Cells | {} | {} | |\n", b.cells, c.cells);
    if !cmp.regressions.is_empty() {
        let _ = writeln!(out, "#### Regressions ({})\n", cmp.regressions.len());
        out.push_str("| Cell | Type | Severity | What |\n|:--|:--|:--|:--|\n");
        for r in cmp.regressions.iter().take(MAX_CHANGES) {
            regression_row(out, r);
        }
        if cmp.regressions.len() > MAX_CHANGES {
            let _ = writeln!(
                out,
                "| … | | | and {} more |",
                cmp.regressions.len() - MAX_CHANGES
            );
        }
        out.push('\n');
    }
    if !cmp.improvements.is_empty() {
        let _ = writeln!(out, "#### Improvements ({})\n", cmp.improvements.len());
        out.push_str("| Cell | Type | What |\n|:--|:--|:--|\n");
        for i in cmp.improvements.iter().take(MAX_CHANGES) {
            let kind = match i.metric.as_deref() {
                Some(m) => m.to_string(),
                None => "fail → pass".into(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                md_code_cell(&i.case_id),
                md_cell(&kind),
                md_cell(&i.description)
            );
        }
        if cmp.improvements.len() > MAX_CHANGES {
            let _ = writeln!(
                out,
                "| … | | and {} more |",
                cmp.improvements.len() - MAX_CHANGES
            );
        }
        out.push('\n');
    }
    let list = |v: &[String]| v.iter().map(|x| md_code(x)).collect::<Vec<_>>().join(", ");
    let mut tail = vec![format!("Unchanged: {}", cmp.unchanged.len())];
    if !cmp.new_cases.is_empty() {
        tail.push(format!("New: {}", list(&cmp.new_cases)));
    }
    if !cmp.removed_cases.is_empty() {
        tail.push(format!("Removed: {}", list(&cmp.removed_cases)));
    }
    let _ = writeln!(out, "{}\n", tail.join(" · "));
}

fn regression_row(out: &mut String, r: &Regression) {
    let kind = match r.metric.as_deref() {
        Some(m) => m.to_string(),
        None => "pass → fail".into(),
    };
    let severity = match r.severity {
        Severity::Critical => "**critical**",
        Severity::Warning => "warning",
    };
    let _ = writeln!(
        out,
        "| {} | {} | {severity} | {} |",
        md_code_cell(&r.case_id),
        md_cell(&kind),
        md_cell(&r.description)
    );
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn render_linked_links_a_failed_cell_to_its_anchor() {
        use crate::eval::{CellRecord, EvalResults};
        let c = CellRecord::new("gpt-4o", "sql-injection");
        let results = EvalResults::for_tests("qa", 1, vec![c]);
        let md = super::render_linked(&results, None, "qa.html");
        assert!(
            md.contains("| [`gpt-4o::sql-injection`](qa.html#cell-qa-gpt-4o-sql-injection-t0) |")
        );
    }

    #[test]
    fn a_failed_run_heads_the_markdown_and_its_error_escapes_pipes() {
        use crate::eval::{CellRecord, EvalResults};
        let mut c = CellRecord::new("gpt-4o", "sql-injection");
        c.error = Some("timeout | retry".into());
        let md = crate::report::markdown::render(&EvalResults::for_tests("qa", 1, vec![c]), None);
        assert!(md.starts_with("## ❌ Eval `qa`: 0/1 cells passed (0%)"));
        assert!(md.contains("| `gpt-4o::sql-injection` | run failed: timeout \\| retry |"));
    }

    /// A variant none of whose cells could be played back has unknown
    /// figures, said with the reason, is neither cheapest nor fastest, and
    /// its failed cells say why once: the missing recording (issue 36).
    #[test]
    fn a_variant_that_could_not_be_played_back_has_unknown_figures() {
        let results = crate::report::fixtures::one_variant_unplayable();
        let md = crate::report::markdown::render(&results, None);
        let row = md
            .lines()
            .find(|l| l.starts_with("| unplayable |"))
            .unwrap();
        assert!(
            row.contains("| unknown | – | – | – | unknown | – |"),
            "{row}"
        );
        assert!(
            md.contains("**Cheapest:** `played` ($0.02 / case) · **Fastest:** `played` (1.5s avg)"),
            "{md}"
        );
        assert!(
            md.contains(
                "Latency and cost unknown: `unplayable` (3 of 3 cells could not be played back)."
            ),
            "{md}"
        );
        let failed = md
            .lines()
            .find(|l| l.starts_with("| `unplayable::capital` |"))
            .unwrap();
        assert!(
            failed.contains("run failed: agent `answerer`: playback"),
            "{failed}"
        );
        assert!(!failed.contains("no output"), "{failed}");
    }

    #[test]
    fn a_regression_makes_the_comparison_verdict_worse_and_blocking() {
        use crate::eval::{CellRecord, CompareOptions, EvalResults, compare};
        let run = |pass: bool| {
            let mut c = CellRecord::new("v", "case");
            c.passed = pass;
            EvalResults::for_tests("qa", 1, vec![c])
        };
        let md = crate::report::markdown::render_comparison(&compare(
            &run(true),
            &run(false),
            &CompareOptions::default(),
        ));
        assert!(md.contains("**Verdict: worse** · ⛔ blocks"));
    }
}
