//! Where judge verdicts persist: a table in the session database, behind
//! an in-memory layer.
//!
//! The table is `judge_cache`, created with `CREATE TABLE IF NOT EXISTS` in
//! the store's SQLite file through a connection of its own (the store's
//! migrations do not know it; the store's writer and this connection
//! serialize through SQLite's locking and a busy timeout). Keys are
//! [`JudgeCacheKey`]s: SHA-256 over model, rubric, criteria and output.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::ScorerError;
use crate::assert::{InMemoryJudgeCache, JudgeCache, JudgeCacheKey, JudgeVerdict};
use crate::store::Store;

const CREATE: &str = "CREATE TABLE IF NOT EXISTS judge_cache (
    key        TEXT PRIMARY KEY NOT NULL,
    model      TEXT NOT NULL,
    score      REAL NOT NULL,
    reasoning  TEXT NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID";

/// A [`JudgeCache`] in a SQLite file (by default the session store's).
///
/// ```
/// use scaffold::assert::{JudgeCache, JudgeCacheKey, JudgeVerdict};
/// use scaffold::scorer::SqliteJudgeCache;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = std::env::temp_dir().join(format!("judge-cache-doc-{}", std::process::id()));
/// let path = dir.join("scaffold.db");
/// let key = JudgeCacheKey::new("judge-model", None, &["is polite".into()], "Thank you!");
/// let verdict = JudgeVerdict { score: 0.9, reasoning: "polite".into(), model: "judge-model".into() };
/// SqliteJudgeCache::open(&path)?.set(&key, &verdict);
/// // Another process, later:
/// assert_eq!(SqliteJudgeCache::open(&path)?.get(&key), Some(verdict));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct SqliteJudgeCache {
    path: PathBuf,
    conn: Mutex<Connection>,
    warned: AtomicBool,
}

impl SqliteJudgeCache {
    /// Open (or create) the cache table in the database at `path` (parent
    /// directories are created).
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteJudgeCache, ScorerError> {
        let path = path.as_ref().to_path_buf();
        let err = |what: &str| {
            let path = path.clone();
            let what = what.to_string();
            move |source| ScorerError::Cache { path, what, source }
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // A missing directory surfaces as SQLite's "unable to open" below.
            let _ = std::fs::create_dir_all(dir);
        }
        let conn = Connection::open(&path).map_err(err("opening the database"))?;
        conn.busy_timeout(Duration::from_secs(5))
            .map_err(err("setting the busy timeout"))?;
        conn.execute_batch(CREATE)
            .map_err(err("creating the judge_cache table"))?;
        Ok(SqliteJudgeCache {
            path,
            conn: Mutex::new(conn),
            warned: AtomicBool::new(false),
        })
    }

    /// The cache in `store`'s database file; `None` for an in-memory store
    /// (its database cannot be opened twice).
    pub fn for_store(store: &Store) -> Result<Option<SqliteJudgeCache>, ScorerError> {
        let path = store.path();
        if path.starts_with(":memory:") {
            return Ok(None);
        }
        SqliteJudgeCache::open(path).map(Some)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many verdicts are stored.
    pub fn len(&self) -> usize {
        self.conn
            .lock()
            .ok()
            .and_then(|c| {
                c.query_row("SELECT count(*) FROM judge_cache", [], |r| {
                    r.get::<_, i64>(0)
                })
                .ok()
            })
            .map_or(0, |n| usize::try_from(n).unwrap_or(0))
    }

    /// Whether none are stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Report a failure once: the cache is an optimization, a failing one
    /// must not fail the scorer.
    fn warn(&self, what: &str, e: &rusqlite::Error) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            eprintln!(
                "scaffold: judge cache {}: {what}: {e} (judging without the persistent cache)",
                self.path.display()
            );
        }
    }
}

impl JudgeCache for SqliteJudgeCache {
    fn get(&self, key: &JudgeCacheKey) -> Option<JudgeVerdict> {
        let conn = self.conn.lock().ok()?;
        let row = conn
            .query_row(
                "SELECT model, score, reasoning FROM judge_cache WHERE key = ?1",
                [&key.0],
                |r| {
                    Ok(JudgeVerdict {
                        model: r.get(0)?,
                        score: r.get(1)?,
                        reasoning: r.get(2)?,
                    })
                },
            )
            .optional();
        match row {
            Ok(v) => v,
            Err(e) => {
                self.warn("reading", &e);
                None
            }
        }
    }

    fn set(&self, key: &JudgeCacheKey, verdict: &JudgeVerdict) {
        let Ok(conn) = self.conn.lock() else { return };
        let now = i64::try_from(crate::store::now_ms()).unwrap_or(i64::MAX);
        let written = conn.execute(
            "INSERT OR REPLACE INTO judge_cache (key, model, score, reasoning, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![key.0, verdict.model, verdict.score, verdict.reasoning, now],
        );
        if let Err(e) = written {
            self.warn("writing", &e);
        }
    }
}

/// An in-memory layer over an optional persistent cache: reads try memory,
/// then the persistent layer (filling memory); writes go to both.
///
/// With `read` off, both layers are written but never read: the judge
/// scorer does that when recording (`SCAFFOLD_MODE=record`), so every judge
/// call is made and recorded, and playback finds a recording for every cell
/// whatever order (or process) the cells run in.
#[derive(Clone)]
pub struct LayeredJudgeCache {
    memory: Arc<InMemoryJudgeCache>,
    persistent: Option<Arc<dyn JudgeCache>>,
    read: bool,
}

impl std::fmt::Debug for LayeredJudgeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LayeredJudgeCache")
            .field("memory", &self.memory.len())
            .field("persistent", &self.persistent.is_some())
            .field("read", &self.read)
            .finish()
    }
}

impl LayeredJudgeCache {
    /// `memory` over `persistent`.
    pub fn new(
        memory: Arc<InMemoryJudgeCache>,
        persistent: Option<Arc<dyn JudgeCache>>,
        read: bool,
    ) -> Self {
        LayeredJudgeCache {
            memory,
            persistent,
            read,
        }
    }
}

impl JudgeCache for LayeredJudgeCache {
    fn get(&self, key: &JudgeCacheKey) -> Option<JudgeVerdict> {
        if !self.read {
            return None;
        }
        if let Some(v) = self.memory.get(key) {
            return Some(v);
        }
        let v = self.persistent.as_ref()?.get(key)?;
        self.memory.set(key, &v);
        Some(v)
    }

    fn set(&self, key: &JudgeCacheKey, verdict: &JudgeVerdict) {
        self.memory.set(key, verdict);
        if let Some(p) = &self.persistent {
            p.set(key, verdict);
        }
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn the_layered_cache_reads_the_persistent_layer_only_when_told_to() {
        use crate::assert::{InMemoryJudgeCache, JudgeCache, JudgeCacheKey, JudgeVerdict};
        use crate::scorer::judge_cache::LayeredJudgeCache;
        use std::sync::Arc;
        let persistent = Arc::new(InMemoryJudgeCache::new());
        let key = JudgeCacheKey::new("m", None, &[], "out");
        let v = JudgeVerdict {
            score: 1.0,
            reasoning: "ok".into(),
            model: "m".into(),
        };
        persistent.set(&key, &v);
        let layered = LayeredJudgeCache::new(
            Arc::new(InMemoryJudgeCache::new()),
            Some(persistent.clone()),
            true,
        );
        assert_eq!(layered.get(&key), Some(v.clone()));
        let recording =
            LayeredJudgeCache::new(Arc::new(InMemoryJudgeCache::new()), Some(persistent), false);
        assert_eq!(recording.get(&key), None);
    }
}
