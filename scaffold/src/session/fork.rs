//! Fork: continue a session from a point with a (possibly different) workflow.

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::{ForkPoint, ResolvedFork, SessionError, SessionExport};
use crate::signal::Signal;
use crate::store::{SessionRecord, Store};
use crate::workflow::{Resume, RunOptions, RunResult, State, Workflow, run_from};

/// The session a fork starts from: one in a store, or an exported file
/// (which needs no store, and outlives the store it came from).
#[derive(Debug, Clone)]
pub struct ForkSource(Origin);

#[derive(Debug, Clone)]
enum Origin {
    Stored { store: Store, id: String },
    Export(Arc<SessionExport>),
}

impl ForkSource {
    /// Session `id` of `store`. The child is stored there too, unless the
    /// fork's [`RunOptions`] name another store.
    pub fn stored(store: &Store, id: impl Into<String>) -> ForkSource {
        ForkSource(Origin::Stored {
            store: store.clone(),
            id: id.into(),
        })
    }

    /// An exported session.
    pub fn export(export: SessionExport) -> ForkSource {
        ForkSource(Origin::Export(Arc::new(export)))
    }

    /// An exported session file (see [`SessionExport::load`]).
    pub fn file(path: impl AsRef<Path>) -> Result<ForkSource, SessionError> {
        SessionExport::load(path).map(ForkSource::export)
    }

    /// The parent session's id.
    pub fn session_id(&self) -> &str {
        match &self.0 {
            Origin::Stored { id, .. } => id,
            Origin::Export(export) => &export.session.meta.id,
        }
    }

    /// The parent's record and signals.
    fn load(&self) -> Result<(Cow<'_, SessionRecord>, Cow<'_, [Signal]>), SessionError> {
        match &self.0 {
            Origin::Stored { store, id } => {
                let record = store.session(id)?.ok_or_else(|| SessionError::NotFound {
                    id: id.clone(),
                    store: store.path().to_owned(),
                })?;
                let signals = store.signals(id)?;
                Ok((Cow::Owned(record), Cow::Owned(signals)))
            }
            Origin::Export(export) => Ok((
                Cow::Borrowed(&export.session),
                Cow::Borrowed(export.signals.as_slice()),
            )),
        }
    }

    /// Resolve `at` in the parent: what a fork from there starts with.
    pub fn resolve(&self, at: &ForkPoint) -> Result<ParentPoint, SessionError> {
        let (record, signals) = self.load()?;
        let resolved = at.resolve(&record.meta.id, &record.meta.initial_state, &signals)?;
        Ok(ParentPoint {
            parent_id: record.meta.id.clone(),
            input: record.meta.input.clone(),
            store: match &self.0 {
                Origin::Stored { store, .. } => Some(store.clone()),
                Origin::Export(_) => None,
            },
            resolved,
        })
    }
}

/// A fork point resolved in its parent session: everything a fork needs
/// from the parent, so several forks from one point read it once.
#[derive(Debug, Clone)]
pub struct ParentPoint {
    /// The parent session's id.
    pub parent_id: String,
    /// The parent's input.
    pub input: Value,
    /// The point: signal index, phase, state, the fork point JSON.
    pub resolved: ResolvedFork,
    store: Option<Store>,
}

/// How to fork: the input (default: the parent's) and the run options of
/// the child (store, variant, tags, recording scope, timeout, pricing).
///
/// ```
/// use scaffold::prelude::*;
/// use scaffold::session::ForkOptions;
/// let options = ForkOptions::new().run(RunOptions::new().variant("opus-coder").tag("fork"));
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Default)]
pub struct ForkOptions {
    run: RunOptions,
    input: Option<Value>,
}

impl ForkOptions {
    /// The parent's input, the parent's store (for a stored parent), no variant.
    pub fn new() -> Self {
        Self::default()
    }

    /// Run the child with `input` instead of the parent's.
    pub fn input(mut self, input: Value) -> Self {
        self.input = Some(input);
        self
    }

    /// Run the child with these options (its lineage is set by the fork).
    pub fn run(mut self, options: RunOptions) -> Self {
        self.run = options;
        self
    }
}

impl From<RunOptions> for ForkOptions {
    fn from(run: RunOptions) -> Self {
        ForkOptions::new().run(run)
    }
}

