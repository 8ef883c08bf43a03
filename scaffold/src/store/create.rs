//! A new database file, built aside and linked into place whole.
//!
//! Created where it is opened, a database costs SQLite five syncs and an
//! unlink before its first write (the rollback journal that switches the
//! file to WAL, the file itself, the directory): some milliseconds before a
//! run's first cell. Built instead under a name of its own with its journal
//! in memory and `synchronous = OFF`, synced once and hard-linked to its
//! path, the database appears there complete or not at all: a crash leaves
//! no half-made file where it is looked for, and of several processes
//! creating it at once the first link wins and the others open that one.
//!
//! Whatever fails here (a file system without hard links, a full disk) is
//! left to the ordinary open, which creates the file in place and reports
//! its own error; nothing here is an error of its own.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::schema;

/// What [`create_aside`] did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Created {
    /// The database is at its path, built here.
    Linked,
    /// A file was at the path already (another process's, or the user's):
    /// this one was thrown away.
    Found,
    /// Nothing could be built aside; the caller creates the file in place.
    NotBuilt,
}

/// If nothing is at `path`, build the database under a name beside it and
/// link it to `path`.
pub(super) fn create_aside(path: &Path) -> Created {
    if path.symlink_metadata().is_ok() {
        return Created::Found;
    }
    let aside = aside_name(path);
    let outcome = build(&aside).and_then(|()| link(&aside, path));
    // The name aside is never kept: once linked, `path` holds the file.
    let _ = std::fs::remove_file(&aside);
    match outcome {
        Ok(created) => created,
        Err(_) => Created::NotBuilt,
    }
}

/// `{path}.{uuid}.new`, beside `path` (a hard link stays in one file system).
fn aside_name(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.new", uuid::Uuid::new_v4().simple()));
    path.with_file_name(name)
}

/// The current schema in a new file at `aside`, in WAL mode, synced.
fn build(aside: &Path) -> io::Result<()> {
    let mut conn = Connection::open(aside).map_err(io::Error::other)?;
    // Nothing here needs to survive a crash until the file is synced below:
    // a file left half-made is never linked.
    conn.pragma_update(None, "journal_mode", "MEMORY")
        .and_then(|()| conn.pragma_update(None, "synchronous", "OFF"))
        .map_err(io::Error::other)?;
    schema::migrate(&mut conn, &aside.display().to_string()).map_err(io::Error::other)?;
    let mode: String = conn
        .pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))
        .map_err(io::Error::other)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(io::Error::other(format!("SQLite kept journal mode {mode}")));
    }
    // Closing the last connection moves the (empty) WAL into the file and
    // removes it.
    conn.close().map_err(|(_, e)| io::Error::other(e))?;
    File::open(aside)?.sync_all()
}

/// Link `aside` to `path`, unless a file got there first.
fn link(aside: &Path, path: &Path) -> io::Result<Created> {
    match std::fs::hard_link(aside, path) {
        Ok(()) => Ok(Created::Linked),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Created::Found),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_new_database_is_linked_whole_in_wal_mode_with_nothing_left_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scaffold.db");
        assert_eq!(create_aside(&path), Created::Linked);
        assert_eq!(entries(dir.path()), ["scaffold.db"]);
        // WAL mode is in the header (file format versions 2 and 2) ...
        let header = std::fs::read(&path).unwrap();
        assert_eq!(&header[..16], b"SQLite format 3\0");
        assert_eq!((header[18], header[19]), (2, 2));
        // ... and the schema is the current one, in the file itself.
        let conn = Connection::open(&path).unwrap();
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, schema::SCHEMA_VERSION);
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn a_file_already_there_is_kept_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scaffold.db");
        std::fs::write(&path, b"someone else's").unwrap();
        assert_eq!(create_aside(&path), Created::Found);
        // A file that appears between the look and the link wins too.
        let aside = dir.path().join("built.new");
        build(&aside).unwrap();
        assert_eq!(link(&aside, &path).unwrap(), Created::Found);
        std::fs::remove_file(&aside).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"someone else's");
        assert_eq!(entries(dir.path()), ["scaffold.db"]);
    }

    #[test]
    fn a_database_that_cannot_be_built_is_left_to_the_ordinary_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("scaffold.db");
        assert_eq!(create_aside(&path), Created::NotBuilt);
        assert!(!dir.path().join("missing").exists());
    }
}
