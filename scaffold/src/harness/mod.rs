//! The Cargo test harness: every variant × case × trial cell is one
//! libtest-mimic trial, so `cargo test --test evals` and
//! `cargo nextest run --test evals` run evals like any other tests.
//!
//! `tests/evals.rs` (with `harness = false` in `Cargo.toml`):
//!
//! ```ignore
//! scaffold::main!();
//! ```
//!
//! Settings travel in environment variables (nextest and `cargo insta test`
//! pass no custom flags): `SCAFFOLD_MODE` (`playback`, `record`, `live`),
//! `SCAFFOLD_TAGS` (comma-separated; only cases with one of them run),
//! `SCAFFOLD_DATABASE` (a path or `:memory:`; default
//! `target/scaffold/scaffold.db`), `SCAFFOLD_FORMAT` (the reports written to
//! `target/scaffold/`: any of `table,json,markdown,junit,html`; default
//! `table,json`), `SCAFFOLD_BASELINE` (a results JSON of an earlier run, or
//! a directory of them named `{eval}.json`: blocking regressions against it
//! fail the run), `SCAFFOLD_PROGRESS=0` (no progress bar), and:
//!
//! - `SCAFFOLD_TRIALS` (a whole number ≥ 1): run every eval with this many
//!   trials instead of its own.
//! - `SCAFFOLD_VARIANTS` (comma-separated globs on variant names, `*` any
//!   characters, `?` one): only the cells of matching variants are tests; a
//!   glob that matches no variant is an error naming the variants.
//! - `SCAFFOLD_OUTPUT` (a directory): write the reports there instead of
//!   `target/scaffold/`.
//! - `SCAFFOLD_REPORT_TRANSCRIPTS` (`failing`, the default, `all` or
//!   `none`): whose transcripts the HTML report embeds.
//! - `SCAFFOLD_SNAPSHOTS` (a directory, or `off`): check the sessions'
//!   snapshots in that directory instead of the package's `snapshots/`, or
//!   not at all.
//! - `SCAFFOLD_RESUME` (`1` or `latest`: the newest unfinished run; or a run
//!   id): resume an interrupted run. Cells already finished in that run are
//!   not run again: their tests report the stored verdict and the summary
//!   includes them. Needs a database file (not `:memory:`) and the run's
//!   own selection of cells (test filter and flags, `SCAFFOLD_TAGS`,
//!   `SCAFFOLD_VARIANTS`); a run that another live process runs is refused.
//! - `SCAFFOLD_STRICT` (`1` or `0`): `1` makes every eval strict: every
//!   cell that fails its checks fails its test and the run.
//! - `SCAFFOLD_MAX_COST` (US dollars above 0): the run's cost budget, for
//!   every eval, replacing their `max_cost_usd`; once the finished cells
//!   have spent it no cell starts and the run stays unfinished (see
//!   `budget.rs`).
//! - `SCAFFOLD_FAKE` (a YAML file of fake-provider rules), in record and
//!   live modes: the harness serves the rules as a fake model API on
//!   `127.0.0.1` and sends every provider call there instead of the API (no
//!   key needed); the recordings keep the API's URL (see `fake.rs`).
//! - `SCAFFOLD_FORK_FROM` (a session id of the database, or an exported
//!   `.json` session file) with `SCAFFOLD_FORK_AT` (`phase:<name>:first|last|<n>`
//!   or `index:<n>`): every variant forks from that point of the session
//!   instead of running from the start. Only the cells of the parent's case
//!   run (by its `eval:`, `case:` and `dataset:` tags, else by its input);
//!   snapshots are not checked unless `SCAFFOLD_SNAPSHOTS` is set.
//!
//! How many cells run at once: `--test-threads` or `RUST_TEST_THREADS`, as
//! with libtest; else the largest `concurrency` an eval sets; else, in
//! playback, eight per CPU (a cell waits for its record's commit, and other
//! cells use the CPU meanwhile), and one per CPU in live and record modes.
//! In live and record runs of several threads each cell's thread runs five
//! `nice` steps below the process (Linux), so that the store's writer and
//! the HTTP runtime, which every cell waits on, run first when a wave of
//! answers arrives (see `priority.rs`). There, "at once" counts cells whose
//! workflow runs: libtest gets a thread more for every four, on which a
//! cell that finished its calls waits for its record while the next cell
//! makes its own (see `slots.rs`).
//!
//! Relative paths are taken from the package's directory. A value that does
//! not parse is an error naming the variable and what it expects.
//!
//! Every run is an eval run in the session store (see
//! [`Store::begin_eval_run`]): a new UUID, or under nextest `NEXTEST_RUN_ID`,
//! which every per-cell process of one `cargo nextest run` shares. Each
//! finished cell is recorded, durably, before its test reports (a cell
//! whose record the store cannot write fails, and no cell starts after
//! it), so a run killed at any point can be resumed; the run is marked
//! finished after its summary, which prints `Run: <id>`, when no cell it
//! planned is missing. A nextest run is marked finished by the process that
//! records its last planned cell; no process sees all of it: judge it with
//! `cargo scaffold gate --run <id>`, report it with `cargo scaffold report
//! --run <id>`.
//!
//! Each eval's gate is a test of its own, `[gate] {eval}`, after the cells
//! (not under nextest): it fails when the eval fails the run. A cell that
//! fails its checks fails its test when its eval allows no failure
//! (`min_pass_rate` 1.0, or strict: `Eval::strict`, `SCAFFOLD_STRICT=1`);
//! when the gate allows failures, its test is reported `ignored` with the
//! reason and the gate test judges the run, so libtest's closing line, the
//! exit code, the JUnit report and the summary agree.
//!
//! After the cells, for each eval the harness prints the table (format
//! `table`), the gate's verdict, the baseline comparison, and writes `{eval}.json`, `{eval}.md`, `{eval}.junit.xml`,
//! `{eval}.html` as selected (plus `{eval}.comparison.json` with a
//! baseline). With `markdown` selected and `GITHUB_STEP_SUMMARY` set, the
//! Markdown is appended to the step summary.

