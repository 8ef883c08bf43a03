//! The viewer's pages: HTML over the store's runs, every figure and text
//! escaped (model outputs, tool results and inputs are untrusted text).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use scaffold::_cargo_scaffold_support::eval::{CellRecord, Comparison, EvalResults};
use scaffold::_cargo_scaffold_support::store::EvalRunRecord;
use scaffold::_cargo_scaffold_support::util::rfc3339;
use scaffold::store::EvalTrend;
use serde_json::Value;

use crate::cmd::runs;

/// Rows a page of the grid shows.
pub const PAGE_ROWS: usize = 200;

/// `s` as HTML text or an attribute value (the reports' escaping).
use scaffold::_cargo_scaffold_support::report::escape_html as esc;

/// `s` for a query string value.
fn query(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.3em .5em;\
vertical-align:top;text-align:left}th{background:#f4f4f4}.pass{color:#16692c}.fail{color:#b3261e}\
.out{white-space:pre-wrap;max-width:40em;font:12px ui-monospace,monospace}nav a{margin-right:1em}\
form{margin:.5em 0}";

/// A whole page: its title (text) and body (HTML).
pub fn page(title: &str, body: &str) -> String {
    page_with(title, "", body)
}

/// Seconds between two loads of the page of a run still going: its cells
/// show as they finish, a nextest run's processes' too.
pub const LIVE_REFRESH_SECONDS: u32 = 2;

/// A whole page with `head` (HTML) added to its head.
fn page_with(title: &str, head: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         {head}<title>{}</title><style>{STYLE}</style></head><body>\
         <nav><a href=\"/\">Runs</a></nav><h1>{}</h1>{body}</body></html>",
        esc(title),
        esc(title)
    )
}

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
        "<table><tr><th>Run</th><th>Origin</th><th>Started</th><th>State</th><th>Source</th><th>Evals</th><th>Passed</th></tr>",
    );
    for r in runs {
        let _ = write!(
            body,
            "<tr><td><a href=\"/runs/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}</td></tr>",
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

/// What the grid of a run shows.
#[derive(Debug, Clone, Default, scaffold::serde::Deserialize)]
#[serde(crate = "scaffold::serde")]
pub struct Filter {
    /// `failing` or `passing`; anything else: every cell.
    #[serde(default)]
    pub status: String,
    /// Only this variant.
    #[serde(default)]
    pub variant: String,
    /// Cells whose case, input, output or error contains this text (any case).
    #[serde(default)]
    pub q: String,
    /// The page of rows, from 0.
    #[serde(default)]
    pub page: usize,
}

impl Filter {
    fn keeps(&self, cell: &CellRecord) -> bool {
        let status = match self.status.as_str() {
            "failing" => !cell.passed,
            "passing" => cell.passed,
            _ => true,
        };
        let variant = self.variant.is_empty() || cell.variant == self.variant;
        status && variant && (self.q.is_empty() || mentions(cell, &self.q.to_lowercase()))
    }
}

/// Whether `needle` (lower case) is in the cell's case, input, output or error.
fn mentions(cell: &CellRecord, needle: &str) -> bool {
    let output = cell.output.as_ref().map(text_of).unwrap_or_default();
    [
        cell.case.as_str(),
        &cell.input.to_string(),
        &output,
        cell.error.as_deref().unwrap_or(""),
    ]
    .iter()
    .any(|s| s.to_lowercase().contains(needle))
}

/// A JSON value as the text a reader wants: a string's own text.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The first `n` characters of `s`, `…` after when cut.
fn cut(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// One run: each eval's grid of cases × variants (one row per case and
/// trial), filtered and paged.
pub fn run(record: &EvalRunRecord, evals: &[EvalResults], filter: &Filter) -> String {
    let (state, refresh) = match record.finished {
        true => ("finished".to_string(), String::new()),
        false => (
            format!("going (this page reloads every {LIVE_REFRESH_SECONDS} s)"),
            format!("<meta http-equiv=\"refresh\" content=\"{LIVE_REFRESH_SECONDS}\">"),
        ),
    };
    let mut body = format!(
        "<p>{} · {} · {} · {}/{} cells passed</p>",
        esc(&record.origin),
        esc(&rfc3339(record.started_at_ms)),
        esc(&state),
        record.passed,
        record.cells
    );
    let _ = write!(
        body,
        "<form><label>Cells <select name=\"status\">{}</select></label> \
         <label>Variant <input name=\"variant\" value=\"{}\"></label> \
         <label>Search <input name=\"q\" value=\"{}\" autofocus></label> <button>Show</button></form>",
        ["all", "failing", "passing"]
            .iter()
            .map(|s| format!(
                "<option{}>{s}</option>",
                if filter.status == *s { " selected" } else { "" }
            ))
            .collect::<String>(),
        esc(&filter.variant),
        esc(&filter.q)
    );
    for eval in evals {
        eval_grid(&mut body, eval, filter);
    }
    page_with(&format!("Run {}", record.id), &refresh, &body)
}

/// One eval's grid: a row per dataset, case and trial, a column per variant.
fn eval_grid(body: &mut String, eval: &EvalResults, filter: &Filter) {
    let variants = &eval.config.variants;
    let kept: Vec<&CellRecord> = eval.results.iter().filter(|c| filter.keeps(c)).collect();
    // Each row's cells, rows in order: one pass, not a search per cell.
    let mut rows: BTreeMap<(&str, &str, u32), Vec<&CellRecord>> = BTreeMap::new();
    for c in &kept {
        let row = (c.dataset.as_str(), c.case.as_str(), c.trial);
        rows.entry(row).or_default().push(c);
    }
    let shown = rows.iter().skip(filter.page * PAGE_ROWS).take(PAGE_ROWS);
    let _ = write!(
        body,
        "<h2>{}</h2><p>{} of {} cells shown, {} row(s); page {} of {}</p><table><tr><th>Case</th>",
        esc(&eval.eval),
        kept.len(),
        eval.results.len(),
        rows.len(),
        filter.page + 1,
        rows.len().div_ceil(PAGE_ROWS).max(1)
    );
    for v in variants {
        let _ = write!(body, "<th>{}</th>", esc(v));
    }
    body.push_str("</tr>");
    for (&(dataset, case, trial), cells) in shown {
        let _ = write!(
            body,
            "<tr><th>{}<br><small>{} · t{trial}</small></th>",
            esc(case),
            esc(dataset)
        );
        for v in variants {
            let cell = cells.iter().find(|c| c.variant == *v);
            body.push_str(&cell.map_or("<td></td>".to_string(), |c| grid_cell(c)));
        }
        body.push_str("</tr>");
    }
    body.push_str("</table>");
}

fn grid_cell(c: &CellRecord) -> String {
    let verdict = if c.passed {
        "<span class=\"pass\">PASS</span>"
    } else {
        "<span class=\"fail\">FAIL</span>"
    };
    let scores: String = c
        .scores
        .iter()
        .map(|(name, s)| format!(" · {} {:.2}", esc(name), s.value))
        .collect();
    let output = c.output.as_ref().map(text_of).unwrap_or_default();
    let error = c
        .error
        .as_deref()
        .map(|e| format!("<div class=\"fail\">{}</div>", esc(&cut(e, 300))))
        .unwrap_or_default();
    format!(
        "<td>{verdict}{scores}{error}<div class=\"out\">{}</div></td>",
        esc(&cut(&output, 400))
    )
}

/// Two runs compared, eval by eval: regressions first, then improvements,
/// then the changes in pass rate, latency and cost.
pub fn compare(
    base: &str,
    head: &str,
    comparisons: &[(String, Comparison)],
    unpaired: &[String],
) -> String {
    let mut body = format!(
        "<p>Baseline <a href=\"/runs/{}\">{}</a> → candidate <a href=\"/runs/{}\">{}</a></p>",
        query(base),
        esc(base),
        query(head),
        esc(head)
    );
    for (eval, c) in comparisons {
        let s = &c.summary;
        let _ = write!(
            body,
            "<h2>{}</h2><p>{} regression(s), {} improvement(s); pass rate {:+.1} points, latency {:+.0} ms, cost {:+.4} USD</p>",
            esc(eval),
            c.regressions.len(),
            c.improvements.len(),
            s.pass_rate_delta * 100.0,
            s.avg_latency_delta_ms,
            s.cost_delta
        );
        body.push_str("<table><tr><th>Change</th><th>Cell</th><th>What</th></tr>");
        for r in &c.regressions {
            let _ = write!(
                body,
                "<tr><td class=\"fail\">regression</td><td>{}</td><td>{}</td></tr>",
                esc(&r.case_id),
                esc(&r.description)
            );
        }
        for i in &c.improvements {
            let _ = write!(
                body,
                "<tr><td class=\"pass\">improvement</td><td>{}</td><td>{}</td></tr>",
                esc(&i.case_id),
                esc(&i.description)
            );
        }
        body.push_str("</table>");
    }
    for eval in unpaired {
        let _ = write!(body, "<p>{}: in one run only</p>", esc(eval));
    }
    page(&format!("{base} → {head}"), &body)
}

/// A page saying what went wrong (its text escaped).
pub fn problem(what: &str) -> String {
    page("Not found", &format!("<p>{}</p>", esc(what)))
}
