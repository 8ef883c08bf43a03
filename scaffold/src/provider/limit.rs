//! Per-provider rate limits: requests and tokens per window and calls in
//! flight, shared by every call to one API, and adaptive.
//!
//! A [`RateLimit`] is set on a provider
//! ([`OpenAi::rate_limit`](super::openai::OpenAi::rate_limit),
//! [`Anthropic::rate_limit`](super::anthropic::Anthropic::rate_limit)). In an
//! eval run every call to one API — the provider's name and base URL, so two
//! variants on the same API share one budget — goes through one
//! [`Limiter`] of the run ([`RateLimits`], which the harness hangs off each
//! cell's environment); outside a run, a provider and its clones share their
//! own limiter.
//!
//! Before a request is sent the limiter waits until it fits: at most the
//! limit's requests in any window (a sliding log, so no window of that length
//! ever holds more, with a fiftieth of the window, at least 100 ms, to spare
//! for requests that take longer on the way than others), at most its tokens (a request counts its prompt's
//! characters / 4 plus its `max_tokens` until its answer reports the real
//! usage) and at most its calls in flight. A wait for the limiter counts
//! against the call's timeout like a retry's backoff, and is part of the
//! call's (and the cell's) wall time; the run's summary prints how long calls
//! waited.
//!
//! **Adaptive.** A 429 lowers the provider's allowed rate for every caller
//! (halved: the requests per window if set, else the calls in flight; once
//! per wave of 429s, not once per rejected request) and pauses every caller
//! for the answer's `retry-after` (else the retry policy's backoff), once
//! for all, instead of each call retrying on its own schedule. Each success
//! raises the rate by one over the current rate (one more request per
//! window's worth of successes) up to the configured limit. Within a run,
//! every HTTP provider has an adaptive limiter, with no fixed limit unless
//! one is set.
//!
//! **Playback** never waits for a limiter: the recorded calls were paced
//! when they were recorded, and virtual time must not depend on real waits.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::CallContext;
use super::transport::HttpRequest;

/// How much one provider may be asked, per window of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    window: Duration,
    requests: Option<u32>,
    tokens: Option<u64>,
    concurrent: Option<usize>,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit::none()
    }
}

impl RateLimit {
    /// No fixed limit (calls still slow down on 429s).
    pub fn none() -> Self {
        RateLimit {
            window: Duration::from_secs(60),
            requests: None,
            tokens: None,
            concurrent: None,
        }
    }

    /// At most `requests` requests a minute (at least 1).
    pub fn per_minute(requests: u32) -> Self {
        RateLimit::per(Duration::from_secs(60), requests)
    }

    /// At most `requests` requests (at least 1) in any `window` (at least 1 ms).
    pub fn per(window: Duration, requests: u32) -> Self {
        RateLimit {
            window: window.max(Duration::from_millis(1)),
            requests: Some(requests.max(1)),
            ..RateLimit::none()
        }
    }

    /// At most `tokens` tokens (input and output) in any window.
    pub fn tokens(mut self, tokens: u64) -> Self {
        self.tokens = Some(tokens.max(1));
        self
    }

    /// At most `tokens` tokens a minute, scaled to the limit's window.
    pub fn tokens_per_minute(self, tokens: u64) -> Self {
        let per_window = tokens as f64 * self.window.as_secs_f64() / 60.0;
        self.tokens(per_window.ceil() as u64)
    }

    /// At most `n` calls in flight at once (at least 1).
    pub fn concurrent(mut self, n: usize) -> Self {
        self.concurrent = Some(n.max(1));
        self
    }

    /// The window requests and tokens are counted in.
    pub fn window(&self) -> Duration {
        self.window
    }

    /// Requests allowed per window.
    pub fn requests(&self) -> Option<u32> {
        self.requests
    }

    /// Tokens allowed per window.
    pub fn token_limit(&self) -> Option<u64> {
        self.tokens
    }

    /// Calls allowed in flight.
    pub fn concurrency(&self) -> Option<usize> {
        self.concurrent
    }

    /// Whether nothing is limited.
    pub fn is_none(&self) -> bool {
        self.requests.is_none() && self.tokens.is_none() && self.concurrent.is_none()
    }
}

