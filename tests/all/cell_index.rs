//! The processes of a nextest run build their own cell alone, from the
//! index of the suite's cells the run's first process kept
//! (`scaffold/src/harness/cell_index.rs`): the fixture's `#[dataset]`
//! function notes each call.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use scaffold::store::Store;

use crate::common::{TempDir, text};
use crate::fixture::{CELLS, FixtureDir, run};

/// Each cell's verdict, error and assertions as run `run` recorded them.
fn verdicts(db: &Path, run: &str) -> BTreeMap<String, String> {
    let store = Store::open(db).unwrap();
    let results = store.eval_results(run).unwrap();
    let mut out = BTreeMap::new();
    for eval in &results {
        for cell in &eval.results {
            let assertions: Vec<_> = cell
                .assertions
                .iter()
                .map(|a| (a.passed, &a.message))
                .collect();
            out.insert(
                cell.test_name(&eval.eval, eval.config.trials),
                format!(
                    "{} {:?} {assertions:?} {:?}",
                    cell.passed, cell.error, cell.output
                ),
            );
        }
    }
    out
}

fn loads(log: &Path) -> usize {
    std::fs::read_to_string(log).map_or(0, |t| t.lines().count())
}

/// The index files under `target` (`scaffold/{package}/cells/`).
fn indexes(target: &Path) -> Vec<PathBuf> {
    let packages = std::fs::read_dir(target.join("scaffold"))
        .into_iter()
        .flatten();
    packages
        .flatten()
        .flat_map(|p| {
            std::fs::read_dir(p.path().join("cells"))
                .into_iter()
                .flatten()
        })
        .flatten()
        .map(|e| e.path())
        .collect()
}

#[test]
fn each_process_of_a_nextest_run_builds_its_own_cell_and_gives_the_same_verdicts() {
    let dir = TempDir::new("cell-index");
    let (log, target) = (dir.join("datasets.log"), dir.join("target"));
    let env = |run: &'static str| {
        [
            (
                "RESUME_FIXTURE_DATASET_LOG",
                log.to_str().unwrap().to_string(),
            ),
            ("CARGO_TARGET_DIR", target.to_str().unwrap().to_string()),
            ("NEXTEST_RUN_ID", run.to_string()),
        ]
    };
    let run_in = |args: &[&str], run_id: &'static str| {
        let envs = env(run_id);
        let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        run(&dir, args, &envs)
    };
    // nextest lists the tests first (with its run id since 0.9.138): that
    // process loads the dataset and keeps the index.
    let listed = run_in(&["--list", "--format", "terse"], "run-1");
    assert!(listed.status.success(), "{}", text(&listed));
    assert_eq!(text(&listed).matches(": test").count(), CELLS.len());
    assert_eq!(loads(&log), 1);
    assert_eq!(indexes(&target).len(), 1, "{:?}", indexes(&target));
    // nextest names each test as `--list` prints it, its kind included.
    for cell in CELLS {
        run_in(&["--exact", &format!("[eval] {cell}")], "run-1");
    }
    assert_eq!(loads(&log), 1, "a cell's process loaded the dataset");
    assert_eq!(dir.started().values().sum::<usize>(), CELLS.len());
    let indexed = verdicts(&dir.db(), "run-1");
    assert_eq!(indexed.len(), CELLS.len(), "{indexed:?}");
    assert!(indexed["resume-fixture::alpha::c1"].starts_with("false"));
    // A test the index has no cell of (here no test at all) builds the
    // suite, and leaves the run's index as it is.
    let index = indexes(&target);
    let kept = std::fs::read(&index[0]).unwrap();
    let modified = std::fs::metadata(&index[0]).unwrap().modified().unwrap();
    run_in(&["--exact", "[gate] resume-fixture"], "run-1");
    assert_eq!(loads(&log), 2);
    assert_eq!(std::fs::read(&index[0]).unwrap(), kept);
    assert_eq!(
        std::fs::metadata(&index[0]).unwrap().modified().unwrap(),
        modified
    );

    // A run whose index does not read: each process builds the whole
    // suite (the first keeps a new index), with the same verdicts.
    let listed = run_in(&["--list", "--format", "terse"], "run-2");
    assert!(listed.status.success(), "{}", text(&listed));
    let index = indexes(&target);
    assert_eq!(index.len(), 1, "the last run's index goes: {index:?}");
    std::fs::write(&index[0], "scaffold cell index 1\n[not json\n").unwrap();
    let before = loads(&log);
    run_in(&["--exact", CELLS[0]], "run-2");
    assert_eq!(loads(&log), before + 1, "the broken index was used");
    for cell in &CELLS[1..] {
        run_in(&["--exact", cell], "run-2");
    }
    assert_eq!(
        loads(&log),
        before + 1,
        "the first process kept a new index"
    );
    assert_eq!(verdicts(&dir.db(), "run-2"), indexed);
    let store = Store::open(dir.db()).unwrap();
    assert!(store.eval_run("run-2").unwrap().unwrap().finished);

    // Without nextest's `--list` (nextest before 0.9.138), the first cell's
    // process keeps it; the rest read it.
    let before = loads(&log);
    for cell in CELLS {
        run_in(&["--exact", cell], "run-3");
    }
    assert_eq!(loads(&log), before + 1);
    assert_eq!(verdicts(&dir.db(), "run-3"), indexed);
}
