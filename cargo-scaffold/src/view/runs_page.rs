//! The page of every run: each eval's trend over the runs (pass rate and
//! cost, as charts), a form to compare any two, and the runs, newest first.

use std::fmt::Write as _;

use scaffold::_cargo_scaffold_support::store::EvalRunRecord;
use scaffold::_cargo_scaffold_support::util::rfc3339;
use scaffold::store::EvalTrend;

use super::layout::{esc, page, query};
use crate::cmd::runs;

/// Every run, newest first, with a form to compare two, after each eval's
/// trend over the runs (`trends`, oldest first).
pub fn runs(runs: &[EvalRunRecord], trends: &[EvalTrend], database: &str) -> String {
    let mut body = format!(
        "<p>{} run(s) in <code>{}</code></p>",
        runs.len(),
        esc(database)
    );
    trend_charts(&mut body, trends);
    if runs.len() >= 2 {
        let options: String = runs
            .iter()
            .map(|r| format!("<option value=\"{0}\">{0}</option>", esc(&r.id)))
            .collect();
        let _ = write!(
            body,
            "<form action=\"/compare\"><label>Baseline <select name=\"base\">{options}</select></label> \
             <label>Candidate <select name=\"head\">{options}</select></label> \
             <button>Compare</button></form>"
        );
    }
    body.push_str(
        "<table><tr><th>Run</th><th>Origin</th><th>Started</th><th>State</th><th>Source</th><th>Evals</th><th>Passed</th><th>Against the run before</th></tr>",
    );
    for (i, r) in runs.iter().enumerate() {
        let before = runs
            .get(i + 1)
            .map(|b| {
                format!(
                    "<a href=\"/compare?base={}&amp;head={}\">compare</a>",
                    query(&b.id),
                    query(&r.id)
                )
            })
            .unwrap_or_default();
        let _ = write!(
            body,
            "<tr><td><a href=\"/runs/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td>{before}</td></tr>",
            query(&r.id),
            esc(&r.id),
            esc(&r.origin),
            esc(&rfc3339(r.started_at_ms)),
            esc(&runs::state(r)),
            esc(&runs::source(r)),
            esc(&r.evals.join(", ")),
            r.passed,
            r.cells
        );
    }
    body.push_str("</table>");
    page("Eval runs", &body)
}

/// Width and height of a trend chart, in pixels.
const CHART: (f64, f64) = (360.0, 90.0);

/// Per eval with two runs or more, its pass rate and cost over the runs:
/// two SVG lines, one point per run, the run's id in each point's title.
fn trend_charts(body: &mut String, trends: &[EvalTrend]) {
    let mut evals: Vec<&str> = trends.iter().map(|t| t.eval.as_str()).collect();
    evals.sort_unstable();
    evals.dedup();
    for eval in evals {
        let points: Vec<&EvalTrend> = trends.iter().filter(|t| t.eval == eval).collect();
        if points.len() < 2 {
            continue;
        }
        let rate = |t: &EvalTrend| t.passed as f64 / t.cells.max(1) as f64;
        let top_cost = points.iter().map(|t| t.cost_usd).fold(0.0, f64::max);
        let last = points[points.len() - 1];
        let _ = write!(
            body,
            "<figure><figcaption>{}: pass rate {:.0}% and cost ${:.4} at the last of {} runs</figcaption>{}{}</figure>",
            esc(eval),
            rate(last) * 100.0,
            last.cost_usd,
            points.len(),
            line_chart("pass rate", &points, rate, 1.0, "#16692c"),
            line_chart("cost", &points, |t| t.cost_usd, top_cost, "#555")
        );
    }
}

/// One SVG line of `value` over `points`, scaled to `top`.
fn line_chart(
    what: &str,
    points: &[&EvalTrend],
    value: impl Fn(&EvalTrend) -> f64,
    top: f64,
    colour: &str,
) -> String {
    let (w, h) = CHART;
    let step = w / (points.len() - 1) as f64;
    let y = |v: f64| if top > 0.0 { h - v / top * h } else { h };
    let line: Vec<String> = (points.iter().enumerate())
        .map(|(i, t)| format!("{:.1},{:.1}", i as f64 * step, y(value(t))))
        .collect();
    let dots: String = (points.iter().enumerate())
        .map(|(i, t)| {
            format!(
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{colour}\"><title>{}: {} {}</title></circle>",
                i as f64 * step,
                y(value(t)),
                esc(&t.run_id),
                esc(what),
                value(t)
            )
        })
        .collect();
    format!(
        "<svg role=\"img\" aria-label=\"{}\" width=\"{w}\" height=\"{}\" viewBox=\"-4 -4 {} {}\">\
         <polyline fill=\"none\" stroke=\"{colour}\" points=\"{}\"/>{dots}</svg>",
        esc(what),
        h + 8.0,
        w + 8.0,
        h + 8.0,
        line.join(" ")
    )
}
