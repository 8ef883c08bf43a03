//! Eval runs in the store (`Store::begin_eval_run`, `record_cell`,
//! `finish_eval_run`, `eval_runs`, `eval_results`), the migrations of
//! version 1 and 2 databases, and merging results (`EvalResults::merge`).

use std::path::PathBuf;

use scaffold::_cargo_scaffold_support::eval::results::CellCounts;
use scaffold::_cargo_scaffold_support::eval::results::{MergeError, ScoreRecord};
use scaffold::_cargo_scaffold_support::eval::{CellRecord, EvalResults, RunConfig};
use scaffold::_cargo_scaffold_support::eval::{EvalPlan, EvalRunMeta, RecordedCell};
use scaffold::_cargo_scaffold_support::store::SCHEMA_VERSION;
use scaffold::eval::{GateOptions, GateStatistic};
use scaffold::signal::Signal;
use scaffold::store::{SessionFilter, SessionMeta, Store, StoreError};
use serde_json::json;

/// A directory under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let dir = std::env::temp_dir().join(format!("scaffold-runs-test-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn db(&self) -> PathBuf {
        self.0.join("scaffold.db")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn config() -> RunConfig {
    RunConfig {
        trials: 1,
        inputs: 0,
        variants: vec!["a".into(), "b".into()],
        scorers: vec!["s".into()],
        min_pass_rate: 0.5,
    }
}

/// A cell, scored by the eval's scorer `s`: 1 when it passed, else 0.
fn record(variant: &str, case: &str, passed: bool) -> CellRecord {
    let mut r = CellRecord::new(variant, case);
    r.dataset = "ds".into();
    r.passed = passed;
    r.input = json!({"case": case});
    let value = if passed { 1.0 } else { 0.0 };
    let score = ScoreRecord {
        pass: passed,
        value,
        unit: None,
        detail: None,
        borderline: false,
    };
    r.scores.insert("s".into(), score);
    r
}

fn cell(eval: &str, variant: &str, case: &str, passed: bool) -> RecordedCell {
    RecordedCell::new(
        eval,
        format!("{eval}::{variant}::{case}"),
        record(variant, case, passed),
        true,
    )
}

fn results(cases: &[(&str, &str, bool)]) -> EvalResults {
    let cells = cases.iter().map(|(v, c, p)| record(v, c, *p)).collect();
    EvalResults::new("qa", "2026-01-28T12:00:00Z", config(), cells)
}

fn runs_round_trip(store: &Store) {
    store
        .begin_eval_run(
            &EvalRunMeta::new("r1", "harness")
                .eval("qa", config())
                .started_at_ms(1_000),
        )
        .unwrap();
    store
        .begin_eval_run(
            &EvalRunMeta::new("r2", "nextest")
                .eval("qa", config())
                .started_at_ms(2_000),
        )
        .unwrap();
    // Beginning again joins the run: its start stays, a new eval's config is added.
    store
        .begin_eval_run(
            &EvalRunMeta::new("r2", "nextest")
                .eval(
                    "qa",
                    RunConfig {
                        trials: 9,
                        ..config()
                    },
                )
                .eval("other", config())
                .started_at_ms(5_000),
        )
        .unwrap();
    store
        .record_cell("r2", &cell("qa", "a", "c1", true))
        .unwrap();
    store
        .record_cell("r2", &cell("qa", "b", "c1", false))
        .unwrap();
    store
        .record_cell("r2", &cell("qa", "a", "c2", true))
        .unwrap();
    // Recorded again (a retried test): the latest record wins.
    store
        .record_cell("r2", &cell("qa", "b", "c1", true))
        .unwrap();
    store
        .record_cell("r1", &cell("qa", "a", "c1", false))
        .unwrap();

    let runs = store.eval_runs().unwrap();
    let ids: Vec<&str> = runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["r2", "r1"], "newest first");
    let r2 = &runs[0];
    assert_eq!(
        (
            r2.origin.as_str(),
            r2.started_at_ms,
            r2.finished,
            r2.cells,
            r2.passed
        ),
        ("nextest", 2_000, false, 3, 3)
    );
    assert_eq!(r2.evals, ["other", "qa"]);
    assert_eq!(r2.finished_at_ms, None);
    assert_eq!(
        store.latest_unfinished_eval_run().unwrap().unwrap().id,
        "r2"
    );

    store.finish_eval_run("r2").unwrap();
    let r2 = store.eval_run("r2").unwrap().unwrap();
    assert!(r2.finished && r2.finished_at_ms.is_some());
    assert_eq!(
        store.latest_unfinished_eval_run().unwrap().unwrap().id,
        "r1"
    );
    assert_eq!(store.eval_run("nope").unwrap(), None);

    let results = store.eval_results("r2").unwrap();
    assert_eq!(results.len(), 1, "only evals with cells");
    let qa = &results[0];
    assert_eq!(qa.eval, "qa");
    assert_eq!(qa.config.trials, 1, "the first config stays");
    assert_eq!(qa.config.inputs, 2, "recomputed from the cells");
    assert_eq!((qa.cell_count(), qa.passed_count()), (3, 3));
    assert_eq!(qa.summary.len(), 2);
    assert_eq!(qa.results[0], record("a", "c1", true));

    let recorded = store.recorded_cells("r2").unwrap();
    let names: Vec<&str> = recorded.iter().map(|c| c.cell.as_str()).collect();
    assert_eq!(names, ["qa::a::c1", "qa::a::c2", "qa::b::c1"]);
    assert!(recorded.iter().all(|c| c.snapshot_ok && c.passed()));

    // A run never begun: a clear error, nothing written.
    let err = store
        .record_cell("ghost", &cell("qa", "a", "c1", true))
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::EvalRunNotFound { id, .. } if id == "ghost"),
        "{err}"
    );
    assert!(err.to_string().contains("no eval run ghost"), "{err}");
    assert!(matches!(
        store.finish_eval_run("ghost"),
        Err(StoreError::EvalRunNotFound { .. })
    ));
    assert!(matches!(
        store.eval_results("ghost"),
        Err(StoreError::EvalRunNotFound { .. })
    ));
    // The store goes on.
    store
        .record_cell("r1", &cell("qa", "b", "c9", true))
        .unwrap();
    assert_eq!(store.eval_run("r1").unwrap().unwrap().cells, 2);
    store.flush().unwrap();
}

