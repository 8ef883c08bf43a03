//! Why a scorer's setup failed.

use std::path::PathBuf;

/// Why a scorer resource (the judge cache) could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ScorerError {
    /// The judge cache database could not be opened or prepared.
    #[error("judge cache {path}: {what}: {source}")]
    Cache {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        what: String,
        /// The SQLite error.
        #[source]
        source: rusqlite::Error,
    },
}