impl fmt::Display for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut per_window = Vec::new();
        if let Some(r) = self.requests {
            per_window.push(format!("{r} requests"));
        }
        if let Some(t) = self.tokens {
            per_window.push(format!("{t} tokens"));
        }
        let mut parts = Vec::new();
        if !per_window.is_empty() {
            parts.push(format!(
                "{} per {}",
                per_window.join(", "),
                window_text(self.window)
            ));
        }
        if let Some(c) = self.concurrent {
            parts.push(format!("{c} at once"));
        }
        if parts.is_empty() {
            parts.push("no fixed limit".into());
        }
        f.write_str(&parts.join(", "))
    }
}

fn window_text(window: Duration) -> String {
    if window.subsec_millis() == 0 {
        format!("{} s", window.as_secs())
    } else {
        format!("{} ms", window.as_millis())
    }
}

/// What one limiter did, for the run's summary.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LimiterStats {
    /// Requests let through.
    pub calls: u64,
    /// Requests that had to wait.
    pub waited_calls: u64,
    /// Time those requests waited, in all.
    pub waited: Duration,
    /// 429 answers seen.
    pub throttled: u64,
    /// The lowest requests per window the 429s brought the limit to.
    pub lowest_requests: Option<u32>,
    /// The lowest calls in flight the 429s brought the limit to.
    pub lowest_concurrency: Option<usize>,
}

/// The rate limiter of one API (provider name and base URL); see the
/// [module docs](self).
pub struct Limiter {
    key: String,
    state: Mutex<State>,
    changed: Notify,
}

impl fmt::Debug for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limiter")
            .field("key", &self.key)
            .field("limit", &self.lock().limit)
            .finish_non_exhaustive()
    }
}

/// The least time a request counts beyond its window (see `State::counted_for`).
const GUARD: Duration = Duration::from_millis(100);

struct Spend {
    id: u64,
    at: Instant,
    tokens: u64,
}

struct State {
    limit: RateLimit,
    /// When each request of the last window was sent.
    sent: VecDeque<Instant>,
    /// The tokens of each request of the last window (when tokens are limited).
    spent: VecDeque<Spend>,
    next_id: u64,
    in_flight: usize,
    /// The adaptive requests per window (when requests are limited).
    rate: Option<f64>,
    /// The adaptive calls in flight (when limited, or lowered by a 429).
    concurrency: Option<f64>,
    paused_until: Option<Instant>,
    /// When the rate was last lowered: 429s to requests sent before it
    /// belong to the same wave and lower it no further.
    last_cut: Option<Instant>,
    stats: LimiterStats,
}

enum Admit {
    Now(u64),
    At(Instant),
    WhenFreed,
}

impl State {
    fn new(limit: RateLimit) -> State {
        State {
            limit,
            sent: VecDeque::new(),
            spent: VecDeque::new(),
            next_id: 0,
            in_flight: 0,
            rate: limit.requests.map(f64::from),
            concurrency: limit.concurrent.map(|c| c as f64),
            paused_until: None,
            last_cut: None,
            stats: LimiterStats::default(),
        }
    }

    /// How long a request counts: the window, and a fiftieth of it more
    /// (at least [`GUARD`]), so that the server, which counts requests as
    /// they arrive, never sees more than the limit in a window when some
    /// take longer on the way than others (a new connection, a busy machine).
    fn counted_for(&self) -> Duration {
        self.limit.window + (self.limit.window / 50).max(GUARD)
    }

    fn forget_before(&mut self, now: Instant) {
        let window = self.counted_for();
        while self.sent.front().is_some_and(|&at| at + window <= now) {
            self.sent.pop_front();
        }
        while self.spent.front().is_some_and(|s| s.at + window <= now) {
            self.spent.pop_front();
        }
    }

