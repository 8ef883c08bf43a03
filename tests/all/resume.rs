//! Resuming an interrupted eval run, for real: the fixture suite
//! (`tests/fixtures/resume_fixture.rs`, eight cells) is killed with SIGKILL
//! part-way, then run again with `SCAFFOLD_RESUME=1`. Also the harness's
//! other environment variables on the same fixture.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use scaffold::_cargo_scaffold_support::eval::EvalResults;
use scaffold::store::{SessionFilter, SessionStatus, Store};

use crate::common;
use crate::fixture::{CELLS, FixtureDir, fixture_command, run, run_as_nextest, written_results};

use common::{TempDir, text};

/// The lines of stderr that are errors.
fn error_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("error"))
        .map(str::to_string)
        .collect()
}

/// `CELLS[i]` for each of `indices`, sorted.
fn sorted_cells(indices: impl IntoIterator<Item = usize>) -> Vec<String> {
    let mut cells: Vec<String> = indices.into_iter().map(|i| CELLS[i].to_string()).collect();
    cells.sort();
    cells
}

/// The fixture started in `dir` with `args` and `envs`, in the background,
/// its output in `{name}.out` and `{name}.err`.
fn spawn(dir: &TempDir, name: &str, args: &[&str], envs: &[(&str, &str)]) -> Child {
    let stdout = std::fs::File::create(dir.join(&format!("{name}.out"))).unwrap();
    let stderr = std::fs::File::create(dir.join(&format!("{name}.err"))).unwrap();
    fixture_command(dir, args, envs)
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("the fixture starts")
}

/// What the background fixture `name` printed.
fn printed(dir: &TempDir, name: &str) -> String {
    format!(
        "{}{}",
        std::fs::read_to_string(dir.join(&format!("{name}.out"))).unwrap_or_default(),
        std::fs::read_to_string(dir.join(&format!("{name}.err"))).unwrap_or_default()
    )
}

