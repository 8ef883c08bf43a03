//! Sharding the example suite with cargo-nextest (`--partition hash:k/2`),
//! each shard into its own database, then merging the shards' results.

use std::collections::BTreeSet;
use std::process::Output;
use std::time::Instant;

use scaffold::_cargo_scaffold_support::eval::EvalResults;
use scaffold::_cargo_scaffold_support::eval::results::MergeError;
use scaffold::store::Store;

use crate::common;

use common::{TempDir, nextest_available, text};

fn cargo(args: &[&str], envs: &[(&str, &std::ffi::OsStr)]) -> Output {
    let mut cmd = common::cargo(args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("cargo runs")
}

/// Every cell of the example suite, as `cargo test --test evals -- --list` names them.
fn every_cell() -> BTreeSet<String> {
    let out = cargo(&["test", "--quiet", "--test", "evals", "--", "--list"], &[]);
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test")?.strip_prefix("[eval] "))
        .map(str::to_string)
        .collect()
}

/// The cells nextest's output says failed (`FAIL [ …] … [eval] {cell}`).
fn failed_cells(output: &str) -> BTreeSet<String> {
    output
        .lines()
        .filter(|l| l.trim_start().starts_with("FAIL "))
        .filter_map(|l| l.split("[eval] ").nth(1))
        .map(|cell| cell.trim().to_string())
        .collect()
}

#[test]
fn nextest_shards_merge_into_the_whole_suite() {
    if !nextest_available("nextest_shards_merge_into_the_whole_suite") {
        return;
    }
    let started = Instant::now();
    let dir = TempDir::new("sharding");
    let mut parts: Vec<EvalResults> = Vec::new();
    let mut failed_by_nextest = BTreeSet::new();
    for k in 1..=2 {
        let db = dir.path().join(format!("shard-{k}.db"));
        let partition = format!("hash:{k}/2");
        let out = cargo(
            &[
                "nextest",
                "run",
                "--locked",
                "--test",
                "evals",
                "--partition",
                &partition,
                "--no-tests=pass",
                "--no-fail-fast",
            ],
            &[("SCAFFOLD_DATABASE", db.as_os_str())],
        );
        // Prompt v1's cells fail their checks, failures the code review
        // eval's gate (70%) allows: their tests pass under nextest. The
        // cells a shard failed are compared with the results below.
        let shard_failed = failed_cells(&text(&out));
        assert!(
            out.status.success() || !shard_failed.is_empty(),
            "shard {partition}: {}",
            text(&out)
        );
        failed_by_nextest.extend(shard_failed);
        if !db.exists() {
            continue; // This shard got no cell.
        }
        let store = Store::open(&db).unwrap();
        let runs = store.eval_runs().unwrap();
        // One nextest run: every per-cell process recorded into it.
        assert_eq!(runs.len(), 1, "{runs:?}");
        assert_eq!(runs[0].origin, "nextest");
        parts.extend(store.eval_results(&runs[0].id).unwrap());
    }
    assert!(!parts.is_empty());
    let shard = parts
        .iter()
        .max_by_key(|p| p.cell_count())
        .cloned()
        .unwrap();

    // Each eval's shards merge into that eval's whole results.
    let merged_of = |eval: &str| {
        let mine: Vec<EvalResults> = parts.iter().filter(|p| p.eval == eval).cloned().collect();
        EvalResults::merge(mine).unwrap()
    };
    let (mut unique, mut total) = (BTreeSet::new(), 0);
    let (mut failed_in_results, mut allowed) = (BTreeSet::new(), 0);
    for (eval, inputs, variants) in [
        ("code-review", 11, 2),
        ("fix-quality", 4, 1),
        ("code-generation", 7, 2),
        ("debugging", 3, 2),
        ("refactoring", 3, 2),
        ("refactoring-verifier", 1, 2),
    ] {
        let merged = merged_of(eval);
        let cells: Vec<String> = merged
            .results
            .iter()
            .map(|c| c.test_name(&merged.eval, merged.config.trials))
            .collect();
        total += cells.len();
        unique.extend(cells);
        failed_in_results.extend(
            merged
                .results
                .iter()
                .filter(|c| !c.passed && !c.quarantined && !merged.allowed_failure(c))
                .map(|c| c.test_name(&merged.eval, merged.config.trials)),
        );
        allowed += merged
            .results
            .iter()
            .filter(|c| merged.allowed_failure(c))
            .count();
        assert_eq!(merged.config.inputs, inputs);
        assert!(
            merged.gate_passed(),
            "{eval}: pass rate {}",
            merged.pass_rate()
        );
        assert_eq!(merged.summary.len(), variants);
    }
    assert_eq!(unique.len(), total, "a cell twice");
    assert_eq!(unique, every_cell());
    assert!(allowed > 0, "prompt v1 fails cells");
    assert_eq!(failed_by_nextest, failed_in_results);
    assert!(failed_by_nextest.is_empty(), "{failed_by_nextest:?}");
    // Shards of two evals do not merge.
    let err = EvalResults::merge(parts.clone()).unwrap_err();
    assert!(matches!(err, MergeError::EvalMismatch { .. }), "{err}");

    // One process per cell or one for all: the same figures, latency
    // included (playback is virtual time), but for the sessions' own ids.
    let single_out = dir.path().join("single");
    let single = cargo(
        &["test", "--quiet", "--locked", "--test", "evals"],
        &[
            ("SCAFFOLD_DATABASE", std::ffi::OsStr::new(":memory:")),
            ("SCAFFOLD_OUTPUT", single_out.as_os_str()),
        ],
    );
    assert!(single.status.success(), "{}", text(&single));
    let cells = |r: &EvalResults| {
        let mut cells: Vec<_> = r
            .results
            .iter()
            .cloned()
            .map(|mut c| {
                c.session_id = String::new();
                (c.test_name(&r.eval, r.config.trials), c)
            })
            .collect();
        cells.sort_by(|a, b| a.0.cmp(&b.0));
        cells
    };
    for eval in [
        "code-review",
        "fix-quality",
        "code-generation",
        "debugging",
        "refactoring",
        "refactoring-verifier",
    ] {
        let single = EvalResults::load(single_out.join(format!("{eval}.json"))).unwrap();
        let merged = merged_of(eval);
        assert_eq!(cells(&merged), cells(&single), "{eval}");
        assert_eq!(merged.summary, single.summary, "{eval}");
    }

    // The same shard twice: refused, naming a cell.
    let err = EvalResults::merge(vec![shard.clone(), shard.clone()]).unwrap_err();
    let first = shard.results[0].test_name(&shard.eval, shard.config.trials);
    assert_eq!(
        err,
        MergeError::DuplicateCell {
            cell: first.clone()
        }
    );
    assert!(err.to_string().contains(&first), "{err}");
    eprintln!(
        "two nextest shards merged: {} cells, {:.1}s",
        total,
        started.elapsed().as_secs_f64()
    );
}
