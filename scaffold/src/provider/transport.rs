//! The HTTP seam between providers and the network.
//!
//! Providers build an [`HttpRequest`] and hand it to a [`Transport`]. The
//! default transport sends it with reqwest; the recorder wraps a transport to
//! record exchanges, or points it at the playback server. Because the seam is
//! below the providers, the same provider code runs live, in record mode and
//! in playback.

use std::pin::Pin;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::Stream;
use serde_json::Value;

use super::CallContext;

/// An HTTP request as a provider builds it.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// Absolute URL.
    pub url: String,
    /// Headers in order; credentials included (transports must never write them anywhere).
    pub headers: Vec<(String, String)>,
    /// The JSON body, if any.
    pub body: Option<Value>,
}

impl HttpRequest {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A stream of body chunks.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, TransportError>> + Send>>;

/// A response body: whole, or a stream of chunks (SSE).
pub enum HttpBody {
    /// The complete body.
    Full(Bytes),
    /// Chunks as they arrive.
    Stream(ByteStream),
}

impl std::fmt::Debug for HttpBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpBody::Full(b) => f.debug_tuple("Full").field(&b.len()).finish(),
            HttpBody::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Headers (lower-case names).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: HttpBody,
}

impl HttpResponse {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request got no HTTP response.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum TransportError {
    /// Could not connect in time.
    #[error("connect timeout after {0} ms")]
    ConnectTimeout(u64),
    /// No complete answer in time.
    #[error("timed out after {0} ms")]
    Timeout(u64),
    /// Connection refused, reset or closed early.
    #[error("connection failed: {0}")]
    Connection(String),
    /// Playback could not serve the request (missing or stale recording).
    #[error("{0}")]
    Playback(String),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

/// Sends HTTP requests.
#[async_trait]
pub trait Transport: Send + Sync {
    /// Send `request`; `context` says which recorded call this is.
    async fn send(
        &self,
        request: HttpRequest,
        context: &CallContext,
    ) -> Result<HttpResponse, TransportError>;
}

tokio::task_local! {
    static AMBIENT: std::sync::Arc<dyn Transport>;
}

/// Run `future` with `transport` as the ambient transport: HTTP providers
/// built without an explicit [`Transport`] send through it. The eval harness
/// uses this to put every provider of a cell behind the recorder without the
/// user wiring it.
pub async fn with_transport<F: std::future::Future>(
    transport: std::sync::Arc<dyn Transport>,
    future: F,
) -> F::Output {
    AMBIENT.scope(transport, future).await
}

/// The ambient transport of the current task, if [`with_transport`] set one.
pub(crate) fn ambient_transport() -> Option<std::sync::Arc<dyn Transport>> {
    AMBIENT.try_with(|t| t.clone()).ok()
}

/// Answers every request with one stored 200 body: providers read an
/// answer that reached the process another way (an agent bridge's
/// exchange) with the very code they read their own answers with.
pub(crate) struct Canned {
    body: bytes::Bytes,
    content_type: &'static str,
}

impl Canned {
    /// A JSON body, or (`streamed`) an event stream.
    pub(crate) fn new(body: bytes::Bytes, streamed: bool) -> Canned {
        let content_type = if streamed {
            "text/event-stream"
        } else {
            "application/json"
        };
        Canned { body, content_type }
    }
}

#[async_trait]
impl Transport for Canned {
    async fn send(
        &self,
        _request: HttpRequest,
        _context: &CallContext,
    ) -> Result<HttpResponse, TransportError> {
        Ok(HttpResponse {
            status: 200,
            headers: vec![("content-type".to_string(), self.content_type.to_string())],
            body: HttpBody::Full(self.body.clone()),
        })
    }
}