/// Continue the session `source` from `at` with `workflow` (a variant, say).
///
/// The child is a new session (a fresh id unless the options give one) with
/// `parent_id` = the parent, `fork_point` = [`ResolvedFork::fork_point`], and
/// as initial state the parent's state at that point. Its own signals start
/// at index 0 with `harness:start` (whose payload carries
/// `forkedFrom: {sessionId, forkPoint}`), followed by `phase:entered` of the
/// fork phase: the workflow's `start` hook does not run, and phase
/// occurrences count from that entry. It is self-contained: deleting the
/// parent leaves it whole. The input is the parent's unless
/// [`ForkOptions::input`] overrides it.
///
/// Errors (before anything runs): the parent is not found, the point does not
/// resolve, the workflow has no such phase, or the state does not
/// deserialize into `S`. A run that fails is a `RunResult` with its error,
/// as for [`run_with`](crate::workflow::run_with).
pub async fn fork<S: State>(
    source: &ForkSource,
    at: &ForkPoint,
    workflow: &Workflow<S>,
    options: &ForkOptions,
) -> Result<RunResult<S>, SessionError> {
    let parent = source.resolve(at)?;
    fork_at(&parent, workflow, options).await
}

/// [`fork`] from a point already resolved with [`ForkSource::resolve`].
pub async fn fork_at<S: State>(
    parent: &ParentPoint,
    workflow: &Workflow<S>,
    options: &ForkOptions,
) -> Result<RunResult<S>, SessionError> {
    let resume = resume_in(
        workflow,
        &parent.parent_id,
        &parent.resolved.phase,
        &parent.resolved.state,
        &format!("state at signal {}", parent.resolved.event_index),
    )?;
    let mut run = options
        .run
        .clone()
        .parent(parent.parent_id.clone(), parent.resolved.fork_point.clone());
    if run.store.is_none()
        && let Some(store) = &parent.store
    {
        run = run.store(store.clone());
    }
    let input = options
        .input
        .clone()
        .unwrap_or_else(|| parent.input.clone());
    Ok(run_from(workflow, input, &run, Some(resume)).await)
}

/// Entering `phase` of `workflow` with `state` (from `session`), checked.
pub(crate) fn resume_in<S: State>(
    workflow: &Workflow<S>,
    session: &str,
    phase: &str,
    state: &Value,
    what: &str,
) -> Result<Resume<S>, SessionError> {
    if !workflow.phase_names().any(|p| p == phase) {
        return Err(SessionError::UnknownPhase {
            phase: phase.to_owned(),
            workflow: workflow.name().to_owned(),
            phases: workflow.phase_names().collect::<Vec<_>>().join(", "),
        });
    }
    let state = S::deserialize(state).map_err(|e| SessionError::State {
        session: session.to_owned(),
        what: what.to_owned(),
        type_name: std::any::type_name::<S>(),
        message: e.to_string(),
    })?;
    Ok(Resume {
        phase: phase.to_owned(),
        state,
    })
}

/// Session `id` and its ancestors, nearest first: `[id, parent,
/// grandparent, ...]`. The chain stops at a parent no longer stored (the
/// last record's `parent_id` then names it).
pub fn lineage(store: &Store, id: &str) -> Result<Vec<SessionRecord>, SessionError> {
    let first = store.session(id)?.ok_or_else(|| SessionError::NotFound {
        id: id.to_owned(),
        store: store.path().to_owned(),
    })?;
    let mut seen = HashSet::from([first.meta.id.clone()]);
    let mut chain = vec![first];
    while let Some(parent) = chain.last().and_then(|r| r.meta.parent_id.clone()) {
        if !seen.insert(parent.clone()) {
            break; // A cycle (only possible in hand-made data).
        }
        match store.session(&parent)? {
            Some(record) => chain.push(record),
            None => break,
        }
    }
    Ok(chain)
}

/// The environment variable naming the session (id, or `.json` export file)
/// that an eval's cells fork from.
pub const FORK_FROM_ENV: &str = "SCAFFOLD_FORK_FROM";
/// The environment variable with the fork point (see [`ForkPoint`]'s `FromStr`).
pub const FORK_AT_ENV: &str = "SCAFFOLD_FORK_AT";

