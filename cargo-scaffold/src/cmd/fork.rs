//! `cargo scaffold fork`: run the suite's variants from a point of a stored
//! session (the harness's `SCAFFOLD_FORK_FROM` / `SCAFFOLD_FORK_AT`).

use std::path::Path;

use scaffold::_cargo_scaffold_support::harness::DATABASE_ENV;
use scaffold::_cargo_scaffold_support::session::{FORK_AT_ENV, FORK_FROM_ENV};
use scaffold::session::{ForkPoint, ForkSource, SessionExport};

use crate::cli::ForkArgs;
use crate::cmd::run;
use crate::cmd::sessions::session_error;
use crate::error::{CliError, CmdResult};
use crate::paths;
use crate::store;

/// `--at`: a fork point, or a bare signal index.
pub fn parse_point(raw: &str) -> Result<ForkPoint, CliError> {
    let raw = raw.trim();
    let text = if !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit()) {
        format!("index:{raw}")
    } else {
        raw.to_string()
    };
    text.parse()
        .map_err(|e| CliError::input(format!("--at: {e}")))
}

/// `cargo scaffold fork`.
pub fn run(args: &ForkArgs) -> CmdResult {
    let point = parse_point(&args.at)?;
    let from = args.from.trim();
    let mut extra: Vec<(&'static str, String)> = Vec::new();
    // Resolve the point now, so that a bad one is one line before cargo starts.
    let resolved = if from.ends_with(".json") {
        let path = paths::absolute(Path::new(from))?;
        let export =
            SessionExport::load(&path).map_err(|e| CliError::input(format!("--from: {e}")))?;
        let resolved = ForkSource::export(export).resolve(&point);
        extra.push((FORK_FROM_ENV, path.display().to_string()));
        resolved
    } else {
        if args.run.database.as_deref() == Some(":memory:") {
            return Err(CliError::input(format!(
                "--from {from} with --database :memory:: a new in-memory database holds no sessions; use the database that holds it, or fork from an export (`cargo scaffold sessions export {from} -o parent.json`, then --from parent.json)"
            )));
        }
        let db = store::open(args.run.database.as_deref().map(Path::new))?;
        let parent = store::session(&db.store, from)?;
        let resolved = ForkSource::stored(&db.store, parent.meta.id.clone()).resolve(&point);
        extra.push((FORK_FROM_ENV, parent.meta.id.clone()));
        if args.run.database.is_none() {
            // The harness must read the database the parent was found in.
            extra.push((
                DATABASE_ENV,
                paths::absolute(&db.path)?.display().to_string(),
            ));
        }
        resolved
    };
    // The harness prints what it forks (phase, signal, case) once it runs.
    resolved.map_err(|e| match e {
        e @ scaffold::session::SessionError::Store(_) => session_error(e),
        e => CliError::input(format!("--at {point}: {e}")),
    })?;
    extra.push((FORK_AT_ENV, point.to_string()));
    let plan = run::plan(&args.run, &extra)?;
    run::execute(&plan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points() {
        assert_eq!(parse_point("47").unwrap().to_string(), "index:47");
        assert_eq!(parse_point(" index:3 ").unwrap().to_string(), "index:3");
        assert_eq!(
            parse_point("phase:fix:first").unwrap().to_string(),
            "phase:fix:first"
        );
        let e = parse_point("fix").unwrap_err().to_string();
        assert!(e.starts_with("--at: `fix` is not a fork point"), "{e}");
        assert!(e.contains("expected phase:<name>:first"), "{e}");
    }
}
