//! Claims on eval runs, so that two processes never run the remaining
//! cells of one run at once.
//!
//! A claim is an OS lock on a file beside the database,
//! `<database>-claims/<run>.lock`. The kernel lets go of it when its
//! process ends, however it ends (`kill -9` included): the claim of a dead
//! process never blocks anyone. A process that runs a whole run (a
//! `cargo test` run, a resume) claims it [`ClaimKind::Exclusive`] and notes
//! its pid in the file for the message of whoever is refused; the processes
//! of one nextest run claim it [`ClaimKind::Shared`], all at once.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::error::StoreError;
use crate::util::{file_safe, rfc3339};

/// How a process claims a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimKind {
    /// The process runs the run alone (a `cargo test` run or a resume).
    Exclusive,
    /// The process is one of several running the run together (nextest's
    /// processes); no exclusive claim is granted meanwhile.
    Shared,
}

/// A held claim on an eval run ([`Store::claim_eval_run`](super::Store::claim_eval_run));
/// dropping it lets go.
#[derive(Debug)]
pub struct RunClaim {
    /// The locked file (`None` for an in-memory store: no other process sees it).
    file: Option<(File, PathBuf)>,
    kind: ClaimKind,
}

impl RunClaim {
    /// Let go of the claim of a run that is finished, and remove its file:
    /// whoever claims it next finds the run finished.
    pub fn release_finished(mut self) {
        if let Some((file, path)) = self.file.take() {
            let _ = std::fs::remove_file(&path);
            drop(file);
        }
    }
}

impl Drop for RunClaim {
    fn drop(&mut self) {
        // The pid note is stale once the lock goes (a killed process leaves
        // it; the next exclusive claim writes its own).
        if let (Some((file, _)), ClaimKind::Exclusive) = (&self.file, self.kind) {
            let _ = file.set_len(0);
        }
    }
}

/// The claim file of run `id` of the database at `db`.
fn claim_path(db: &Path, id: &str) -> PathBuf {
    let mut dir = db.as_os_str().to_owned();
    dir.push("-claims");
    PathBuf::from(dir).join(format!("{}.lock", file_safe(id)))
}

/// Claim run `id` of the database file `db` (named `name` in messages).
pub(crate) fn claim(
    db: &Path,
    name: &str,
    id: &str,
    kind: ClaimKind,
) -> Result<RunClaim, StoreError> {
    let path = claim_path(db, id);
    let io = |source: std::io::Error| StoreError::Claim {
        path: name.to_owned(),
        id: id.to_owned(),
        file: path.clone(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io)?;
    let locked = match kind {
        ClaimKind::Exclusive => file.try_lock(),
        ClaimKind::Shared => file.try_lock_shared(),
    };
    match locked {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(StoreError::RunClaimed {
                path: name.to_owned(),
                id: id.to_owned(),
                holder: holder(&mut file),
            });
        }
        Err(TryLockError::Error(e)) => return Err(io(e)),
    }
    if kind == ClaimKind::Exclusive {
        // Only for messages: the lock is the claim, even on a disk too full for the note.
        let note = format!(
            "process {} (since {})",
            std::process::id(),
            rfc3339(crate::util::now_ms())
        );
        let _ = file
            .set_len(0)
            .and_then(|()| file.write_all(note.as_bytes()));
    }
    Ok(RunClaim {
        file: Some((file, path)),
        kind,
    })
}

/// Who holds the claim of `file`, which this process could not take. Shared
/// holders (the processes of a nextest run) write no note: if a shared
/// lock can be had, they are the holders. Else one process holds it
/// exclusively and writes its note right after taking the lock: read it,
/// waiting for it a little if it is not written yet (a claim taken at the
/// same moment), rather than take the empty file for a nextest run's.
fn holder(file: &mut File) -> String {
    if file.try_lock_shared().is_ok() {
        let _ = file.unlock();
        return "the processes of its nextest run".into();
    }
    for _ in 0..NOTE_WAITS {
        let mut note = String::new();
        let read = file
            .seek(SeekFrom::Start(0))
            .and_then(|_| file.read_to_string(&mut note));
        if read.is_ok() && !note.trim().is_empty() {
            return note.trim().to_string();
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    "another process (it has not written its note)".into()
}

/// How many times [`holder`] reads an exclusive holder's note, 10 ms apart.
const NOTE_WAITS: usize = 100;

/// The claim of an in-memory store, which no other process can see.
pub(crate) fn in_memory(kind: ClaimKind) -> RunClaim {
    RunClaim { file: None, kind }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("scaffold-claim-{}", uuid::Uuid::new_v4()));
        (dir.join("s.db"), dir)
    }

    #[test]
    fn an_exclusive_claim_keeps_out_every_other_until_dropped() {
        let (db, dir) = db();
        let first = claim(&db, "s.db", "run/1", ClaimKind::Exclusive).unwrap();
        for kind in [ClaimKind::Exclusive, ClaimKind::Shared] {
            let err = claim(&db, "s.db", "run/1", kind).unwrap_err().to_string();
            let pid = format!("process {}", std::process::id());
            assert!(
                err.contains("eval run run/1 is being run by") && err.contains(&pid),
                "{err}"
            );
        }
        // Another run is another file.
        let other = claim(&db, "s.db", "run-2", ClaimKind::Exclusive).unwrap();
        drop(first);
        let again = claim(&db, "s.db", "run/1", ClaimKind::Exclusive).unwrap();
        drop((again, other));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_refused_claim_names_the_holder_that_has_not_written_its_note_yet() {
        let (db, dir) = db();
        // An exclusive holder between taking the lock and writing its note.
        let _first = claim(&db, "s.db", "r", ClaimKind::Exclusive).unwrap();
        let path = claim_path(&db, "r");
        let writer = OpenOptions::new().write(true).open(&path).unwrap();
        writer.set_len(0).unwrap();
        let late = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            (&writer).write_all(b"process 4242 (since then)").unwrap();
        });
        let err = claim(&db, "s.db", "r", ClaimKind::Exclusive)
            .unwrap_err()
            .to_string();
        late.join().unwrap();
        assert!(err.contains("process 4242"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn shared_claims_go_together_and_keep_out_an_exclusive_one() {
        let (db, dir) = db();
        let a = claim(&db, "s.db", "n", ClaimKind::Shared).unwrap();
        let b = claim(&db, "s.db", "n", ClaimKind::Shared).unwrap();
        let err = claim(&db, "s.db", "n", ClaimKind::Exclusive)
            .unwrap_err()
            .to_string();
        assert!(err.contains("the processes of its nextest run"), "{err}");
        drop((a, b));
        let finished = claim(&db, "s.db", "n", ClaimKind::Exclusive).unwrap();
        let file = claim_path(&db, "n");
        assert!(file.is_file());
        finished.release_finished();
        assert!(!file.exists());
        let _ = std::fs::remove_dir_all(dir);
    }
}
