//! Two runs compared, eval by eval: the regressions first, then the
//! improvements, then the changes in cost and latency cell by cell, each
//! cell linked to both transcripts side by side.

use std::collections::HashMap;
use std::fmt::Write as _;

use scaffold::_cargo_scaffold_support::eval::{
    CellRecord, CompareOptions, Comparison, EvalResults, compare,
};

use super::grid::PAGE_ROWS;
use super::layout::{esc, page, pager, query};

/// One eval in both runs: the baseline's results, the candidate's and
/// their comparison.
pub struct Compared<'a> {
    /// The baseline's results.
    pub base: &'a EvalResults,
    /// The candidate's.
    pub head: &'a EvalResults,
    /// What changed.
    pub comparison: Comparison,
    /// The candidate's test names by the labels the comparison gives its
    /// cells (`variant::case`, `::t{n}` when either run had several trials).
    names: HashMap<String, String>,
}

impl<'a> Compared<'a> {
    /// Each eval of `head` compared with the same eval of `base`, and the
    /// evals in one run only.
    pub fn pair(
        base: &'a [EvalResults],
        head: &'a [EvalResults],
    ) -> (Vec<Compared<'a>>, Vec<String>) {
        let options = CompareOptions::default();
        let mut compared = Vec::new();
        let mut unpaired: Vec<String> = (base.iter())
            .filter(|b| !head.iter().any(|h| h.eval == b.eval))
            .map(|b| b.eval.clone())
            .collect();
        for h in head {
            match base.iter().find(|b| b.eval == h.eval) {
                Some(b) => {
                    let trials = b.config.trials.max(h.config.trials);
                    let names = (h.results.iter())
                        .map(|c| (c.label(trials), c.test_name(&h.eval, h.config.trials)))
                        .collect();
                    compared.push(Compared {
                        base: b,
                        head: h,
                        comparison: compare(b, h, &options),
                        names,
                    })
                }
                None => unpaired.push(h.eval.clone()),
            }
        }
        unpaired.sort();
        (compared, unpaired)
    }

    /// The candidate's test name of the cell a comparison labels `label`.
    fn head_cell(&self, label: &str) -> String {
        (self.names.get(label).cloned()).unwrap_or_else(|| format!("{}::{label}", self.head.eval))
    }
}

/// What the compare page is made of.
pub struct ComparePage<'a> {
    /// The baseline run.
    pub base: &'a str,
    /// The candidate run.
    pub head: &'a str,
    /// The evals in both.
    pub evals: &'a [Compared<'a>],
    /// The evals in one run only.
    pub unpaired: &'a [String],
    /// The eval whose cell-by-cell table is paged (`""`: none).
    pub eval: &'a str,
    /// Its page, from 0.
    pub page: usize,
}

/// A cell in both runs whose cost or latency moved.
struct Moved<'a> {
    name: String,
    base: &'a CellRecord,
    head: &'a CellRecord,
}

impl Moved<'_> {
    fn cost(&self) -> f64 {
        self.head.metrics.cost_usd - self.base.metrics.cost_usd
    }

    fn latency(&self) -> f64 {
        self.head.metrics.latency_ms as f64 - self.base.metrics.latency_ms as f64
    }
}

/// The measured cells of both runs whose cost or latency changed, the
/// largest cost change first (then latency).
fn moved<'a>(base: &'a EvalResults, head: &'a EvalResults) -> Vec<Moved<'a>> {
    let key = |c: &'a CellRecord| {
        (
            c.variant.as_str(),
            c.dataset.as_str(),
            c.case.as_str(),
            c.trial,
        )
    };
    let measured = |c: &&'a CellRecord| c.unmeasured().is_none();
    let before: HashMap<_, &CellRecord> = base
        .results
        .iter()
        .filter(measured)
        .map(|c| (key(c), c))
        .collect();
    let mut moved: Vec<Moved<'a>> = (head.results.iter().filter(measured))
        .filter_map(|h| {
            let b = *before.get(&key(h))?;
            Some(Moved {
                name: h.test_name(&head.eval, head.config.trials),
                base: b,
                head: h,
            })
        })
        .filter(|m| m.cost() != 0.0 || m.latency() != 0.0)
        .collect();
    moved.sort_by(|a, b| {
        (b.cost().abs().total_cmp(&a.cost().abs()))
            .then(b.latency().abs().total_cmp(&a.latency().abs()))
            .then_with(|| a.name.cmp(&b.name))
    });
    moved
}

