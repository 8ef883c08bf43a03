//! The fake provider server: a tokio TCP listener speaking minimal HTTP/1.1.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::payloads::{self, Content, Message, ToolUse};
use super::router::{self, Api, Rule};
use super::timing::SimulatedTiming;

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 64 * 1024 * 1024;

/// What the server does with one request, chosen by arrival order.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Fault {
    /// Answer normally.
    #[default]
    None,
    /// Wait this long (on top of the server latency), then answer normally.
    Delay(Duration),
    /// 429 with the API's rate-limit error body; with `retry_after`, the
    /// `retry-after-ms` header (milliseconds) and `retry-after` (whole
    /// seconds, rounded up).
    RateLimited {
        /// The wait to ask for.
        retry_after: Option<Duration>,
    },
    /// 500 with the API's server-error body.
    ServerError,
    /// 529 with Anthropic's `overloaded_error` body (OpenAI routes get it too).
    Overloaded,
    /// Any status, extra headers and body (e.g. `Retry-After` as an HTTP date).
    Status {
        /// The status code.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body, sent as `application/json`.
        body: String,
    },
    /// Read the request and never answer (the client must time out).
    Hang,
    /// Read the request and reset the connection (TCP RST).
    Reset,
    /// 200 with a body (or, for streams, an event) that is not valid JSON.
    MalformedJson,
    /// Send this many whole stream events, then half of the next one, then
    /// close the connection. Non-streaming requests get half of their body.
    TruncatedStream {
        /// Whole events sent before the cut.
        after_events: usize,
    },
    /// Send this many whole stream events (or half the body), then go silent
    /// with the connection open.
    StalledStream {
        /// Whole events sent before the stall.
        after_events: usize,
    },
    /// 200 with `text/html` instead of JSON or an event stream.
    WrongContentType,
}

/// A tool call the fake model makes.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeToolCall {
    /// The tool's name.
    pub name: String,
    /// Its arguments.
    pub arguments: Value,
}

/// A scripted answer, served before the default echo.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum FakeReply {
    /// `Echo: <last message>`, or a schema instance when a schema was asked for.
    #[default]
    Echo,
    /// This text.
    Text(String),
    /// These tool calls.
    ToolCalls(Vec<FakeToolCall>),
}

impl FakeReply {
    /// A text answer.
    pub fn text(text: impl Into<String>) -> Self {
        FakeReply::Text(text.into())
    }

    /// One tool call.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        FakeReply::ToolCalls(vec![FakeToolCall {
            name: name.into(),
            arguments,
        }])
    }
}

/// One request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// Arrival order, from 0.
    pub seq: usize,
    /// `POST`, ...
    pub method: String,
    /// The path, without the query string.
    pub path: String,
    /// Headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub body: Vec<u8>,
    /// When it arrived (its head and body read).
    pub received: std::time::Instant,
}

impl RecordedRequest {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`Null` if it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

#[derive(Debug, Clone)]
struct Settings {
    latency: Duration,
    chunk_delay: Duration,
    faults: Vec<Fault>,
    plan_start: usize,
    api_key: Option<String>,
    write_chunk: Option<usize>,
    embedding_dims: usize,
    /// At most this many requests answered in any window; the others get a 429.
    rate_limit: Option<(Duration, usize)>,
    /// The answer times to state, if any.
    timing: Option<SimulatedTiming>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            latency: Duration::ZERO,
            chunk_delay: Duration::ZERO,
            faults: Vec::new(),
            plan_start: 0,
            api_key: None,
            write_chunk: None,
            embedding_dims: 64,
            rate_limit: None,
            timing: None,
        }
    }
}

#[derive(Default)]
struct Shared {
    settings: Mutex<Settings>,
    counter: AtomicUsize,
    log: Mutex<Vec<RecordedRequest>>,
    replies: Mutex<VecDeque<FakeReply>>,
    rules: Vec<Rule>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// When each request the rate limit let through arrived.
    admitted: Mutex<VecDeque<std::time::Instant>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Configures a [`FakeProviderServer`] before it starts.
#[derive(Debug, Clone, Default)]
pub struct FakeServerBuilder {
    settings: Settings,
    replies: Vec<FakeReply>,
    rules: Vec<Rule>,
}

impl FakeServerBuilder {
    /// Wait this long before answering each request (time to first byte),
    /// counted from the request's arrival and kept to within about a
    /// millisecond, not tokio's timer's whole milliseconds rounded up.
    pub fn latency(mut self, latency: Duration) -> Self {
        self.settings.latency = latency;
        self
    }

