//! Recording and playback of provider HTTP calls.
//!
//! A [`ProviderRecorder`] wraps the [`Transport`] that providers send their
//! HTTP requests through. Its [`RecorderMode`] (from `SCAFFOLD_MODE`) decides
//! what happens:
//!
//! - **live**: requests go straight to the inner transport;
//! - **record**: requests go to the inner transport and each exchange is
//!   written to `{recordings_dir}/{recording_id}.json` (a `Cassette`),
//!   atomically and only when its bytes change; streamed (SSE) bodies are
//!   passed to the caller as they arrive and written when the stream ends.
//!   Under [`RecordPolicy::Missing`] (`SCAFFOLD_RECORD`, the default) a
//!   call whose recording still answers it is answered from that
//!   recording instead, and neither the API nor the file is touched. A
//!   fake server's [`SIMULATED_TIMING_HEADER`] is recorded in place of the
//!   measured time;
//! - **playback** (the default): requests are rewritten to a process-wide
//!   wiremock server whose single responder answers from the cassette of the
//!   call's recording id, so the same provider and HTTP code runs in CI
//!   without keys or cost. A request that differs from its recording, or a
//!   missing recording, fails with [`TransportError::Playback`] explaining
//!   what changed and the command to re-record.
//!
//! [Recorded tools](crate::workflow::Tool::recorded) are kept the same way
//! ([`ToolRecorder`], from [`ProviderRecorder::tools`]): their calls'
//! arguments and results, beside the provider recordings.
//!
//! Credentials are never written: credential headers (`Authorization`,
//! `x-api-key`, `api-key`, `openai-organization`, ...) are stored as
//! `[REDACTED]`, credential query parameters (`key=`, `api_key=`, ...) too,
//! their values and the user's [`RedactPattern`]s are scrubbed from every
//! stored string, requests and responses alike.
//!
//! Every call needs a recording id in [`CallContext::recording_id`] in
//! record and playback modes; the runtime sets it for eval cells.

mod cassette;
mod diff;
mod matching;
mod playback;
mod record;
pub(crate) mod redact;
mod tool;

pub(crate) use cassette::CASSETTE_VERSION;
pub use matching::{DEFAULT_IGNORED_FIELDS, MatchRules};
pub(crate) use playback::PLAYED_BACK_HEADER;
pub use playback::Playback;
pub use redact::RedactPattern;
pub(crate) use redact::{Scrubber, builtin_scrubber, secrets_of};
pub use tool::ToolRecorder;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use super::CallContext;
use super::RecordingId;
use super::http::ReqwestTransport;
use super::transport::{HttpRequest, Transport, TransportError};

/// The environment variable that selects the [`RecorderMode`].
pub const MODE_ENV: &str = "SCAFFOLD_MODE";

/// The environment variable that selects the [`RecordPolicy`] of record
/// mode.
pub const RECORD_ENV: &str = "SCAFFOLD_RECORD";

/// The response header in which a fake server (such as
/// [`FakeProvider`](crate::testing::FakeProvider) with simulated timing)
/// states the time to first byte and the duration it simulated
/// (`first-byte-ms=420; duration-ms=1830`). Record mode writes these in
/// the cassette in place of the measured ones, and counts them on the
/// run's clock, so a suite recorded from a fake server has realistic,
/// deterministic latencies without sleeping. Real APIs never send it.
pub const SIMULATED_TIMING_HEADER: &str = "x-scaffold-simulated-timing";

/// What the recorder does with provider calls.
///
/// ```
/// use scaffold::provider::recorder::RecorderMode;
/// assert_eq!("record".parse::<RecorderMode>().unwrap(), RecorderMode::Record);
/// assert_eq!(RecorderMode::default(), RecorderMode::Playback);
/// assert!("replay".parse::<RecorderMode>().unwrap_err().to_string().contains("live, record, playback"));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum RecorderMode {
    /// Call the real API; record nothing.
    Live,
    /// Call the real API and write each exchange to a cassette.
    Record,
    /// Answer every call from its cassette (the default).
    #[default]
    Playback,
}

impl RecorderMode {
    /// The mode named by `SCAFFOLD_MODE` (`live`, `record` or `playback`;
    /// unset or empty means `playback`). `SCAFFOLD_RECORD` is checked
    /// too (see [`RecordPolicy::from_env`]): a suite's setup reads the
    /// mode first, and a typo in either stops it at once.
    pub fn from_env() -> Result<RecorderMode, RecorderError> {
        RecordPolicy::from_env()?;
        match std::env::var(MODE_ENV) {
            Ok(value) => RecorderMode::from_env_value(&value),
            Err(std::env::VarError::NotPresent) => Ok(RecorderMode::Playback),
            Err(std::env::VarError::NotUnicode(raw)) => Err(RecorderError::BadMode {
                value: raw.to_string_lossy().into_owned(),
            }),
        }
    }