/// Wait until `ready` holds of the newest run in `dir`'s store (its id and
/// how many cells it recorded) and of how many cells started, while the
/// background fixture `child` (named `name`) runs; returns the run id.
fn wait_for(
    dir: &TempDir,
    child: &mut Child,
    name: &str,
    ready: impl Fn(usize, usize) -> bool,
) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut store = None;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "the fixture ended ({status}) too soon:\n{}",
                printed(dir, name)
            );
        }
        assert!(Instant::now() < deadline, "not ready in time");
        if store.is_none() && dir.db().exists() {
            store = Store::open(dir.db()).ok();
        }
        let run = store
            .as_ref()
            .and_then(|s| s.eval_runs().ok())
            .and_then(|runs| runs.into_iter().next());
        let started = dir.started().values().sum::<usize>();
        if let Some(run) = run.filter(|run| ready(run.cells, started)) {
            return run.id;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Start the fixture with `args` and `envs`, one cell at a time, each
/// sleeping 400 ms, and kill it (SIGKILL) once `recorded` cells are
/// recorded and the next one is in flight. Returns the run id.
fn run_killed(dir: &TempDir, args: &[&str], envs: &[(&str, &str)], recorded: usize) -> String {
    let mut args = args.to_vec();
    args.extend(["--test-threads", "1"]);
    let mut envs = envs.to_vec();
    envs.push(("RESUME_FIXTURE_SLEEP_MS", "400"));
    let mut child = spawn(dir, "killed", &args, &envs);
    let id = wait_for(dir, &mut child, "killed", |cells, _| cells >= recorded);
    kill_in_flight(dir, &mut child, "killed");
    id
}

/// Kill (SIGKILL) the background fixture `child` (named `name`, its cells
/// sleeping 400 ms) while a cell is in flight, its session begun and committed.
fn kill_in_flight(dir: &TempDir, child: &mut Child, name: &str) {
    wait_for(dir, child, name, |cells, started| started > cells);
    // The session's begin is committed within milliseconds; the cell sleeps on.
    std::thread::sleep(Duration::from_millis(100));
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
}

/// How many sessions of run `id` have `status`.
fn sessions_of(store: &Store, id: &str, status: SessionStatus) -> usize {
    let filter = SessionFilter::default()
        .tag(format!("run:{id}"))
        .status(status);
    store.list(&filter).unwrap().len()
}

#[test]
fn a_killed_run_resumes_without_redoing_finished_cells() {
    let started = Instant::now();
    let dir = TempDir::new("resume");
    let mut child = spawn(
        &dir,
        "first",
        &["--test-threads", "1"],
        &[("RESUME_FIXTURE_SLEEP_MS", "400")],
    );

    // Wait until at least three cells are recorded, then kill -9.
    let run_id = wait_for(&dir, &mut child, "first", |cells, _| cells >= 3);
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    let store = Store::open(dir.db()).unwrap();

    let before = store.eval_run(&run_id).unwrap().unwrap();
    assert!(!before.finished, "{before:?}");
    let finished_before: BTreeSet<String> = store
        .recorded_cells(&run_id)
        .unwrap()
        .into_iter()
        .map(|c| c.cell)
        .collect();
    assert!(
        (3..CELLS.len()).contains(&finished_before.len()),
        "killed too late to test anything: {finished_before:?}"
    );
    assert!(finished_before.contains(CELLS[0]), "{finished_before:?}");

    let resumed = run(&dir, &["--test-threads", "1"], &[("SCAFFOLD_RESUME", "1")]);
    let out = text(&resumed);
    assert!(resumed.status.success(), "{out}");
    assert!(
        out.contains(&format!(
            "resuming run {run_id}: {} of {} cells already finished",
            finished_before.len(),
            CELLS.len()
        )),
        "{out}"
    );
    // The first cell fails on purpose, a failure its gate allows: its stored
    // verdict is reported again, as the first run reported it.
    assert!(
        out.contains(
            "test [eval] resume-fixture::alpha::c1 ... ignored (FAILED, allowed by the gate: \
             min_pass_rate 75%)"
        ),
        "{out}"
    );
    assert!(
        out.contains("test [gate] resume-fixture            ... ok"),
        "{out}"
    );
    assert!(
        out.contains("running 9 tests")
            && out.contains("test result: ok. 8 passed; 0 failed; 1 ignored"),
        "{out}"
    );
    assert!(out.contains(&format!("Run: {run_id}")), "{out}");

    // No finished cell ran twice; only the cell killed in flight may have.
    let counts = dir.started();
    for cell in CELLS {
        let n = counts.get(cell).copied().unwrap_or(0);
        if finished_before.contains(cell) {
            assert_eq!(n, 1, "{cell} finished before the kill but ran {n} times");
        } else {
            assert!((1..=2).contains(&n), "{cell} ran {n} times");
        }
    }
    assert!(
        counts.values().filter(|&&n| n == 2).count() <= 1,
        "{counts:?}"
    );
    assert_eq!(counts.len(), CELLS.len(), "{counts:?}");

    // The run is finished and holds every cell once; no other run was begun.
    let runs = store.eval_runs().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(runs[0].finished && runs[0].finished_at_ms.is_some());
    assert_eq!((runs[0].cells, runs[0].passed), (8, 7));
    let results = store.eval_results(&run_id).unwrap();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].cell_count(), 8);
    assert!(results[0].gate_passed());

    // So does the results JSON.
    let (json, cells) = written_results(&dir);
    assert_eq!(cells, sorted_cells(0..CELLS.len()));
    assert_eq!((json.passed_count(), json.config.inputs), (7, 4));
    eprintln!(
        "kill -9 and resume: {} cells before the kill, {:.1}s",
        finished_before.len(),
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn resuming_with_nothing_to_resume_is_one_clear_error() {
    let dir = TempDir::new("resume-nothing");
    // An empty database.
    let out = run(&dir, &[], &[("SCAFFOLD_RESUME", "1")]);
    assert!(!out.status.success());
    let errors = error_lines(&out);
    assert_eq!(errors.len(), 1, "{}", text(&out));
    assert!(
        errors[0].contains("SCAFFOLD_RESUME")
            && errors[0].contains("no unfinished eval run")
            && errors[0].contains("unset SCAFFOLD_RESUME to start a fresh run"),
        "{}",
        errors[0]
    );
    assert!(dir.started().is_empty(), "no cell may run");

    // After a run that finished, there is still nothing to resume.
    let first = run(&dir, &[], &[]);
    assert!(first.status.success(), "{}", text(&first));
    let store = Store::open(dir.db()).unwrap();
    let runs = store.eval_runs().unwrap();
    assert!(runs.len() == 1 && runs[0].finished, "{runs:?}");
    let again = run(&dir, &[], &[("SCAFFOLD_RESUME", "latest")]);
    assert!(!again.status.success());
    assert!(
        error_lines(&again)[0].contains("no unfinished eval run"),
        "{}",
        text(&again)
    );
    // Naming it: already finished.
    let named = run(&dir, &[], &[("SCAFFOLD_RESUME", &runs[0].id)]);
    assert!(
        error_lines(&named)[0].contains("already finished"),
        "{}",
        text(&named)
    );
    // An unknown id.
    let unknown = run(&dir, &[], &[("SCAFFOLD_RESUME", "no-such-run")]);
    assert!(
        error_lines(&unknown)[0].contains("no eval run no-such-run"),
        "{}",
        text(&unknown)
    );
    // In memory, nothing outlives a run.
    let memory = run(
        &dir,
        &[],
        &[("SCAFFOLD_RESUME", "1"), ("SCAFFOLD_DATABASE", ":memory:")],
    );
    let errors = error_lines(&memory);
    assert_eq!(errors.len(), 1, "{}", text(&memory));
    assert!(errors[0].contains(":memory:"), "{}", errors[0]);
    assert_eq!(dir.started().values().sum::<usize>(), CELLS.len());
}

#[test]
fn processes_of_one_nextest_run_share_its_run() {
    let dir = TempDir::new("resume-nextest");
    run_as_nextest(&dir, "nextest-run-1", &[CELLS[1], CELLS[2]]);
    let store = Store::open(dir.db()).unwrap();
    let runs = store.eval_runs().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(
        (runs[0].id.as_str(), runs[0].origin.as_str(), runs[0].cells),
        ("nextest-run-1", "nextest", 2)
    );
    assert!(!runs[0].finished);
    let results = store.eval_results("nextest-run-1").unwrap();
    assert_eq!(results[0].cell_count(), 2);

    // `cargo test` resumes it by id: the six other cells run, then the summary.
    let out = run(&dir, &[], &[("SCAFFOLD_RESUME", "nextest-run-1")]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("resuming run nextest-run-1: 2 of 8 cells already finished"),
        "{}",
        text(&out)
    );
    assert!(store.eval_run("nextest-run-1").unwrap().unwrap().finished);
    assert!(
        dir.started().values().all(|&n| n == 1),
        "{:?}",
        dir.started()
    );
}

/// A resume runs the cells of its run, no others: a filter, tags or
/// variants other than the run's are refused, naming the run's own, before
/// any cell runs (else the run would be marked finished with cells never
/// run). With its own selection the run resumes and finishes.
#[test]
fn a_resume_runs_its_runs_own_selection() {
    let dir = TempDir::new("resume-selection");
    // A run of the alpha cells only, killed after its first cell.
    let run_id = run_killed(&dir, &["resume-fixture::alpha::"], &[], 1);
    let store = Store::open(dir.db()).unwrap();
    let started_before = dir.started();
    let stored = "test arguments `-- resume-fixture::alpha::`, SCAFFOLD_TAGS unset, \
                  SCAFFOLD_VARIANTS unset";
    for (args, envs, now) in [
        (
            &[][..],
            &[][..],
            "no test filter, SCAFFOLD_TAGS unset, SCAFFOLD_VARIANTS unset",
        ),
        (
            &["c1"][..],
            &[][..],
            "test arguments `-- c1`, SCAFFOLD_TAGS unset, SCAFFOLD_VARIANTS unset",
        ),
        (
            &["resume-fixture::alpha::", "--skip", "c4"][..],
            &[][..],
            "test arguments `-- resume-fixture::alpha:: --skip c4`",
        ),
        (
            &["resume-fixture::alpha::"][..],
            &[("SCAFFOLD_VARIANTS", "alpha")][..],
            "SCAFFOLD_VARIANTS=alpha",
        ),
        (
            &["resume-fixture::alpha::"][..],
            &[("SCAFFOLD_TAGS", "smoke")][..],
            "SCAFFOLD_TAGS=smoke",
        ),
    ] {
        let mut envs = envs.to_vec();
        envs.push(("SCAFFOLD_RESUME", "1"));
        let out = run(&dir, args, &envs);
        let all = text(&out);
        assert!(!out.status.success(), "{args:?} {envs:?}: {all}");
        let errors = error_lines(&out);
        assert_eq!(errors.len(), 1, "{all}");
        assert!(
            errors[0].starts_with(&format!(
                "error: SCAFFOLD_RESUME: run {run_id} selected its cells with {stored}; \
                 this resume selects them with "
            )) && errors[0].contains(now)
                && errors[0].contains("resume with the same selection"),
            "{}",
            errors[0]
        );
        assert!(!all.contains("test [eval]"), "no cell may run: {all}");
    }
    assert_eq!(dir.started(), started_before);
    assert!(!store.eval_run(&run_id).unwrap().unwrap().finished);

    // With the run's own filter, the other alpha cells run and the run finishes.
    let out = run(
        &dir,
        &["resume-fixture::alpha::"],
        &[("SCAFFOLD_RESUME", "1")],
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains(&format!(
            "resuming run {run_id}: 1 of 4 cells already finished"
        )),
        "{all}"
    );
    let resumed = store.eval_run(&run_id).unwrap().unwrap();
    assert!(resumed.finished, "{resumed:?}");
    assert_eq!((resumed.cells, resumed.passed), (4, 3));
    let started = dir.started();
    assert!(
        started.keys().all(|c| c.contains("::alpha::")),
        "{started:?}"
    );
    assert_eq!(started.len(), 4, "{started:?}");

    // A nextest run selects by its settings alone (each process names its
    // own cell): it resumes without a filter, and not with one.
    run_as_nextest(&dir, "nextest-run", &[CELLS[1], CELLS[3]]);
    let out = run(
        &dir,
        &["resume-fixture::alpha::"],
        &[("SCAFFOLD_RESUME", "nextest-run")],
    );
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        error_lines(&out)[0].contains(
            "run nextest-run selected its cells with no test filter, SCAFFOLD_TAGS unset, \
             SCAFFOLD_VARIANTS unset; this resume selects them with test arguments \
             `-- resume-fixture::alpha::`"
        ),
        "{}",
        text(&out)
    );
    assert!(!store.eval_run("nextest-run").unwrap().unwrap().finished);
}

