//! Session operations: fork (at phases, indices, predicates; from stores and
//! files; in evals), lineage, export/import, score without execution, replay.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use scaffold::_cargo_scaffold_support::eval::CellEnv;
use scaffold::assert::Assertion;
use scaffold::dataset::{Format, load_str};
use scaffold::eval::Eval;
use scaffold::prelude::*;
use scaffold::provider::openai::OpenAi;
use scaffold::provider::recorder::{ProviderRecorder, RecorderMode};
use scaffold::provider::{CompletionRequest, CompletionResponse};
use scaffold::scorer::{ScorerContext, custom};
use scaffold::session::{
    self, ForkFrom, ForkOptions, ForkOrigin, ForkPoint, ForkSource, ReplayOptions, ScoreOptions,
    SessionError, SessionExport,
};
use scaffold::store::{SessionEnd, SessionMeta, SessionStatus};
use scaffold::testing::FakeProviderServer;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Build {
    goal: String,
    plan: String,
    reviews: u32,
    approved: bool,
    code: String,
}

/// planning → review → planning → review → coding → done.
fn build(coder_model: &'static str) -> Workflow<Build> {
    let planner = Agent::<Build>::new("planner")
        .provider(ScriptedProvider::responder("planner-model", |req| {
            ScriptedReply::text(format!("plan after {}", req.messages[0].text()))
        }))
        .prompt(|s| format!("{} reviews", s.reviews))
        .update(|t, s| s.plan = t);
    let reviewer = Agent::<Build>::new("reviewer")
        .provider(ScriptedProvider::responder("reviewer-model", |_| {
            ScriptedReply::text("ok")
        }))
        .prompt(|s| format!("review {}", s.plan))
        .update(|_, s| {
            s.reviews += 1;
            s.approved = s.reviews >= 2;
        });
    let coder = Agent::<Build>::new("coder")
        .provider(ScriptedProvider::responder(coder_model, move |_| {
            ScriptedReply::text(format!("code by {coder_model}"))
        }))
        .prompt(|s| format!("code {}", s.plan))
        .update(|t, s| s.code = t);
    Workflow::new("build", Build::default())
        .start(|input, s| s.goal = input.as_str().unwrap_or_default().into())
        .phase("planning", Phase::run(planner).next("review"))
        .phase(
            "review",
            Phase::run(reviewer).next_with(
                |s: &Build| {
                    if s.approved { "coding" } else { "planning" }
                },
            ),
        )
        .phase("coding", Phase::run(coder).next("done"))
        .terminal("done")
        .output(|s| json!(s.code))
}

/// A variant whose `start` would clobber the state, to prove forks skip it.
fn opus_variant() -> Workflow<Build> {
    build("opus").start(|_, s| s.reviews = 99)
}

async fn base(store: &Store) -> RunResult<Build> {
    let result = run_with(
        &build("sonnet"),
        json!("todo api"),
        &RunOptions::new().store(store.clone()).variant("sonnet"),
    )
    .await;
    assert_eq!(result.error, None);
    result
}

