//! A single-file HTML report: inline CSS, SVG and script, nothing
//! fetched. Sections: the verdict with links to the failing, flaky and
//! regressed cells, the variants table with the recommendation, plots (each
//! scorer's and the latency distribution per variant, cost against quality
//! with the Pareto frontier), the significance tests, the flaky and
//! quarantined cells, the borderline judgements, the comparison with a
//! baseline, and every cell, each with a stable anchor
//! ([`cell_anchor`]) and, rendered from a store
//! ([`render_with_transcripts`]), its transcript (see `viewer`).
//!
//! An eval page written beside its run's index page ([`render_index`])
//! links back to it ([`Page::index`]).
//!
//! Elements tests can find: `<svg class="plot score-distribution"
//! id="plot-score-{scorer}">`, `id="plot-latency"`, `<svg
//! id="plot-cost-quality">` with a `<circle class="frontier-mark">` per
//! frontier point and `<path class="frontier">` through two or more, the
//! sections `#variants`, `#plots`, `#significance`, `#flaky`, `#borderline`,
//! `#baseline`, `#cells`, `<nav id="jump">`, `<tr class="cell" id="cell-…">`
//! rows, and `<span class="badge flaky">` / `<span class="badge
//! quarantined">` markers on cells.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::escape::xml;
use super::fmt::{
    baseline_figures, cell_cost, cell_latency, cell_unknown_reason, ci_heading, cost_per_case,
    detectable_cell, duration, figure_notes, gate_rule, interval, latency_avg, num, pass_k, pct,
    points, scorer_heading, sign_flip_cell, t_test_cell, usd, wilcoxon_cell,
};
use super::index::back_link;
pub use super::index::{INDEX_FILE, IndexEntry, render_index};
use super::plot::{self, Series};
use super::stream::{self, Details};
use super::viewer::{self, Picked};
pub use super::viewer::{
    BadTranscriptSelection, CellPage, TRANSCRIPTS_VAR, TranscriptSelection, Transcripts,
    VIEWER_SCRIPT, cell_anchor, session_page, session_record_page,
};
use crate::eval::compare::{Severity, deciding_scorer, quality};
use crate::eval::{CaseTrials, Comparison, EvalResults};
use crate::util::fmt::plural;

