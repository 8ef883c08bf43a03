//! Record mode: pass through to the inner transport and write a cassette.

use std::collections::HashMap;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::Stream;
use serde_json::Value;

use super::cassette::{
    CASSETTE_VERSION, Cassette, RecordedAttempt, RecordedRequest, RecordedResponse, Timing,
};
use super::redact::Redactor;
use super::{RecorderMode, cassette, checked_recording_id, split_url};
use crate::provider::CallContext;
use crate::provider::transport::{
    ByteStream, HttpBody, HttpRequest, HttpResponse, Transport, TransportError,
};

/// Passes requests through to `inner` and writes each call to
/// `{dir}/{recording_id}.json`: its answer, with the attempts that failed
/// and were retried before it and the waits between them.
///
/// Only a call that succeeded replaces a recording: a failed one is
/// written only where there is none yet, so that a rate-limited or broken
/// re-record never loses a good recording.
pub(crate) struct RecordingTransport {
    pub(crate) inner: Arc<dyn Transport>,
    pub(crate) dir: PathBuf,
    pub(crate) redactor: Arc<Redactor>,
    /// Per recording id, the failed attempts of the call in flight.
    failed: Mutex<HashMap<String, Vec<FailedAttempt>>>,
}

/// A failed attempt, and when it ended (to measure the wait after it).
struct FailedAttempt {
    attempt: RecordedAttempt,
    ended: Instant,
}

impl RecordingTransport {
    pub(crate) fn new(inner: Arc<dyn Transport>, dir: PathBuf, redactor: Arc<Redactor>) -> Self {
        RecordingTransport {
            inner,
            dir,
            redactor,
            failed: Mutex::new(HashMap::new()),
        }
    }

    fn failed(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<FailedAttempt>>> {
        self.failed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The failed attempts before attempt `attempt` of call `id` starting
    /// now, the wait after the last of them measured.
    fn attempts_before(&self, id: &str, attempt: u32, now: Instant) -> Vec<RecordedAttempt> {
        let mut failed = self.failed();
        if attempt == 0 {
            failed.remove(id);
            return Vec::new();
        }
        let Some(list) = failed.get_mut(id) else {
            return Vec::new();
        };
        if let Some(last) = list.last_mut() {
            last.attempt.wait_ms = millis_between(last.ended, now);
        }
        list.iter().map(|f| f.attempt.clone()).collect()
    }

    /// Note that attempt of call `id` failed with `attempt`.
    fn note_failure(&self, id: &str, attempt: RecordedAttempt) {
        self.failed()
            .entry(id.to_string())
            .or_default()
            .push(FailedAttempt {
                attempt,
                ended: Instant::now(),
            });
    }
}

/// What is known before the body arrives.
struct Pending {
    path: PathBuf,
    id: String,
    request: RecordedRequest,
    /// The failed attempts before this one.
    attempts: Vec<RecordedAttempt>,
    status: u16,
    headers: Vec<(String, String)>,
    redactor: Arc<Redactor>,
    /// Credential carriers of the request, to scrub the response too.
    secret_headers: Vec<(String, String)>,
    query: Option<String>,
    order: Option<u64>,
}

impl Pending {
    /// Whether this exchange may be written: a success always, a failure
    /// only where there is no recording yet.
    fn may_write(&self, failure: Option<&String>) -> bool {
        let succeeded = (200..300).contains(&self.status) && failure.is_none();
        succeeded || !self.path.exists()
    }

    /// The recorded response: `body` and the headers, scrubbed.
    fn response(&self, body: &[u8], failure: Option<String>) -> RecordedResponse {
        let scrub = self.redactor.scrubber(
            self.secret_headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
            self.query.as_deref(),
        );
        let headers =
            scrub.response_headers(self.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let is_sse = headers
            .get("content-type")
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"));
        let mut response = RecordedResponse {
            status: self.status,
            headers,
            body: None,
            text: None,
            sse: None,
            truncated: failure.is_some(),
            error: failure.map(|e| scrub.str(&e).into_owned()),
        };
        if is_sse {
            response.sse = Some(
                cassette::split_sse(body)
                    .iter()
                    .map(|event| scrub.str(event).into_owned())
                    .collect(),
            );
        } else if body.is_empty() {
            // No body: nothing to store.
        } else if let Ok(json) = serde_json::from_slice::<Value>(body) {
            response.body = Some(scrub.json(&json));
        } else {
            response.text = Some(scrub.str(&String::from_utf8_lossy(body)).into_owned());
        }
        response
    }

    /// Write the cassette of this exchange, if it may be.
    fn finish(
        self,
        body: &[u8],
        timing: Timing,
        failure: Option<String>,
    ) -> Result<(), TransportError> {
        if !self.may_write(failure.as_ref()) {
            // A 429 or a 5xx is retried, and its retry may replace the
            // recording: only a failure that stands is worth a line.
            if failure.is_none() && (self.status == 429 || self.status >= 500) {
                return Ok(());
            }
            let why = failure.unwrap_or_else(|| format!("HTTP {}", self.status));
            eprintln!(
                "scaffold: record mode kept recording {} as it was: this call failed ({why}), \
                 and only a call that succeeded replaces a recording",
                self.path.display()
            );
            return Ok(());
        }
        let response = self.response(body, failure);
        let cassette = Cassette {
            version: CASSETTE_VERSION,
            id: self.id,
            request: self.request,
            attempts: self.attempts,
            response,
            timing,
            order: self.order,
        };
        cassette
            .save(&self.path)
            .map_err(|e| TransportError::Other(format!("record mode: {e}")))
    }
}

#[async_trait]
impl Transport for RecordingTransport {
    async fn send(
        &self,
        request: HttpRequest,
        context: &CallContext,
    ) -> Result<HttpResponse, TransportError> {
        let id = checked_recording_id(RecorderMode::Record, &request, context)?;
        let (_, url_path, url_query) = split_url(&request.url);
        let secret_headers: Vec<(String, String)> = request
            .headers
            .iter()
            .filter(|(k, _)| super::redact::is_credential_header(k))
            .cloned()
            .collect();
        let recorded = {
            let scrub = self.redactor.scrubber(
                request
                    .headers
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str())),
                url_query,
            );
            RecordedRequest {
                method: request.method.to_ascii_uppercase(),
                path: url_path.to_string(),
                query: url_query.filter(|q| !q.is_empty()).map(|q| scrub.query(q)),
                headers: scrub.request_headers(
                    request
                        .headers
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_str())),
                ),
                body: request.body.as_ref().map(|b| scrub.json(b)),
            }
        };
        let query = url_query.map(str::to_string);
        let started = Instant::now();
        let attempts = self.attempts_before(&id.to_string(), context.attempt, started);
        let response = self.inner.send(request, context).await?;
        let pending = Pending {
            path: self.dir.join(format!("{id}.json")),
            id: id.to_string(),
            request: recorded,
            attempts,
            status: response.status,
            headers: response.headers.clone(),
            redactor: self.redactor.clone(),
            secret_headers,
            query,
            order: context.order,
        };
        match response.body {
            HttpBody::Full(bytes) => {
                let ms = elapsed_ms(started);
                let timing = Timing {
                    duration_ms: ms,
                    first_byte_ms: ms,
                };
                if !(200..300).contains(&pending.status) {
                    // It may be retried: the next attempt's cassette holds it.
                    let attempt = RecordedAttempt {
                        response: pending.response(&bytes, None),
                        timing,
                        wait_ms: 0,
                    };
                    self.note_failure(&pending.id, attempt);
                }
                pending.finish(&bytes, timing, None)?;
                Ok(HttpResponse {
                    status: response.status,
                    headers: response.headers,
                    body: HttpBody::Full(bytes),
                })
            }
            HttpBody::Stream(stream) => Ok(HttpResponse {
                status: response.status,
                headers: response.headers,
                body: HttpBody::Stream(Box::pin(TeeStream {
                    inner: stream,
                    buffer: Vec::new(),
                    pending: Some(pending),
                    started,
                    first_byte_ms: None,
                    done: false,
                })),
            }),
        }
    }
}

