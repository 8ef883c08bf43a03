//! Server-Sent Events: an incremental parser and the stream of a call's events.

use super::{later, millis, snippet};
use std::collections::VecDeque;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use tokio::time::Instant;

use crate::provider::ProviderError;
use crate::provider::limit::Permit;
use crate::provider::transport::ByteStream;

/// Longest SSE line or event accepted before the stream is declared broken.
const MAX_SSE_EVENT: usize = 16 * 1024 * 1024;

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
    pub(super) provider: String,
    /// The limiter's permit: the stream is in flight until it ends, and its
    /// usage events settle its tokens.
    pub(super) permit: Option<Permit>,
    pub(super) body: Option<ByteStream>,
    pub(super) parser: SseParser,
    pub(super) queue: VecDeque<SseEvent>,
    pub(super) start: Instant,
    pub(super) deadline: Instant,
    pub(super) idle: Duration,
    pub(super) events: usize,
    pub(super) attempts: u32,
    /// The body's first bytes, shown when it holds no event at all.
    pub(super) head: Vec<u8>,
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