impl ComparePage<'_> {
    /// The page.
    pub fn render(&self) -> String {
        let (bq, hq) = (query(self.base), query(self.head));
        let mut body = format!(
            "<p>Baseline <a href=\"/runs/{bq}\">{}</a> → candidate <a href=\"/runs/{hq}\">{}</a> \
             · <a href=\"/compare?base={hq}&amp;head={bq}\">swap</a></p>",
            esc(self.base),
            esc(self.head)
        );
        for e in self.evals {
            self.eval(&mut body, e);
        }
        for eval in self.unpaired {
            let _ = write!(body, "<p>{}: in one run only</p>", esc(eval));
        }
        page(&format!("{} → {}", self.base, self.head), &body)
    }

    /// The link to a cell's transcripts, side by side.
    fn cell_link(&self, name: &str) -> String {
        format!(
            "<a href=\"/runs/{}/cells/{}?base={}\">{}</a>",
            query(self.head),
            query(name),
            query(self.base),
            esc(name)
        )
    }

    fn eval(&self, body: &mut String, e: &Compared<'_>) {
        let (c, eval) = (&e.comparison, &e.head.eval);
        let s = &c.summary;
        let _ = write!(
            body,
            "<h2>{}</h2><p>{} regression(s), {} improvement(s), {} new, {} removed; \
             pass rate {:+.1} points, latency {:+.0} ms, cost {:+.4} USD</p>",
            esc(eval),
            c.regressions.len(),
            c.improvements.len(),
            c.new_cases.len(),
            c.removed_cases.len(),
            s.pass_rate_delta * 100.0,
            s.avg_latency_delta_ms,
            s.cost_delta
        );
        body.push_str("<table><tr><th>Change</th><th>Cell</th><th>What</th></tr>");
        let changes = (c
            .regressions
            .iter()
            .map(|r| ("fail", "regression", &r.case_id, &r.description)))
        .chain(
            c.improvements
                .iter()
                .map(|i| ("pass", "improvement", &i.case_id, &i.description)),
        );
        for (class, word, label, what) in changes {
            let _ = write!(
                body,
                "<tr><td class=\"{class}\">{word}</td><td>{}</td><td>{}</td></tr>",
                self.cell_link(&e.head_cell(label)),
                esc(what)
            );
        }
        body.push_str("</table>");
        self.cost_and_latency(body, e);
    }

    fn cost_and_latency(&self, body: &mut String, e: &Compared<'_>) {
        let moved = moved(e.base, e.head);
        let pages = moved.len().div_ceil(PAGE_ROWS).max(1);
        let page = match self.eval == e.head.eval {
            true => self.page.min(pages - 1),
            false => 0,
        };
        let _ = write!(
            body,
            "<h3>Cost and latency, cell by cell</h3><p>{} cell(s) moved, the largest cost change first; page {} of {pages}</p>",
            moved.len(),
            page + 1
        );
        let links = pager(page, pages, |p| {
            format!(
                "/compare?base={}&head={}&page={p}",
                query(self.base),
                query(self.head)
            )
        });
        body.push_str(&links);
        body.push_str(
            "<table><tr><th>Cell</th><th>Cost (USD)</th><th>Δ cost</th><th>Latency (ms)</th><th>Δ latency</th></tr>",
        );
        for m in moved.iter().skip(page * PAGE_ROWS).take(PAGE_ROWS) {
            let _ = write!(
                body,
                "<tr><td>{}</td><td class=\"num\">{:.4} → {:.4}</td><td class=\"num\">{:+.4}</td>\
                 <td class=\"num\">{} → {}</td><td class=\"num\">{:+.0}</td></tr>",
                self.cell_link(&m.name),
                m.base.metrics.cost_usd,
                m.head.metrics.cost_usd,
                m.cost(),
                m.base.metrics.latency_ms,
                m.head.metrics.latency_ms,
                m.latency()
            );
        }
        body.push_str("</table>");
        body.push_str(&links);
    }
}
