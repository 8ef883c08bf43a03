//! HTTP machinery shared by the OpenAI and Anthropic providers.
//!
//! - [`ReqwestTransport`]: the default [`Transport`], sending requests with
//!   reqwest (rustls). Responses of type `text/event-stream` come back as a
//!   stream of chunks, everything else as a whole body.
//! - [`HttpConfig`] and [`RetryPolicy`]: how long a call may take, how long a
//!   stream may stay silent, and how failed attempts are retried (429, 500,
//!   502, 503, 504, 529 and connection failures, honouring `Retry-After`,
//!   `retry-after-ms` and `x-should-retry`).
//! - [`SseParser`]: a small, complete Server-Sent Events parser (`event:` and
//!   `data:` fields, multi-line data, comments, CR / LF / CRLF line endings,
//!   chunk boundaries anywhere, a byte-order mark at the start).
//!
//! The providers never call reqwest themselves: they build an
//! [`HttpRequest`] and send it through an
//! `Arc<dyn Transport>`, so recording and playback wrap the same code path.
//! Every failure ends as a [`ProviderError`]; nothing here panics on input and
//! every wait is bounded by the call timeout or the stream idle timeout.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::time::Instant;

use super::limit::{Permit, ProviderLimit, RateLimit, estimate_tokens};
use super::recorder::PLAYED_BACK_HEADER;
use super::transport::{
    ByteStream, HttpBody, HttpRequest, HttpResponse, Transport, TransportError,
};
use super::{CallContext, ProviderError};

/// Default time allowed to establish a TCP (and TLS) connection.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest error body read to build an error message.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Largest successful JSON body read from a streamed transport body.
const MAX_JSON_BODY: usize = 256 * 1024 * 1024;
/// Longest SSE line or event accepted before the stream is declared broken.
const MAX_SSE_EVENT: usize = 16 * 1024 * 1024;

// ---------------------------------------------------------------------------
// ReqwestTransport
// ---------------------------------------------------------------------------

/// The TLS setup of [`ReqwestTransport`]: rustls on the `ring` provider
/// (passed here, not installed process-wide), certificates checked by the
/// platform's verifier, HTTP/1.1 offered by ALPN, as reqwest would set it up.
fn tls_config() -> Result<rustls::ClientConfig, TransportError> {
    use rustls_platform_verifier::BuilderVerifierExt;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls_error = |e: rustls::Error| TransportError::Other(format!("could not set up TLS: {e}"));
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?
        .with_platform_verifier()
        .map_err(tls_error)?
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The default [`Transport`]: real HTTP with reqwest over rustls.
///
/// Its pooled connections belong to the tokio runtime that opened them, so
/// use one per runtime; [`ReqwestTransport::shared`], the providers'
/// default, is safe to use from any runtime.
///
/// Only the connect timeout is enforced here; the call timeout, the stream
/// idle timeout and retries are applied by the providers above any transport,
/// so they hold in playback too. Credentials in request headers are sent and
/// never logged; error messages never include the URL.
///
/// ```
/// use std::time::Duration;
/// use scaffold::provider::http::ReqwestTransport;
///
/// let transport = ReqwestTransport::with_connect_timeout(Duration::from_secs(5))
///     .expect("TLS backend available");
/// # let _ = transport;
/// ```
#[derive(Debug, Clone)]
pub struct ReqwestTransport {
    client: reqwest::Client,
    connect_timeout: Duration,
}

impl ReqwestTransport {
    /// A transport with the default connect timeout (`DEFAULT_CONNECT_TIMEOUT`).
    pub fn new() -> Result<Self, TransportError> {
        Self::with_connect_timeout(DEFAULT_CONNECT_TIMEOUT)
    }

    /// A transport whose connection attempts give up after `connect_timeout`.
    pub fn with_connect_timeout(connect_timeout: Duration) -> Result<Self, TransportError> {
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls_config()?)
            .connect_timeout(connect_timeout)
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            .user_agent(concat!("scaffold/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                TransportError::Other(format!("could not build the HTTP client: {}", chain(&e)))
            })?;
        Ok(ReqwestTransport {
            client,
            connect_timeout,
        })
    }

    /// Wrap a reqwest client configured elsewhere (proxies, custom roots, ...).
    ///
    /// scaffold builds reqwest without a rustls crypto provider of its own:
    /// give the client one (`tls_backend_preconfigured`), install a default
    /// (`rustls::crypto::CryptoProvider::install_default`), or enable
    /// reqwest's `rustls` feature in your crate.
    pub fn from_client(client: reqwest::Client) -> Self {
        ReqwestTransport {
            client,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }

    /// The default transport of the providers: one process-wide reqwest
    /// client whose connections all live on a small background runtime
    /// (thread `scaffold-http`), built on first use.
    ///
    /// Callers on any runtime (one per test, one per thread, ...) share its
    /// connection pool safely: requests and streamed bodies are handed over
    /// through channels, and a call dropped by its caller is cancelled. The
    /// eval harness gives its cells a client on its own runtime instead
    /// (see `ReqwestTransport::served_on`).
    pub fn shared() -> Arc<dyn Transport> {
        // A process-wide static on purpose: set once, never changed, and
        // holding no state of a run (the state of playback lives in a
        // `Playback`, the harness's client in its cells' recorders); every
        // caller gets the same stateless router to the background client.
        static SHARED: OnceLock<Arc<dyn Transport>> = OnceLock::new();
        SHARED
            .get_or_init(|| Arc::new(Background) as Arc<dyn Transport>)
            .clone()
    }

    /// This transport with its connections on `runtime`: calls made from
    /// inside `runtime` run on the caller's task, with no hop to another
    /// thread; calls from other runtimes are handed to `runtime` (so it
    /// should be a multi-thread runtime: a current-thread one runs them
    /// only inside its `block_on`). The eval harness serves its cells'
    /// real calls so, on the runtime they run on.
    pub(crate) fn served_on(self, runtime: tokio::runtime::Handle) -> Arc<dyn Transport> {
        Arc::new(Served {
            runtime,
            transport: Arc::new(self),
        })
    }

    fn map_error(&self, e: reqwest::Error) -> TransportError {
        let e = e.without_url();
        let message = chain(&e);
        if e.is_connect() && e.is_timeout() {
            TransportError::ConnectTimeout(millis(self.connect_timeout))
        } else if e.is_timeout() {
            TransportError::Timeout(0)
        } else if e.is_builder() {
            TransportError::Other(format!("invalid request: {message}"))
        } else {
            TransportError::Connection(message)
        }
    }
}

#[async_trait]
impl Transport for ReqwestTransport {
    async fn send(
        &self,
        request: HttpRequest,
        _context: &CallContext,
    ) -> Result<HttpResponse, TransportError> {
        let method = reqwest::Method::from_bytes(request.method.as_bytes()).map_err(|_| {
            TransportError::Other(format!("invalid HTTP method {:?}", request.method))
        })?;
        let mut builder = self.client.request(method, request.url.as_str());
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        if let Some(body) = &request.body {
            let bytes = serde_json::to_vec(body)
                .map_err(|e| TransportError::Other(format!("could not serialize the body: {e}")))?;
            if request.header("content-type").is_none() {
                builder = builder.header("content-type", "application/json");
            }
            builder = builder.body(bytes);
        }
        let response = builder.send().await.map_err(|e| self.map_error(e))?;
        let status = response.status().as_u16();
        let headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let is_sse = headers
            .iter()
            .any(|(k, v)| k == "content-type" && is_event_stream(v));
        let body = if is_sse {
            let this = self.clone();
            let stream = response
                .bytes_stream()
                .map(move |chunk| chunk.map_err(|e| this.map_error(e)));
            HttpBody::Stream(Box::pin(stream))
        } else {
            HttpBody::Full(response.bytes().await.map_err(|e| self.map_error(e))?)
        };
        Ok(HttpResponse {
            status,
            headers,
            body,
        })
    }
}

/// The transport behind [`ReqwestTransport::shared`].
struct Background;

fn background() -> Result<&'static Served, TransportError> {
    // Immutable once built: one connection pool and its runtime, shared
    // by every caller that has no transport of its own; a run keeps
    // nothing in it.
    static CLIENT: OnceLock<Result<(tokio::runtime::Runtime, Served), String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("scaffold-http")
                .enable_all()
                .build()
                .map_err(|e| format!("could not start the HTTP runtime: {e}"))?;
            let transport = ReqwestTransport::new().map_err(|e| e.to_string())?;
            let served = Served {
                runtime: runtime.handle().clone(),
                transport: Arc::new(transport),
            };
            Ok((runtime, served))
        })
        .as_ref()
        .map(|(_, served)| served)
        .map_err(|e| TransportError::Other(e.clone()))
}

