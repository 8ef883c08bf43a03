//! The HTML report's transcript viewer, checked as a user would: the page
//! rendered by headless Chromium (DOM after its script ran, screenshots
//! into a temp dir), a failing cell's transcript with its assertions'
//! matched signals highlighted, two variants side by side with the
//! differences marked, keyboard navigation, filters, escaping of model
//! output, and no external URL.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use scaffold::_cargo_scaffold_support::eval::results::{AssertionRecord, ScoreRecord};
use scaffold::_cargo_scaffold_support::eval::{
    CellRecord, CompareOptions, EvalResults, RunConfig, compare,
};
use scaffold::_cargo_scaffold_support::report::html::{
    TranscriptSelection, Transcripts, cell_anchor, render_with_transcripts, session_page,
    session_record_page,
};
use scaffold::_cargo_scaffold_support::report::{self, Format};
use scaffold::assert::{Assertion, EvalContext, evaluate};
use scaffold::signal::Signal;
use scaffold::store::{SessionEnd, SessionMeta, SessionStatus, Store};
use scaffold::workflow::RunStatus;
use serde_json::{Value, json};

use crate::browser::Page;

const EVIL: &str = "</script><img src=x onerror=\"document.title='pwned'\"> done";

fn sig(index: u64, name: &str, payload: Value, agent: Option<&str>) -> Signal {
    Signal {
        index,
        name: name.into(),
        payload,
        at_ms: index * 100,
        agent: agent.map(str::to_string),
    }
}

/// A refund workflow's session: plan, then act with a `refund` tool call
/// of `amount`; the planner's answer is `answer`.
fn session(amount: u64, answer: &str) -> Vec<Signal> {
    let (p, c) = (Some("planner"), Some("clerk"));
    let request = json!({"system": "You plan refunds.", "messages": [{"role": "user", "content": [{"type": "text", "text": "Order 42 arrived broken"}]}], "earlier": 0});
    let list = vec![
        ("harness:start", json!({"state": {"plan": null}}), None),
        (
            "phase:entered",
            json!({"phase": "plan", "occurrence": 1}),
            None,
        ),
        (
            "agent:activated",
            json!({"agent": "planner", "trigger": "phase:entered"}),
            p,
        ),
        (
            "provider:start",
            json!({"provider": "openai", "model": "gpt-4o", "request": request}),
            p,
        ),
        (
            "provider:end",
            json!({"output": answer, "usage": {"inputTokens": 120, "outputTokens": 30}, "costUsd": 0.0012, "durationMs": 850}),
            p,
        ),
        (
            "state:plan:changed",
            json!({"key": "plan", "oldValue": null, "newValue": {"refund": amount}}),
            p,
        ),
        (
            "phase:entered",
            json!({"phase": "act", "occurrence": 1}),
            None,
        ),
        (
            "agent:activated",
            json!({"agent": "clerk", "trigger": "phase:entered"}),
            c,
        ),
        (
            "provider:start",
            json!({"provider": "openai", "model": "gpt-4o"}),
            c,
        ),
        (
            "provider:end",
            json!({"output": {"text": "", "toolCalls": [{"id": "t1", "name": "refund", "arguments": {"amount": amount}}]}, "usage": {"inputTokens": 200, "outputTokens": 12}, "costUsd": 0.002, "durationMs": 400}),
            c,
        ),
        (
            "tool:call",
            json!({"id": "t1", "name": "refund", "input": {"amount": amount}}),
            c,
        ),
        (
            "tool:result",
            json!({"id": "t1", "name": "refund", "result": {"ok": true}, "isError": false}),
            c,
        ),
        ("refund:issued", json!({"amount": amount}), c),
        ("harness:end", json!({"durationMs": 1300}), None),
    ];
    list.into_iter()
        .enumerate()
        .map(|(i, (name, payload, agent))| sig(i as u64, name, payload, agent))
        .collect()
}

fn assertions() -> Vec<Assertion> {
    serde_json::from_value(json!([
        {"type": "signal.trajectory", "patterns": [
            {"pattern": "agent:activated", "payload": {"agent": "planner"}},
            "state:plan:changed",
            {"pattern": "agent:activated", "payload": {"agent": "clerk"}},
        ]},
        {"type": "snapshot.at", "afterSignal": "state:plan:changed", "path": "plan.refund", "value": 50},
        {"type": "tool.calledWith", "name": "refund", "args": {"amount": 50}},
    ]))
    .unwrap()
}

