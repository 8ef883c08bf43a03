//! `agent.activated`, `agent.completed`, `agent.causedBy`, `agent.emitted`,
//! `agent.skipped`: what each agent did.
//!
//! An activation is an `agent:activated` signal whose payload `agent` is the
//! agent; a signal is the agent's own when its `agent` field (or, failing
//! that, its payload's `agent`) names it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::context::EvalContext;
use super::display;
use super::glob::Glob;
use super::result::{Bounds, Outcome};
use crate::signal::{Signal, names};

/// The agent was activated (by default at least once).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentActivated {
    /// The agent's name.
    #[serde(alias = "nodeId")]
    pub agent_id: String,
    /// Exactly this many activations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// At least this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<u64>,
    /// At most this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u64>,
}

/// The agent completed and raised no error signal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCompleted {
    /// The agent's name.
    #[serde(alias = "nodeId")]
    pub agent_id: String,
}

/// Some activation of the agent was triggered by a signal matching `triggerPattern`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCausedBy {
    /// The agent's name.
    pub agent_id: String,
    /// Glob over the trigger's signal name.
    pub trigger_pattern: String,
}

/// The agent emitted a signal matching `signal`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEmitted {
    /// The agent's name.
    pub agent_id: String,
    /// Glob over signal names.
    pub signal: String,
}

/// The agent was skipped (its guard said no).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkipped {
    /// The agent's name.
    pub agent_id: String,
    /// Text the skip reason must contain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The agent a payload is about.
fn payload_agent(s: &Signal) -> Option<&str> {
    s.payload.get("agent").and_then(Value::as_str)
}

/// The agent that owns a signal.
fn owner(s: &Signal) -> Option<&str> {
    s.agent.as_deref().or_else(|| payload_agent(s))
}

/// Positions of the `name` signals (e.g. `agent:activated`) about `agent`.
fn about(ctx: &EvalContext<'_>, name: &str, agent: &str) -> Vec<usize> {
    let index = ctx.index();
    index.positions_where(&index.set_of(name), "agent", agent)
}