#[async_trait]
impl Transport for Background {
    async fn send(
        &self,
        request: HttpRequest,
        context: &CallContext,
    ) -> Result<HttpResponse, TransportError> {
        background()?.send(request, context).await
    }
}

/// Aborts the task when the caller stops waiting for it.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A transport whose calls run on one runtime, where its connections live
/// (see [`ReqwestTransport::served_on`]); each value owns its client.
struct Served {
    runtime: tokio::runtime::Handle,
    transport: Arc<dyn Transport>,
}

#[async_trait]
impl Transport for Served {
    async fn send(
        &self,
        request: HttpRequest,
        context: &CallContext,
    ) -> Result<HttpResponse, TransportError> {
        let here = tokio::runtime::Handle::try_current().is_ok_and(|h| h.id() == self.runtime.id());
        if here {
            return self.transport.send(request, context).await;
        }
        send_on(&self.runtime, &self.transport, request, context).await
    }
}

/// Send `request` with `transport` on `runtime`, from whichever runtime
/// the caller is on; streamed bodies are read there and handed over.
async fn send_on(
    runtime: &tokio::runtime::Handle,
    transport: &Arc<dyn Transport>,
    request: HttpRequest,
    context: &CallContext,
) -> Result<HttpResponse, TransportError> {
    let transport = transport.clone();
    let context = context.clone();
    let mut task = AbortOnDrop(runtime.spawn(async move {
        let response = transport.send(request, &context).await?;
        let body = match response.body {
            HttpBody::Full(bytes) => HttpBody::Full(bytes),
            HttpBody::Stream(stream) => HttpBody::Stream(forward(stream)),
        };
        Ok(HttpResponse { body, ..response })
    }));
    match (&mut task.0).await {
        Ok(result) => result,
        Err(e) => Err(TransportError::Other(format!("the HTTP task failed: {e}"))),
    }
}