/// A cell of `variant` whose session (stored in `store`) refunds `amount`.
fn cell(store: &Store, variant: &str, amount: u64, answer: &str) -> CellRecord {
    cell_of(store, variant, "refund", amount, answer)
}

/// [`cell`] of case `case`.
fn cell_of(store: &Store, variant: &str, case: &str, amount: u64, answer: &str) -> CellRecord {
    let id = format!("s-{variant}-{case}-{amount}");
    let signals = session(amount, answer);
    let mut meta = SessionMeta::new(&id, "refunds");
    meta.tags = vec!["case:refund".into(), "billing".into()];
    store.begin_session(&meta).unwrap();
    store.append(&id, &signals).unwrap();
    store
        .finish_session(&id, &SessionEnd::new(SessionStatus::Completed))
        .unwrap();
    let mut c = CellRecord::new(variant, case);
    c.session_id = id;
    c.status = RunStatus::Completed;
    let ctx = EvalContext::new(&signals);
    c.assertions = assertions()
        .iter()
        .map(|a| AssertionRecord::from(&evaluate(a, &ctx)))
        .collect();
    c.passed = c.assertions.iter().all(|a| a.passed);
    c
}

/// Two variants of one case (`gpt-4o` refunds 500 and fails, `claude`
/// refunds 50 and passes), plus a passing case of each.
fn fixture() -> (Store, EvalResults) {
    let store = Store::in_memory().unwrap();
    let mut cells = vec![
        cell(&store, "gpt-4o", 500, EVIL),
        cell(&store, "claude", 50, "Refund 50 for the broken item."),
    ];
    for v in ["gpt-4o", "claude"] {
        let mut c = CellRecord::new(v, "greeting");
        c.passed = true;
        cells.push(c);
    }
    store.flush().unwrap();
    let config = RunConfig {
        trials: 1,
        inputs: 2,
        variants: vec!["gpt-4o".into(), "claude".into()],
        scorers: vec![],
        min_pass_rate: 1.0,
    };
    (
        store,
        EvalResults::new("refunds", "2026-01-28T12:00:00Z", config, cells),
    )
}

fn page(selection: TranscriptSelection) -> String {
    let (store, results) = fixture();
    render_with_transcripts(&results, None, &Transcripts::new(&store, selection))
}

const FAILING: &str = "cell-refunds-gpt-4o-refund-t0";
const PASSING: &str = "cell-refunds-claude-refund-t0";

// ---------------------------------------------------------------- the page as text

#[test]
fn failing_cells_and_their_siblings_are_embedded_by_default() {
    let html = page(TranscriptSelection::Failing);
    assert!(html.contains(&format!("id=\"t-{FAILING}\"")));
    assert!(
        html.contains(&format!("id=\"t-{PASSING}\"")),
        "the sibling, for side by side"
    );
    assert!(!html.contains("id=\"t-cell-refunds-claude-greeting-t0\""));
    let all = page(TranscriptSelection::All);
    let none = page(TranscriptSelection::None);
    assert_eq!(
        all.matches("type=\"application/json\"").count(),
        2,
        "greeting cells have no session"
    );
    assert_eq!(none.matches("type=\"application/json\"").count(), 0);
    // The summary links to the failing cell; the row has the anchor.
    assert!(html.contains(&format!(
        "<a href=\"#{FAILING}\"><code>gpt-4o::refund</code></a>"
    )));
    assert!(html.contains(&format!("<tr id=\"{FAILING}\" class=\"cell failed\"")));
    assert!(html.contains("data-tags=\"[&quot;billing&quot;]\""));
    // Rendering without a store keeps anchors and links, embeds nothing.
    let (_, results) = fixture();
    let plain = report::render(Format::Html, &results, None);
    assert!(plain.contains(&format!("<tr id=\"{FAILING}\"")));
    assert!(!plain.contains("application/json"));
}

#[test]
fn model_output_cannot_close_the_script_or_inject_markup() {
    let html = page(TranscriptSelection::All);
    // One closing tag per script element: the data's `</script>` is escaped.
    assert_eq!(
        html.matches("<script").count(),
        html.matches("</script>").count()
    );
    assert!(!html.contains("<img src=x"));
    assert!(html.contains("\\u003c/script\\u003e\\u003cimg src=x onerror="));
}