#[cfg(feature = "mimalloc")]
pub(crate) mod allocator;
mod budget;
mod cell;
mod cell_index;
pub(crate) mod erased;
pub(crate) mod fake;
mod finished;
mod fork;
mod judge;
mod memory;
mod priority;
pub(crate) mod registry;
mod selection;
pub(crate) mod settings;
mod setup;
mod slots;
pub(crate) mod snapshot;
mod source;
mod suite;
mod summary;
mod totals;
mod trials;

pub(crate) use erased::ErasedEval;
pub(crate) use registry::{
    DatasetRegistration, EvalRegistration, ScorerRegistration, VariantRegistration,
};
pub(crate) use settings::{
    BASELINE_ENV, DATABASE_ENV, FORMAT_ENV, RESUME_ENV, SNAPSHOTS_ENV, TAGS_ENV,
};

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use libtest_mimic::{Arguments, Failed};

use crate::eval::gate::{self, GateOptions};
use crate::eval::results::distinct_inputs;
use crate::eval::{CellEnv, CellId, CellRecord, CompareOptions, EvalResults, RunConfig, compare};
use crate::eval::{EvalPlan, EvalRunMeta, RecordedCell};
use crate::provider::limit::{RateLimits, with_rate_limits};
use crate::provider::recorder::{MODE_ENV, Playback, RecorderMode};
use crate::provider::transport::Transport;
use crate::report::html::Transcripts;
use crate::report::progress::{self, Progress};
use crate::report::{self as reports, DEFAULT_FORMATS, Format};
use crate::store::{
    ClaimKind, ORIGIN_HARNESS, ORIGIN_NEXTEST, RunClaim, SessionFilter, SessionStatus, Store,
    StoreError,
};
use budget::Budget;
use finished::Finished;
use selection::Selection;
use settings::{Resume, Settings, Snapshots, glob_matches};
use setup::Setup;
use totals::RunTotals;
use trials::Cells;

/// Expands to the `main` of an eval test binary (`tests/evals.rs`).
///
/// The test target needs `harness = false` in `Cargo.toml`: under libtest's
/// own harness (the default) this `main` would never run and the target
/// would pass with 0 tests, so the macro refuses to compile there. Cargo
/// sets `cfg(test)` either way; what differs is `rustc --test`, the only
/// build that keeps `#[test]` items, so the error sits in one.
///
/// With the feature `mimalloc` the binary allocates with mimalloc (faster
/// in the release profile; see the crate's README).
#[macro_export]
macro_rules! main {
    () => {
        #[test]
        fn scaffold_main_needs_harness_false() {
            ::std::compile_error!(::std::concat!(
                "scaffold::main!() runs its own test harness, so this test target needs ",
                "`harness = false`: under libtest's harness it would run 0 tests and pass. ",
                "Add it to the target in Cargo.toml:\n\n[[test]]\nname = \"",
                ::std::env!("CARGO_CRATE_NAME"),
                "\"\nharness = false\n"
            ));
        }

        $crate::__global_allocator!();

        fn main() -> ::std::process::ExitCode {
            $crate::harness::main_for(env!("CARGO_MANIFEST_DIR"), file!(), line!())
        }
    };
}

/// The eval binary's `#[global_allocator]`, which [`main!`] declares:
/// mimalloc with the feature `mimalloc` (see `allocator`), else none (the
/// system's).
#[cfg(feature = "mimalloc")]
#[doc(hidden)]
#[macro_export]
macro_rules! __global_allocator {
    () => {
        #[global_allocator]
        static SCAFFOLD_ALLOCATOR: $crate::__private::Allocator = $crate::__private::Allocator;
    };
}

/// Without the feature `mimalloc`, the binary keeps the system allocator
/// (or the suite's own `#[global_allocator]`).
#[cfg(not(feature = "mimalloc"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __global_allocator {
    () => {};
}

/// The eval run this process takes part in.
struct RunState {
    id: String,
    /// Cells finished in the run before this process started, by test
    /// name (empty unless resuming).
    done: HashMap<String, RecordedCell>,
    /// Whether this process resumes the run.
    resuming: bool,
    /// The test names of every cell this process may run (empty unless
    /// resuming).
    planned: HashSet<String>,
    /// This process's claim on the run: no other process resumes it
    /// meanwhile. Let go of (its file removed) once the run is finished.
    claim: Mutex<Option<RunClaim>>,
    /// How many sessions of the run a resume found cut short by the
    /// interruption, and marked interrupted.
    interrupted: usize,
}

/// The tag of the sessions of eval run `id`.
fn run_tag(id: &str) -> String {
    format!("run:{id}")
}

