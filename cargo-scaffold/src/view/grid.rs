//! One run's page: each eval's grid of cases × variants (a row per
//! dataset, case and trial), each cell with its verdict, scores and output,
//! filtered (verdict, flaky, changed against another run, variant, tag,
//! words anywhere in the cell or its transcript) and paged in the server.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use scaffold::_cargo_scaffold_support::eval::{CellRecord, EvalResults};
use scaffold::_cargo_scaffold_support::store::EvalRunRecord;
use scaffold::_cargo_scaffold_support::util::rfc3339;
use scaffold::store::{CellKey, Store, has_words};

use super::cache::RunCache;
use super::layout::{Built, LIVE_REFRESH_SECONDS, Refusal, cut, esc, page_with, pager, query};

/// Rows a page of a grid shows.
pub const PAGE_ROWS: usize = 100;

/// What the grid of a run shows (the page's query string).
#[derive(Debug, Clone, Default, scaffold::serde::Deserialize)]
#[serde(crate = "scaffold::serde")]
pub struct Filter {
    /// `failing`, `passing` or `flaky`; anything else: every cell.
    #[serde(default)]
    pub status: String,
    /// Only this variant.
    #[serde(default)]
    pub variant: String,
    /// Only cells whose session has this tag.
    #[serde(default)]
    pub tag: String,
    /// Only cells holding every word of this (see `Store::search_cells`).
    #[serde(default)]
    pub q: String,
    /// Only cells whose verdict differs from this run's (or that it lacks).
    #[serde(default)]
    pub changed: String,
    /// Only this eval (what its pages show).
    #[serde(default)]
    pub eval: String,
    /// The page of rows, from 0.
    #[serde(default)]
    pub page: usize,
}

/// A cell wherever it runs: variant, dataset, case and trial (its test
/// name also holds the eval's trial count, which two runs may not share).
type Place<'a> = (&'a str, &'a str, &'a str, u32);

fn place(c: &CellRecord) -> Place<'_> {
    (&c.variant, &c.dataset, &c.case, c.trial)
}

/// What the filters read from the store: the cells the search and the tag
/// find, and the verdicts of the run compared with.
#[derive(Debug, Default)]
pub struct Found {
    /// The cells holding the words (`None`: no search).
    search: Option<HashSet<CellKey>>,
    /// The cells of the tag (`None`: no tag).
    tagged: Option<HashSet<CellKey>>,
    /// The other run's results (`None`: no comparison).
    other: Option<super::cache::Results>,
}

impl Found {
    /// What `filter` finds in `store` for run `run`.
    pub fn read(
        store: &Store,
        cache: &RunCache,
        run: &str,
        filter: &Filter,
    ) -> Result<Found, Refusal> {
        let mut found = Found::default();
        if has_words(&filter.q) {
            let cells = store.search_cells(run, &filter.q).map_err(Refusal::store)?;
            found.search = Some(cells.into_iter().collect());
        }
        if !filter.tag.is_empty() {
            let cells = store
                .cells_tagged(run, &filter.tag)
                .map_err(Refusal::store)?;
            found.tagged = Some(cells.into_iter().collect());
        }
        if !filter.changed.is_empty() {
            let other =
                crate::store::eval_run(store, &filter.changed).map_err(Refusal::not_found)?;
            found.other = Some(cache.results(store, &other).map_err(Refusal::store)?);
        }
        Ok(found)
    }

    /// The other run's verdicts of eval `eval`, by place.
    fn verdicts(&self, eval: &str) -> Option<HashMap<Place<'_>, bool>> {
        let other = self.other.as_ref()?;
        let results = other.iter().filter(|e| e.eval == eval);
        Some(
            results
                .flat_map(|e| e.results.iter().map(|c| (place(c), c.passed)))
                .collect(),
        )
    }
}

/// A cell's key as the store keeps it: its eval and test name.
fn key(eval: &EvalResults, c: &CellRecord) -> CellKey {
    (
        eval.eval.clone(),
        c.test_name(&eval.eval, eval.config.trials),
    )
}