    /// The mode for a value of `SCAFFOLD_MODE`; empty means `playback`.
    pub fn from_env_value(value: &str) -> Result<RecorderMode, RecorderError> {
        if value.trim().is_empty() {
            Ok(RecorderMode::Playback)
        } else {
            value.parse()
        }
    }

    /// `live`, `record` or `playback`.
    pub fn as_str(self) -> &'static str {
        match self {
            RecorderMode::Live => "live",
            RecorderMode::Record => "record",
            RecorderMode::Playback => "playback",
        }
    }
}

impl fmt::Display for RecorderMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RecorderMode {
    type Err = RecorderError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "live" => Ok(RecorderMode::Live),
            "record" => Ok(RecorderMode::Record),
            "playback" => Ok(RecorderMode::Playback),
            _ => Err(RecorderError::BadMode {
                value: s.to_string(),
            }),
        }
    }
}

/// Which calls record mode records (`SCAFFOLD_RECORD`), like VCR's record
/// modes and Polly.js's `recordIfMissing`.
///
/// ```
/// use scaffold::provider::recorder::RecordPolicy;
/// assert_eq!(RecordPolicy::default(), RecordPolicy::Missing);
/// assert_eq!(RecordPolicy::from_env_value("all").unwrap(), RecordPolicy::All);
/// let e = RecordPolicy::from_env_value("everything").unwrap_err().to_string();
/// assert!(e.contains("SCAFFOLD_RECORD") && e.contains("missing, all"), "{e}");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum RecordPolicy {
    /// Call the API only for a call whose recording is missing, no longer
    /// answers its request (by the rules playback compares with) or
    /// recorded a failure; a call its recording answers is answered from
    /// it, with its recorded time, and its file is left alone (the
    /// default).
    #[default]
    Missing,
    /// Call the API for every call and write every recording whose bytes
    /// change.
    All,
}

impl RecordPolicy {
    /// The policy named by `SCAFFOLD_RECORD` (`missing` or `all`; unset or
    /// empty means `missing`).
    pub fn from_env() -> Result<RecordPolicy, RecorderError> {
        match std::env::var(RECORD_ENV) {
            Ok(value) => RecordPolicy::from_env_value(&value),
            Err(std::env::VarError::NotPresent) => Ok(RecordPolicy::Missing),
            Err(std::env::VarError::NotUnicode(raw)) => Err(RecorderError::BadRecordPolicy {
                value: raw.to_string_lossy().into_owned(),
            }),
        }
    }

    /// The policy for a value of `SCAFFOLD_RECORD`; empty means `missing`.
    pub fn from_env_value(value: &str) -> Result<RecordPolicy, RecorderError> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "missing" => Ok(RecordPolicy::Missing),
            "all" => Ok(RecordPolicy::All),
            _ => Err(RecorderError::BadRecordPolicy {
                value: value.to_string(),
            }),
        }
    }

    /// `missing` or `all`.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordPolicy::Missing => "missing",
            RecordPolicy::All => "all",
        }
    }
}

impl fmt::Display for RecordPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Errors of the recorder's setup and of cassette files.
#[derive(Debug, thiserror::Error)]
pub enum RecorderError {
    /// `SCAFFOLD_MODE` has a value that is not a mode.
    #[error(
        "{MODE_ENV}=`{value}` is not a recorder mode; allowed values: live, record, playback (unset means playback)"
    )]
    BadMode {
        /// The value found.
        value: String,
    },
    /// `SCAFFOLD_RECORD` has a value that is not a record policy.
    #[error(
        "{RECORD_ENV}=`{value}` is not a record policy; allowed values: missing, all (unset means missing)"
    )]
    BadRecordPolicy {
        /// The value found.
        value: String,
    },
    /// A redaction pattern is not a valid regular expression.
    #[error("redaction pattern `{pattern}` is not a valid regular expression: {source}")]
    BadPattern {
        /// The pattern.
        pattern: String,
        /// Why.
        #[source]
        source: regex::Error,
    },
    /// A cassette could not be read.
    #[error("cannot read recording {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A cassette is not valid JSON or not a cassette.
    #[error("recording {} is not a valid cassette: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A cassette has a version this crate does not read.
    #[error(
        "recording {} has format version {found}; this version of scaffold reads version {CASSETTE_VERSION}",
        path.display()
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// The version found (`null` when missing).
        found: serde_json::Value,
    },
    /// A cassette could not be written.
    #[error("cannot write recording {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The test filter that selects the eval cell of a recording:
/// `{variant}::{case}` (plus `::t{trial}`), a substring of the cell's test
/// name `{eval}::{variant}::{case}[::t{trial}]`. It may select a few more
/// cells (another eval with the same variant and case, a case whose id
/// starts with this one), never fewer.
///
/// ```
/// use scaffold::provider::RecordingId;
/// use scaffold::provider::recorder::rerecord_filter;
/// let id = RecordingId::new("reviews.v1", "sql-injection", "gpt-4o", "reviewer", 2);
/// assert_eq!(rerecord_filter(&id), "gpt-4o::sql-injection");
/// assert_eq!(rerecord_filter(&id.with_trial(Some(3))), "gpt-4o::sql-injection::t3");
/// ```
pub fn rerecord_filter(id: &RecordingId) -> String {
    match id.trial {
        Some(trial) => format!("{}::{}::t{trial}", id.variant, id.case),
        None => format!("{}::{}", id.variant, id.case),
    }
}

/// The exact command that records (again) the call with recording id `id`:
/// `SCAFFOLD_MODE=record cargo test --test evals -- {variant}::{case}`
/// (see [`rerecord_filter`]).
///
/// ```
/// use scaffold::provider::RecordingId;
/// use scaffold::provider::recorder::rerecord_command;
/// let id = RecordingId::new("reviews.v1", "sql-injection", "gpt-4o", "reviewer", 0);
/// assert_eq!(
///     rerecord_command(&id),
///     "SCAFFOLD_MODE=record cargo test --test evals -- gpt-4o::sql-injection"
/// );
/// ```
pub fn rerecord_command(id: &RecordingId) -> String {
    format!(
        "{MODE_ENV}=record cargo test --test evals -- {}",
        rerecord_filter(id)
    )
}

/// The command that re-records the call `id`: the suite's own `custom`
/// one (`{filter}` in it replaced by [`rerecord_filter`]), else
/// [`rerecord_command`].
pub(crate) fn rerecord_hint(custom: Option<&str>, id: &RecordingId) -> String {
    match custom {
        Some(command) => command.replace("{filter}", &rerecord_filter(id)),
        None => rerecord_command(id),
    }
}

/// The texts of playback failures; `rerecord` is the suite's own re-record
/// command, if it has one (see [`rerecord_hint`]).
pub(crate) mod messages {
    use std::path::Path;

    use super::rerecord_hint;
    use crate::provider::RecordingId;

    pub(crate) fn missing(id: &RecordingId, path: &Path, rerecord: Option<&str>) -> String {
        format!(
            "playback: no recording `{id}`\n  looked for: {}\n  record it with: {}",
            path.display(),
            rerecord_hint(rerecord, id)
        )
    }

    pub(crate) fn stale(
        id: &RecordingId,
        path: &Path,
        changes: &str,
        rerecord: Option<&str>,
    ) -> String {
        format!(
            "playback: the request differs from recording `{id}` ({}):\n{changes}  re-record it with: {}",
            path.display(),
            rerecord_hint(rerecord, id)
        )
    }

    pub(crate) fn unreadable(id: &RecordingId, why: &str, rerecord: Option<&str>) -> String {
        format!(
            "playback: recording `{id}` cannot be used: {why}\n  re-record it with: {}",
            rerecord_hint(rerecord, id)
        )
    }
}

/// The recording id of a call, checked: present, well-formed and file-name safe.
pub(crate) fn checked_recording_id(
    mode: RecorderMode,
    request: &HttpRequest,
    context: &CallContext,
) -> Result<RecordingId, TransportError> {
    let fail = |message: String| match mode {
        RecorderMode::Playback => TransportError::Playback(message),
        _ => TransportError::Other(message),
    };
    let (_, path, _) = split_url(&request.url);
    let Some(raw) = context.recording_id.as_deref() else {
        return Err(fail(format!(
            "{mode} mode needs a recording id for every provider call, and {} {path} has none \
             (CallContext.recording_id is None). Eval cells get one from the runtime; when calling \
             a provider directly, set CompletionRequest.context.recording_id \
             (scaffold::provider::RecordingId), or use {MODE_ENV}=live",
            request.method
        )));
    };
    let id: RecordingId = raw.parse().map_err(|e| fail(format!("{mode} mode: {e}")))?;
    let canonical = RecordingId::new(&id.dataset, &id.case, &id.variant, &id.node, id.invocation)
        .with_trial(id.trial);
    if canonical != id {
        return Err(fail(format!(
            "{mode} mode: recording id `{raw}` has characters that are not file-name safe; \
             make it with RecordingId::new (it would be `{canonical}`)"
        )));
    }
    Ok(id)
}