/// Where an eval forks from: a session and a point in it.
///
/// ```
/// use scaffold::session::{ForkFrom, ForkPoint};
/// let from = ForkFrom::session("abc-123").at(ForkPoint::phase("coding").first());
/// let file = ForkFrom::file("evals/sessions/base.json").at(ForkPoint::index(47));
/// # let _ = (from, file);
/// ```
#[derive(Debug, Clone)]
pub struct ForkFrom {
    origin: ForkOrigin,
    at: ForkPoint,
    base_dir: Option<PathBuf>,
}

/// The session of a [`ForkFrom`], before its point is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForkOrigin {
    /// A session of the eval's store, by id.
    Session(String),
    /// An exported session file.
    File(PathBuf),
}

impl ForkOrigin {
    /// Fork at `point`.
    pub fn at(self, point: ForkPoint) -> ForkFrom {
        ForkFrom {
            origin: self,
            at: point,
            base_dir: None,
        }
    }
}

impl std::fmt::Display for ForkOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForkOrigin::Session(id) => write!(f, "session {id}"),
            ForkOrigin::File(path) => write!(f, "session file {}", path.display()),
        }
    }
}

impl ForkFrom {
    /// A session of the eval's store.
    pub fn session(id: impl Into<String>) -> ForkOrigin {
        ForkOrigin::Session(id.into())
    }

    /// An exported session file. A relative path is taken from
    /// [`ForkFrom::base_dir`] if set, else from the working directory (the
    /// package directory under `cargo test` and cargo-nextest).
    pub fn file(path: impl Into<PathBuf>) -> ForkOrigin {
        ForkOrigin::File(path.into())
    }

    /// Take a relative file path from `dir`.
    pub fn base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }

    /// The session.
    pub fn origin(&self) -> &ForkOrigin {
        &self.origin
    }

    /// The point.
    pub fn point(&self) -> &ForkPoint {
        &self.at
    }

    /// From `SCAFFOLD_FORK_FROM` and `SCAFFOLD_FORK_AT`; `None` when neither is set.
    pub fn from_env() -> Result<Option<ForkFrom>, SessionError> {
        let var = |name: &'static str| match std::env::var(name) {
            Ok(v) => Ok(Some(v)),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(raw)) => Err(SessionError::BadEnv {
                name,
                value: raw.to_string_lossy().into_owned(),
                message: "not valid UTF-8".into(),
            }),
        };
        ForkFrom::from_env_values(var(FORK_FROM_ENV)?.as_deref(), var(FORK_AT_ENV)?.as_deref())
    }

    /// [`ForkFrom::from_env`] for given values: `from` is a session id, or
    /// a path ending in `.json` for an export file; `at` a fork point string.
    /// Both or neither must be given (empty counts as not given).
    pub fn from_env_values(
        from: Option<&str>,
        at: Option<&str>,
    ) -> Result<Option<ForkFrom>, SessionError> {
        let from = from.map(str::trim).filter(|v| !v.is_empty());
        let at = at.map(str::trim).filter(|v| !v.is_empty());
        match (from, at) {
            (None, None) => Ok(None),
            (Some(from), None) => Err(SessionError::BadEnv {
                name: FORK_FROM_ENV,
                value: from.to_owned(),
                message: format!(
                    "{FORK_AT_ENV} must say where to fork (phase:<name>:first|last|<n> or index:<n>)"
                ),
            }),
            (None, Some(at)) => Err(SessionError::BadEnv {
                name: FORK_AT_ENV,
                value: at.to_owned(),
                message: format!(
                    "{FORK_FROM_ENV} must name the session (an id, or a .json export file)"
                ),
            }),
            (Some(from), Some(at)) => {
                let point: ForkPoint = at.parse()?;
                let origin = if from.ends_with(".json") {
                    ForkFrom::file(from)
                } else {
                    ForkFrom::session(from)
                };
                Ok(Some(origin.at(point)))
            }
        }
    }

    /// The source to fork from; a session origin reads `store`.
    pub(crate) fn source(&self, store: Option<&Store>) -> Result<ForkSource, SessionError> {
        match &self.origin {
            ForkOrigin::Session(id) => match store {
                Some(store) => Ok(ForkSource::stored(store, id.clone())),
                None => Err(SessionError::NoStore {
                    session: id.clone(),
                }),
            },
            ForkOrigin::File(path) => {
                let path = match &self.base_dir {
                    Some(dir) if path.is_relative() => dir.join(path),
                    _ => path.clone(),
                };
                ForkSource::file(path)
            }
        }
    }
}
