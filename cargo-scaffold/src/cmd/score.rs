//! `cargo scaffold score`: a dataset's assertions over stored sessions,
//! running nothing.

use std::path::Path;

use scaffold::dataset::{Case, Dataset, DatasetError, Severity};
use scaffold::scorer;
use scaffold::session::{ScoreOptions, ScoreReport};
use scaffold::store::{SessionFilter, SessionRecord, Store};
use serde_json::{Value, json};

use crate::cli::ScoreArgs;
use crate::cmd::sessions::{session_error, short};
use crate::error::{CliError, CmdResult, Exit};
use crate::store::{self, error as store_error};
use crate::text::{columns, cut};

/// The built-in scorers `--scorer` knows.
const SCORERS: &str =
    "output-valid, latency=MAX_MS,IDEAL_MS, cost=MAX_USD,IDEAL_USD or tokens=MAX,IDEAL";

/// `--scorer` values as scorers over any session.
fn scorers(specs: &[String]) -> Result<ScoreOptions<Value>, CliError> {
    let mut options = ScoreOptions::<Value>::new();
    for spec in specs {
        let bad = |why: &str| CliError::input(format!("--scorer `{spec}`: {why} (use {SCORERS})"));
        let (name, params) = match spec.split_once('=') {
            Some((n, p)) => (n.trim(), Some(p)),
            None => (spec.trim(), None),
        };
        let pair = || -> Result<(f64, f64), CliError> {
            let p = params.ok_or_else(|| bad("give its maximum and ideal"))?;
            let nums: Vec<f64> = p
                .split(',')
                .map(|n| n.trim().parse::<f64>())
                .collect::<Result<_, _>>()
                .map_err(|_| bad("the maximum and ideal must be numbers"))?;
            match nums.as_slice() {
                [max, ideal] if max.is_finite() && ideal.is_finite() && ideal <= max => {
                    Ok((*max, *ideal))
                }
                [_, _] => Err(bad("the ideal must not be above the maximum")),
                _ => Err(bad("give two numbers: the maximum and the ideal")),
            }
        };
        options = match name.replace('_', "-").as_str() {
            "output-valid" if params.is_none() => options.scorer(scorer::output_valid()),
            "output-valid" => return Err(bad("output-valid takes no value")),
            "latency" => {
                let (max, ideal) = pair()?;
                options.scorer(scorer::latency(max, ideal))
            }
            "cost" => {
                let (max, ideal) = pair()?;
                options.scorer(scorer::cost(max, ideal))
            }
            "tokens" => {
                let (max, ideal) = pair()?;
                options.scorer(scorer::tokens(max, ideal))
            }
            _ => return Err(bad("unknown scorer")),
        };
    }
    Ok(options)
}

/// A dataset that does not load: its diagnostics go to stderr as the
/// library writes them, every one; the error says how many.
fn dataset_error(path: &Path, e: DatasetError) -> CliError {
    match e {
        DatasetError::Invalid { diagnostics, .. } => {
            for d in &diagnostics {
                eprintln!("{d}");
            }
            let errors = diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .count();
            CliError::input(format!(
                "--dataset {}: {errors} error{} in the dataset (listed above)",
                path.display(),
                if errors == 1 { "" } else { "s" }
            ))
        }
        other => CliError::input(format!("--dataset: {other}")),
    }
}

fn tag<'a>(s: &'a SessionRecord, prefix: &str) -> Option<&'a str> {
    s.meta.tags.iter().find_map(|t| t.strip_prefix(prefix))
}

/// The sessions to grade.
fn sessions(store: &Store, args: &ScoreArgs) -> Result<(Vec<SessionRecord>, String), CliError> {
    let mut out = Vec::new();
    let what;
    if !args.sessions.is_empty() {
        for id in &args.sessions {
            let s = store::session(store, id)?;
            if !out.iter().any(|o: &SessionRecord| o.meta.id == s.meta.id) {
                out.push(s);
            }
        }
        what = format!("{} session(s) given", out.len());
    } else if !args.tag.is_empty() {
        let mut filter = SessionFilter::default();
        for t in &args.tag {
            filter = filter.tag(t.clone());
        }
        out = store.list(&filter).map_err(store_error)?;
        what = format!("the sessions tagged {}", args.tag.join(" and "));
    } else {
        let run = store::eval_run(store, args.run.as_deref().unwrap_or("latest"))?;
        let cells = store.recorded_cells(&run.id).map_err(store_error)?;
        for cell in cells {
            let id = &cell.record.session_id;
            if id.is_empty() {
                continue; // A cell that could not start has no session.
            }
            if let Some(s) = store.session(id).map_err(store_error)? {
                out.push(s);
            }
        }
        what = format!("the sessions of eval run {}", run.id);
    }
    if let Some(v) = &args.variant {
        out.retain(|s| s.meta.variant.as_deref() == Some(v.as_str()));
    }
    Ok((out, what))
}

