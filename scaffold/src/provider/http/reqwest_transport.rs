//! [`ReqwestTransport`]: real HTTP with reqwest over rustls, and the
//! process-wide background client behind [`ReqwestTransport::shared`].

use super::{chain, is_event_stream, millis};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;

use crate::provider::CallContext;
use crate::provider::transport::{
    ByteStream, HttpBody, HttpRequest, HttpResponse, Transport, TransportError,
};

/// Default time allowed to establish a TCP (and TLS) connection.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Make rustls's `ring` provider the process's default crypto provider,
/// unless one is set. A bridged agent in the same process builds its own
/// HTTP client (rig, async-openai, reqwest), and the reqwest this crate
/// brings has no provider of its own: without a default one, building
/// that client panics ("no process-level CryptoProvider").
pub(crate) fn install_default_tls() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
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
            .tls_backend_preconfigured(super::tls::client_config()?)
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
pub(super) struct Served {
    pub(super) runtime: tokio::runtime::Handle,
    pub(super) transport: Arc<dyn Transport>,
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