/// Read `stream` on the current (serving) runtime and hand its chunks
/// over a channel; stops when the receiver goes away.
fn forward(mut stream: ByteStream) -> ByteStream {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, TransportError>>(16);
    tokio::spawn(async move {
        loop {
            tokio::select! {
                item = stream.next() => {
                    let Some(item) = item else { break };
                    let failed = item.is_err();
                    if tx.send(item).await.is_err() || failed {
                        break;
                    }
                }
                _ = tx.closed() => break,
            }
        }
    });
    Box::pin(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

/// An error and its sources, joined with `: `, without repeats.
fn chain(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if parts.last().is_none_or(|last| !last.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// `at + d`, saturating far in the future instead of overflowing.
fn later(at: Instant, d: Duration) -> Instant {
    at.checked_add(d)
        .or_else(|| at.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(at)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn is_event_stream(content_type: &str) -> bool {
    content_type
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("text/event-stream")
}

fn is_json(content_type: &str) -> bool {
    let ct = content_type.to_ascii_lowercase();
    let essence = ct.split(';').next().unwrap_or("").trim();
    essence == "application/json" || essence.ends_with("+json")
}

// ---------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------

/// How failed attempts are retried.
///
/// An attempt is retried when the status is 429, 500, 502, 503, 504 or 529,
/// or the connection failed before a response arrived (refused, reset,
/// closed early, connect timeout). A `x-should-retry: true|false` response
/// header overrides the status rule. The wait before the next attempt is the
/// server's hint (`retry-after-ms`, then `Retry-After` in seconds or as an
/// HTTP date), capped at [`max_retry_after`](Self::max_retry_after); without a
/// hint it is exponential backoff from [`base_delay`](Self::base_delay),
/// capped at [`max_delay`](Self::max_delay), minus up to
/// [`jitter`](Self::jitter) of itself. No retry starts when it could not finish
/// before the call timeout; streams are never retried once their body began.
///
/// ```
/// use std::time::Duration;
/// use scaffold::provider::http::RetryPolicy;
///
/// let policy = RetryPolicy::new(5)
///     .base_delay(Duration::from_millis(200))
///     .max_delay(Duration::from_secs(4));
/// assert_eq!(policy.backoff(1), Duration::from_millis(200));
/// assert_eq!(policy.backoff(3), Duration::from_millis(800));
/// assert_eq!(policy.backoff(10), Duration::from_secs(4));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = no retries).
    pub max_attempts: u32,
    /// Backoff before the first retry.
    pub base_delay: Duration,
    /// Upper bound of the exponential backoff.
    pub max_delay: Duration,
    /// Fraction (0..=1) of the backoff that may be randomly taken off it.
    pub jitter: f64,
    /// Upper bound on a server's `Retry-After` hint.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    /// 4 attempts, 500 ms base delay, 8 s max delay, 25% jitter, hints up to 60 s.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            jitter: 0.25,
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The default policy with `max_attempts` attempts in all.
    pub fn new(max_attempts: u32) -> Self {
        RetryPolicy {
            max_attempts: max_attempts.max(1),
            ..RetryPolicy::default()
        }
    }

    /// One attempt, no retries.
    pub fn none() -> Self {
        RetryPolicy::new(1)
    }

    /// Set the backoff before the first retry.
    pub fn base_delay(mut self, delay: Duration) -> Self {
        self.base_delay = delay;
        self
    }

    /// Set the upper bound of the exponential backoff.
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Set the jitter fraction (clamped to 0..=1; 0 makes delays exact).
    pub fn jitter(mut self, fraction: f64) -> Self {
        self.jitter = if fraction.is_finite() {
            fraction.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self
    }

    /// Set the upper bound on a server's `Retry-After` hint.
    pub fn max_retry_after(mut self, bound: Duration) -> Self {
        self.max_retry_after = bound;
        self
    }

    /// The backoff (without jitter) before retry number `retry` (1-based).
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1).min(31));
        self.base_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }

    /// The wait before retry number `retry`, given the server's hint.
    fn delay(&self, retry: u32, hint: Option<Duration>) -> Duration {
        if let Some(hint) = hint {
            return hint.min(self.max_retry_after);
        }
        let backoff = self.backoff(retry);
        let jitter = if self.jitter.is_finite() {
            self.jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        if jitter == 0.0 {
            return backoff;
        }
        backoff.mul_f64(1.0 - jitter * random_unit())
    }
}

/// A uniformly distributed number in `[0, 1)`, good enough for jitter.
fn random_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    hasher.write_u32(nanos);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Time limits and retries of provider calls.
///
/// ```
/// use std::time::Duration;
/// use scaffold::provider::http::{HttpConfig, RetryPolicy};
///
/// let config = HttpConfig::default()
///     .timeout(Duration::from_secs(120))
///     .idle_timeout(Duration::from_secs(30))
///     .retry(RetryPolicy::new(3));
/// assert_eq!(config.retry.max_attempts, 3);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HttpConfig {
    /// Bound on a whole call: every attempt, every backoff wait and the
    /// reading of the full (streamed) answer.
    pub timeout: Duration,
    /// Bound on the silence between two chunks of a streamed answer.
    pub idle_timeout: Duration,
    /// How failed attempts are retried.
    pub retry: RetryPolicy,
}

impl Default for HttpConfig {
    /// 10 minute call timeout, 2 minute stream idle timeout, default retries.
    fn default() -> Self {
        HttpConfig {
            timeout: Duration::from_secs(600),
            idle_timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
        }
    }
}

impl HttpConfig {
    /// Set the bound on a whole call.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Set the bound on the silence between stream chunks.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Set the retry policy.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
}

/// The wait a response asks for: `retry-after-ms` (milliseconds), else
/// `Retry-After` as seconds or as an HTTP date (relative to `now`).
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use scaffold::provider::http::parse_retry_after;
///
/// let headers = vec![("retry-after".to_string(), "2".to_string())];
/// assert_eq!(parse_retry_after(&headers, SystemTime::now()), Some(Duration::from_secs(2)));
/// ```
#[doc(hidden)]
pub fn parse_retry_after(headers: &[(String, String)], now: SystemTime) -> Option<Duration> {
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    if let Some(ms) = find("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && let Ok(d) = Duration::try_from_secs_f64(ms / 1000.0)
    {
        return Some(d);
    }
    let value = find("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Whether a failed status is worth another attempt.
fn retriable_status(status: u16, headers: &[(String, String)]) -> bool {
    let should = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("x-should-retry"))
        .map(|(_, v)| v.trim().to_ascii_lowercase());
    match should.as_deref() {
        Some("true") => true,
        Some("false") => false,
        _ => matches!(status, 429 | 500 | 502 | 503 | 504 | 529),
    }
}

/// The HTTP status an API error type stands for (used for errors that
/// arrive inside a 200 stream).
pub(crate) fn status_for_error_type(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" | "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" | "rate_limit_exceeded" | "requests" | "tokens" => 429,
        "overloaded_error" => 529,
        "timeout_error" => 504,
        _ => 500,
    }
}

/// A readable message from an error body: the `error.message` (with its type
/// and code) of OpenAI and Anthropic bodies, a bare `error` or `message`
/// string, or the start of the body itself; plus the request id if any.
pub(crate) fn error_message(body: &[u8], headers: &[(String, String)]) -> String {
    let mut message = match serde_json::from_slice::<Value>(body) {
        Ok(value) => message_from_json(&value).unwrap_or_else(|| snippet(body, 500)),
        Err(_) => snippet(body, 500),
    };
    if message.is_empty() {
        message = "(empty body)".to_string();
    }
    let request_id = headers
        .iter()
        .find(|(k, _)| {
            k.eq_ignore_ascii_case("x-request-id") || k.eq_ignore_ascii_case("request-id")
        })
        .map(|(_, v)| v.clone());
    match request_id {
        Some(id) if !id.is_empty() => format!("{message} (request id {id})"),
        _ => message,
    }
}

/// `type: message (code)` from an `{"error": {...}}` object or similar.
pub(crate) fn message_from_json(value: &Value) -> Option<String> {
    match value.get("error") {
        Some(Value::Object(err)) => {
            let text = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| Value::Object(err.clone()).to_string());
            let kind = err.get("type").and_then(Value::as_str);
            let code = err.get("code").and_then(|c| match c {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            });
            let mut out = match kind {
                Some(kind) if !kind.is_empty() => format!("{kind}: {text}"),
                _ => text,
            };
            if let Some(code) = code
                && Some(code.as_str()) != kind
            {
                out.push_str(&format!(" (code {code})"));
            }
            Some(out)
        }
        Some(Value::String(s)) => Some(s.clone()),
        _ => ["message", "detail"]
            .iter()
            .find_map(|k| value.get(*k).and_then(Value::as_str).map(str::to_owned)),
    }
}

/// The start of a body as text, for messages.
pub(crate) fn snippet(body: &[u8], max_chars: usize) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let mut out: String = text.chars().take(max_chars).collect();
    if text.chars().count() > max_chars {
        out.push('…');
    }
    out
}

/// The result of `call` with the credentials of its request (`secrets`,
/// from [`secrets_of`](super::recorder::secrets_of)), and key-shaped
/// strings, scrubbed from its error: APIs echo a rejected key back
/// ("Incorrect API key provided: sk-…"), and an error reaches signals,
/// snapshots, reports, the database and the terminal.
pub(crate) async fn without_secrets<T>(
    secrets: super::recorder::Scrubber<'static>,
    call: impl std::future::Future<Output = Result<T, ProviderError>>,
) -> Result<T, ProviderError> {
    call.await
        .map_err(|e| e.map_messages(|m| secrets.str(m).into_owned()))
}

// ---------------------------------------------------------------------------
// The client: retries, timeouts, status and content-type checks
// ---------------------------------------------------------------------------

/// Sends one provider call through a transport with the call's limits.
pub(crate) struct HttpClient<'a> {
    pub(crate) provider: &'a str,
    pub(crate) transport: &'a dyn Transport,
    pub(crate) config: &'a HttpConfig,
    /// The provider's rate limit and base URL (which API it limits).
    pub(crate) limit: Option<(&'a ProviderLimit, &'a str)>,
}

enum Expect {
    Json,
    Sse,
}

enum Success {
    Json(Bytes),
    Sse(ByteStream, Option<Permit>),
}

enum FailureKind {
    Status { status: u16, message: String },
    Connection(String),
    ConnectTimeout(u64),
    Final(ProviderError),
}

struct Failure {
    kind: FailureKind,
    retriable: bool,
    hint: Option<Duration>,
    /// Answered from a recording: its retry wait was recorded, and is
    /// counted by the playback transport rather than slept.
    played_back: bool,
}

impl Failure {
    fn fatal(error: ProviderError) -> Self {
        Failure {
            kind: FailureKind::Final(error),
            retriable: false,
            hint: None,
            played_back: false,
        }
    }
}

impl HttpClient<'_> {
    /// Send and read a whole JSON answer.
    pub(crate) async fn send_json(
        &self,
        request: HttpRequest,
        context: &CallContext,
    ) -> Result<Bytes, ProviderError> {
        match self.execute(request, context, Expect::Json).await? {
            (Success::Json(bytes), _) => Ok(bytes),
            (Success::Sse(..), _) => Err(self.protocol("expected a JSON body, got a stream")),
        }
    }

    /// Send and open a Server-Sent Events answer.
    pub(crate) async fn send_stream(
        &self,
        request: HttpRequest,
        context: &CallContext,
    ) -> Result<SseStream, ProviderError> {
        let start = Instant::now();
        let deadline = later(start, self.config.timeout);
        match self
            .execute_until(request, context, Expect::Sse, start, deadline)
            .await?
        {
            (Success::Sse(body, permit), attempts) => Ok(SseStream {
                provider: self.provider.to_string(),
                permit,
                body: Some(body),
                parser: SseParser::new(),
                queue: VecDeque::new(),
                start,
                deadline,
                idle: self.config.idle_timeout,
                events: 0,
                attempts,
                head: Vec::new(),
            }),
            (Success::Json(_), _) => {
                Err(self.protocol("expected an event stream, got a JSON body"))
            }
        }
    }

    fn protocol(&self, message: impl Into<String>) -> ProviderError {
        ProviderError::Protocol {
            provider: self.provider.to_string(),
            message: message.into(),
        }
    }

    async fn execute(
        &self,
        request: HttpRequest,
        context: &CallContext,
        expect: Expect,
    ) -> Result<(Success, u32), ProviderError> {
        let start = Instant::now();
        let deadline = later(start, self.config.timeout);
        self.execute_until(request, context, expect, start, deadline)
            .await
    }

    async fn execute_until(
        &self,
        request: HttpRequest,
        context: &CallContext,
        expect: Expect,
        start: Instant,
        deadline: Instant,
    ) -> Result<(Success, u32), ProviderError> {
        let policy = &self.config.retry;
        let max_attempts = policy.max_attempts.max(1);
        let limiter = self
            .limit
            .and_then(|(limit, base_url)| limit.resolve(self.provider, base_url, context));
        let estimate = match &limiter {
            Some(l) if l.counts_tokens() => estimate_tokens(&request),
            _ => 0,
        };
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            context.attempts.set(attempt);
            let this_attempt = CallContext {
                attempt: attempt - 1,
                ..context.clone()
            };
            // The wait for the limiter counts against the call's timeout.
            let permit = match &limiter {
                Some(limiter) => {
                    match tokio::time::timeout_at(deadline, limiter.acquire(estimate)).await {
                        Ok(permit) => Some(permit),
                        Err(_) => return Err(self.timeout(start, "total")),
                    }
                }
                None => None,
            };
            let failure = match self
                .attempt(request.clone(), &this_attempt, &expect, start, deadline)
                .await
            {
                Ok(success) => return Ok((settled(success, permit), attempt)),
                Err(failure) => failure,
            };
            // A 429 slows the API down for every caller, and its wait is
            // the limiter's pause rather than this call's own sleep.
            let delay = policy.delay(attempt, failure.hint);
            let throttled = match (&permit, &failure.kind) {
                (Some(permit), FailureKind::Status { status: 429, .. }) => {
                    permit.throttled(delay);
                    true
                }
                _ => false,
            };
            drop(permit);
            if !failure.retriable || attempt >= max_attempts {
                return Err(self.finish(failure.kind, attempt, None));
            }
            // A played-back failure was retried when it was recorded (its
            // next attempt is recorded too): retry at once, the recorded
            // wait counted by the playback transport, with no real time and
            // no random jitter in the decision.
            if failure.played_back {
                continue;
            }
            if later(Instant::now(), delay) >= deadline {
                let note = format!(
                    "not retried: waiting {} ms would pass the {} ms call timeout",
                    millis(delay),
                    millis(self.config.timeout)
                );
                return Err(self.finish(failure.kind, attempt, Some(note)));
            }
            if !throttled {
                tokio::time::sleep(delay).await;
            }
        }
    }

    fn finish(&self, kind: FailureKind, attempts: u32, note: Option<String>) -> ProviderError {
        let provider = self.provider.to_string();
        let decorate = |message: String| {
            let mut message = message;
            if attempts > 1 {
                message.push_str(&format!(" (after {attempts} attempts)"));
            }
            if let Some(note) = &note {
                message.push_str(&format!(" ({note})"));
            }
            message
        };
        match kind {
            FailureKind::Status {
                status: 429,
                message,
            } => ProviderError::RateLimited {
                provider,
                attempts,
                message: match &note {
                    Some(note) => format!("{message} ({note})"),
                    None => message,
                },
            },
            FailureKind::Status { status, message } => ProviderError::Http {
                provider,
                status,
                message: decorate(message),
            },
            FailureKind::Connection(message) => ProviderError::Connection {
                provider,
                message: decorate(message),
            },
            FailureKind::ConnectTimeout(after_ms) => ProviderError::Timeout {
                provider,
                after_ms,
                phase: "connect".to_string(),
            },
            FailureKind::Final(error) => error,
        }
    }

    fn timeout(&self, start: Instant, phase: &str) -> ProviderError {
        ProviderError::Timeout {
            provider: self.provider.to_string(),
            after_ms: millis(start.elapsed()),
            phase: phase.to_string(),
        }
    }

    async fn attempt(
        &self,
        request: HttpRequest,
        context: &CallContext,
        expect: &Expect,
        start: Instant,
        deadline: Instant,
    ) -> Result<Success, Failure> {
        // A 404 names what it called: `/v1/v1/messages` behind a proxy is
        // an easy mistake to make and a hard one to see.
        let url = request.url.clone();
        // A stream's headers come at once (the body carries the wait): a
        // server silent for the idle timeout will not answer, so that
        // bounds the wait for them too, without a retry.
        let headers_by = match expect {
            Expect::Sse => later(Instant::now(), self.config.idle_timeout).min(deadline),
            Expect::Json => deadline,
        };
        let sent = tokio::time::timeout_at(headers_by, self.transport.send(request, context)).await;
        let response = match sent {
            Err(_) if headers_by < deadline => {
                return Err(Failure::fatal(ProviderError::Timeout {
                    provider: self.provider.to_string(),
                    after_ms: millis(self.config.idle_timeout),
                    phase: "waiting for the stream's response headers".to_string(),
                }));
            }
            Err(_) => return Err(Failure::fatal(self.timeout(start, "total"))),
            Ok(Err(error)) => return Err(self.transport_failure(error, start)),
            Ok(Ok(response)) => response,
        };
        if !(200..300).contains(&response.status) {
            return Err(self.status_failure(&url, response, (start, deadline)).await);
        }
        let content_type = response.header("content-type").map(str::to_string);
        let body = response.body;
        match expect {
            Expect::Json => self.json(content_type, body, (start, deadline)).await,
            Expect::Sse => {
                if let Some(ct) = &content_type
                    && !is_event_stream(ct)
                {
                    let body = collect(body, deadline, MAX_ERROR_BODY, true)
                        .await
                        .unwrap_or_default();
                    return Err(Failure::fatal(self.protocol(format!(
                        "expected an event stream (text/event-stream), got content type {ct:?}; body starts with: {}",
                        snippet(&body, 200)
                    ))));
                }
                let stream = match body {
                    HttpBody::Stream(stream) => stream,
                    HttpBody::Full(bytes) => {
                        Box::pin(futures_util::stream::iter([Ok::<_, TransportError>(bytes)]))
                    }
                };
                Ok(Success::Sse(stream, None))
            }
        }
    }

    /// The failure of an answer with a status other than 2xx, from `url`,
    /// its body read by `deadline` (the call began at `start`).
    async fn status_failure(
        &self,
        url: &str,
        response: HttpResponse,
        (start, deadline): (Instant, Instant),
    ) -> Failure {
        let HttpResponse {
            status,
            headers,
            body,
        } = response;
        let body = match collect(body, deadline, MAX_ERROR_BODY, true).await {
            Ok(bytes) => bytes,
            Err(CollectError::Timeout) => return Failure::fatal(self.timeout(start, "total")),
            Err(CollectError::Transport(e)) => Bytes::from(format!("(body unreadable: {e})")),
            Err(CollectError::TooLarge) => Bytes::new(),
        };
        let mut message = error_message(&body, &headers);
        if status == 404 {
            // Without its query: a key there must not reach the message.
            let called = url.split('?').next().unwrap_or_default();
            message.push_str(&format!(" (the URL called: {called})"));
        }
        Failure {
            kind: FailureKind::Status { status, message },
            retriable: retriable_status(status, &headers),
            hint: parse_retry_after(&headers, SystemTime::now()),
            played_back: headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case(PLAYED_BACK_HEADER)),
        }
    }

    /// A successful answer's JSON body, read by `deadline`.
    async fn json(
        &self,
        content_type: Option<String>,
        body: HttpBody,
        (start, deadline): (Instant, Instant),
    ) -> Result<Success, Failure> {
        if let Some(ct) = &content_type
            && !is_json(ct)
        {
            let body = collect(body, deadline, MAX_ERROR_BODY, true)
                .await
                .unwrap_or_default();
            return Err(Failure::fatal(self.protocol(format!(
                "expected a JSON response (application/json), got content type {ct:?}; body starts with: {}",
                snippet(&body, 200)
            ))));
        }
        match collect(body, deadline, MAX_JSON_BODY, false).await {
            Ok(bytes) => Ok(Success::Json(bytes)),
            Err(CollectError::Timeout) => Err(Failure::fatal(self.timeout(start, "total"))),
            Err(CollectError::TooLarge) => Err(Failure::fatal(self.protocol(format!(
                "the response body is larger than {MAX_JSON_BODY} bytes"
            )))),
            Err(CollectError::Transport(e)) => Err(self.transport_failure(e, start)),
        }
    }

    fn transport_failure(&self, error: TransportError, start: Instant) -> Failure {
        match error {
            TransportError::ConnectTimeout(ms) => Failure {
                kind: FailureKind::ConnectTimeout(ms),
                retriable: true,
                hint: None,
                played_back: false,
            },
            TransportError::Timeout(_) => Failure::fatal(self.timeout(start, "total")),
            TransportError::Connection(message) => Failure {
                kind: FailureKind::Connection(message),
                retriable: true,
                hint: None,
                played_back: false,
            },
            TransportError::Playback(message) => {
                Failure::fatal(ProviderError::Playback { message })
            }
            TransportError::Other(message) => Failure::fatal(ProviderError::Connection {
                provider: self.provider.to_string(),
                message,
            }),
        }
    }
}

