//! Playback mode: one wiremock server per [`Playback`] (the harness makes
//! one per run) answers every recorded call from its cassette, found by key.
//!
//! The server is started lazily by the first playback request and lives as
//! long as its `Playback`: wiremock serves it from a thread of its own, so
//! test harness runtimes may come and go. The recorder scopes, the staged
//! cassettes and the cassette cache belong to the `Playback` too, so two
//! runs in one process see nothing of each other. Every `REQUESTS_PER_RESET` requests it
//! is reset and its responder mounted again, because wiremock keeps a copy
//! of every request a mock matched until then; a gate keeps requests from
//! reaching it between the reset and the new mount.
//!
//! A server has ONE mock, whose responder finds the cassette by key, compares the
//! request that came over the wire with the recorded one and answers with
//! the recorded status, headers and body. Request recording of the server
//! is off and servers are replaced, so memory does not grow with the number
//! of calls.
//!
//! The server runs on one thread, so work done there limits throughput.
//! The playback transport therefore reads and parses the cassette on the
//! caller's side (in parallel across cells; a missing or unreadable
//! recording fails there without any HTTP) and stages the parsed cassette
//! under a token sent in a header; the responder takes it by token (O(1)),
//! compares and answers. A request without a token (another client) is
//! served from disk by recording id. Parsed cassettes are also cached
//! (bounded, keyed by path, mtime and length) for repeated replays.

use std::collections::{HashMap, VecDeque};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use futures_util::StreamExt;
use serde_json::Value;
use serde_json::value::RawValue;
use wiremock::http::{HeaderName, HeaderValue};
use wiremock::{Mock, MockServer, Respond, ResponseTemplate};

use super::cassette::{
    Cassette, RawCassette, RecordedRequest, RecordedResponse, Timing, compact_json,
};
use super::diff::{Change, render_changes};
use super::matching::MatchRules;
use super::redact::Redactor;
use super::{RecorderError, RecorderMode, checked_recording_id, messages, split_url};
use crate::clock::Clock;
use crate::provider::CallContext;
use crate::provider::RecordingId;
use crate::provider::transport::{
    ByteStream, HttpBody, HttpRequest, HttpResponse, Transport, TransportError,
};

/// The header carrying the recording id to the playback server.
pub const RECORDING_ID_HEADER: &str = "x-scaffold-recording-id";
/// Marks an answer that came from a recording (for the HTTP client: its
/// retry waits are recorded, never slept).
pub(crate) const PLAYED_BACK_HEADER: &str = "x-scaffold-played-back";
/// The header carrying the recorder scope (recordings folder and redaction rules).
const SCOPE_HEADER: &str = "x-scaffold-recorder";
/// The header carrying the token of the staged cassette.
const TOKEN_HEADER: &str = "x-scaffold-playback-token";
/// Marks the playback server's own error answers.
const ERROR_HEADER: &str = "x-scaffold-playback-error";
/// The status of the playback server's own error answers.
const ERROR_STATUS: u16 = 599;
/// Parsed cassettes kept in memory at most. A run replays each cassette
/// once per trial, and the trials of a cell run one after the other, so a
/// few suffice; 256 held 2–3 MiB more at 2,000 cells for no hit.
const CACHE_CAPACITY: usize = 32;

/// Requests the playback server answers between two resets.
///
/// wiremock keeps a copy of every request a mock matched (its headers hold
/// on to the connection's read buffer, several KiB each), whether or not
/// request recording is on, and frees them only on `reset`. Resetting the
/// one server every so many requests keeps that memory bounded, in the one
/// allocator arena of the server's thread, however many cells a run has;
/// replacing the server instead (a new thread, a new port, a new arena each
/// time) left each arena it passed through holding pages.
const REQUESTS_PER_RESET: u64 = if cfg!(test) { 4 } else { 128 };

/// The playback server of a [`Playback`].
pub(crate) struct PlaybackServer {
    uri: String,
    server: MockServer,
    /// Requests sent to it; every [`REQUESTS_PER_RESET`]th resets it first.
    sent: AtomicU64,
    /// How many times it was reset.
    resets: AtomicU64,
    /// Held for reading by every exchange with the server, for writing by
    /// a reset: no request reaches the server while it has no responder,
    /// and a reset waits for the exchanges in flight.
    gate: tokio::sync::RwLock<()>,
    /// What the responder answers from.
    book: Arc<Book>,
}

/// Playback's server and what it answers from: the recorder scopes, the
/// staged cassettes and the parsed-cassette cache.
///
/// The eval harness makes one per run and hands it to every eval's
/// [`ProviderRecorder`](super::ProviderRecorder) with
/// [`ProviderRecorder::playback`](super::ProviderRecorder::playback); a
/// recorder given none makes its own. Clones share the server (started by
/// the first playback request) and the caches; the server stops when the
/// last clone is dropped.
///
/// ```
/// use scaffold::provider::recorder::{Playback, ProviderRecorder, RecorderMode};
///
/// let playback = Playback::new();
/// let a = ProviderRecorder::new("evals/a", RecorderMode::Playback).playback(playback.clone());
/// let b = ProviderRecorder::new("evals/b", RecorderMode::Playback).playback(playback);
/// # let _ = (a.transport(), b.transport());
/// ```
#[derive(Clone, Default)]
pub struct Playback {
    inner: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    server: tokio::sync::OnceCell<PlaybackServer>,
    book: Arc<Book>,
}

/// What a playback server answers from. The responder holds it, not the
/// [`Playback`] (which holds the server): no cycle.
#[derive(Default)]
struct Book {
    scopes: RwLock<Vec<Arc<Scope>>>,
    cache: Mutex<Cache>,
    /// Cassettes staged by the transport for the responder, by token.
    staged: Mutex<HashMap<u64, StagedAnswer>>,
    next_token: AtomicU64,
}