/// The session of a cell killed in flight is left `running` by its dead
/// process; the resume of its run marks it `interrupted` (and runs the cell again).
#[test]
fn a_resume_marks_the_sessions_cut_short_interrupted() {
    let dir = TempDir::new("resume-interrupted");
    run_killed(&dir, &[], &[], 2);
    let store = Store::open(dir.db()).unwrap();
    let of_eval = |status| {
        let filter = SessionFilter::default()
            .tag("eval:resume-fixture")
            .status(status);
        store.list(&filter).unwrap()
    };
    let cut_short = of_eval(SessionStatus::Running);
    assert_eq!(cut_short.len(), 1, "{cut_short:?}");

    let out = run(&dir, &[], &[("SCAFFOLD_RESUME", "1")]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(of_eval(SessionStatus::Running).is_empty());
    let interrupted = of_eval(SessionStatus::Interrupted);
    assert_eq!(interrupted.len(), 1, "{interrupted:?}");
    let session = &interrupted[0];
    assert_eq!(session.meta.id, cut_short[0].meta.id);
    assert!(session.ended_at_ms.is_some(), "{session:?}");
    assert!(
        session
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("interrupted")),
        "{session:?}"
    );
}

/// Two resumes of one run never run its cells both: while a process runs
/// (or resumes) a run, a resume of it is refused, naming that process. The
/// claim of a killed process does not outlive it, and the resume marks the
/// session the kill cut short `interrupted`.
#[test]
fn a_run_is_resumed_by_one_process_at_a_time() {
    let dir = TempDir::new("resume-once");
    let mut first = spawn(
        &dir,
        "first",
        &["--test-threads", "1"],
        &[("RESUME_FIXTURE_SLEEP_MS", "400")],
    );
    // One cell recorded and the next in flight.
    let run_id = wait_for(&dir, &mut first, "first", |cells, started| {
        cells >= 1 && started > cells
    });
    // The run goes on: resuming it now is refused.
    let out = run(&dir, &[], &[("SCAFFOLD_RESUME", "1")]);
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    let errors = error_lines(&out);
    assert_eq!(errors.len(), 1, "{all}");
    assert!(
        errors[0].contains(&format!(
            "eval run {run_id} is being run by process {}",
            first.id()
        )) && errors[0].contains("one process at a time"),
        "{}",
        errors[0]
    );
    assert!(!all.contains("test [eval]"), "{all}");
    // Killed with a cell in flight: its session stays running.
    kill_in_flight(&dir, &mut first, "first");
    let store = Store::open(dir.db()).unwrap();
    let recorded = store.eval_run(&run_id).unwrap().unwrap().cells;
    assert_eq!(sessions_of(&store, &run_id, SessionStatus::Running), 1);

    // The killed process's claim is gone: a resume runs, and while it
    // does, a second resume is refused.
    let mut second = spawn(
        &dir,
        "second",
        &["--test-threads", "1"],
        &[("SCAFFOLD_RESUME", "1"), ("RESUME_FIXTURE_SLEEP_MS", "300")],
    );
    wait_for(&dir, &mut second, "second", |cells, _| cells > recorded);
    let out = run(&dir, &[], &[("SCAFFOLD_RESUME", &run_id)]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        error_lines(&out)[0].contains(&format!(
            "SCAFFOLD_RESUME={run_id}: session store {}: eval run {run_id} is being run by \
             process {}",
            dir.db().display(),
            second.id()
        )),
        "{}",
        text(&out)
    );
    let status = second.wait().unwrap();
    let all = printed(&dir, "second");
    assert!(status.success(), "{all}");
    assert!(
        all.contains(&format!(
            "resuming run {run_id}: {recorded} of 8 cells already finished; 1 session(s) cut \
             short by the interruption marked interrupted"
        )),
        "{all}"
    );

    // Every cell ran once, but the one killed in flight, which ran again.
    let started = dir.started();
    assert_eq!(started.len(), CELLS.len(), "{started:?}");
    assert_eq!(
        started.values().sum::<usize>(),
        CELLS.len() + 1,
        "{started:?}"
    );
    let resumed = store.eval_run(&run_id).unwrap().unwrap();
    assert!(resumed.finished && resumed.cells == 8, "{resumed:?}");
    assert_eq!(sessions_of(&store, &run_id, SessionStatus::Running), 0);
    assert_eq!(sessions_of(&store, &run_id, SessionStatus::Interrupted), 1);
    // The finished run's claim file is gone; resuming it says it is finished.
    let claims = PathBuf::from(format!("{}-claims", dir.db().display()));
    assert_eq!(std::fs::read_dir(&claims).unwrap().count(), 0);
    let out = run(&dir, &[], &[("SCAFFOLD_RESUME", &run_id)]);
    assert!(
        error_lines(&out)[0].contains("already finished"),
        "{}",
        text(&out)
    );
}

