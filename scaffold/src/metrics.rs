//! Metrics derived from a session's signals.

use serde::{Deserialize, Serialize};

use crate::signal::{Signal, names};

/// Latency, tokens, cost and activations of one session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    /// Wall time of the run in milliseconds (`harness:end`, else the last signal).
    pub latency_ms: u64,
    /// Prompt tokens over every provider call.
    pub input_tokens: u64,
    /// Generated tokens over every provider call.
    pub output_tokens: u64,
    /// Input plus output tokens.
    pub total_tokens: u64,
    /// Cost in USD over every priced provider call.
    pub cost_usd: f64,
    /// Provider calls whose model has no price (their cost counts as 0).
    pub unpriced_calls: u64,
    /// Agent activations.
    pub activations: u64,
    /// Provider calls.
    pub provider_calls: u64,
}

impl Metrics {
    /// Fold the metrics out of `signals`.
    ///
    /// ```
    /// use scaffold::metrics::Metrics;
    /// use scaffold::signal::Signal;
    /// use serde_json::json;
    /// let sig = |index, name: &str, payload| Signal { index, name: name.into(), payload, at_ms: index * 10, agent: None };
    /// let signals = vec![
    ///     sig(0, "harness:start", json!({})),
    ///     sig(1, "agent:activated", json!({"agent": "a"})),
    ///     sig(2, "provider:end", json!({"usage": {"inputTokens": 100, "outputTokens": 20}, "costUsd": 0.001})),
    ///     sig(3, "harness:end", json!({"durationMs": 42})),
    /// ];
    /// let m = Metrics::from_signals(&signals);
    /// assert_eq!((m.latency_ms, m.total_tokens, m.activations), (42, 120, 1));
    /// ```
    pub fn from_signals<'a>(signals: impl IntoIterator<Item = &'a Signal>) -> Metrics {
        let mut m = Metrics::default();
        let mut last_at = 0;
        let mut end_latency = None;
        for signal in signals {
            last_at = signal.at_ms;
            match signal.name.as_str() {
                names::AGENT_ACTIVATED => m.activations += 1,
                names::PROVIDER_END => {
                    m.provider_calls += 1;
                    let usage = signal.payload.get("usage");
                    let tokens = |field| {
                        usage
                            .and_then(|u| u.get(field))
                            .and_then(|v| v.as_u64())
                            .unwrap_or(0)
                    };
                    m.input_tokens += tokens("inputTokens");
                    m.output_tokens += tokens("outputTokens");
                    match signal.payload.get("costUsd").and_then(|c| c.as_f64()) {
                        Some(cost) => m.cost_usd += cost,
                        None => m.unpriced_calls += 1,
                    }
                }
                names::HARNESS_END => {
                    end_latency = signal.payload.get("durationMs").and_then(|d| d.as_u64());
                }
                _ => {}
            }
        }
        m.total_tokens = m.input_tokens + m.output_tokens;
        m.latency_ms = end_latency.unwrap_or(last_at);
        m
    }

    /// Count what `other` spent (tokens, cost, calls) as spent here too:
    /// a cell retried after an error was billed for every run. Latency and
    /// activations stay this run's.
    pub(crate) fn add_spend(&mut self, other: &Metrics) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.total_tokens += other.total_tokens;
        self.cost_usd += other.cost_usd;
        self.unpriced_calls += other.unpriced_calls;
        self.provider_calls += other.provider_calls;
    }
}
