//! How long a call may take and how its failed attempts are retried.

use std::time::{Duration, SystemTime};

/// How failed attempts are retried.
///
/// An attempt is retried when the status is 429, 500, 502, 503, 504 or 529,
/// or the connection failed before a response arrived (refused, reset,
/// closed early, connect timeout). A `x-should-retry: true|false` response
/// header overrides the status rule. The wait before the next attempt is the
/// server's hint (`retry-after-ms`, then `Retry-After` in seconds or as an
/// HTTP date), capped at [`max_retry_after`](Self::max_retry_after); without a
/// hint it is exponential backoff from [`base_delay`](Self::base_delay),
/// capped at [`max_delay`](Self::max_delay), minus up to
/// [`jitter`](Self::jitter) of itself. No retry starts when it could not finish
/// before the call timeout; streams are never retried once their body began.
///
/// ```
/// use std::time::Duration;
/// use scaffold::provider::http::RetryPolicy;
///
/// let policy = RetryPolicy::new(5)
///     .base_delay(Duration::from_millis(200))
///     .max_delay(Duration::from_secs(4));
/// assert_eq!(policy.backoff(1), Duration::from_millis(200));
/// assert_eq!(policy.backoff(3), Duration::from_millis(800));
/// assert_eq!(policy.backoff(10), Duration::from_secs(4));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = no retries).
    pub max_attempts: u32,
    /// Backoff before the first retry.
    pub base_delay: Duration,
    /// Upper bound of the exponential backoff.
    pub max_delay: Duration,
    /// Fraction (0..=1) of the backoff that may be randomly taken off it.
    pub jitter: f64,
    /// Upper bound on a server's `Retry-After` hint.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    /// 4 attempts, 500 ms base delay, 8 s max delay, 25% jitter, hints up to 60 s.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            jitter: 0.25,
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The default policy with `max_attempts` attempts in all.
    pub fn new(max_attempts: u32) -> Self {
        RetryPolicy {
            max_attempts: max_attempts.max(1),
            ..RetryPolicy::default()
        }
    }

    /// One attempt, no retries.
    pub fn none() -> Self {
        RetryPolicy::new(1)
    }

    /// Set the backoff before the first retry.
    pub fn base_delay(mut self, delay: Duration) -> Self {
        self.base_delay = delay;
        self
    }

    /// Set the upper bound of the exponential backoff.
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// Set the jitter fraction (clamped to 0..=1; 0 makes delays exact).
    pub fn jitter(mut self, fraction: f64) -> Self {
        self.jitter = if fraction.is_finite() {
            fraction.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self
    }

    /// Set the upper bound on a server's `Retry-After` hint.
    pub fn max_retry_after(mut self, bound: Duration) -> Self {
        self.max_retry_after = bound;
        self
    }

    /// The backoff (without jitter) before retry number `retry` (1-based).
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1).min(31));
        self.base_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }

    /// The wait before retry number `retry`, given the server's hint.
    pub(super) fn delay(&self, retry: u32, hint: Option<Duration>) -> Duration {
        if let Some(hint) = hint {
            return hint.min(self.max_retry_after);
        }
        let backoff = self.backoff(retry);
        let jitter = if self.jitter.is_finite() {
            self.jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        if jitter == 0.0 {
            return backoff;
        }
        backoff.mul_f64(1.0 - jitter * random_unit())
    }
}

/// A uniformly distributed number in `[0, 1)`, good enough for jitter.
fn random_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    hasher.write_u32(nanos);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Time limits and retries of provider calls.
///
/// ```
/// use std::time::Duration;
/// use scaffold::provider::http::{HttpConfig, RetryPolicy};
///
/// let config = HttpConfig::default()
///     .timeout(Duration::from_secs(120))
///     .idle_timeout(Duration::from_secs(30))
///     .retry(RetryPolicy::new(3));
/// assert_eq!(config.retry.max_attempts, 3);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HttpConfig {
    /// Bound on a whole call: every attempt, every backoff wait and the
    /// reading of the full (streamed) answer.
    pub timeout: Duration,
    /// Bound on the silence between two chunks of a streamed answer.
    pub idle_timeout: Duration,
    /// How failed attempts are retried.
    pub retry: RetryPolicy,
}

impl Default for HttpConfig {
    /// 10 minute call timeout, 2 minute stream idle timeout, default retries.
    fn default() -> Self {
        HttpConfig {
            timeout: Duration::from_secs(600),
            idle_timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
        }
    }
}

impl HttpConfig {
    /// Set the bound on a whole call.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Set the bound on the silence between stream chunks.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Set the retry policy.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
}

/// The wait a response asks for: `retry-after-ms` (milliseconds), else
/// `Retry-After` as seconds or as an HTTP date (relative to `now`).
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use scaffold::provider::http::parse_retry_after;
///
/// let headers = vec![("retry-after".to_string(), "2".to_string())];
/// assert_eq!(parse_retry_after(&headers, SystemTime::now()), Some(Duration::from_secs(2)));
/// ```
#[doc(hidden)]
pub fn parse_retry_after(headers: &[(String, String)], now: SystemTime) -> Option<Duration> {
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    if let Some(ms) = find("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && let Ok(d) = Duration::try_from_secs_f64(ms / 1000.0)
    {
        return Some(d);
    }
    let value = find("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Whether a failed status is worth another attempt.
pub(super) fn retriable_status(status: u16, headers: &[(String, String)]) -> bool {
    let should = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("x-should-retry"))
        .map(|(_, v)| v.trim().to_ascii_lowercase());
    match should.as_deref() {
        Some("true") => true,
        Some("false") => false,
        _ => matches!(status, 429 | 500 | 502 | 503 | 504 | 529),
    }
}
