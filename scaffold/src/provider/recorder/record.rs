//! Record mode: pass through to the inner transport and write a cassette;
//! under [`RecordPolicy::Missing`](super::RecordPolicy::Missing), answer a
//! call its recording still answers from that recording instead.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::Stream;
use serde_json::Value;

use super::cassette::{
    CASSETTE_VERSION, Cassette, RecordedAttempt, RecordedRequest, RecordedResponse, Timing,
};
use super::playback::PlaybackTransport;
use super::redact::Redactor;
use super::{RecorderMode, SIMULATED_TIMING_HEADER, cassette, checked_recording_id, split_url};
use crate::clock::Clock;
use crate::provider::CallContext;
use crate::provider::transport::{
    ByteStream, HttpBody, HttpRequest, HttpResponse, Transport, TransportError,
};

/// Passes requests through to `inner` and writes each call to
/// `{dir}/{recording_id}.json`: its answer, with the attempts that failed
/// and were retried before it and the waits between them. A file is
/// written only when its bytes change.
///
/// Only a call that succeeded replaces a recording of a call that
/// succeeded: a failed one is written only where there is no such
/// recording, with every attempt it made, so that a rate-limited or
/// broken re-record never loses a good recording.
///
/// With a `replay` transport (record policy `missing`), a call whose
/// recording answers it (by the rules playback compares with) and
/// recorded a success is answered from that recording, its recorded time
/// counted on the run's clock, and neither the API nor the file is
/// touched.
pub(crate) struct RecordingTransport {
    pub(crate) inner: Arc<dyn Transport>,
    pub(crate) dir: PathBuf,
    pub(crate) redactor: Arc<Redactor>,
    replay: Option<Arc<PlaybackTransport>>,
    /// Per recording id, the call in flight.
    calls: Calls,
}

type Calls = Arc<Mutex<HashMap<String, CallState>>>;

/// What is known of a call across its attempts.
#[derive(Default)]
struct CallState {
    /// Answered from its recording, every attempt.
    replayed: bool,
    /// A recording of a call that succeeded was there before this call:
    /// only a success replaces it.
    had_good: bool,
    /// Its failed attempts so far.
    failed: Vec<FailedAttempt>,
}

/// A failed attempt, and when it ended (to measure the wait after it).
struct FailedAttempt {
    attempt: RecordedAttempt,
    ended: Instant,
}

fn lock(calls: &Calls) -> std::sync::MutexGuard<'_, HashMap<String, CallState>> {
    calls.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `path` holds a cassette of a call that succeeded.
fn good_recording(path: &Path) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| cassette::RawCassette::from_slice(&bytes, path).ok())
        .is_some_and(|c| c.succeeded())
}

impl RecordingTransport {
    pub(crate) fn new(
        inner: Arc<dyn Transport>,
        dir: PathBuf,
        redactor: Arc<Redactor>,
        replay: Option<Arc<PlaybackTransport>>,
    ) -> Self {
        RecordingTransport {
            inner,
            dir,
            redactor,
            replay,
            calls: Arc::default(),
        }
    }

    /// Start attempt `attempt` of call `id`: at its first, decide whether
    /// its recording answers it and whether a good recording is there.
    /// Whether the call is answered from its recording.
    fn begin(
        &self,
        id: &super::RecordingId,
        path: &Path,
        request: &HttpRequest,
        attempt: u32,
    ) -> bool {
        let key = id.to_string();
        if attempt > 0
            && let Some(state) = lock(&self.calls).get(&key)
        {
            return state.replayed;
        }
        let replayed = self.replay.as_ref().is_some_and(
            |replay| matches!(replay.answers(id, request), Ok(Some(r)) if r.matches && r.succeeded),
        );
        let state = CallState {
            replayed,
            had_good: replayed || good_recording(path),
            failed: Vec::new(),
        };
        lock(&self.calls).insert(key, state);
        replayed
    }

    /// The failed attempts before attempt `attempt` of call `id` starting
    /// now, the wait after the last of them measured.
    fn attempts_before(&self, id: &str, now: Instant) -> (Vec<RecordedAttempt>, bool) {
        let mut calls = lock(&self.calls);
        let state = calls.entry(id.to_string()).or_default();
        if let Some(last) = state.failed.last_mut() {
            last.attempt.wait_ms = millis_between(last.ended, now);
        }
        let attempts = state.failed.iter().map(|f| f.attempt.clone()).collect();
        (attempts, state.had_good)
    }
}