    /// Let a request of `estimate` tokens through now, or say when to look again.
    fn admit(&mut self, now: Instant, estimate: u64) -> Admit {
        self.forget_before(now);
        if let Some(until) = self.paused_until.filter(|&u| u > now) {
            return Admit::At(until);
        }
        if let Some(c) = self.concurrency
            && self.in_flight >= (c as usize).max(1)
        {
            return Admit::WhenFreed;
        }
        if let Some(r) = self.rate {
            let cap = (r as usize).max(1);
            if self.sent.len() >= cap {
                return Admit::At(self.sent[self.sent.len() - cap] + self.counted_for());
            }
        }
        if let Some(at) = self.tokens_free_at(estimate) {
            return Admit::At(at);
        }
        self.sent.push_back(now);
        let id = self.next_id;
        self.next_id += 1;
        if self.limit.tokens.is_some() {
            self.spent.push_back(Spend {
                id,
                at: now,
                tokens: estimate,
            });
        }
        self.in_flight += 1;
        Admit::Now(id)
    }

    /// When enough tokens leave the window for `estimate` more; `None` when
    /// they fit now. A request larger than the whole limit goes alone.
    fn tokens_free_at(&self, estimate: u64) -> Option<Instant> {
        let limit = self.limit.tokens?;
        let mut used: u64 = self.spent.iter().map(|s| s.tokens).sum();
        if used.saturating_add(estimate) <= limit {
            return None;
        }
        for s in &self.spent {
            used -= s.tokens;
            if used.saturating_add(estimate) <= limit || used == 0 {
                return Some(s.at + self.counted_for());
            }
        }
        None
    }

    fn succeeded(&mut self) {
        if let (Some(r), Some(max)) = (self.rate, self.limit.requests) {
            self.rate = Some((r + 1.0 / r.max(1.0)).min(f64::from(max)));
        }
        if let Some(c) = self.concurrency {
            let max = self.limit.concurrent.map_or(f64::INFINITY, |m| m as f64);
            self.concurrency = Some((c + 1.0 / c.max(1.0)).min(max));
        }
    }

    fn throttled(&mut self, sent_at: Instant, now: Instant, pause: Duration) {
        self.stats.throttled += 1;
        let until = now + pause;
        if self.paused_until.is_none_or(|p| p < until) {
            self.paused_until = Some(until);
        }
        if self.last_cut.is_some_and(|cut| sent_at < cut) {
            return;
        }
        self.last_cut = Some(now);
        if let Some(r) = self.rate {
            let lowered = (r / 2.0).max(1.0);
            self.rate = Some(lowered);
            let lowered = lowered as u32;
            self.stats.lowest_requests = Some(
                self.stats
                    .lowest_requests
                    .map_or(lowered, |l| l.min(lowered)),
            );
        } else {
            let current = self
                .concurrency
                .unwrap_or(f64::INFINITY)
                .min(self.in_flight as f64);
            let lowered = (current / 2.0).max(1.0);
            self.concurrency = Some(lowered);
            let lowered = lowered as usize;
            self.stats.lowest_concurrency = Some(
                self.stats
                    .lowest_concurrency
                    .map_or(lowered, |l| l.min(lowered)),
            );
        }
    }
}