impl std::fmt::Debug for Playback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Playback")
            .field("started", &self.inner.server.initialized())
            .finish_non_exhaustive()
    }
}

impl Playback {
    /// A playback with no server yet and empty caches.
    pub fn new() -> Playback {
        Playback::default()
    }

    /// Let go of what playback holds between requests, once no more will
    /// come: the requests the server's mock kept since its last reset (their
    /// headers pin the connections' read buffers) and the parsed cassettes.
    /// The server stays up and answers as before if asked again.
    pub(crate) async fn release_idle(&self) {
        if let Some(server) = self.inner.server.get() {
            server.reset().await;
        }
        *self
            .inner
            .book
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Cache::default();
    }

    /// The playback server, started by the first caller.
    pub(crate) async fn server(&self) -> Result<&PlaybackServer, String> {
        let book = &self.inner.book;
        self.inner
            .server
            .get_or_try_init(|| start_server(book.clone()))
            .await
    }

    fn book(&self) -> &Book {
        &self.inner.book
    }
}

impl PlaybackServer {
    /// Let one request through to the server (resetting it first when its
    /// turn has come); the server is free to reset again once the guard
    /// is dropped, after the answer has arrived.
    async fn pass(&self) -> tokio::sync::RwLockReadGuard<'_, ()> {
        if self.sent.fetch_add(1, Ordering::Relaxed) % REQUESTS_PER_RESET == REQUESTS_PER_RESET - 1
        {
            self.reset().await;
        }
        self.gate.read().await
    }

    /// Free the requests the server's mock kept and mount the responder
    /// again, with the gate closed: once the exchanges in flight are
    /// answered, none reaches the server until the responder is back.
    async fn reset(&self) {
        let _closed = self.gate.write().await;
        self.server.reset().await;
        // Tests widen the window between the reset and the mount, so that
        // a request let through it would be seen (blocking: the caller's
        // runtime may have no timer).
        #[cfg(test)]
        std::thread::sleep(std::time::Duration::from_millis(2));
        mount_responder(&self.server, &self.book).await;
        self.resets.fetch_add(1, Ordering::Relaxed);
    }
}

async fn mount_responder(server: &MockServer, book: &Arc<Book>) {
    Mock::given(wiremock::matchers::any())
        .respond_with(PlaybackResponder(book.clone()))
        .named("scaffold playback")
        .mount(server)
        .await;
}

/// Start the server. It runs on wiremock's own thread; it is started from
/// a short-lived thread with a runtime of its own, so that the caller's
/// runtime needs no timer.
async fn start_server(book: Arc<Book>) -> Result<PlaybackServer, String> {
    let (tx, rx) = tokio::sync::oneshot::channel::<Result<MockServer, String>>();
    let responder_book = book.clone();
    std::thread::Builder::new()
        .name("scaffold-playback".to_string())
        .spawn(move || {
            let started = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot build its tokio runtime: {e}"))
                .and_then(|runtime| {
                    runtime.block_on(async {
                        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))
                            .map_err(|e| format!("cannot listen on a local port: {e}"))?;
                        let server = MockServer::builder()
                            .listener(listener)
                            .disable_request_recording()
                            .start()
                            .await;
                        mount_responder(&server, &responder_book).await;
                        Ok(server)
                    })
                });
            let _ = tx.send(started);
        })
        .map_err(|e| format!("playback: could not start the playback server thread: {e}"))?;
    match rx.await {
        Ok(Ok(server)) => Ok(PlaybackServer {
            uri: server.uri(),
            server,
            sent: AtomicU64::new(0),
            resets: AtomicU64::new(0),
            gate: tokio::sync::RwLock::new(()),
            book,
        }),
        Ok(Err(e)) => Err(format!(
            "playback: could not start the playback server: {e}"
        )),
        Err(_) => Err(
            "playback: the playback server thread stopped while starting (see its panic above)"
                .to_string(),
        ),
    }
}

/// One recordings folder with its redaction rules and the suite's own
/// re-record command.
struct Scope {
    dir: PathBuf,
    redactor: Arc<Redactor>,
    key: String,
    rerecord: Option<String>,
    rules: MatchRules,
}

impl Scope {
    /// The differences the rules do not forgive between `recorded` and a
    /// request (its `headers` carry the credentials to scrub). The
    /// recording is scrubbed; a request without secrets matches it as it
    /// is, so scrub (a copy of the whole body) only when it does not.
    fn differences(
        &self,
        recorded: &RecordedRequest,
        (method, path, query): (&str, &str, Option<&str>),
        body: Option<&Value>,
        headers: Vec<(&str, &str)>,
    ) -> Vec<Change> {
        let changes = self.rules.differences(recorded, method, path, query, body);
        if changes.is_empty() {
            return changes;
        }
        let scrub = self.redactor.scrubber(headers, query);
        let body = body.map(|b| scrub.json(b));
        let query = query.map(|q| scrub.query(q));
        self.rules
            .differences(recorded, method, path, query.as_deref(), body.as_ref())
    }
}

impl Book {
    /// Register (or find) the scope of a recorder: its index for
    /// [`SCOPE_HEADER`], and the scope. Recorders with the same folder, rules
    /// and command share one, so the registry does not grow with the number of
    /// recorders.
    fn register_scope(
        &self,
        dir: &Path,
        redactor: Arc<Redactor>,
        rerecord: Option<&str>,
        rules: &MatchRules,
    ) -> (usize, Arc<Scope>) {
        let key = format!("{} {}", redactor.key(), rules.key());
        let mut scopes = self.scopes.write().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = scopes
            .iter()
            .position(|s| s.dir == dir && s.key == key && s.rerecord.as_deref() == rerecord)
        {
            return (i, scopes[i].clone());
        }
        let scope = Arc::new(Scope {
            dir: dir.to_path_buf(),
            redactor,
            key,
            rerecord: rerecord.map(str::to_string),
            rules: rules.clone(),
        });
        scopes.push(scope.clone());
        (scopes.len() - 1, scope)
    }

