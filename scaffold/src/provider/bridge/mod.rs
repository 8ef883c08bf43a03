//! The agent bridge: a local HTTP endpoint that an agent written on
//! another framework (rig, async-openai, plain reqwest, a Python or
//! TypeScript SDK) calls instead of the model API.
//!
//! One [`Bridge`] serves one run (an eval cell) on `127.0.0.1`. It hands
//! out base URLs per agent name, `{bridge}/{agent}/openai/v1` for
//! OpenAI-compatible clients and `{bridge}/{agent}/anthropic` for
//! Anthropic ones, and sends every call on through the run's transport
//! (the cell's [`ProviderRecorder`] in an eval) with the providers' own
//! [`HttpClient`](super::http::HttpClient): live, record and playback,
//! virtual time, redaction, retries, rate limits and the stale-recording
//! diff hold as for native agents. Each call gets the recording id of its
//! agent name and its place among that agent's calls; in playback, calls
//! an agent makes at once find their recordings by content.
//!
//! Every call becomes an [`Exchange`]: what was asked (the conversation,
//! with the tool results the agent sent back) and what was answered (text,
//! tool calls, usage, stop reason), read for the three APIs the bridge
//! understands ([`Api`]); the workflow layer turns exchanges into signals.

mod host;
mod protocol;
mod server;

pub use host::BridgeHost;
pub(crate) use protocol::Api;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::http::HttpProvider;
use super::limit::RateLimits;
use super::recorder::ProviderRecorder;
use super::transport::Transport;
use super::{CompletionRequest, CompletionResponse, ProviderError, RecordingId};

/// Makes the recording id of an agent's `n`-th call.
pub(crate) type RecordingIds = Arc<dyn Fn(&str, u32) -> RecordingId + Send + Sync>;

/// What a bridge sends with and how it keys its calls.
#[derive(Clone)]
pub(crate) struct BridgeSetup {
    /// The transport calls go through (the cell's recorder).
    pub(crate) transport: Arc<dyn Transport>,
    /// The recorder, when there is one: in playback, calls made at once
    /// find their recordings by content through it.
    pub(crate) recorder: Option<ProviderRecorder>,
    /// Recording ids by agent name and call (none outside an eval).
    pub(crate) ids: Option<RecordingIds>,
    /// Whether calls keep playback's virtual time.
    pub(crate) virtual_time: bool,
    /// The run's rate limiters, if it shares some.
    pub(crate) limits: Option<RateLimits>,
    /// Where OpenAI-compatible calls go (`OPENAI_BASE_URL`, key, retries).
    pub(crate) openai: HttpProvider,
    /// Where Anthropic calls go.
    pub(crate) anthropic: HttpProvider,
}

/// One call an agent made through the bridge.
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    /// The agent name of the base URL it came through.
    pub(crate) agent: String,
    /// `openai` or `anthropic`.
    pub(crate) provider: &'static str,
    /// What the path says the call is.
    pub(crate) api: Api,
    /// Its recording id, inside an eval.
    pub(crate) recording_id: Option<RecordingId>,
    /// Its place among the agent's calls (the recording id's `inv`).
    pub(crate) invocation: u32,
    /// In playback, its recording's place among the calls of the run it
    /// was recorded in.
    pub(crate) recorded_order: Option<u64>,
    /// The model asked for.
    pub(crate) model: Option<String>,
    /// The conversation it sent.
    pub(crate) asked: CompletionRequest,
    /// Whether the answer was streamed.
    pub(crate) streamed: bool,
    /// Order marks (see [`Marker`]) when it arrived and when its
    /// answer ended.
    pub(crate) ticks: (u64, u64),
    /// Real time since the bridge started, when it arrived and ended.
    pub(crate) real: (Duration, Duration),
    /// The time its recording accounts for (playback's virtual time).
    pub(crate) recorded: Duration,
    /// Attempts it took (retries of 429s and 5xx).
    pub(crate) attempts: u32,
    /// The answer, read; `None` for a path the bridge does not read.
    pub(crate) answer: Option<CompletionResponse>,
    /// Why the answer could not be read, if it could not.
    pub(crate) unread: Option<String>,
    /// Why the call failed, if it did.
    pub(crate) error: Option<ProviderError>,
}