/// The harness's shared state.
struct Harness {
    evals: Vec<Box<dyn ErasedEval>>,
    runtime: tokio::runtime::Runtime,
    envs: Vec<CellEnv>,
    /// The run's playback server and cassette cache, shared by its evals.
    playback: Playback,
    manifest_dir: PathBuf,
    /// Where insta finds the suite's snapshots (see [`insta_workspace`]).
    insta_workspace: PathBuf,
    /// The suite's file and line, that snapshot headers name.
    source: (PathBuf, u32),
    snapshots: Snapshots,
    /// Cells whose calls could not be played back (a stale or missing
    /// recording): their snapshots were not compared.
    unplayable: AtomicUsize,
    output: Option<PathBuf>,
    store: Option<Store>,
    run: Option<RunState>,
    /// Per eval (same order as `evals`).
    finished: Vec<Mutex<Finished>>,
    /// How many more finished cells keep their whole record in memory
    /// (`SCAFFOLD_WHOLE_RECORDS`); the others keep a summary.
    whole_left: AtomicUsize,
    /// Whether a finished cell was kept as a summary, so the JSON, JUnit and
    /// HTML reports must be written from the store.
    summarized: AtomicBool,
    /// Cells whose record could not be written to the store.
    store_errors: Mutex<Vec<String>>,
    /// The first error of the store that failed to record a cell: no cell
    /// starts after it (each would call its provider for nothing).
    store_broken: OnceLock<String>,
    /// Cells not started because the store could not be written.
    not_started: AtomicUsize,
    trim: memory::Trim,
    /// What each cell's thread sets its scheduling priority to.
    priority: priority::CellPriority,
    /// How many cells run their workflow at once (see [`slots`]).
    slots: slots::Slots,
    formats: Vec<Format>,
    /// Which cells' transcripts the HTML report embeds (`SCAFFOLD_REPORT_TRANSCRIPTS`).
    transcripts: reports::html::TranscriptSelection,
    progress: Option<Progress>,
    /// Per eval (same order as `evals`): how its results are judged, with
    /// the quarantine of `evals/quarantine.yaml` added.
    gate_options: Vec<GateOptions>,
    /// The run's per-provider rate limiters, shared by every cell; none in
    /// playback, which never waits for one.
    limits: Option<RateLimits>,
    /// Per eval: its cost budget (`SCAFFOLD_MAX_COST`'s is shared by all).
    budgets: Vec<Option<Arc<Budget>>>,
    /// Per eval: the cells this process runs or reports.
    planned: Vec<usize>,
    /// Per eval: its cells this process has yet to finish (its gate test waits).
    countdowns: Vec<judge::Countdown>,
    /// Per eval: the results its gate test judged, for the summary.
    judged: Vec<Mutex<Option<judge::Judged>>>,
    /// The tests this harness failed (cells and gates); libtest counting
    /// more means some crashed.
    failed_tests: AtomicUsize,
    /// The results' timestamp, the same for every eval of the run.
    timestamp: OnceLock<String>,
    /// `SCAFFOLD_BASELINE`.
    baseline: summary::Baseline,
}

/// Why the suite could not start.
enum SetupError {
    /// A setting (an environment variable, the store): one line.
    Line(String),
    /// The suite's definitions: one line each.
    Suite(Vec<String>),
}

/// The session store, and whether it is in memory.
fn open_store(manifest_dir: &Path) -> Result<(Store, bool), String> {
    match std::env::var(DATABASE_ENV) {
        Ok(v) if v == ":memory:" => Store::in_memory()
            .map(|s| (s, true))
            .map_err(|e| e.to_string()),
        Ok(v) if !v.is_empty() => Store::open(&v)
            .map(|s| (s, false))
            .map_err(|e| e.to_string()),
        _ => Store::open(Store::default_path_from(manifest_dir))
            .map(|s| (s, false))
            .map_err(|e| e.to_string()),
    }
}

/// `target/scaffold/` of the workspace: beside the session database.
fn results_dir(manifest_dir: &Path) -> PathBuf {
    let db = Store::default_path_from(manifest_dir);
    db.parent().map(Path::to_path_buf).unwrap_or(db)
}

fn wanted_tags() -> Option<Vec<String>> {
    let raw = std::env::var(TAGS_ENV).ok()?;
    let tags: Vec<String> = raw
        .split(',')
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    (!tags.is_empty()).then_some(tags)
}

/// Record mode calls the real APIs and replaces recordings: every provider
/// of the variants that will run must have its API key before the first
/// call, or nothing runs (a keyless run would only record 401s).
fn check_keys(evals: &[Box<dyn ErasedEval>], globs: Option<&[String]>) -> Result<(), String> {
    let selected = |variant: &str| globs.is_none_or(|g| g.iter().any(|g| glob_matches(g, variant)));
    let missing: Vec<String> = evals
        .iter()
        .flat_map(|e| {
            let eval = e.name().to_string();
            e.missing_keys(&selected)
                .into_iter()
                .map(move |(who, var)| format!("  {eval}: {who}: set {var}"))
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{MODE_ENV}=record calls the real APIs, and {} of its providers ha{} no API key; \
         nothing was called and no recording changed:\n{}",
        missing.len(),
        if missing.len() == 1 { "s" } else { "ve" },
        missing.join("\n")
    ))
}

/// Whether this process is one test of a nextest run (one process per test).
fn under_nextest() -> bool {
    std::env::var_os("NEXTEST_RUN_ID").is_some() || std::env::var_os("NEXTEST").is_some()
}

/// The harness's `main` for the package at `manifest_dir` (use [`main!`](crate::main)).
/// Snapshot headers name the package's `Cargo.toml` as their source; see
/// [`main_for`].
pub fn main_in(manifest_dir: &str) -> ExitCode {
    main_for(manifest_dir, "Cargo.toml", 1)
}