fn elapsed_ms(since: Instant) -> u64 {
    millis_between(since, Instant::now())
}

fn millis_between(from: Instant, to: Instant) -> u64 {
    u64::try_from(to.saturating_duration_since(from).as_millis()).unwrap_or(u64::MAX)
}

/// Yields the inner stream's chunks unchanged, as they arrive, and writes
/// the cassette when the stream ends or fails (or is dropped early).
struct TeeStream {
    inner: ByteStream,
    buffer: Vec<u8>,
    pending: Option<Pending>,
    started: Instant,
    first_byte_ms: Option<u64>,
    done: bool,
}

impl TeeStream {
    fn write(&mut self, failure: Option<String>) -> Result<(), TransportError> {
        match self.pending.take() {
            Some(pending) => {
                let duration_ms = elapsed_ms(self.started);
                let timing = Timing {
                    duration_ms,
                    first_byte_ms: self.first_byte_ms.unwrap_or(duration_ms),
                };
                pending.finish(&self.buffer, timing, failure)
            }
            None => Ok(()),
        }
    }
}

impl Stream for TeeStream {
    type Item = Result<Bytes, TransportError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        match this.inner.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(chunk))) => {
                if this.first_byte_ms.is_none() {
                    this.first_byte_ms = Some(elapsed_ms(this.started));
                }
                this.buffer.extend_from_slice(&chunk);
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(error))) => {
                if let Err(write_error) = this.write(Some(error.to_string())) {
                    eprintln!("scaffold: {write_error}");
                }
                Poll::Ready(Some(Err(error)))
            }
            Poll::Ready(None) => {
                this.done = true;
                match this.write(None) {
                    Ok(()) => Poll::Ready(None),
                    Err(write_error) => Poll::Ready(Some(Err(write_error))),
                }
            }
        }
    }
}

impl Drop for TeeStream {
    fn drop(&mut self) {
        // The caller stopped reading early (e.g. after `[DONE]`): store what
        // it saw, which is what playback must serve.
        if let Err(e) = self.write(None) {
            eprintln!("scaffold: {e}");
        }
    }
}