/// What a bridge saw: its exchanges in the order they ended, and requests
/// it could not serve.
#[derive(Debug, Default)]
pub(crate) struct BridgeLog {
    /// Every call that ended.
    pub(crate) exchanges: Vec<Exchange>,
    /// Requests that were not under a base URL the bridge handed out, or
    /// not JSON: each fails the run.
    pub(crate) problems: Vec<String>,
}

/// A running bridge; dropping it stops serving it.
pub(crate) struct Bridge {
    url: String,
    token: u64,
    host: BridgeHost,
    shared: Arc<Shared>,
}

struct Shared {
    setup: BridgeSetup,
    url: String,
    started: Instant,
    ticks: AtomicU64,
    state: Mutex<State>,
    /// Streamed answers still being passed on.
    pumps: Mutex<tokio::task::JoinSet<()>>,
}

#[derive(Default)]
struct State {
    /// Calls so far per agent name.
    calls: HashMap<String, u32>,
    /// Recordings already answered (playback).
    used: HashSet<RecordingId>,
    log: BridgeLog,
}

/// Whether `name` can name an agent: it is a path segment of the base
/// URLs and part of recording ids (`[A-Za-z0-9_-]`, 1 to 64 characters).
pub(crate) fn valid_agent_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl Bridge {
    /// Start a bridge on `host`'s server (a server of its own without
    /// one), on `127.0.0.1`.
    pub(crate) async fn start(
        setup: BridgeSetup,
        host: Option<BridgeHost>,
    ) -> std::io::Result<Bridge> {
        let host = host.unwrap_or_default();
        let (token, url) = host
            .add(|url| {
                Arc::new(Shared {
                    setup,
                    url,
                    started: Instant::now(),
                    ticks: AtomicU64::new(0),
                    state: Mutex::new(State::default()),
                    pumps: Mutex::new(tokio::task::JoinSet::new()),
                })
            })
            .await?;
        let shared = host
            .route(token)
            .ok_or_else(|| std::io::Error::other("the bridge's route vanished"))?;
        Ok(Bridge {
            url,
            token,
            host,
            shared,
        })
    }

    /// A proxy URL that leads to this bridge, which refuses what comes
    /// through it (a program's `HTTPS_PROXY`, so that a call around the
    /// base URL fails and names its host).
    pub(crate) fn proxy_url(&self) -> Option<String> {
        self.host.proxy_url(self.token)
    }

    /// `http://127.0.0.1:{port}/{bridge}`, the root of its base URLs.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// What stamps the things an agent adds with order marks and time.
    pub(crate) fn marker(&self) -> Marker {
        Marker(self.shared.clone())
    }

    /// Stop serving and give what was seen. Streamed answers still being
    /// passed on get `grace` to end (the agent has returned: they end
    /// when it let go of them); a call still under way that the agent did
    /// not wait for (a task it left running) is not waited for, and is
    /// not part of the run.
    pub(crate) async fn finish(self, grace: Duration) -> BridgeLog {
        self.host.remove(self.token);
        let mut pumps =
            std::mem::take(&mut *self.shared.pumps.lock().unwrap_or_else(|e| e.into_inner()));
        let drained = async { while pumps.join_next().await.is_some() {} };
        if tokio::time::timeout(grace, drained).await.is_err() {
            pumps.abort_all();
        }
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut state.log)
    }
}

/// Stamps what an agent adds with the bridge's order marks (exchanges take one
/// when they arrive and one when they end) and its real time.
#[derive(Clone)]
pub(crate) struct Marker(Arc<Shared>);

impl Marker {
    /// The next order mark and the real time since the bridge started.
    pub(crate) fn mark(&self) -> (u64, Duration) {
        (self.0.tick(), self.0.started.elapsed())
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.host.remove(self.token);
    }
}

impl Shared {
    fn tick(&self) -> u64 {
        self.ticks.fetch_add(1, Ordering::Relaxed)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, exchange: Exchange) {
        self.state().log.exchanges.push(exchange);
    }

    fn problem(&self, message: String) {
        self.state().log.problems.push(message);
    }
}