/// Split an absolute URL into (origin, path, query); the fragment is dropped.
pub(crate) fn split_url(url: &str) -> (&str, &str, Option<&str>) {
    let url = url.split_once('#').map_or(url, |(u, _)| u);
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let path_start = url[after_scheme..]
        .find(['/', '?'])
        .map_or(url.len(), |i| after_scheme + i);
    let origin = &url[..path_start];
    let rest = &url[path_start..];
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    (origin, if path.is_empty() { "/" } else { path }, query)
}

/// Records provider calls, or plays them back.
///
/// Build one per recordings folder, hand [`ProviderRecorder::transport`] to
/// the providers, and put each call's recording id in
/// [`CallContext::recording_id`].
///
/// ```
/// use scaffold::provider::openai::OpenAi;
/// use scaffold::provider::recorder::{ProviderRecorder, RecorderMode, RedactPattern};
///
/// # fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let recorder = ProviderRecorder::new("evals/recordings", RecorderMode::from_env()?)
///     .redact_pattern(RedactPattern::regex(r"acct-[0-9]{6}")?)
///     .redact_pattern(RedactPattern::literal("internal.example.com"));
/// let gpt = OpenAi::new("gpt-4o-mini").transport(recorder.transport());
/// // gpt.complete(&request, &mut ()) — with request.context.recording_id set
/// # let _ = gpt;
/// # Ok(()) }
/// # demo().unwrap();
/// ```
#[derive(Clone)]
pub struct ProviderRecorder {
    dir: PathBuf,
    mode: RecorderMode,
    policy: RecordPolicy,
    patterns: Vec<RedactPattern>,
    inner: Option<Arc<dyn Transport>>,
    rerecord: Option<String>,
    playback: Playback,
    rules: MatchRules,
    /// The redaction rules, compiled once (the built-in patterns and the
    /// user's).
    redactor: Arc<redact::Redactor>,
    /// What bridged calls are played back (and matched to their
    /// recordings) with, made on first use and shared by clones.
    bridged: Arc<std::sync::OnceLock<Arc<playback::PlaybackTransport>>>,
}

impl fmt::Debug for ProviderRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderRecorder")
            .field("dir", &self.dir)
            .field("mode", &self.mode)
            .field("policy", &self.policy)
            .field("patterns", &self.patterns.len())
            .field("inner", &self.inner.is_some())
            .field("rerecord", &self.rerecord)
            .finish()
    }
}

impl ProviderRecorder {
    /// A recorder for `recordings_dir` (made absolute against the current
    /// directory) in `mode`; record mode records what is missing or stale
    /// ([`RecordPolicy::Missing`]; see [`ProviderRecorder::record_policy`]).
    pub fn new(recordings_dir: impl Into<PathBuf>, mode: RecorderMode) -> ProviderRecorder {
        let dir: PathBuf = recordings_dir.into();
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        ProviderRecorder {
            dir,
            mode,
            policy: RecordPolicy::Missing,
            patterns: Vec::new(),
            inner: None,
            rerecord: None,
            playback: Playback::new(),
            rules: MatchRules::default(),
            redactor: Arc::new(redact::Redactor::new(Vec::new())),
            bridged: Arc::default(),
        }
    }

    /// A recorder for `recordings_dir` in the mode named by `SCAFFOLD_MODE`,
    /// recording what `SCAFFOLD_RECORD` says.
    pub fn from_env(recordings_dir: impl Into<PathBuf>) -> Result<ProviderRecorder, RecorderError> {
        Ok(
            ProviderRecorder::new(recordings_dir, RecorderMode::from_env()?)
                .record_policy(RecordPolicy::from_env()?),
        )
    }

