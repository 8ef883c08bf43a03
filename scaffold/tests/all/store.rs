//! Integration tests of the session store (`scaffold::store`).

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use scaffold::_cargo_scaffold_support::store::SCHEMA_VERSION;
use scaffold::signal::Signal;
use scaffold::store::{
    SessionEnd, SessionFilter, SessionMeta, SessionStatus, Store, StoreError, StoreOptions,
};
use serde_json::{Map, Value, json};

/// A directory under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("scaffold-store-test-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn db(&self) -> PathBuf {
        // A nested path: open must create the parent directories.
        self.0.join("nested").join("scaffold.db")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn signal(index: u64, name: &str, payload: Value) -> Signal {
    Signal {
        index,
        name: name.into(),
        payload,
        at_ms: index * 10,
        agent: None,
    }
}

fn change(index: u64, key: &str, new: Value) -> Signal {
    Signal {
        index,
        name: format!("state:{key}:changed"),
        payload: json!({"key": key, "oldValue": null, "newValue": new, "agent": "a"}),
        at_ms: index,
        agent: Some("a".into()),
    }
}

fn removal(index: u64, key: &str) -> Signal {
    Signal {
        index,
        name: format!("state:{key}:changed"),
        payload: json!({"key": key, "oldValue": 1, "removed": true, "agent": "a"}),
        at_ms: index,
        agent: Some("a".into()),
    }
}

fn sample_signals() -> Vec<Signal> {
    vec![
        signal(
            0,
            "harness:start",
            json!({"agents": ["planner"], "state": {"plan": null}}),
        ),
        signal(
            1,
            "agent:activated",
            json!({"agent": "planner", "trigger": "phase:entered"}),
        ),
        signal(2, "text:delta", json!({"content": "héllo \"world\"\n"})),
        change(3, "plan", json!(["a", "b"])),
        Signal {
            agent: Some("planner".into()),
            ..signal(
                4,
                "tool:call",
                json!({"id": "t1", "name": "search", "input": {"q": 1.5}}),
            )
        },
        signal(
            5,
            "harness:end",
            json!({"durationMs": 12, "activations": 1}),
        ),
    ]
}

fn round_trip(store: &Store) {
    let meta = SessionMeta::new("s1", "planner")
        .variant("v1")
        .input(json!({"task": "x"}))
        .initial_state(json!({"plan": null}))
        .tags(["smoke", "fast"])
        .started_at_ms(1_000);
    store.begin_session(&meta).unwrap();
    let signals = sample_signals();
    store.append("s1", &signals[..3]).unwrap();
    store.append("s1", &signals[3..]).unwrap();

    // Reads see what was appended before them, without an explicit flush.
    let running = store.session("s1").unwrap().unwrap();
    assert_eq!(running.meta, meta);
    assert_eq!(running.status, SessionStatus::Running);
    assert_eq!(running.signal_count, 6);
    assert_eq!(running.ended_at_ms, None);

    let end = SessionEnd::new(SessionStatus::Completed)
        .ended_at_ms(1_050)
        .duration_ms(50)
        .output(json!({"ok": true}))
        .final_state(json!({"plan": ["a", "b"]}));
    store.finish_session("s1", &end).unwrap();
    store.flush().unwrap();

    let rec = store.session("s1").unwrap().unwrap();
    assert_eq!(rec.status, SessionStatus::Completed);
    assert_eq!(rec.error, None);
    assert_eq!(rec.ended_at_ms, Some(1_050));
    assert_eq!(rec.duration_ms, Some(50));
    assert_eq!(rec.output, Some(json!({"ok": true})));
    assert_eq!(rec.final_state, Some(json!({"plan": ["a", "b"]})));
    assert_eq!(store.signals("s1").unwrap(), signals);
    assert_eq!(
        store.signals_range("s1", 2, 4).unwrap(),
        signals[2..=4].to_vec()
    );
    assert_eq!(store.signals_range("s1", 7, 9).unwrap(), vec![]);
    assert_eq!(store.state_at("s1", 2).unwrap(), json!({"plan": null}));
    assert_eq!(
        store.state_at("s1", 3).unwrap(),
        json!({"plan": ["a", "b"]})
    );
    assert_eq!(
        store.state_at("s1", u64::MAX).unwrap(),
        json!({"plan": ["a", "b"]})
    );
    assert!(store.session("nope").unwrap().is_none());
    assert!(store.signals("nope").unwrap().is_empty());
    assert!(matches!(
        store.state_at("nope", 0),
        Err(StoreError::SessionNotFound { .. })
    ));
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
}