    /// Wait this long between stream events.
    pub fn chunk_delay(mut self, delay: Duration) -> Self {
        self.settings.chunk_delay = delay;
        self
    }

    /// Faults for the first requests, in arrival order; later ones are served normally.
    pub fn fault_plan(mut self, faults: Vec<Fault>) -> Self {
        self.settings.faults = faults;
        self
    }

    /// Answer at most `requests` requests in any `window`, as an API's rate
    /// limit does: the others get a 429 whose `retry-after-ms` says when a
    /// request would next be answered.
    pub fn rate_limit(mut self, window: Duration, requests: usize) -> Self {
        self.settings.rate_limit = Some((window, requests.max(1)));
        self
    }

    /// Scripted answers, served in order before falling back to the echo.
    pub fn replies(mut self, replies: Vec<FakeReply>) -> Self {
        self.replies = replies;
        self
    }

    /// Answer chat, responses and messages requests by content: the first [`Rule`]
    /// that matches answers, in the order added. With any rule, a request no
    /// rule matches gets a 400 naming its model, system prompt and last user
    /// message (no echo, no scripted replies).
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Several [`rule`](Self::rule)s, in order.
    pub fn rules(mut self, rules: impl IntoIterator<Item = Rule>) -> Self {
        self.rules.extend(rules);
        self
    }

    /// Answer 401 unless the request carries this key (`Authorization:
    /// Bearer` on OpenAI routes, `x-api-key` on Anthropic routes).
    pub fn require_api_key(mut self, key: impl Into<String>) -> Self {
        self.settings.api_key = Some(key.into());
        self
    }

    /// Write stream bodies in pieces of `bytes` bytes, flushing each, so
    /// chunk boundaries fall inside lines and UTF-8 sequences.
    pub fn write_chunk_size(mut self, bytes: usize) -> Self {
        self.settings.write_chunk = Some(bytes.max(1));
        self
    }

    /// State with each answer the time it would have taken (see
    /// [`SimulatedTiming`]), in the [`SIMULATED_TIMING_HEADER`](super::SIMULATED_TIMING_HEADER)
    /// response header, without waiting: record mode records these times
    /// instead of the (tiny) measured ones, so recordings made from this
    /// server have realistic latencies, the same every time.
    pub fn simulated_timing(mut self, timing: SimulatedTiming) -> Self {
        self.settings.timing = Some(timing);
        self
    }

    /// Length of the embedding vectors (default 64; a request's `dimensions` wins).
    pub fn embedding_dimensions(mut self, dims: usize) -> Self {
        self.settings.embedding_dims = dims.max(1);
        self
    }

    /// Bind `127.0.0.1:0` and start serving.
    pub async fn start(self) -> io::Result<FakeProviderServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            settings: Mutex::new(self.settings),
            replies: Mutex::new(self.replies.into()),
            rules: self.rules,
            ..Shared::default()
        });
        let (shutdown, rx) = watch::channel(false);
        let task = tokio::spawn(accept_loop(listener, shared.clone(), rx));
        Ok(FakeProviderServer {
            addr,
            shared,
            shutdown,
            task,
        })
    }
}

/// A fake OpenAI / Anthropic API on `127.0.0.1` for tests (see the
/// [module docs](super)). Stops when dropped.
pub struct FakeProviderServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for FakeProviderServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeProviderServer")
            .field("addr", &self.addr)
            .field("requests", &self.request_count())
            .finish()
    }
}

impl FakeProviderServer {
    /// Start a server with the default settings (no latency, no faults, echo answers).
    pub async fn start() -> io::Result<Self> {
        FakeServerBuilder::default().start().await
    }

    /// Configure a server before starting it.
    pub fn builder() -> FakeServerBuilder {
        FakeServerBuilder::default()
    }