impl Limiter {
    /// A limiter for the API `key` (for messages) with `limit`.
    pub fn new(key: impl Into<String>, limit: RateLimit) -> Self {
        Limiter {
            key: key.into(),
            state: Mutex::new(State::new(limit)),
            changed: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Which API this limits: `openai http://host/v1`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The configured limit.
    pub fn limit(&self) -> RateLimit {
        self.lock().limit
    }

    /// What the limiter did so far.
    pub fn stats(&self) -> LimiterStats {
        self.lock().stats
    }

    /// Whether requests must estimate their tokens.
    pub fn counts_tokens(&self) -> bool {
        self.lock().limit.tokens.is_some()
    }

    /// Take `limit` if none was set (the first provider to name a limit for
    /// an API sets it).
    fn configure(&self, limit: &RateLimit) {
        let mut state = self.lock();
        if state.limit.is_none() && !limit.is_none() {
            // What is in flight and in the window stays counted.
            state.limit = *limit;
            state.rate = limit.requests.map(f64::from);
            state.concurrency = limit.concurrent.map(|c| c as f64);
        }
    }

    /// Wait until a request of about `estimate` tokens may be sent.
    pub async fn acquire(self: &Arc<Self>, estimate: u64) -> Permit {
        let began = Instant::now();
        let mut blocked = false;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            let next = {
                let mut state = self.lock();
                // Registered before the lock goes: no wake-up is missed.
                changed.as_mut().enable();
                let now = Instant::now();
                match state.admit(now, estimate) {
                    Admit::Now(id) => {
                        let waited = match blocked {
                            true => now.saturating_duration_since(began),
                            false => Duration::ZERO,
                        };
                        state.stats.calls += 1;
                        if blocked {
                            state.stats.waited_calls += 1;
                            state.stats.waited += waited;
                        }
                        return Permit {
                            limiter: self.clone(),
                            id,
                            sent_at: now,
                            waited,
                            usage: (0, 0),
                        };
                    }
                    Admit::At(at) => Some(at),
                    Admit::WhenFreed => None,
                }
            };
            blocked = true;
            match next {
                Some(at) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = &mut changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }
}

/// A request let through by a [`Limiter`]; it counts as in flight until dropped.
pub struct Permit {
    limiter: Arc<Limiter>,
    id: u64,
    sent_at: Instant,
    waited: Duration,
    /// The largest input and output token counts seen in the answer.
    usage: (u64, u64),
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("limiter", &self.limiter.key)
            .field("waited", &self.waited)
            .finish_non_exhaustive()
    }
}

impl Permit {
    /// The limiter that let the request through.
    pub fn limiter(&self) -> &Arc<Limiter> {
        &self.limiter
    }

    /// How long the request waited for the limiter.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// The answer succeeded: the rate creeps back up.
    pub fn succeeded(&self) {
        self.limiter.lock().succeeded();
    }

    /// The answer was a 429: lower the rate for everyone and pause every
    /// caller for `pause` (the server's `retry-after`, else a backoff).
    pub fn throttled(&self, pause: Duration) {
        self.limiter
            .lock()
            .throttled(self.sent_at, Instant::now(), pause);
        self.limiter.changed.notify_waiters();
    }

    /// Count the usage a JSON answer (or a stream event) reports, instead of
    /// the estimate, when tokens are limited.
    pub(crate) fn observe_usage(&mut self, answer: &Value) {
        let Some((input, output)) = usage_of(answer) else {
            return;
        };
        self.usage = (self.usage.0.max(input), self.usage.1.max(output));
        let total = self.usage.0 + self.usage.1;
        let mut state = self.limiter.lock();
        if let Some(spend) = state.spent.iter_mut().find(|s| s.id == self.id) {
            spend.tokens = total;
        }
        drop(state);
        self.limiter.changed.notify_waiters();
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut state = self.limiter.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
        drop(state);
        self.limiter.changed.notify_waiters();
    }
}

/// The input and output tokens an OpenAI or Anthropic answer (or stream
/// event) reports: `usage`, or `message.usage` (Anthropic's `message_start`).
fn usage_of(answer: &Value) -> Option<(u64, u64)> {
    let usage = answer
        .get("usage")
        .or_else(|| answer.get("message").and_then(|m| m.get("usage")))
        .filter(|u| u.is_object())?;
    let count = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| usage.get(*n).and_then(Value::as_u64))
            .unwrap_or(0)
    };
    Some((
        count(&["input_tokens", "prompt_tokens"]),
        count(&["output_tokens", "completion_tokens"]),
    ))
}

/// What a request will cost in tokens before its answer says: its body's
/// characters / 4 plus the `max_tokens` (or `max_completion_tokens`) it asks for.
pub(crate) fn estimate_tokens(request: &HttpRequest) -> u64 {
    let Some(body) = &request.body else {
        return 0;
    };
    let chars = serde_json::to_string(body).map_or(0, |s| s.chars().count() as u64);
    let max_tokens = ["max_tokens", "max_completion_tokens"]
        .iter()
        .find_map(|k| body.get(*k).and_then(Value::as_u64))
        .unwrap_or(0);
    chars / 4 + max_tokens
}

/// The limiters of one run, one per API, shared by all its cells. Clones
/// share them.
#[derive(Clone, Default)]
pub struct RateLimits {
    limiters: Arc<Mutex<HashMap<String, Arc<Limiter>>>>,
}

impl fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimits")
            .field("apis", &self.limiters().len())
            .finish()
    }
}

impl RateLimits {
    /// No limiter yet.
    pub fn new() -> Self {
        RateLimits::default()
    }

