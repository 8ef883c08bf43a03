//! Model outputs, tool results, dataset inputs and every name a run
//! carries are untrusted text: on every static page (an eval's report with
//! its transcripts, the run's index, a session's page) they stay text. The
//! pages are opened in Chromium with every kind of markup and script in
//! them, every transcript opened, compared and searched for them, and
//! nothing they carry may run, nor become an element, an event handler
//! or a `javascript:` link.

use serde_json::json;

use scaffold::_cargo_scaffold_support::eval::results::{AssertionRecord, ScoreRecord};
use scaffold::_cargo_scaffold_support::eval::{CellRecord, EvalResults, RunConfig};
use scaffold::_cargo_scaffold_support::report::Format;
use scaffold::_cargo_scaffold_support::report::html::{
    INDEX_FILE, IndexEntry, Page, TranscriptSelection, Transcripts, render_index,
    session_record_page,
};
use scaffold::signal::Signal;
use scaffold::store::{SessionEnd, SessionMeta, SessionStatus, Store};
use scaffold::workflow::RunStatus;

use crate::browser;

/// Text that runs `window.pwned = '{tag}'` wherever it becomes markup, a
/// script's text, an attribute's value or a link followed.
fn evil(tag: &str) -> String {
    format!(
        "</script><script>window.pwned='{tag}-script'</script>\
         <img src=x onerror=\"window.pwned='{tag}-img'\">\
         \"><svg onload=\"window.pwned='{tag}-attr'\">\
         <a href=\"javascript:window.pwned='{tag}-link'\">link</a>\
         </style></textarea><!-- <iframe src=\"javascript:parent.pwned='{tag}-frame'\"></iframe>\n\
         javascript:window.pwned='{tag}-bare'"
    )
}

/// The assertion tests' signal, with its payload and agent.
use crate::assertions::sig as signal;

/// A session in which every text a model, a tool or the state can carry
/// is [`evil`].
fn session() -> Vec<Signal> {
    let agent = Some("agent</script><img src=x onerror=\"window.pwned='agent'\">");
    vec![
        signal(
            0,
            "harness:start",
            json!({"state": {"notes": evil("state0")}}),
            None,
        ),
        signal(
            1,
            "phase:entered",
            json!({"phase": evil("phase"), "occurrence": 1}),
            None,
        ),
        signal(
            2,
            "agent:activated",
            json!({"agent": evil("agent-name"), "trigger": evil("trigger")}),
            agent,
        ),
        signal(
            3,
            "provider:start",
            json!({"provider": evil("provider"), "model": evil("model"), "request": {
                "system": evil("system"),
                "messages": [{"role": evil("role"), "content": [{"type": "text", "text": evil("input")}]}],
            }}),
            agent,
        ),
        signal(
            4,
            "provider:end",
            json!({"output": {"text": evil("answer"), "toolCalls": [{"id": "t1", "name": evil("call"), "arguments": {"x": evil("args")}}]}}),
            agent,
        ),
        signal(
            5,
            "tool:call",
            json!({"id": "t1", "name": evil("tool"), "input": {"path": evil("tool-input")}}),
            agent,
        ),
        signal(
            6,
            "tool:result",
            json!({"id": "t1", "name": evil("tool"), "result": evil("tool-result"), "isError": true}),
            agent,
        ),
        signal(
            7,
            "state:notes:changed",
            json!({"key": "notes", "oldValue": evil("old"), "newValue": {"file": evil("new")}}),
            agent,
        ),
        signal(
            8,
            &format!("custom:{}", evil("signal-name")),
            json!({"x": evil("custom")}),
            agent,
        ),
        signal(9, "error:output", json!({"message": evil("error")}), agent),
        signal(10, "harness:end", json!({"durationMs": 5}), None),
    ]
}

/// The stored session `id`, forked from a parent of an [`evil`] name at an
/// [`evil`] point, with [`evil`] tags.
fn store_session(store: &Store, id: &str) {
    let mut meta = SessionMeta::new(id, evil("workflow"));
    meta.tags = vec![evil("tag"), "case:x".into()];
    meta.parent_id = Some(evil("parent"));
    meta.fork_point =
        Some(json!({"phase": evil("fork-phase"), "where": evil("fork-where"), "eventIndex": 3}));
    store.begin_session(&meta).unwrap();
    store.append(id, &session()).unwrap();
    store
        .finish_session(id, &SessionEnd::new(SessionStatus::Completed))
        .unwrap();
}

/// Two variants of two cases, every name and text [`evil`].
fn results(store: &Store) -> EvalResults {
    let variants = [evil("variant-a"), evil("variant-b")];
    let cases = [evil("case-1"), evil("case-2")];
    let mut cells = Vec::new();
    for (v, variant) in variants.iter().enumerate() {
        for (c, case) in cases.iter().enumerate() {
            let id = format!("s-{v}-{c}");
            store_session(store, &id);
            let mut cell = CellRecord::new(variant.clone(), case.clone());
            cell.session_id = id;
            cell.dataset = evil("dataset");
            cell.input = json!({"question": evil("dataset-input")});
            cell.output = Some(json!(evil("output")));
            cell.passed = c == 0;
            cell.status = RunStatus::Failed;
            cell.error = (c == 1).then(|| evil("run-error"));
            cell.metrics.latency_ms = 100;
            cell.metrics.cost_usd = 0.001;
            cell.scores.insert(
                evil("scorer"),
                ScoreRecord {
                    pass: c == 0,
                    value: 0.5,
                    unit: None,
                    detail: Some(evil("score-detail")),
                    borderline: false,
                },
            );
            cell.assertions.push(AssertionRecord {
                assertion: json!({"type": "output.contains", "text": evil("assertion")}),
                passed: c == 0,
                message: evil("message"),
                expected: Some(json!(evil("expected"))),
                actual: Some(json!(evil("actual"))),
                trajectory: Some(vec![evil("trajectory")]),
                children: Vec::new(),
                borderline: false,
            });
            cells.push(cell);
        }
    }
    store.flush().unwrap();
    let config = RunConfig {
        trials: 1,
        inputs: 2,
        variants: variants.to_vec(),
        scorers: vec![evil("scorer")],
        min_pass_rate: 0.5,
    };
    EvalResults::new(
        format!("untrusted{}", evil("eval")),
        evil("timestamp"),
        config,
        cells,
    )
}