    /// The socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The base URL for [`OpenAi::base_url`](crate::provider::openai::OpenAi::base_url): `http://127.0.0.1:PORT/v1`.
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// The base URL for [`Anthropic::base_url`](crate::provider::anthropic::Anthropic::base_url): `http://127.0.0.1:PORT`.
    pub fn anthropic_base_url(&self) -> String {
        self.url()
    }

    /// Requests received so far (faulted ones included).
    pub fn request_count(&self) -> usize {
        self.shared.counter.load(Ordering::SeqCst)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        let mut log = lock(&self.shared.log).clone();
        log.sort_by_key(|r| r.seq);
        log
    }

    /// The most requests the server was answering at once.
    pub fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }

    /// The most recent request.
    pub fn last_request(&self) -> Option<RecordedRequest> {
        lock(&self.shared.log).iter().max_by_key(|r| r.seq).cloned()
    }

    /// Change the latency of requests from now on.
    pub fn set_latency(&self, latency: Duration) {
        lock(&self.shared.settings).latency = latency;
    }

    /// Replace the fault plan; it applies from the next request on.
    pub fn set_fault_plan(&self, faults: Vec<Fault>) {
        let mut settings = lock(&self.shared.settings);
        settings.faults = faults;
        settings.plan_start = self.shared.counter.load(Ordering::SeqCst);
    }

    /// Queue a scripted answer.
    pub fn push_reply(&self, reply: FakeReply) {
        lock(&self.shared.replies).push_back(reply);
    }
}

impl Drop for FakeProviderServer {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        self.task.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((socket, _)) => {
                    tokio::spawn(serve_connection(socket, shared.clone(), shutdown.clone()));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            },
            _ = shutdown.changed() => return,
        }
    }
}

struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

async fn serve_connection(
    mut socket: TcpStream,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let _ = socket.set_nodelay(true);
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let request = tokio::select! {
            r = read_request(&mut socket, &mut buf) => r,
            _ = shutdown.changed() => return,
        };
        let request = match request {
            Ok(Some(request)) => request,
            Ok(None) => return,
            Err(e) => {
                let body = json!({"error": {"message": format!("bad request: {e}"), "type": "invalid_request_error"}});
                let _ = write_json(&mut socket, 400, &[], &body, false).await;
                return;
            }
        };
        let close = request
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let in_flight = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.max_in_flight.fetch_max(in_flight, Ordering::SeqCst);
        let handled = handle(&mut socket, request, &shared, &mut shutdown).await;
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        match handled {
            Ok(true) if !close => {}
            // Dropping the socket closes it (or resets it, after `Fault::Reset`).
            _ => return,
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

async fn read_request(socket: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<Option<Request>> {
    loop {
        if let Some(end) = find(buf, b"\r\n\r\n") {
            let head = std::str::from_utf8(&buf[..end]).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidData, "request head is not UTF-8")
            })?;
            let mut lines = head.split("\r\n");
            let mut first = lines.next().unwrap_or("").split(' ');
            let method = first.next().unwrap_or("").to_string();
            let target = first.next().unwrap_or("/");
            let path = target.split('?').next().unwrap_or("/").to_string();
            let headers: Vec<(String, String)> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                .collect();
            if headers.iter().any(|(k, v)| {
                k == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked")
            }) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "chunked request bodies are not supported",
                ));
            }
            let length = match headers.iter().find(|(k, _)| k == "content-length") {
                Some((_, v)) => v.parse::<usize>().map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidData, "bad content-length")
                })?,
                None => 0,
            };
            if length > MAX_BODY {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "body too large"));
            }
            let total = end + 4 + length;
            while buf.len() < total {
                if socket.read_buf(buf).await? == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "body cut short",
                    ));
                }
            }
            let body = buf[end + 4..total].to_vec();
            buf.drain(..total);
            return Ok(Some(Request {
                method,
                path,
                headers,
                body,
            }));
        }
        if buf.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too large",
            ));
        }
        if socket.read_buf(buf).await? == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "request cut short",
                ))
            };
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Route {
    Chat,
    Embeddings,
    Messages,
    Responses,
    Unknown,
}

