//! What can go wrong in session operations.

use std::path::PathBuf;

use serde_json::Value;

use crate::store::StoreError;

/// Why a fork, score, replay, export or import could not be done.
///
/// Every message names the session (or file) and says what does exist.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The session is not in the store.
    #[error("session `{id}` is not in the store {store}")]
    NotFound {
        /// The session asked for.
        id: String,
        /// The store's path.
        store: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A fork point string that does not parse.
    #[error(
        "`{input}` is not a fork point ({reason}); expected phase:<name>:first, phase:<name>:last, phase:<name>:<n> (n from 1) or index:<n>"
    )]
    BadForkPoint {
        /// The string given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The phase of a fork point was never entered.
    #[error("phase `{phase}` was never entered in session {session} (phases entered: {entered})")]
    PhaseNeverEntered {
        /// The session.
        session: String,
        /// The phase asked for.
        phase: String,
        /// The phases the session did enter, in order of first entry.
        entered: String,
    },
    /// The phase was entered fewer times than the occurrence asked for.
    #[error(
        "`{phase}` was entered {count} time{plural} in session {session}; occurrence {occurrence} does not exist",
        plural = if *count == 1 { "" } else { "s" }
    )]
    NoSuchOccurrence {
        /// The session.
        session: String,
        /// The phase.
        phase: String,
        /// How often it was entered.
        count: usize,
        /// The occurrence asked for (from 1).
        occurrence: u32,
    },
    /// The signal index is past the end of the session.
    #[error(
        "index {index} is past the end of session {session}, which has {count} signals (indices 0..={last})",
        last = count.saturating_sub(1)
    )]
    IndexPastEnd {
        /// The session.
        session: String,
        /// The index asked for.
        index: u64,
        /// How many signals the session has.
        count: usize,
    },
    /// The predicate of a fork point holds at no signal.
    #[error(
        "the fork predicate `{description}` is true at none of the {count} signals of session {session}"
    )]
    PredicateNeverTrue {
        /// The session.
        session: String,
        /// The predicate's description.
        description: String,
        /// How many signals were tried.
        count: usize,
    },
    /// The session entered no phase, so there is no phase to continue at.
    #[error(
        "session {session} entered no phase (no `phase:entered` signal); there is no phase to continue at"
    )]
    NoPhase {
        /// The session.
        session: String,
    },
    /// The workflow forked into has no such phase.
    #[error(
        "the fork continues at phase `{phase}`, which is not a phase of workflow `{workflow}` (phases: {phases})"
    )]
    UnknownPhase {
        /// The phase.
        phase: String,
        /// The workflow.
        workflow: String,
        /// Its phases.
        phases: String,
    },
    /// A stored state does not deserialize into the workflow's state type.
    #[error("the {what} of session {session} does not deserialize into `{type_name}`: {message}")]
    State {
        /// The session.
        session: String,
        /// Which state (`state at signal 47`, `final state`).
        what: String,
        /// The state type.
        type_name: &'static str,
        /// serde's message.
        message: String,
    },
    /// A fork eval's case does not have the parent session's input.
    #[error(
        "case `{case}` has input {case_input}, but the parent session {session} ran on input {parent_input}; a fork continues the parent's run, so the case must have the parent's input"
    )]
    InputMismatch {
        /// The parent session.
        session: String,
        /// The case.
        case: String,
        /// The case's input.
        case_input: Value,
        /// The parent's input.
        parent_input: Value,
    },
    /// Forking from a stored session without a store.
    #[error("cannot fork from session `{session}`: there is no session store to read it from")]
    NoStore {
        /// The session.
        session: String,
    },
    /// Scoring a session that has not finished.
    #[error(
        "session {session} is still running (its signals may be incomplete); wait for it to finish or use ScoreOptions::allow_running"
    )]
    StillRunning {
        /// The session.
        session: String,
    },
    /// Replaying a session that called providers through recordings whose scope is unknown.
    #[error(
        "session {session} called providers through recordings, but its recording scope is unknown (no `dataset:` and `case:` tags, no recording ids); give it with ReplayOptions::scope"
    )]
    NoRecordingScope {
        /// The session.
        session: String,
    },
    /// Importing a session whose id is already stored.
    #[error("session {id} is already in the store {store}; delete it first to import it again")]
    SessionExists {
        /// The session.
        id: String,
        /// The store's path.
        store: String,
    },
    /// A session file could not be read or written.
    #[error("session file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A session file is not a valid export.
    #[error("session file {}: {message}", path.display())]
    BadExport {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// An environment variable has a value that cannot be used.
    #[error("{name}=`{value}`: {message}")]
    BadEnv {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// Why it cannot be used.
        message: String,
    },
}