    /// The limiter of the API `key`, made on first use with `limit` (or
    /// none); a limit named later applies only if none was named before.
    pub fn limiter(&self, key: &str, limit: Option<&RateLimit>) -> Arc<Limiter> {
        let mut map = self.limiters.lock().unwrap_or_else(|p| p.into_inner());
        let limiter = map
            .entry(key.to_string())
            .or_insert_with(|| Arc::new(Limiter::new(key, limit.copied().unwrap_or_default())))
            .clone();
        drop(map);
        if let Some(limit) = limit {
            limiter.configure(limit);
        }
        limiter
    }

    /// Every limiter made so far, by key.
    pub fn limiters(&self) -> Vec<Arc<Limiter>> {
        let map = self.limiters.lock().unwrap_or_else(|p| p.into_inner());
        let mut all: Vec<Arc<Limiter>> = map.values().cloned().collect();
        all.sort_by(|a, b| a.key.cmp(&b.key));
        all
    }

    /// One line per limiter that made calls wait or saw a 429, for the
    /// run's summary.
    pub fn summary_lines(&self) -> Vec<String> {
        self.limiters()
            .iter()
            .filter_map(|l| summary_line(l.key(), &l.limit(), &l.stats()))
            .collect()
    }
}

fn summary_line(key: &str, limit: &RateLimit, stats: &LimiterStats) -> Option<String> {
    if stats.waited_calls == 0 && stats.throttled == 0 {
        return None;
    }
    let mut line = format!(
        "Rate limit {key} ({limit}): {} of {} calls waited {:.1} s in all",
        stats.waited_calls,
        stats.calls,
        stats.waited.as_secs_f64()
    );
    if stats.throttled > 0 {
        line.push_str(&format!("; {} × 429", stats.throttled));
        if let Some(r) = stats.lowest_requests {
            line.push_str(&format!(
                ", lowered to {r} requests per {}",
                window_text(limit.window)
            ));
        }
        if let Some(c) = stats.lowest_concurrency {
            line.push_str(&format!(", lowered to {c} at once"));
        }
    }
    Some(line)
}

tokio::task_local! {
    static RUN_LIMITS: RateLimits;
}

/// Run `future` with `limits` as the run's limiters: HTTP providers called
/// inside it share them by API. The eval harness does this for every cell
/// outside playback.
pub async fn with_rate_limits<F: std::future::Future>(limits: RateLimits, future: F) -> F::Output {
    RUN_LIMITS.scope(limits, future).await
}

/// The run's limiters, when the current task runs inside
/// [`with_rate_limits`] (the agent bridge hands them to the tasks that
/// serve an agent's calls).
pub(crate) fn run_limits() -> Option<RateLimits> {
    RUN_LIMITS.try_with(RateLimits::clone).ok()
}

/// A provider's rate limit and, outside a run, the limiter its clones share.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProviderLimit {
    limit: Option<RateLimit>,
    own: Option<Arc<Limiter>>,
}

impl ProviderLimit {
    /// `limit` for the provider `name` at `base_url`.
    pub(crate) fn new(name: &str, base_url: &str, limit: RateLimit) -> Self {
        ProviderLimit {
            limit: Some(limit),
            own: Some(Arc::new(Limiter::new(api_key(name, base_url), limit))),
        }
    }

    /// The limiter a call to `name` at `base_url` goes through: none in
    /// playback (virtual time), the run's for that API inside a run, else
    /// the provider's own (if it has a limit).
    pub(crate) fn resolve(
        &self,
        name: &str,
        base_url: &str,
        context: &CallContext,
    ) -> Option<Arc<Limiter>> {
        if context.clock.as_ref().is_some_and(|c| c.is_virtual()) {
            return None;
        }
        match RUN_LIMITS.try_with(|run| run.limiter(&api_key(name, base_url), self.limit.as_ref()))
        {
            Ok(limiter) => Some(limiter),
            Err(_) => self.own.clone(),
        }
    }
}

