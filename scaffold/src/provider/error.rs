use thiserror::Error;

/// Why a provider call failed.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum ProviderError {
    /// The API answered with an error status.
    #[error("{provider} returned HTTP {status}: {message}")]
    Http {
        /// Provider name.
        provider: String,
        /// HTTP status.
        status: u16,
        /// The error message from the body, or the body itself.
        message: String,
    },
    /// Rate limited and out of retries.
    #[error("{provider} rate limited the request (HTTP 429) after {}: {message}", attempts_text(*attempts))]
    RateLimited {
        /// Provider name.
        provider: String,
        /// Attempts made.
        attempts: u32,
        /// The error message.
        message: String,
    },
    /// No answer in time.
    #[error("{provider} timed out after {after_ms} ms ({phase})")]
    Timeout {
        /// Provider name.
        provider: String,
        /// Elapsed time.
        after_ms: u64,
        /// `connect`, `total` or `stream idle`.
        phase: String,
    },
    /// The connection failed or was reset.
    #[error("{provider} connection failed: {message}")]
    Connection {
        /// Provider name.
        provider: String,
        /// What happened.
        message: String,
    },
    /// The answer could not be understood (malformed JSON, truncated stream, wrong content type).
    #[error("{provider} sent a response that could not be read: {message}")]
    Protocol {
        /// Provider name.
        provider: String,
        /// What was wrong.
        message: String,
    },
    /// Playback had no recording, or the request differs from the recording.
    #[error("{message}")]
    Playback {
        /// The full explanation, with the command to re-record.
        message: String,
    },
    /// A scripted provider ran out of replies or was told to fail.
    #[error("{0}")]
    Scripted(String),
}

impl ProviderError {
    /// A short machine-readable code for `provider:error` signals.
    pub fn code(&self) -> &'static str {
        match self {
            ProviderError::Http { .. } => "http",
            ProviderError::RateLimited { .. } => "rate_limited",
            ProviderError::Timeout { .. } => "timeout",
            ProviderError::Connection { .. } => "connection",
            ProviderError::Protocol { .. } => "protocol",
            ProviderError::Playback { .. } => "playback",
            ProviderError::Scripted(_) => "scripted",
        }
    }

    /// Whether this is a time limit (reported as `error:timeout`).
    pub fn is_timeout(&self) -> bool {
        matches!(self, ProviderError::Timeout { .. })
    }

    /// The error with every message it holds passed through `f` (to scrub
    /// the secrets an API echoed back into it).
    pub(crate) fn map_messages(self, f: impl Fn(&str) -> String) -> ProviderError {
        match self {
            ProviderError::Http {
                provider,
                status,
                message,
            } => ProviderError::Http {
                provider,
                status,
                message: f(&message),
            },
            ProviderError::RateLimited {
                provider,
                attempts,
                message,
            } => ProviderError::RateLimited {
                provider,
                attempts,
                message: f(&message),
            },
            ProviderError::Connection { provider, message } => ProviderError::Connection {
                provider,
                message: f(&message),
            },
            ProviderError::Protocol { provider, message } => ProviderError::Protocol {
                provider,
                message: f(&message),
            },
            ProviderError::Playback { message } => ProviderError::Playback {
                message: f(&message),
            },
            ProviderError::Scripted(message) => ProviderError::Scripted(f(&message)),
            timeout @ ProviderError::Timeout { .. } => timeout,
        }
    }

    /// The error with key-shaped strings (`sk-…`) replaced by `[REDACTED]`,
    /// whoever wrote them into it.
    ///
    /// ```
    /// use scaffold::provider::ProviderError;
    /// let echoed = ProviderError::Scripted("Incorrect API key provided: sk-proj-abcdefghijklmnop1234".into());
    /// assert_eq!(echoed.redacted().to_string(), "Incorrect API key provided: [REDACTED]");
    /// ```
    pub fn redacted(self) -> ProviderError {
        let scrub = super::recorder::builtin_scrubber();
        self.map_messages(|m| scrub.str(m).into_owned())
    }
}

/// `1 attempt`, `3 attempts`.
pub(crate) fn attempts_text(attempts: u32) -> String {
    if attempts == 1 {
        "1 attempt".to_string()
    } else {
        format!("{attempts} attempts")
    }
}
