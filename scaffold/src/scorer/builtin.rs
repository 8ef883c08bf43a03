//! Built-in scorers.

use async_trait::async_trait;

use super::{Score, Scorer, ScorerContext};

/// Passes when the run completed without error.
///
/// ```
/// let scorer = scaffold::scorer::output_valid();
/// assert_eq!(scaffold::scorer::Scorer::<()>::name(&scorer), "output-valid");
/// ```
pub fn output_valid() -> OutputValid {
    OutputValid
}

/// See [`output_valid`].
#[derive(Debug, Clone, Copy)]
pub struct OutputValid;

#[async_trait]
impl<S: Sync> Scorer<S> for OutputValid {
    fn name(&self) -> &str {
        "output-valid"
    }

    async fn score(&self, ctx: &ScorerContext<'_, S>) -> Score {
        let pass = ctx.error.is_none() && ctx.output.is_some_and(|o| !o.is_null());
        Score {
            name: "output-valid".into(),
            pass,
            value: if pass { 1.0 } else { 0.0 },
            unit: None,
            detail: ctx
                .error
                .map(str::to_string)
                .or_else(|| (!pass).then(|| "the run produced no output".to_string())),
        }
    }
}

/// 1.0 at or under `ideal`, falling linearly to 0.0 at `max`.
fn falloff(value: f64, ideal: f64, max: f64) -> f64 {
    if value <= ideal {
        1.0
    } else if value >= max || max <= ideal {
        0.0
    } else {
        1.0 - (value - ideal) / (max - ideal)
    }
}

/// A scorer on a metric with a maximum and an ideal.
#[derive(Debug, Clone)]
pub struct MetricScorer {
    name: &'static str,
    unit: &'static str,
    max: f64,
    ideal: f64,
    read: fn(&crate::metrics::Metrics) -> f64,
}

#[async_trait]
impl<S: Sync> Scorer<S> for MetricScorer {
    fn name(&self) -> &str {
        self.name
    }

    async fn score(&self, ctx: &ScorerContext<'_, S>) -> Score {
        let raw = (self.read)(ctx.metrics);
        Score {
            name: self.name.into(),
            pass: raw <= self.max,
            value: falloff(raw, self.ideal, self.max),
            unit: None,
            detail: Some(format!(
                "{raw} {} (ideal {}, max {})",
                self.unit, self.ideal, self.max
            )),
        }
    }
}

/// Latency in milliseconds: 1.0 at or under `ideal_ms`, 0.0 at `max_ms`; passes at or under `max_ms`.
pub fn latency(max_ms: f64, ideal_ms: f64) -> MetricScorer {
    MetricScorer {
        name: "latency",
        unit: "ms",
        max: max_ms,
        ideal: ideal_ms,
        read: |m| m.latency_ms as f64,
    }
}

/// Cost in USD: 1.0 at or under `ideal_usd`, 0.0 at `max_usd`; passes at or under `max_usd`.
pub fn cost(max_usd: f64, ideal_usd: f64) -> MetricScorer {
    MetricScorer {
        name: "cost",
        unit: "usd",
        max: max_usd,
        ideal: ideal_usd,
        read: |m| m.cost_usd,
    }
}

/// What a custom scoring function returns: a number (passes at 0.5 or more)
/// or a value with an explicit pass and detail.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomScore {
    /// The score.
    pub value: f64,
    /// Pass; `None` means `value >= 0.5`.
    pub pass: Option<bool>,
    /// Why.
    pub detail: Option<String>,
}

impl From<f64> for CustomScore {
    fn from(value: f64) -> Self {
        CustomScore {
            value,
            pass: None,
            detail: None,
        }
    }
}

impl From<bool> for CustomScore {
    fn from(pass: bool) -> Self {
        CustomScore {
            value: if pass { 1.0 } else { 0.0 },
            pass: Some(pass),
            detail: None,
        }
    }
}

/// A scorer from a closure.
///
/// ```
/// use scaffold::scorer::{custom, CustomScore, Scorer};
/// #[derive(Clone, serde::Serialize, serde::Deserialize)]
/// struct State { tasks: Vec<String> }
/// let plan_quality = custom("plan-quality", |ctx: &scaffold::scorer::ScorerContext<'_, State>| {
///     let has_tests = ctx.state.tasks.iter().any(|t| t.contains("test"));
///     CustomScore { value: if has_tests { 1.0 } else { 0.3 }, pass: None, detail: None }
/// });
/// assert_eq!(plan_quality.name(), "plan-quality");
/// ```
pub fn custom<S, R, F>(name: impl Into<String>, f: F) -> Custom<F>
where
    F: Fn(&ScorerContext<'_, S>) -> R + Send + Sync,
    R: Into<CustomScore>,
{
    Custom {
        name: name.into(),
        f,
    }
}

/// See [`custom`].
pub struct Custom<F> {
    name: String,
    f: F,
}

impl<F> Custom<F> {
    /// The scorer's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

#[async_trait]
impl<S, R, F> Scorer<S> for Custom<F>
where
    S: Sync,
    F: Fn(&ScorerContext<'_, S>) -> R + Send + Sync,
    R: Into<CustomScore>,
{
    fn name(&self) -> &str {
        &self.name
    }

    async fn score(&self, ctx: &ScorerContext<'_, S>) -> Score {
        let r: CustomScore = (self.f)(ctx).into();
        Score {
            name: self.name.clone(),
            pass: r.pass.unwrap_or(r.value >= 0.5),
            value: r.value,
            unit: None,
            detail: r.detail,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::falloff;

    #[test]
    fn falloff_edges() {
        assert_eq!(falloff(0.0, 10.0, 20.0), 1.0);
        assert_eq!(falloff(10.0, 10.0, 20.0), 1.0);
        assert_eq!(falloff(15.0, 10.0, 20.0), 0.5);
        assert_eq!(falloff(20.0, 10.0, 20.0), 0.0);
        assert_eq!(falloff(30.0, 10.0, 20.0), 0.0);
    }
}
