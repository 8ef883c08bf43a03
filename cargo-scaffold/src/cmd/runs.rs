//! `cargo scaffold runs list`: the eval runs of a database.

use scaffold::_cargo_scaffold_support::store::EvalRunRecord;
use scaffold::_cargo_scaffold_support::util::rfc3339;

use crate::cli::RunsListArgs;
use crate::error::{CmdResult, Exit};
use crate::store::{self, error as store_error};
use crate::text::{columns, duration};

/// A run's state in words: `finished in 2.1s` or `not finished`.
pub fn state(r: &EvalRunRecord) -> String {
    match r.finished_at_ms {
        Some(end) if r.finished => {
            format!(
                "finished in {}",
                duration(end.saturating_sub(r.started_at_ms))
            )
        }
        _ => "not finished".to_string(),
    }
}

/// The commit and branch a run ran on (`main@abcdef12`), or `-`.
pub fn source(r: &EvalRunRecord) -> String {
    r.source.as_ref().map_or("-".to_string(), |s| s.short())
}

/// `cargo scaffold runs list`.
pub fn list(args: &RunsListArgs) -> CmdResult {
    let db = store::open(args.db.database.as_deref())?;
    let mut runs = db.store.eval_runs().map_err(store_error)?;
    let total = runs.len();
    if args.limit > 0 {
        runs.truncate(args.limit);
    }
    if args.json {
        let doc = serde_json::to_string_pretty(&runs).unwrap_or_default();
        println!("{doc}");
        return Ok(Exit::Success);
    }
    if runs.is_empty() {
        eprintln!("no eval runs in {}", db.path.display());
        return Ok(Exit::Success);
    }
    let mut rows = vec![
        [
            "RUN", "ORIGIN", "STARTED", "STATE", "SOURCE", "EVALS", "PASSED",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for r in &runs {
        rows.push(vec![
            r.id.clone(),
            r.origin.clone(),
            rfc3339(r.started_at_ms),
            state(r),
            source(r),
            r.evals.join(","),
            format!("{}/{}", r.passed, r.cells),
        ]);
    }
    print!("{}", columns(&rows));
    if runs.len() < total {
        eprintln!("(the {} newest of {total}; --limit 0 for all)", runs.len());
    }
    Ok(Exit::Success)
}
