//! The session database as the commands read it: opened without creating
//! it, sessions and eval runs named by id, unique prefix or `latest`.

use std::path::{Path, PathBuf};

use scaffold::_cargo_scaffold_support::store::EvalRunRecord;
use scaffold::store::{SessionRecord, Store, StoreError};

use crate::error::CliError;
use crate::paths;

/// A database opened for reading.
pub struct Db {
    /// The store.
    pub store: Store,
    /// Its file.
    pub path: PathBuf,
}

/// Open the database to read: `--database`, else `SCAFFOLD_DATABASE`, else
/// the default. It must exist: reading never creates one.
pub fn open(flag: Option<&Path>) -> Result<Db, CliError> {
    let (path, from) = paths::database(flag)?;
    open_file(&path, from)
}

/// Open the database to read only, as [`open`] finds it: nothing is
/// migrated or written (see `Store::open_read_only`).
pub fn open_read_only(flag: Option<&Path>) -> Result<Db, CliError> {
    let (path, from) = paths::database(flag)?;
    opened(&path, from, Store::open_read_only(&path))
}

/// Open the database file `path` (`from` says where the path came from, for
/// messages); an error when there is none.
pub fn open_file(path: &Path, from: &str) -> Result<Db, CliError> {
    opened(path, from, Store::open_existing(path))
}

/// What opening `path` gave, as a database or the error that says why not.
fn opened(
    path: &Path,
    from: &str,
    result: Result<Option<Store>, StoreError>,
) -> Result<Db, CliError> {
    match result {
        Ok(Some(store)) => Ok(Db {
            store,
            path: path.to_path_buf(),
        }),
        Ok(None) => {
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
        Err(e) => Err(CliError::input(format!(
            "cannot open the session database: {e}"
        ))),
    }
}

/// Whether `path` is an SQLite database file (by its header).
pub fn is_database(path: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 16];
    path.is_file()
        && std::fs::File::open(path)
            .and_then(|mut f| f.read_exact(&mut header))
            .is_ok_and(|()| &header == b"SQLite format 3\0")
}

/// A store error while working: one line.
pub fn error(e: StoreError) -> CliError {
    CliError::failed(format!("session database: {e}"))
}

/// The session `id`, or the only one whose id starts with it, or else ends with it.
pub fn session(store: &Store, id: &str) -> Result<SessionRecord, CliError> {
    let id = id.trim();
    if id.is_empty() {
        return Err(CliError::input(
            "empty session id: give an id or a prefix of one (see `cargo scaffold sessions list`)",
        ));
    }
    if let Some(s) = store.session(id).map_err(error)? {
        return Ok(s);
    }
    // A prefix of the id, or its end as `sessions list` shows it.
    let mut matches = store.find_by_prefix(id, 3).map_err(error)?;
    if matches.is_empty() {
        matches = store.find_by_suffix(id, 3).map_err(error)?;
    }
    match matches.as_slice() {
        [one] => store
            .session(one)
            .map_err(error)?
            .ok_or_else(|| CliError::failed(format!("session {one} vanished while being read"))),
        [] => Err(CliError::input(format!(
            "no session `{id}` in {}: see `cargo scaffold sessions list`",
            store.path()
        ))),
        many => Err(CliError::input(format!(
            "`{id}` matches several session ids ({}{}): give more of it",
            many[..2].join(", "),
            if many.len() > 2 { ", …" } else { "" }
        ))),
    }
}

/// The eval run `id`: an id, a unique prefix of one, or `latest` (the newest).
pub fn eval_run(store: &Store, id: &str) -> Result<EvalRunRecord, CliError> {
    let id = id.trim();
    if let Some(run) = store.eval_run(id).map_err(error)? {
        return Ok(run);
    }
    let runs = store.eval_runs().map_err(error)?;
    if runs.is_empty() {
        return Err(CliError::input(format!(
            "{} holds no eval run: run the evals with this database first (`cargo scaffold run --database …`)",
            store.path()
        )));
    }
    if id.is_empty() || id.eq_ignore_ascii_case("latest") {
        return Ok(runs[0].clone());
    }
    if let Some(run) = runs.iter().find(|r| r.id == id) {
        return Ok(run.clone());
    }
    let matches: Vec<&EvalRunRecord> = runs.iter().filter(|r| r.id.starts_with(id)).collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(CliError::input(format!(
            "no eval run `{id}` in {}: see `cargo scaffold runs list`, or use `latest`",
            store.path()
        ))),
        many => Err(CliError::input(format!(
            "`{id}` is the start of {} run ids ({}, …): give more of it",
            many.len(),
            many.iter()
                .take(2)
                .map(|r| r.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}