/// [`main_in`], with the suite's `file!()` and `line!()` as the source that
/// snapshot headers name (the file relative to the package) and
/// `cargo insta review` shows. What `main!()` expands to; not public API.
#[doc(hidden)]
pub fn main_for(manifest_dir: &str, suite_file: &str, suite_line: u32) -> ExitCode {
    let manifest_dir = PathBuf::from(manifest_dir);
    let source = (suite_source(&manifest_dir, suite_file), suite_line);
    let mut args = Arguments::from_args();
    match run_harness(&manifest_dir, &source, &mut args) {
        Ok(code) => code,
        Err(SetupError::Line(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
        Err(SetupError::Suite(errors)) => {
            eprintln!("error: the eval suite could not be set up:");
            for e in errors {
                eprintln!("  {e}");
            }
            ExitCode::FAILURE
        }
    }
}

/// The suite's file `file` (a `file!()`: relative to the workspace it was
/// built in, or absolute) as a path under `manifest_dir`, by its longest
/// tail that is a file there (`tests/evals.rs` of `suites/a/tests/evals.rs`),
/// else by its relative path or its name: insta writes it relative to the
/// package, the same on every machine.
fn suite_source(manifest_dir: &Path, file: &str) -> PathBuf {
    let file = Path::new(file);
    let mut tail = file.components();
    while !tail.as_path().as_os_str().is_empty() {
        let candidate = tail.as_path();
        if candidate.is_relative() && manifest_dir.join(candidate).is_file() {
            return manifest_dir.join(candidate);
        }
        tail.next();
    }
    match file.is_relative() {
        true => manifest_dir.join(file),
        false => manifest_dir.join(file.file_name().unwrap_or_default()),
    }
}

/// The name of the test target whose executable is `exe` (cargo names it
/// `{target}-{16 hex digits}`, a hyphen of the name written `_`), for the
/// default re-record command; the suite's file `source` gives the hyphens
/// back when its stem is that name. `None` for another executable.
fn test_target(exe: &Path, source: &Path) -> Option<String> {
    let stem = exe.file_stem()?.to_str()?;
    let (name, hash) = stem.rsplit_once('-')?;
    if name.is_empty() || hash.len() != 16 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let file = source.file_stem().and_then(|s| s.to_str());
    Some(match file {
        Some(file) if file.replace('-', "_") == name => file.to_string(),
        _ => name.to_string(),
    })
}

/// The formats named by `SCAFFOLD_FORMAT` (default table and JSON).
fn wanted_formats() -> Result<Vec<Format>, String> {
    match std::env::var(FORMAT_ENV) {
        Ok(v) if !v.trim().is_empty() => {
            Format::parse_list(&v).map_err(|e| format!("{FORMAT_ENV}: {e}"))
        }
        _ => Ok(DEFAULT_FORMATS.to_vec()),
    }
}

/// How many cells a playback run keeps in flight per CPU. A cell spends
/// part of its time waiting for its record's durable commit; with only one
/// cell per CPU the CPUs idle through those waits and every commit holds one
/// cell's pages. The more cells wait at once, the more of them share a
/// commit, and the fewer pages each cell has written: at 10,000 cells on a
/// 2-core machine, eight per CPU took 10% less time and 7% less CPU than
/// four, for 1.2–1.6 MiB more resident memory at any size (thread stacks and
/// allocator arenas), so the same ratio between sizes (`benches/suite.rs`,
/// whose HTTP-alone baseline uses as many threads: keep the two alike).
const PLAYBACK_CELLS_PER_CPU: usize = 8;

/// The test threads when `--test-threads` is not given: `RUST_TEST_THREADS`,
/// else the largest concurrency an eval asks for, else in playback
/// [`PLAYBACK_CELLS_PER_CPU`] per CPU. Live and record runs keep libtest's
/// one per CPU, so that nothing sends more calls at once to a real API than
/// the user asked for.
fn default_test_threads(
    settings: &Settings,
    evals: &[Box<dyn ErasedEval>],
    mode: RecorderMode,
) -> Option<usize> {
    settings
        .test_threads
        .or_else(|| evals.iter().filter_map(|e| e.concurrency()).max())
        .or_else(|| {
            (mode == RecorderMode::Playback).then(|| {
                std::thread::available_parallelism().map_or(1, usize::from) * PLAYBACK_CELLS_PER_CPU
            })
        })
}

/// The test threads for `trials`: as many as asked (else one per CPU), but
/// no more than the tests that run. libtest starts every thread it is given
/// before the first test, whatever the tests: a nextest process, which runs
/// one, started sixteen (a tenth of its time, their stacks mapped and
/// unmapped), where one test runs on the main thread.
fn threads_for(args: &Arguments, trials: &[libtest_mimic::Trial]) -> usize {
    let asked = args
        .test_threads
        .or_else(|| std::thread::available_parallelism().ok().map(Into::into))
        .unwrap_or(1);
    if trials.len() >= asked {
        return asked;
    }
    let running = trials.iter().filter(|t| !args.is_filtered_out(t)).count();
    asked.min(running).max(1)
}

/// The progress bar, when this run may show one (see [`progress::allowed`]):
/// `running` cells, the shortest of their names `shortest` characters long.
fn progress_bar(args: &Arguments, running: usize, shortest: Option<usize>) -> Option<Progress> {
    use libtest_mimic::FormatSetting;
    let threads = args
        .test_threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from));
    let pretty =
        !args.quiet && args.format.unwrap_or(FormatSetting::Pretty) == FormatSetting::Pretty;
    if args.list || threads < 2 || !pretty || !progress::allowed() {
        return None;
    }
    // libtest's lines are `test [eval] {name} ... ok`, names padded to the
    // longest: the bar is never wider than the shortest of them.
    Some(Progress::new(
        running,
        shortest? + "test [eval]  ... ok".len(),
    ))
}

/// The configuration of `eval` as a run records it, its cells holding
/// `inputs` distinct cases.
fn run_config(eval: &dyn ErasedEval, inputs: usize) -> RunConfig {
    RunConfig {
        trials: eval.trials(),
        inputs,
        variants: eval.variant_names(),
        scorers: eval.scorer_names(),
        min_pass_rate: eval.min_pass_rate(),
    }
}