/// Many resumes of one interrupted run started at once: one runs it, and
/// every other is refused naming that process (never "the processes of its
/// nextest run", which a claim not yet noted once looked like).
#[test]
fn simultaneous_resumes_run_once_and_each_refusal_names_the_process() {
    let dir = TempDir::new("resume-many");
    let mut first = spawn(
        &dir,
        "first",
        &["--test-threads", "1"],
        &[("RESUME_FIXTURE_SLEEP_MS", "300")],
    );
    wait_for(&dir, &mut first, "first", |cells, started| {
        cells >= 1 && started > cells
    });
    kill_in_flight(&dir, &mut first, "first");
    let resume = [("SCAFFOLD_RESUME", "1"), ("RESUME_FIXTURE_SLEEP_MS", "200")];
    let mut children: Vec<(String, Child)> = (0..12)
        .map(|i| {
            let name = format!("resume-{i}");
            let child = spawn(&dir, &name, &["--test-threads", "1"], &resume);
            (name, child)
        })
        .collect();
    let mut ran = 0;
    for (name, child) in &mut children {
        let status = child.wait().unwrap();
        let all = printed(&dir, name);
        if status.success() {
            ran += 1;
            continue;
        }
        assert!(all.contains("is being run by process "), "{name}: {all}");
        assert!(!all.contains("nextest"), "{name}: {all}");
    }
    assert_eq!(ran, 1, "one resume runs the run");
}

/// The fixture at `threads` test threads with every file it writes limited
/// to `blocks` 512-byte blocks: `sh` ignores SIGXFSZ and sets the limit,
/// then runs it, so that past it the database's writes fail as on a full
/// disk.
fn run_on_a_full_disk(dir: &TempDir, blocks: u32, threads: u32, envs: &[(&str, &str)]) -> Output {
    let fixture = fixture_command(dir, &[], envs);
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\""
        ))
        .arg(fixture.get_program())
        .args(["--test-threads", &threads.to_string()])
        .current_dir(dir.path());
    for (key, value) in fixture.get_envs() {
        match value {
            Some(value) => sh.env(key, value),
            None => sh.env_remove(key),
        };
    }
    sh.output().expect("sh runs")
}