#[test]
fn round_trip_file() {
    let dir = TempDir::new();
    let store = Store::open(dir.db()).unwrap();
    round_trip(&store);
    assert!(dir.db().is_file());
}

/// A store opened read only reads what another handle wrote and writes
/// nothing: not a session, not a migration, not a file that is missing.
#[test]
fn a_store_opened_read_only_reads_and_never_writes() {
    let dir = TempDir::new();
    assert!(Store::open_read_only(dir.db()).unwrap().is_none());
    assert!(!dir.db().exists(), "opening to read created the file");
    let writer = Store::open(dir.db()).unwrap();
    round_trip(&writer);
    drop(writer);
    let bytes = std::fs::read(dir.db()).unwrap();

    let reader = Store::open_read_only(dir.db())
        .unwrap()
        .expect("the file is there");
    assert_eq!(reader.session("s1").unwrap().unwrap().signal_count, 6);
    assert_eq!(reader.schema_version().unwrap(), SCHEMA_VERSION);
    let refused = reader
        .begin_session(&SessionMeta::new("s2", "planner"))
        .and_then(|()| reader.flush());
    assert!(refused.is_err(), "a read-only store wrote a session");
    drop(reader);
    assert_eq!(
        std::fs::read(dir.db()).unwrap(),
        bytes,
        "the database changed"
    );
    assert!(
        Store::open(dir.db())
            .unwrap()
            .session("s2")
            .unwrap()
            .is_none()
    );
}

#[test]
fn round_trip_in_memory() {
    let store = Store::in_memory().unwrap();
    round_trip(&store);
    // In-memory stores are private.
    let other = Store::in_memory().unwrap();
    assert!(other.session("s1").unwrap().is_none());
}

