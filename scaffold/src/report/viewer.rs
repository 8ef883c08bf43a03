//! The HTML report's transcript viewer: stable cell anchors, the cells'
//! transcripts as JSON embedded once per cell (`<script
//! type="application/json" id="t-{anchor}">`), and the inline script and
//! style that render them on demand (timeline, assertions with their matched
//! signals highlighted, search, side by side, filters, keyboard).
//!
//! Which cells get a transcript is [`TranscriptSelection`]
//! (`SCAFFOLD_REPORT_TRANSCRIPTS`); transcripts come from a [`Store`].

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::str::FromStr;

use serde::Serialize;
use serde_json::Value;

use super::escape::xml;
use super::transcript::Transcript;
use crate::eval::{CellRecord, Comparison, EvalResults};
use crate::signal::Signal;
use crate::store::{SessionMeta, SessionRecord, Store};

/// The inline script of the viewer.
pub(crate) const SCRIPT: &str = include_str!("viewer.js");

/// The viewer's style, added to the report's.
pub(crate) const STYLE: &str = r#"
tr.cell { cursor: pointer; }
tr.cell:focus, tr.cell.current { outline: 2px solid #2563eb; outline-offset: -2px; }
tr.detail > td { background: #f9fafb; padding: 12px; }
nav#jump { margin: 8px 0; padding: 6px 10px; border-left: 3px solid var(--bad); background: #fef2f2; }
#filters input[type=search] { min-width: 16em; padding: 2px 6px; }
.pager { display: flex; gap: 8px; align-items: center; margin: 8px 0; color: var(--muted); }
#filters { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; margin: 8px 0; }
.transcript .bar { display: flex; gap: 8px; align-items: center; margin-bottom: 8px; }
.transcript input[type=search] { flex: 1; padding: 4px 8px; }
.transcript .cause { border-left: 3px solid var(--bad); background: #fef2f2; padding: 4px 8px; margin: 0 0 8px; }
.transcript .cause pre { white-space: pre-wrap; word-break: break-word; margin: 2px 0; font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
ul.assertions { list-style: none; padding: 0; margin: 0 0 8px; }
li.assertion { padding: 4px 8px; border-left: 3px solid var(--ok); margin: 2px 0; background: #fff; cursor: pointer; }
li.assertion.fail { border-left-color: var(--bad); }
li.assertion .verdict { font-weight: 600; margin-right: 6px; }
li.assertion.fail .verdict { color: var(--bad); }
li.assertion.pass .verdict { color: var(--ok); }
li.assertion code, li.assertion .refs { margin: 0 6px; color: var(--muted); }
ol.timeline { list-style: none; margin: 0; padding: 0; }
li.entry { border-left: 3px solid var(--line); background: #fff; margin: 2px 0; padding: 4px 8px; }
li.entry .head span { margin-right: 8px; }
li.entry .at, li.entry .meta, li.entry .agent { color: var(--muted); font-size: 12px; }
li.entry .kind { font-size: 11px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
li.entry .title { font-weight: 600; }
li.k-phase { background: #eef2ff; border-left-color: #4f46e5; }
li.k-provider { border-left-color: #0891b2; }
li.k-tool { border-left-color: #7c3aed; }
li.k-state { border-left-color: #ca8a04; }
li.entry.failed, li.k-error { border-left-color: var(--bad); background: #fef2f2; }
li.entry.matched { outline: 2px solid #f59e0b; background: #fffbeb; }
li.entry.differs { box-shadow: inset 4px 0 0 #db2777; }
li.entry.differs > .head::after { content: "differs"; font-size: 11px; color: #fff; background: #db2777; border-radius: 4px; padding: 0 5px; }
li.entry.nomatch { display: none; }
details.part { margin: 2px 0 2px 12px; }
details.part pre { white-space: pre-wrap; word-break: break-word; margin: 2px 0; padding: 6px; background: #f3f4f6; max-height: 400px; overflow: auto; font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; }
pre.diff .add { background: #dcfce7; }
pre.diff .del { background: #fee2e2; }
.sbs-row { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
.sbs-head { font-weight: 600; }
.sbs-phase { grid-column: 1 / 3; font-weight: 600; background: #eef2ff; padding: 2px 8px; margin-top: 6px; }
mark { background: #fde047; }
"#;

/// Which cells' transcripts the HTML report embeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TranscriptSelection {
    /// Every cell's.
    All,
    /// Failing, flaky and regressed cells', with the other variants of
    /// their case and trial (to put side by side). The default.
    #[default]
    Failing,
    /// None.
    None,
}

/// The environment variable that picks a [`TranscriptSelection`].
pub const TRANSCRIPTS_VAR: &str = "SCAFFOLD_REPORT_TRANSCRIPTS";

/// A value of [`TRANSCRIPTS_VAR`] that is not `all`, `failing` or `none`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{TRANSCRIPTS_VAR}=`{value}` is not one of: all, failing, none")]
pub struct BadTranscriptSelection {
    /// The value given.
    pub value: String,
}

impl FromStr for TranscriptSelection {
    type Err = BadTranscriptSelection;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "all" => Ok(TranscriptSelection::All),
            "failing" | "" => Ok(TranscriptSelection::Failing),
            "none" => Ok(TranscriptSelection::None),
            _ => Err(BadTranscriptSelection {
                value: s.to_string(),
            }),
        }
    }
}

impl TranscriptSelection {
    /// From [`TRANSCRIPTS_VAR`]; [`TranscriptSelection::Failing`] when unset.
    pub fn from_env() -> Result<TranscriptSelection, BadTranscriptSelection> {
        match std::env::var(TRANSCRIPTS_VAR) {
            Ok(v) => v.parse(),
            Err(_) => Ok(TranscriptSelection::Failing),
        }
    }
}

/// Where the HTML report's transcripts come from: the store that holds the
/// cells' sessions, which cells, and the baseline run's results (whose
/// sessions, when this store has them, are shown beside regressed cells).
#[derive(Clone, Copy)]
pub struct Transcripts<'s> {
    /// The store of the run's sessions.
    pub store: &'s Store,
    /// Which cells get one.
    pub selection: TranscriptSelection,
    /// The baseline's results, for the baseline's side of a regression.
    pub baseline: Option<&'s EvalResults>,
}

impl<'s> Transcripts<'s> {
    /// Transcripts from `store` for the cells `selection` picks, no baseline.
    pub fn new(store: &'s Store, selection: TranscriptSelection) -> Self {
        Transcripts {
            store,
            selection,
            baseline: None,
        }
    }

    /// With the baseline run's results.
    pub fn baseline(mut self, baseline: &'s EvalResults) -> Self {
        self.baseline = Some(baseline);
        self
    }
}

/// A stable, unique element id for a cell:
/// `cell-{eval}-{variant}-{case}-t{trial}`, each part slugged
/// (`[a-z0-9-]`); a part the slug changed gets a short hash of its text,
/// so that different names never share an anchor.
pub fn cell_anchor(eval: &str, variant: &str, case: &str, trial: u32) -> String {
    format!(
        "cell-{}-{}-{}-t{trial}",
        slug(eval),
        slug(variant),
        slug(case)
    )
}

fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let c = if c.is_ascii_alphanumeric() {
            c.to_ascii_lowercase()
        } else {
            '-'
        };
        if !(c == '-' && (out.is_empty() || out.ends_with('-'))) {
            out.push(c);
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out == s {
        return out;
    }
    // FNV-1a: stable across builds and platforms.
    let hash = s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{out}-{:06x}", hash & 0xff_ffff)
}

/// A cell's status words for filtering: `pass`/`fail`, then `flaky`,
/// `regressed`, `quarantined`, `excluded` as they apply.
pub(crate) fn status_words(c: &CellRecord, flaky: bool, regressed: bool) -> String {
    let mut words = vec![if c.passed { "pass" } else { "fail" }];
    for (on, word) in [
        (flaky, "flaky"),
        (regressed, "regressed"),
        (c.quarantined, "quarantined"),
        (c.excluded, "excluded"),
    ] {
        if on {
            words.push(word);
        }
    }
    words.join(" ")
}

/// The labels (`variant::case[::tN]`) of the regressed cells.
pub(crate) fn regressed(baseline: Option<&Comparison>) -> HashSet<String> {
    baseline
        .map(|c| c.regressions.iter().map(|r| r.case_id.clone()).collect())
        .unwrap_or_default()
}

/// The cells whose transcripts a report embeds, by `(dataset, case, trial)`
/// for [`TranscriptSelection::Failing`] (a cell's siblings come along).
pub(crate) struct Picked {
    selection: TranscriptSelection,
    keys: HashSet<(String, String, u32)>,
}

impl Picked {
    /// The cells that fail, are flaky or regressed, with their siblings.
    pub(crate) fn new(
        selection: TranscriptSelection,
        results: &EvalResults,
        flaky: &HashSet<(&str, &str, &str)>,
        regressed: &HashSet<String>,
    ) -> Picked {
        let trials = results.config.trials;
        let keys = results
            .results
            .iter()
            .filter(|c| {
                !c.passed
                    || flaky.contains(&(c.variant.as_str(), c.dataset.as_str(), c.case.as_str()))
                    || regressed.contains(&c.label(trials))
            })
            .map(|c| (c.dataset.clone(), c.case.clone(), c.trial))
            .collect();
        Picked { selection, keys }
    }

    pub(crate) fn wants(&self, c: &CellRecord) -> bool {
        match self.selection {
            TranscriptSelection::All => true,
            TranscriptSelection::None => false,
            TranscriptSelection::Failing => {
                self.keys
                    .contains(&(c.dataset.clone(), c.case.clone(), c.trial))
            }
        }
    }
}

/// One assertion of a cell as the viewer shows it.
#[derive(Serialize)]
struct AssertionView<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    passed: bool,
    message: &'a str,
    /// The signals it matched.
    m: Vec<u64>,
}

/// Where a forked session comes from, as the viewer shows it: `forked
/// from session {parent} at {at}`.
#[derive(Serialize)]
struct Fork<'a> {
    parent: &'a str,
    at: String,
}

impl Fork<'_> {
    /// The fork of the session of `meta`, when it was forked.
    fn of(meta: &SessionMeta) -> Option<Fork<'_>> {
        Some(Fork {
            parent: meta.parent_id.as_deref()?,
            at: meta
                .fork_point
                .as_ref()
                .map_or_else(|| "an unknown point".into(), fork_point_words),
        })
    }
}

/// A stored fork point in words: `signal #47 (phase coding, first;
/// resumes at coding)`; its JSON when it has none of those fields.
fn fork_point_words(point: &Value) -> String {
    let text = |key: &str| point.get(key).and_then(Value::as_str);
    let mut how = Vec::new();
    if let Some(phase) = text("phase") {
        how.push(match point.get("occurrence") {
            Some(Value::String(o)) => format!("phase {phase}, {o}"),
            Some(o) if !o.is_null() => format!("phase {phase}, occurrence {o}"),
            _ => format!("phase {phase}"),
        });
    }
    if let Some(predicate) = text("where") {
        how.push(format!("where {predicate}"));
    }
    if let Some(phase) = text("resumeAt") {
        how.push(format!("resumes at {phase}"));
    }
    let how = how.join("; ");
    match (
        point.get("eventIndex").and_then(Value::as_u64),
        how.is_empty(),
    ) {
        (Some(i), true) => format!("signal #{i}"),
        (Some(i), false) => format!("signal #{i} ({how})"),
        (None, false) => how,
        (None, true) => point.to_string(),
    }
}

/// What the viewer reads for a cell.
#[derive(Serialize)]
struct CellData<'a> {
    session: &'a str,
    /// The session's parent and fork point, when it was forked.
    #[serde(skip_serializing_if = "Option::is_none")]
    fork: Option<Fork<'a>>,
    variant: &'a str,
    assertions: Vec<AssertionView<'a>>,
    /// Why a cell that could not be played back failed: the run's error,
    /// shown alone (its assertions, which failed for want of the recorded
    /// answers, are left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    cause: Option<&'a str>,
    /// The failed assertions left out with `cause`.
    #[serde(skip_serializing_if = "is_zero")]
    unjudged: usize,
    t: Transcript,
    #[serde(skip_serializing_if = "Option::is_none")]
    b: Option<Transcript>,
}

/// JSON safe inside `<script>`: `<`, `>` and `&` as `\u` escapes (only
/// ever inside strings in JSON), so no `</script>` or `<!--` can appear.
pub(crate) fn script_json(value: &impl Serialize) -> String {
    let json = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// The baseline's session ids by cell label.
pub(crate) fn baseline_sessions(t: &Transcripts<'_>) -> HashMap<String, String> {
    let Some(b) = t.baseline else {
        return HashMap::new();
    };
    b.results
        .iter()
        .filter(|c| !c.session_id.is_empty())
        .map(|c| (c.label(b.config.trials), c.session_id.clone()))
        .collect()
}

/// The `<script type="application/json">` of a cell's transcript, or
/// nothing when its session is not in the store; `record` is the
/// session's (its lineage).
pub(crate) fn cell_data(
    t: &Transcripts<'_>,
    anchor: &str,
    c: &CellRecord,
    record: Option<&SessionRecord>,
    baseline_session: Option<&str>,
) -> String {
    let Some(signals) = session_signals(t.store, &c.session_id) else {
        return String::new();
    };
    // A cell that could not be played back failed for that cause alone.
    let cause = c.error.as_deref().filter(|_| c.unplayable);
    // `output.*` read the run's output: its end, whose entry shows it.
    let end = (signals.iter().rev())
        .find(|s| s.name == crate::signal::names::HARNESS_END)
        .map(|s| s.index);
    let assertions = c
        .assertions
        .iter()
        .filter(|a| cause.is_none() || a.passed)
        .map(|a| AssertionView {
            kind: a.type_name(),
            passed: a.passed,
            message: &a.message,
            m: match a.type_name().starts_with("output.") {
                true => end.into_iter().collect(),
                false => crate::assert::matched_signals(&a.assertion, &signals),
            },
        })
        .collect();
    let mut transcript = Transcript::from_signals(&signals);
    if let Some(output) = &c.output {
        transcript.show_output(output);
    }
    let data = CellData {
        session: &c.session_id,
        fork: record.and_then(|r| Fork::of(&r.meta)),
        variant: &c.variant,
        assertions,
        cause,
        unjudged: match cause {
            Some(_) => c.assertions.iter().filter(|a| !a.passed).count(),
            None => 0,
        },
        t: transcript,
        b: baseline_session
            .and_then(|id| session_signals(t.store, id))
            .map(|s| Transcript::from_signals(&s)),
    };
    format!(
        "<script type=\"application/json\" id=\"t-{anchor}\">{}</script>\n",
        script_json(&data)
    )
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn session_signals(store: &Store, id: &str) -> Option<Vec<Signal>> {
    if id.is_empty() {
        return None;
    }
    store.signals(id).ok().filter(|s| !s.is_empty())
}

/// The stored record of session `id`, when there is one.
pub(crate) fn session_record(store: &Store, id: &str) -> Option<SessionRecord> {
    match id {
        "" => None,
        id => store.session(id).ok().flatten(),
    }
}

/// A session's tags that name no scope (`case:`, `dataset:`, `trial:`, …),
/// as a JSON array for `data-tags`.
pub(crate) fn cell_tags(record: Option<&SessionRecord>) -> String {
    let tags: Vec<&String> = (record.iter())
        .flat_map(|r| &r.meta.tags)
        .filter(|t| !t.contains(':'))
        .collect();
    serde_json::to_string(&tags).unwrap_or_else(|_| "[]".into())
}

/// A status word, its title and its cells' anchors and labels.
pub(crate) type JumpGroup<'a> = (&'a str, &'a str, Vec<(String, String)>);

/// The "jump to" list of the summary: links to the failing, flaky and
/// regressed cells (the first 50 of each) and a filter for each.
pub(crate) fn jump_list(out: &mut String, groups: &[JumpGroup<'_>]) {
    if groups.iter().all(|(_, _, cells)| cells.is_empty()) {
        return;
    }
    out.push_str("<nav id=\"jump\">\n<strong>Jump to:</strong>\n");
    for (status, title, cells) in groups.iter().filter(|g| !g.2.is_empty()) {
        let _ = writeln!(
            out,
            "<div class=\"jump-{status}\"><a href=\"#cells\" data-status=\"{status}\">{title} ({})</a>: ",
            cells.len()
        );
        let links: Vec<String> = cells
            .iter()
            .take(50)
            .map(|(anchor, label)| format!("<a href=\"#{anchor}\"><code>{}</code></a>", xml(label)))
            .collect();
        out.push_str(&links.join(", "));
        if cells.len() > 50 {
            let _ = write!(out, " … and {} more", cells.len() - 50);
        }
        out.push_str("</div>\n");
    }
    out.push_str("</nav>\n");
}

/// The filters above the cells table (the script fills their options):
/// a search of the cells' text (`/` focuses it), then variant, case, tag
/// and status.
pub(crate) const FILTERS: &str = "<div id=\"filters\"><input type=\"search\" id=\"filter-search\" placeholder=\"Search cells (/)\" aria-label=\"Search cells\"> <label>Variant <select id=\"filter-variant\"><option value=\"\">all</option></select></label> <label>Case <select id=\"filter-case\"><option value=\"\">all</option></select></label> <label>Tag <select id=\"filter-tag\"><option value=\"\">all</option></select></label> <label>Status <select id=\"filter-status\"><option value=\"\">all</option></select></label> <span id=\"filter-count\" class=\"meta\"></span> <span class=\"meta\">Keys: j/k next/previous cell, Enter opens its transcript, / searches.</span></div>\n";

/// The rows of the cells table shown at a time: the HTML marks the rest
/// `hidden` (Chromium lays out no more), the script pages through them (as
/// filters, `j`/`k` and links to a cell move) and says so in `.pager`.
pub(crate) const PAGE_ROWS: usize = 100;

/// Without scripts, a long table's every row.
pub(crate) const NO_SCRIPT_ROWS: &str =
    "<noscript><style>tr.cell[hidden] { display: table-row; }</style></noscript>\n";

/// A page with one session's transcript.
pub fn session_page(session_id: &str, signals: &[Signal]) -> String {
    one_session_page(session_id, None, signals)
}

/// [`session_page`] of a stored session, with its lineage (`cargo scaffold
/// sessions show ID --html`).
pub fn session_record_page(record: &SessionRecord, signals: &[Signal]) -> String {
    one_session_page(&record.meta.id, Fork::of(&record.meta), signals)
}

fn one_session_page(session_id: &str, fork: Option<Fork<'_>>, signals: &[Signal]) -> String {
    let data = CellData {
        session: session_id,
        fork,
        variant: "",
        assertions: Vec::new(),
        cause: None,
        unjudged: 0,
        t: Transcript::from_signals(signals),
        b: None,
    };
    let anchor = format!("session-{}", slug(session_id));
    let row = format!(
        "<tr id=\"{anchor}\" class=\"cell\" tabindex=\"0\" data-variant=\"\" data-case=\"\" data-trial=\"0\" data-status=\"session\" data-tags=\"[]\"><td><code>{}</code></td></tr>\n\
         <script type=\"application/json\" id=\"t-{anchor}\">{}</script>",
        xml(session_id),
        script_json(&data)
    );
    let heading = format!(
        "<h1>Session <code>{}</code></h1>\n<p class=\"meta\">{} signals</p>",
        xml(session_id),
        signals.len()
    );
    transcript_page(
        &format!("Session {session_id}"),
        "",
        &heading,
        &row,
        &format!("<script>{SCRIPT}</script>"),
    )
}

/// A page of one transcript: `row` is its table row and data, opened by
/// the script (a table of one row opens it); `head` and `body` (HTML) go
/// before the page's own.
fn transcript_page(title: &str, head: &str, body: &str, row: &str, script: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n{head}\
         <title>{} · scaffold</title>\n<style>{}{STYLE}</style>\n</head>\n<body>\n{body}\n\
         <table><tbody>\n{row}\n</tbody></table>\n{script}\n</body>\n</html>\n",
        xml(title),
        super::html::BASE_STYLE
    )
}

/// The script of the transcript viewer, for a page that loads it from a
/// file ([`CellPage::script_src`]) rather than holding it.
pub const VIEWER_SCRIPT: &str = SCRIPT;

/// A page with one cell's transcript, as `cargo scaffold view` serves it:
/// its assertions (each pointing at the signals it read), its session's
/// lineage (parent and fork point), and, with a baseline cell, both
/// transcripts side by side, phase by phase.
pub struct CellPage<'a> {
    store: &'a Store,
    cell: &'a CellRecord,
    title: &'a str,
    baseline: Option<&'a CellRecord>,
    head: &'a str,
    body: &'a str,
    script_src: Option<&'a str>,
}

impl<'a> CellPage<'a> {
    /// The page of `cell`, titled `title` (text), its session read from `store`.
    pub fn new(store: &'a Store, title: &'a str, cell: &'a CellRecord) -> Self {
        CellPage {
            store,
            cell,
            title,
            baseline: None,
            head: "",
            body: "",
            script_src: None,
        }
    }

    /// Show the baseline's cell beside this one (its session from the same store).
    pub fn baseline(mut self, baseline: Option<&'a CellRecord>) -> Self {
        self.baseline = baseline;
        self
    }

    /// HTML added to the page's head (a content security policy, say).
    pub fn head(mut self, html: &'a str) -> Self {
        self.head = html;
        self
    }

    /// HTML put at the top of the body (links back, say).
    pub fn body(mut self, html: &'a str) -> Self {
        self.body = html;
        self
    }

    /// Load the script from `src` (serving [`VIEWER_SCRIPT`] there) instead
    /// of holding it: a page under a policy that allows no inline script.
    pub fn script_src(mut self, src: &'a str) -> Self {
        self.script_src = Some(src);
        self
    }

    /// The page.
    pub fn render(&self) -> String {
        let c = self.cell;
        let anchor = cell_anchor("cell", &c.variant, &c.case, c.trial);
        let transcripts = Transcripts::new(self.store, TranscriptSelection::All);
        let record = session_record(self.store, &c.session_id);
        let base = self.baseline.map(|b| b.session_id.as_str());
        let data = cell_data(&transcripts, &anchor, c, record.as_ref(), base);
        let verdict = if c.passed { "PASS" } else { "FAIL" };
        let row = format!(
            "<tr id=\"{anchor}\" class=\"cell\" tabindex=\"0\" data-variant=\"{}\" data-case=\"{}\" data-trial=\"{}\" data-status=\"{}\" data-tags=\"{}\"{}><td>{verdict}</td><td>{} · {} · t{}</td></tr>\n{}",
            xml(&c.variant),
            xml(&c.case),
            c.trial,
            status_words(c, false, false),
            xml(&cell_tags(record.as_ref())),
            if base.is_some() {
                " data-open-with=\"#baseline\""
            } else {
                ""
            },
            xml(&c.variant),
            xml(&c.case),
            c.trial,
            if data.is_empty() {
                "<tr><td colspan=\"2\">This cell's session is not in the store.</td></tr>"
                    .to_string()
            } else {
                data
            }
        );
        let script = match self.script_src {
            Some(src) => format!("<script src=\"{}\"></script>", xml(src)),
            None => format!("<script>{SCRIPT}</script>"),
        };
        let body = format!("{}<h1>{}</h1>", self.body, xml(self.title));
        transcript_page(self.title, self.head, &body, &row, &script)
    }
}

/// The examples that were this module's doctests (its items are
/// internal, out of doctests' reach).
#[cfg(test)]
mod examples {
    use super::{TranscriptSelection, cell_anchor};

    #[test]
    fn a_selection_is_parsed_or_refused_in_words() {
        assert_eq!(
            "all".parse::<TranscriptSelection>().unwrap(),
            TranscriptSelection::All
        );
        assert_eq!(
            "some"
                .parse::<TranscriptSelection>()
                .unwrap_err()
                .to_string(),
            "SCAFFOLD_REPORT_TRANSCRIPTS=`some` is not one of: all, failing, none"
        );
    }

    #[test]
    fn the_script_pages_the_table_as_the_html_does() {
        let page = format!("var PAGE = {};", super::PAGE_ROWS);
        assert!(super::SCRIPT.contains(&page), "viewer.js: {page}");
    }

    #[test]
    fn anchors_are_slugged_and_names_never_share_one() {
        assert_eq!(
            cell_anchor("qa", "gpt-4o", "case-1", 0),
            "cell-qa-gpt-4o-case-1-t0"
        );
        assert_ne!(
            cell_anchor("qa", "a b", "c", 0),
            cell_anchor("qa", "a-b", "c", 0)
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{TranscriptSelection, Transcripts, cell_data};
    use crate::assert::{Assertion, EvalContext, evaluate};
    use crate::eval::CellRecord;
    use crate::eval::results::AssertionRecord;
    use crate::signal::Signal;
    use crate::store::{SessionMeta, Store};

    /// A session that calls `lookup` then `refund`, and ends.
    fn signals() -> Vec<Signal> {
        let list = [
            ("harness:start", json!({})),
            (
                "tool:call",
                json!({"id": "a", "name": "lookup", "input": {}}),
            ),
            (
                "tool:result",
                json!({"id": "a", "name": "lookup", "result": "ok"}),
            ),
            (
                "tool:call",
                json!({"id": "b", "name": "refund", "input": {"amount": 5}}),
            ),
            (
                "tool:result",
                json!({"id": "b", "name": "refund", "result": "ok"}),
            ),
            ("harness:end", json!({"durationMs": 10})),
        ];
        (list.into_iter().enumerate())
            .map(|(i, (name, payload))| Signal {
                index: i as u64,
                name: name.into(),
                payload,
                at_ms: i as u64,
                agent: None,
            })
            .collect()
    }

    /// What the viewer reads of a cell of the session with `assertions`
    /// and `output`.
    fn data(assertions: Value, output: Value) -> Value {
        let store = Store::in_memory().unwrap();
        store.begin_session(&SessionMeta::new("s1", "wf")).unwrap();
        let signals = signals();
        store.append("s1", &signals).unwrap();
        store.flush().unwrap();
        let mut c = CellRecord::new("v", "case");
        c.session_id = "s1".into();
        c.output = Some(output.clone());
        let ctx = EvalContext::new(&signals).output(output);
        let assertions: Vec<Assertion> = serde_json::from_value(assertions).unwrap();
        c.assertions = (assertions.iter())
            .map(|a| AssertionRecord::from(&evaluate(a, &ctx)))
            .collect();
        let t = Transcripts::new(&store, TranscriptSelection::All);
        let html = cell_data(&t, "cell-x", &c, None, None);
        let json = &html[html.find('>').unwrap() + 1..html.rfind("</script>").unwrap()];
        serde_json::from_str(json).unwrap()
    }

    /// `tool.called` and `tool.notCalled` point at the calls they counted
    /// (every call when none has the name), `output.*` at the run's end,
    /// whose entry shows the output.
    #[test]
    fn tool_and_output_assertions_point_at_the_signals_they_read() {
        let d = data(
            json!([
                {"type": "tool.called", "name": "refund"},
                {"type": "tool.called", "name": "escalate"},
                {"type": "tool.notCalled", "name": "refund"},
                {"type": "tool.notCalled", "name": "delete"},
                {"type": "output.contains", "text": "done"},
                {"type": "output.equals", "value": "refund done"},
            ]),
            json!("refund done"),
        );
        let m: Vec<&Value> = d["assertions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| &a["m"])
            .collect();
        assert_eq!(
            m,
            [
                &json!([3]),
                &json!([1, 3]),
                &json!([3]),
                &json!([1, 3]),
                &json!([5]),
                &json!([5])
            ],
            "{d:#}"
        );
        let end = d["t"]["entries"].as_array().unwrap().last().unwrap();
        assert_eq!(end["t"], "run ended");
        assert_eq!(end["parts"][0], json!({"l": "output", "x": "refund done"}));
    }
}
