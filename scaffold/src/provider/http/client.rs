//! The client: retries, timeouts, status and content-type checks.

use super::config::retriable_status;
use super::sse::{SseParser, SseStream};
use super::{
    HttpConfig, error_message, is_event_stream, is_json, later, millis, parse_retry_after, snippet,
};
use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use serde_json::Value;
use tokio::time::Instant;

use crate::provider::limit::{Permit, ProviderLimit, estimate_tokens};
use crate::provider::recorder::PLAYED_BACK_HEADER;
use crate::provider::transport::{
    ByteStream, HttpBody, HttpRequest, HttpResponse, Transport, TransportError,
};
use crate::provider::{CallContext, ProviderError};

/// Largest error body read to build an error message.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Largest successful JSON body read from a streamed transport body.
const MAX_JSON_BODY: usize = 256 * 1024 * 1024;

/// Sends one provider call through a transport with the call's limits.
pub(crate) struct HttpClient<'a> {
    pub(crate) provider: &'a str,
    pub(crate) transport: &'a dyn Transport,
    pub(crate) config: &'a HttpConfig,
    /// The provider's rate limit and base URL (which API it limits).
    pub(crate) limit: Option<(&'a ProviderLimit, &'a str)>,
}

/// A successful answer passed on as it came (see
/// [`HttpClient::send_passthrough`]).
pub(crate) enum Passed {
    /// A whole JSON body.
    Json(Bytes),
    /// An event stream's bytes, with the rate-limit permit it holds until
    /// it is dropped.
    Stream(ByteStream, Option<Permit>),
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

    /// Send and pass the successful answer on as it came, with the
    /// attempts it took: a whole JSON body, or (`stream`) the bytes of an
    /// event stream (the agent bridge's calls: the agent reads them).
    pub(crate) async fn send_passthrough(
        &self,
        request: HttpRequest,
        context: &CallContext,
        stream: bool,
    ) -> Result<(Passed, u32), ProviderError> {
        let expect = if stream { Expect::Sse } else { Expect::Json };
        Ok(match self.execute(request, context, expect).await? {
            (Success::Json(bytes), attempts) => (Passed::Json(bytes), attempts),
            (Success::Sse(body, permit), attempts) => (Passed::Stream(body, permit), attempts),
        })
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