/// The timing a fake server simulated for its answer
/// ([`SIMULATED_TIMING_HEADER`]: `first-byte-ms=…; duration-ms=…`), if it
/// stated one.
pub(crate) fn simulated_timing(headers: &[(String, String)]) -> Option<Timing> {
    let value = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(SIMULATED_TIMING_HEADER))
        .map(|(_, v)| v.as_str())?;
    let (mut first_byte, mut duration) = (None, None);
    for part in value.split([';', ',']) {
        let Some((key, number)) = part.split_once('=') else {
            continue;
        };
        let number = number.trim().parse::<u64>().ok();
        match key.trim() {
            "first-byte-ms" => first_byte = number,
            "duration-ms" => duration = number,
            _ => {}
        }
    }
    let duration = duration?;
    Some(Timing {
        duration_ms: duration,
        first_byte_ms: first_byte.unwrap_or(duration).min(duration),
    })
}

/// Count on `clock` the simulated time that did not pass: `simulated` ms
/// where `measured` passed and `credited` were counted already. How many
/// ms it counted.
fn credit_rest(clock: Option<&Clock>, simulated: u64, measured: u64, credited: u64) -> u64 {
    let rest = simulated.saturating_sub(measured).saturating_sub(credited);
    if let Some(clock) = clock
        && rest > 0
    {
        clock.credit(Duration::from_millis(rest));
    }
    rest
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
    /// A recording of a call that succeeded was there before this call.
    had_good: bool,
    /// The calls in flight, to let go of this one once it succeeded.
    calls: Calls,
}

impl Pending {
    /// Whether this exchange may be written: a success always, a failure
    /// only where there was no recording of a call that succeeded.
    fn may_write(&self, failure: Option<&String>) -> bool {
        self.succeeded(failure) || !self.had_good
    }

    fn succeeded(&self, failure: Option<&String>) -> bool {
        (200..300).contains(&self.status) && failure.is_none()
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
        if self.succeeded(failure.as_ref()) {
            lock(&self.calls).remove(&self.id);
        }
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
            .map(|_| ())
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
        let path = self.dir.join(format!("{id}.json"));
        if self.begin(&id, &path, &request, context.attempt)
            && let Some(replay) = &self.replay
        {
            return replay.send(request, context).await;
        }
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
        let key = id.to_string();
        let (attempts, had_good) = self.attempts_before(&key, started);
        let response = self.inner.send(request, context).await?;
        let simulated = simulated_timing(&response.headers);
        let pending = Pending {
            path,
            id: key,
            request: recorded,
            attempts,
            status: response.status,
            headers: response.headers.clone(),
            redactor: self.redactor.clone(),
            secret_headers,
            query,
            order: context.order,
            had_good,
            calls: self.calls.clone(),
        };
        match response.body {
            HttpBody::Full(bytes) => {
                let ms = elapsed_ms(started);
                let timing = simulated.unwrap_or(Timing {
                    duration_ms: ms,
                    first_byte_ms: ms,
                });
                credit_rest(context.clock.as_ref(), timing.duration_ms, ms, 0);
                if !pending.succeeded(None) {
                    // It may be retried: the next attempt's cassette holds it.
                    let attempt = RecordedAttempt {
                        response: pending.response(&bytes, None),
                        timing,
                        wait_ms: 0,
                    };
                    lock(&self.calls)
                        .entry(pending.id.clone())
                        .or_default()
                        .failed
                        .push(FailedAttempt {
                            attempt,
                            ended: Instant::now(),
                        });
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
                    simulated,
                    clock: context.clock.clone(),
                    credited: 0,
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
    /// The timing a fake server simulated, recorded in place of the
    /// measured one.
    simulated: Option<Timing>,
    /// The run's clock, to count the simulated time that did not pass.
    clock: Option<Clock>,
    /// Simulated ms counted on it so far.
    credited: u64,
}

impl TeeStream {
    fn write(&mut self, failure: Option<String>) -> Result<(), TransportError> {
        match self.pending.take() {
            Some(pending) => {
                let duration_ms = elapsed_ms(self.started);
                let measured = Timing {
                    duration_ms,
                    first_byte_ms: self.first_byte_ms.unwrap_or(duration_ms),
                };
                let timing = self.simulated.unwrap_or(measured);
                let clock = self.clock.as_ref();
                credit_rest(clock, timing.duration_ms, duration_ms, self.credited);
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
                    let measured = elapsed_ms(this.started);
                    this.first_byte_ms = Some(measured);
                    if let Some(simulated) = this.simulated {
                        let clock = this.clock.as_ref();
                        this.credited = credit_rest(clock, simulated.first_byte_ms, measured, 0);
                    }
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