/// A success with its limiter permit: a JSON answer reports its usage and
/// lets the permit go; a stream keeps it until it ends.
fn settled(success: Success, permit: Option<Permit>) -> Success {
    let Some(mut permit) = permit else {
        return success;
    };
    permit.succeeded();
    match success {
        Success::Json(bytes) => {
            if permit.limiter().counts_tokens()
                && let Ok(answer) = serde_json::from_slice::<Value>(&bytes)
            {
                permit.observe_usage(&answer);
            }
            Success::Json(bytes)
        }
        Success::Sse(stream, _) => Success::Sse(stream, Some(permit)),
    }
}

enum CollectError {
    Timeout,
    TooLarge,
    Transport(TransportError),
}

/// Read a whole body before `deadline`. With `truncate`, a body over `limit`
/// is cut there instead of failing.
async fn collect(
    body: HttpBody,
    deadline: Instant,
    limit: usize,
    truncate: bool,
) -> Result<Bytes, CollectError> {
    match body {
        HttpBody::Full(bytes) if bytes.len() > limit && truncate => Ok(bytes.slice(..limit)),
        HttpBody::Full(bytes) if bytes.len() > limit => Err(CollectError::TooLarge),
        HttpBody::Full(bytes) => Ok(bytes),
        HttpBody::Stream(mut stream) => {
            let mut buf = BytesMut::new();
            loop {
                match tokio::time::timeout_at(deadline, stream.next()).await {
                    Err(_) => return Err(CollectError::Timeout),
                    Ok(None) => return Ok(buf.freeze()),
                    Ok(Some(Err(e))) => return Err(CollectError::Transport(e)),
                    Ok(Some(Ok(chunk))) => {
                        if buf.len() + chunk.len() > limit {
                            if truncate {
                                let room = limit - buf.len();
                                buf.extend_from_slice(&chunk[..room]);
                                return Ok(buf.freeze());
                            }
                            return Err(CollectError::TooLarge);
                        }
                        buf.extend_from_slice(&chunk);
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// SSE
// ---------------------------------------------------------------------------

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq, Eq)]
#[doc(hidden)]
pub struct SseEvent {
    /// The `event:` field; `None` for the default `message` type.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The last `id:` seen, if any.
    pub id: Option<String>,
}

/// Why an event stream could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[doc(hidden)]
pub enum SseError {
    /// A line was not valid UTF-8.
    #[error("an event stream line is not valid UTF-8")]
    InvalidUtf8,
    /// A line or an event grew past the size limit.
    #[error("an event stream line or event is longer than {0} bytes")]
    TooLong(usize),
    /// The stream ended in the middle of an event.
    #[error("the event stream ended in the middle of an event")]
    Incomplete,
}

/// An incremental Server-Sent Events parser, per the WHATWG event stream
/// format: feed it chunks split anywhere, get whole events back.
///
/// ```
/// use scaffold::provider::http::SseParser;
///
/// let mut parser = SseParser::new();
/// let mut events = parser.feed(b"event: ping\r\ndata: {\"a\"").unwrap();
/// assert!(events.is_empty());
/// events.extend(parser.feed(b":1}\r\n\r\n: a comment\n").unwrap());
/// assert_eq!(events[0].event.as_deref(), Some("ping"));
/// assert_eq!(events[0].data, "{\"a\":1}");
/// assert!(parser.finish().is_ok());
/// ```
#[derive(Debug, Default)]
#[doc(hidden)]
pub struct SseParser {
    line: Vec<u8>,
    pending_cr: bool,
    first_line: bool,
    event: Option<String>,
    data: String,
    id: Option<String>,
    seen_any: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        SseParser {
            first_line: true,
            ..SseParser::default()
        }
    }

    /// Feed the next chunk; returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut out = Vec::new();
        let mut rest = chunk;
        if !rest.is_empty() {
            self.seen_any = true;
        }
        if self.pending_cr && !rest.is_empty() {
            self.pending_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.push_bytes(&rest[..pos])?;
            let was_cr = rest[pos] == b'\r';
            rest = &rest[pos + 1..];
            if was_cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.pending_cr = true,
                    Some(_) => {}
                }
            }
            self.process_line(&mut out)?;
        }
        self.push_bytes(rest)?;
        Ok(out)
    }

    /// Declare the end of the stream: an error if it stopped inside an event.
    pub fn finish(&mut self) -> Result<(), SseError> {
        if !self.line.is_empty() || !self.data.is_empty() || self.event.is_some() {
            self.line.clear();
            self.data.clear();
            self.event = None;
            return Err(SseError::Incomplete);
        }
        Ok(())
    }

    /// Whether any byte has been fed.
    pub fn started(&self) -> bool {
        self.seen_any
    }

    fn push_bytes(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len() + bytes.len() > MAX_SSE_EVENT {
            return Err(SseError::TooLong(MAX_SSE_EVENT));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn process_line(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut line = std::mem::take(&mut self.line);
        let result = self.handle_line(&line, out);
        line.clear();
        self.line = line;
        result
    }

    fn handle_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut text = std::str::from_utf8(line).map_err(|_| SseError::InvalidUtf8)?;
        if self.first_line {
            self.first_line = false;
            text = text.strip_prefix('\u{feff}').unwrap_or(text);
        }
        if text.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if text.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match text.find(':') {
            Some(i) => {
                let value = &text[i + 1..];
                (&text[..i], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (text, ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => {
                if self.data.len() + value.len() + 1 > MAX_SSE_EVENT {
                    return Err(SseError::TooLong(MAX_SSE_EVENT));
                }
                self.data.push_str(value);
                self.data.push('\n');
            }
            "id" if !value.contains('\0') => self.id = Some(value.to_string()),
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if self.data.is_empty() {
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        out.push(SseEvent {
            event: event.filter(|e| !e.is_empty()),
            data,
            id: self.id.clone(),
        });
    }
}

/// A streamed answer being read event by event within the call's limits.
pub(crate) struct SseStream {
    provider: String,
    /// The limiter's permit: the stream is in flight until it ends, and its
    /// usage events settle its tokens.
    permit: Option<Permit>,
    body: Option<ByteStream>,
    parser: SseParser,
    queue: VecDeque<SseEvent>,
    start: Instant,
    deadline: Instant,
    idle: Duration,
    events: usize,
    attempts: u32,
    /// The body's first bytes, shown when it holds no event at all.
    head: Vec<u8>,
}

/// How much of a stream's beginning is kept for error messages.
const STREAM_HEAD: usize = 200;

impl SseStream {
    /// Attempts it took to open the stream.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The next event, `None` at a clean end of the stream.
    pub(crate) async fn next_event(&mut self) -> Result<Option<SseEvent>, ProviderError> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                self.events += 1;
                self.observe_usage(&event);
                return Ok(Some(event));
            }
            let Some(body) = self.body.as_mut() else {
                self.permit = None;
                return Ok(None);
            };
            let now = Instant::now();
            if now >= self.deadline {
                self.body = None;
                return Err(self.timeout("total"));
            }
            let idle_until = later(now, self.idle);
            let (until, phase) = if idle_until < self.deadline {
                (idle_until, "stream idle")
            } else {
                (self.deadline, "total")
            };
            match tokio::time::timeout_at(until, body.next()).await {
                Err(_) => {
                    self.body = None;
                    return Err(if phase == "stream idle" {
                        ProviderError::Timeout {
                            provider: self.provider.clone(),
                            after_ms: millis(self.idle),
                            phase: phase.to_string(),
                        }
                    } else {
                        self.timeout(phase)
                    });
                }
                Ok(None) => {
                    self.body = None;
                    if self.parser.finish().is_err() {
                        return Err(self.protocol(format!(
                            "the event stream was truncated: the connection closed in the middle of an event (after {} complete events)",
                            self.events
                        )));
                    }
                    return Ok(None);
                }
                Ok(Some(Err(error))) => {
                    self.body = None;
                    return Err(self.protocol(format!(
                        "the event stream was truncated: it broke off after {} complete events ({error})",
                        self.events
                    )));
                }
                Ok(Some(Ok(chunk))) => {
                    self.keep_head(&chunk);
                    match self.parser.feed(&chunk) {
                        Ok(events) => self.queue.extend(events),
                        Err(error) => {
                            self.body = None;
                            return Err(self.protocol(format!("unreadable event stream: {error}")));
                        }
                    }
                }
            }
        }
    }

    /// Settle the limiter's token count with a usage the event reports.
    fn observe_usage(&mut self, event: &SseEvent) {
        let Some(permit) = self.permit.as_mut() else {
            return;
        };
        if permit.limiter().counts_tokens()
            && event.data.contains("\"usage\"")
            && let Ok(data) = serde_json::from_str::<Value>(&event.data)
        {
            permit.observe_usage(&data);
        }
    }

    /// Keep the body's first bytes for [`SseStream::protocol`].
    fn keep_head(&mut self, chunk: &[u8]) {
        let room = STREAM_HEAD.saturating_sub(self.head.len());
        self.head.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }

    /// A protocol error for this stream; before its first event, with the
    /// body's beginning (an HTML page from a proxy, say).
    pub(crate) fn protocol(&self, message: impl Into<String>) -> ProviderError {
        let mut message = message.into();
        if self.events == 0 && self.queue.is_empty() && !self.head.is_empty() {
            message.push_str(&format!(
                "; body starts with: {}",
                snippet(&self.head, STREAM_HEAD)
            ));
        }
        ProviderError::Protocol {
            provider: self.provider.clone(),
            message,
        }
    }

    /// Events read so far.
    pub(crate) fn events_read(&self) -> usize {
        self.events
    }

    fn timeout(&self, phase: &str) -> ProviderError {
        ProviderError::Timeout {
            provider: self.provider.clone(),
            after_ms: millis(self.start.elapsed()),
            phase: phase.to_string(),
        }
    }
}

/// Parse a JSON body into `T`, with a clear message on failure.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    provider: &str,
    what: &str,
    body: &[u8],
) -> Result<T, ProviderError> {
    serde_json::from_slice(body).map_err(|e| ProviderError::Protocol {
        provider: provider.to_string(),
        message: format!(
            "malformed JSON in the {what}: {e}; body starts with: {}",
            snippet(body, 200)
        ),
    })
}

/// Parse the JSON data of a stream event into `T`, with a clear message on failure.
pub(crate) fn parse_event<T: serde::de::DeserializeOwned>(
    provider: &str,
    event: &SseEvent,
    index: usize,
) -> Result<T, ProviderError> {
    serde_json::from_str(&event.data).map_err(|e| ProviderError::Protocol {
        provider: provider.to_string(),
        message: format!(
            "malformed JSON in stream event {index}{}: {e}; data starts with: {}",
            event
                .event
                .as_deref()
                .map(|name| format!(" ({name})"))
                .unwrap_or_default(),
            snippet(event.data.as_bytes(), 200)
        ),
    })
}

/// `path` appended to the path of `base` (trailing slashes dropped); a
/// query of `base` (an `api-version`, a key a proxy wants) stays at the end.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    match base.split_once('?') {
        Some((base, query)) if !query.is_empty() => {
            format!("{}{path}?{query}", base.trim_end_matches('/'))
        }
        Some((base, _)) => format!("{}{path}", base.trim_end_matches('/')),
        None => format!("{}{path}", base.trim_end_matches('/')),
    }
}