/// What may not be in a page's DOM, as a list of findings (empty: none):
/// an element no page makes (`img`, `iframe`, …), an event handler
/// attribute, a `javascript:` link, or a script other than the page's own
/// and its inert JSON; and whether anything set `window.pwned`.
const AUDIT: &str = r#"(function () {
  var found = [];
  if (window.pwned !== undefined) found.push('ran: ' + window.pwned);
  [].forEach.call(document.querySelectorAll('*'), function (e) {
    var tag = e.tagName.toLowerCase();
    if (['img', 'iframe', 'object', 'embed', 'form', 'base', 'meta'].indexOf(tag) >= 0 && !(tag === 'meta' && e.parentNode === document.head)) found.push('element ' + tag);
    [].forEach.call(e.attributes, function (a) {
      if (/^on/i.test(a.name)) found.push('handler ' + a.name + ' on ' + tag);
      if (/^\s*javascript:/i.test(a.value) && (a.name === 'href' || a.name === 'src' || a.name === 'action')) found.push(a.name + ' ' + a.value);
    });
    if (tag === 'script' && e.type !== 'application/json' && !/^\(function \(\) \{|^document\.getElementById\('session-/.test(e.textContent)) found.push('script ' + e.textContent.slice(0, 60));
  });
  [].forEach.call(document.querySelectorAll('svg'), function (s) {
    if (!/^plot-/.test(s.id)) found.push('svg ' + s.outerHTML.slice(0, 60));
  });
  return found;
})()"#;

/// Open every transcript of the page, compare each with its siblings,
/// search the cells and each transcript for the markup.
const USE_EVERY_PART: &str = r#"(function () {
  function detail(r) {
    var d = r.nextElementSibling;
    while (d && d.tagName === 'SCRIPT') d = d.nextElementSibling;
    return d && d.classList.contains('detail') ? d : null;
  }
  [].forEach.call(document.querySelectorAll('tr.cell'), function (r) {
    if (!detail(r)) r.click();
    var d = detail(r);
    if (!d) return;
    [].forEach.call(d.querySelectorAll('li.assertion'), function (a) { a.click(); });
    var compare = d.querySelector('.t-compare');
    if (compare) {
      [].forEach.call(compare.options, function (o) {
        compare.value = o.value;
        compare.dispatchEvent(new Event('change'));
      });
    }
    [].forEach.call(d.querySelectorAll('details'), function (x) { x.open = true; });
    var search = d.querySelector('.t-search');
    if (search) { search.value = 'onerror'; search.dispatchEvent(new Event('input')); }
  });
  var all = document.getElementById('filter-search');
  if (all) { all.value = '<img'; all.dispatchEvent(new Event('input')); }
  return document.querySelectorAll('tr.detail').length;
})()"#;

/// `page` (with `others` beside it) opened in Chromium, used, and audited:
/// nothing found; `opened`: how many transcripts it should have opened.
fn audit(name: &str, page: &str, others: &[(&str, &str)], opened: u64) {
    let mut pages = vec![("page.html", page)];
    pages.extend_from_slice(others);
    let Some(mut chromium) = browser::Page::open(name, &pages) else {
        return;
    };
    assert_eq!(chromium.eval(AUDIT), json!([]), "{name} as loaded");
    assert_eq!(
        chromium.eval(USE_EVERY_PART),
        json!(opened),
        "{name}: transcripts opened"
    );
    chromium.next_frame();
    assert_eq!(chromium.eval(AUDIT), json!([]), "{name} used");
    // The text is there, as text.
    let text = chromium.eval("document.body.textContent");
    assert!(
        text.as_str().unwrap().contains("window.pwned="),
        "{name}: the markup shown as text"
    );
}

#[test]
fn untrusted_text_stays_text_on_every_page() {
    let store = Store::in_memory().unwrap();
    let results = results(&store);
    let transcripts = Transcripts::new(&store, TranscriptSelection::All);
    let eval_page = Page::new(&results)
        .transcripts(&transcripts)
        .index(INDEX_FILE)
        .render();
    audit("eval", &eval_page, &[], 4);
    let plain = Page::new(&results).render();
    audit("plain", &plain, &[], 4);

    let formats = [Format::Html, Format::Json, Format::Markdown, Format::Junit];
    let index = render_index(Some(&evil("run")), &[IndexEntry::new(&results, &formats)]);
    audit("index", &index, &[], 0);

    let record = store.session("s-0-1").unwrap().unwrap();
    let session = session_record_page(&record, &session());
    audit("session", &session, &[], 1);
}