/// The route of `path`, as the real APIs serve them: anything else (a
/// doubled `/v1/v1/messages`) is a 404.
fn route(path: &str) -> Route {
    match path.trim_end_matches('/') {
        "/v1/chat/completions" => Route::Chat,
        "/v1/embeddings" => Route::Embeddings,
        "/v1/messages" => Route::Messages,
        "/v1/responses" => Route::Responses,
        _ => Route::Unknown,
    }
}

fn error_body(route: Route, status: u16) -> Value {
    match route {
        Route::Messages => payloads::anthropic_error(status),
        _ if status == 529 => payloads::anthropic_error(529),
        _ => payloads::openai_error(status),
    }
}

fn request_id_header(route: Route, seq: usize) -> (String, String) {
    let name = if route == Route::Messages {
        "request-id"
    } else {
        "x-request-id"
    };
    (name.to_string(), format!("req_fake{seq:06}"))
}

/// The server's rate limit on a request arriving `now`: a 429 saying when
/// the oldest request of the window leaves it, or none (and it counts).
fn over_rate_limit(
    shared: &Shared,
    now: std::time::Instant,
    window: Duration,
    requests: usize,
) -> Fault {
    let mut admitted = lock(&shared.admitted);
    while admitted.front().is_some_and(|&at| at + window <= now) {
        admitted.pop_front();
    }
    if admitted.len() < requests {
        admitted.push_back(now);
        return Fault::None;
    }
    let oldest = admitted.front().copied().unwrap_or(now);
    Fault::RateLimited {
        retry_after: Some((oldest + window).saturating_duration_since(now)),
    }
}

/// Serve one request; `Ok(true)` keeps the connection open.
async fn handle(
    socket: &mut TcpStream,
    request: Request,
    shared: &Shared,
    shutdown: &mut watch::Receiver<bool>,
) -> io::Result<bool> {
    let seq = shared.counter.fetch_add(1, Ordering::SeqCst);
    let settings = {
        let settings = lock(&shared.settings);
        settings.clone()
    };
    let received = std::time::Instant::now();
    let fault = fault_for(shared, &settings, seq, received);
    lock(&shared.log).push(RecordedRequest {
        seq,
        method: request.method.clone(),
        path: request.path.clone(),
        headers: request.headers.clone(),
        body: request.body.clone(),
        received,
    });

    let route = route(&request.path);
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let request_id = request_id_header(route, seq);

    // The latency counts from the request's arrival.
    if !sleep_since_or_shutdown(received, settings.latency, shutdown).await {
        return Ok(false);
    }
    let answered = answer_fault(socket, &fault, route, request_id.clone(), shutdown).await?;
    if let Some(keep_open) = answered {
        return Ok(keep_open);
    }
    if let Some((status, body)) = rejection(route, &request, &body, &settings) {
        write_json(socket, status, &[request_id], &body, true).await?;
        return Ok(true);
    }
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake-model")
        .to_string();
    if route == Route::Embeddings {
        let reply = payloads::openai_embeddings(&model, &body, settings.embedding_dims);
        let mut headers = vec![request_id];
        headers
            .extend((settings.timing.as_ref()).map(|t| t.header(&model, &request.body, 0, false)));
        return send_full(socket, &fault, &headers, &reply, shutdown).await;
    }
    let streamed = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let seen = RecordedRequest {
        seq,
        method: request.method,
        path: request.path,
        headers: request.headers,
        body: request.body,
        received,
    };
    let (message, request_id) =
        match compose(shared, route, &seen, &body, model.clone(), request_id) {
            Ok(composed) => composed,
            Err((request_id, body)) => {
                write_json(socket, 400, &[request_id], &body, true).await?;
                return Ok(true);
            }
        };
    let reply = Reply {
        fault: &fault,
        settings: &settings,
        route,
        request_id,
        timing: (settings.timing.as_ref())
            .map(|t| t.header(&model, &seen.body, message.usage.1, streamed)),
    };
    reply.send(socket, &message, &body, shutdown).await
}

/// The fault planned for request `seq`, else the rate limit's, if any.
fn fault_for(
    shared: &Shared,
    settings: &Settings,
    seq: usize,
    received: std::time::Instant,
) -> Fault {
    let fault = seq
        .checked_sub(settings.plan_start)
        .and_then(|i| settings.faults.get(i).cloned())
        .unwrap_or_default();
    match settings.rate_limit {
        Some((window, requests)) if fault == Fault::None => {
            over_rate_limit(shared, received, window, requests)
        }
        _ => fault,
    }
}