/// A name made of `[A-Za-z0-9_-]`, 1 to 64 characters (as both APIs require
/// for tool and schema names).
pub(crate) fn api_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if out.is_empty() {
        out.push_str("output");
    }
    out
}

/// The value of environment variable `name`, if set and not blank.
pub(crate) fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// The transport a provider sends through: its own if it has one, else the
/// task's ambient transport (the recorder, in eval cells), else the shared
/// reqwest client.
pub(crate) fn resolve_transport(explicit: &Option<Arc<dyn Transport>>) -> Arc<dyn Transport> {
    explicit
        .clone()
        .or_else(super::transport::ambient_transport)
        .unwrap_or_else(ReqwestTransport::shared)
}

/// What an HTTP provider is configured with, shared by the OpenAI and
/// Anthropic providers: where it sends, with which key and extra headers,
/// through which transport, with which timeouts, retries and rate limit.
/// Their builder methods are written once, by [`http_provider_builder!`].
#[derive(Clone)]
pub(crate) struct HttpProvider {
    /// The provider's name, in errors and rate limits.
    pub(crate) name: &'static str,
    pub(crate) base_url: String,
    pub(crate) api_key: Option<String>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) transport: Option<Arc<dyn Transport>>,
    pub(crate) config: HttpConfig,
    pub(crate) limit: ProviderLimit,
    /// Where the default base URL and the API key come from.
    env: ProviderEnv,
}