#[test]
fn eval_runs_in_a_file() {
    let dir = TempDir::new();
    runs_round_trip(&Store::open(dir.db()).unwrap());
}

#[test]
fn eval_runs_in_memory() {
    runs_round_trip(&Store::in_memory().unwrap());
}

#[test]
fn a_recorded_cell_is_committed_when_record_cell_returns() {
    let dir = TempDir::new();
    let store = Store::open(dir.db()).unwrap();
    store
        .begin_eval_run(&EvalRunMeta::new("r", "harness"))
        .unwrap();
    // Signals queued before the cell are committed with it or before it.
    store.begin_session(&SessionMeta::new("s", "w")).unwrap();
    let signals: Vec<Signal> = (0..100)
        .map(|i| Signal {
            index: i,
            name: "x".into(),
            payload: json!(i),
            at_ms: i,
            agent: None,
        })
        .collect();
    store.append("s", &signals).unwrap();
    store
        .record_cell("r", &cell("qa", "a", "c1", true))
        .unwrap();
    // Another connection, as another process would see the file: no flush, no drop.
    let raw = rusqlite::Connection::open(dir.db()).unwrap();
    let cells: i64 = raw
        .query_row(
            "SELECT COUNT(*) FROM cell_results WHERE run_id = 'r'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let stored: i64 = raw
        .query_row(
            "SELECT coalesce(sum(last_idx - first_idx + 1), 0) FROM signal_blocks WHERE session_id = 's'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!((cells, stored), (1, 100));
    drop(store);
}

/// A cell whose session lost a write (a full disk, here an append to a
/// session that was never begun) is not recorded, even when another call
/// on the store took the queued error first (as another cell would).
#[test]
fn a_cell_whose_session_lost_writes_is_not_recorded() {
    let dir = TempDir::new();
    let store = Store::open(dir.db()).unwrap();
    store
        .begin_eval_run(&EvalRunMeta::new("r", "harness"))
        .unwrap();
    let signal = Signal {
        index: 0,
        name: "x".into(),
        payload: json!(0),
        at_ms: 0,
        agent: None,
    };
    store.append("never-begun", &[signal]).unwrap();
    // Another cell's call reports the failure: it is not about that cell.
    assert!(matches!(
        store.flush(),
        Err(StoreError::QueuedWrites { .. })
    ));
    let mut lost = cell("qa", "a", "c1", true);
    lost.record.session_id = "never-begun".into();
    let err = store.record_cell("r", &lost).unwrap_err();
    assert!(
        matches!(&err, StoreError::SessionIncomplete { session, count: 1, .. } if session == "never-begun"),
        "{err}"
    );
    assert!(
        err.to_string().contains("its cell is not recorded"),
        "{err}"
    );
    assert!(store.recorded_cells("r").unwrap().is_empty());
    // A whole session's cell is recorded as ever.
    store
        .record_cell("r", &cell("qa", "a", "c2", true))
        .unwrap();
    assert_eq!(store.recorded_cells("r").unwrap().len(), 1);
}

/// The signals of this version's layout (blocks, schema version 7) back in
/// the table of versions 1 to 6, a row each.
const SIGNALS_AS_ROWS: &str = "
    CREATE TABLE signals (
        session_id TEXT NOT NULL,
        idx        INTEGER NOT NULL,
        name       TEXT NOT NULL,
        payload    TEXT NOT NULL,
        at_ms      INTEGER NOT NULL,
        agent      TEXT,
        state_key  TEXT,
        PRIMARY KEY (session_id, idx)
    ) WITHOUT ROWID;
    CREATE INDEX signals_state ON signals (session_id, idx) WHERE state_key IS NOT NULL;
    INSERT INTO signals (session_id, idx, name, payload, at_ms, agent, state_key)
        SELECT b.session_id, e.value ->> '$.index', e.value ->> '$.name',
            e.value -> '$.payload', e.value ->> '$.atMs', e.value ->> '$.agent',
            CASE WHEN (e.value ->> '$.name') GLOB 'state:*:changed'
                THEN substr(e.value ->> '$.name', 7, length(e.value ->> '$.name') - 14) END
        FROM signal_blocks b, json_each(b.signals) e;
    DROP TABLE signal_blocks;
    DROP TABLE state_changes;
";

#[test]
fn a_version_1_database_is_migrated_in_place() {
    let dir = TempDir::new();
    {
        let store = Store::open(dir.db()).unwrap();
        store
            .begin_session(&SessionMeta::new("old", "w").tag("kept"))
            .unwrap();
        store
            .append(
                "old",
                &[Signal {
                    index: 0,
                    name: "a".into(),
                    payload: json!({}),
                    at_ms: 0,
                    agent: None,
                }],
            )
            .unwrap();
    }
    // Take the file back to version 1: the tables version 2 added are gone.
    let raw = rusqlite::Connection::open(dir.db()).unwrap();
    raw.execute_batch(&format!(
        "{SIGNALS_AS_ROWS} \
         DROP TABLE cell_text; DROP TABLE cell_text_pending; DROP TABLE cell_results; DROP TABLE eval_run_evals; DROP TABLE eval_runs; \
         PRAGMA user_version = 1;",
    ))
    .unwrap();
    drop(raw);

    let store = Store::open(dir.db()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(store.session("old").unwrap().unwrap().signal_count, 1);
    let kept = store.signals("old").unwrap();
    assert_eq!(
        kept.iter()
            .map(|s| (s.index, s.name.as_str(), &s.payload))
            .collect::<Vec<_>>(),
        [(0, "a", &json!({}))]
    );
    assert!(store.eval_runs().unwrap().is_empty());
    store
        .begin_eval_run(&EvalRunMeta::new("r", "harness").eval("qa", config()))
        .unwrap();
    store
        .record_cell("r", &cell("qa", "a", "c1", true))
        .unwrap();
    assert_eq!(store.eval_results("r").unwrap()[0].cell_count(), 1);
}

/// The tables version 3 rebuilt, as version 2 made them.
const V2_TABLES: &str = "
CREATE TABLE session_tags (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tag        TEXT NOT NULL,
    PRIMARY KEY (session_id, tag)
) WITHOUT ROWID;
CREATE INDEX session_tags_tag ON session_tags (tag, session_id);

CREATE TABLE cell_results (
    run_id      TEXT NOT NULL REFERENCES eval_runs (id) ON DELETE CASCADE,
    eval        TEXT NOT NULL,
    cell        TEXT NOT NULL,
    record      TEXT NOT NULL,
    passed      INTEGER NOT NULL,
    snapshot_ok INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, eval, cell)
) WITHOUT ROWID;
";

#[test]
fn a_version_2_database_is_migrated_and_its_cells_read_back_the_same() {
    let dir = TempDir::new();
    let mut cells = Vec::new();
    for (eval, variant, case, passed) in [
        ("qa", "a", "c1", true),
        ("qa", "b", "c1", false),
        ("qa", "a", "c2", true),
        ("other", "a", "c1", true),
    ] {
        let mut c = cell(eval, variant, case, passed);
        // As long as a real record: more than an index b-tree keeps in its page.
        c.record.output = Some(json!("an answer ".repeat(150)));
        c.snapshot_ok = case != "c2";
        c.record.metrics.cost_usd = 0.25;
        cells.push(c);
    }
    // The first cell's session, with a signal only search by transcript finds.
    cells[0].record.session_id = "s0".into();
    let (before, results, runs, trends) = {
        let store = Store::open(dir.db()).unwrap();
        store
            .begin_eval_run(&EvalRunMeta::new("r", "harness").eval("qa", config()))
            .unwrap();
        store.begin_session(&SessionMeta::new("s0", "w")).unwrap();
        let said = Signal {
            index: 0,
            name: "custom:said".into(),
            payload: json!({"text": "zanzibar"}),
            at_ms: 0,
            agent: None,
        };
        store.append("s0", &[said]).unwrap();
        for c in &cells {
            store.record_cell("r", c).unwrap();
        }
        store.finish_eval_run("r").unwrap();
        for (id, tags) in [("s1", ["x", "y"]), ("s2", ["y", "z"])] {
            store
                .begin_session(&SessionMeta::new(id, "w").tags(tags))
                .unwrap();
        }
        (
            store.recorded_cells("r").unwrap(),
            store.eval_results("r").unwrap(),
            store.eval_runs().unwrap(),
            store.eval_trends().unwrap(),
        )
    };
    assert_eq!(trends.iter().map(|t| t.cost_usd).sum::<f64>(), 1.0);
    assert_eq!(before.len(), cells.len());
    // Take the file back to version 2: the same rows in tables of its layout.
    let raw = rusqlite::Connection::open(dir.db()).unwrap();
    raw.execute_batch(&format!(
        "BEGIN;
         ALTER TABLE cell_results RENAME TO cell_results_v3;
         ALTER TABLE session_tags RENAME TO session_tags_v3;
         ALTER TABLE eval_runs DROP COLUMN selection;
         ALTER TABLE eval_runs DROP COLUMN source;
         DROP TABLE cell_text;
         DROP TABLE cell_text_pending;
         {SIGNALS_AS_ROWS}
         {V2_TABLES}
         INSERT INTO cell_results (run_id, eval, cell, record, passed, snapshot_ok, finished_at)
             SELECT run_id, eval, cell, record, passed, snapshot_ok, finished_at FROM cell_results_v3;
         INSERT INTO session_tags (session_id, tag) SELECT session_id, tag FROM session_tags_v3;
         DROP TABLE cell_results_v3;
         DROP TABLE session_tags_v3;
         PRAGMA user_version = 2;
         COMMIT;"
    ))
    .unwrap();
    drop(raw);

    let store = Store::open(dir.db()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(store.recorded_cells("r").unwrap(), before);
    assert_eq!(store.eval_results("r").unwrap(), results);
    assert_eq!(store.eval_runs().unwrap(), runs);
    let names = cells.iter().rev().map(|c| c.cell.clone()).collect();
    let records = store.cell_records("r", "qa", names).unwrap();
    let expected: Vec<Option<CellRecord>> = cells
        .iter()
        .rev()
        .map(|c| (c.eval == "qa").then(|| c.record.clone()))
        .collect();
    assert_eq!(records, expected);
    // The migration indexed the cells stored before it for search.
    assert_eq!(
        store.search_cells("r", "answer").unwrap().len(),
        cells.len()
    );
    // Recording a cell again still replaces it.
    let mut again = cells[1].clone();
    again.record.passed = true;
    store.record_cell("r", &again).unwrap();
    let after = store.recorded_cells("r").unwrap();
    assert_eq!(after.len(), cells.len());
    assert_eq!(store.eval_run("r").unwrap().unwrap().passed, 4);
    // The sessions keep their tags, and deleting one deletes its tags.
    let tagged = |tag: &str| -> Vec<String> {
        let mut ids: Vec<String> = store
            .list(&SessionFilter::default().tag(tag))
            .unwrap()
            .into_iter()
            .map(|s| s.meta.id)
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(tagged("y"), ["s1", "s2"]);
    assert_eq!(tagged("x"), ["s1"]);
    assert!(store.delete_session("s1").unwrap());
    assert_eq!(tagged("y"), ["s2"]);
    assert!(tagged("x").is_empty());
    drop(store);
    let raw = rusqlite::Connection::open(dir.db()).unwrap();
    let tags: i64 = raw
        .query_row("SELECT COUNT(*) FROM session_tags", [], |r| r.get(0))
        .unwrap();
    assert_eq!(tags, 2);
}

#[test]
fn cells_are_found_by_their_text_their_sessions_signals_and_tags() {
    let dir = TempDir::new();
    let store = Store::open(dir.db()).unwrap();
    store
        .begin_eval_run(&EvalRunMeta::new("r", "harness").eval("qa", config()))
        .unwrap();
    let tool = Signal {
        index: 0,
        name: "tool:result".into(),
        payload: json!({"tool": "Bash", "result": "error: Fibonacci overflowed"}),
        at_ms: 0,
        agent: None,
    };
    let mut cells = Vec::new();
    for (i, (variant, case, output)) in [
        ("a", "c1", "The answer is <b>42</b>"),
        ("b", "c1", "Nothing to say"),
        ("a", "c2", "say \"hi\" OR NEAR("),
    ]
    .into_iter()
    .enumerate()
    {
        let session = format!("s{i}");
        let tags = if i == 1 { vec!["slow"] } else { vec!["fast"] };
        store
            .begin_session(&SessionMeta::new(&session, "w").tags(tags))
            .unwrap();
        if i == 1 {
            store.append(&session, std::slice::from_ref(&tool)).unwrap();
        }
        let mut c = cell("qa", variant, case, true);
        c.record.output = Some(json!(output));
        c.record.session_id = session;
        cells.push(c);
    }
    for c in &cells {
        store.record_cell("r", c).unwrap();
    }
    let found = |text: &str| -> Vec<String> {
        let keys = store.search_cells("r", text).unwrap();
        keys.into_iter().map(|(_, cell)| cell).collect()
    };
    // Output words, any case, as prefixes; all words must be there.
    assert_eq!(found("ANSWER"), ["qa::a::c1"]);
    assert_eq!(found("ans 42"), ["qa::a::c1"]);
    assert!(found("answer nothing").is_empty());
    // A tool result of the cell's session.
    assert_eq!(found("fibonacci"), ["qa::b::c1"]);
    // The input and case, every cell; text that looks like FTS5 syntax is text.
    assert_eq!(found("c2").len(), 1);
    assert_eq!(found("\"hi\" OR NEAR("), ["qa::a::c2"]);
    assert!(found("<>").is_empty());
    assert!(
        store
            .search_cells("other-run", "answer")
            .unwrap()
            .is_empty()
    );
    // Recorded again, a cell is found by its new text only.
    let mut again = cells[0].clone();
    again.record.output = Some(json!("Rewritten"));
    store.record_cell("r", &again).unwrap();
    assert!(found("answer").is_empty());
    assert_eq!(found("rewritten"), ["qa::a::c1"]);
    // Tags are the cells' sessions'.
    let tagged = |tag: &str| -> Vec<String> {
        let keys = store.cells_tagged("r", tag).unwrap();
        keys.into_iter().map(|(_, cell)| cell).collect()
    };
    assert_eq!(tagged("fast"), ["qa::a::c1", "qa::a::c2"]);
    assert_eq!(tagged("slow"), ["qa::b::c1"]);
    assert!(tagged("none").is_empty());
    assert_eq!(store.run_tags("r").unwrap(), ["fast", "slow"]);
    // A deleted session's signals are no longer found; its cell's record is.
    assert!(store.delete_session("s1").unwrap());
    assert!(found("fibonacci").is_empty());
    assert_eq!(found("nothing"), ["qa::b::c1"]);
    // Each recording of a cell raises the run's revision.
    let before = store.eval_run_revision("r").unwrap();
    store.record_cell("r", &again).unwrap();
    assert!(store.eval_run_revision("r").unwrap() > before);
    assert_eq!(store.eval_run_revision("none").unwrap(), 0);
}

/// The writer indexes recorded cells for search in batches; those a
/// process killed before its batch left waiting are indexed by the next
/// process that opens the store.
#[test]
fn cells_a_killed_process_left_unindexed_are_indexed_by_the_next() {
    let dir = TempDir::new();
    {
        let store = Store::open(dir.db()).unwrap();
        store
            .begin_eval_run(&EvalRunMeta::new("r", "harness").eval("qa", config()))
            .unwrap();
        let mut c = cell("qa", "a", "c1", true);
        c.record.output = Some(json!("platypus"));
        store.record_cell("r", &c).unwrap();
    }
    // As a process killed between the cell's commit and its batch leaves it.
    let raw = rusqlite::Connection::open(dir.db()).unwrap();
    raw.execute_batch(
        "DELETE FROM cell_text; \
         INSERT INTO cell_text_pending (rowid, body) SELECT rowid, NULL FROM cell_results;",
    )
    .unwrap();
    drop(raw);
    let store = Store::open(dir.db()).unwrap();
    let found = store.search_cells("r", "platypus").unwrap();
    assert_eq!(found, [("qa".to_string(), "qa::a::c1".to_string())]);
    drop(store);
    let raw = rusqlite::Connection::open(dir.db()).unwrap();
    let waiting: i64 = raw
        .query_row("SELECT COUNT(*) FROM cell_text_pending", [], |r| r.get(0))
        .unwrap();
    assert_eq!(waiting, 0);
}

/// The harness gives the writer the text of each cell from the signals it
/// holds; the store takes it from its rows otherwise (the migration, a
/// cell recorded without them): both find the same cells by the same words.
#[test]
fn the_text_the_harness_gives_is_the_text_the_store_takes() {
    let store = Store::in_memory().unwrap();
    let signal = |index: u64, name: &str, payload: serde_json::Value| Signal {
        index,
        name: name.into(),
        payload,
        at_ms: 0,
        agent: None,
    };
    let signals = [
        signal(
            0,
            "provider:start",
            json!({"messages": [{"role": "user", "content": "zeppelin prompt"}]}),
        ),
        signal(
            1,
            "provider:end",
            json!({"output": "the answer is quokka", "usage": {"inputTokens": 3}}),
        ),
        signal(
            2,
            "tool:result",
            json!({"tool": "grep", "result": ["found", {"line": "marmot"}]}),
        ),
    ];
    store.begin_session(&SessionMeta::new("s", "w")).unwrap();
    store.append("s", &signals).unwrap();
    for run in ["given", "taken"] {
        store
            .begin_eval_run(&EvalRunMeta::new(run, "harness").eval("qa", config()))
            .unwrap();
        let mut c = cell("qa", "a", "c1", false);
        c.record.session_id = "s".into();
        c.record.output = Some(json!({"summary": "walrus"}));
        c.record.error = Some("expected narwhal".into());
        let c = if run == "given" {
            c.signals(&signals)
        } else {
            c
        };
        store.record_cell(run, &c).unwrap();
    }
    for (word, found) in [
        ("quokka", true),
        ("marmot", true),
        ("walrus", true),
        ("narwhal", true),
        ("c1", true),
        ("ds", true),
        ("zeppelin", false),
        ("user", false),
    ] {
        for run in ["given", "taken"] {
            let cells = store.search_cells(run, word).unwrap();
            assert_eq!(!cells.is_empty(), found, "{word} in run {run}");
        }
    }
}

/// Gate options as the harness sets them from `Eval` and the quarantine file.
fn options() -> GateOptions {
    GateOptions {
        confidence: 0.9,
        pass_at_k: vec![2],
        quarantine: vec!["b::c1".into()],
        on_lower_bound: true,
        min_trials_for_winner: 3,
        primary_scorer: Some("s".into()),
        strict: true,
    }
}

fn planned(cells: usize) -> EvalPlan {
    EvalPlan {
        gate_options: options(),
        planned_cells: Some(cells),
    }
}

#[test]
fn results_rebuilt_from_the_store_are_judged_as_the_harness_judged_them() {
    let store = Store::in_memory().unwrap();
    let meta = EvalRunMeta::new("r", "harness")
        .eval("qa", config())
        .plan("qa", planned(4));
    store.begin_eval_run(&meta).unwrap();
    let cases = [
        ("a", "c1", true),
        ("a", "c2", true),
        ("b", "c1", false),
        ("b", "c2", true),
    ];
    for (v, c, p) in cases {
        store.record_cell("r", &cell("qa", v, c, p)).unwrap();
    }
    store.finish_eval_run("r").unwrap();
    let rebuilt = store.eval_results("r").unwrap().remove(0);
    // What the harness wrote for the same cells.
    let harness = EvalResults::new_with(
        "qa",
        rebuilt.timestamp.clone(),
        RunConfig {
            inputs: 2,
            ..config()
        },
        options(),
        cases.iter().map(|(v, c, p)| record(v, c, *p)).collect(),
    );
    assert_eq!(rebuilt.gate_options, options());
    assert_eq!(rebuilt.comparison.as_ref().unwrap().quality, "s");
    let gate = rebuilt.gate.clone().unwrap();
    assert_eq!(gate.statistic, GateStatistic::WilsonLowerBound);
    assert_eq!((gate.cells, gate.quarantined_cells), (3, 1));
    assert_eq!(gate.quarantined, ["b::c1"]);
    assert_eq!(rebuilt.gate, harness.gate);
    assert_eq!(rebuilt, harness.with_planned_cells(4));
    assert!(rebuilt.complete);
}

#[test]
fn an_unfinished_run_counts_the_cells_it_misses() {
    let store = Store::in_memory().unwrap();
    let meta = EvalRunMeta::new("r", "nextest")
        .eval("qa", config())
        .plan("qa", planned(4))
        .eval("other", config())
        .plan("other", planned(2));
    store.begin_eval_run(&meta).unwrap();
    store
        .record_cell("r", &cell("qa", "a", "c1", true))
        .unwrap();
    let results = store.eval_results("r").unwrap();
    let evals: Vec<(&str, bool, Option<CellCounts>)> = results
        .iter()
        .map(|r| (r.eval.as_str(), r.complete, r.cell_counts))
        .collect();
    assert_eq!(
        evals,
        [
            ("other", false, Some(CellCounts::new(2, 0))),
            ("qa", false, Some(CellCounts::new(4, 1))),
        ],
        "an eval with no cell recorded yet is missing whole"
    );
    assert_eq!(
        results[1].partial().unwrap(),
        "run not finished: 3 of 4 planned cells missing (1 recorded)"
    );
    // Every planned cell recorded: whole, though no process marked the run
    // finished (nextest's never are).
    for (v, c) in [("a", "c2"), ("b", "c1"), ("b", "c2")] {
        store.record_cell("r", &cell("qa", v, c, true)).unwrap();
    }
    for c in ["c1", "c2"] {
        store
            .record_cell("r", &cell("other", "a", c, true))
            .unwrap();
    }
    assert!(!store.eval_run("r").unwrap().unwrap().finished);
    let results = store.eval_results("r").unwrap();
    assert!(results.iter().all(|r| r.complete && r.partial().is_none()));
    assert_eq!(results[1].cell_counts, Some(CellCounts::new(4, 4)));
}

#[test]
fn a_run_stored_without_a_plan_counts_by_its_config_until_it_finished() {
    let store = Store::in_memory().unwrap();
    // As a database written before plans were stored: the config alone.
    let config = RunConfig {
        inputs: 2,
        ..config()
    };
    store
        .begin_eval_run(&EvalRunMeta::new("r", "harness").eval("qa", config))
        .unwrap();
    store
        .record_cell("r", &cell("qa", "a", "c1", true))
        .unwrap();
    let qa = store.eval_results("r").unwrap().remove(0);
    assert_eq!(
        (qa.complete, qa.cell_counts),
        (false, Some(CellCounts::new(4, 1)))
    );
    assert_eq!(qa.gate_options, GateOptions::default());
    store.finish_eval_run("r").unwrap();
    let qa = store.eval_results("r").unwrap().remove(0);
    assert_eq!((qa.complete, qa.cell_counts), (true, None));
}

#[test]
fn merging_the_shards_of_a_run_makes_it_whole() {
    let shard = |cases: &[(&str, &str, bool)]| results(cases).with_planned_cells(4);
    let one = shard(&[("a", "c1", true), ("b", "c1", true)]);
    let two = shard(&[("a", "c2", true), ("b", "c2", true)]);
    assert!(!one.complete && !two.complete);
    let whole = EvalResults::merge(vec![one.clone(), two]).unwrap();
    assert!(whole.complete, "{:?}", whole.cell_counts);
    assert_eq!(whole.cell_counts, Some(CellCounts::new(4, 4)));
    // One shard short: still 2 of 4 missing.
    let empty = shard(&[]);
    let short = EvalResults::merge(vec![one.clone(), empty]).unwrap();
    assert_eq!(
        (short.complete, short.cell_counts),
        (false, Some(CellCounts::new(4, 2)))
    );
    // Whole runs over different cells merge into a whole.
    let a = results(&[("a", "c1", true)]);
    let b = results(&[("a", "c2", true)]);
    let both = EvalResults::merge(vec![a.clone(), b]).unwrap();
    assert_eq!((both.complete, both.cell_counts), (true, None));
    // A whole run and an unfinished one over other cells: the sum of both plans.
    let mixed = EvalResults::merge(vec![a, shard(&[("b", "c9", true)])]).unwrap();
    assert_eq!(mixed.cell_counts, Some(CellCounts::new(5, 2)));
    assert!(!mixed.complete);
}

#[test]
fn merging_parts_recomputes_the_whole() {
    let one = results(&[("a", "c1", true), ("b", "c1", false)]);
    let mut two = results(&[("a", "c2", true), ("b", "c2", true), ("a", "c3", true)]);
    two.timestamp = "2026-02-01T00:00:00Z".into();
    let whole = EvalResults::merge(vec![one.clone(), two.clone()]).unwrap();
    assert_eq!(whole.cell_count(), 5);
    assert_eq!(whole.config.inputs, 3);
    assert_eq!(whole.timestamp, "2026-02-01T00:00:00Z");
    assert_eq!(whole.summary["a"].pass_rate, 1.0);
    assert_eq!(whole.summary["b"].pass_rate, 0.5);
    assert!(whole.comparison.is_some());
    // The same as the results of every cell at once.
    let at_once = EvalResults::new(
        "qa",
        "2026-02-01T00:00:00Z",
        RunConfig {
            inputs: 3,
            ..config()
        },
        one.results.iter().chain(&two.results).cloned().collect(),
    );
    assert_eq!(whole, at_once);
    // Order does not matter.
    assert_eq!(EvalResults::merge(vec![two, one]).unwrap(), whole);
}

#[test]
fn merging_refuses_what_does_not_fit() {
    let base = results(&[("a", "c1", true)]);
    let other = results(&[("a", "c2", true)]);
    assert_eq!(EvalResults::merge(vec![]), Err(MergeError::Empty));

    let mut renamed = other.clone();
    renamed.eval = "qb".into();
    let err = EvalResults::merge(vec![base.clone(), renamed]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot merge results of different evals: `qa` and `qb`"
    );

    type Change = fn(&mut RunConfig);
    let cases: [(&str, Change, &str, &str); 4] = [
        ("trials", |c| c.trials = 3, "1", "3"),
        ("variants", |c| c.variants.reverse(), "[a, b]", "[b, a]"),
        ("scorers", |c| c.scorers.clear(), "[s]", "[]"),
        ("min_pass_rate", |c| c.min_pass_rate = 0.9, "0.5", "0.9"),
    ];
    for (field, change, first, second) in cases {
        let mut changed = other.clone();
        change(&mut changed.config);
        let err = EvalResults::merge(vec![base.clone(), changed]).unwrap_err();
        assert_eq!(
            err,
            MergeError::ConfigMismatch {
                eval: "qa".into(),
                field,
                first: first.into(),
                other: second.into(),
            }
        );
        let msg = err.to_string();
        assert!(
            msg.contains(field) && msg.contains(first) && msg.contains(second),
            "{msg}"
        );
    }
    // `inputs` differs between shards and is not compared.
    let mut fewer = other.clone();
    fewer.config.inputs = 7;
    assert!(EvalResults::merge(vec![base.clone(), fewer]).is_ok());

    let err = EvalResults::merge(vec![base.clone(), other, base]).unwrap_err();
    assert_eq!(
        err,
        MergeError::DuplicateCell {
            cell: "qa::a::c1".into()
        }
    );
    assert!(
        err.to_string()
            .contains("cell qa::a::c1 is in more than one"),
        "{err}"
    );
}

#[test]
fn processes_opening_a_fresh_file_at_once_share_one_run() {
    // As nextest does: every cell's process opens the same new database,
    // begins the same run and records its cell.
    for round in 0..5 {
        let dir = TempDir::new();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (db, barrier) = (dir.db(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let store = Store::open(&db)?;
                    store.begin_eval_run(
                        &EvalRunMeta::new("shared", "nextest").eval("qa", config()),
                    )?;
                    store.record_cell("shared", &cell("qa", "a", &format!("c{i}"), true))
                })
            })
            .collect();
        for t in threads {
            t.join()
                .unwrap()
                .unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
        let store = Store::open(dir.db()).unwrap();
        let runs = store.eval_runs().unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].cells, 8);
    }
}