/// Answer with `fault` when it replaces the answer: `Some(keep_open)`;
/// `None` when the request is answered as usual (after a delay, or with a
/// fault in the answer itself).
async fn answer_fault(
    socket: &mut TcpStream,
    fault: &Fault,
    route: Route,
    request_id: (String, String),
    shutdown: &mut watch::Receiver<bool>,
) -> io::Result<Option<bool>> {
    match fault {
        Fault::None
        | Fault::MalformedJson
        | Fault::TruncatedStream { .. }
        | Fault::StalledStream { .. } => Ok(None),
        Fault::Delay(d) => Ok((!sleep_or_shutdown(*d, shutdown).await).then_some(false)),
        Fault::RateLimited { retry_after } => {
            let mut headers = vec![request_id];
            if let Some(wait) = retry_after {
                headers.push(("retry-after-ms".into(), wait.as_millis().to_string()));
                headers.push((
                    "retry-after".into(),
                    wait.as_secs_f64().ceil().max(0.0).to_string(),
                ));
            }
            write_json(socket, 429, &headers, &error_body(route, 429), true).await?;
            Ok(Some(true))
        }
        Fault::ServerError => {
            write_json(socket, 500, &[request_id], &error_body(route, 500), true).await?;
            Ok(Some(true))
        }
        Fault::Overloaded => {
            write_json(socket, 529, &[request_id], &error_body(route, 529), true).await?;
            Ok(Some(true))
        }
        Fault::Status {
            status,
            headers,
            body,
        } => {
            let mut all = vec![request_id];
            all.extend(headers.iter().cloned());
            let bytes = body.as_bytes();
            write_raw(socket, *status, "application/json", &all, bytes, true).await?;
            Ok(Some(true))
        }
        Fault::Hang => {
            wait_for_close(socket, shutdown).await;
            Ok(Some(false))
        }
        Fault::Reset => {
            reset(socket);
            Ok(Some(false))
        }
        Fault::WrongContentType => {
            let html = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body>Please sign in to the network.</body></html>";
            let content_type = "text/html; charset=utf-8";
            write_raw(socket, 200, content_type, &[request_id], html, true).await?;
            Ok(Some(true))
        }
    }
}

/// The checks a real API makes: the status and error body of a request
/// it refuses, or `None`.
fn rejection(
    route: Route,
    request: &Request,
    body: &Value,
    settings: &Settings,
) -> Option<(u16, Value)> {
    if route == Route::Unknown {
        return Some((404, error_body(route, 404)));
    }
    if request.method != "POST" {
        let body = payloads::openai_error_message("Method not allowed.", "method_not_allowed");
        return Some((405, body));
    }
    if let Some(key) = &settings.api_key {
        let ok = match route {
            Route::Messages => request.header("x-api-key") == Some(key.as_str()),
            _ => request.header("authorization") == Some(format!("Bearer {key}").as_str()),
        };
        if !ok {
            // As the real APIs do, the key presented is echoed back.
            let presented = match route {
                Route::Messages => request.header("x-api-key"),
                _ => request
                    .header("authorization")
                    .map(|h| h.trim_start_matches("Bearer ")),
            };
            let body = payloads::wrong_key_error(route == Route::Messages, presented.unwrap_or(""));
            return Some((401, body));
        }
    }
    if body.is_null() {
        let message = "We could not parse the JSON body of your request.";
        let body = match route {
            Route::Messages => payloads::anthropic_error_message("invalid_request_error", message),
            _ => payloads::openai_error_message(message, "invalid_json"),
        };
        return Some((400, body));
    }
    if route != Route::Messages {
        return None;
    }
    let problem = if request.header("anthropic-version").is_none() {
        "anthropic-version: header is required"
    } else if body.get("max_tokens").and_then(Value::as_u64).is_none() {
        "max_tokens: Field required"
    } else {
        return None;
    };
    Some((
        400,
        payloads::anthropic_error_message("invalid_request_error", problem),
    ))
}