pub(crate) const BASE_STYLE: &str = r#"
:root { color-scheme: light; --fg: #111827; --muted: #6b7280; --line: #e5e7eb; --ok: #15803d; --bad: #b91c1c; --warn: #b45309; }
* { box-sizing: border-box; }
body { font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); margin: 0 auto; max-width: 1100px; padding: 24px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 32px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
code { font: 13px ui-monospace, SFMono-Regular, Menlo, monospace; }
.meta { color: var(--muted); margin: 0; }
.verdict { display: inline-block; font-weight: 600; padding: 2px 10px; border-radius: 999px; margin: 8px 0; }
.verdict.pass { background: #dcfce7; color: var(--ok); }
.verdict.fail { background: #fee2e2; color: var(--bad); }
table { border-collapse: collapse; width: 100%; margin: 8px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 6px 8px; text-align: left; vertical-align: top; }
th { background: #f9fafb; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.failed td:first-child { border-left: 3px solid var(--bad); }
tr.passed td:first-child { border-left: 3px solid var(--ok); }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; }
.badge { font-size: 12px; padding: 1px 6px; border-radius: 4px; background: #f3f4f6; }
.badge.flaky { background: #fef3c7; color: var(--warn); font-weight: 600; }
.badge.quarantined { background: #e0e7ff; color: #3730a3; font-weight: 600; }
.notes { border-left: 3px solid var(--warn); padding: 4px 10px; background: #fffbeb; }
.critical { color: var(--bad); font-weight: 600; }
.warning { color: var(--warn); }
figure { margin: 12px 0; }
svg.plot { max-width: 100%; height: auto; font: 12px system-ui, sans-serif; }
svg .plot-title { font-weight: 600; font-size: 13px; }
svg .tick, svg .axis-label { fill: var(--muted); }
ul.failures { margin: 0; padding-left: 18px; }
details summary { cursor: pointer; color: var(--muted); }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
"#;

/// Render `results` (and the comparison with a baseline) as an HTML page.
pub fn render(results: &EvalResults, baseline: Option<&Comparison>) -> String {
    Page::new(results).baseline(baseline).render()
}

/// The page [`render`] gives, with the transcripts of the cells
/// `transcripts` picks read from its store (see [`Transcripts`]).
pub fn render_with_transcripts(
    results: &EvalResults,
    baseline: Option<&Comparison>,
    transcripts: &Transcripts<'_>,
) -> String {
    Page::new(results)
        .baseline(baseline)
        .transcripts(transcripts)
        .render()
}

/// Write the page [`render`] gives, one row of the cells table at a time,
/// when the cells of `results` are summaries whose whole records (every
/// assertion, every score's reason) come from `details` (see
/// [`json::write_streamed`](super::json::write_streamed)).
pub fn write_streamed<W: Write>(
    results: &EvalResults,
    baseline: Option<&Comparison>,
    out: W,
    details: impl Details,
) -> io::Result<()> {
    Page::new(results)
        .baseline(baseline)
        .write_streamed(out, details)
}

/// [`write_streamed`] with transcripts (see [`render_with_transcripts`]).
pub fn write_streamed_with_transcripts<W: Write>(
    results: &EvalResults,
    baseline: Option<&Comparison>,
    out: W,
    details: impl Details,
    transcripts: &Transcripts<'_>,
) -> io::Result<()> {
    Page::new(results)
        .baseline(baseline)
        .transcripts(transcripts)
        .write_streamed(out, details)
}

/// An eval's page and what it shows beside the results: the comparison
/// with a baseline, the cells' transcripts, a link back to its run's index
/// page. [`render`] and the functions beside it are its shorthands.
#[derive(Clone, Copy)]
pub struct Page<'a> {
    results: &'a EvalResults,
    baseline: Option<&'a Comparison>,
    transcripts: Option<&'a Transcripts<'a>>,
    index: Option<&'a str>,
}

impl<'a> Page<'a> {
    /// The page of `results`, nothing beside.
    pub fn new(results: &'a EvalResults) -> Page<'a> {
        Page {
            results,
            baseline: None,
            transcripts: None,
            index: None,
        }
    }

    /// With the comparison against a baseline, when there is one.
    pub fn baseline(mut self, baseline: Option<&'a Comparison>) -> Page<'a> {
        self.baseline = baseline;
        self
    }

    /// With the transcripts of the cells `transcripts` picks.
    pub fn transcripts(mut self, transcripts: &'a Transcripts<'a>) -> Page<'a> {
        self.transcripts = Some(transcripts);
        self
    }

    /// Linked back to its run's index page, the file `file` beside it
    /// (see [`render_index`]).
    pub fn index(mut self, file: &'a str) -> Page<'a> {
        self.index = Some(file);
        self
    }

    /// The page.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        // Writing into memory with the cells as they are cannot fail.
        let _ = write_page(self, &mut out, stream::as_they_are);
        String::from_utf8(out).unwrap_or_default()
    }

    /// Write the page one row of the cells table at a time, the whole
    /// records of summarized cells read from `details` (see
    /// [`write_streamed`]).
    pub fn write_streamed<W: Write>(&self, out: W, details: impl Details) -> io::Result<()> {
        write_page(self, out, details)
    }
}

fn write_page<W: Write>(page: &Page<'_>, mut out: W, mut details: impl Details) -> io::Result<()> {
    let Page {
        results,
        baseline,
        transcripts,
        index,
    } = *page;
    let mut head =
        String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    head.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(
        head,
        "<title>Eval {} · scaffold</title>",
        xml(&results.eval)
    );
    let _ = writeln!(
        head,
        "<style>{BASE_STYLE}{}</style>\n</head>\n<body>",
        viewer::STYLE
    );
    // Computed once for the notes, the flaky section and the cells.
    let notable = results.notable_trials();
    let marks = Marks::new(&notable, baseline);
    if let Some(file) = index {
        head.push_str(&back_link(file));
    }
    header(&mut head, results, &notable);
    jump(&mut head, results, &marks);
    variants(&mut head, results);
    plots(&mut head, results);
    significance(&mut head, results);
    flaky(&mut head, results, &notable);
    borderline(&mut head, results);
    if let Some(cmp) = baseline {
        comparison(&mut head, cmp);
    }
    out.write_all(head.as_bytes())?;
    cells(&mut out, results, &marks, &mut details, transcripts)?;
    let foot = format!(
        "<script>{}</script>\n<footer>Generated by scaffold · results schema v{} · {}</footer>\n</body>\n</html>\n",
        viewer::SCRIPT,
        results.schema_version,
        xml(&results.timestamp)
    );
    out.write_all(foot.as_bytes())?;
    out.flush()
}

/// Which cells are flaky and which regressed.
struct Marks<'r> {
    flaky: std::collections::HashSet<(&'r str, &'r str, &'r str)>,
    regressed: std::collections::HashSet<String>,
}

impl<'r> Marks<'r> {
    fn new(notable: &'r [CaseTrials], baseline: Option<&Comparison>) -> Self {
        Marks {
            flaky: notable
                .iter()
                .filter(|t| t.flaky)
                .map(|t| (t.variant.as_str(), t.dataset.as_str(), t.case.as_str()))
                .collect(),
            regressed: viewer::regressed(baseline),
        }
    }

    fn is_flaky(&self, c: &crate::eval::CellRecord) -> bool {
        self.flaky
            .contains(&(c.variant.as_str(), c.dataset.as_str(), c.case.as_str()))
    }
}

/// The summary's links to the failing, flaky and regressed cells.
fn jump(out: &mut String, results: &EvalResults, marks: &Marks<'_>) {
    let trials = results.config.trials;
    let link = |c: &crate::eval::CellRecord| {
        (
            cell_anchor(&results.eval, &c.variant, &c.case, c.trial),
            c.label(trials),
        )
    };
    let pick = |f: &dyn Fn(&crate::eval::CellRecord) -> bool| -> Vec<(String, String)> {
        results.results.iter().filter(|c| f(c)).map(link).collect()
    };
    let groups = [
        ("fail", "Failing", pick(&|c| !c.passed)),
        ("flaky", "Flaky", pick(&|c| marks.is_flaky(c))),
        (
            "regressed",
            "Regressed",
            pick(&|c| marks.regressed.contains(&c.label(trials))),
        ),
    ];
    viewer::jump_list(out, &groups);
}

fn variant_index(results: &EvalResults, name: &str) -> usize {
    results
        .config
        .variants
        .iter()
        .position(|v| v == name)
        .unwrap_or(0)
}

fn swatch(results: &EvalResults, name: &str) -> String {
    format!(
        r#"<span class="swatch" style="background:{}"></span>"#,
        plot::color(variant_index(results, name))
    )
}

fn header(out: &mut String, results: &EvalResults, notable: &[CaseTrials]) {
    let verdict = results.gate_verdict();
    let gate = verdict.passed;
    let _ = writeln!(
        out,
        "<header>\n<h1>Eval <code>{}</code></h1>",
        xml(&results.eval)
    );
    let _ = writeln!(
        out,
        r#"<p class="verdict {}">{} · {}/{} cells passed ({}) · gate: {}</p>"#,
        if gate { "pass" } else { "fail" },
        if gate { "Passed" } else { "Failed" },
        results.passed_count(),
        results.counted().count(),
        pct(results.pass_rate()),
        xml(&gate_rule(results))
    );
    let notes = verdict.notes(&results.eval, notable);
    if !notes.is_empty() {
        out.push_str("<div class=\"notes\">\n");
        for n in notes {
            let _ = writeln!(out, "<p><strong>{}</strong></p>", xml(&n));
        }
        out.push_str("</div>\n");
    }
    let c = &results.config;
    let _ = writeln!(
        out,
        r#"<p class="meta">{} × {} × {} · scorers: {} · {}</p>"#,
        plural(c.inputs, "input"),
        plural(c.variants.len(), "variant"),
        plural(c.trials as usize, "trial"),
        if c.scorers.is_empty() {
            "none".to_string()
        } else {
            xml(&c.scorers.join(", "))
        },
        xml(&results.timestamp)
    );
    out.push_str("</header>\n");
}

fn variants(out: &mut String, results: &EvalResults) {
    let scorers = results.scorer_columns();
    let _ = write!(
        out,
        "<section id=\"variants\">\n<h2>Variants</h2>\n<table>\n<thead><tr><th>Variant</th><th class=\"num\">Pass</th><th class=\"num\">Pass {}</th>",
        ci_heading(results.gate_options.confidence)
    );
    out.push_str("<th class=\"num\">Latency avg</th><th class=\"num\">p50</th><th class=\"num\">p95</th><th class=\"num\">p99</th><th class=\"num\">Cost / case</th><th class=\"num\">Cost total</th><th class=\"num\">Tokens / case</th>");
    for s in &scorers {
        let _ = write!(out, "<th class=\"num\">{}</th>", xml(&scorer_heading(s)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let frontier = results
        .comparison
        .as_ref()
        .map(|c| c.pareto_frontier.clone())
        .unwrap_or_default();
    for s in results.summaries() {
        // An unknown figure says why on hover; the figures beside it are `–`.
        let latency_why = s.latency_unknown_reason().or_else(|| s.left_out());
        let cost_why = s.cost_unknown_reason().or_else(|| s.left_out());
        let known = |on: bool, v: f64, f: fn(f64) -> String| if on { f(v) } else { "–".into() };
        let latency = s.latency_known();
        let _ = write!(
            out,
            "<tr><td>{}{}{}</td><td class=\"num\">{}/{} ({})</td><td class=\"num\">{}</td><td class=\"num\"{}>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\"{}>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
            swatch(results, &s.variant),
            xml(&s.variant),
            if frontier.contains(&s.variant) {
                " <span class=\"badge\" title=\"on the Pareto frontier\">frontier</span>"
            } else {
                ""
            },
            s.passed,
            s.cells,
            pct(s.pass_rate),
            s.pass_rate_interval
                .map_or_else(|| "–".to_string(), |i| interval(&i)),
            title(latency_why.as_deref()),
            xml(&latency_avg(s)),
            known(latency, s.latency.p50, duration),
            known(latency, s.latency.p95, duration),
            known(latency, s.latency.p99, duration),
            title(cost_why.as_deref()),
            xml(&cost_per_case(s)),
            xml(&known(s.cost_known(), s.cost.total, usd)),
            num(s.tokens.per_case.round())
        );
        for name in &scorers {
            match s.scores.get(name) {
                Some(st) => {
                    let _ = write!(
                        out,
                        "<td class=\"num\" title=\"min {} · max {} · pass {}\">{:.2} ± {:.2}</td>",
                        num(st.min),
                        num(st.max),
                        pct(st.pass_rate),
                        st.mean,
                        st.stddev
                    );
                }
                None => out.push_str("<td class=\"num\">–</td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    for (heading, entries) in figure_notes(results.summaries(), |v, why| {
        format!("<code>{}</code> ({})", xml(v), xml(why))
    }) {
        let _ = writeln!(
            out,
            "<p class=\"figures\"><strong>{heading}:</strong> {}.</p>",
            entries.join(", ")
        );
    }
    if let Some(cmp) = &results.comparison {
        if let Some(r) = &cmp.recommendation {
            let _ = writeln!(
                out,
                "<p><strong>Recommendation:</strong> <code>{}</code> <span class=\"badge\">confidence: {}</span> {}.</p>",
                xml(&r.variant),
                r.confidence.as_str(),
                xml(&r.reason)
            );
            if !r.tradeoffs.is_empty() {
                out.push_str("<ul>\n");
                for t in &r.tradeoffs {
                    let _ = writeln!(out, "<li>Trade-off: {}</li>", xml(t));
                }
                out.push_str("</ul>\n");
            }
        }
        let _ = writeln!(
            out,
            "<p><strong>By pass rate:</strong> {} · <strong>by cost:</strong> {} · <strong>by latency:</strong> {}</p>",
            xml(&cmp.by_pass_rate.join(" › ")),
            xml(&cmp.by_cost.join(" › ")),
            xml(&cmp.by_latency.join(" › "))
        );
    }
    out.push_str("</section>\n");
}

/// ` title="…"` saying why a figure is unknown, or nothing.
fn title(why: Option<&str>) -> String {
    why.map(|w| format!(" title=\"{}\"", xml(w)))
        .unwrap_or_default()
}

/// `[a-z0-9-]` only, for element ids.
fn id_part(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.trim_matches('-').to_string()
}

fn plots(out: &mut String, results: &EvalResults) {
    out.push_str("<section id=\"plots\">\n<h2>Distributions</h2>\n");
    let variants = &results.config.variants;
    let series_of = |f: &dyn Fn(&crate::eval::CellRecord) -> Option<f64>| -> Vec<Series<'_>> {
        variants
            .iter()
            .enumerate()
            .map(|(index, name)| Series {
                name,
                index,
                values: results
                    .results
                    .iter()
                    .filter(|c| &c.variant == name)
                    .filter_map(f)
                    .collect(),
            })
            .collect()
    };
    for scorer in results.scorer_columns() {
        let series = series_of(&|c| c.scores.get(&scorer).map(|s| s.value));
        let unit = results
            .results
            .iter()
            .find_map(|c| c.scores.get(&scorer).and_then(|s| s.unit.clone()));
        let axis = match &unit {
            Some(u) => format!("{scorer} ({u})"),
            None => format!("{scorer} score"),
        };
        let _ = writeln!(
            out,
            "<figure>{}</figure>",
            plot::distribution(
                &format!("plot-score-{}", id_part(&scorer)),
                &format!("Distribution of {scorer} per variant"),
                &axis,
                &series,
                unit.is_none()
            )
        );
    }
    // A cell of unknown latency has no place on a latency axis.
    let latency = series_of(&|c| c.known_latency());
    let _ = writeln!(
        out,
        "<figure>{}</figure>",
        plot::distribution(
            "plot-latency",
            "Latency per variant",
            "latency (ms)",
            &latency,
            false
        )
    );
    out.push_str("<h2>Cost vs quality</h2>\n");
    // Quality as the comparison has it: the deciding scorer's mean, else
    // the pass rate; the frontier is the comparison's (with one variant,
    // that variant).
    let summaries = results.summaries();
    let primary = deciding_scorer(
        summaries.iter().copied(),
        results.gate_options.primary_scorer.as_deref(),
    );
    let quality_label = primary.unwrap_or("pass rate");
    // A variant of unknown cost has no place on a cost axis.
    let points: Vec<plot::Point<'_>> = summaries
        .iter()
        .filter_map(|s| {
            Some(plot::Point {
                name: &s.variant,
                index: variant_index(results, &s.variant),
                cost: s.known_cost()?,
                quality: quality(s, primary),
            })
        })
        .collect();
    let frontier = match &results.comparison {
        Some(c) => c.pareto_frontier.clone(),
        None => (summaries.iter())
            .filter(|s| s.latency_known())
            .map(|s| s.variant.clone())
            .collect(),
    };
    let unplaced: Vec<String> = (summaries.iter())
        .filter_map(|s| {
            let why = s.cost_unknown_reason()?;
            Some(format!("<code>{}</code> ({})", xml(&s.variant), xml(&why)))
        })
        .collect();
    let caption = if unplaced.is_empty() {
        String::new()
    } else {
        format!(
            "<figcaption class=\"unplaced\">Not placed, cost unknown: {}.</figcaption>",
            unplaced.join(", ")
        )
    };
    let _ = writeln!(
        out,
        "<figure>{}{caption}</figure>",
        plot::cost_quality("plot-cost-quality", quality_label, &points, &frontier)
    );
    out.push_str("</section>\n");
}

fn significance(out: &mut String, results: &EvalResults) {
    let Some(cmp) = &results.comparison else {
        return;
    };
    let _ = writeln!(
        out,
        "<section id=\"significance\">\n<h2>Significance</h2>\n<p><strong>{}</strong> (α = {}, quality = {}; paired by case, each case's trials averaged).</p>",
        xml(&cmp.verdict_message()),
        cmp.alpha,
        xml(&cmp.quality)
    );
    out.push_str("<table>\n<thead><tr><th>Comparison</th><th class=\"num\">Cases</th><th class=\"num\">Mean Δ</th><th>Sign-flip (decides)</th><th>Paired t-test</th><th>Wilcoxon signed-rank</th><th>Significant</th><th>Detectable (80% power)</th></tr></thead>\n<tbody>\n");
    for t in &cmp.significance {
        let tt = t_test_cell(t);
        let w = wilcoxon_cell(t);
        let _ = writeln!(
            out,
            "<tr><td>{}{} vs {}{}</td><td class=\"num\">{}</td><td class=\"num\">{:+.3}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            swatch(results, &t.variant),
            xml(&t.variant),
            swatch(results, &t.other),
            xml(&t.other),
            t.pairs,
            t.mean_difference,
            xml(&sign_flip_cell(t)),
            xml(&tt),
            xml(&w),
            if t.significant { "yes" } else { "no" },
            xml(&detectable_cell(t))
        );
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}

fn comparison(out: &mut String, cmp: &Comparison) {
    let s = &cmp.summary;
    let _ = writeln!(
        out,
        "<section id=\"baseline\">\n<h2>Against the baseline of {}</h2>",
        xml(&cmp.baseline.timestamp)
    );
    let _ = writeln!(
        out,
        "<p class=\"verdict {}\">Verdict: {}{}</p>",
        if s.should_block { "fail" } else { "pass" },
        s.verdict.as_str(),
        match (&s.should_block, &s.block_reason) {
            (true, Some(r)) => format!(" · blocks: {}", xml(r)),
            _ => " · does not block".into(),
        }
    );
    let _ = write!(
        out,
        "<table><thead><tr><th></th><th class=\"num\">Baseline</th><th class=\"num\">Candidate</th><th class=\"num\">Change</th></tr></thead><tbody>\n<tr><td>Pass rate</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
        pct(cmp.baseline.pass_rate),
        pct(cmp.candidate.pass_rate),
        points(s.pass_rate_delta),
    );
    let (latency, cost) = baseline_figures(cmp);
    for (what, [base, cand, change]) in [("Latency / case", latency), ("Cost / case", cost)] {
        let _ = writeln!(
            out,
            "<tr><td>{what}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            xml(&base),
            xml(&cand),
            xml(&change)
        );
    }
    out.push_str("</tbody></table>\n");
    if !cmp.regressions.is_empty() {
        let _ = writeln!(
            out,
            "<h3>Regressions ({})</h3>\n<table><thead><tr><th>Cell</th><th>Type</th><th>Severity</th><th>What</th></tr></thead><tbody>",
            cmp.regressions.len()
        );
        for r in &cmp.regressions {
            let (class, label) = match r.severity {
                Severity::Critical => ("critical", "critical"),
                Severity::Warning => ("warning", "warning"),
            };
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td class=\"{class}\">{label}</td><td>{}</td></tr>",
                xml(&r.case_id),
                xml(r.metric.as_deref().unwrap_or("pass → fail")),
                xml(&r.description)
            );
        }
        out.push_str("</tbody></table>\n");
    }
    if !cmp.improvements.is_empty() {
        let _ = writeln!(
            out,
            "<h3>Improvements ({})</h3>\n<table><thead><tr><th>Cell</th><th>Type</th><th>What</th></tr></thead><tbody>",
            cmp.improvements.len()
        );
        for i in &cmp.improvements {
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                xml(&i.case_id),
                xml(i.metric.as_deref().unwrap_or("fail → pass")),
                xml(&i.description)
            );
        }
        out.push_str("</tbody></table>\n");
    }
    let mut tail = vec![format!("Unchanged: {}", cmp.unchanged.len())];
    if !cmp.new_cases.is_empty() {
        tail.push(format!("new: {}", xml(&cmp.new_cases.join(", "))));
    }
    if !cmp.removed_cases.is_empty() {
        tail.push(format!("removed: {}", xml(&cmp.removed_cases.join(", "))));
    }
    let _ = writeln!(
        out,
        "<p class=\"meta\">{}</p>\n</section>",
        tail.join(" · ")
    );
}

/// `<span class="badge flaky">FLAKY</span>` and the quarantine badge, as they apply.
fn badges(flaky: bool, quarantined: bool) -> String {
    let mut out = String::new();
    if flaky {
        out.push_str(" <span class=\"badge flaky\">FLAKY</span>");
    }
    if quarantined {
        out.push_str(
            " <span class=\"badge quarantined\" title=\"not counted by the gate or baseline blocking\">QUARANTINED</span>",
        );
    }
    out
}

fn flaky(out: &mut String, results: &EvalResults, notable: &[CaseTrials]) {
    if notable.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<section id=\"flaky\">\n<h2>Flaky and quarantined cells</h2>\n<p>Flaky (trials disagree): {} of {} cells. Quarantined cells are reported but not counted by the gate or baseline blocking.</p>",
        notable.iter().filter(|t| t.flaky).count(),
        results.trial_stats().len()
    );
    let _ = writeln!(
        out,
        "<table>\n<thead><tr><th>Cell</th><th>Status</th><th class=\"num\">Passed</th><th class=\"num\">Pass rate</th><th class=\"num\">{}</th><th>pass@k, pass^k</th></tr></thead>\n<tbody>",
        ci_heading(results.gate_options.confidence)
    );
    for t in notable {
        let _ = writeln!(
            out,
            "<tr><td>{}<code>{}</code></td><td>{}</td><td class=\"num\">{}/{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            swatch(results, &t.variant),
            xml(&t.label()),
            badges(t.flaky, t.quarantined).trim_start(),
            t.passes,
            t.trials,
            pct(t.pass_rate),
            interval(&t.interval),
            xml(&pass_k(t))
        );
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}

fn borderline(out: &mut String, results: &EvalResults) {
    let list = results.borderline();
    if list.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<section id=\"borderline\">\n<h2>Borderline judgements ({})</h2>\n<table>\n<thead><tr><th>Cell</th><th>Judgement</th></tr></thead>\n<tbody>",
        list.len()
    );
    for (cell, what) in &list {
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td></tr>",
            xml(cell),
            xml(what)
        );
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}

fn cells(
    writer: &mut impl Write,
    results: &EvalResults,
    marks: &Marks<'_>,
    details: &mut impl Details,
    transcripts: Option<&Transcripts<'_>>,
) -> io::Result<()> {
    let scorers = results.scorer_columns();
    let mut text = String::new();
    text.push_str("<section id=\"cells\">\n<h2>Cells</h2>\n");
    text.push_str(viewer::FILTERS);
    if results.results.len() > viewer::PAGE_ROWS {
        text.push_str(viewer::NO_SCRIPT_ROWS);
    }
    text.push_str("<table>\n<thead><tr><th>Cell</th><th>Result</th><th class=\"num\">Latency</th><th class=\"num\">Cost</th><th class=\"num\">Tokens</th>");
    for s in &scorers {
        let _ = write!(text, "<th class=\"num\">{}</th>", xml(&scorer_heading(s)));
    }
    text.push_str("<th>Why</th></tr></thead>\n<tbody>\n");
    writer.write_all(text.as_bytes())?;
    let selection = transcripts.map_or(TranscriptSelection::None, |t| t.selection);
    let picked = Picked::new(selection, results, &marks.flaky, &marks.regressed);
    let baseline_sessions = transcripts
        .map(viewer::baseline_sessions)
        .unwrap_or_default();
    let trials = results.config.trials;
    let mut index = 0;
    stream::each_whole(&results.results, details, |c| {
        text.clear();
        let anchor = cell_anchor(&results.eval, &c.variant, &c.case, c.trial);
        let label = c.label(trials);
        let regressed = marks.regressed.contains(&label);
        let record = transcripts.and_then(|t| viewer::session_record(t.store, &c.session_id));
        let tags = transcripts.map(|_| viewer::cell_tags(record.as_ref()));
        let mark = RowMark {
            anchor: &anchor,
            hidden: index >= viewer::PAGE_ROWS,
            flaky: marks.is_flaky(c),
            regressed,
            tags: tags.as_deref().unwrap_or("[]"),
        };
        index += 1;
        row(&mut text, results, c, &mark, &scorers);
        if let Some(t) = transcripts.filter(|_| picked.wants(c)) {
            let base = baseline_sessions.get(&label).filter(|_| regressed);
            let base = base.map(String::as_str);
            text.push_str(&viewer::cell_data(t, &anchor, c, record.as_ref(), base));
        }
        writer.write_all(text.as_bytes())
    })?;
    writer.write_all(b"</tbody>\n</table>\n</section>\n")
}

/// What a row of the cells table shows besides its cell.
struct RowMark<'a> {
    anchor: &'a str,
    /// Past the first page (the viewer pages the table).
    hidden: bool,
    flaky: bool,
    regressed: bool,
    /// The session's tags, a JSON array.
    tags: &'a str,
}

/// One row of the cells table.
fn row(
    out: &mut String,
    results: &EvalResults,
    c: &crate::eval::CellRecord,
    mark: &RowMark<'_>,
    scorers: &[String],
) {
    let RowMark {
        anchor,
        hidden,
        flaky: is_flaky,
        regressed,
        tags,
    } = *mark;
    let _ = write!(
        out,
        "<tr id=\"{anchor}\" class=\"cell {}\"{} tabindex=\"0\" data-variant=\"{}\" data-case=\"{}\" data-trial=\"{}\" data-status=\"{}\" data-tags=\"{}\"><td>{}<a href=\"#{anchor}\"><code>{}</code></a>{}{}</td><td>{}</td><td class=\"num\"{}>{}</td><td class=\"num\"{}>{}</td><td class=\"num\">{}</td>",
        if c.passed { "passed" } else { "failed" },
        if hidden { " hidden" } else { "" },
        xml(&c.variant),
        xml(&c.case),
        c.trial,
        viewer::status_words(c, is_flaky, regressed),
        xml(tags),
        swatch(results, &c.variant),
        xml(&c.label(results.config.trials)),
        badges(is_flaky, c.quarantined),
        if regressed {
            " <span class=\"badge regressed\">REGRESSED</span>"
        } else {
            ""
        },
        if c.passed { "pass" } else { "fail" },
        title(cell_unknown_reason(c).filter(|_| c.known_latency().is_none())),
        cell_latency(c),
        title(cell_unknown_reason(c)),
        xml(&cell_cost(c)),
        c.metrics.total_tokens
    );
    for name in scorers {
        match c.scores.get(name) {
            Some(s) => {
                let _ = write!(
                    out,
                    "<td class=\"num\" title=\"{}\">{}{}</td>",
                    xml(s.detail.as_deref().unwrap_or("")),
                    num(s.value),
                    if s.pass { "" } else { " ✗" }
                );
            }
            None => out.push_str("<td class=\"num\">–</td>"),
        }
    }
    // A cell that could not be played back shows that cause alone.
    let failures = super::why::why(c);
    if failures.is_empty() {
        out.push_str("<td></td>");
    } else {
        out.push_str("<td><ul class=\"failures\">");
        for f in failures {
            let _ = write!(out, "<li>{}</li>", xml(&f));
        }
        out.push_str("</ul></td>");
    }
    out.push_str("</tr>\n");
}

#[cfg(test)]
mod tests {
    use crate::report::fixtures::{NO_RECORDING, one_variant_unplayable};

    /// The row of the cells table with `id`.
    fn cell_row<'h>(html: &'h str, id: &str) -> &'h str {
        let start = html.find(&format!("<tr id=\"{id}\"")).unwrap();
        let end = html[start..].find("</tr>").unwrap() + start;
        &html[start..end]
    }

    /// A trade-off tells its two figures apart: `$0.00011 vs $0.00014`,
    /// `1.21s vs 1.24s`, never `$0.0001 vs $0.0001` or `1.2s vs 1.2s`.
    #[test]
    fn a_trade_off_tells_its_figures_apart() {
        use crate::eval::{CellRecord, EvalResults};
        let mut cells = Vec::new();
        for (variant, passes, cost, latency) in
            [("good", 4, 0.00014, 1240), ("cheap", 2, 0.00011, 1210)]
        {
            for i in 0..4 {
                let mut c = CellRecord::new(variant, format!("case-{i}"));
                c.passed = i < passes;
                c.metrics.cost_usd = cost;
                c.metrics.latency_ms = latency;
                cells.push(c);
            }
        }
        let results = EvalResults::for_tests("qa", 1, cells);
        let html = super::render(&results, None);
        let line = html
            .lines()
            .find(|l| l.starts_with("<li>Trade-off: cheap is cheaper"))
            .unwrap_or_else(|| panic!("no trade-off: {html}"));
        assert!(
            line.contains("cheaper ($0.00011 vs $0.00014 per case)"),
            "{line}"
        );
        assert!(line.contains("faster (1.21s vs 1.24s avg)"), "{line}");
    }

    /// A variant none of whose cells could be played back shows its
    /// latency and cost as unknown with the reason (in the variants table,
    /// the cells and the plots), is on no frontier and has no place on the
    /// cost axis; its cells say why once: the recording is missing (issue 36).
    #[test]
    fn a_variant_that_could_not_be_played_back_has_unknown_figures_and_one_reason() {
        let html = super::render(&one_variant_unplayable(), None);
        let variants = &html[html.find("<section id=\"variants\">").unwrap()..];
        let variants = &variants[..variants.find("</section>").unwrap()];
        let row = variants
            .lines()
            .find(|l| l.contains("unplayable</td>"))
            .unwrap();
        assert!(!row.contains("frontier"), "{row}");
        assert!(
            row.contains(
                "<td class=\"num\" title=\"3 of 3 cells could not be played back\">unknown</td>"
            ),
            "{row}"
        );
        assert!(!row.contains("$0<") && !row.contains(">0ms<"), "{row}");
        assert!(variants.contains(
            "<strong>Latency and cost unknown:</strong> <code>unplayable</code> (3 of 3 cells could not be played back)."
        ));
        assert!(
            variants.contains("<strong>by cost:</strong> played ·"),
            "{variants}"
        );

        let plot = &html[html.find("<svg id=\"plot-cost-quality\"").unwrap()..];
        let figure = &plot[..plot.find("</figure>").unwrap()];
        assert!(!figure.contains("data-variant=\"unplayable\""), "{figure}");
        assert!(figure.contains("Not placed, cost unknown: <code>unplayable</code>"));
        let latency = &html[html.find("<svg id=\"plot-latency\"").unwrap()..];
        let latency = &latency[..latency.find("</svg>").unwrap()];
        assert_eq!(
            latency.matches("class=\"dot\"").count(),
            3,
            "played's cells only"
        );

        let row = cell_row(&html, "cell-qa-unplayable-capital-t0");
        assert!(
            row.contains("<td class=\"num\" title=\"could not be played back\">unknown</td>"),
            "{row}"
        );
        let why = &row[row.find("<ul class=\"failures\">").unwrap()..];
        assert_eq!(why.matches("<li>").count(), 1, "{why}");
        assert!(why.contains(&super::xml(&format!("run failed: {NO_RECORDING}"))));
        assert!(!why.contains("no output"), "{why}");
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn the_html_report_is_a_page_with_an_escaped_title_and_a_cost_quality_plot() {
        use crate::eval::{CellRecord, EvalResults};
        let mut c = CellRecord::new("gpt-4o", "case-1");
        c.passed = true;
        let html = crate::report::html::render(&EvalResults::for_tests("qa <1>", 1, vec![c]), None);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("<title>Eval qa &lt;1&gt; · scaffold</title>"));
        assert!(html.contains(r#"<svg id="plot-cost-quality""#));
    }
}
