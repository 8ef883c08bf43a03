//! A session as a self-contained JSON file: export, load, save, import.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::SessionError;
use crate::signal::Signal;
use crate::store::{SessionEnd, SessionRecord, SessionStatus, Store, now_ms};

/// The `format` field of a session file.
pub const EXPORT_FORMAT: &str = "scaffold.session";
/// The newest `version` of the session file format this crate reads and writes.
pub const EXPORT_VERSION: u32 = 1;

/// A session with all its signals, as one JSON document:
/// `{"format": "scaffold.session", "version": 1, "session": {...}, "signals": [...]}`
/// (`session` is the [`SessionRecord`]: lineage, input, initial and final
/// state, status, output, tags).
///
/// ```
/// use scaffold::session::SessionExport;
/// use scaffold::store::{SessionEnd, SessionMeta, SessionStatus, Store};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = Store::in_memory()?;
/// store.begin_session(&SessionMeta::new("s1", "demo"))?;
/// store.finish_session("s1", &SessionEnd::new(SessionStatus::Completed))?;
/// let export = SessionExport::from_store(&store, "s1")?;
/// let path = std::env::temp_dir().join(format!("s1-{}.json", std::process::id()));
/// export.save(&path)?;
///
/// let other = Store::in_memory()?;
/// SessionExport::load(&path)?.import(&other)?;
/// assert_eq!(other.session("s1")?.unwrap().status, SessionStatus::Completed);
/// # std::fs::remove_file(&path)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionExport {
    /// Always `EXPORT_FORMAT`.
    pub format: String,
    /// The format version (`EXPORT_VERSION` when written by this crate).
    pub version: u32,
    /// The session.
    pub session: SessionRecord,
    /// Every signal, in index order from 0.
    pub signals: Vec<Signal>,
}

impl SessionExport {
    /// A session and its signals, as they are.
    pub fn new(session: SessionRecord, signals: Vec<Signal>) -> SessionExport {
        SessionExport {
            format: EXPORT_FORMAT.to_owned(),
            version: EXPORT_VERSION,
            session,
            signals,
        }
    }

    /// Read session `id` and its signals from `store`.
    pub fn from_store(store: &Store, id: &str) -> Result<SessionExport, SessionError> {
        let session = store.session(id)?.ok_or_else(|| SessionError::NotFound {
            id: id.to_owned(),
            store: store.path().to_owned(),
        })?;
        let signals = store.signals(id)?;
        Ok(SessionExport::new(session, signals))
    }

    /// Read a session file, checking its format, version and signal indices.
    pub fn load(path: impl AsRef<Path>) -> Result<SessionExport, SessionError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| SessionError::Io {
            path: path.to_owned(),
            source,
        })?;
        let bad = |message: String| SessionError::BadExport {
            path: path.to_owned(),
            message,
        };
        // Check the header first, so a file of another kind says so rather
        // than listing the fields it lacks.
        #[derive(Deserialize)]
        struct Header {
            format: Option<String>,
            version: Option<u32>,
        }
        let header: Header = serde_json::from_str(&text)
            .map_err(|e| bad(format!("not a JSON session export: {e}")))?;
        match header.format.as_deref() {
            Some(EXPORT_FORMAT) => {}
            other => {
                return Err(bad(format!(
                    "`format` is {}, expected \"{EXPORT_FORMAT}\" (write one with `cargo scaffold sessions export`)",
                    other.map_or("missing".to_owned(), |f| format!("\"{f}\""))
                )));
            }
        }
        match header.version {
            Some(v) if (1..=EXPORT_VERSION).contains(&v) => {}
            other => {
                return Err(bad(format!(
                    "`version` is {}, this scaffold reads versions 1 to {EXPORT_VERSION}",
                    other.map_or("missing".to_owned(), |v| v.to_string())
                )));
            }
        }
        let export: SessionExport =
            serde_json::from_str(&text).map_err(|e| bad(format!("invalid session export: {e}")))?;
        if let Some((position, signal)) = export
            .signals
            .iter()
            .enumerate()
            .find(|(i, s)| s.index != *i as u64)
        {
            return Err(bad(format!(
                "signal #{position} (`{}`) has index {}; indices must run 0, 1, 2, ... without gaps",
                signal.name, signal.index
            )));
        }
        Ok(export)
    }

    /// Write the session file (pretty JSON).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), SessionError> {
        let path = path.as_ref();
        let text = serde_json::to_string_pretty(self).map_err(|e| SessionError::BadExport {
            path: path.to_owned(),
            message: format!("cannot serialize the session: {e}"),
        })?;
        std::fs::write(path, text + "\n").map_err(|source| SessionError::Io {
            path: path.to_owned(),
            source,
        })
    }

    /// Recreate the session in `store` under its own id: lineage, input,
    /// initial state, tags, signals, and (unless it was still running) its
    /// status, error, output and final state. Refuses an id already stored.
    pub fn import(&self, store: &Store) -> Result<(), SessionError> {
        let meta = &self.session.meta;
        if store.session(&meta.id)?.is_some() {
            return Err(SessionError::SessionExists {
                id: meta.id.clone(),
                store: store.path().to_owned(),
            });
        }
        store.begin_session(meta)?;
        store.append(&meta.id, &self.signals)?;
        let record = &self.session;
        if record.status != SessionStatus::Running {
            let end = SessionEnd {
                status: record.status,
                error: record.error.clone(),
                ended_at_ms: record.ended_at_ms.unwrap_or_else(now_ms),
                duration_ms: record.duration_ms.unwrap_or(0),
                output: record.output.clone(),
                final_state: record.final_state.clone(),
            };
            store.finish_session(&meta.id, &end)?;
        }
        store.flush()?;
        Ok(())
    }
}