/// A store that cannot write (here: a file-size limit, so that SQLite's
/// writes fail as on a full disk) stops the run at the first cell whose
/// record is lost: that cell fails with the store's error, no later cell
/// starts (none calls its provider), and the last line names the cause.
#[cfg(unix)]
#[test]
fn a_store_that_cannot_write_stops_the_run_at_the_first_cell_it_loses() {
    let dir = TempDir::new("resume-full");
    // Files of at most 200 KiB (the fixture's log stays far below).
    let out = run_on_a_full_disk(&dir, 400, 1, &[("SCAFFOLD_TRIALS", "5")]);
    let all = text(&out);
    assert!(!out.status.success(), "{all}");

    // The cells that ran, in order: the last of them lost its record.
    let log = std::fs::read_to_string(dir.log()).unwrap();
    let ran: Vec<&str> = log.lines().collect();
    assert!(
        (2..40).contains(&ran.len()),
        "the store should fail part-way: {all}"
    );
    let failed: Vec<&str> = all
        .lines()
        .filter_map(|l| l.strip_prefix("the session store could not be written: "))
        .collect();
    assert_eq!(
        failed.len(),
        1,
        "one cell fails with the store's error: {all}"
    );
    let cause = failed[0].to_string();
    assert!(
        cause.starts_with("cell resume-fixture::") && cause.contains(" was not recorded: "),
        "{cause}"
    );
    assert!(
        cause.contains("disk I/O error") || cause.contains("disk is full"),
        "{cause}"
    );
    // Every cell after it failed without starting, naming the cause.
    let not_started =
        format!("not started: the session store could not record an earlier cell: {cause}");
    assert_eq!(all.matches(&not_started).count(), 40 - ran.len(), "{all}");
    // The cells before it were recorded; the run is not finished.
    let store = Store::open(dir.db()).unwrap();
    let runs = store.eval_runs().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(!runs[0].finished);
    assert_eq!(runs[0].cells, ran.len() - 1, "{all}");
    // The last line names the cause.
    let last = String::from_utf8_lossy(&out.stderr)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        last,
        format!(
            "error: the run stopped ({} cell(s) not started; run {} stays unfinished): the \
             session store could not record a cell: {cause}",
            40 - ran.len(),
            runs[0].id
        ),
        "{all}"
    );
}

/// A full disk at 16 cells at once: whichever cell's call on the store
/// hears of another's lost write, no cell is recorded (let alone passes)
/// with a session that is not whole: every recorded cell's session holds
/// as many signals as a whole one, and is finished.
#[test]
fn under_a_full_disk_no_cell_is_recorded_with_a_session_cut_short() {
    // A whole session of a fixture cell, for its signal count.
    let clean = TempDir::new("resume-full-clean");
    let out = run(&clean, &["--exact", CELLS[1]], &[]);
    assert!(out.status.success(), "{}", text(&out));
    let store = Store::open(clean.db()).unwrap();
    let whole = store.list(&SessionFilter::default()).unwrap()[0].signal_count;
    for limit in [300, 500, 700] {
        let dir = TempDir::new("resume-full-16");
        let out = run_on_a_full_disk(&dir, limit, 16, &[("SCAFFOLD_TRIALS", "10")]);
        assert!(!out.status.success(), "{}", text(&out));
        let Ok(store) = Store::open(dir.db()) else {
            continue; // Too full to open: nothing was recorded.
        };
        let runs = store.eval_runs().unwrap();
        for cell in runs
            .iter()
            .flat_map(|r| store.recorded_cells(&r.id).unwrap())
        {
            let session = store.session(&cell.record.session_id).unwrap();
            let session = session.unwrap_or_else(|| panic!("{}: no session", cell.cell));
            assert_eq!(
                session.signal_count, whole,
                "{} (ulimit {limit})",
                cell.cell
            );
            assert_ne!(session.status, SessionStatus::Running, "{}", cell.cell);
        }
    }
}