/// The `(variant, dataset, case)` of an eval whose trials disagree.
fn flaky(eval: &EvalResults) -> HashSet<(&str, &str, &str)> {
    let mut verdicts: HashMap<(&str, &str, &str), (bool, bool)> = HashMap::new();
    for c in &eval.results {
        let seen = verdicts
            .entry((&c.variant, &c.dataset, &c.case))
            .or_default();
        if c.passed {
            seen.0 = true;
        } else {
            seen.1 = true;
        }
    }
    (verdicts.into_iter())
        .filter(|(_, (pass, fail))| *pass && *fail)
        .map(|(k, _)| k)
        .collect()
}

/// What one eval's grid keeps: the filter and what it read for that eval.
struct Keep<'a> {
    filter: &'a Filter,
    found: &'a Found,
    flaky: HashSet<(&'a str, &'a str, &'a str)>,
    other: Option<HashMap<Place<'a>, bool>>,
}

impl Keep<'_> {
    fn keeps(&self, eval: &EvalResults, c: &CellRecord) -> bool {
        let status = match self.filter.status.as_str() {
            "failing" => !c.passed,
            "passing" => c.passed,
            "flaky" => {
                self.flaky
                    .contains(&(c.variant.as_str(), c.dataset.as_str(), c.case.as_str()))
            }
            _ => true,
        };
        let variant = self.filter.variant.is_empty() || c.variant == self.filter.variant;
        let changed = (self.other.as_ref()).is_none_or(|o| o.get(&place(c)) != Some(&c.passed));
        if !(status && variant && changed) {
            return false;
        }
        if self.found.search.is_none() && self.found.tagged.is_none() {
            return true;
        }
        let k = key(eval, c);
        (self.found.search.as_ref()).is_none_or(|s| s.contains(&k))
            && (self.found.tagged.as_ref()).is_none_or(|s| s.contains(&k))
    }
}

impl Filter {
    /// This filter's query string on page `page` of eval `eval`.
    fn href(&self, run: &str, eval: &str, page: usize) -> String {
        format!(
            "/runs/{}?status={}&variant={}&tag={}&q={}&changed={}&eval={}&page={page}",
            query(run),
            query(&self.status),
            query(&self.variant),
            query(&self.tag),
            query(&self.q),
            query(&self.changed),
            query(eval)
        )
    }
}

/// What the page of a run is made of.
pub struct RunPage<'a> {
    /// The run.
    pub record: &'a EvalRunRecord,
    /// Its results, by eval.
    pub evals: &'a [EvalResults],
    /// Every run's id (to compare with).
    pub runs: &'a [String],
    /// Its cells' tags.
    pub tags: &'a [String],
    /// The filter asked for.
    pub filter: &'a Filter,
    /// What the filter found in the store.
    pub found: &'a Found,
}

fn options<'v>(values: impl IntoIterator<Item = &'v str>, chosen: &str) -> String {
    values
        .into_iter()
        .map(|v| {
            let on = if v == chosen { " selected" } else { "" };
            format!("<option value=\"{0}\"{on}>{0}</option>", esc(v))
        })
        .collect()
}

