//! Metric scorers: latency, cost and tokens against an ideal and a maximum.
//!
//! The value is 1.0 at or under the ideal and falls linearly to 0.0 at the
//! maximum (and stays 0 above it); the scorer passes at or under the maximum.
//! An ideal above the maximum is taken as the maximum.

use async_trait::async_trait;

use super::{Score, Scorer, ScorerContext};
use crate::metrics::Metrics;

/// 1.0 at or under `ideal`, falling linearly to 0.0 at `max`.
pub(crate) fn falloff(value: f64, ideal: f64, max: f64) -> f64 {
    if value <= ideal {
        1.0
    } else if value >= max {
        0.0
    } else {
        1.0 - (value - ideal) / (max - ideal)
    }
}

/// Which metric a [`MetricScorer`] reads.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Metric {
    Latency,
    Cost,
}

impl Metric {
    fn read(self, m: &Metrics) -> f64 {
        match self {
            Metric::Latency => m.latency_ms as f64,
            Metric::Cost => m.cost_usd,
        }
    }

    fn show(self, v: f64) -> String {
        match self {
            Metric::Latency => format!("{} ms", trim(v)),
            Metric::Cost => format!("${}", trim(v)),
        }
    }
}

/// A number without a trailing `.0` and with at most 6 decimals.
fn trim(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// An errored run is never rewarded for what it did not spend: a call that
/// failed at once costs $0 and takes no time, and scores 0 all the same.
fn errored<S>(name: &str, ctx: &ScorerContext<'_, S>) -> Option<Score> {
    ctx.error
        .map(|e| Score::failed(name, format!("the run errored, so it scores 0: {e}")))
}

/// Grade `raw` against `ideal` and `max`.
fn grade(name: &str, raw: f64, ideal: f64, max: f64, show: impl Fn(f64) -> String) -> Score {
    let pass = raw <= max;
    Score {
        name: name.to_string(),
        pass,
        value: falloff(raw, ideal, max),
        unit: None,
        detail: Some(format!(
            "{} (ideal ≤ {}, max {})",
            show(raw),
            show(ideal),
            show(max)
        )),
        borderline: false,
    }
}

/// A scorer of latency or cost; see [`latency`] and [`cost`].
#[derive(Debug, Clone)]
pub struct MetricScorer {
    name: String,
    metric: Metric,
    max: f64,
    ideal: f64,
}

impl MetricScorer {
    fn new(name: &str, metric: Metric, max: f64, ideal: f64) -> Self {
        MetricScorer {
            name: name.to_string(),
            metric,
            max,
            ideal: ideal.min(max),
        }
    }

    /// Score under another name (to use two of a kind in one eval).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

#[async_trait]
impl<S: Sync> Scorer<S> for MetricScorer {
    fn name(&self) -> &str {
        &self.name
    }

    async fn score(&self, ctx: &ScorerContext<'_, S>) -> Score {
        if let Some(errored) = errored(&self.name, ctx) {
            return errored;
        }
        let raw = self.metric.read(ctx.metrics);
        let metric = self.metric;
        grade(&self.name, raw, self.ideal, self.max, |v| metric.show(v))
    }
}

/// Latency in milliseconds: 1.0 at or under `ideal_ms`, 0.0 at `max_ms`;
/// passes at or under `max_ms`. Named `latency`.
///
/// ```
/// use scaffold::metrics::Metrics;
/// use scaffold::scorer::{latency, Scorer, ScorerContext};
/// let metrics = Metrics { latency_ms: 3000, ..Metrics::default() };
/// let ctx = ScorerContext::new(&(), &[], &metrics);
/// let s = tokio::runtime::Runtime::new().unwrap().block_on(latency(5000.0, 1000.0).score(&ctx));
/// assert_eq!((s.pass, s.value), (true, 0.5));
/// assert_eq!(s.detail.as_deref(), Some("3000 ms (ideal ≤ 1000 ms, max 5000 ms)"));
/// ```
pub fn latency(max_ms: f64, ideal_ms: f64) -> MetricScorer {
    MetricScorer::new("latency", Metric::Latency, max_ms, ideal_ms)
}

/// Cost in USD: 1.0 at or under `ideal_usd`, 0.0 at `max_usd`; passes at or
/// under `max_usd`. Named `cost`.
///
/// ```
/// use scaffold::metrics::Metrics;
/// use scaffold::scorer::{cost, Scorer, ScorerContext};
/// let metrics = Metrics { cost_usd: 0.12, ..Metrics::default() };
/// let ctx = ScorerContext::new(&(), &[], &metrics);
/// let s = tokio::runtime::Runtime::new().unwrap().block_on(cost(0.10, 0.01).score(&ctx));
/// assert_eq!((s.pass, s.value), (false, 0.0));
/// ```
pub fn cost(max_usd: f64, ideal_usd: f64) -> MetricScorer {
    MetricScorer::new("cost", Metric::Cost, max_usd, ideal_usd)
}

/// Token usage: `input × input_weight + output` tokens against an ideal and
/// a maximum (see [`tokens`]).
#[derive(Debug, Clone)]
pub struct TokensScorer {
    name: String,
    max: f64,
    ideal: f64,
    input_weight: f64,
}

impl TokensScorer {
    /// Count each input token as `weight` tokens (default 1.0; e.g. 0.25 when
    /// input tokens cost a quarter of output tokens). Negative weights count as 0.
    pub fn input_weight(mut self, weight: f64) -> Self {
        self.input_weight = weight.max(0.0);
        self
    }

    /// Score under another name.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

#[async_trait]
impl<S: Sync> Scorer<S> for TokensScorer {
    fn name(&self) -> &str {
        &self.name
    }

    async fn score(&self, ctx: &ScorerContext<'_, S>) -> Score {
        if let Some(errored) = errored(&self.name, ctx) {
            return errored;
        }
        let m = ctx.metrics;
        let raw = m.input_tokens as f64 * self.input_weight + m.output_tokens as f64;
        let mut score = grade(&self.name, raw, self.ideal, self.max, |v| {
            format!("{} tokens", trim(v))
        });
        if self.input_weight != 1.0 {
            score.detail = score.detail.map(|d| {
                format!(
                    "{d}; {} input × {} + {} output",
                    m.input_tokens,
                    trim(self.input_weight),
                    m.output_tokens
                )
            });
        }
        score
    }
}

/// Tokens: 1.0 at or under `ideal`, 0.0 at `max`; passes at or under `max`.
/// Named `tokens`. Input tokens count fully unless
/// [`input_weight`](TokensScorer::input_weight) says otherwise.
///
/// ```
/// use scaffold::metrics::Metrics;
/// use scaffold::scorer::{tokens, Scorer, ScorerContext};
/// let metrics = Metrics { input_tokens: 4000, output_tokens: 1000, total_tokens: 5000, ..Metrics::default() };
/// let ctx = ScorerContext::new(&(), &[], &metrics);
/// let rt = tokio::runtime::Runtime::new().unwrap();
/// // 4000 × 0.25 + 1000 = 2000 weighted tokens, at the ideal.
/// let s = rt.block_on(tokens(6000.0, 2000.0).input_weight(0.25).score(&ctx));
/// assert_eq!((s.pass, s.value), (true, 1.0));
/// // Unweighted: 5000, three quarters of the way from the ideal to the max.
/// let s = rt.block_on(tokens(6000.0, 2000.0).score(&ctx));
/// assert_eq!((s.pass, s.value), (true, 0.25));
/// ```
pub fn tokens(max: f64, ideal: f64) -> TokensScorer {
    TokensScorer {
        name: "tokens".to_string(),
        max,
        ideal: ideal.min(max),
        input_weight: 1.0,
    }
}

#[cfg(test)]
mod tests {
    use super::{falloff, trim};

    #[test]
    fn falloff_edges() {
        assert_eq!(falloff(0.0, 10.0, 20.0), 1.0);
        assert_eq!(falloff(10.0, 10.0, 20.0), 1.0);
        assert_eq!(falloff(15.0, 10.0, 20.0), 0.5);
        assert_eq!(falloff(20.0, 10.0, 20.0), 0.0);
        assert_eq!(falloff(30.0, 10.0, 20.0), 0.0);
        // ideal == max: a step.
        assert_eq!(falloff(10.0, 10.0, 10.0), 1.0);
        assert_eq!(falloff(10.5, 10.0, 10.0), 0.0);
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(trim(3000.0), "3000");
        assert_eq!(trim(0.0125), "0.0125");
        assert_eq!(trim(0.1), "0.1");
    }
}