/// A header's name and value.
type Header = (String, String);

/// The message answering `seen` (from the scripted replies, or the routing
/// rules) with its request-id header; `Err` with the 400 body when no rule
/// matches.
fn compose(
    shared: &Shared,
    route: Route,
    seen: &RecordedRequest,
    body: &Value,
    model: String,
    request_id: (String, String),
) -> Result<(Message, Header), (Header, Value)> {
    let seq = seen.seq;
    if shared.rules.is_empty() {
        let content = answer_for(route, body, seq, lock(&shared.replies).pop_front());
        let usage = payloads::usage_for(body, &content);
        let id = match route {
            Route::Messages => format!("msg_fake{seq:06}"),
            Route::Responses => format!("resp_fake{seq:06}"),
            _ => format!("chatcmpl-fake{seq:06}"),
        };
        return Ok((Message::new(id, model, content, usage), request_id));
    }
    let api = match route {
        Route::Messages => Api::Anthropic,
        Route::Responses => Api::Responses,
        _ => Api::OpenAi,
    };
    match router::route(&shared.rules, api, seen, body) {
        Ok(routed) => Ok((routed.message, (request_id.0, routed.request_id))),
        Err(why) => {
            let body = match api {
                Api::Anthropic => payloads::anthropic_error_message("invalid_request_error", &why),
                Api::OpenAi | Api::Responses => {
                    payloads::openai_error_message(&why, "no_matching_rule")
                }
            };
            Err((request_id, body))
        }
    }
}

/// How a chat, responses or messages answer goes out.
struct Reply<'a> {
    fault: &'a Fault,
    settings: &'a Settings,
    route: Route,
    request_id: (String, String),
    /// The simulated timing header, if the server states one.
    timing: Option<Header>,
}

impl Reply<'_> {
    /// Send `message`, streamed when the request `body` asks for a stream.
    async fn send(
        self,
        socket: &mut TcpStream,
        message: &Message,
        body: &Value,
        shutdown: &mut watch::Receiver<bool>,
    ) -> io::Result<bool> {
        let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        if stream {
            let events = match self.route {
                Route::Chat => {
                    let include_usage = body
                        .pointer("/stream_options/include_usage")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    payloads::openai_stream(message, include_usage)
                }
                Route::Responses => payloads::responses_stream(message, body),
                _ => payloads::anthropic_stream(message),
            };
            let (fault, settings) = (self.fault, self.settings);
            let mut headers = vec![self.request_id];
            headers.extend(self.timing);
            return send_stream(socket, fault, headers, events, settings, shutdown).await;
        }
        let reply = match self.route {
            Route::Chat => payloads::openai_completion(message),
            Route::Responses => payloads::responses_response(message, body),
            _ => payloads::anthropic_message(message),
        };
        let mut headers = vec![self.request_id];
        headers.extend(self.timing);
        send_full(socket, self.fault, &headers, &reply, shutdown).await
    }
}

/// The answer to a chat, responses or messages request.
fn answer_for(route: Route, body: &Value, seq: usize, scripted: Option<FakeReply>) -> Content {
    let id = |i: usize| match route {
        Route::Messages => format!("toolu_fake{seq:06}{i:02}"),
        _ => format!("call_fake{seq:06}{i:02}"),
    };
    match scripted.unwrap_or_default() {
        FakeReply::Text(text) => return Content::Text(text),
        FakeReply::ToolCalls(calls) => {
            return Content::Tools(
                calls
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| ToolUse {
                        id: id(i),
                        name: c.name,
                        arguments: c.arguments,
                    })
                    .collect(),
            );
        }
        FakeReply::Echo => {}
    }
    let echo = format!("Echo: {}", payloads::last_message_text(body));
    // Structured output: OpenAI response_format, the Responses API's
    // text.format, Anthropic output_config or a forced tool.
    if let Some(schema) = body
        .pointer("/response_format/json_schema/schema")
        .or_else(|| body.pointer("/text/format/schema"))
        .or_else(|| body.pointer("/output_config/format/schema"))
    {
        return Content::Text(payloads::schema_instance(schema, &echo).to_string());
    }
    if route == Route::Messages
        && body.pointer("/tool_choice/type").and_then(Value::as_str) == Some("tool")
        && let Some(name) = body.pointer("/tool_choice/name").and_then(Value::as_str)
    {
        let schema = body
            .get("tools")
            .and_then(Value::as_array)
            .and_then(|tools| {
                tools
                    .iter()
                    .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
            })
            .and_then(|t| t.get("input_schema"))
            .cloned()
            .unwrap_or(Value::Null);
        return Content::Tools(vec![ToolUse {
            id: id(0),
            name: name.to_string(),
            arguments: payloads::schema_instance(&schema, &echo),
        }]);
    }
    Content::Text(echo)
}