impl RunPage<'_> {
    /// The page.
    pub fn render(&self) -> Built {
        let (record, filter) = (self.record, self.filter);
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
        self.form(&mut body);
        if !filter.q.trim().is_empty() && !has_words(&filter.q) {
            body.push_str("<p>The search has no word to look for (letters or digits): every cell is shown.</p>");
        } else if self.found.search.as_ref().is_some_and(HashSet::is_empty) {
            body.push_str("<p>No cell holds every word searched for (search finds words and their beginnings).</p>");
        }
        let shown = self
            .evals
            .iter()
            .filter(|e| filter.eval.is_empty() || e.eval == filter.eval);
        let mut any = false;
        for eval in shown {
            self.grid(&mut body, eval);
            any = true;
        }
        if !any {
            return Err(Refusal::not_found(format!(
                "run {} has no eval {}",
                record.id, filter.eval
            )));
        }
        Ok(page_with(&format!("Run {}", record.id), &refresh, &body))
    }

    fn form(&self, body: &mut String) {
        let filter = self.filter;
        let mut variants: Vec<&str> = (self.evals.iter())
            .flat_map(|e| e.config.variants.iter().map(String::as_str))
            .collect();
        variants.sort_unstable();
        variants.dedup();
        let others = (self.runs.iter())
            .filter(|r| **r != self.record.id)
            .map(String::as_str);
        // A page that reloads itself would take the text being typed away
        // from a focused field: focus only a finished run's search.
        let focus = if self.record.finished {
            " autofocus"
        } else {
            ""
        };
        let _ = write!(
            body,
            "<form><label>Cells <select name=\"status\">{}</select></label> \
             <label>Variant <select name=\"variant\"><option value=\"\">any</option>{}</select></label> \
             <label>Tag <select name=\"tag\"><option value=\"\">any</option>{}</select></label> \
             <label>Changed against <select name=\"changed\"><option value=\"\">no run</option>{}</select></label> \
             <label>Search <input type=\"search\" name=\"q\" value=\"{}\"{focus}></label> \
             <button>Show</button></form>",
            options(["all", "failing", "passing", "flaky"], &filter.status),
            options(variants, &filter.variant),
            options(self.tags.iter().map(String::as_str), &filter.tag),
            options(others, &filter.changed),
            esc(&filter.q)
        );
    }

    /// One eval's grid: a row per dataset, case and trial, a column per variant.
    fn grid(&self, body: &mut String, eval: &EvalResults) {
        let keep = Keep {
            filter: self.filter,
            found: self.found,
            flaky: flaky(eval),
            other: self.found.verdicts(&eval.eval),
        };
        let kept: Vec<&CellRecord> = eval
            .results
            .iter()
            .filter(|c| keep.keeps(eval, c))
            .collect();
        // Each row's cells, rows in order: one pass, not a search per cell.
        let mut rows: BTreeMap<(&str, &str, u32), Vec<&CellRecord>> = BTreeMap::new();
        for c in &kept {
            rows.entry((&c.dataset, &c.case, c.trial))
                .or_default()
                .push(c);
        }
        let pages = rows.len().div_ceil(PAGE_ROWS).max(1);
        // Only the eval a pager link names turns its page.
        let page = match self.filter.eval == eval.eval {
            true => self.filter.page.min(pages - 1),
            false => 0,
        };
        let _ = write!(
            body,
            "<h2>{}</h2><p>{} of {} cells shown, {} row(s); page {} of {pages}</p>",
            esc(&eval.eval),
            kept.len(),
            eval.results.len(),
            rows.len(),
            page + 1,
        );
        let links = pager(page, pages, |p| {
            self.filter.href(&self.record.id, &eval.eval, p)
        });
        body.push_str(&links);
        body.push_str("<table><tr><th>Case</th>");
        for v in &eval.config.variants {
            let _ = write!(body, "<th>{}</th>", esc(v));
        }
        body.push_str("</tr>");
        for (&(dataset, case, trial), cells) in rows.iter().skip(page * PAGE_ROWS).take(PAGE_ROWS) {
            let _ = write!(
                body,
                "<tr><th>{}<br><small>{} · t{trial}</small></th>",
                esc(case),
                esc(dataset)
            );
            for v in &eval.config.variants {
                match cells.iter().find(|c| c.variant == *v) {
                    Some(c) => self.cell(body, eval, c, keep.other.as_ref()),
                    None => body.push_str("<td></td>"),
                }
            }
            body.push_str("</tr>");
        }
        body.push_str("</table>");
        body.push_str(&links);
    }

    /// A cell: its verdict, linked to its transcript (beside the compared
    /// run's, when that run has the cell), scores, error and output.
    fn cell(
        &self,
        body: &mut String,
        eval: &EvalResults,
        c: &CellRecord,
        other: Option<&HashMap<Place<'_>, bool>>,
    ) {
        let verdict = if c.passed {
            "<span class=\"pass\">PASS</span>"
        } else {
            "<span class=\"fail\">FAIL</span>"
        };
        let (_, name) = key(eval, c);
        let base = match other.is_some_and(|o| o.contains_key(&place(c))) {
            true => format!("?base={}", query(&self.filter.changed)),
            false => String::new(),
        };
        let _ = write!(
            body,
            "<td><a href=\"/runs/{}/cells/{}{base}\">{verdict}</a>",
            query(&self.record.id),
            query(&name)
        );
        for (name, s) in c.scores.iter() {
            let _ = write!(body, " · {} {:.2}", esc(name), s.value);
        }
        if let Some(e) = &c.error {
            let _ = write!(body, "<div class=\"fail\">{}</div>", esc(&cut(e, 300)));
        }
        let output = c.output_text().unwrap_or_default();
        let _ = write!(
            body,
            "<div class=\"out\">{}</div></td>",
            esc(&cut(&output, 400))
        );
    }
}
