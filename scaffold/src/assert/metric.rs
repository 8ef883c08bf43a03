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

/// `actual` against `bound`: less, equal or more, equal meaning within a
/// relative tolerance of floating-point noise (1e-9) only.
fn compare(actual: f64, bound: f64) -> std::cmp::Ordering {
    let tolerance = 1e-9 * actual.abs().max(bound.abs());
    if (actual - bound).abs() <= tolerance {
        std::cmp::Ordering::Equal
    } else {
        actual.total_cmp(&bound)
    }
}

/// Judge `actual` against a bound, exactly but for floating-point noise:
/// two calls of $0.1 and $0.2 are within a maximum of $0.3, a cost of $0.3
/// is over a maximum of $0.2999999, and a message never says a figure is
/// over a bound it shows as equal.
fn judge(
    what: &str,
    (actual, bound): (f64, f64),
    side: Side,
    unit: impl Fn(f64) -> String,
) -> Outcome {
    use std::cmp::Ordering::{Greater, Less};
    let order = compare(actual, bound);
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
    let (mut shown, written) = (unit(actual), unit(bound));
    if shown == written && order.is_ne() {
        shown = unit_with_all_digits(&shown, actual);
    }
    Outcome::new(
        passed,
        format!("{what} {shown} {verdict} the {word} {written}"),
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

/// Dollars to nine significant digits (the comparison's tolerance): a
/// bound as it was written, a sum of prices without its floating-point
/// noise.
fn usd(x: f64) -> String {
    let digits = 8 - x.abs().log10().floor().clamp(-300.0, 300.0) as i32;
    let rounded = format!("{:.*}", digits.clamp(0, 17) as usize, x);
    let trimmed = match rounded.contains('.') {
        true => rounded.trim_end_matches('0').trim_end_matches('.'),
        false => &rounded,
    };
    format!("${trimmed}")
}

/// `shown` (a figure and its unit) with the figure's every digit.
fn unit_with_all_digits(shown: &str, x: f64) -> String {
    let digits = shown
        .trim_start_matches('$')
        .split(' ')
        .next()
        .unwrap_or_default();
    shown.replacen(digits, &x.to_string(), 1)
}

pub(crate) fn latency(b: &MetricBound, side: Side, ctx: &EvalContext<'_>) -> Outcome {
    let latency = ctx.get_metrics().latency_ms as f64;
    judge("latency", (latency, b.value), side, ms)
}

pub(crate) fn cost(b: &MetricBound, side: Side, ctx: &EvalContext<'_>) -> Outcome {
    let m = ctx.get_metrics();
    let mut o = judge("cost", (m.cost_usd, b.value), side, usd);
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
    judge(what, (n as f64, b.value), side, display::num)
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