/// The environment variables and default base URL of a provider.
#[derive(Clone, Copy)]
pub(crate) struct ProviderEnv {
    /// The variable overriding the base URL (e.g. `OPENAI_BASE_URL`).
    pub(crate) base_url: &'static str,
    /// The base URL without it.
    pub(crate) default_base_url: &'static str,
    /// The variable holding the API key (e.g. `OPENAI_API_KEY`).
    pub(crate) api_key: &'static str,
}

impl HttpProvider {
    /// Provider `name`'s configuration: base URL and API key from `env`'s
    /// variables when set, the default HTTP settings, no rate limit.
    pub(crate) fn from_env(name: &'static str, env: ProviderEnv) -> HttpProvider {
        HttpProvider {
            name,
            base_url: env_nonempty(env.base_url)
                .map(|u| u.trim_end_matches('/').to_string())
                .unwrap_or_else(|| env.default_base_url.to_string()),
            api_key: env_nonempty(env.api_key),
            headers: Vec::new(),
            transport: None,
            config: HttpConfig::default(),
            limit: ProviderLimit::default(),
            env,
        }
    }

    /// Send to `url` (a trailing `/` dropped).
    pub(crate) fn set_base_url(&mut self, url: String) {
        self.base_url = url.trim_end_matches('/').to_string();
    }

