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
//! Every failure ends as a [`ProviderError`](crate::provider::ProviderError); nothing here panics on input and
//! every wait is bounded by the call timeout or the stream idle timeout.

mod client;
mod config;
mod errors;
mod reqwest_transport;
mod sse;
mod tls;

pub(crate) use client::{HttpClient, Passed};
pub use config::{HttpConfig, RetryPolicy, parse_retry_after};
pub(crate) use errors::{
    error_message, message_from_json, snippet, status_for_error_type, without_secrets,
};
pub use reqwest_transport::ReqwestTransport;
pub(crate) use reqwest_transport::install_default_tls;
pub use sse::{SseError, SseEvent, SseParser};
pub(crate) use sse::{SseStream, parse_event, parse_json};

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::limit::{ProviderLimit, RateLimit};
use super::transport::{HttpRequest, Transport};

/// An error and its sources, joined with `: `, without repeats.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
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
pub(super) fn later(at: Instant, d: Duration) -> Instant {
    at.checked_add(d)
        .or_else(|| at.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(at)
}

pub(super) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub(super) fn is_event_stream(content_type: &str) -> bool {
    content_type
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("text/event-stream")
}

pub(super) fn is_json(content_type: &str) -> bool {
    let ct = content_type.to_ascii_lowercase();
    let essence = ct.split(';').next().unwrap_or("").trim();
    essence == "application/json" || essence.ends_with("+json")
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

        /// Where this provider sends and how (base URL, key, limits).
        pub(crate) fn http(&self) -> &HttpProvider {
            &self.http
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

    use super::reqwest_transport::Served;
    use super::*;
    use crate::provider::CallContext;
    use crate::provider::transport::{HttpBody, HttpResponse, TransportError};
    use async_trait::async_trait;
    use bytes::Bytes;
    use futures_util::StreamExt;
    use std::time::SystemTime;

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