    fn scope(&self, index: usize) -> Option<Arc<Scope>> {
        self.scopes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(index)
            .cloned()
    }
}

/// A parsed cassette and the answer it gives.
struct Loaded {
    modified: Option<SystemTime>,
    len: u64,
    /// The cassette with its bodies as text: all a call played back as
    /// recorded needs.
    cassette: RawCassette,
    /// The file's bytes, for the request with parsed bodies (see
    /// [`Loaded::request`]).
    bytes: Vec<u8>,
    /// The recorded request with its body parsed, made the first time a
    /// request is compared with it under the matching rules.
    parsed: std::sync::OnceLock<Result<RecordedRequest, String>>,
    /// The recorded request body as the providers send one (compact JSON):
    /// a request with these very bytes matches without being parsed.
    request_body: Option<Vec<u8>>,
    /// The answer to each attempt: the recorded failed attempts', then the
    /// final response's (to every later attempt too).
    answers: Vec<ResponseTemplate>,
}

impl Loaded {
    /// The recorded request with its body parsed, to compare a request that
    /// is not the recorded one byte for byte with it under the rules.
    fn request(&self, path: &Path) -> Result<&RecordedRequest, String> {
        let parsed = self.parsed.get_or_init(|| {
            Cassette::from_slice(&self.bytes, path)
                .map(|cassette| cassette.request)
                .map_err(|e| e.to_string())
        });
        parsed.as_ref().map_err(String::clone)
    }

    /// The answer to attempt `attempt` of the call.
    fn answer(&self, attempt: u32) -> ResponseTemplate {
        let last = self.answers.len().saturating_sub(1);
        self.answers[(attempt as usize).min(last)].clone()
    }

    /// Whether `request` is the recorded one byte for byte (method, path,
    /// query, compact JSON body): what [`diff_requests`] would find no
    /// change in, decided on the server's thread without parsing the body.
    fn matches_exactly(&self, request: &wiremock::Request) -> bool {
        let recorded = &self.cassette.request;
        fn non_empty(q: Option<&str>) -> Option<&str> {
            q.filter(|q| !q.is_empty())
        }
        recorded.method.len() == request.method.as_str().len()
            && recorded
                .method
                .bytes()
                .zip(request.method.as_str().bytes())
                .all(|(a, b)| a == b.to_ascii_uppercase())
            && recorded.path == request.url.path()
            && non_empty(recorded.query.as_deref()) == non_empty(request.url.query())
            && match &self.request_body {
                Some(bytes) => request.body == *bytes,
                None => request.body.is_empty(),
            }
    }
}

#[derive(Default)]
struct Cache {
    entries: HashMap<PathBuf, Arc<Loaded>>,
    order: VecDeque<PathBuf>,
}

/// A staged cassette and the attempt of the call it answers.
type StagedAnswer = (Arc<Loaded>, u32);

/// Stages a cassette for one request; unstages it when dropped (the
/// responder usually takes it first).
struct Staged<'a> {
    token: u64,
    book: &'a Book,
}

impl Book {
    fn stage(&self, loaded: Arc<Loaded>, attempt: u32) -> Staged<'_> {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        self.staged
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token, (loaded, attempt));
        Staged { token, book: self }
    }

    fn take(&self, token: u64) -> Option<StagedAnswer> {
        self.staged
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&token)
    }
}

impl Drop for Staged<'_> {
    fn drop(&mut self) {
        self.book.take(self.token);
    }
}

enum LoadError {
    Missing,
    Bad(RecorderError),
    BadAnswer(String),
}

impl Book {
    /// The parsed cassette at `path`, from the cache when the file is unchanged.
    fn load(&self, path: &Path) -> Result<Arc<Loaded>, LoadError> {
        let read_error = |source: std::io::Error| {
            LoadError::Bad(RecorderError::Read {
                path: path.to_path_buf(),
                source,
            })
        };
        // A cached cassette is checked by its path's metadata alone (one
        // stat, no open): its file's time and length unchanged.
        let meta = match fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(LoadError::Missing),
            Err(e) => return Err(read_error(e)),
        };
        let modified = meta.modified().ok();
        let len = meta.len();
        {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(hit) = cache.entries.get(path)
                && hit.modified == modified
                && hit.len == len
            {
                return Ok(hit.clone());
            }
        }
        let mut file = match fs::File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(LoadError::Missing),
            Err(e) => return Err(read_error(e)),
        };
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        // Through `Take`: `File::read_to_end` would ask the size and position
        // again (two more system calls a cassette) for what `len` already says;
        // a file that grew since is read to its end all the same.
        (&mut file)
            .take(u64::MAX)
            .read_to_end(&mut bytes)
            .map_err(read_error)?;
        let cassette = RawCassette::from_slice(&bytes, path).map_err(LoadError::Bad)?;
        let answers = cassette
            .attempts
            .iter()
            .map(|failed| &failed.response)
            .chain([&cassette.response])
            .map(answer_for)
            .collect::<Result<Vec<_>, _>>()
            .map_err(LoadError::BadAnswer)?;
        let request_body =
            (cassette.request.body.as_ref()).map(|b| compact_json(b.get()).into_bytes());
        let loaded = Arc::new(Loaded {
            modified,
            len,
            cassette,
            bytes,
            parsed: std::sync::OnceLock::new(),
            request_body,
            answers,
        });
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache
            .entries
            .insert(path.to_path_buf(), loaded.clone())
            .is_none()
        {
            cache.order.push_back(path.to_path_buf());
        }
        while cache.order.len() > CACHE_CAPACITY {
            if let Some(old) = cache.order.pop_front() {
                cache.entries.remove(&old);
            }
        }
        Ok(loaded)
    }
}

