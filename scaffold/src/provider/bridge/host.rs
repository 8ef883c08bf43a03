//! Where bridges serve: one local server for the bridges of a run, each
//! under a path of its own (`/{cell}/…`), so an agent's pooled client
//! keeps its connection from cell to cell.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};

use super::Shared;

/// The local server of a run's bridges, started on first use on the tokio
/// runtime of that use (the harness's, which outlives its cells); it stops
/// when the last clone is dropped. A run without one gives each bridge a
/// server of its own.
#[derive(Clone, Default)]
pub struct BridgeHost {
    inner: Arc<Host>,
}

impl std::fmt::Debug for BridgeHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeHost")
            .field("url", &self.inner.server.get().map(|s| &s.url))
            .finish()
    }
}

#[derive(Default)]
pub(super) struct Host {
    server: tokio::sync::OnceCell<Server>,
    routes: RwLock<HashMap<u64, Arc<Shared>>>,
    next: AtomicU64,
}

struct Server {
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(server) = self.server.get() {
            server.task.abort();
        }
    }
}

impl BridgeHost {
    /// A host with no server yet.
    pub fn new() -> BridgeHost {
        BridgeHost::default()
    }

    /// `http://127.0.0.1:{port}`, the server started on first use.
    async fn url(&self) -> std::io::Result<&str> {
        let weak = Arc::downgrade(&self.inner);
        let server = self
            .inner
            .server
            .get_or_try_init(|| async move {
                let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
                let url = format!("http://{}", listener.local_addr()?);
                let task = tokio::spawn(super::server::serve(listener, weak));
                Ok::<_, std::io::Error>(Server { url, task })
            })
            .await?;
        Ok(&server.url)
    }

    /// Serve the bridge `make` makes from its root URL under a path of
    /// its own: its token and root URL.
    pub(super) async fn add(
        &self,
        make: impl FnOnce(String) -> Arc<Shared>,
    ) -> std::io::Result<(u64, String)> {
        let token = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let url = format!("{}/{token}", self.url().await?);
        self.inner
            .routes
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token, make(url.clone()));
        Ok((token, url))
    }

    /// The bridge served under `token`.
    pub(super) fn route(&self, token: u64) -> Option<Arc<Shared>> {
        self.inner.route(token)
    }

    /// Stop serving the bridge `token`.
    pub(super) fn remove(&self, token: u64) {
        self.inner
            .routes
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&token);
    }

    /// The proxy URL of the bridge `token`: the host's, its token as the
    /// user (a client sends it back in `Proxy-Authorization`).
    pub(super) fn proxy_url(&self, token: u64) -> Option<String> {
        let url = &self.inner.server.get()?.url;
        Some(url.replacen("http://", &format!("http://{token}:scaffold@"), 1))
    }
}

impl Host {
    /// The bridge served under `token`.
    pub(super) fn route(&self, token: u64) -> Option<Arc<Shared>> {
        self.routes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&token)
            .cloned()
    }
}

/// What the server holds of its host: not the host itself, which owns it.
pub(super) type HostRef = Weak<Host>;