async fn send_full(
    socket: &mut TcpStream,
    fault: &Fault,
    headers: &[(String, String)],
    reply: &Value,
    shutdown: &mut watch::Receiver<bool>,
) -> io::Result<bool> {
    let bytes = reply.to_string().into_bytes();
    match fault {
        Fault::MalformedJson => {
            let cut = &bytes[..bytes.len() / 2];
            write_raw(socket, 200, "application/json", headers, cut, true).await?;
            Ok(true)
        }
        Fault::TruncatedStream { .. } | Fault::StalledStream { .. } => {
            let head = response_head(200, "application/json", headers, Some(bytes.len()), true);
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(&bytes[..bytes.len() / 2]).await?;
            socket.flush().await?;
            if matches!(fault, Fault::StalledStream { .. }) {
                wait_for_close(socket, shutdown).await;
            }
            Ok(false)
        }
        _ => {
            write_raw(socket, 200, "application/json", headers, &bytes, true).await?;
            Ok(true)
        }
    }
}

/// Write an SSE answer with chunked transfer encoding (one HTTP chunk per
/// event, so a cut mid-event is an incomplete message, as on a real
/// connection). `Ok(true)` keeps the connection open.
async fn send_stream(
    socket: &mut TcpStream,
    fault: &Fault,
    mut headers: Vec<Header>,
    mut events: Vec<String>,
    settings: &Settings,
    shutdown: &mut watch::Receiver<bool>,
) -> io::Result<bool> {
    headers.extend([
        ("cache-control".to_string(), "no-cache".to_string()),
        ("transfer-encoding".to_string(), "chunked".to_string()),
    ]);
    let mut pending = response_head(
        200,
        "text/event-stream; charset=utf-8",
        &headers,
        None,
        true,
    )
    .into_bytes();
    let (cut_at, stall) = match fault {
        Fault::TruncatedStream { after_events } => (Some(*after_events), false),
        Fault::StalledStream { after_events } => (Some(*after_events), true),
        Fault::MalformedJson => {
            // The second event's JSON is cut in half, the framing kept.
            let index = 1.min(events.len().saturating_sub(1));
            if let Some(event) = events.get_mut(index) {
                let cut: String = event.chars().take(event.chars().count() / 2).collect();
                *event = format!("{}\n\n", cut.trim_end());
            }
            events.truncate(index + 1);
            (None, false)
        }
        _ => (None, false),
    };
    // Without delays or split writes, the whole answer goes out in one write.
    let batch = settings.chunk_delay.is_zero() && settings.write_chunk.is_none();
    let last = events.len().saturating_sub(1);
    for (i, event) in events.iter().enumerate() {
        if let Some(cut) = cut_at
            && i == cut.min(last)
        {
            if stall {
                write_pieces(socket, &pending, settings.write_chunk).await?;
                wait_for_close(socket, shutdown).await;
            } else {
                let bytes = event.as_bytes();
                pending.extend_from_slice(format!("{:x}\r\n", bytes.len()).as_bytes());
                pending.extend_from_slice(&bytes[..bytes.len() / 2]);
                write_pieces(socket, &pending, settings.write_chunk).await?;
            }
            return Ok(false);
        }
        pending.extend_from_slice(format!("{:x}\r\n", event.len()).as_bytes());
        pending.extend_from_slice(event.as_bytes());
        pending.extend_from_slice(b"\r\n");
        if !batch {
            write_pieces(socket, &pending, settings.write_chunk).await?;
            pending.clear();
            if i < last && !sleep_or_shutdown(settings.chunk_delay, shutdown).await {
                return Ok(false);
            }
        }
    }
    pending.extend_from_slice(b"0\r\n\r\n");
    write_pieces(socket, &pending, settings.write_chunk).await?;
    Ok(!matches!(fault, Fault::MalformedJson))
}