#[test]
fn trials_variants_output_and_snapshot_settings() {
    let dir = TempDir::new("resume-settings");
    let listed = |envs: &[(&str, &str)]| {
        let out = run(&dir, &["--list"], envs);
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.ends_with(": test") && !l.starts_with("[gate] "))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(listed(&[]).len(), 8);
    let three = listed(&[("SCAFFOLD_TRIALS", "3")]);
    assert_eq!(three.len(), 24);
    assert!(
        three
            .iter()
            .any(|l| l.contains("resume-fixture::beta::c4::t2"))
    );
    let beta = listed(&[("SCAFFOLD_VARIANTS", "b?t*")]);
    assert_eq!(beta.len(), 4);
    assert!(beta.iter().all(|l| l.contains("::beta::")), "{beta:?}");
    assert_eq!(listed(&[("SCAFFOLD_VARIANTS", "alpha, beta")]).len(), 8);

    // A run with two trials of beta only, reports in SCAFFOLD_OUTPUT.
    let out = run(
        &dir,
        &[],
        &[("SCAFFOLD_TRIALS", "2"), ("SCAFFOLD_VARIANTS", "beta")],
    );
    assert!(out.status.success(), "{}", text(&out));
    let json = EvalResults::load(dir.out().join("resume-fixture.json")).unwrap();
    assert_eq!((json.config.trials, json.cell_count()), (2, 8));
    assert!(json.results.iter().all(|c| c.variant == "beta"));

    // Invalid values: one error line naming the variable.
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let file = file.display().to_string();
    for (var, value, expected) in [
        ("SCAFFOLD_TRIALS", "zero", "whole number"),
        ("SCAFFOLD_TRIALS", "0", "at least 1"),
        ("SCAFFOLD_VARIANTS", "gpt-*", "alpha, beta"),
        ("SCAFFOLD_VARIANTS", " , ", "globs"),
        ("SCAFFOLD_OUTPUT", file.as_str(), "not a directory"),
        ("SCAFFOLD_SNAPSHOTS", file.as_str(), "`off`"),
        ("SCAFFOLD_RESUME", "two words", "run id"),
        ("RUST_TEST_THREADS", "many", "whole number"),
        ("RUST_TEST_THREADS", "0", "at least 1"),
    ] {
        let out = run(&dir, &[], &[(var, value)]);
        assert!(!out.status.success(), "{var}={value}");
        let errors = error_lines(&out);
        assert_eq!(errors.len(), 1, "{var}={value}: {}", text(&out));
        assert!(
            errors[0].starts_with(&format!("error: {var}")) && errors[0].contains(expected),
            "{var}={value}: {}",
            errors[0]
        );
    }

    // Snapshots in a directory of our own: new ones are not accepted silently.
    let snaps = dir.join("snaps");
    let out = run(
        &dir,
        &["--exact", CELLS[1]],
        &[
            ("SCAFFOLD_SNAPSHOTS", snaps.to_str().unwrap()),
            ("INSTA_UPDATE", "always"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let snap = snaps.join("resume-fixture/c1/beta.snap");
    assert!(snap.is_file(), "{}", text(&out));
    let snapshot_run = || {
        run(
            &dir,
            &["--exact", CELLS[1]],
            &[("SCAFFOLD_SNAPSHOTS", snaps.to_str().unwrap())],
        )
    };
    // Unchanged: it passes, and a stale pending snapshot is cleaned up.
    let pending = snaps.join("resume-fixture/c1/beta.snap.new");
    std::fs::write(&pending, "stale").unwrap();
    let out = snapshot_run();
    assert!(out.status.success(), "{}", text(&out));
    assert!(!pending.exists());
    // Drift: the committed snapshot says another answer.
    let committed = std::fs::read_to_string(&snap).unwrap();
    assert!(committed.contains("answer from beta"), "{committed}");
    std::fs::write(
        &snap,
        committed.replace("answer from beta", "answer from gamma"),
    )
    .unwrap();
    // insta prints the diff; the harness fails the cell without the panic
    // insta reports it with (nor its backtrace, which CI often asks for).
    let out = run(
        &dir,
        &["--exact", CELLS[1]],
        &[
            ("SCAFFOLD_SNAPSHOTS", snaps.to_str().unwrap()),
            ("RUST_BACKTRACE", "1"),
        ],
    );
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(all.contains("the session differs from"), "{all}");
    assert!(all.contains("answer from gamma"), "{all}");
    assert!(
        !all.contains("panicked at") && !all.contains("stack backtrace"),
        "{all}"
    );
    std::fs::write(&snap, &committed).unwrap();
    assert!(snapshot_run().status.success());
    // A session with no snapshot yet is new, not different.
    std::fs::remove_file(&snap).unwrap();
    let out = run(
        &dir,
        &["--exact", CELLS[1]],
        &[
            ("SCAFFOLD_SNAPSHOTS", snaps.to_str().unwrap()),
            ("INSTA_UPDATE", "no"),
        ],
    );
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert!(all.contains("no snapshot of this session yet"), "{all}");
    assert!(all.contains("beta.snap is new"), "{all}");
    assert!(!all.contains("the session differs from"), "{all}");
    std::fs::write(&snap, &committed).unwrap();
    let _ = std::fs::remove_file(snaps.join("resume-fixture/c1/beta.snap.new"));
    assert!(snapshot_run().status.success());

    // A snapshot in the flat folder of old is moved to its case's folder
    // and checked there; one beside a snapshot already moved stays put.
    let legacy = snaps.join("resume-fixture__beta__c1.snap");
    std::fs::rename(&snap, &legacy).unwrap();
    let out = snapshot_run();
    assert!(out.status.success(), "{}", text(&out));
    assert!(snap.is_file() && !legacy.exists(), "{}", text(&out));
    assert!(
        text(&out).contains("snapshots now live in a folder per case"),
        "{}",
        text(&out)
    );
    std::fs::write(&legacy, committed.replace("answer from beta", "stale")).unwrap();
    let out = snapshot_run();
    assert!(out.status.success(), "{}", text(&out));
    assert!(legacy.is_file(), "{}", text(&out));
}

/// Under `OnError::Exclude` a cell whose run errored passes its test with
/// a loud line, is listed, and is left out of the gate; by default it fails.
#[test]
fn an_errored_cell_is_excluded_loudly_or_counts_as_zero() {
    let dir = TempDir::new("resume-excluded");
    // Counted as zero in a gate that allows no failure: the cell fails its test.
    let failing = [
        ("RESUME_FIXTURE_ERROR", "beta::c2"),
        ("RESUME_FIXTURE_MIN_PASS_RATE", "1"),
    ];
    let out = run(&dir, &["--test-threads", "1"], &failing);
    let all = text(&out);
    assert!(
        all.contains("test [eval] resume-fixture::beta::c2  ... FAILED"),
        "{all}"
    );

    let excluded = [failing[0], ("RESUME_FIXTURE_ON_ERROR", "exclude")];
    let out = run(&dir, &["--test-threads", "1"], &excluded);
    let all = text(&out);
    assert!(
        all.contains(
            "test [eval] resume-fixture::beta::c2  ... ignored (ERRORED, excluded from the \
             statistics)"
        ),
        "{all}"
    );
    assert!(
        all.contains("EXCLUDED resume-fixture::beta::c2 errored; left out of the statistics"),
        "{all}"
    );
    assert!(
        all.contains(
            "Excluded: 1 errored cell left out of the statistics and the gate: beta::c2 ("
        ),
        "{all}"
    );
    assert!(
        all.contains("7 cells)"),
        "the gate counted the excluded cell: {all}"
    );
    let json = EvalResults::load(dir.out().join("resume-fixture.json")).unwrap();
    let cell = json
        .results
        .iter()
        .find(|c| c.case == "c2" && c.variant == "beta")
        .unwrap();
    assert!(cell.excluded && !cell.passed);
    assert_eq!(json.summary["beta"].cells, 3);
}

#[test]
fn a_quarantined_cell_fails_loudly_without_failing_its_test_or_the_gate() {
    let dir = TempDir::new("resume-quarantine");
    // Not quarantined, in a gate that allows no failure: the failing cell
    // fails its test.
    let out = run(
        &dir,
        &["--test-threads", "1"],
        &[("RESUME_FIXTURE_MIN_PASS_RATE", "1")],
    );
    let all = text(&out);
    assert!(
        all.contains("test [eval] resume-fixture::alpha::c1 ... FAILED"),
        "{all}"
    );

    let out = run(
        &dir,
        &["--test-threads", "1"],
        &[("RESUME_FIXTURE_QUARANTINE", "alpha::c1,gone")],
    );
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(
        all.contains(
            "test [eval] resume-fixture::alpha::c1 ... ignored (FAILED, quarantined: not counted \
             by the gate)"
        ),
        "{all}"
    );
    assert!(
        all.contains(
            "QUARANTINED resume-fixture::alpha::c1 failed; not counted by the gate, its test is \
             ignored:"
        ),
        "{all}"
    );
    assert!(
        all.contains(
            "warning: 1 quarantined cell did not count towards the gate: alpha::c1 (0/1 passed)"
        ),
        "{all}"
    );
    assert!(
        all.contains("warning: quarantine pattern `gone` matches no cell of eval `resume-fixture`"),
        "{all}"
    );
    assert!(
        all.contains(
            "Gate: passed: pass rate 100.0% (95% CI 64.6%–100.0%, 7 cells, 1 quarantined left out)"
        ),
        "{all}"
    );
    let json = EvalResults::load(dir.out().join("resume-fixture.json")).unwrap();
    let cell = json
        .results
        .iter()
        .find(|c| c.case == "c1" && c.variant == "alpha")
        .unwrap();
    assert!(cell.quarantined && !cell.passed);
}

/// The line of `out` that starts with `prefix`.
fn line_of(out: &str, prefix: &str) -> Option<String> {
    out.lines()
        .find(|l| l.starts_with(prefix))
        .map(str::to_string)
}

#[test]
fn a_cost_budget_stops_new_cells_and_resumes_finish_them() {
    let dir = TempDir::new("resume-budget");
    // $0.10 a cell, $0.25 an invocation, one cell at a time: three cells
    // run ($0.30: the third starts with $0.20 spent), five do not start.
    let budget = [
        ("RESUME_FIXTURE_PRICED", "1"),
        ("SCAFFOLD_MAX_COST", "0.25"),
    ];
    let first = run(&dir, &["--test-threads", "1"], &budget);
    let out = text(&first);
    assert!(!first.status.success(), "{out}");
    assert_eq!(dir.started().len(), 3, "{out}");
    assert!(dir.started().keys().eq(sorted_cells(0..3).iter()), "{out}");
    let not_started = "not started: the cost budget is spent ($0.30 of $0.25, SCAFFOLD_MAX_COST); \
                       the run stays unfinished: resume it with SCAFFOLD_RESUME=1";
    assert_eq!(out.matches(not_started).count(), 5, "{out}");
    assert!(!out.contains("crashed"), "{out}");
    let store = Store::open(dir.db()).unwrap();
    let runs = store.eval_runs().unwrap();
    assert_eq!(runs.len(), 1);
    let id = runs[0].id.clone();
    assert!(!runs[0].finished, "the run stays unfinished");
    assert_eq!(
        line_of(&out, "Budget: ").as_deref(),
        Some(
            format!(
                "Budget: $0.30 spent of $0.25 (SCAFFOLD_MAX_COST); 5 of 8 cells not started; \
                 run {id} stays unfinished: resume it with SCAFFOLD_RESUME=1"
            )
            .as_str()
        ),
        "{out}"
    );
    let (json, cells) = written_results(&dir);
    assert_eq!(cells, sorted_cells(0..3));
    assert!(!json.complete);
    let counts = json.cell_counts.expect("cell counts");
    assert_eq!((counts.planned, counts.recorded, counts.missing), (8, 3, 5));
    assert!(
        out.contains("run not finished: 5 of 8 planned cells missing (3 recorded)"),
        "{out}"
    );

    // A resume spends its own budget on the cells left: three more.
    let mut resume = budget.to_vec();
    resume.push(("SCAFFOLD_RESUME", "1"));
    let second = run(&dir, &["--test-threads", "1"], &resume);
    let out = text(&second);
    assert!(!second.status.success(), "{out}");
    assert!(dir.started().keys().eq(sorted_cells(0..6).iter()), "{out}");
    assert!(
        out.contains("Budget: $0.30 spent of $0.25 (SCAFFOLD_MAX_COST); 2 of 8 cells not started"),
        "{out}"
    );
    assert!(!store.eval_run(&id).unwrap().unwrap().finished);

    // The last two cost $0.20: the run finishes, whole, and passes its gate.
    let third = run(&dir, &["--test-threads", "1"], &resume);
    let out = text(&third);
    assert!(third.status.success(), "{out}");
    assert!(!out.contains("Budget: "), "{out}");
    assert!(
        dir.started().values().all(|&n| n == 1),
        "{:?}",
        dir.started()
    );
    assert_eq!(dir.started().len(), 8);
    assert!(store.eval_run(&id).unwrap().unwrap().finished);
    let (json, cells) = written_results(&dir);
    assert_eq!(cells, sorted_cells(0..8));
    assert!(json.complete, "{out}");
}

#[test]
fn an_evals_own_budget_counts_its_cells() {
    let dir = TempDir::new("resume-eval-budget");
    let out = run(
        &dir,
        &["--test-threads", "1"],
        &[
            ("RESUME_FIXTURE_PRICED", "1"),
            ("RESUME_FIXTURE_MAX_COST", "0.15"),
        ],
    );
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert_eq!(dir.started().len(), 2, "{all}");
    assert!(
        all.contains(
            "Budget: $0.20 spent of $0.15 (max_cost_usd of eval `resume-fixture`); \
             6 of 8 cells not started"
        ),
        "{all}"
    );
    // SCAFFOLD_MAX_COST replaces it.
    let dir = TempDir::new("resume-eval-budget-env");
    let out = run(
        &dir,
        &["--test-threads", "1"],
        &[
            ("RESUME_FIXTURE_PRICED", "1"),
            ("RESUME_FIXTURE_MAX_COST", "0.15"),
            ("SCAFFOLD_MAX_COST", "5"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(dir.started().len(), 8);
}

#[test]
fn a_budget_that_is_no_cost_stops_the_suite_at_set_up() {
    for bad in ["abc", "-1", "NaN", "0"] {
        let dir = TempDir::new("resume-budget-bad");
        let out = run(&dir, &[], &[("SCAFFOLD_MAX_COST", bad)]);
        assert!(!out.status.success());
        assert!(
            text(&out).contains(&format!(
                "SCAFFOLD_MAX_COST: expected a cost in US dollars above 0 (e.g. 0.50), got `{bad}`"
            )),
            "{}",
            text(&out)
        );
        assert!(dir.started().is_empty());
    }
    let dir = TempDir::new("resume-budget-bad-eval");
    let out = run(&dir, &[], &[("RESUME_FIXTURE_MAX_COST", "-1")]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("max_cost_usd -1 is not a cost in US dollars above 0 (e.g. 0.50)"),
        "{}",
        text(&out)
    );
    assert!(dir.started().is_empty());
}

#[test]
fn under_nextest_the_budget_counts_what_the_runs_processes_spent() {
    let dir = TempDir::new("resume-budget-nextest");
    let envs = [
        ("NEXTEST_RUN_ID", "budget-run"),
        ("RESUME_FIXTURE_PRICED", "1"),
        ("SCAFFOLD_MAX_COST", "0.25"),
    ];
    // Not the first cell, which fails on purpose.
    for (i, cell) in CELLS[1..6].iter().enumerate() {
        let out = run(&dir, &["--exact", cell], &envs);
        let all = text(&out);
        if i < 3 {
            assert!(out.status.success(), "{cell}: {all}");
        } else {
            assert!(!out.status.success(), "{cell}: {all}");
            assert!(
                all.contains(
                    "not started: the cost budget is spent ($0.30 of $0.25, SCAFFOLD_MAX_COST)"
                ),
                "{cell}: {all}"
            );
        }
    }
    assert_eq!(dir.started().len(), 3);
}

/// The fixture run live with OpenAI at a fake server answering after
/// `latency`, limited to `limit` requests per 500 ms, with `args`: the
/// server and the run's output.
fn run_live(
    name: &str,
    latency: Duration,
    limit: u32,
    args: &[&str],
) -> (scaffold::testing::FakeProviderServer, Output) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = runtime
        .block_on(
            scaffold::testing::FakeProviderServer::builder()
                .latency(latency)
                .start(),
        )
        .unwrap();
    let dir = TempDir::new(name);
    let base = server.openai_base_url();
    let limit = limit.to_string();
    let out = run(
        &dir,
        args,
        &[
            ("SCAFFOLD_MODE", "live"),
            ("OPENAI_BASE_URL", base.as_str()),
            ("RESUME_FIXTURE_RATE_LIMIT", limit.as_str()),
        ],
    );
    (server, out)
}

/// A live run gives libtest a thread more than `--test-threads` here (for
/// cells waiting for their records), and keeps no more calls in flight
/// than `--test-threads` (with the slots' limit taken out, 4).
#[test]
fn a_live_run_keeps_as_many_calls_in_flight_as_its_test_threads_and_no_more() {
    // A limit no call reaches.
    let (server, out) = run_live(
        "resume-in-flight",
        Duration::from_millis(100),
        1000,
        &["--test-threads", "3"],
    );
    let all = text(&out);
    assert_eq!(server.requests().len(), 8, "{all}");
    assert_eq!(server.max_in_flight(), 3, "{all}");
    assert!(all.contains("8 cells: 6 passed, 2 failed"), "{all}");
}

#[test]
fn the_cells_of_a_live_run_share_one_limiter_per_api_and_the_summary_says_it() {
    // Both variants (two models on one API) limited to 2 requests per 500 ms.
    let (server, out) = run_live(
        "resume-rate-limit",
        Duration::from_millis(10),
        2,
        &["--test-threads", "8"],
    );
    let base = server.openai_base_url();
    let all = text(&out);
    let requests = server.requests();
    assert_eq!(requests.len(), 8, "{all}");
    let mut at: Vec<Instant> = requests.iter().map(|r| r.received).collect();
    at.sort();
    // No 500 ms (less 20 ms for the way to the server) holds more than 2.
    for (i, first) in at.iter().enumerate() {
        let within = at[i..]
            .iter()
            .take_while(|&&t| t < *first + Duration::from_millis(480))
            .count();
        assert!(within <= 2, "{within} requests within 500 ms: {all}");
    }
    let line = line_of(&all, "Rate limit openai ").unwrap_or_default();
    assert!(
        line.starts_with(&format!(
            "Rate limit openai {base} (2 requests per 500 ms): 6 of 8 calls waited "
        )),
        "{all}"
    );
}
