//! `metric.latency.*`, `metric.cost.*`, `metric.tokens.*`,
//! `metric.activations`: bounds on the session's metrics.

use serde::{Deserialize, Serialize};

use super::context::EvalContext;
use super::display;
use super::result::{Bounds, Outcome};

/// A bound on one metric (`value` is milliseconds for latency, USD for cost).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MetricBound {
    /// The bound.
    pub value: f64,
}

/// Which token count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenField {
    /// Prompt tokens.
    Input,
    /// Generated tokens.
    Output,
    /// Both.
    #[default]
    Total,
}

/// A bound on token usage.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TokenBound {
    /// The bound.
    pub value: f64,
    /// Which count (default: total).
    #[serde(default)]
    pub field: TokenField,
}

/// Bounds on the number of agent activations.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ActivationBounds {
    /// At least.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<u64>,
    /// At most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u64>,
    /// Exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<u64>,
}

/// Which side of the bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Max,
    Min,
}

/// How finely a metric is compared and shown.
#[derive(Clone, Copy)]
enum Precision {
    /// In whole units of this size (cost: micro-dollars), as it is shown.
    Quantum(f64),
    /// Up to a relative tolerance of floating-point noise.
    Relative,
}

impl Precision {
    /// `actual` against `bound`: less, equal (within the precision) or more.
    fn compare(self, actual: f64, bound: f64) -> std::cmp::Ordering {
        match self {
            Precision::Quantum(q) => (actual / q).round().total_cmp(&(bound / q).round()),
            Precision::Relative => {
                let tolerance = 1e-9 * actual.abs().max(bound.abs());
                if (actual - bound).abs() <= tolerance {
                    std::cmp::Ordering::Equal
                } else {
                    actual.total_cmp(&bound)
                }
            }
        }
    }
}

/// Judge `actual` against a bound: two calls of $0.1 and $0.2 are within a
/// maximum of $0.3, and a message never says a figure is over a bound it
/// shows as equal.
fn judge(
    what: &str,
    (actual, bound): (f64, f64),
    side: Side,
    precision: Precision,
    unit: impl Fn(f64) -> String,
) -> Outcome {
    use std::cmp::Ordering::{Greater, Less};
    let order = precision.compare(actual, bound);
    let (passed, word) = match side {
        Side::Max => (order != Greater, "maximum"),
        Side::Min => (order != Less, "minimum"),
    };
    let verdict = match (passed, side) {
        (true, Side::Max) => "is at or under",
        (true, Side::Min) => "is at or over",
        (false, Side::Max) => "is over",
        (false, Side::Min) => "is under",
    };
    Outcome::new(
        passed,
        format!(
            "{what} {} {verdict} the {word} {}",
            unit(actual),
            unit(bound)
        ),
    )
    .expected(serde_json::Value::Object(
        [(
            if side == Side::Max { "max" } else { "min" }.to_string(),
            bound.into(),
        )]
        .into_iter()
        .collect(),
    ))
    .actual(actual)
}

fn ms(x: f64) -> String {
    format!("{} ms", display::num(x))
}

fn usd(x: f64) -> String {
    format!("${}", display::num((x * 1e6).round() / 1e6))
}

pub(crate) fn latency(b: &MetricBound, side: Side, ctx: &EvalContext<'_>) -> Outcome {
    let latency = ctx.get_metrics().latency_ms as f64;
    judge("latency", (latency, b.value), side, Precision::Relative, ms)
}

pub(crate) fn cost(b: &MetricBound, side: Side, ctx: &EvalContext<'_>) -> Outcome {
    let m = ctx.get_metrics();
    let micro_dollars = Precision::Quantum(1e-6);
    let mut o = judge("cost", (m.cost_usd, b.value), side, micro_dollars, usd);
    if m.unpriced_calls > 0 {
        o.message.push_str(&format!(
            " ({} had no price and count as $0)",
            display::plural(m.unpriced_calls as usize, "provider call")
        ));
    }
    o
}

pub(crate) fn tokens(b: &TokenBound, side: Side, ctx: &EvalContext<'_>) -> Outcome {
    let m = ctx.get_metrics();
    let (n, what) = match b.field {
        TokenField::Input => (m.input_tokens, "input tokens"),
        TokenField::Output => (m.output_tokens, "output tokens"),
        TokenField::Total => (m.total_tokens, "total tokens"),
    };
    judge(
        what,
        (n as f64, b.value),
        side,
        Precision::Relative,
        display::num,
    )
}

pub(crate) fn activations(b: &ActivationBounds, ctx: &EvalContext<'_>) -> Outcome {
    let n = ctx.get_metrics().activations;
    let bounds = Bounds {
        exact: b.exact,
        min: b.min,
        max: b.max,
    };
    Outcome::new(
        bounds.holds(n),
        format!(
            "{}, expected {}",
            display::plural(n as usize, "activation"),
            bounds.describe()
        ),
    )
    .expected(bounds.to_value())
    .actual(n)
}