    /// Which calls record mode records: under [`RecordPolicy::Missing`]
    /// (the default) only those whose recording is missing, stale or a
    /// recorded failure, the others answered from their recordings; under
    /// [`RecordPolicy::All`] every call. Either way a file is written only
    /// when its bytes change.
    pub fn record_policy(mut self, policy: RecordPolicy) -> ProviderRecorder {
        self.policy = policy;
        self.changed()
    }

    /// The record policy.
    pub fn policy(&self) -> RecordPolicy {
        self.policy
    }

    /// Also scrub matches of `pattern` from everything recorded.
    pub fn redact_pattern(mut self, pattern: impl Into<RedactPattern>) -> ProviderRecorder {
        self.patterns.push(pattern.into());
        self.redactor = Arc::new(redact::Redactor::new(self.patterns.clone()));
        self.changed()
    }

    /// This recorder after a change of its rules: what was made from the
    /// old ones is made again.
    fn changed(mut self) -> ProviderRecorder {
        self.bridged = Arc::default();
        self
    }

    /// The transport that does the real HTTP (live and record: to the API;
    /// playback: to the playback server). Default:
    /// [`ReqwestTransport::shared`]. Never give it a transport that sends
    /// through this recorder again.
    pub fn inner(mut self, transport: Arc<dyn Transport>) -> ProviderRecorder {
        self.inner = Some(transport);
        self.changed()
    }

    /// Name `command` as the way to re-record in playback failures, instead
    /// of [`rerecord_command`]; `{filter}` in it becomes the cell's
    /// [`rerecord_filter`].
    pub fn rerecord_command(mut self, command: impl Into<String>) -> ProviderRecorder {
        self.rerecord = Some(command.into());
        self.changed()
    }

    /// Play back on `shared`'s server, with its caches, instead of this
    /// recorder's own (the harness hands one to every eval of a run).
    pub fn playback(mut self, shared: Playback) -> ProviderRecorder {
        self.playback = shared;
        self.changed()
    }

    /// Which differences between a request and its recording playback
    /// forgives (default: [`MatchRules::default`]).
    pub fn match_requests(mut self, rules: MatchRules) -> ProviderRecorder {
        self.rules = rules;
        self.changed()
    }

    /// The mode.
    pub fn mode(&self) -> RecorderMode {
        self.mode
    }

    /// The recordings folder.
    pub fn recordings_dir(&self) -> &Path {
        &self.dir
    }

    /// Where the cassette of `id` lives.
    pub fn recording_path(&self, id: &RecordingId) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// The recorder of [recorded tools](crate::workflow::Tool::recorded):
    /// same folder, mode, redaction and re-record command.
    pub fn tools(&self) -> ToolRecorder {
        ToolRecorder {
            dir: self.dir.clone(),
            mode: self.mode,
            policy: self.policy,
            redactor: self.redactor.clone(),
            rerecord: self.rerecord.clone(),
        }
    }

    /// The transport to hand to providers.
    pub fn transport(&self) -> Arc<dyn Transport> {
        let inner: Arc<dyn Transport> = self.inner.clone().unwrap_or_else(ReqwestTransport::shared);
        let redactor = self.redactor.clone();
        match self.mode {
            RecorderMode::Live => inner,
            RecorderMode::Record => Arc::new(record::RecordingTransport::new(
                inner,
                self.dir.clone(),
                redactor,
                self.replays().then(|| self.bridged_playback().clone()),
            )),
            RecorderMode::Playback => Arc::new(self.playback_transport(inner, redactor)),
        }
    }

    fn playback_transport(
        &self,
        inner: Arc<dyn Transport>,
        redactor: Arc<redact::Redactor>,
    ) -> playback::PlaybackTransport {
        playback::PlaybackTransport::new(
            inner,
            self.playback.clone(),
            &self.dir,
            redactor,
            self.rerecord.as_deref(),
            &self.rules,
        )
    }

    /// Whether calls are answered from the recordings that answer them:
    /// in playback, and in record mode under [`RecordPolicy::Missing`].
    pub(crate) fn replays(&self) -> bool {
        match self.mode {
            RecorderMode::Playback => true,
            RecorderMode::Record => self.policy == RecordPolicy::Missing,
            RecorderMode::Live => false,
        }
    }

    /// Where calls are answered from recordings ([`Self::replays`]),
    /// whether the recording `id` answers `request` under the recorder's
    /// rules (`None`: there is no such recording); `None` otherwise.
    pub(crate) fn recording_answers(
        &self,
        id: &RecordingId,
        request: &HttpRequest,
    ) -> Result<Option<playback::Recorded>, String> {
        if !self.replays() {
            return Ok(None);
        }
        self.bridged_playback().answers(id, request)
    }