/// The recorded answer as a response template, checked so wiremock cannot panic on it.
fn answer_for(response: &RecordedResponse<Box<RawValue>>) -> Result<ResponseTemplate, String> {
    if !(100..=999).contains(&response.status) {
        return Err(format!("status {} is not an HTTP status", response.status));
    }
    let content_type = response.content_type();
    if HeaderValue::from_str(&content_type).is_err() {
        return Err(format!(
            "content type `{content_type}` is not a header value"
        ));
    }
    let mut answer = ResponseTemplate::new(response.status);
    for (name, value) in &response.headers {
        if name.eq_ignore_ascii_case("content-type") {
            continue;
        }
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not a header name"))?;
        let value =
            HeaderValue::from_str(value).map_err(|_| format!("`{value}` is not a header value"))?;
        answer = answer.insert_header(name, value);
    }
    Ok(answer.set_body_raw(response.body_bytes(), &content_type))
}

/// The single responder of a playback server.
struct PlaybackResponder(Arc<Book>);

impl Respond for PlaybackResponder {
    fn respond(&self, request: &wiremock::Request) -> ResponseTemplate {
        match serve(&self.0, request) {
            Ok(answer) => answer,
            Err(message) => ResponseTemplate::new(ERROR_STATUS)
                .insert_header(ERROR_HEADER, "1")
                .set_body_json(serde_json::json!({ "scaffoldPlaybackError": message })),
        }
    }
}

fn serve(book: &Book, request: &wiremock::Request) -> Result<ResponseTemplate, String> {
    let header = |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok());
    // The usual request, staged by the transport and the recorded one to
    // the byte, is answered before anything else is looked up.
    let staged = header(TOKEN_HEADER)
        .and_then(|t| t.parse::<u64>().ok())
        .and_then(|token| book.take(token));
    if let Some((loaded, attempt)) = &staged
        && loaded.matches_exactly(request)
    {
        return Ok(loaded.answer(*attempt));
    }
    let id_text = header(RECORDING_ID_HEADER).ok_or_else(|| {
        format!(
            "playback: {} {} reached the playback server without an `{RECORDING_ID_HEADER}` header; \
             send provider requests through ProviderRecorder::transport()",
            request.method,
            request.url.path()
        )
    })?;
    let scope = header(SCOPE_HEADER)
        .and_then(|s| s.parse::<usize>().ok())
        .and_then(|index| book.scope(index))
        .ok_or_else(|| {
            format!("playback: request for `{id_text}` names no known recorder (`{SCOPE_HEADER}`)")
        })?;
    let id: RecordingId = id_text.parse().map_err(|e| format!("playback: {e}"))?;
    let path = scope.dir.join(format!("{id}.json"));
    let (loaded, attempt) = match staged {
        // Already found to differ from the request above.
        Some(staged) => staged,
        None => {
            // Another client: it says no attempt, so it gets the final answer.
            let loaded = book
                .load(&path)
                .map_err(|e| load_error_message(&id, &path, e, &scope))?;
            let attempt = u32::try_from(loaded.cassette.attempts.len()).unwrap_or(u32::MAX);
            if loaded.matches_exactly(request) {
                return Ok(loaded.answer(attempt));
            }
            (loaded, attempt)
        }
    };
    let recorded = loaded
        .request(&path)
        .map_err(|e| messages::unreadable(&id, &e, scope.rerecord.as_deref()))?;
    let method = request.method.as_str();
    let url_path = request.url.path();
    let url_query = request.url.query().filter(|q| !q.is_empty());
    let raw_body = (!request.body.is_empty()).then(|| {
        serde_json::from_slice::<Value>(&request.body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&request.body).into_owned()))
    });
    let headers: Vec<(&str, &str)> = request
        .headers
        .iter()
        .filter_map(|(k, v)| v.to_str().ok().map(|v| (k.as_str(), v)))
        .collect();
    let changes = scope.differences(
        recorded,
        (method, url_path, url_query),
        raw_body.as_ref(),
        headers,
    );
    if !changes.is_empty() {
        return Err(messages::stale(
            &id,
            &path,
            &render_changes(&changes),
            scope.rerecord.as_deref(),
        ));
    }
    Ok(loaded.answer(attempt))
}

fn load_error_message(id: &RecordingId, path: &Path, error: LoadError, scope: &Scope) -> String {
    let rerecord = scope.rerecord.as_deref();
    match error {
        LoadError::Missing => messages::missing(id, path, rerecord),
        LoadError::Bad(e) => messages::unreadable(id, &e.to_string(), rerecord),
        LoadError::BadAnswer(why) => messages::unreadable(
            id,
            &format!(
                "{}: the recorded response is invalid: {why}",
                path.display()
            ),
            rerecord,
        ),
    }
}

/// Sends every request to the playback server through the inner (real HTTP) transport.
pub(crate) struct PlaybackTransport {
    inner: Arc<dyn Transport>,
    playback: Playback,
    scope_index: usize,
    scope: Arc<Scope>,
    /// Answer here, without the server (the agent bridge's calls).
    local: bool,
    /// Count the recorded time on real clocks too (record mode answering
    /// a call from its recording).
    on_real_clocks: bool,
}

