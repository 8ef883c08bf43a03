//! Where things are by default: the workspace's `target/scaffold/`, as the
//! harness finds it (`CARGO_TARGET_DIR` when set, else `target/` beside the
//! nearest `Cargo.lock`); with a `CARGO_TARGET_DIR` that is not the
//! workspace's own, `<target>/scaffold/<package>-<hash>/` of the package of
//! the current directory, as the harness keys it by its package.

use std::path::{Path, PathBuf};

use scaffold::store::Store;

use crate::error::CliError;

/// The session database the harness writes by default.
pub fn default_database() -> PathBuf {
    Store::default_path()
}

/// The directory the harness writes `{eval}.json` and the reports into by
/// default (beside the database).
pub fn default_results_dir() -> PathBuf {
    let db = default_database();
    db.parent().map(Path::to_path_buf).unwrap_or(db)
}

/// `path` made absolute against the current directory (the harness runs in
/// the package's directory, so relative paths must not reach it as such).
pub fn absolute(path: &Path) -> Result<PathBuf, CliError> {
    std::path::absolute(path)
        .map_err(|e| CliError::input(format!("cannot resolve the path {}: {e}", path.display())))
}

/// The session database a command works on: `--database`, else
/// `SCAFFOLD_DATABASE`, else the default; with where it came from (the
/// flag, the variable or `default`), for messages.
pub fn database(flag: Option<&Path>) -> Result<(PathBuf, &'static str), CliError> {
    let (path, from) = match flag {
        Some(p) => (p.to_path_buf(), "--database"),
        None => match std::env::var_os(scaffold::_cargo_scaffold_support::harness::DATABASE_ENV)
            .filter(|v| !v.is_empty())
        {
            Some(v) if v == ":memory:" => {
                return Err(CliError::input(format!(
                    "{} is `:memory:`, so no sessions were kept: pass --database PATH of a database file",
                    scaffold::_cargo_scaffold_support::harness::DATABASE_ENV
                )));
            }
            Some(v) => (
                PathBuf::from(v),
                scaffold::_cargo_scaffold_support::harness::DATABASE_ENV,
            ),
            None => (default_database(), "default"),
        },
    };
    if path.as_os_str() == ":memory:" {
        return Err(CliError::input(
            "--database :memory: holds nothing once its run ended: pass the path of a database file",
        ));
    }
    Ok((path, from))
}