    /// Limit the calls to this provider's base URL.
    pub(crate) fn set_rate_limit(&mut self, limit: RateLimit) {
        self.limit = ProviderLimit::new(self.name, &self.base_url, limit);
    }

    /// The API key's variable when there is no key for the provider's own
    /// API (a local or compatible server may need none).
    pub(crate) fn missing_key(&self) -> Option<&'static str> {
        (self.api_key.is_none() && self.base_url == self.env.default_base_url)
            .then_some(self.env.api_key)
    }

    /// The transport a call sends through (see [`resolve_transport`]).
    pub(crate) fn resolved_transport(&self) -> Arc<dyn Transport> {
        resolve_transport(&self.transport)
    }

    /// The client sending a call through `transport` with this configuration.
    pub(crate) fn client<'a>(&'a self, transport: &'a dyn Transport) -> HttpClient<'a> {
        HttpClient {
            provider: self.name,
            transport,
            config: &self.config,
            limit: Some((&self.limit, &self.base_url)),
        }
    }

    /// A JSON `POST` of `body` to `path` under the base URL, with
    /// `headers` (the provider's own: version, key), then the extra ones.
    pub(crate) fn post(
        &self,
        path: &str,
        mut headers: Vec<(String, String)>,
        body: Value,
    ) -> HttpRequest {
        headers.insert(
            0,
            ("content-type".to_string(), "application/json".to_string()),
        );
        headers.extend(self.headers.iter().cloned());
        HttpRequest {
            method: "POST".to_string(),
            url: join_url(&self.base_url, path),
            headers,
            body: Some(body),
        }
    }

    /// Add the fields every provider shows to `f` (the key redacted).
    pub(crate) fn debug_fields(&self, f: &mut std::fmt::DebugStruct<'_, '_>) {
        f.field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("config", &self.config);
    }
}

/// The builder methods of a provider with an [`HttpProvider`] in its field
/// `http`, as inherent methods (users need no trait in scope). The docs of
/// `base_url`, `api_key` and `header` differ per API and are given.
macro_rules! http_provider_builder {
    (base_url: $base_url:literal, api_key: $api_key:literal, header: $header:literal $(,)?) => {
        #[doc = $base_url]
        pub fn base_url(mut self, url: impl Into<String>) -> Self {
            self.http.set_base_url(url.into());
            self
        }

        #[doc = $api_key]
        pub fn api_key(mut self, key: impl Into<String>) -> Self {
            self.http.api_key = Some(key.into());
            self
        }

        #[doc = $header]
        pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            self.http.headers.push((name.into(), value.into()));
            self
        }

        /// Send requests through `transport` (recorder, playback, custom client).
        pub fn transport(mut self, transport: Arc<dyn Transport>) -> Self {
            self.http.transport = Some(transport);
            self
        }

        /// Set the retry policy.
        pub fn retry(mut self, retry: RetryPolicy) -> Self {
            self.http.config.retry = retry;
            self
        }

        /// Set the bound on a whole call, retries included.
        pub fn timeout(mut self, timeout: Duration) -> Self {
            self.http.config.timeout = timeout;
            self
        }

        /// Set the bound on the silence between two chunks of a stream.
        pub fn idle_timeout(mut self, timeout: Duration) -> Self {
            self.http.config.idle_timeout = timeout;
            self
        }

        /// Set timeouts and retries at once.
        pub fn http_config(mut self, config: HttpConfig) -> Self {
            self.http.config = config;
            self
        }

        /// Limit the calls to this API: requests and tokens per window, calls
        /// in flight (see [`RateLimit`]). Every provider at the same base URL
        /// shares one budget in a run; outside a run, this provider and its
        /// clones share it.
        pub fn rate_limit(mut self, limit: RateLimit) -> Self {
            self.http.set_rate_limit(limit);
            self
        }

        /// The base URL requests go to.
        pub fn endpoint(&self) -> &str {
            &self.http.base_url
        }
    };
}
pub(crate) use http_provider_builder;

#[cfg(test)]
mod tests {
    #[test]
    fn a_base_url_keeps_its_query_at_the_end() {
        use super::join_url;
        let cases = [
            ("http://h/v1", "http://h/v1/chat/completions"),
            ("http://h/v1/", "http://h/v1/chat/completions"),
            (
                "http://h/v1?key=k&x=1",
                "http://h/v1/chat/completions?key=k&x=1",
            ),
            (
                "http://h/v1/?api-version=2",
                "http://h/v1/chat/completions?api-version=2",
            ),
            ("http://h/v1?", "http://h/v1/chat/completions"),
        ];
        for (base, joined) in cases {
            assert_eq!(join_url(base, "/chat/completions"), joined, "{base}");
        }
    }

    use super::*;

    fn feed_all(chunks: &[&[u8]]) -> (Vec<SseEvent>, Result<(), SseError>) {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        for chunk in chunks {
            events.extend(parser.feed(chunk).expect("parse"));
        }
        let end = parser.finish();
        (events, end)
    }

    #[test]
    fn sse_every_split_point_gives_the_same_events() {
        let stream: &[u8] = b"\xEF\xBB\xBFevent: a\r\ndata: x\r\ndata:  y\r\n\r\n: c\rdata: \xC3\xA9\r\rid: 7\ndata\n\n";
        let (whole, end) = feed_all(&[stream]);
        assert!(end.is_ok());
        assert_eq!(
            whole,
            vec![
                SseEvent {
                    event: Some("a".into()),
                    data: "x\n y".into(),
                    id: None
                },
                SseEvent {
                    event: None,
                    data: "é".into(),
                    id: None
                },
                SseEvent {
                    event: None,
                    data: "".into(),
                    id: Some("7".into())
                },
            ]
        );
        for i in 0..stream.len() {
            for j in i..stream.len() {
                let (events, end) = feed_all(&[&stream[..i], &stream[i..j], &stream[j..]]);
                assert!(end.is_ok(), "split {i} {j}");
                assert_eq!(events, whole, "split {i} {j}");
            }
        }
    }