/// What the process sets out to run, as its run records it.
struct Plan<'a> {
    evals: &'a [Box<dyn ErasedEval>],
    /// Per eval, the distinct cases of its cells.
    inputs: &'a [usize],
    /// Per eval, its gate options and planned cells.
    plans: Vec<EvalPlan>,
    /// The test names of every cell this process may run (empty unless resuming).
    planned: HashSet<String>,
    /// How the process selects its cells.
    selection: &'a Selection,
    /// The commit and branch the run runs on.
    source: Option<crate::store::RunSource>,
}

/// Begin (or join, or resume) the eval run of this process, which runs `plan`.
fn start_run(
    store: &Store,
    in_memory: bool,
    resume: Option<&Resume>,
    plan: Plan<'_>,
) -> Result<RunState, String> {
    let Plan {
        evals,
        inputs,
        plans,
        planned,
        selection,
        source,
    } = plan;
    let configs: Vec<(String, RunConfig)> = evals
        .iter()
        .zip(inputs)
        .map(|(eval, &inputs)| (eval.name().to_string(), run_config(eval.as_ref(), inputs)))
        .collect();
    // nextest's processes run one run together; any other process runs its run alone.
    let nextest = under_nextest();
    let kind = if nextest {
        ClaimKind::Shared
    } else {
        ClaimKind::Exclusive
    };
    let (meta, done, claim, interrupted) = match resume {
        None => {
            let meta = match std::env::var("NEXTEST_RUN_ID") {
                // Every process of one nextest run records into the same run.
                Ok(id) if !id.trim().is_empty() => EvalRunMeta::new(id.trim(), ORIGIN_NEXTEST),
                _ => EvalRunMeta::generate(ORIGIN_HARNESS),
            };
            let claim = store
                .claim_eval_run(&meta.id, kind)
                .map_err(|e| format!("cannot take part in eval run {}: {e}", meta.id))?;
            (
                meta.selection(selection.to_json()).source(source),
                HashMap::new(),
                claim,
                0,
            )
        }
        Some(resume) => {
            if in_memory {
                return Err(format!(
                    "{RESUME_ENV}: cannot resume with {DATABASE_ENV}=:memory: (an in-memory \
                     database is gone when its run ends); use a database file (unset \
                     {DATABASE_ENV} for the default) or unset {RESUME_ENV}"
                ));
            }
            let resumed = resume_run(store, resume, kind, selection, &configs)?;
            (
                resumed.meta,
                resumed.done,
                resumed.claim,
                resumed.interrupted,
            )
        }
    };
    let meta = configs
        .into_iter()
        .zip(plans)
        .fold(meta, |meta, ((name, config), plan)| {
            meta.eval(name.clone(), config).plan(name, plan)
        });
    // Idempotent: joins the run when another process (or an earlier one) began it.
    store
        .begin_eval_run(&meta)
        .map_err(|e| format!("cannot begin the eval run: {e}"))?;
    Ok(RunState {
        id: meta.id,
        done,
        resuming: resume.is_some(),
        planned,
        claim: Mutex::new(Some(claim)),
        interrupted,
    })
}

/// A run taken up again: what it records, its finished cells (as
/// summaries), this process's claim on it and how many of its sessions
/// were cut short.
struct Resumed {
    meta: EvalRunMeta,
    done: HashMap<String, RecordedCell>,
    claim: RunClaim,
    interrupted: usize,
}

/// Claim the run `resume` names, check that it runs with `selection` and
/// `configs` as before, and load its finished cells.
fn resume_run(
    store: &Store,
    resume: &Resume,
    kind: ClaimKind,
    selection: &Selection,
    configs: &[(String, RunConfig)],
) -> Result<Resumed, String> {
    let (run, claim) = claim_to_resume(store, resume, kind)?;
    check_resumed_selection(store, &run.id, selection)?;
    let stored = store.eval_run_configs(&run.id).map_err(|e| e.to_string())?;
    for (name, config) in configs {
        if let Some(d) = stored.get(name).and_then(|old| old.difference(config)) {
            return Err(format!(
                "{RESUME_ENV}: eval `{name}` ran with {} {} in run {}, and would run \
                 with {} now, so its finished cells cannot be reused; resume with the \
                 same settings, or unset {RESUME_ENV} to start a fresh run",
                d.field, d.first, run.id, d.other
            ));
        }
    }
    let done: HashMap<String, RecordedCell> = store
        .recorded_cells(&run.id)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|mut c| {
            // The store keeps the whole record; memory, its summary.
            c.record = c.record.into_summary();
            (c.cell.clone(), c)
        })
        .collect();
    // Alone on the run, so whatever of it is still running was cut
    // short. nextest's processes run beside each other: they leave it.
    let interrupted = if under_nextest() {
        0
    } else {
        interrupt_sessions(store, &run.id)?
    };
    Ok(Resumed {
        meta: EvalRunMeta::new(run.id, run.origin),
        done,
        claim,
        interrupted,
    })
}