#[test]
fn the_page_fetches_nothing() {
    let html = page(TranscriptSelection::All);
    for attr in ["src=\"", "href=\"", "src='", "href='"] {
        for (i, _) in html.match_indices(attr) {
            let value = &html[i + attr.len()..];
            assert!(
                value.starts_with('#'),
                "external {attr}: {}",
                &value[..40.min(value.len())]
            );
        }
    }
    // The SVG namespace is a name, not a fetch.
    let html = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for fetch in ["@import", "url(", "http://", "https://"] {
        assert!(!html.contains(fetch), "the report loads something: {fetch}");
    }
}

#[test]
fn a_bad_transcript_selection_names_the_variable_and_the_values() {
    let e = "most".parse::<TranscriptSelection>().unwrap_err();
    assert_eq!(
        e.to_string(),
        "SCAFFOLD_REPORT_TRANSCRIPTS=`most` is not one of: all, failing, none"
    );
    assert_eq!("ALL".parse(), Ok(TranscriptSelection::All));
    assert_eq!("none".parse(), Ok(TranscriptSelection::None));
}

#[test]
fn anchors_are_slugged_and_stay_unique() {
    assert_eq!(cell_anchor("qa", "gpt-4o", "c1", 2), "cell-qa-gpt-4o-c1-t2");
    let odd = cell_anchor("q a", "<v>", "auth & roles", 0);
    assert!(
        odd.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
        "{odd}"
    );
    assert_ne!(
        cell_anchor("qa", "a b", "c", 0),
        cell_anchor("qa", "a_b", "c", 0)
    );
}

/// Bytes a transcript adds per embedded cell (printed for docs/ci.md).
#[test]
fn bytes_per_cell_are_bounded() {
    let none = page(TranscriptSelection::None).len();
    let all = page(TranscriptSelection::All).len();
    let per_cell = (all - none) / 2;
    eprintln!("transcript bytes per embedded cell (14 signals): {per_cell}");
    assert!(per_cell < 20_000, "{per_cell}");
    // A huge answer is cut with a visible marker.
    let store = Store::in_memory().unwrap();
    let big = "x".repeat(100_000);
    let mut c = cell(&store, "gpt-4o", 500, &big);
    c.passed = false;
    store.flush().unwrap();
    let config = RunConfig {
        trials: 1,
        inputs: 1,
        variants: vec!["gpt-4o".into()],
        scorers: vec![],
        min_pass_rate: 1.0,
    };
    let results = EvalResults::new("big", "2026-01-28T12:00:00Z", config, vec![c]);
    let html = render_with_transcripts(
        &results,
        None,
        &Transcripts::new(&store, TranscriptSelection::All),
    );
    assert!(html.contains("[truncated: 96000 more characters]"));
    assert!(html.len() < 40_000 + none, "{}", html.len());
}

// ---------------------------------------------------------------- in Chromium

/// A temp dir for a Chromium run (or for screenshots, which are kept).
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("scaffold-viewer-{name}-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("profile")).unwrap();
    dir
}