impl PlaybackTransport {
    pub(crate) fn new(
        inner: Arc<dyn Transport>,
        playback: Playback,
        dir: &Path,
        redactor: Arc<Redactor>,
        rerecord: Option<&str>,
        rules: &MatchRules,
    ) -> PlaybackTransport {
        let (scope_index, scope) = playback
            .book()
            .register_scope(dir, redactor, rerecord, rules);
        PlaybackTransport {
            inner,
            playback,
            scope_index,
            scope,
            local: false,
            on_real_clocks: false,
        }
    }
}

impl PlaybackTransport {
    /// This transport answering from the cassettes itself, without the
    /// playback server: for the agent bridge, whose agent's own client has
    /// already spoken real HTTP to it (a second hop would test nothing of
    /// the agent's and cost a round trip per call). Everything else is
    /// the same: the comparison and its diff, failed attempts, broken-off
    /// streams, virtual time.
    pub(crate) fn answering_here(mut self) -> PlaybackTransport {
        self.local = true;
        self
    }

    /// This transport counting the recorded time on the run's clock even
    /// when it is real: record mode answering a call from its recording,
    /// so that the call lasts its recorded time in that run too.
    pub(crate) fn counting_on_real_clocks(mut self) -> PlaybackTransport {
        self.on_real_clocks = true;
        self
    }
}

/// What a recording says of a request (see [`PlaybackTransport::answers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Recorded {
    /// Whether it answers the request.
    pub(crate) matches: bool,
    /// Its call's place among the calls of its run, if it was numbered.
    pub(crate) order: Option<u64>,
    /// Whether the recorded call succeeded (a recorded failure is recorded
    /// again in record mode).
    pub(crate) succeeded: bool,
}

impl PlaybackTransport {
    /// The differences between the recording `id` at `path` (`loaded`)
    /// and `request` that the scope's rules do not forgive (none for the
    /// very request recorded), or why the recorded request cannot be read.
    fn unforgiven(
        &self,
        (id, path): (&RecordingId, &Path),
        loaded: &Loaded,
        request: &HttpRequest,
    ) -> Result<Vec<Change>, String> {
        let (_, url_path, query) = split_url(&request.url);
        let query = query.filter(|q| !q.is_empty());
        let recorded = &loaded.cassette.request;
        let body = (request.body.as_ref()).map(|b| serde_json::to_vec(b).unwrap_or_default());
        if recorded.method.eq_ignore_ascii_case(&request.method)
            && recorded.path == url_path
            && recorded.query.as_deref().filter(|q| !q.is_empty()) == query
            && body == loaded.request_body
        {
            return Ok(Vec::new());
        }
        let recorded = loaded
            .request(path)
            .map_err(|e| messages::unreadable(id, &e, self.scope.rerecord.as_deref()))?;
        let headers = request
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        Ok(self.scope.differences(
            recorded,
            (&request.method, url_path, query),
            request.body.as_ref(),
            headers,
        ))
    }

    /// Whether the recording `id` answers `request` (method, path, query
    /// and body, under the scope's rules): `None` when there is no such
    /// recording. Bridged agents' parallel calls find their recordings by
    /// content with it.
    pub(crate) fn answers(
        &self,
        id: &RecordingId,
        request: &HttpRequest,
    ) -> Result<Option<Recorded>, String> {
        let path = self.scope.dir.join(format!("{id}.json"));
        let loaded = match self.playback.book().load(&path) {
            Ok(loaded) => loaded,
            Err(LoadError::Missing) => return Ok(None),
            Err(e) => return Err(load_error_message(id, &path, e, &self.scope)),
        };
        let changes = self.unforgiven((id, &path), &loaded, request)?;
        Ok(Some(Recorded {
            matches: changes.is_empty(),
            order: loaded.cassette.order,
            succeeded: loaded.cassette.succeeded(),
        }))
    }
}

#[async_trait]
impl Transport for PlaybackTransport {
    async fn send(
        &self,
        request: HttpRequest,
        context: &CallContext,
    ) -> Result<HttpResponse, TransportError> {
        let id = checked_recording_id(RecorderMode::Playback, &request, context)?;
        // Read and parse the cassette here, off the server's single thread.
        // Small files: reading them inline costs less than a blocking task.
        let path = self.scope.dir.join(format!("{id}.json"));
        let book = self.playback.book();
        let loaded = book.load(&path).map_err(|e| {
            TransportError::Playback(load_error_message(&id, &path, e, &self.scope))
        })?;
        let attempt = context.attempt;
        let (recorded, timing) = loaded.cassette.exchange(attempt);
        let broke_off = recorded.failure();
        let wait = loaded.cassette.wait_before(attempt);
        let response = if self.local {
            let changes = (self.unforgiven((&id, &path), &loaded, &request))
                .map_err(TransportError::Playback)?;
            if !changes.is_empty() {
                return Err(TransportError::Playback(messages::stale(
                    &id,
                    &path,
                    &render_changes(&changes),
                    self.scope.rerecord.as_deref(),
                )));
            }
            local_answer(recorded)
        } else {
            self.served(&id, loaded, request, context).await?
        };
        let body = match broke_off {
            Some(failure) => break_off(response.body, failure),
            None => response.body,
        };
        let mut headers = response.headers;
        headers.push((PLAYED_BACK_HEADER.to_string(), "1".to_string()));
        Ok(HttpResponse {
            status: response.status,
            headers,
            body: on_clock(
                body,
                context.clock.as_ref(),
                self.on_real_clocks,
                wait,
                timing,
            ),
        })
    }
}