/// The run `resume` names, claimed for this process: a run that another
/// live process runs (or resumes) is refused, naming it. Read again once
/// claimed, so that a run finished meanwhile is not resumed.
fn claim_to_resume(
    store: &Store,
    resume: &Resume,
    kind: ClaimKind,
) -> Result<(crate::store::EvalRunRecord, RunClaim), String> {
    let unfinished = |run: Option<crate::store::EvalRunRecord>, id: &str| match run {
        None => Err(format!(
            "{}: there is no eval run {id} in {}; unset {RESUME_ENV} to start a fresh run",
            resume.as_written(),
            store.path()
        )),
        Some(run) if run.finished => Err(format!(
            "{}: eval run {id} already finished, there is nothing to resume; unset \
             {RESUME_ENV} to start a fresh run",
            resume.as_written()
        )),
        Some(run) => Ok(run),
    };
    let run = match resume {
        Resume::Latest => store
            .latest_unfinished_eval_run()
            .map_err(|e| e.to_string())?
            .ok_or_else(|| {
                format!(
                    "{RESUME_ENV}: there is no unfinished eval run to resume in {}; \
                     unset {RESUME_ENV} to start a fresh run",
                    store.path()
                )
            })?,
        Resume::Id(id) => unfinished(store.eval_run(id).map_err(|e| e.to_string())?, id)?,
    };
    let claim = match store.claim_eval_run(&run.id, kind) {
        Ok(claim) => claim,
        Err(e @ StoreError::RunClaimed { .. }) => {
            return Err(format!(
                "{}: {e}; a run is resumed by one process at a time: wait for it to end, \
                 or unset {RESUME_ENV} to start a fresh run",
                resume.as_written()
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    let run = unfinished(store.eval_run(&run.id).map_err(|e| e.to_string())?, &run.id)?;
    Ok((run, claim))
}

/// Refuse to resume run `id` with cells other than its own: a filter, tags
/// or variants it did not run with would leave its other cells unrun while
/// the run is marked finished. A run stored without its selection (by an
/// older scaffold) is not checked.
fn check_resumed_selection(store: &Store, id: &str, selection: &Selection) -> Result<(), String> {
    let Some(json) = store.eval_run_selection(id).map_err(|e| e.to_string())? else {
        return Ok(());
    };
    let stored = Selection::from_json(&json).ok_or_else(|| {
        format!(
            "{RESUME_ENV}: run {id} chose its cells by `{json}`, which this scaffold cannot \
             read; unset {RESUME_ENV} to start a fresh run"
        )
    })?;
    if stored == *selection {
        return Ok(());
    }
    Err(format!(
        "{RESUME_ENV}: run {id} selected its cells with {stored}; this resume selects them \
         with {selection}. A resume runs the cells of its run, no others: resume with the \
         same selection, or unset {RESUME_ENV} to start a fresh run"
    ))
}

/// Mark the sessions of run `id` still running interrupted; returns how many.
fn interrupt_sessions(store: &Store, id: &str) -> Result<usize, String> {
    let tag = run_tag(id);
    let running = store
        .list(
            &SessionFilter::default()
                .tag(tag.clone())
                .status(SessionStatus::Running),
        )
        .map_err(|e| e.to_string())?
        .len();
    if running > 0 {
        store
            .interrupt_sessions(&tag)
            .map_err(|e| format!("cannot mark the interrupted sessions of run {id}: {e}"))?;
    }
    Ok(running)
}

/// Begin the run of `cells` in the store (none when only listing).
fn begin(
    (setup, manifest_dir): (&Setup, &Path),
    args: &Arguments,
    cells: &mut Cells,
) -> Result<Option<RunState>, SetupError> {
    let Some(store) = &setup.store else {
        return Ok(None);
    };
    let selection = Selection::new(
        args,
        cells.tags.as_deref(),
        setup.settings.variants.as_deref(),
        under_nextest(),
    );
    let plan = Plan {
        evals: &setup.evals,
        inputs: &cells.inputs,
        plans: cells.plans(&setup.gate_options),
        planned: std::mem::take(&mut cells.planned),
        selection: &selection,
        source: source::detect(manifest_dir, |name| std::env::var(name).ok()),
    };
    start_run(store, setup.in_memory, setup.settings.resume.as_ref(), plan)
        .map(Some)
        .map_err(SetupError::Line)
}

/// The cells' sessions carry their run, so that a resume finds those
/// its interruption cut short.
fn tag_envs(envs: Vec<CellEnv>, run: Option<&RunState>) -> Vec<CellEnv> {
    let Some(run) = run else {
        return envs;
    };
    envs.into_iter()
        .map(|mut env| {
            env.store = env.store.map(|s| s.tagging_sessions([run_tag(&run.id)]));
            env
        })
        .collect()
}

/// Say how much of the resumed `run` is already done.
fn announce_resume(run: &RunState, args: &Arguments, cells: &Cells) {
    let done = cells
        .trials
        .iter()
        .filter(|t| !args.is_filtered_out(t) && !args.is_ignored(t))
        .filter(|t| run.done.contains_key(t.name()))
        .count();
    let interrupted = match run.interrupted {
        0 => String::new(),
        n => format!("; {n} session(s) cut short by the interruption marked interrupted"),
    };
    eprintln!(
        "resuming run {}: {done} of {} cells already finished{interrupted}",
        run.id,
        cells.running.iter().sum::<usize>()
    );
}

/// Where this suite's snapshots are: `INSTA_WORKSPACE_ROOT` when set,
/// else the user's package (insta would look from the workspace root).
fn insta_workspace(manifest_dir: &Path) -> PathBuf {
    std::env::var_os("INSTA_WORKSPACE_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir.to_path_buf())
}

/// What the harness is made of besides the setup and the cells.
struct Assembly {
    runtime: tokio::runtime::Runtime,
    envs: Vec<CellEnv>,
    playback: Playback,
    run: Option<RunState>,
    progress: Option<Progress>,
    priority: priority::CellPriority,
    slots: slots::Slots,
}

impl Harness {
    fn new(
        setup: Setup,
        parts: Assembly,
        running: Vec<usize>,
        (manifest_dir, source): (&Path, &(PathBuf, u32)),
    ) -> Harness {
        // Cells finished before a resume were loaded as summaries.
        let resumed_summaries = parts.run.as_ref().is_some_and(|r| !r.done.is_empty());
        // A fork's sessions are not the cells' usual ones: no snapshots
        // unless SCAFFOLD_SNAPSHOTS asks for them.
        let snapshots = match &setup.fork {
            Some(_) if std::env::var_os(SNAPSHOTS_ENV).is_none() => Snapshots::Off,
            _ => setup.settings.snapshots,
        };
        Harness {
            evals: setup.evals,
            runtime: parts.runtime,
            envs: parts.envs,
            playback: parts.playback,
            manifest_dir: manifest_dir.to_path_buf(),
            insta_workspace: insta_workspace(manifest_dir),
            source: source.clone(),
            snapshots,
            output: setup.settings.output,
            store: setup.store,
            run: parts.run,
            finished: running
                .iter()
                .map(|&n| Mutex::new(Finished::with_capacity(n)))
                .collect(),
            unplayable: AtomicUsize::new(0),
            whole_left: AtomicUsize::new(setup.settings.whole_records),
            summarized: AtomicBool::new(resumed_summaries),
            store_errors: Mutex::new(Vec::new()),
            store_broken: OnceLock::new(),
            not_started: AtomicUsize::new(0),
            trim: memory::Trim::default(),
            priority: parts.priority,
            slots: parts.slots,
            formats: setup.formats,
            transcripts: setup.transcripts,
            progress: parts.progress,
            gate_options: setup.gate_options,
            limits: (setup.mode != RecorderMode::Playback).then(RateLimits::new),
            budgets: setup.budgets,
            countdowns: running.iter().map(|&n| judge::Countdown::new(n)).collect(),
            judged: running.iter().map(|_| Mutex::new(None)).collect(),
            failed_tests: AtomicUsize::new(0),
            timestamp: OnceLock::new(),
            baseline: summary::Baseline::from_env(),
            planned: running,
        }
    }
}

fn run_harness(
    manifest_dir: &Path,
    source: &(PathBuf, u32),
    args: &mut Arguments,
) -> Result<ExitCode, SetupError> {
    let line = SetupError::Line;
    let mut setup = Setup::load(manifest_dir, args)?;
    if args.test_threads.is_none() {
        args.test_threads = default_test_threads(&setup.settings, &setup.evals, setup.mode);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| line(format!("cannot start the tokio runtime: {e}")))?;
    // Real calls run on this runtime, with a client of the run's own.
    let client = setup
        .client
        .take()
        .and_then(|built| built.join().ok()?.ok())
        .map(|transport| transport.served_on(runtime.handle().clone()));
    // With SCAFFOLD_FAKE, every call goes to its rules' server, on this runtime.
    let fake = setup
        .fake
        .as_ref()
        .map(|rules| fake::serve(rules, &runtime, args.list))
        .transpose()
        .map_err(line)?;
    let client = match &fake {
        Some(server) => Some(fake::ToFake::new(server, client) as Arc<dyn Transport>),
        None => client,
    };
    // One playback server and cache for the whole run.
    let playback = Playback::new();
    let envs = setup.cell_envs((manifest_dir, &source.0), &playback, client.as_ref());
    let shared: Arc<OnceLock<Harness>> = Arc::new(OnceLock::new());
    let mut cells = Cells::build(&setup, args, &shared);
    let threads = threads_for(args, &cells.trials);
    args.test_threads = Some(threads);
    let priority = priority::CellPriority::for_run(setup.mode, threads);
    let running_cells: usize = cells.running.iter().sum();
    let (slots, libtest_threads) = slots::Slots::for_run(setup.mode, threads, running_cells);
    let run = begin((&setup, manifest_dir), args, &mut cells)?;
    let envs = tag_envs(envs, run.as_ref());
    let progress = progress_bar(args, running_cells, cells.shortest);
    if let Some(run) = run.as_ref().filter(|r| r.resuming) {
        announce_resume(run, args, &cells);
    }
    let Cells {
        trials, running, ..
    } = cells;
    let parts = Assembly {
        runtime,
        envs,
        playback,
        run,
        progress,
        priority,
        slots,
    };
    if shared
        .set(Harness::new(setup, parts, running, (manifest_dir, source)))
        .is_err()
    {
        return Err(line("the harness was set up twice".into()));
    }
    let list = args.list;
    // What loading the datasets and building the cells freed.
    memory::release_free_memory();
    args.test_threads = Some(libtest_threads);
    let conclusion = libtest_mimic::run(args, trials);
    drop(fake);
    // Every trial has run and let go of the harness.
    let Some(harness) = Arc::into_inner(shared).and_then(OnceLock::into_inner) else {
        return Err(line("the harness is still in use after the run".into()));
    };
    Ok(harness.conclude(list, conclusion))
}

impl Harness {
    /// Once every trial has run: the exit code, after the summary when
    /// this process reports one.
    fn conclude(mut self, list: bool, conclusion: libtest_mimic::Conclusion) -> ExitCode {
        // The summary needs no case: the datasets go before it is built.
        for eval in &mut self.evals {
            eval.release_cases();
        }
        if let Some(p) = &self.progress {
            p.finish();
        }
        if list {
            return conclusion.exit_code();
        }
        if self.store_failed() {
            return ExitCode::FAILURE;
        }
        if under_nextest() {
            // One cell per process: the cell's own verdict is the result.
            // The process that records the run's last cell marks it finished.
            if let (Some(store), Some(run)) = (&self.store, &self.run)
                && let Err(e) = store.finish_eval_run_if_whole(&run.id)
            {
                eprintln!("warning: cannot mark run {} finished: {e}", run.id);
            }
            return conclusion.exit_code();
        }
        // The summary is the run's peak at 10,000 cells: it goes on what the
        // cells leave. No more calls will come: the playback server lets go of
        // the requests it kept since its last reset (their read buffers) and
        // the parsed cassettes go, and the allocator hands the pages back
        // (about 0.5 MiB at 10,000 cells) when the cells were many.
        self.runtime.block_on(self.playback.release_idle());
        self.trim.before_summary();
        self.summarize(conclusion.num_failed)
    }
}

impl Harness {
    /// Commit what the cells queued, and print what the store could not
    /// write: the last line names the cause when the run stopped for it.
    /// Returns whether anything could not be written.
    fn store_failed(&self) -> bool {
        let flushed = self.store.as_ref().map_or(Ok(()), Store::flush);
        if let Err(e) = &flushed {
            eprintln!("error: the session store could not be written: {e}");
        }
        let errors = match self.store_errors.lock() {
            Ok(e) => e.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        for e in &errors {
            eprintln!("error: the session store could not be written: {e}");
        }
        if let Some(cause) = self.store_broken.get() {
            let not_started = self.not_started.load(Ordering::Relaxed);
            let run = self.run.as_ref().map_or(String::new(), |r| {
                format!("; run {} stays unfinished", r.id)
            });
            eprintln!(
                "\nerror: the run stopped ({not_started} cell(s) not started{run}): the session \
                 store could not record a cell: {cause}"
            );
        }
        flushed.is_err() || !errors.is_empty()
    }

    fn store_error(&self, e: String) {
        match self.store_errors.lock() {
            Ok(mut list) => list.push(e),
            Err(poisoned) => poisoned.into_inner().push(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::erased::erase;
    use super::*;

    #[test]
    fn no_more_test_threads_start_than_tests_run() {
        let trials = |names: &[&str]| -> Vec<libtest_mimic::Trial> {
            names
                .iter()
                .map(|n| libtest_mimic::Trial::test(*n, || Ok(())))
                .collect()
        };
        let args = |filter: Option<&str>, exact: bool, threads: Option<usize>| Arguments {
            filter: filter.map(str::to_string),
            exact,
            test_threads: threads,
            ..Arguments::default()
        };
        // nextest's `NAME --exact`: one test, on the main thread.
        let one = trials(&["e::a::c1"]);
        assert_eq!(
            threads_for(&args(Some("e::a::c1"), true, Some(16)), &one),
            1
        );
        let many = trials(&["e::a::c1", "e::a::c2", "e::b::c1", "e::b::c2"]);
        assert_eq!(
            threads_for(&args(Some("e::a::"), false, Some(16)), &many),
            2
        );
        assert_eq!(threads_for(&args(None, false, Some(3)), &many), 3);
        assert_eq!(threads_for(&args(Some("none"), false, Some(16)), &many), 1);
        let cpus = std::thread::available_parallelism().map_or(1, Into::into);
        assert_eq!(threads_for(&args(None, false, None), &many), cpus.min(4));
    }

    #[test]
    fn snapshot_headers_name_the_suite_file_relative_to_its_package() {
        let package = std::env::temp_dir().join(format!("scaffold-source-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&package);
        std::fs::create_dir_all(package.join("tests")).expect("a package");
        std::fs::write(package.join("tests/evals.rs"), "").expect("a suite");
        let at = |file: &str| suite_source(&package, file);
        let suite = package.join("tests/evals.rs");
        // The root package, a workspace member, a suite built from elsewhere.
        assert_eq!(at("tests/evals.rs"), suite);
        assert_eq!(at("suites/review/tests/evals.rs"), suite);
        assert_eq!(at("/home/me/src/review/tests/evals.rs"), suite);
        // Not in the package (sources moved): as given, or by name.
        assert_eq!(at("a/b.rs"), package.join("a/b.rs"));
        assert_eq!(at("/somewhere/else.rs"), package.join("else.rs"));
        let _ = std::fs::remove_dir_all(&package);
    }

    #[test]
    fn the_default_rerecord_command_names_the_suites_test_target() {
        let target = |exe: &str, source: &str| test_target(Path::new(exe), Path::new(source));
        let deps = "/p/target/debug/deps";
        assert_eq!(
            target(
                &format!("{deps}/evals-2318b717917fabcb"),
                "/p/tests/evals.rs"
            ),
            Some("evals".into())
        );
        // Cargo writes a hyphen of the target's name as `_`; the suite's
        // file of the same name keeps it.
        assert_eq!(
            target(
                &format!("{deps}/my_evals-0123456789abcdef"),
                "/p/tests/my-evals.rs"
            ),
            Some("my-evals".into())
        );
        assert_eq!(
            target(
                &format!("{deps}/review-0123456789abcdef"),
                "/p/tests/main.rs"
            ),
            Some("review".into())
        );
        // Not an executable cargo named: no guess.
        assert_eq!(target("/usr/bin/evals", "/p/tests/evals.rs"), None);
        assert_eq!(
            target(&format!("{deps}/evals-xyz"), "/p/tests/evals.rs"),
            None
        );
    }

    fn settings(test_threads: Option<usize>) -> Settings {
        Settings {
            strict: false,
            trials: None,
            variants: None,
            output: None,
            snapshots: Snapshots::Off,
            resume: None,
            whole_records: 0,
            test_threads,
            max_cost: None,
        }
    }

    #[test]
    fn playback_keeps_more_cells_in_flight_than_cpus_unless_told() {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        let none: Vec<Box<dyn ErasedEval>> = Vec::new();
        assert_eq!(
            default_test_threads(&settings(None), &none, RecorderMode::Playback),
            Some(cpus * PLAYBACK_CELLS_PER_CPU)
        );
        // Calls to a real API: libtest's default, one per CPU.
        for mode in [RecorderMode::Live, RecorderMode::Record] {
            assert_eq!(default_test_threads(&settings(None), &none, mode), None);
        }
        // RUST_TEST_THREADS wins over everything but `--test-threads`.
        assert_eq!(
            default_test_threads(&settings(Some(3)), &none, RecorderMode::Playback),
            Some(3)
        );
        // An eval's concurrency wins over the playback default.
        let eval = erase(crate::eval::Eval::<serde_json::Value>::new().concurrency(5));
        assert_eq!(
            default_test_threads(&settings(None), &[eval], RecorderMode::Playback),
            Some(5)
        );
    }
}