async fn write_pieces(
    socket: &mut TcpStream,
    bytes: &[u8],
    piece: Option<usize>,
) -> io::Result<()> {
    match piece {
        Some(n) => {
            for chunk in bytes.chunks(n) {
                socket.write_all(chunk).await?;
                socket.flush().await?;
                tokio::task::yield_now().await;
            }
        }
        None => {
            socket.write_all(bytes).await?;
            socket.flush().await?;
        }
    }
    Ok(())
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Site Overloaded",
        _ => "Status",
    }
}

fn response_head(
    status: u16,
    content_type: &str,
    headers: &[(String, String)],
    length: Option<usize>,
    keep_alive: bool,
) -> String {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\n",
        reason(status)
    );
    if let Some(length) = length {
        head.push_str(&format!("content-length: {length}\r\n"));
    }
    head.push_str(if keep_alive {
        "connection: keep-alive\r\n"
    } else {
        "connection: close\r\n"
    });
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    head
}

async fn write_raw(
    socket: &mut TcpStream,
    status: u16,
    content_type: &str,
    headers: &[(String, String)],
    body: &[u8],
    keep_alive: bool,
) -> io::Result<()> {
    let mut out =
        response_head(status, content_type, headers, Some(body.len()), keep_alive).into_bytes();
    out.extend_from_slice(body);
    socket.write_all(&out).await?;
    socket.flush().await
}

async fn write_json(
    socket: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &Value,
    keep_alive: bool,
) -> io::Result<()> {
    write_raw(
        socket,
        status,
        "application/json",
        headers,
        body.to_string().as_bytes(),
        keep_alive,
    )
    .await
}

/// The end of a wait left to a blocking thread's sleep. tokio's timer
/// counts whole milliseconds and rounds each wait up, its driver too: a
/// `sleep` of 100 ms answered a request 101–103 ms after it came, 2% over
/// the latency asked for. The kernel ends a thread's sleep within tens of
/// microseconds.
const FINE_WAIT: Duration = Duration::from_millis(5);

/// Sleep `duration`, unless the server shuts down first (then `false`).
async fn sleep_or_shutdown(duration: Duration, shutdown: &mut watch::Receiver<bool>) -> bool {
    sleep_since_or_shutdown(std::time::Instant::now(), duration, shutdown).await
}

/// Sleep until `duration` after `since`, unless the server shuts down
/// first (then `false`): on tokio's timer until [`FINE_WAIT`] before the
/// end, the rest on a blocking thread, so that a latency of 100 ms takes
/// 100 ms.
async fn sleep_since_or_shutdown(
    since: std::time::Instant,
    duration: Duration,
    shutdown: &mut watch::Receiver<bool>,
) -> bool {
    if duration.is_zero() {
        return true;
    }
    let deadline = since + duration;
    let wait = async {
        if let Some(coarse) = deadline.checked_sub(FINE_WAIT) {
            tokio::time::sleep_until(coarse.into()).await;
        }
        let rest = deadline.saturating_duration_since(std::time::Instant::now());
        if !rest.is_zero() {
            // A failed join (the runtime shutting down) ends the wait early.
            let _ = tokio::task::spawn_blocking(move || std::thread::sleep(rest)).await;
        }
    };
    tokio::select! {
        _ = wait => true,
        _ = shutdown.changed() => false,
    }
}

/// Hold the connection open, reading and discarding, until the peer closes
/// it or the server shuts down.
async fn wait_for_close(socket: &mut TcpStream, shutdown: &mut watch::Receiver<bool>) {
    let mut scratch = [0u8; 1024];
    loop {
        tokio::select! {
            read = socket.read(&mut scratch) => match read {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
            _ = shutdown.changed() => return,
        }
    }
}

/// Make the close of `socket` send a TCP RST instead of a FIN.
#[allow(deprecated)]
fn reset(socket: &TcpStream) {
    let _ = socket.set_linger(Some(Duration::ZERO));
}