impl PlaybackTransport {
    /// The answer of the playback server to `request`, from `loaded`
    /// (staged for it): the provider's HTTP client speaks to a real server.
    async fn served(
        &self,
        id: &RecordingId,
        loaded: Arc<Loaded>,
        request: HttpRequest,
        context: &CallContext,
    ) -> Result<HttpResponse, TransportError> {
        let staged = self.playback.book().stage(loaded, context.attempt);
        let server = self
            .playback
            .server()
            .await
            .map_err(TransportError::Playback)?;
        let uri = &server.uri;
        let (_, path, query) = split_url(&request.url);
        let url = match query {
            Some(q) => format!("{uri}{path}?{q}"),
            None => format!("{uri}{path}"),
        };
        let mut headers: Vec<(String, String)> = request
            .headers
            .into_iter()
            .filter(|(k, _)| {
                !k.eq_ignore_ascii_case("host")
                    && !k.eq_ignore_ascii_case("content-length")
                    && !k.to_ascii_lowercase().starts_with("x-scaffold-")
            })
            .collect();
        headers.push((RECORDING_ID_HEADER.to_string(), id.to_string()));
        headers.push((SCOPE_HEADER.to_string(), self.scope_index.to_string()));
        headers.push((TOKEN_HEADER.to_string(), staged.token.to_string()));
        let rewritten = HttpRequest {
            method: request.method,
            url,
            headers,
            body: request.body,
        };
        let pass = server.pass().await;
        let response = self.inner.send(rewritten, context).await?;
        drop(pass);
        drop(staged);
        if response.status == ERROR_STATUS && response.header(ERROR_HEADER).is_some() {
            let bytes = match response.body {
                HttpBody::Full(bytes) => bytes.to_vec(),
                HttpBody::Stream(mut stream) => {
                    let mut all = Vec::new();
                    while let Some(chunk) = stream.next().await {
                        all.extend_from_slice(&chunk?);
                    }
                    all
                }
            };
            let message = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|v| {
                    v.get("scaffoldPlaybackError")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
            return Err(TransportError::Playback(message));
        }
        Ok(response)
    }
}

/// A recorded response as the server would give it.
fn local_answer(recorded: &RecordedResponse<Box<RawValue>>) -> HttpResponse {
    let mut headers: Vec<(String, String)> = recorded
        .headers
        .iter()
        .filter(|(name, _)| !name.eq_ignore_ascii_case("content-type"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    headers.push(("content-type".to_string(), recorded.content_type()));
    HttpResponse {
        status: recorded.status,
        headers,
        body: HttpBody::Full(bytes::Bytes::from(recorded.body_bytes())),
    }
}

/// Count the recorded time of an exchange on the run's clock (a virtual
/// one; a real one too when `real_too`): the wait before it and its first
/// byte at once, the rest of its duration when a streamed body ends (so
/// streamed text arrives at its recorded first byte).
fn on_clock(
    body: HttpBody,
    clock: Option<&Clock>,
    real_too: bool,
    wait_ms: u64,
    timing: Timing,
) -> HttpBody {
    let Some(clock) = clock.filter(|c| real_too || c.is_virtual()) else {
        return body;
    };
    let ms = Duration::from_millis;
    match body {
        HttpBody::Full(bytes) => {
            clock.credit(ms(wait_ms.saturating_add(timing.duration_ms)));
            HttpBody::Full(bytes)
        }
        HttpBody::Stream(stream) => {
            let first_byte = timing.first_byte_ms.min(timing.duration_ms);
            clock.credit(ms(wait_ms.saturating_add(first_byte)));
            HttpBody::Stream(Box::pin(RestOnClock {
                inner: stream,
                clock: clock.clone(),
                rest: Some(ms(timing.duration_ms - first_byte)),
            }))
        }
    }
}

/// A played-back stream that counts the rest of its recorded duration on
/// the clock when it ends, breaks off or is let go (a client stops reading
/// at `[DONE]`; the recording was timed to that point too).
struct RestOnClock {
    inner: ByteStream,
    clock: Clock,
    rest: Option<Duration>,
}

impl futures_util::Stream for RestOnClock {
    type Item = Result<bytes::Bytes, TransportError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        if let std::task::Poll::Ready(None | Some(Err(_))) = &polled
            && let Some(rest) = self.rest.take()
        {
            self.clock.credit(rest);
        }
        polled
    }
}

impl Drop for RestOnClock {
    fn drop(&mut self) {
        if let Some(rest) = self.rest.take() {
            self.clock.credit(rest);
        }
    }
}

/// The body of a recording whose stream failed: what came, then the
/// failure as it was recorded, so that a replay fails where and as the
/// live call did (the server can only close its answer cleanly).
fn break_off(body: HttpBody, failure: String) -> HttpBody {
    let came: ByteStream = match body {
        HttpBody::Full(bytes) => Box::pin(futures_util::stream::iter([Ok(bytes)])),
        HttpBody::Stream(stream) => stream,
    };
    let failed = futures_util::stream::once(async move { Err(TransportError::Other(failure)) });
    HttpBody::Stream(Box::pin(came.chain(failed)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::recorder::cassette::{
        CASSETTE_VERSION, RecordedRequest, RecordedResponse, Timing,
    };
    use wiremock::http::{HeaderMap, Method};

    fn request(headers: &[(&str, &str)], body: &Value) -> wiremock::Request {
        let mut map = HeaderMap::new();
        for (k, v) in headers {
            map.insert(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        wiremock::Request {
            url: "http://127.0.0.1:1/v1/chat/completions".parse().unwrap(),
            method: Method::POST,
            headers: map,
            body: serde_json::to_vec(body).unwrap(),
        }
    }

    /// Store a cassette of a chat completion `body` answered `{"ok": true}`.
    fn save_cassette(
        dir: &Path,
        id: &RecordingId,
        body: &serde_json::Value,
        status: u16,
        headers: std::collections::BTreeMap<String, String>,
    ) {
        Cassette {
            version: CASSETTE_VERSION,
            id: id.to_string(),
            request: RecordedRequest {
                method: "POST".into(),
                path: "/v1/chat/completions".into(),
                query: None,
                headers: Default::default(),
                body: Some(body.clone()),
            },
            attempts: Vec::new(),
            response: RecordedResponse {
                status,
                headers,
                body: Some(serde_json::json!({"ok": true})),
                text: None,
                sse: None,
                truncated: false,
                error: None,
            },
            timing: Timing::default(),
            order: None,
        }
        .save(&dir.join(format!("{id}.json")))
        .unwrap();
    }

    #[test]
    fn responder_serves_by_id_without_a_staged_cassette() {
        let dir = std::env::temp_dir().join(format!("scaffold-responder-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let id = RecordingId::new("d", "c", "v", "n", 0);
        let body =
            serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        save_cassette(
            &dir,
            &id,
            &body,
            201,
            [("content-type".to_string(), "application/json".to_string())].into(),
        );
        let book = Book::default();
        let (scope, _) = book.register_scope(
            &dir,
            Arc::new(Redactor::default()),
            None,
            &MatchRules::default(),
        );
        let scope = scope.to_string();
        let id_text = id.to_string();
        let headers = [
            (RECORDING_ID_HEADER, id_text.as_str()),
            (SCOPE_HEADER, scope.as_str()),
        ];

        assert!(serve(&book, &request(&headers, &body)).is_ok());
        // Not the same bytes, the same request: other spacing, a lowercase method.
        let mut spaced = request(&headers, &body);
        spaced.body = serde_json::to_vec_pretty(&body).unwrap();
        let loaded = book.load(&dir.join(format!("{id}.json"))).ok().unwrap();
        assert!(!loaded.matches_exactly(&spaced));
        assert!(serve(&book, &spaced).is_ok());
        let mut lower = request(&headers, &body);
        lower.method = Method::from_bytes(b"post").unwrap();
        assert!(loaded.matches_exactly(&lower) && serve(&book, &lower).is_ok());
        // Same body, another query or path: never an exact match.
        let mut query = request(&headers, &body);
        query.url.set_query(Some("a=1"));
        assert!(!loaded.matches_exactly(&query));
        let err = serve(&book, &query).err().unwrap();
        assert!(err.contains("(query)"), "{err}");
        let mut path = request(&headers, &body);
        path.url.set_path("/v1/other");
        assert!(!loaded.matches_exactly(&path) && serve(&book, &path).is_err());
        let mut empty = request(&headers, &body);
        empty.body.clear();
        assert!(!loaded.matches_exactly(&empty) && serve(&book, &empty).is_err());

        let mut changed = body.clone();
        changed["model"] = "other".into();
        let err = serve(&book, &request(&headers, &changed)).err().unwrap();
        assert!(err.contains("model: \"m\" → \"other\""), "{err}");

        let err = serve(&book, &request(&headers[1..], &body)).err().unwrap();
        assert!(err.contains(RECORDING_ID_HEADER), "{err}");

        let other = RecordingId::new("d", "c", "v", "n", 1).to_string();
        let err = serve(
            &book,
            &request(
                &[
                    (RECORDING_ID_HEADER, other.as_str()),
                    (SCOPE_HEADER, scope.as_str()),
                ],
                &body,
            ),
        )
        .err()
        .unwrap();
        assert!(
            err.contains("no recording") && err.contains(&other),
            "{err}"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    /// A cassette edited by hand (a respaced, reordered body, an escaped
    /// header value) is answered as written; another version is named.
    #[test]
    fn edited_cassettes_are_answered_like_written_ones() {
        let recorded = Recorded::new("edited");
        let written = fs::read_to_string(&recorded.path).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let answer = |file: &str| {
            fs::write(&recorded.path, file).unwrap();
            runtime.block_on(async {
                let response = recorded
                    .transport
                    .send(Recorded::request(), &recorded.context)
                    .await
                    .map_err(|e| e.to_string())?;
                let header = response.header("x-note").map(str::to_string);
                let bytes = match response.body {
                    HttpBody::Full(bytes) => bytes.to_vec(),
                    HttpBody::Stream(_) => panic!("a JSON answer is whole"),
                };
                let body: Value = serde_json::from_slice(&bytes).unwrap();
                Ok::<_, String>((body, header))
            })
        };
        assert_eq!(
            answer(&written),
            Ok((serde_json::json!({"ok": true}), None))
        );
        let (request, response) = written.split_at(written.find("\"response\"").unwrap());
        let edited = request.to_string()
            + &response
                .replace("\"ok\": true", "\"ok\" :  true ,\"also\": \"a\\u00e9\"")
                .replace(
                    "\"headers\": {}",
                    "\"headers\": {\"x-note\": \"say \\\"hi\\\"\"}",
                );
        assert!(
            edited.contains("x-note") && edited.contains("also"),
            "{written}"
        );
        assert_eq!(
            answer(&edited),
            Ok((
                serde_json::json!({"ok": true, "also": "aé"}),
                Some("say \"hi\"".to_string())
            ))
        );
        // Another version is still named as such.
        let err = answer(&written.replace("\"version\": 1", "\"version\": 9")).unwrap_err();
        assert!(err.contains('9') && err.contains("version"), "{err}");
    }

    /// A recordings folder named after `test` with one recorded answer (200)
    /// to [`Recorded::request`], a playback transport over it, and the
    /// call context naming the recording.
    struct Recorded {
        dir: PathBuf,
        path: PathBuf,
        transport: Arc<PlaybackTransport>,
        playback: Playback,
        context: CallContext,
    }

    impl Recorded {
        fn new(test: &str) -> Recorded {
            let dir = std::env::temp_dir().join(format!("scaffold-{test}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            let id = RecordingId::new("d", test, "v", "n", 0);
            save_cassette(&dir, &id, &Recorded::body(), 200, Default::default());
            let playback = Playback::new();
            let transport = Arc::new(PlaybackTransport::new(
                crate::provider::http::ReqwestTransport::shared(),
                playback.clone(),
                &dir,
                Arc::new(Redactor::default()),
                None,
                &MatchRules::default(),
            ));
            Recorded {
                path: dir.join(format!("{id}.json")),
                dir,
                transport,
                playback,
                context: CallContext {
                    recording_id: Some(id.to_string()),
                    ..CallContext::default()
                },
            }
        }

        fn body() -> serde_json::Value {
            serde_json::json!({"model": "m"})
        }

        fn request() -> HttpRequest {
            HttpRequest {
                method: "POST".into(),
                url: "http://api.invalid/v1/chat/completions".into(),
                headers: vec![],
                body: Some(Recorded::body()),
            }
        }
    }

    impl Drop for Recorded {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }

    /// Once the cells are done, playback lets go of the cassettes it
    /// parsed and of what the server kept, and still answers if asked.
    #[test]
    fn releasing_idle_playback_keeps_it_answering() {
        let recorded = Recorded::new("idle");
        let send = || {
            recorded
                .transport
                .send(Recorded::request(), &recorded.context)
        };
        let cached = |path: &Path| {
            recorded
                .playback
                .book()
                .cache
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entries
                .contains_key(path)
        };
        let path = &recorded.path;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            assert_eq!(
                send().await.map(|r| r.status).map_err(|e| e.to_string()),
                Ok(200)
            );
            assert!(cached(path), "the cassette was not cached");
            recorded.playback.release_idle().await;
            assert!(!cached(path), "the cassette is still cached");
            assert_eq!(
                send().await.map(|r| r.status).map_err(|e| e.to_string()),
                Ok(200)
            );
        });
    }

    /// Two runs in one process, each with its `Playback`: neither sees the
    /// other's recorder scopes, staged cassettes, cache or server.
    #[test]
    fn two_playbacks_share_nothing() {
        let (one, two) = (Recorded::new("one"), Recorded::new("two"));
        let (a, b) = (one.playback.book(), two.playback.book());
        // Each registry holds its own recorder alone, at index 0.
        assert_eq!(one.transport.scope_index, 0);
        assert_eq!(two.transport.scope_index, 0);
        assert_eq!(a.scope(0).map(|s| s.dir.clone()), Some(one.dir.clone()));
        assert_eq!(b.scope(0).map(|s| s.dir.clone()), Some(two.dir.clone()));
        assert!(a.scope(1).is_none() && b.scope(1).is_none());
        // A cassette staged in one is not answered by the other.
        let loaded = a.load(&one.path).ok().unwrap();
        let staged = a.stage(loaded, 0);
        assert!(b.take(staged.token).is_none());
        assert!(a.take(staged.token).is_some());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            // One's replay caches one's cassette, not in two's cache.
            let sent = two.transport.send(Recorded::request(), &two.context).await;
            assert_eq!(sent.map(|r| r.status).map_err(|e| e.to_string()), Ok(200));
            let cached = |book: &Book, path: &Path| {
                book.cache
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entries
                    .contains_key(path)
            };
            assert!(cached(b, &two.path) && !cached(a, &two.path));
            let sent = one.transport.send(Recorded::request(), &one.context).await;
            assert_eq!(sent.map(|r| r.status).map_err(|e| e.to_string()), Ok(200));
            let (s1, s2) = (one.playback.server().await, two.playback.server().await);
            assert_ne!(s1.unwrap().uri, s2.unwrap().uri);
        });
        // A request naming scope 0 on two's server is served from two's folder.
        let body = Recorded::body();
        let id = RecordingId::new("d", "one", "v", "n", 0).to_string();
        let headers = [(RECORDING_ID_HEADER, id.as_str()), (SCOPE_HEADER, "0")];
        assert!(serve(a, &request(&headers, &body)).is_ok());
        let err = serve(b, &request(&headers, &body)).err().unwrap();
        assert!(err.contains("no recording"), "{err}");
    }

    #[test]
    fn the_server_is_reset_between_requests_and_none_is_lost() {
        let recorded = Recorded::new("reset");
        let (transport, context) = (&recorded.transport, &recorded.context);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let before = recorded
                .playback
                .server()
                .await
                .unwrap()
                .resets
                .load(Ordering::Relaxed);
            // 16 senders, each one request after the other (as cells do),
            // so that resets come while requests are in flight: a request
            // that reached the server between a reset and the new mount
            // would get wiremock's bare 404.
            let (senders, each) = (16, 10 * REQUESTS_PER_RESET);
            let requests = senders * each;
            let senders: Vec<_> = (0..senders)
                .map(|_| {
                    let (transport, context) = (transport.clone(), context.clone());
                    tokio::spawn(async move {
                        let mut statuses = Vec::new();
                        for _ in 0..each {
                            let sent = transport.send(Recorded::request(), &context).await;
                            statuses.push(sent.map(|r| r.status).map_err(|e| e.to_string()));
                        }
                        statuses
                    })
                })
                .collect();
            for sender in senders {
                let statuses = sender.await.unwrap();
                assert!(statuses.iter().all(|s| s == &Ok(200)), "{statuses:?}");
            }
            // The server is this test's own: at least this many resets.
            let resets = recorded
                .playback
                .server()
                .await
                .unwrap()
                .resets
                .load(Ordering::Relaxed)
                - before;
            assert!(
                resets >= requests / REQUESTS_PER_RESET - 1,
                "{resets} resets for {requests} requests"
            );
        });
    }
}