    /// The playback transport that answers from the cassettes itself:
    /// bridged calls' in playback (the agent's own client has spoken HTTP
    /// to its bridge already), and in record mode the calls whose
    /// recordings answer them (their recorded time counted on the run's
    /// real clock).
    fn bridged_playback(&self) -> &Arc<playback::PlaybackTransport> {
        self.bridged.get_or_init(|| {
            let inner = self.inner.clone().unwrap_or_else(ReqwestTransport::shared);
            let here = self
                .playback_transport(inner, self.redactor.clone())
                .answering_here();
            Arc::new(match self.mode {
                RecorderMode::Record => here.counting_on_real_clocks(),
                _ => here,
            })
        })
    }

    /// The transport an agent bridge sends its calls on with: in playback,
    /// one that answers from the cassettes without the playback server
    /// (the same comparison, diff, attempts and virtual time); otherwise
    /// [`ProviderRecorder::transport`].
    pub(crate) fn bridge_transport(&self) -> Arc<dyn Transport> {
        match self.mode {
            RecorderMode::Playback => self.bridged_playback().clone(),
            _ => self.transport(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split() {
        assert_eq!(
            split_url("https://api.x.com/v1/chat?key=1#f"),
            ("https://api.x.com", "/v1/chat", Some("key=1"))
        );
        assert_eq!(
            split_url("http://127.0.0.1:8080"),
            ("http://127.0.0.1:8080", "/", None)
        );
        assert_eq!(split_url("http://h?x=1"), ("http://h", "/", Some("x=1")));
    }

    #[test]
    fn modes_parse() {
        assert_eq!(
            RecorderMode::from_env_value(" Live ").unwrap(),
            RecorderMode::Live
        );
        assert_eq!(
            RecorderMode::from_env_value("").unwrap(),
            RecorderMode::Playback
        );
        let e = RecorderMode::from_env_value("recrod")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("SCAFFOLD_MODE")
                && e.contains("recrod")
                && e.contains("live, record, playback"),
            "{e}"
        );
    }

    #[test]
    fn record_policies_parse_and_an_unknown_one_is_a_one_line_error() {
        assert_eq!(
            RecordPolicy::from_env_value("").unwrap(),
            RecordPolicy::Missing
        );
        assert_eq!(
            RecordPolicy::from_env_value(" ALL ").unwrap(),
            RecordPolicy::All
        );
        let e = RecordPolicy::from_env_value("new_episodes")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "SCAFFOLD_RECORD=`new_episodes` is not a record policy; allowed values: missing, all (unset means missing)"
        );
        // Read with the mode, at a suite's setup: in a child process
        // (setting the variable here would race with other tests).
        let exe = std::env::current_exe().unwrap();
        for (value, expect) in [
            (
                "everything",
                "error=SCAFFOLD_RECORD=`everything` is not a record policy",
            ),
            ("all", "mode=record policy=all"),
        ] {
            let out = std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "provider::recorder::tests::record_policy_from_env_child",
                    "--nocapture",
                ])
                .env(MODE_ENV, "record")
                .env(RECORD_ENV, value)
                .env("SCAFFOLD_RECORD_CHILD", "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains(expect), "{text}");
        }
    }

    /// Runs only as the child of the test above.
    #[test]
    fn record_policy_from_env_child() {
        if std::env::var("SCAFFOLD_RECORD_CHILD").is_err() {
            return;
        }
        match RecorderMode::from_env().and_then(|mode| Ok((mode, RecordPolicy::from_env()?))) {
            Ok((mode, policy)) => println!("mode={mode} policy={policy}"),
            Err(e) => println!("error={e}"),
        }
    }

    #[test]
    fn unsafe_ids_are_refused() {
        let request = HttpRequest {
            method: "POST".into(),
            url: "http://h/v1".into(),
            headers: vec![],
            body: None,
        };
        let ctx = CallContext {
            recording_id: Some("eval__a/../b__c__d__e__inv0".into()),
            ..CallContext::default()
        };
        let e = checked_recording_id(RecorderMode::Record, &request, &ctx).unwrap_err();
        assert!(e.to_string().contains("file-name safe"), "{e}");
        let none = CallContext::default();
        let e = checked_recording_id(RecorderMode::Playback, &request, &none).unwrap_err();
        assert!(matches!(e, TransportError::Playback(_)));
        assert!(e.to_string().contains("recording id"), "{e}");
    }
}