/// "planner ×2, coder ×1" for the agents of the `name` signals.
fn tally(ctx: &EvalContext<'_>, name: &str) -> String {
    let index = ctx.index();
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for (_, agent) in index.field_strings(&index.set_of(name), "agent") {
        let agent = agent.unwrap_or("?");
        match counts.iter_mut().find(|(a, _)| *a == agent) {
            Some((_, n)) => *n += 1,
            None => counts.push((agent, 1)),
        }
    }
    if counts.is_empty() {
        return "none".into();
    }
    counts
        .iter()
        .map(|(a, n)| format!("{a} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn activated(a: &AgentActivated, ctx: &EvalContext<'_>) -> Outcome {
    let n = about(ctx, names::AGENT_ACTIVATED, &a.agent_id).len() as u64;
    let bounds = Bounds {
        exact: a.count,
        min: a.min,
        max: a.max,
    }
    .or_at_least_one();
    let passed = bounds.holds(n);
    let mut message = format!(
        "{} was activated {}, expected {}",
        a.agent_id,
        display::plural(n as usize, "time"),
        bounds.describe()
    );
    if !passed {
        message.push_str(&format!(
            "; activations: {}",
            tally(ctx, names::AGENT_ACTIVATED)
        ));
    }
    Outcome::new(passed, message)
        .expected(bounds.to_value())
        .actual(n)
}

pub(crate) fn completed(a: &AgentCompleted, ctx: &EvalContext<'_>) -> Outcome {
    let done = about(ctx, names::AGENT_COMPLETED, &a.agent_id);
    let index = ctx.index();
    let errors = index.set(&Glob::new("error:**").expect("a valid glob"));
    let error = index
        .positions(&errors)
        .find(|&i| owner(&ctx.signals()[i]) == Some(a.agent_id.as_str()));
    match (done.first(), error) {
        (_, Some(e)) => {
            let s = &ctx.signals()[e];
            Outcome::fail(format!("{} raised {}", a.agent_id, display::signal_full(s)))
                .actual(display::signal_full(s))
        }
        (Some(&i), None) => Outcome::pass(format!(
            "{} completed (#{}{}) without errors",
            a.agent_id,
            ctx.signals()[i].index,
            if done.len() > 1 {
                format!(", {} times in all", done.len())
            } else {
                String::new()
            }
        )),
        (None, None) => {
            let activations = about(ctx, names::AGENT_ACTIVATED, &a.agent_id).len();
            Outcome::fail(format!(
                "{} never completed (activated {}); completions: {}",
                a.agent_id,
                display::plural(activations, "time"),
                tally(ctx, names::AGENT_COMPLETED)
            ))
        }
    }
}

pub(crate) fn caused_by(a: &AgentCausedBy, ctx: &EvalContext<'_>) -> Outcome {
    let glob = match Glob::new(&a.trigger_pattern) {
        Ok(g) => g,
        Err(e) => {
            return Outcome::fail(format!("invalid pattern `{}`: {e}", a.trigger_pattern));
        }
    };
    let activations = about(ctx, names::AGENT_ACTIVATED, &a.agent_id);
    if activations.is_empty() {
        return Outcome::fail(format!(
            "{} was never activated, so nothing triggered it; activations: {}",
            a.agent_id,
            tally(ctx, names::AGENT_ACTIVATED)
        ))
        .expected(a.trigger_pattern.clone());
    }
    let mut triggers = Vec::new();
    for &i in &activations {
        let s = &ctx.signals()[i];
        let trigger = s
            .payload
            .get("trigger")
            .and_then(Value::as_str)
            .unwrap_or("");
        if glob.matches(trigger) {
            return Outcome::pass(format!(
                "{} was activated at #{} by {trigger}",
                a.agent_id, s.index
            ))
            .expected(a.trigger_pattern.clone())
            .actual(trigger);
        }
        let shown = if trigger.is_empty() {
            "(none)"
        } else {
            trigger
        };
        if !triggers.iter().any(|t| t == shown) {
            triggers.push(shown.to_string());
        }
    }
    Outcome::fail(format!(
        "{} was activated {}, triggered by [{}], never by `{}`",
        a.agent_id,
        display::plural(activations.len(), "time"),
        triggers.join(", "),
        a.trigger_pattern
    ))
    .expected(a.trigger_pattern.clone())
    .actual(Value::from(triggers))
}

pub(crate) fn emitted(a: &AgentEmitted, ctx: &EvalContext<'_>) -> Outcome {
    let glob = match Glob::new(&a.signal) {
        Ok(g) => g,
        Err(e) => return Outcome::fail(format!("invalid pattern `{}`: {e}", a.signal)),
    };
    let index = ctx.index();
    let set = index.set(&glob);
    let agent = a.agent_id.as_str();
    if let Some(i) = index
        .positions(&set)
        .find(|&i| owner(&ctx.signals()[i]) == Some(agent))
    {
        let s = &ctx.signals()[i];
        return Outcome::pass(format!("{agent} emitted {} at #{}", s.name, s.index))
            .expected(a.signal.clone())
            .actual(s.name.clone());
    }
    // What did it emit? Its own signals' distinct names, skipping the chatter.
    let mut seen: Vec<&str> = Vec::new();
    for s in ctx.signals() {
        if owner(s) == Some(agent)
            && !s.name.starts_with("text:")
            && !seen.contains(&s.name.as_str())
        {
            seen.push(&s.name);
            if seen.len() >= 12 {
                break;
            }
        }
    }
    let others = index
        .positions(&set)
        .filter_map(|i| owner(&ctx.signals()[i]))
        .take(3)
        .collect::<Vec<_>>();
    let mut message = format!(
        "{agent} never emitted `{}`; its signals: [{}]",
        a.signal,
        seen.join(", ")
    );
    if !others.is_empty() {
        message.push_str(&format!(
            " (`{}` came from: {})",
            a.signal,
            others.join(", ")
        ));
    }
    Outcome::fail(message)
        .expected(a.signal.clone())
        .actual(Value::from(seen))
}

pub(crate) fn skipped(a: &AgentSkipped, ctx: &EvalContext<'_>) -> Outcome {
    let skips = about(ctx, names::AGENT_SKIPPED, &a.agent_id);
    let reason_of = |i: usize| {
        ctx.signals()[i]
            .payload
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    if skips.is_empty() {
        let n = about(ctx, names::AGENT_ACTIVATED, &a.agent_id).len();
        return Outcome::fail(format!(
            "{} was never skipped (activated {})",
            a.agent_id,
            display::plural(n, "time")
        ));
    }
    match &a.reason {
        None => {
            let i = skips[0];
            Outcome::pass(format!(
                "{} was skipped at #{} ({})",
                a.agent_id,
                ctx.signals()[i].index,
                reason_of(i)
            ))
        }
        Some(want) => match skips
            .iter()
            .find(|&&i| reason_of(i).contains(want.as_str()))
        {
            Some(&i) => Outcome::pass(format!(
                "{} was skipped at #{}: {}",
                a.agent_id,
                ctx.signals()[i].index,
                reason_of(i)
            ))
            .expected(want.clone())
            .actual(reason_of(i)),
            None => {
                let reasons: Vec<&str> = skips.iter().map(|&i| reason_of(i)).collect();
                Outcome::fail(format!(
                    "{} was skipped {} but never with a reason containing {:?}; reasons: {:?}",
                    a.agent_id,
                    display::plural(skips.len(), "time"),
                    want,
                    reasons
                ))
                .expected(want.clone())
                .actual(Value::from(reasons))
            }
        },
    }
}
