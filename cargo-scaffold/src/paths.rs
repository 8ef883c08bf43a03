//! Where things are by default: the workspace's `target/scaffold/`, as the
//! harness finds it (`CARGO_TARGET_DIR` when set, else `target/` beside the
//! nearest `Cargo.lock`).

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

/// The session database to read: `--database`, else `SCAFFOLD_DATABASE`,
/// else the default. It must exist: reading never creates one.
pub fn existing_database(flag: Option<&Path>) -> Result<PathBuf, CliError> {
    let (path, from) = match flag {
        Some(p) => (p.to_path_buf(), "--database"),
        None => match std::env::var_os(scaffold::harness::DATABASE_ENV).filter(|v| !v.is_empty()) {
            Some(v) if v == ":memory:" => {
                return Err(CliError::input(format!(
                    "{} is `:memory:`, so no sessions were kept: pass --database PATH of a database file",
                    scaffold::harness::DATABASE_ENV
                )));
            }
            Some(v) => (PathBuf::from(v), scaffold::harness::DATABASE_ENV),
            None => (default_database(), "default"),
        },
    };
    if path.as_os_str() == ":memory:" {
        return Err(CliError::input(
            "--database :memory: holds nothing once its run ended: pass the path of a database file",
        ));
    }
    if path.is_file() {
        return Ok(path);
    }
    let hint = if from == "default" {
        "run the evals first (`cargo scaffold run`) or pass --database PATH"
    } else {
        "check the path, or run the evals with --database pointing there"
    };
    Err(CliError::input(format!(
        "no session database at {} ({from}): {hint}",
        path.display()
    )))
}