fn appends_from_threads(store: Store) {
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let store = store.clone();
            std::thread::spawn(move || {
                let id = format!("t{t}");
                store.begin_session(&SessionMeta::new(&id, "w")).unwrap();
                for i in 0..100 {
                    store.append(&id, &[change(i, "n", json!(i))]).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    for t in 0..4 {
        let id = format!("t{t}");
        assert_eq!(store.signals(&id).unwrap().len(), 100);
        assert_eq!(store.state_at(&id, 99).unwrap(), json!({"n": 99}));
        assert_eq!(store.state_at(&id, 50).unwrap(), json!({"n": 50}));
    }
}

#[test]
fn clones_share_one_store_across_threads() {
    appends_from_threads(Store::in_memory().unwrap());
}

#[test]
fn a_full_queue_makes_appends_wait_not_fail() {
    let store = StoreOptions::default()
        .queue_capacity(1)
        .batch_size(1)
        .checkpoint_interval(7)
        .in_memory()
        .unwrap();
    appends_from_threads(store);
}

#[test]
fn list_by_tag_workflow_and_variant_newest_first() {
    let store = Store::in_memory().unwrap();
    let sessions = [
        ("a", "planner", Some("v1"), vec!["smoke"], 10),
        ("b", "planner", Some("v2"), vec!["smoke", "slow"], 20),
        ("c", "coder", Some("v1"), vec!["slow"], 30),
        ("d", "planner", None, vec![], 40),
    ];
    for (id, wf, variant, tags, at) in &sessions {
        let mut m = SessionMeta::new(*id, *wf)
            .tags(tags.clone())
            .started_at_ms(*at);
        if let Some(v) = variant {
            m = m.variant(*v);
        }
        store.begin_session(&m).unwrap();
    }
    let ids = |f: SessionFilter| -> Vec<String> {
        store
            .list(&f)
            .unwrap()
            .into_iter()
            .map(|r| r.meta.id)
            .collect()
    };
    assert_eq!(ids(SessionFilter::default()), ["d", "c", "b", "a"]);
    assert_eq!(ids(SessionFilter::default().tag("smoke")), ["b", "a"]);
    assert_eq!(
        ids(SessionFilter::default().tag("smoke").tag("slow")),
        ["b"]
    );
    assert_eq!(
        ids(SessionFilter::default().workflow("planner")),
        ["d", "b", "a"]
    );
    assert_eq!(
        ids(SessionFilter::default().workflow("planner").variant("v1")),
        ["a"]
    );
    assert_eq!(
        ids(SessionFilter::default().tag("slow").workflow("coder")),
        ["c"]
    );
    assert_eq!(ids(SessionFilter::default().limit(2)), ["d", "c"]);
    assert_eq!(
        ids(SessionFilter::default().tag("none")),
        Vec::<String>::new()
    );
    store
        .finish_session("c", &SessionEnd::failed("boom"))
        .unwrap();
    assert_eq!(
        ids(SessionFilter::default().status(SessionStatus::Failed)),
        ["c"]
    );
    assert_eq!(
        ids(SessionFilter::default().status(SessionStatus::Running)),
        ["d", "b", "a"]
    );
}

#[test]
fn a_failed_run_keeps_its_signals_and_error() {
    let dir = TempDir::new();
    let store = Store::open(dir.db()).unwrap();
    store.begin_session(&SessionMeta::new("f", "w")).unwrap();
    store.append("f", &sample_signals()[..4]).unwrap();
    let end = SessionEnd::failed("provider:error: 500 from upstream").duration_ms(7);
    store.finish_session("f", &end).unwrap();
    drop(store);

    let store = Store::open(dir.db()).unwrap();
    let rec = store.session("f").unwrap().unwrap();
    assert_eq!(rec.status, SessionStatus::Failed);
    assert_eq!(
        rec.error.as_deref(),
        Some("provider:error: 500 from upstream")
    );
    assert_eq!(rec.duration_ms, Some(7));
    assert_eq!(rec.signal_count, 4);
    assert_eq!(store.signals("f").unwrap(), sample_signals()[..4].to_vec());
}

#[test]
fn delete_leaves_other_sessions_and_forked_children() {
    let store = Store::in_memory().unwrap();
    store
        .begin_session(&SessionMeta::new("parent", "w"))
        .unwrap();
    store
        .begin_session(&SessionMeta::new("child", "w").forked_from("parent", json!({"index": 3})))
        .unwrap();
    store
        .begin_session(&SessionMeta::new("other", "w").tag("t"))
        .unwrap();
    for id in ["parent", "child", "other"] {
        store.append(id, &sample_signals()).unwrap();
    }
    assert!(store.delete_session("parent").unwrap());
    assert!(!store.delete_session("parent").unwrap());
    assert!(store.session("parent").unwrap().is_none());
    assert!(store.signals("parent").unwrap().is_empty());

    let child = store.session("child").unwrap().unwrap();
    assert_eq!(child.meta.parent_id.as_deref(), Some("parent"));
    assert_eq!(child.meta.fork_point, Some(json!({"index": 3})));
    assert_eq!(store.signals("child").unwrap(), sample_signals());
    assert_eq!(store.signals("other").unwrap(), sample_signals());
    assert_eq!(
        store
            .list(&SessionFilter::default().parent("parent"))
            .unwrap()
            .len(),
        1
    );

    assert!(store.delete_session("other").unwrap());
    assert!(
        store
            .list(&SessionFilter::default().tag("t"))
            .unwrap()
            .is_empty()
    );
    // The id can be used again once deleted.
    store
        .begin_session(&SessionMeta::new("other", "w"))
        .unwrap();
    store.append("other", &sample_signals()[..1]).unwrap();
    assert_eq!(store.session("other").unwrap().unwrap().signal_count, 1);
}

#[test]
fn a_fresh_file_is_migrated_and_reopening_keeps_version_and_data() {
    let dir = TempDir::new();
    {
        let store = Store::open(dir.db()).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        store
            .begin_session(&SessionMeta::new("keep", "w").tag("x"))
            .unwrap();
        store.append("keep", &sample_signals()).unwrap();
        // Dropping the last handle commits what is queued.
    }
    let raw = rusqlite::Connection::open(dir.db()).unwrap();
    let mode: String = raw
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let tables: Vec<String> = raw
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        tables,
        [
            "cell_results",
            // The cells' full-text index (FTS5) and its shadow tables.
            "cell_text",
            "cell_text_config",
            "cell_text_data",
            "cell_text_docsize",
            "cell_text_idx",
            "cell_text_pending",
            "checkpoints",
            "eval_run_evals",
            "eval_runs",
            "session_tags",
            "sessions",
            "signal_blocks",
            "state_changes"
        ]
    );
    drop(raw);

    let store = Store::open(dir.db()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(store.signals("keep").unwrap(), sample_signals());
    assert_eq!(
        store
            .list(&SessionFilter::default().tag("x"))
            .unwrap()
            .len(),
        1
    );
    // Appending goes on after a reopen, with the state loaded from the file.
    store
        .append("keep", &[change(6, "plan", json!("c"))])
        .unwrap();
    assert_eq!(
        store.state_at("keep", 5).unwrap(),
        json!({"plan": ["a", "b"]})
    );
    assert_eq!(store.state_at("keep", 6).unwrap(), json!({"plan": "c"}));
    store
        .append("keep", &[change(6, "plan", json!("again"))])
        .unwrap();
    assert!(matches!(
        store.flush(),
        Err(StoreError::QueuedWrites { .. })
    ));
}

#[test]
fn a_file_from_a_newer_schema_is_refused_clearly() {
    let dir = TempDir::new();
    drop(Store::open(dir.db()).unwrap());
    let raw = rusqlite::Connection::open(dir.db()).unwrap();
    raw.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(raw);
    let err = Store::open(dir.db()).unwrap_err();
    assert!(matches!(err, StoreError::NewerSchema { found, .. } if found == SCHEMA_VERSION + 1));
    let msg = err.to_string();
    assert!(msg.contains(&dir.db().display().to_string()), "{msg}");
    assert!(msg.contains("newer"), "{msg}");
}

#[test]
fn two_stores_on_one_file_from_two_threads() {
    let dir = TempDir::new();
    let path = dir.db();
    // Small batches and checkpoints: many short transactions contend for the lock.
    let open = |p: &Path| {
        StoreOptions::default()
            .batch_size(16)
            .checkpoint_interval(50)
            .open(p)
            .unwrap()
    };
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let store = open(&path);
            std::thread::spawn(move || {
                for s in 0..5 {
                    let id = format!("w{t}-s{s}");
                    store
                        .begin_session(&SessionMeta::new(&id, "w").tag(format!("t{t}")))
                        .unwrap();
                    for i in 0..400u64 {
                        let sig = if i % 3 == 0 {
                            change(i, "n", json!(i))
                        } else {
                            signal(i, "text:delta", json!({"content": "x"}))
                        };
                        store.append(&id, &[sig]).unwrap();
                    }
                    store
                        .finish_session(&id, &SessionEnd::new(SessionStatus::Completed))
                        .unwrap();
                }
                store.flush().unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let store = open(&path);
    let all = store.list(&SessionFilter::default()).unwrap();
    assert_eq!(all.len(), 10);
    for rec in &all {
        assert_eq!(rec.signal_count, 400);
        assert_eq!(rec.status, SessionStatus::Completed);
        assert_eq!(
            store.state_at(&rec.meta.id, 399).unwrap(),
            json!({"n": 399})
        );
        assert_eq!(store.state_at(&rec.meta.id, 100).unwrap(), json!({"n": 99}));
    }
    assert_eq!(
        store
            .list(&SessionFilter::default().tag("t1"))
            .unwrap()
            .len(),
        5
    );
}

#[test]
fn write_errors_are_reported_once_and_do_not_lose_other_writes() {
    let store = Store::in_memory().unwrap();
    // Failures are reported by whichever call comes after them; that call
    // still does its own work. Gather what every call reports.
    let mut failed = 0;
    let mut firsts = Vec::new();
    let mut note = |r: Result<(), StoreError>| match r {
        Ok(()) => {}
        Err(StoreError::QueuedWrites { count, first, .. }) => {
            failed += count;
            firsts.push(first.to_string());
        }
        Err(e) => panic!("unexpected error {e}"),
    };
    note(store.begin_session(&SessionMeta::new("a", "w")));
    note(store.begin_session(&SessionMeta::new("b", "w")));
    // A duplicate session, an append to an unknown session and an index
    // going backwards, queued between good writes.
    note(store.begin_session(&SessionMeta::new("a", "w")));
    note(store.append("a", &sample_signals()[..2]));
    note(store.append("ghost", &sample_signals()));
    note(store.append("a", &sample_signals()[1..3]));
    note(store.append("b", &sample_signals()));
    note(store.flush());
    assert_eq!(failed, 3, "{firsts:?}");
    assert!(firsts[0].contains("session a already exists"), "{firsts:?}");
    // Reported once.
    store.flush().unwrap();
    assert_eq!(store.signals("a").unwrap(), sample_signals()[..2].to_vec());
    assert_eq!(store.signals("b").unwrap(), sample_signals());
    assert!(store.session("ghost").unwrap().is_none());

    // A failure is also reported by the next call that is not a flush.
    store
        .finish_session("ghost", &SessionEnd::failed("x"))
        .unwrap();
    let err = store.session("a").unwrap_err();
    assert!(
        matches!(err, StoreError::QueuedWrites { count: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("no session ghost"), "{err}");
    assert!(store.session("a").unwrap().is_some());
    // A delete that reports an earlier failure still deletes.
    store
        .finish_session("ghost", &SessionEnd::failed("x"))
        .unwrap();
    store.flush().unwrap_err();
    store
        .finish_session("ghost", &SessionEnd::failed("x"))
        .unwrap();
    let _ = store.delete_session("b");
    assert!(store.session("b").unwrap().is_none());
}

#[test]
fn deleting_a_session_deletes_its_tag_rows() {
    let dir = TempDir::new();
    let store = Store::open(dir.db()).unwrap();
    for id in ["a", "b", "damaged"] {
        store
            .begin_session(&SessionMeta::new(id, "w").tags(["t", "u", "t"]))
            .unwrap();
    }
    store.flush().unwrap();
    let tag_rows = |id: &str| {
        count_from_outside(
            &dir.db(),
            &format!("SELECT COUNT(*) FROM session_tags WHERE session_id = '{id}'"),
        )
    };
    assert_eq!(tag_rows("a"), 2);
    assert!(store.delete_session("a").unwrap());
    assert_eq!(tag_rows("a"), 0);
    assert_eq!(tag_rows("b"), 2);
    // A session whose tags column does not parse still loses its tag rows.
    let raw = rusqlite::Connection::open(dir.db()).unwrap();
    raw.execute("UPDATE sessions SET tags = 'oops' WHERE id = 'damaged'", [])
        .unwrap();
    drop(raw);
    assert!(store.delete_session("damaged").unwrap());
    assert_eq!(tag_rows("damaged"), 0);
    let listed: Vec<String> = store
        .list(&SessionFilter::default().tag("u"))
        .unwrap()
        .into_iter()
        .map(|s| s.meta.id)
        .collect();
    assert_eq!(listed, ["b"]);
}

/// Rows counted by a separate connection, as another process sees the file.
fn count_from_outside(db: &Path, sql: &str) -> i64 {
    let raw = rusqlite::Connection::open(db).unwrap();
    raw.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn lingering_signals_are_committed_without_a_flush() {
    let dir = TempDir::new();
    let store = StoreOptions::default()
        .linger(std::time::Duration::from_millis(50))
        .open(dir.db())
        .unwrap();
    store.begin_session(&SessionMeta::new("s", "w")).unwrap();
    let signals: Vec<Signal> = (0..10).map(|i| signal(i, "x", json!(i))).collect();
    store.append("s", &signals).unwrap();
    // Nobody waits for these writes: they are committed once the linger is
    // over, with the store still open and no flush.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let sql = "SELECT coalesce(sum(last_idx - first_idx + 1), 0) FROM signal_blocks WHERE session_id = 's'";
    while count_from_outside(&dir.db(), sql) < 10 {
        assert!(
            std::time::Instant::now() < deadline,
            "the signals were not committed within 10 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // A read commits what lingers at once.
    store.append("s", &[signal(10, "y", json!(10))]).unwrap();
    assert_eq!(store.signals("s").unwrap().len(), 11);
    assert_eq!(count_from_outside(&dir.db(), sql), 11);
}

/// Session `s` of `n` signals of some 200 bytes each, committed.
fn write_long_session(store: &Store, n: u64) {
    store.begin_session(&SessionMeta::new("s", "w")).unwrap();
    let signals: Vec<Signal> = (0..n)
        .map(|i| signal(i, "x", json!({"text": "a fairly long payload ".repeat(8)})))
        .collect();
    store.append("s", &signals).unwrap();
    store.flush().unwrap();
}

/// The frames of the WAL file at `wal` that belong to its current header
/// (the same salts), in order: what a reader would use.
fn current_wal_frames(wal: &std::path::Path) -> usize {
    let Ok(bytes) = std::fs::read(wal) else {
        return 0;
    };
    let Some(header) = bytes.get(..32) else {
        return 0;
    };
    let page = u32::from_be_bytes([header[8], header[9], header[10], header[11]]) as usize;
    let salts = &header[16..24];
    bytes[32..]
        .chunks_exact(24 + page)
        .take_while(|frame| &frame[8..16] == salts)
        .count()
}

#[test]
fn an_idle_writer_starts_the_wal_again_before_the_next_commit() {
    // A checkpoint that moved the whole WAL lets the next commit write from
    // the WAL's start again, and SQLite syncs the WAL's header when it does:
    // an idle writer does that now, with a commit of its own (one frame),
    // rather than in the commit the next cells wait for.
    let dir = TempDir::new();
    let store = Store::open(dir.db()).unwrap();
    write_long_session(&store, 50);
    let wal = dir.db().with_extension("db-wal");
    assert!(current_wal_frames(&wal) > 1);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while current_wal_frames(&wal) != 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the WAL was not started again within 10 s: {} frames",
            current_wal_frames(&wal)
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(store.signals("s").unwrap().len(), 50);
    drop(store);
    let store = Store::open(dir.db()).unwrap();
    assert_eq!(store.signals("s").unwrap().len(), 50);
}

#[test]
fn an_idle_writer_moves_the_wal_into_the_database() {
    // Closing a store checkpoints its WAL; an idle writer does it earlier,
    // off the cells' path. Too few pages for the checkpoint by WAL size
    // (4000 frames): only the idle one can grow the database file.
    let dir = TempDir::new();
    let store = Store::open(dir.db()).unwrap();
    store.flush().unwrap();
    let before = std::fs::metadata(dir.db()).unwrap().len();
    write_long_session(&store, 200);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::metadata(dir.db()).unwrap().len() <= before {
        assert!(
            std::time::Instant::now() < deadline,
            "the database file did not grow within 10 s: the WAL was not checkpointed"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(store.signals("s").unwrap().len(), 200);
}

#[test]
fn checkpoints_are_written_every_interval() {
    let dir = TempDir::new();
    let store = StoreOptions::default()
        .checkpoint_interval(10)
        .open(dir.db())
        .unwrap();
    store.begin_session(&SessionMeta::new("c", "w")).unwrap();
    let signals: Vec<Signal> = (0..100)
        .map(|i| {
            if i < 50 {
                change(i, "n", json!(i))
            } else {
                signal(i, "text:delta", json!({"content": "x"}))
            }
        })
        .collect();
    store.append("c", &signals).unwrap();
    store.flush().unwrap();
    let raw = rusqlite::Connection::open(dir.db()).unwrap();
    let idx: Vec<i64> = raw
        .prepare("SELECT idx FROM checkpoints WHERE session_id = 'c' ORDER BY idx")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    // Only while the state changes.
    assert_eq!(idx, [9, 19, 29, 39, 49]);
    for i in [0, 9, 10, 49, 50, 99] {
        assert_eq!(store.state_at("c", i).unwrap(), json!({"n": i.min(49)}));
    }
}

#[test]
fn finishing_checkpoints_only_after_half_an_interval() {
    let dir = TempDir::new();
    let store = StoreOptions::default()
        .checkpoint_interval(10)
        .open(dir.db())
        .unwrap();
    // A checkpoint at 9, then 4 more signals (under half an interval) or 5.
    for (id, n) in [("short", 14), ("long", 15)] {
        store.begin_session(&SessionMeta::new(id, "w")).unwrap();
        let signals: Vec<Signal> = (0..n).map(|i| change(i, "n", json!(i))).collect();
        store.append(id, &signals).unwrap();
        store
            .finish_session(id, &SessionEnd::new(SessionStatus::Completed))
            .unwrap();
    }
    store.flush().unwrap();
    let raw = rusqlite::Connection::open(dir.db()).unwrap();
    let checkpoints = |id: &str| -> Vec<i64> {
        raw.prepare("SELECT idx FROM checkpoints WHERE session_id = ?1 ORDER BY idx")
            .unwrap()
            .query_map([id], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    assert_eq!(checkpoints("short"), [9]);
    assert_eq!(checkpoints("long"), [9, 14]);
    for (id, n) in [("short", 14), ("long", 15)] {
        for i in [0, 9, 11, n - 1, n + 3] {
            assert_eq!(
                store.state_at(id, i).unwrap(),
                json!({"n": i.min(n - 1)}),
                "{id} at {i}"
            );
        }
    }
}

#[test]
fn status_names() {
    for s in [
        SessionStatus::Running,
        SessionStatus::Completed,
        SessionStatus::Failed,
        SessionStatus::Terminated,
    ] {
        assert_eq!(s.to_string().parse::<SessionStatus>().unwrap(), s);
        assert_eq!(serde_json::to_value(s).unwrap(), json!(s.to_string()));
    }
    assert!("done".parse::<SessionStatus>().is_err());
    let m = SessionMeta::new("x", "w").variant("v");
    let v = serde_json::to_value(&m).unwrap();
    assert!(
        v.get("startedAtMs").is_some() && v.get("initialState").is_some(),
        "{v}"
    );
}

#[test]
fn default_path_is_under_a_target_dir() {
    let p = Store::default_path();
    assert!(p.ends_with("scaffold.db"), "{}", p.display());
    // `<target>/scaffold/`, or `<target>/scaffold/<package>-<hash>/` when
    // CARGO_TARGET_DIR is shared.
    let scaffold = p.ancestors().nth(1).into_iter().chain(p.ancestors().nth(2));
    assert!(
        scaffold
            .filter_map(Path::file_name)
            .any(|n| n == "scaffold"),
        "{}",
        p.display()
    );
}

/// One step of a generated session.
#[derive(Debug, Clone)]
enum Step {
    Set(usize, Value),
    Remove(usize),
    Other,
}

const KEYS: [&str; 4] = ["a", "b", "c", "d"];

fn step() -> impl Strategy<Value = Step> {
    let value = prop_oneof![
        Just(Value::Null),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z]{0,6}".prop_map(Value::String),
        prop::collection::vec(any::<u8>(), 0..3).prop_map(|v| json!(v)),
        any::<bool>().prop_map(|b| json!({"nested": b})),
    ];
    prop_oneof![
        4 => (0..KEYS.len(), value).prop_map(|(k, v)| Step::Set(k, v)),
        1 => (0..KEYS.len()).prop_map(Step::Remove),
        3 => Just(Step::Other),
    ]
}

/// The oracle: apply changes one by one to a map, independently of the store.
fn full_fold(initial: &Map<String, Value>, steps: &[Step], upto: usize) -> Value {
    let mut state = initial.clone();
    for s in &steps[..=upto] {
        match s {
            Step::Set(k, v) => {
                state.insert(KEYS[*k].to_owned(), v.clone());
            }
            Step::Remove(k) => {
                state.remove(KEYS[*k]);
            }
            Step::Other => {}
        }
    }
    Value::Object(state)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn state_at_equals_a_full_fold_at_every_index(
        steps in prop::collection::vec(step(), 1..120),
        interval in 0u64..12,
        chunk in 1usize..9,
        initial_b in any::<Option<i32>>(),
    ) {
        let store = StoreOptions::default().checkpoint_interval(interval).in_memory().unwrap();
        let mut initial = Map::new();
        initial.insert("z".into(), json!("kept"));
        if let Some(b) = initial_b {
            initial.insert("b".into(), json!(b));
        }
        store
            .begin_session(&SessionMeta::new("p", "w").initial_state(Value::Object(initial.clone())))
            .unwrap();
        let signals: Vec<Signal> = steps
            .iter()
            .enumerate()
            .map(|(i, s)| match s {
                Step::Set(k, v) => change(i as u64, KEYS[*k], v.clone()),
                Step::Remove(k) => removal(i as u64, KEYS[*k]),
                Step::Other => signal(i as u64, "text:delta", json!({"content": "x"})),
            })
            .collect();
        for part in signals.chunks(chunk) {
            store.append("p", part).unwrap();
        }
        for i in 0..steps.len() {
            let expected = full_fold(&initial, &steps, i);
            prop_assert_eq!(&store.state_at("p", i as u64).unwrap(), &expected, "index {}", i);
            prop_assert_eq!(
                &store.state_at_without_checkpoints("p", i as u64).unwrap(),
                &expected,
                "index {} without checkpoints",
                i
            );
        }
        // Reads past the end give the final state (finishing may write a last checkpoint).
        store.finish_session("p", &SessionEnd::new(SessionStatus::Completed)).unwrap();
        let last = full_fold(&initial, &steps, steps.len() - 1);
        prop_assert_eq!(&store.state_at("p", steps.len() as u64 + 5).unwrap(), &last);
        prop_assert_eq!(&store.state_at("p", steps.len() as u64 - 1).unwrap(), &last);
    }
}