/// The case a session is graded with, or why there is none.
fn case_of<'d>(
    dataset: &'d Dataset,
    session: &SessionRecord,
    forced: Option<&'d Case>,
) -> Result<&'d Case, String> {
    if let Some(case) = forced {
        return Ok(case);
    }
    let Some(id) = tag(session, "case:") else {
        return Err("no case: tag".into());
    };
    if let Some(ds) = tag(session, "dataset:")
        && ds != dataset.key()
    {
        return Err(format!("ran dataset `{ds}`"));
    }
    dataset
        .case(id)
        .ok_or_else(|| format!("ran case `{id}`, not in the dataset"))
}

/// `cargo scaffold score`.
pub fn run(args: &ScoreArgs) -> CmdResult {
    scorers(&args.scorer)?; // Checked before anything is read.
    let dataset =
        scaffold::dataset::load(&args.dataset).map_err(|e| dataset_error(&args.dataset, e))?;
    for w in &dataset.warnings {
        eprintln!("{w}");
    }
    let forced = match &args.case {
        Some(id) => Some(dataset.case(id).ok_or_else(|| {
            let ids: Vec<&str> = dataset.cases.iter().map(|c| c.id.as_str()).collect();
            CliError::input(format!(
                "--case {id}: no such case in {} (its cases: {})",
                args.dataset.display(),
                ids.join(", ")
            ))
        })?),
        None => None,
    };
    let db = store::open(args.db.database.as_deref())?;
    let (sessions, what) = sessions(&db.store, args)?;
    if sessions.is_empty() {
        return Err(CliError::input(format!(
            "no session to score: {what}{} match none in {} (see `cargo scaffold sessions list`)",
            args.variant
                .as_deref()
                .map(|v| format!(" of variant `{v}`"))
                .unwrap_or_default(),
            db.path.display()
        )));
    }
    let mut graded: Vec<(&SessionRecord, &Case)> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    for s in &sessions {
        match case_of(&dataset, s, forced) {
            Ok(case) => graded.push((s, case)),
            Err(why) => skipped.push(format!("{} ({why})", short(&s.meta.id))),
        }
    }
    if graded.is_empty() {
        return Err(CliError::input(format!(
            "none of the {} session(s) ran a case of dataset `{}` ({}): pass --case ID to grade them with one case's assertions",
            sessions.len(),
            dataset.key(),
            cut(&skipped.join(", "), 160)
        )));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(format!("cannot start the async runtime: {e}")))?;
    let mut rows = vec![
        [
            "SESSION",
            "VARIANT",
            "CASE",
            "RESULT",
            "CHECKS",
            "FIRST FAILURE",
        ]
        .map(String::from)
        .to_vec(),
    ];
    let mut reports: Vec<Value> = Vec::new();
    let mut failed = 0;
    for (session, case) in &graded {
        let id = &session.meta.id;
        let options = scorers(&args.scorer)?.assertions(case.assertions().cloned());
        let report: Result<ScoreReport, CliError> = runtime
            .block_on(scaffold::session::score::<Value>(&db.store, id, &options))
            .map_err(session_error);
        let variant = session.meta.variant.clone().unwrap_or_else(|| "-".into());
        match report {
            Ok(r) => {
                failed += usize::from(!r.passed);
                let checks = format!(
                    "{}/{} assertions{}",
                    r.assertions.iter().filter(|a| a.passed).count(),
                    r.assertions.len(),
                    if r.scores.is_empty() {
                        String::new()
                    } else {
                        format!(
                            ", {}/{} scorers",
                            r.scores.iter().filter(|s| s.pass).count(),
                            r.scores.len()
                        )
                    }
                );
                rows.push(vec![
                    short(id),
                    variant.clone(),
                    case.id.clone(),
                    if r.passed { "pass" } else { "FAIL" }.into(),
                    checks,
                    cut(&first_failure(&r), 100),
                ]);
                reports.push(json!({
                    "session": id, "variant": session.meta.variant, "case": case.id,
                    "passed": r.passed, "report": r,
                }));
            }
            Err(e) => {
                failed += 1;
                rows.push(vec![
                    short(id),
                    variant,
                    case.id.clone(),
                    "ERROR".into(),
                    "-".into(),
                    cut(&e.to_string(), 100),
                ]);
                reports.push(json!({
                    "session": id, "variant": session.meta.variant, "case": case.id,
                    "passed": false, "error": e.to_string(),
                }));
            }
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&reports).unwrap_or_default()
        );
    } else {
        print!("{}", columns(&rows));
        println!(
            "scored {} session(s) with {}: {} passed, {failed} failed",
            graded.len(),
            args.dataset.display(),
            graded.len() - failed
        );
    }
    if !skipped.is_empty() {
        eprintln!(
            "note: {} session(s) not scored, no case of this dataset: {}",
            skipped.len(),
            cut(&skipped.join(", "), 300)
        );
    }
    Ok(Exit::from_ok(failed == 0))
}

/// The first failure of a report, for a person.
fn first_failure(r: &ScoreReport) -> String {
    if let Some(e) = &r.error {
        return format!("run failed: {e}");
    }
    if let Some(a) = r.assertions.iter().find(|a| !a.passed) {
        return a.message.clone();
    }
    if let Some(s) = r.scores.iter().find(|s| !s.pass) {
        return format!(
            "scorer `{}`: {} {}",
            s.name,
            s.value,
            s.detail.as_deref().unwrap_or("")
        );
    }
    String::new()
}