/// `openai http://host/v1`: the provider and its base URL without the
/// query (which may hold a key).
fn api_key(name: &str, base_url: &str) -> String {
    let url = base_url.split('?').next().unwrap_or_default();
    format!("{name} {url}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Real time (tokio's `test-util` is not built here): waits are checked
    /// from below, with room above for a loaded machine.
    #[tokio::test]
    async fn no_window_holds_more_than_the_limit() {
        let limiter = Arc::new(Limiter::new("t", RateLimit::per(ms(150), 3)));
        let start = Instant::now();
        let mut at = Vec::new();
        for _ in 0..7 {
            let _permit = limiter.acquire(0).await;
            at.push(start.elapsed());
        }
        for (i, &t) in at.iter().enumerate() {
            if i >= 3 {
                // Never sooner than a window after the request three before.
                assert!(t >= at[i - 3] + ms(150), "{at:?}");
            }
        }
        assert!(at[2] < ms(100), "the first three at once: {at:?}");
        // The 4th waits for the first three to leave, then the 5th and 6th go with it.
        assert_eq!(limiter.stats().waited_calls, 2);
    }

    #[tokio::test]
    async fn tokens_wait_for_the_window_and_settle_with_the_real_usage() {
        assert_eq!(
            RateLimit::none().tokens(5).window(),
            Duration::from_secs(60)
        );
        let limiter = Arc::new(Limiter::new("t", RateLimit::per(ms(200), 1000).tokens(100)));
        let start = Instant::now();
        let mut first = limiter.acquire(80).await;
        // The answer says 30 tokens, not 80: 70 more fit at once.
        first.observe_usage(
            &serde_json::json!({"usage": {"prompt_tokens": 20, "completion_tokens": 10}}),
        );
        let _second = limiter.acquire(70).await;
        assert!(start.elapsed() < ms(100));
        // 100 are spent: the next waits for the first to leave the window.
        let _third = limiter.acquire(30).await;
        assert!(start.elapsed() >= ms(200));
        // A request larger than the whole limit goes alone, not never.
        let _big = limiter.acquire(500).await;
        assert!(start.elapsed() >= ms(400));
    }

    #[tokio::test]
    async fn calls_in_flight_wait_for_a_permit_to_drop() {
        let limiter = Arc::new(Limiter::new("t", RateLimit::none().concurrent(2)));
        let a = limiter.acquire(0).await;
        let _b = limiter.acquire(0).await;
        let waiting = tokio::spawn({
            let limiter = limiter.clone();
            async move { limiter.acquire(0).await.waited() }
        });
        tokio::time::sleep(ms(50)).await;
        assert!(!waiting.is_finished());
        drop(a);
        assert!(waiting.await.unwrap() >= ms(50));
    }

    #[tokio::test]
    async fn a_429_halves_the_rate_once_per_wave_and_pauses_everyone() {
        let limiter = Arc::new(Limiter::new("t", RateLimit::per(ms(1000), 8)));
        let wave: Vec<Permit> =
            futures_util::future::join_all((0..4).map(|_| limiter.acquire(0))).await;
        // The whole wave is rejected: the rate is halved once, not four times.
        for permit in &wave {
            permit.throttled(ms(300));
        }
        drop(wave);
        let stats = limiter.stats();
        assert_eq!((stats.throttled, stats.lowest_requests), (4, Some(4)));
        let next = limiter.acquire(0).await;
        assert!(next.waited() >= ms(300), "everyone waits the retry-after");
        // A 429 to a request sent after the cut halves it again.
        next.throttled(Duration::ZERO);
        assert_eq!(limiter.stats().lowest_requests, Some(2));
        // Successes creep back up, never past the limit.
        for _ in 0..1000 {
            next.succeeded();
        }
        assert_eq!(limiter.lock().rate, Some(8.0));
    }

    #[tokio::test]
    async fn without_a_limit_a_429_lowers_the_calls_in_flight() {
        let limiter = Arc::new(Limiter::new("t", RateLimit::none()));
        let wave: Vec<Permit> =
            futures_util::future::join_all((0..6).map(|_| limiter.acquire(0))).await;
        wave[0].throttled(ms(10));
        assert_eq!(limiter.stats().lowest_concurrency, Some(3));
        drop(wave);
        let held: Vec<Permit> =
            futures_util::future::join_all((0..3).map(|_| limiter.acquire(0))).await;
        let fourth = tokio::spawn({
            let limiter = limiter.clone();
            async move { limiter.acquire(0).await.waited() }
        });
        tokio::time::sleep(ms(100)).await;
        assert!(!fourth.is_finished(), "three at once after the 429");
        drop(held);
        assert!(fourth.await.unwrap() >= ms(100));
    }

    #[test]
    fn a_run_shares_one_limiter_per_api_and_the_first_limit_named() {
        let run = RateLimits::new();
        let none = run.limiter(&api_key("openai", "http://h/v1?key=sk-1"), None);
        let limited = run.limiter(
            &api_key("openai", "http://h/v1"),
            Some(&RateLimit::per_minute(5)),
        );
        assert!(Arc::ptr_eq(&none, &limited), "one limiter for one API");
        assert_eq!(limited.key(), "openai http://h/v1", "no query in the key");
        assert_eq!(limited.limit().requests(), Some(5), "a limit replaces none");
        assert_eq!(limited.lock().rate, Some(5.0));
        run.limiter(
            &api_key("openai", "http://h/v1"),
            Some(&RateLimit::per_minute(9)),
        );
        assert_eq!(limited.limit().requests(), Some(5), "the first limit stays");
        let other = run.limiter(&api_key("anthropic", "http://h"), None);
        assert!(!Arc::ptr_eq(&other, &limited));
        assert_eq!(run.limiters().len(), 2);
    }

    #[test]
    fn playback_goes_through_no_limiter() {
        let limit = ProviderLimit::new("openai", "http://h/v1", RateLimit::per_minute(1));
        let live = CallContext::default();
        assert!(limit.resolve("openai", "http://h/v1", &live).is_some());
        let playback = CallContext {
            clock: Some(crate::clock::Clock::virtual_time()),
            ..CallContext::default()
        };
        assert!(limit.resolve("openai", "http://h/v1", &playback).is_none());
        assert!(
            ProviderLimit::default()
                .resolve("openai", "http://h/v1", &live)
                .is_none()
        );
    }

    #[test]
    fn estimates_and_usage() {
        let request = HttpRequest {
            method: "POST".into(),
            url: "http://h".into(),
            headers: Vec::new(),
            body: Some(serde_json::json!({"max_tokens": 100, "p": "x".repeat(390)})),
        };
        let chars = serde_json::to_string(request.body.as_ref().unwrap())
            .unwrap()
            .len() as u64;
        assert_eq!(estimate_tokens(&request), chars / 4 + 100);
        let anthropic_start = serde_json::json!({"type": "message_start", "message": {"usage": {"input_tokens": 12, "output_tokens": 1}}});
        assert_eq!(usage_of(&anthropic_start), Some((12, 1)));
        assert_eq!(usage_of(&serde_json::json!({"choices": []})), None);
    }

    #[test]
    fn the_summary_line_says_what_the_limiter_did() {
        let stats = LimiterStats {
            calls: 120,
            waited_calls: 80,
            waited: Duration::from_millis(34_240),
            throttled: 3,
            lowest_requests: Some(250),
            lowest_concurrency: None,
        };
        assert_eq!(
            summary_line("openai http://h/v1", &RateLimit::per_minute(500), &stats).as_deref(),
            Some(
                "Rate limit openai http://h/v1 (500 requests per 60 s): 80 of 120 calls waited \
                 34.2 s in all; 3 × 429, lowered to 250 requests per 60 s"
            )
        );
        assert_eq!(
            summary_line("k", &RateLimit::none(), &LimiterStats::default()),
            None
        );
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn a_rate_limit_reports_its_requests_window_and_description() {
        use crate::provider::limit::RateLimit;
        use std::time::Duration;

        let limit = RateLimit::per_minute(500)
            .tokens_per_minute(30_000)
            .concurrent(8);
        assert_eq!(limit.requests(), Some(500));
        assert_eq!(
            limit.to_string(),
            "500 requests, 30000 tokens per 60 s, 8 at once"
        );
        // A short window, for tests: 5 requests per half second.
        let fast = RateLimit::per(Duration::from_millis(500), 5);
        assert_eq!(fast.window(), Duration::from_millis(500));
    }
}