fn entered(signals: &[Signal]) -> Vec<(String, u64)> {
    signals
        .iter()
        .filter(|s| s.name == "phase:entered")
        .map(|s| {
            (
                s.payload["phase"].as_str().unwrap().to_owned(),
                s.payload["occurrence"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The index of the `n`-th (from 1) entry into `phase`.
fn entry_index(signals: &[Signal], phase: &str, n: usize) -> u64 {
    signals
        .iter()
        .filter(|s| s.name == "phase:entered" && s.payload["phase"] == phase)
        .nth(n - 1)
        .unwrap()
        .index
}

fn models(signals: &[Signal]) -> Vec<&str> {
    signals
        .iter()
        .filter(|s| s.name == "provider:start")
        .map(|s| s.payload["model"].as_str().unwrap())
        .collect()
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "scaffold-session-{}-{}-{name}",
        std::process::id(),
        uuid_like()
    ))
}

fn uuid_like() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{nanos:x}")
}

async fn fork_child(
    store: &Store,
    parent: &str,
    at: ForkPoint,
    workflow: &Workflow<Build>,
) -> RunResult<Build> {
    let child = session::fork(
        &ForkSource::stored(store, parent),
        &at,
        workflow,
        &ForkOptions::new().run(RunOptions::new().variant("opus")),
    )
    .await
    .unwrap();
    assert_eq!(child.error, None);
    child
}

#[tokio::test]
async fn forks_at_phase_first_last_and_nth_occurrence() {
    let store = Store::in_memory().unwrap();
    let parent = base(&store).await;
    assert_eq!(
        entered(&parent.signals),
        [
            ("planning".into(), 1),
            ("review".into(), 1),
            ("planning".into(), 2),
            ("review".into(), 2),
            ("coding".into(), 1),
            ("done".into(), 1)
        ]
    );

    // First entry into planning: the state after `start`, before any plan.
    let first = fork_child(
        &store,
        &parent.session_id,
        ForkPoint::phase("planning").first(),
        &opus_variant(),
    )
    .await;
    let idx = entry_index(&parent.signals, "planning", 1);
    let record = store.session(&first.session_id).unwrap().unwrap();
    assert_eq!(
        record.meta.parent_id.as_deref(),
        Some(parent.session_id.as_str())
    );
    assert_eq!(
        record.meta.fork_point,
        Some(
            json!({"phase": "planning", "occurrence": "first", "eventIndex": idx, "resumeAt": "planning"})
        )
    );
    assert_eq!(
        record.meta.initial_state,
        json!({"goal": "todo api", "plan": "", "reviews": 0, "approved": false, "code": ""})
    );
    assert_eq!(record.meta.input, json!("todo api"));
    assert_eq!(record.meta.variant.as_deref(), Some("opus"));
    // The child's own stream: harness:start (with forkedFrom), then the fork phase.
    assert_eq!(first.signals[0].name, "harness:start");
    assert_eq!(
        first.signals[0].payload["forkedFrom"]["sessionId"],
        json!(parent.session_id)
    );
    assert_eq!(first.signals[1].name, "phase:entered");
    assert_eq!(first.signals[1].payload["phase"], "planning");
    // `start` was skipped (it would have set reviews to 99), the loop ran again.
    assert_eq!(first.state.reviews, 2);
    assert_eq!(first.state.code, "code by opus");

    // The second entry into planning: after one review; `last` is the same one.
    let second = fork_child(
        &store,
        &parent.session_id,
        ForkPoint::phase("planning").nth(2),
        &opus_variant(),
    )
    .await;
    let last = fork_child(
        &store,
        &parent.session_id,
        ForkPoint::phase("planning").last(),
        &opus_variant(),
    )
    .await;
    for child in [&second, &last] {
        let record = store.session(&child.session_id).unwrap().unwrap();
        assert_eq!(record.meta.initial_state["reviews"], 1);
        assert_eq!(record.meta.initial_state["plan"], "plan after 0 reviews");
        assert_eq!(
            record.meta.fork_point.as_ref().unwrap()["eventIndex"],
            entry_index(&parent.signals, "planning", 2)
        );
        // The child counts its own occurrences: planning 1, review 1, coding 1.
        assert_eq!(
            entered(&child.signals),
            [
                ("planning".into(), 1),
                ("review".into(), 1),
                ("coding".into(), 1),
                ("done".into(), 1)
            ]
        );
    }
    let record = store.session(&last.session_id).unwrap().unwrap();
    assert_eq!(
        record.meta.fork_point.as_ref().unwrap()["occurrence"],
        "last"
    );
    let record = store.session(&second.session_id).unwrap().unwrap();
    assert_eq!(record.meta.fork_point.as_ref().unwrap()["occurrence"], 2);

    // Forking into coding uses the variant's coder: same plan, other model.
    let coding = fork_child(
        &store,
        &parent.session_id,
        ForkPoint::phase("coding").first(),
        &opus_variant(),
    )
    .await;
    assert_eq!(models(&coding.signals), ["opus"]);
    assert_eq!(coding.state.plan, parent.state.plan);
    assert_eq!(coding.state.code, "code by opus");
    assert_eq!(parent.state.code, "code by sonnet");
    assert_eq!(coding.output, Some(json!("code by opus")));
    assert!(
        !coding
            .signals
            .iter()
            .any(|s| s.agent.as_deref() == Some("planner"))
    );
}

#[tokio::test]
async fn forks_at_an_index_or_predicate_re_enter_the_current_phase() {
    let store = Store::in_memory().unwrap();
    let parent = base(&store).await;

    // Index: the second plan change, inside the second planning phase.
    let plan_change = parent
        .signals
        .iter()
        .filter(|s| s.name == "state:plan:changed")
        .nth(1)
        .unwrap()
        .index;
    let child = fork_child(
        &store,
        &parent.session_id,
        ForkPoint::index(plan_change),
        &opus_variant(),
    )
    .await;
    let record = store.session(&child.session_id).unwrap().unwrap();
    assert_eq!(
        record.meta.fork_point,
        Some(json!({"eventIndex": plan_change, "resumeAt": "planning"}))
    );
    assert_eq!(
        record.meta.initial_state,
        store.state_at(&parent.session_id, plan_change).unwrap()
    );
    assert_eq!(record.meta.initial_state["plan"], "plan after 1 reviews");
    assert_eq!(entered(&child.signals)[0], ("planning".into(), 1));

    // Predicate: the first point where one review is done, in the first review phase.
    let child = fork_child(
        &store,
        &parent.session_id,
        ForkPoint::when("one review", |s| s["reviews"] == 1),
        &opus_variant(),
    )
    .await;
    let record = store.session(&child.session_id).unwrap().unwrap();
    let reviews_changed = parent
        .signals
        .iter()
        .find(|s| s.name == "state:reviews:changed")
        .unwrap()
        .index;
    assert_eq!(
        record.meta.fork_point,
        Some(json!({"where": "one review", "eventIndex": reviews_changed, "resumeAt": "review"}))
    );
    assert_eq!(record.meta.initial_state["reviews"], 1);
    // Re-entering review runs the reviewer again: two reviews, approved, coded.
    assert_eq!(entered(&child.signals)[0], ("review".into(), 1));
    assert_eq!(child.state.reviews, 2);
    assert_eq!(child.state.code, "code by opus");

    // Index 0 precedes every phase: the first phase the parent entered.
    let at_start = ForkPoint::index(0)
        .resolve(&parent.session_id, &json!({}), &parent.signals)
        .unwrap();
    assert_eq!(at_start.phase, "planning");
    assert_eq!(at_start.event_index, 0);
}

#[tokio::test]
async fn lineage_and_children_outlive_their_parent() {
    let store = Store::in_memory().unwrap();
    let parent = base(&store).await;
    let child = fork_child(
        &store,
        &parent.session_id,
        ForkPoint::phase("review").first(),
        &opus_variant(),
    )
    .await;
    let grandchild = fork_child(
        &store,
        &child.session_id,
        ForkPoint::phase("coding").first(),
        &build("haiku"),
    )
    .await;
    let ids = |chain: Vec<scaffold::store::SessionRecord>| -> Vec<String> {
        chain.into_iter().map(|r| r.meta.id).collect()
    };
    assert_eq!(
        ids(session::lineage(&store, &grandchild.session_id).unwrap()),
        [
            grandchild.session_id.clone(),
            child.session_id.clone(),
            parent.session_id.clone()
        ]
    );

    assert!(store.delete_session(&parent.session_id).unwrap());
    let record = store.session(&child.session_id).unwrap().unwrap();
    assert_eq!(record.status, SessionStatus::Completed);
    assert_eq!(
        record.meta.parent_id.as_deref(),
        Some(parent.session_id.as_str())
    );
    let signals = store.signals(&child.session_id).unwrap();
    assert_eq!(signals, child.signals);
    let last = signals.len() as u64 - 1;
    let state: Build =
        serde_json::from_value(store.state_at(&child.session_id, last).unwrap()).unwrap();
    assert_eq!(state, child.state);
    // The chain stops at the deleted parent.
    assert_eq!(
        ids(session::lineage(&store, &grandchild.session_id).unwrap()),
        [grandchild.session_id.clone(), child.session_id.clone()]
    );
    // And the child can itself be forked.
    let again = fork_child(
        &store,
        &child.session_id,
        ForkPoint::phase("review").last(),
        &build("haiku"),
    )
    .await;
    assert_eq!(again.state.code, "code by haiku");
}

#[tokio::test]
async fn export_import_and_fork_from_a_file_after_the_parent_is_deleted() {
    let store = Store::in_memory().unwrap();
    let parent = base(&store).await;
    let child = fork_child(
        &store,
        &parent.session_id,
        ForkPoint::phase("coding").first(),
        &opus_variant(),
    )
    .await;
    let path = temp_path("parent.json");
    SessionExport::from_store(&store, &parent.session_id)
        .unwrap()
        .save(&path)
        .unwrap();
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(file["format"], "scaffold.session");
    assert_eq!(file["version"], 1);
    assert_eq!(
        file["signals"].as_array().unwrap().len(),
        parent.signals.len()
    );
    store.delete_session(&parent.session_id).unwrap();

    // Fork from the file: same point, same state as from the store.
    let from_file = session::fork(
        &ForkSource::file(&path).unwrap(),
        &ForkPoint::phase("coding").first(),
        &opus_variant(),
        &ForkOptions::new().run(RunOptions::new().store(store.clone())),
    )
    .await
    .unwrap();
    let a = store.session(&child.session_id).unwrap().unwrap();
    let b = store.session(&from_file.session_id).unwrap().unwrap();
    assert_eq!(a.meta.initial_state, b.meta.initial_state);
    assert_eq!(a.meta.fork_point, b.meta.fork_point);
    assert_eq!(
        b.meta.parent_id.as_deref(),
        Some(parent.session_id.as_str())
    );
    assert_eq!(from_file.state, child.state);

    // Import both into another store: everything comes back, lineage too.
    let other = Store::in_memory().unwrap();
    SessionExport::load(&path).unwrap().import(&other).unwrap();
    SessionExport::from_store(&store, &child.session_id)
        .unwrap()
        .import(&other)
        .unwrap();
    let imported = other.session(&parent.session_id).unwrap().unwrap();
    assert_eq!(imported.status, SessionStatus::Completed);
    assert_eq!(imported.output, parent.output);
    assert_eq!(
        imported.final_state,
        Some(serde_json::to_value(&parent.state).unwrap())
    );
    assert_eq!(other.signals(&parent.session_id).unwrap(), parent.signals);
    let imported_child = other.session(&child.session_id).unwrap().unwrap();
    assert_eq!(imported_child.meta, a.meta);
    assert_eq!(
        session::lineage(&other, &child.session_id).unwrap().len(),
        2
    );
    let err = SessionExport::load(&path)
        .unwrap()
        .import(&other)
        .unwrap_err();
    assert!(
        err.to_string().contains(&format!(
            "session {} is already in the store",
            parent.session_id
        )),
        "{err}"
    );

    // Bad files name themselves and say what is wrong.
    let missing = temp_path("missing.json");
    let err = SessionExport::load(&missing).unwrap_err().to_string();
    assert!(err.contains(&missing.display().to_string()), "{err}");
    let bad = temp_path("bad.json");
    std::fs::write(&bad, r#"{"format": "other", "version": 1}"#).unwrap();
    let err = SessionExport::load(&bad).unwrap_err().to_string();
    assert!(err.contains(&bad.display().to_string()), "{err}");
    assert!(err.contains("expected \"scaffold.session\""), "{err}");
    let mut gap = file.clone();
    gap["signals"].as_array_mut().unwrap().remove(3);
    std::fs::write(&bad, gap.to_string()).unwrap();
    let err = SessionExport::load(&bad).unwrap_err().to_string();
    assert!(
        err.contains("signal #3") && err.contains("without gaps"),
        "{err}"
    );
    for p in [path, bad] {
        let _ = std::fs::remove_file(p);
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Other {
    tickets: Vec<String>,
}

#[tokio::test]
async fn fork_errors_name_the_session_and_what_exists() {
    let store = Store::in_memory().unwrap();
    let parent = base(&store).await;
    let id = parent.session_id.clone();
    let source = ForkSource::stored(&store, &id);
    let fork_err = |at: ForkPoint| {
        let source = source.clone();
        async move {
            session::fork(&source, &at, &build("opus"), &ForkOptions::new())
                .await
                .unwrap_err()
                .to_string()
        }
    };

    let err = fork_err(ForkPoint::phase("deploy").first()).await;
    assert_eq!(
        err,
        format!(
            "phase `deploy` was never entered in session {id} (phases entered: planning, review, coding, done)"
        )
    );
    let err = fork_err(ForkPoint::phase("review").nth(3)).await;
    assert_eq!(
        err,
        format!("`review` was entered 2 times in session {id}; occurrence 3 does not exist")
    );
    let n = parent.signals.len();
    let err = fork_err(ForkPoint::index(1000)).await;
    assert_eq!(
        err,
        format!(
            "index 1000 is past the end of session {id}, which has {n} signals (indices 0..={})",
            n - 1
        )
    );
    let err = fork_err(ForkPoint::when("ten reviews", |s| s["reviews"] == 10)).await;
    assert_eq!(
        err,
        format!(
            "the fork predicate `ten reviews` is true at none of the {n} signals of session {id}"
        )
    );
    let err = session::fork(
        &ForkSource::stored(&store, "nope"),
        &ForkPoint::index(0),
        &build("opus"),
        &ForkOptions::new(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("session `nope` is not in the store :memory:"),
        "{err}"
    );

    // The state does not fit the workflow's state type.
    let other = Workflow::new("other", Other { tickets: vec![] }).phase(
        "coding",
        Phase::run(Agent::<Other>::new("x").provider(ScriptedProvider::new("m"))),
    );
    let err = session::fork(
        &source,
        &ForkPoint::phase("coding").first(),
        &other,
        &ForkOptions::new(),
    )
    .await
    .unwrap_err();
    let at = entry_index(&parent.signals, "coding", 1);
    assert!(matches!(err, SessionError::State { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "the state at signal {at} of session {id} does not deserialize into `session::Other`: missing field `tickets`"
        )
    );
    // The workflow has no such phase.
    let err = session::fork(
        &source,
        &ForkPoint::phase("review").first(),
        &other,
        &ForkOptions::new(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        "the fork continues at phase `review`, which is not a phase of workflow `other` (phases: coding)"
    );
}

#[test]
fn fork_points_parse_from_strings() {
    for text in [
        "phase:coding:first",
        "phase:coding:last",
        "phase:coding:2",
        "index:47",
    ] {
        assert_eq!(text.parse::<ForkPoint>().unwrap().to_string(), text);
    }
    assert_eq!(
        "phase:a:b:last".parse::<ForkPoint>().unwrap().spec(),
        json!({"phase": "a:b", "occurrence": "last"})
    );
    for (bad, why) in [
        ("coding", "starts with neither"),
        ("phase:coding", "occurrence is missing"),
        ("phase:coding:0", "count from 1"),
        ("phase:coding:second", "first, last or a number"),
        ("index:x", "whole number"),
        ("phase::first", "phase name is empty"),
    ] {
        let err = bad.parse::<ForkPoint>().unwrap_err().to_string();
        assert!(err.contains(why), "{bad}: {err}");
        assert!(
            err.contains(
                "expected phase:<name>:first, phase:<name>:last, phase:<name>:<n> (n from 1) or index:<n>"
            ),
            "{err}"
        );
    }

    // The environment pair the harness reads.
    assert!(ForkFrom::from_env_values(None, None).unwrap().is_none());
    let from = ForkFrom::from_env_values(Some("abc-123"), Some("phase:coding:first"))
        .unwrap()
        .unwrap();
    assert_eq!(from.origin(), &ForkOrigin::Session("abc-123".into()));
    assert_eq!(from.point().to_string(), "phase:coding:first");
    let from = ForkFrom::from_env_values(Some("evals/sessions/base.json"), Some("index:4"))
        .unwrap()
        .unwrap();
    assert_eq!(
        from.origin(),
        &ForkOrigin::File("evals/sessions/base.json".into())
    );
    let err = ForkFrom::from_env_values(Some("abc"), None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("SCAFFOLD_FORK_AT must say where"), "{err}");
    let err = ForkFrom::from_env_values(None, Some("index:1"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("SCAFFOLD_FORK_FROM must name"), "{err}");
    let err = ForkFrom::from_env_values(Some("abc"), Some("coding"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("is not a fork point"), "{err}");
}

const CASES: &str = r#"
name: builds.v1
cases:
  - id: todo
    input: todo api
    assertions:
      - type: output.contains
        text: "code by"
  - id: other
    input: chat app
    assertions: []
"#;

#[tokio::test]
async fn eval_fork_from_gives_every_variant_the_same_state() {
    let store = Store::in_memory().unwrap();
    let parent = base(&store).await;
    let dataset = load_str(CASES, Format::Yaml, "builds.yaml").unwrap();
    let eval = Eval::new()
        .name("coders")
        .variant("sonnet", build("sonnet"))
        .variant("opus", build("opus"))
        .dataset(dataset)
        .trials(2)
        .fork_from(ForkFrom::session(&parent.session_id).at(ForkPoint::phase("coding").first()));
    let env = CellEnv {
        store: Some(store.clone()),
        transport: None,
        virtual_time: false,
        tools: None,
        recorder: None,
        bridges: None,
    };
    let expected_state = store
        .state_at(
            &parent.session_id,
            entry_index(&parent.signals, "coding", 1),
        )
        .unwrap();
    let mut initial_states = Vec::new();
    for cell in eval.cells() {
        let (result, run) = eval.run_cell(&cell, &env).await;
        if cell.case.id == "other" {
            // Not the parent's input: the cell fails saying both.
            assert!(!result.passed);
            let error = result.error.unwrap();
            assert!(
                error.contains("case `other` has input \"chat app\"")
                    && error.contains(&format!(
                        "the parent session {} ran on input \"todo api\"",
                        parent.session_id
                    )),
                "{error}"
            );
            assert!(run.signals.is_empty());
            continue;
        }
        assert!(result.passed, "{:?}", result.failures());
        let record = store.session(&result.session_id).unwrap().unwrap();
        assert_eq!(
            record.meta.parent_id.as_deref(),
            Some(parent.session_id.as_str())
        );
        assert_eq!(
            record.meta.variant.as_deref(),
            Some(cell.id.variant.as_str())
        );
        assert!(record.meta.tags.contains(&"dataset:builds.v1".to_owned()));
        assert!(
            record
                .meta
                .tags
                .contains(&format!("trial:{}", cell.id.trial.unwrap()))
        );
        assert_eq!(
            run.output,
            Some(json!(format!("code by {}", cell.id.variant)))
        );
        assert_eq!(models(&run.signals), [cell.id.variant.as_str()]);
        initial_states.push(record.meta.initial_state);
    }
    assert_eq!(initial_states.len(), 4);
    assert!(initial_states.iter().all(|s| *s == expected_state));

    // The same through the erased eval, forking from an exported file set later.
    let path = temp_path("eval-parent.json");
    SessionExport::from_store(&store, &parent.session_id)
        .unwrap()
        .save(&path)
        .unwrap();
    let dataset = load_str(CASES, Format::Yaml, "builds.yaml").unwrap();
    let mut erased = scaffold::__private::erase(
        Eval::new()
            .name("coders")
            .variant("opus", build("opus"))
            .dataset(dataset),
    );
    assert!(erased.forks_from().is_none());
    let file = path.file_name().unwrap().to_str().unwrap().to_owned();
    erased.set_fork_from(
        ForkFrom::file(file)
            .at(ForkPoint::phase("coding").first())
            .base_dir(path.parent().unwrap()),
    );
    let no_store = CellEnv::default();
    let outcome = erased.run_cell(0, &no_store).await;
    assert!(outcome.result.passed, "{:?}", outcome.result.failures());
    let summary = outcome.summary();
    assert_eq!(summary["output"], json!("code by opus"));
    assert_eq!(summary["trajectory"][1]["phase"], "coding");

    // A session origin needs a store.
    erased.set_fork_from(ForkFrom::session("abc").at(ForkPoint::index(1)));
    let outcome = erased.run_cell(0, &no_store).await;
    let error = outcome.result.error.unwrap();
    assert_eq!(
        error,
        "fork from session abc at index:1: cannot fork from session `abc`: there is no session store to read it from"
    );
    let _ = std::fs::remove_file(path);
}

/// A provider that fails the test when called.
struct Forbidden;

#[async_trait]
impl Provider for Forbidden {
    fn name(&self) -> &str {
        "forbidden"
    }
    fn model(&self) -> &str {
        "forbidden"
    }
    async fn complete(
        &self,
        _request: &CompletionRequest,
        _sink: &mut dyn scaffold::provider::StreamSink,
    ) -> Result<CompletionResponse, ProviderError> {
        panic!("score must not call a provider");
    }
}

#[tokio::test]
async fn score_grades_a_stored_session_without_running_it() {
    let store = Store::in_memory().unwrap();
    let parent = base(&store).await;

    let typed = ScoreOptions::<Build>::new()
        .scorer(custom("approved", |ctx: &ScorerContext<'_, Build>| {
            ctx.state.approved
        }))
        .scorer(scaffold::scorer::output_valid())
        .assertions([
            Assertion::output_contains("code by sonnet"),
            Assertion::snapshot_final("reviews", json!(2)),
            Assertion::signal_contains("agent:completed"),
        ])
        .judge(Arc::new(Forbidden));
    let report = session::score(&store, &parent.session_id, &typed)
        .await
        .unwrap();
    assert!(report.passed, "{report:?}");
    assert_eq!(report.scores.len(), 2);
    assert_eq!(report.assertions.len(), 3);
    assert_eq!(report.signal_count, parent.signals.len());
    assert_eq!(report.status, SessionStatus::Completed);
    assert_eq!(
        report.final_state,
        serde_json::to_value(&parent.state).unwrap()
    );
    assert_eq!(report.metrics, parent.metrics);

    // Untyped, as the CLI grades: S = Value; a failing assertion fails it.
    let untyped = ScoreOptions::<Value>::new()
        .scorer(custom("has-code", |ctx: &ScorerContext<'_, Value>| {
            ctx.state["code"].as_str().is_some_and(|c| !c.is_empty())
        }))
        .assertions([Assertion::output_contains("code by opus")]);
    let report = session::score(&store, &parent.session_id, &untyped)
        .await
        .unwrap();
    assert!(report.scores[0].pass);
    assert!(!report.assertions[0].passed);
    assert!(!report.passed);

    // A running session is refused unless asked for; unknown ones are named.
    store
        .begin_session(&SessionMeta::new("live", "build").initial_state(json!({"code": ""})))
        .unwrap();
    let err = session::score(&store, "live", &untyped).await.unwrap_err();
    assert!(
        err.to_string().starts_with("session live is still running"),
        "{err}"
    );
    let report = session::score(&store, "live", &untyped.allow_running())
        .await
        .unwrap();
    assert_eq!(report.status, SessionStatus::Running);
    assert!(!report.scores[0].pass);
    let err = session::score(&store, "ghost", &ScoreOptions::<Value>::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("session `ghost` is not in the store :memory:"),
        "{err}"
    );
    // A final state that is not the type's.
    store
        .finish_session(
            "live",
            &SessionEnd::new(SessionStatus::Completed).final_state(json!({"code": 1})),
        )
        .unwrap();
    let err = session::score(&store, "live", &ScoreOptions::<Build>::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "the final state of session live does not deserialize into `session::Build`: "
        ),
        "{err}"
    );
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Doc {
    topic: String,
    draft: String,
    review: String,
}

fn doc_workflow(base_url: &str, shout: bool) -> Workflow<Doc> {
    let writer = Agent::<Doc>::new("writer")
        .provider(
            OpenAi::new("gpt-4o-mini")
                .base_url(base_url)
                .api_key("sk-test"),
        )
        .prompt(|s| format!("Write about {}", s.topic))
        .update(|t, s| s.draft = t);
    let reviewer = Agent::<Doc>::new("reviewer")
        .provider(
            OpenAi::new("gpt-4o-mini")
                .base_url(base_url)
                .api_key("sk-test"),
        )
        .prompt(|s| format!("Review: {}", s.draft))
        .update(move |t, s| s.review = if shout { t.to_uppercase() } else { t });
    Workflow::new("write-review", Doc::default())
        .start(|input, s| s.topic = input.as_str().unwrap_or_default().to_string())
        .phase("write", Phase::run(writer).next("review"))
        .phase("review", Phase::run(reviewer))
}

const DOCS: &str = r#"
name: docs.v1
cases:
  - id: rust
    input: rust
    assertions: []
"#;

#[tokio::test]
async fn replay_matches_through_recordings_and_lists_differences() {
    let dir = temp_path("recordings");
    let server = FakeProviderServer::start().await.unwrap();
    let store = Store::in_memory().unwrap();
    let dataset = load_str(DOCS, Format::Yaml, "docs.yaml").unwrap();
    let eval = Eval::new()
        .name("docs")
        .variant("mini", doc_workflow(&server.openai_base_url(), false))
        .dataset(dataset);
    let env = CellEnv {
        store: Some(store.clone()),
        transport: Some(ProviderRecorder::new(&dir, RecorderMode::Record).transport()),
        virtual_time: false,
        tools: None,
        recorder: None,
        bridges: None,
    };
    let cell = eval.cells().next().unwrap();
    let (result, _) = eval.run_cell(&cell, &env).await;
    assert!(result.passed, "{:?}", result.failures());
    let calls = server.request_count();
    assert_eq!(calls, 2);
    let id = result.session_id;

    // Same workflow, dead address: everything from the recordings, identical.
    let dead = "http://127.0.0.1:9/v1";
    let options = ReplayOptions::new().recordings(&dir);
    let report = session::replay(&store, &id, &doc_workflow(dead, false), &options)
        .await
        .unwrap();
    assert_eq!(report.replayed.error, None);
    assert!(report.identical, "{:?}", report.differences);
    assert_eq!(
        server.request_count(),
        calls,
        "replay must not call the server"
    );
    assert_eq!(report.original.meta.id, id);

    // A workflow change: the reviewer's update differs.
    let report = session::replay(&store, &id, &doc_workflow(dead, true), &options)
        .await
        .unwrap();
    assert!(!report.identical);
    let first = &report.differences[0];
    assert_eq!(first.name, "state:review:changed");
    assert_eq!(first.field, "payload.newValue");
    let review = report.original.final_state.as_ref().unwrap()["review"].clone();
    assert_eq!(review, "Echo: Review: Echo: Write about rust");
    assert_eq!(first.original, Some(review.clone()));
    assert_eq!(
        first.replayed,
        Some(json!(review.as_str().unwrap().to_uppercase()))
    );
    assert_eq!(report.differences.last().unwrap().name, "harness:end");

    // An edited cassette: the reviewer's recorded answer changed.
    let cassette = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("reviewer"))
        .unwrap();
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(text.contains("Echo: Review: "), "{text}");
    std::fs::write(
        &cassette,
        text.replace("Echo: Review: ", "Edited: Review: "),
    )
    .unwrap();
    let report = session::replay(&store, &id, &doc_workflow(dead, false), &options)
        .await
        .unwrap();
    assert!(!report.identical);
    let provider_end = report
        .differences
        .iter()
        .find(|d| d.name == "provider:end")
        .expect("the reviewer's provider:end differs");
    assert_eq!(provider_end.field, "payload.output");
    assert!(
        provider_end
            .replayed
            .as_ref()
            .unwrap()
            .as_str()
            .unwrap()
            .starts_with("Edited: Review: "),
        "{provider_end}"
    );
    assert_eq!(
        report.original.meta.tags[..3],
        ["eval:docs", "dataset:docs.v1", "case:rust"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn replay_of_a_fork_resumes_where_the_fork_did() {
    let store = Store::in_memory().unwrap();
    let parent = base(&store).await;
    let child = fork_child(
        &store,
        &parent.session_id,
        ForkPoint::phase("review").last(),
        &opus_variant(),
    )
    .await;
    let report = session::replay(
        &store,
        &child.session_id,
        &opus_variant(),
        &ReplayOptions::new().save(true),
    )
    .await
    .unwrap();
    assert!(report.identical, "{:?}", report.differences);
    assert_eq!(entered(&report.replayed.signals)[0], ("review".into(), 1));
    let saved = store.session(&report.replayed.session_id).unwrap().unwrap();
    assert!(
        saved
            .meta
            .tags
            .contains(&format!("replay-of:{}", child.session_id))
    );

    // Another coder: the differing signals are listed, from the first call on.
    let report = session::replay(
        &store,
        &child.session_id,
        &build("haiku"),
        &ReplayOptions::new(),
    )
    .await
    .unwrap();
    assert!(!report.identical);
    let models: Vec<_> = report
        .differences
        .iter()
        .filter(|d| d.field == "payload.model")
        .collect();
    assert_eq!(models[0].original, Some(json!("opus")));
    assert_eq!(models[0].replayed, Some(json!("haiku")));
}