/// Run headless Chromium on `html` (with `script` run after the page's own)
/// at `#hash` and return its DOM, or `None` when Chromium is missing outside
/// CI. `screenshot`: write a PNG there instead.
fn chromium(
    name: &str,
    html: &str,
    script: &str,
    hash: &str,
    screenshot: Option<&Path>,
) -> Option<String> {
    let chromium = crate::browser::chromium()?;
    let dir = temp_dir(name);
    let page = dir.join("report.html");
    let html = html.replace("</body>", &format!("<script>{script}</script>\n</body>"));
    std::fs::write(&page, html).unwrap();
    let mut cmd = Command::new(chromium);
    cmd.args(crate::browser::FLAGS)
        .arg("--virtual-time-budget=2000")
        .arg(format!("--user-data-dir={}", dir.join("profile").display()));
    match screenshot {
        Some(png) => cmd
            .arg(format!("--screenshot={}", png.display()))
            .arg("--window-size=1280,1400"),
        None => cmd.arg("--dump-dom"),
    };
    let started = Instant::now();
    let output = cmd
        .arg(format!("file://{}{hash}", page.display()))
        .output()
        .expect("chromium runs");
    eprintln!("chromium {name}: {:?}", started.elapsed());
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The page stays with SCAFFOLD_KEEP_PAGES set (to open it by hand).
    if std::env::var_os("SCAFFOLD_KEEP_PAGES").is_some() {
        let _ = std::fs::remove_dir_all(dir.join("profile"));
        eprintln!("page: {}", page.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The outer HTML of the element with `id` in `dom`, up to its row's end.
fn detail_after<'d>(dom: &'d str, anchor: &str) -> &'d str {
    let start = dom.find(&format!("id=\"{anchor}\"")).expect("the row");
    let rest = &dom[start..];
    let detail = rest
        .find("<tr class=\"detail\"")
        .expect("an open transcript");
    let end = rest[detail..]
        .find("</tr>")
        .map_or(rest.len(), |e| detail + e);
    &rest[detail..end]
}

#[test]
fn a_failing_cell_opens_with_its_transcript_and_matched_signals() {
    let html = page(TranscriptSelection::Failing);
    let Some(dom) = chromium("failing", &html, "", &format!("#{FAILING}"), None) else {
        return;
    };
    let detail = detail_after(&dom, FAILING);
    // The timeline, in order, with what each step carried.
    for text in [
        "phase plan",
        "planner activated",
        "You plan refunds.",
        "Order 42 arrived broken",
        "120 in · 30 out tokens · $0.0012 · 850 ms",
        "state plan changed",
        "tool refund",
        "\"amount\": 500",
        "refund:issued",
        "run ended",
    ] {
        assert!(detail.contains(text), "missing {text:?} in {detail}");
    }
    // The model's answer arrives as text, not markup.
    assert!(
        detail.contains("&lt;/script&gt;&lt;img src=x onerror="),
        "{detail}"
    );
    assert!(!dom.contains("<title>pwned"));
    // The diff of the state change.
    assert!(
        detail.contains("<span class=\"line del\">- null"),
        "{detail}"
    );
    assert!(
        detail.contains("<span class=\"line add\">+   \"refund\": 500"),
        "{detail}"
    );
    // Verdicts, and the failing assertions' signals highlighted: the
    // snapshot's signal (#5) and the compared refund call (#10, #11).
    assert_eq!(detail.matches("class=\"assertion pass\"").count(), 1);
    assert_eq!(detail.matches("class=\"assertion fail\"").count(), 2);
    let matched: Vec<&str> = detail
        .match_indices("matched\" data-i=\"")
        .map(|(i, m)| {
            let rest = &detail[i + m.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    assert_eq!(matched, ["5", "10 11"], "{detail}");
}

#[test]
fn two_variants_side_by_side_mark_what_differs() {
    let html = page(TranscriptSelection::Failing);
    let script = format!(
        "document.getElementById('{FAILING}').click();\
         var s = document.querySelector('.t-compare'); s.value = '{PASSING}';\
         s.dispatchEvent(new Event('change'));"
    );
    let Some(dom) = chromium("sbs", &html, &script, "", None) else {
        return;
    };
    let detail = detail_after(&dom, FAILING);
    assert!(detail.contains("<div class=\"sbs\">"), "{detail}");
    assert!(detail.contains("<div class=\"col\">gpt-4o</div><div class=\"col\">claude</div>"));
    // Aligned by phase: one row per phase, both columns.
    assert_eq!(detail.matches("class=\"sbs-phase\"").count(), 3, "{detail}");
    // The answers, the state, the call and the signal differ; the phase
    // and agent steps do not.
    let differs = detail.matches("differs").count();
    assert_eq!(differs, 2 * 5, "{detail}");
    // The failing assertions' signals are highlighted on this cell's side only.
    assert_eq!(detail.matches(" matched").count(), 2, "{detail}");
    assert!(detail.contains("Refund 50 for the broken item."));
}

#[test]
fn keys_move_between_cells_and_enter_opens_one() {
    let html = page(TranscriptSelection::All);
    let script = "function key(k) { (document.activeElement || document.body).dispatchEvent(new KeyboardEvent('keydown', {key: k, bubbles: true})); }\
         key('j'); key('j'); key('Enter');\
         document.body.setAttribute('data-focused', document.activeElement.id);\
         var f = document.getElementById('filter-status'); f.value = 'fail'; f.dispatchEvent(new Event('change'));\
         document.body.setAttribute('data-shown', document.getElementById('filter-count').textContent);";
    let Some(dom) = chromium("keys", &html, script, "", None) else {
        return;
    };
    // Rows: gpt-4o's greeting, gpt-4o's refund, claude's greeting, claude's refund.
    assert!(
        dom.contains(&format!("data-focused=\"{FAILING}\"")),
        "{dom}"
    );
    assert!(detail_after(&dom, FAILING).contains("class=\"timeline\""));
    assert_eq!(dom.matches("<tr class=\"detail\"").count(), 1);
    assert!(dom.contains("data-shown=\"1 of 4 cells\""));
}

#[test]
fn search_filters_and_highlights_within_a_transcript() {
    let html = page(TranscriptSelection::All);
    let script = format!(
        "document.getElementById('{FAILING}').click();\
         var s = document.querySelector('.t-search'); s.value = 'broken';\
         s.dispatchEvent(new Event('input'));"
    );
    let Some(dom) = chromium("search", &html, &script, "", None) else {
        return;
    };
    let detail = detail_after(&dom, FAILING);
    assert!(detail.contains("<mark>broken</mark>"), "{detail}");
    assert!(detail.contains("nomatch\" data-i=\"10 11\""), "{detail}");
    assert!(!detail.contains("nomatch\" data-i=\"3 4\""), "{detail}");
}

/// Screenshots for a person to look at (kept in the temp dir printed).
#[test]
fn screenshots_of_a_failing_transcript_and_of_side_by_side() {
    let html = page(TranscriptSelection::Failing);
    let dir = temp_dir("shots");
    let one = dir.join("failing.png");
    let sbs = dir.join("side-by-side.png");
    // Opened by a click, with the sections above the cells hidden: headless
    // screenshots show the top of the page.
    let open = format!(
        "document.getElementById('{FAILING}').click();\
         [].forEach.call(document.querySelectorAll('body > header, body > nav, body > section:not(#cells)'),\
           function (e) {{ e.style.display = 'none'; }});\
         window.scrollTo(0, 0);"
    );
    if chromium("shot-failing", &html, &open, "", Some(&one)).is_none() {
        return;
    }
    let compare = format!(
        "{open} var s = document.querySelector('.t-compare'); s.value = '{PASSING}';\
         s.dispatchEvent(new Event('change'));"
    );
    chromium("shot-sbs", &html, &compare, "", Some(&sbs));
    for png in [&one, &sbs] {
        let bytes = std::fs::read(png).unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "{}", png.display());
        assert!(bytes.len() > 20_000, "a blank page? {}", png.display());
        eprintln!("screenshot: {}", png.display());
    }
}

#[test]
fn the_session_page_shows_one_transcript() {
    let signals = session(500, EVIL);
    let html = session_page("s-1", &signals);
    let Some(dom) = chromium("session", &html, "", "", None) else {
        return;
    };
    assert!(dom.contains("<title>Session s-1 · scaffold</title>"));
    assert!(dom.contains("class=\"timeline\""), "{dom}");
    assert!(dom.contains("tool refund"));
}

#[test]
fn the_baseline_transcript_stands_beside_a_regression() {
    let (store, results) = fixture();
    // The baseline: the same cells, with gpt-4o's refund passing (the
    // claude session stands in for it).
    let mut base = results.clone();
    for c in &mut base.results {
        c.passed = true;
        if c.variant == "gpt-4o" && c.case == "refund" {
            c.session_id = "s-claude-refund-50".into();
        }
    }
    let cmp = compare(&base, &results, &CompareOptions::default());
    assert!(!cmp.regressions.is_empty());
    let t = Transcripts::new(&store, TranscriptSelection::Failing).baseline(&base);
    let html = render_with_transcripts(&results, Some(&cmp), &t);
    assert!(html.contains("<div class=\"jump-regressed\">"));
    assert!(html.contains("data-status=\"fail regressed\""));
    let script = format!(
        "document.getElementById('{FAILING}').click();\
         var s = document.querySelector('.t-compare'); s.value = '#baseline';\
         s.dispatchEvent(new Event('change'));"
    );
    let Some(dom) = chromium("baseline", &html, &script, "", None) else {
        return;
    };
    let detail = detail_after(&dom, FAILING);
    assert!(
        detail.contains("<div class=\"col\">gpt-4o</div><div class=\"col\">baseline</div>"),
        "{detail}"
    );
    assert!(detail.contains("Refund 50 for the broken item."));
}

#[test]
fn the_markdown_summary_links_failed_cells_to_their_anchor() {
    let (store, results) = fixture();
    let md = report::markdown::render_linked(&results, None, "refunds report.html");
    let link = format!("| [`gpt-4o::refund`](refunds%20report.html#{FAILING}) |");
    assert!(md.contains(&link), "{md}");
    // The anchor is the failing row's id in the page.
    let html = render_with_transcripts(
        &results,
        None,
        &Transcripts::new(&store, TranscriptSelection::Failing),
    );
    assert!(html.contains(&format!("<tr id=\"{FAILING}\"")));
    // Without a report path, no link.
    assert!(report::render(Format::Markdown, &results, None).contains("| `gpt-4o::refund` |"));
}

/// A cell whose session was forked says from which session and where,
/// in its transcript and on the session's own page.
#[test]
fn a_forked_sessions_transcript_shows_its_parent_and_fork_point() {
    let (store, mut results) = fixture();
    let forked = "s-forked";
    let mut meta = SessionMeta::new(forked, "refunds");
    meta.parent_id = Some("s-gpt-4o-refund-500".into());
    meta.fork_point =
        Some(json!({"phase": "act", "occurrence": "first", "eventIndex": 6, "resumeAt": "act"}));
    store.begin_session(&meta).unwrap();
    let signals = session(500, "forked");
    store.append(forked, &signals).unwrap();
    store.flush().unwrap();
    let cell = (results.results.iter_mut())
        .find(|c| c.variant == "gpt-4o" && c.case == "refund")
        .unwrap();
    cell.session_id = forked.into();
    let html = render_with_transcripts(
        &results,
        None,
        &Transcripts::new(&store, TranscriptSelection::All),
    );
    let Some(dom) = chromium("forked", &html, "", &format!("#{FAILING}"), None) else {
        return;
    };
    let lineage =
        "forked from session s-gpt-4o-refund-500 at signal #6 (phase act, first; resumes at act)";
    let detail = detail_after(&dom, FAILING);
    assert!(detail.contains(lineage), "{detail}");
    let record = store.session(forked).unwrap().unwrap();
    let page = session_record_page(&record, &signals);
    let Some(dom) = chromium("forked-session", &page, "", "", None) else {
        return;
    };
    assert!(dom.contains(lineage), "{dom}");
}

/// `/` with no transcript open focuses the cells' search, and what is
/// typed there filters the cells (it used to focus the Variant select,
/// where typing did nothing).
#[test]
fn slash_focuses_a_search_of_the_cells() {
    let html = page(TranscriptSelection::All);
    let Some(mut page) = Page::open("slash", &[("report.html", &html)]) else {
        return;
    };
    page.press("/");
    assert_eq!(
        page.eval("document.activeElement.id"),
        json!("filter-search")
    );
    page.type_text("refund");
    assert_eq!(
        page.eval("document.getElementById('filter-count').textContent"),
        json!("2 of 4 cells")
    );
    let shown = "[].filter.call(document.querySelectorAll('tr.cell'), function (r) { return !r.hidden; })\
         .map(function (r) { return r.getAttribute('data-case'); }).join(' ')";
    assert_eq!(page.eval(shown), json!("refund refund"));
    // Escape leaves the search; `j` moves among the cells it shows.
    page.press("Escape");
    page.press("j");
    assert_eq!(page.eval("document.activeElement.id"), json!(FAILING));
    // With a transcript open, `/` searches in it.
    page.press("Enter");
    page.press("/");
    assert_eq!(
        page.eval("document.activeElement.className"),
        json!("t-search")
    );
}

/// 250 cells: a page of 100 rows at a time, in the HTML (so that Chromium
/// lays out no more) and as filters, `j` and links move; every row is in
/// the file for a reader without scripts.
#[test]
fn a_long_table_is_shown_a_page_at_a_time() {
    let cells: Vec<CellRecord> = (0..250)
        .map(|i| {
            let mut c = CellRecord::new("v", format!("case-{i:03}"));
            c.passed = i % 50 != 7;
            c
        })
        .collect();
    let config = RunConfig {
        trials: 1,
        inputs: 250,
        variants: vec!["v".into()],
        scorers: vec![],
        min_pass_rate: 1.0,
    };
    let results = EvalResults::new("long", "2026-01-28T12:00:00Z", config, cells);
    let html = report::render(Format::Html, &results, None);
    assert_eq!(html.matches("<tr id=\"cell-").count(), 250);
    assert_eq!(
        html.matches("class=\"cell passed\" hidden").count()
            + html.matches("class=\"cell failed\" hidden").count(),
        150
    );
    assert!(html.contains("<noscript>"), "every row without scripts");
    let shown = "[].filter.call(document.querySelectorAll('tr.cell'), function (r) { return !r.hidden; })\
         .map(function (r) { return r.getAttribute('data-case'); })";
    let Some(mut page) =
        Page::open_at("paged", &[("long.html", &html)], "#cell-long-v-case-180-t0")
    else {
        return;
    };
    // The link's row is on the second page, open and focused.
    let on_view = page.eval(shown);
    assert_eq!(on_view.as_array().unwrap().len(), 100);
    assert_eq!(on_view[0], json!("case-100"));
    assert_eq!(
        page.eval("document.activeElement.id"),
        json!("cell-long-v-case-180-t0")
    );
    assert_eq!(
        page.eval("document.querySelectorAll('tr.detail').length"),
        json!(1)
    );
    assert!(
        page.eval("document.querySelector('.pager').textContent")
            .as_str()
            .unwrap()
            .contains("101–200 of 250")
    );
    // Filtered: the five failing cells, one page.
    page.eval("var f = document.getElementById('filter-status'); f.value = 'fail'; f.dispatchEvent(new Event('change')); true");
    assert_eq!(
        page.eval(&format!("{shown}.join(' ')")),
        json!("case-007 case-057 case-107 case-157 case-207")
    );
    // Cleared: the first page again; `j` past its last row turns the page.
    page.eval("var f = document.getElementById('filter-status'); f.value = ''; f.dispatchEvent(new Event('change')); true");
    assert_eq!(page.eval(&format!("{shown}.length")), json!(100));
    page.eval("document.getElementById('cell-long-v-case-099-t0').focus(); true");
    page.press("j");
    assert_eq!(
        page.eval("document.activeElement.id"),
        json!("cell-long-v-case-100-t0")
    );
    assert_eq!(page.eval(&format!("{shown}[0]")), json!("case-100"));
    page.press("k");
    assert_eq!(
        page.eval("document.activeElement.id"),
        json!("cell-long-v-case-099-t0")
    );
    assert_eq!(page.eval(&format!("{shown}[99]")), json!("case-099"));
}

/// 10,000 cells, 1% failing, of two variants scored by two scorers (so
/// four plots, three of them a value per cell): the default embeds the
/// failing cells and their siblings only. Printed (docs/ci.md): the page's
/// size, how long Chromium takes to load it (navigation to the first frame
/// after load), to clear a filter and to move to the next cell with `j`.
#[test]
fn ten_thousand_cells_stay_usable() {
    let store = Store::in_memory().unwrap();
    let mut cells = Vec::new();
    for case in 0..5_000u32 {
        for (v, amount) in [("gpt-4o", 500), ("claude", 50)] {
            let name = format!("case-{case:04}");
            let mut c = if case % 100 == 0 {
                cell_of(&store, v, &name, amount, "Refund it.")
            } else {
                let mut c = CellRecord::new(v, name);
                c.passed = true;
                c
            };
            c.metrics.latency_ms = 800 + u64::from(case * 37 % 900);
            c.metrics.cost_usd = 0.001 + f64::from(case % 17) * 0.0001;
            for (scorer, spread) in [("quality", 13), ("relevance", 7)] {
                let value = f64::from((case * 31 + amount as u32) % spread) / f64::from(spread);
                c.scores.insert(
                    scorer.into(),
                    ScoreRecord {
                        pass: value >= 0.3,
                        value,
                        unit: None,
                        detail: Some(format!("{scorer} {value:.2}")),
                        borderline: false,
                    },
                );
            }
            cells.push(c);
        }
    }
    store.flush().unwrap();
    let config = RunConfig {
        trials: 1,
        inputs: 5_000,
        variants: vec!["gpt-4o".into(), "claude".into()],
        scorers: vec!["quality".into(), "relevance".into()],
        min_pass_rate: 1.0,
    };
    let results = EvalResults::new("big", "2026-01-28T12:00:00Z", config, cells);
    let started = Instant::now();
    let t = Transcripts::new(&store, TranscriptSelection::Failing);
    let html = render_with_transcripts(&results, None, &t);
    let rendered = started.elapsed();
    assert_eq!(html.matches("type=\"application/json\"").count(), 100);
    let plain = report::render(Format::Html, &results, None);
    let plots = html
        .find("<section id=\"plots\">")
        .map_or(0, |start| html[start..].find("</section>").unwrap_or(0));
    eprintln!(
        "10,000 cells: {} bytes ({} without transcripts, {} bytes per cell, {plots} of plots), rendered in {rendered:.2?}",
        html.len(),
        plain.len(),
        plain.len() / 10_000
    );
    assert!(html.len() < 12_000_000, "{}", html.len());
    let Some(mut page) = Page::open("big", &[("big.html", &html)]) else {
        return;
    };
    let load = page.loaded_ms;
    // A filter set, then cleared.
    page.eval(
        "var f = document.getElementById('filter-status'); f.value = 'fail';\
         f.dispatchEvent(new Event('change')); true",
    );
    page.next_frame();
    let clear = page.time(|p| {
        p.eval(
            "var f = document.getElementById('filter-status'); f.value = '';\
             f.dispatchEvent(new Event('change')); true",
        );
    });
    let shown = page.eval("document.getElementById('filter-count').textContent");
    assert_eq!(shown, json!("10000 of 10000 cells"));
    // Rows go variant by variant: gpt-4o's cases first.
    page.press("j");
    let j = page.time(|p| p.press("j"));
    let focused = page.eval("document.activeElement.id");
    assert_eq!(focused, json!("cell-big-gpt-4o-case-0001-t0"));
    // Opening a failing cell's transcript by its link (the summary's).
    let failing = "cell-big-gpt-4o-case-0100-t0";
    let open = page.time(|p| {
        p.eval(&format!("location.hash = '#{failing}'; true"));
    });
    let dom = page.dom();
    assert!(detail_after(&dom, failing).contains("class=\"timeline\""));
    eprintln!(
        "10,000 cells in Chromium: loaded in {load:.0} ms, a filter cleared in {clear:.0} ms, \
         `j` in {j:.0} ms, a transcript opened in {open:.0} ms"
    );
    // The target (#39): a 10,000-cell page loads within 3 s. It
    // takes about 0.7 s here on a loaded 2-core machine.
    assert!(load < 3_000.0, "loaded in {load:.0} ms");
}

#[test]
fn an_assertion_clicked_highlights_its_own_signals() {
    let html = page(TranscriptSelection::Failing);
    let script = format!(
        "document.getElementById('{FAILING}').click();\
         document.querySelector('li.assertion.pass').click();"
    );
    let Some(dom) = chromium("assertion", &html, &script, "", None) else {
        return;
    };
    let detail = detail_after(&dom, FAILING);
    let matched: Vec<&str> = detail
        .match_indices("matched\" data-i=\"")
        .map(|(i, m)| {
            let rest = &detail[i + m.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    // The trajectory's steps: the planner, the plan, the clerk.
    assert_eq!(matched, ["2", "5", "7"], "{detail}");
}

/// Transcripts load lazily: each is inert JSON, read and drawn when its
/// cell is opened, so 10,000 cells with every transcript embedded
/// (`SCAFFOLD_REPORT_TRANSCRIPTS=all`) load about as fast as with none.
/// Printed (docs/ci.md): the page's size and load and open times.
#[test]
fn every_transcript_of_ten_thousand_cells_is_read_only_when_opened() {
    let store = Store::in_memory().unwrap();
    let mut cells = Vec::new();
    for case in 0..5_000u32 {
        for (v, amount) in [("gpt-4o", 500), ("claude", 50)] {
            cells.push(cell_of(
                &store,
                v,
                &format!("case-{case:04}"),
                amount,
                "Refund it.",
            ));
        }
    }
    store.flush().unwrap();
    let config = RunConfig {
        trials: 1,
        inputs: 5_000,
        variants: vec!["gpt-4o".into(), "claude".into()],
        scorers: vec![],
        min_pass_rate: 1.0,
    };
    let results = EvalResults::new("big", "2026-01-28T12:00:00Z", config, cells);
    let t = Transcripts::new(&store, TranscriptSelection::All);
    let html = render_with_transcripts(&results, None, &t);
    assert_eq!(html.matches("type=\"application/json\"").count(), 10_000);
    let Some(mut page) = Page::open("all", &[("all.html", &html)]) else {
        return;
    };
    let cell = "cell-big-gpt-4o-case-4100-t0";
    let open = page.time(|p| {
        p.eval(&format!("location.hash = '#{cell}'; true"));
    });
    assert!(detail_after(&page.dom(), cell).contains("class=\"timeline\""));
    eprintln!(
        "10,000 cells, every transcript: {} bytes, loaded in {:.0} ms, a transcript opened in {open:.0} ms",
        html.len(),
        page.loaded_ms
    );
}