    #[test]
    fn sse_incomplete_event_is_reported() {
        let (events, end) = feed_all(&[b"data: 1\n\ndata: {\"partial"]);
        assert_eq!(events.len(), 1);
        assert_eq!(end, Err(SseError::Incomplete));
        let (_, end) = feed_all(&[b"data: 1\n\ndata: 2\n"]);
        assert_eq!(end, Err(SseError::Incomplete));
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_400);
        let h = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        assert_eq!(
            parse_retry_after(&h("Retry-After", "3"), now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            parse_retry_after(&h("retry-after-ms", "250"), now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            parse_retry_after(&h("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"), now),
            Some(Duration::from_secs(1_445_412_480 - 1_445_412_400))
        );
        assert_eq!(
            parse_retry_after(&h("retry-after", "Sat, 21 Oct 2000 07:28:00 GMT"), now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after(&h("retry-after", "soon"), now), None);
        assert_eq!(parse_retry_after(&h("retry-after", "-1"), now), None);
    }

    #[test]
    fn error_messages() {
        let openai = br#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
        assert_eq!(
            error_message(openai, &[("x-request-id".into(), "req_1".into())]),
            "requests: Rate limit reached (code rate_limit_exceeded) (request id req_1)"
        );
        let anthropic =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            error_message(anthropic, &[]),
            "overloaded_error: Overloaded"
        );
        assert_eq!(
            error_message(br#"{"error":"model not found"}"#, &[]),
            "model not found"
        );
        assert_eq!(
            error_message(b"<html>bad gateway</html>", &[]),
            "<html>bad gateway</html>"
        );
        assert_eq!(error_message(b"", &[]), "(empty body)");
    }

    #[test]
    fn backoff_is_bounded() {
        let p = RetryPolicy::default().jitter(0.0);
        assert_eq!(p.delay(1, None), Duration::from_millis(500));
        assert_eq!(p.delay(40, None), Duration::from_secs(8));
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(3600))),
            Duration::from_secs(60)
        );
        let nan = RetryPolicy {
            jitter: f64::NAN,
            ..RetryPolicy::default()
        };
        assert_eq!(nan.delay(1, None), Duration::from_millis(500));
        let j = RetryPolicy::default();
        for _ in 0..100 {
            let d = j.delay(2, None);
            assert!(d <= Duration::from_secs(1) && d >= Duration::from_millis(750));
        }
    }

    #[test]
    fn api_names() {
        assert_eq!(api_name("my schema.v1"), "my_schema_v1");
        assert_eq!(api_name(""), "output");
        assert_eq!(api_name(&"x".repeat(100)).len(), 64);
    }

    /// Answers with the name of the runtime it ran on, and counts calls.
    struct Probe(std::sync::Mutex<Vec<tokio::runtime::Id>>);

    #[async_trait]
    impl Transport for Probe {
        async fn send(
            &self,
            _request: HttpRequest,
            _context: &CallContext,
        ) -> Result<HttpResponse, TransportError> {
            let id = tokio::runtime::Handle::current().id();
            self.0.lock().unwrap_or_else(|e| e.into_inner()).push(id);
            Ok(HttpResponse {
                status: 200,
                headers: Vec::new(),
                body: HttpBody::Full(Bytes::new()),
            })
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime")
    }

    fn get() -> HttpRequest {
        HttpRequest {
            method: "GET".into(),
            url: "http://127.0.0.1:9/".into(),
            headers: Vec::new(),
            body: None,
        }
    }

    #[test]
    fn two_served_transports_share_nothing() {
        let (a, b) = (runtime(), runtime());
        let (probe_a, probe_b) = (
            Arc::new(Probe(Default::default())),
            Arc::new(Probe(Default::default())),
        );
        let served = |rt: &tokio::runtime::Runtime, probe: &Arc<Probe>| Served {
            runtime: rt.handle().clone(),
            transport: probe.clone(),
        };
        let (served_a, served_b) = (served(&a, &probe_a), served(&b, &probe_b));
        let caller = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let context = CallContext::default();
        // From another runtime, each call runs on its own value's runtime,
        // whichever was made last.
        caller.block_on(async {
            assert!(served_b.send(get(), &context).await.is_ok());
            assert!(served_a.send(get(), &context).await.is_ok());
        });
        // From inside its runtime, on the caller's task.
        a.block_on(async { assert!(served_a.send(get(), &context).await.is_ok()) });
        let ran_on = |probe: &Probe| probe.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        assert_eq!(ran_on(&probe_a), vec![a.handle().id(); 2]);
        assert_eq!(ran_on(&probe_b), vec![b.handle().id()]);
        // Dropping one leaves the other serving.
        drop((served_a, a));
        caller.block_on(async { assert!(served_b.send(get(), &context).await.is_ok()) });
        assert_eq!(ran_on(&probe_a).len(), 2);
        assert_eq!(ran_on(&probe_b), vec![b.handle().id(); 2]);
    }

    /// A real client served on a runtime, called from it, from other
    /// runtimes and from threads blocking on it, whole and streamed.
    #[test]
    fn a_served_client_answers_from_any_runtime() {
        use wiremock::matchers::path;
        use wiremock::{Mock, MockServer, ResponseTemplate};

        let server_runtime = runtime();
        let server = server_runtime.block_on(async {
            let server = MockServer::start().await;
            let whole = ResponseTemplate::new(200).set_body_raw("whole", "application/json");
            let sse = "data: one\n\ndata: two\n\n";
            let stream = ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream");
            Mock::given(path("/whole"))
                .respond_with(whole)
                .mount(&server)
                .await;
            Mock::given(path("/stream"))
                .respond_with(stream)
                .mount(&server)
                .await;
            server
        });
        let served = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let transport = ReqwestTransport::new()
            .expect("client")
            .served_on(served.handle().clone());
        let ask = |stream: bool| {
            let (transport, uri) = (transport.clone(), server.uri());
            async move {
                let route = if stream { "stream" } else { "whole" };
                let request = HttpRequest {
                    url: format!("{uri}/{route}"),
                    ..get()
                };
                let response = transport.send(request, &CallContext::default()).await;
                let mut body = Vec::new();
                match response.expect("an answer").body {
                    HttpBody::Full(bytes) => body.extend_from_slice(&bytes),
                    HttpBody::Stream(mut chunks) => {
                        assert!(stream, "only the event stream is streamed");
                        while let Some(chunk) = chunks.next().await {
                            body.extend_from_slice(&chunk.expect("a chunk"));
                        }
                    }
                }
                let expected = if stream {
                    "data: one\n\ndata: two\n\n"
                } else {
                    "whole"
                };
                assert_eq!(String::from_utf8_lossy(&body), expected);
            }
        };
        served.block_on(ask(false));
        served.block_on(ask(true));
        for i in 0..2 {
            let other = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            other.block_on(ask(i == 1));
        }
        std::thread::scope(|scope| {
            for i in 0..8 {
                let (served, ask) = (&served, &ask);
                scope.spawn(move || served.block_on(ask(i % 2 == 0)));
            }
        });
    }
}
