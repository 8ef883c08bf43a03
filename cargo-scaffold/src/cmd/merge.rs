//! `cargo scaffold merge`: the results of shards (nextest partitions on
//! several CI runners, say) into one results document per eval.

use std::collections::BTreeMap;
use std::path::Path;

use scaffold::_cargo_scaffold_support::eval::EvalResults;
use scaffold::_cargo_scaffold_support::eval::results::MergeError;
use scaffold::_cargo_scaffold_support::report::{self, Format};

use crate::cli::MergeArgs;
use crate::cmd::report_formats;
use crate::error::{CliError, CmdResult, Exit};
use crate::results;
use crate::store::{self, error as store_error};
use crate::text::pct;

/// One shard's results of one eval, and where they came from.
struct Part {
    from: String,
    results: EvalResults,
}

/// The parts a shard argument holds.
fn parts_of(shard: &Path, run: Option<&str>) -> Result<Vec<Part>, CliError> {
    if !shard.exists() {
        return Err(CliError::input(format!(
            "SHARD {}: no such file or directory",
            shard.display()
        )));
    }
    if store::is_database(shard) {
        let db = store::open_file(shard, "SHARD")?;
        let runs = match run {
            Some(id) => vec![store::eval_run(&db.store, id)?],
            None => db.store.eval_runs().map_err(store_error)?,
        };
        if runs.is_empty() {
            return Err(CliError::input(format!(
                "SHARD {} holds no eval run: was it written by the eval harness (SCAFFOLD_DATABASE)?",
                shard.display()
            )));
        }
        let mut out = Vec::new();
        for r in runs {
            for results in db.store.eval_results(&r.id).map_err(store_error)? {
                out.push(Part {
                    from: format!("{} (run {})", shard.display(), r.id),
                    results,
                });
            }
        }
        return Ok(out);
    }
    Ok(results::load(shard, "SHARD")?
        .into_iter()
        .map(|l| Part {
            from: l.path.display().to_string(),
            results: l.results,
        })
        .collect())
}

/// A merge error as one line, naming the shards where that helps.
fn merge_error(eval: &str, parts: &[Part], e: MergeError) -> CliError {
    match &e {
        MergeError::DuplicateCell { cell } => {
            let holders: Vec<&str> = parts
                .iter()
                .filter(|p| {
                    p.results
                        .results
                        .iter()
                        .any(|c| &c.test_name(&p.results.eval, p.results.config.trials) == cell)
                })
                .map(|p| p.from.as_str())
                .collect();
            CliError::input(format!(
                "merge: cell {cell} is in {}: give each shard once (and one run of a database with --run RUN_ID)",
                match holders.as_slice() {
                    [a, b, ..] if a == b => format!("{a} twice"),
                    [a, b, ..] => format!("both {a} and {b}"),
                    _ => "more than one shard".to_string(),
                }
            ))
        }
        MergeError::ConfigMismatch { .. } => CliError::input(format!(
            "merge: {e}: shards of one run must use the same eval settings (re-run the odd shard)"
        )),
        _ => CliError::input(format!("merge: eval `{eval}`: {e}")),
    }
}

/// `cargo scaffold merge`.
pub fn run(args: &MergeArgs) -> CmdResult {
    let mut formats = report_formats(&args.format, "--format")?;
    if !formats.contains(&Format::Json) {
        formats.push(Format::Json); // What `gate` and `report` read.
    }
    let dir = &args.output;
    if dir.exists() && !dir.is_dir() {
        return Err(CliError::input(format!(
            "--output {}: this is a file; give a directory for the merged results",
            dir.display()
        )));
    }
    let mut by_eval: BTreeMap<String, Vec<Part>> = BTreeMap::new();
    for shard in &args.shards {
        for part in parts_of(shard, args.run.as_deref())? {
            by_eval
                .entry(part.results.eval.clone())
                .or_default()
                .push(part);
        }
    }
    if by_eval.is_empty() {
        return Err(CliError::input(
            "the shards hold no finished cell: nothing to merge",
        ));
    }
    let mut merged = Vec::new();
    for (eval, parts) in &by_eval {
        let whole = EvalResults::merge(parts.iter().map(|p| p.results.clone()).collect())
            .map_err(|e| merge_error(eval, parts, e))?;
        merged.push((parts.len(), whole));
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        CliError::input(format!("--output {}: cannot create it: {e}", dir.display()))
    })?;
    let mut printed = false;
    for (count, results) in &merged {
        for &format in &formats {
            let text = report::render(format, results, None);
            if format == Format::Table {
                if printed {
                    println!();
                }
                print!("{text}");
                printed = true;
                continue;
            }
            let path = dir.join(format!("{}.{}", results.eval, format.extension()));
            std::fs::write(&path, text)
                .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
        }
        eprintln!(
            "merged eval `{}`: {} cells from {count} part(s), pass rate {} ({}/{}) → {}",
            results.eval,
            results.cell_count(),
            pct(results.pass_rate()),
            results.passed_count(),
            results.cell_count(),
            dir.join(format!("{}.json", results.eval)).display()
        );
        if let Some(why) = results.partial() {
            eprintln!("warning: eval `{}`: {why}", results.eval);
        }
    }
    Ok(Exit::Success)
}
