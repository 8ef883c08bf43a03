//! Seed 001's assertion names, loaded as the assertions they stand for.
//!
//! | seed 001 | loads as |
//! |---|---|
//! | `metric.latency_ms.max {value}` | `metric.latency.max {value}` |
//! | `metric.total_cost_usd.max {value}` | `metric.cost.max {value}` |
//! | `metric.tokens.input.max {value}` | `metric.tokens.max {value, field: input}` |
//! | `metric.tokens.output.max {value}` | `metric.tokens.max {value, field: output}` |
//! | `behavior.no_errors` | `signal.not {pattern: "error:**"}` |
//! | `behavior.node_executed {nodeId}` | `agent.activated {agentId}` |
//! | `behavior.node_invocations.max {nodeId, value}` | `agent.activated {agentId, max: value}` |
//! | `output.contains {path, value}` | `output.contains {path, text}` |
//! | `output.equals {path, value}` | (the same) |

use serde_json::{Map, Value};

/// Seed 001's names and the canonical type each loads as (the dataset
/// schema's tests check it against [`rewrite`]).
#[cfg(test)]
pub(crate) const LEGACY_TYPES: &[(&str, &str)] = &[
    ("metric.latency_ms.max", "metric.latency.max"),
    ("metric.total_cost_usd.max", "metric.cost.max"),
    ("metric.tokens.input.max", "metric.tokens.max"),
    ("metric.tokens.output.max", "metric.tokens.max"),
    ("behavior.no_errors", "signal.not"),
    ("behavior.node_executed", "agent.activated"),
    ("behavior.node_invocations.max", "agent.activated"),
];

fn rename(map: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(v) = map.remove(from) {
        map.entry(to.to_string()).or_insert(v);
    }
}

/// Rewrite a seed 001 assertion object in place into its canonical form.
/// Anything else is left alone.
pub(crate) fn rewrite(map: &mut Map<String, Value>) {
    let Some(Value::String(ty)) = map.get("type") else {
        return;
    };
    let ty = ty.clone();
    let set_type = |map: &mut Map<String, Value>, t: &str| {
        map.insert("type".into(), Value::String(t.into()));
    };
    match ty.as_str() {
        "metric.latency_ms.max" => set_type(map, "metric.latency.max"),
        "metric.total_cost_usd.max" => set_type(map, "metric.cost.max"),
        "metric.tokens.input.max" | "metric.tokens.output.max" => {
            let field = if ty.contains("input") {
                "input"
            } else {
                "output"
            };
            set_type(map, "metric.tokens.max");
            map.insert("field".into(), Value::String(field.into()));
        }
        "behavior.no_errors" => {
            set_type(map, "signal.not");
            map.insert("pattern".into(), Value::String("error:**".into()));
        }
        "behavior.node_executed" => {
            set_type(map, "agent.activated");
            rename(map, "nodeId", "agentId");
        }
        "behavior.node_invocations.max" => {
            set_type(map, "agent.activated");
            rename(map, "nodeId", "agentId");
            rename(map, "value", "max");
        }
        _ => {}
    }
}
