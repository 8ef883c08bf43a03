//! `tool.called`, `tool.notCalled`, `tool.calledWith`, `tool.sequence`:
//! the tool calls of the run (`tool:call` signals, payload `{id, name, input}`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::context::EvalContext;
use super::display;
use super::matcher::Expect;
use super::result::{Bounds, Outcome};
use crate::signal::names;

/// The tool was called (by default at least once).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolCalled {
    /// The tool's name.
    pub name: String,
    /// Exactly this many calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// At least.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<u64>,
    /// At most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u64>,
}

/// The tool was never called.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolNotCalled {
    /// The tool's name.
    pub name: String,
}

/// The tool was called at least once with arguments that partially match
/// `args` (leaves may be value matchers: `file_path: {endsWith: utils.ts}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCalledWith {
    /// The tool's name.
    pub name: String,
    /// Partial arguments.
    pub args: Value,
}

/// The tools were called in this order (other calls may come between).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolSequence {
    /// Tool names, in order.
    pub tools: Vec<String>,
}

/// `(position, tool name)` of every tool call.
fn calls<'c>(ctx: &'c EvalContext<'_>) -> Vec<(usize, &'c str)> {
    let index = ctx.index();
    index
        .field_strings(&index.set_of(names::TOOL_CALL), "name")
        .into_iter()
        .map(|(i, name)| (i, name.unwrap_or("")))
        .collect()
}

/// What `tool.called` and `tool.notCalled` point at (the signals of
/// `calls` named `name`; all of them when none is): the calls they counted.
fn read(ctx: &EvalContext<'_>, calls: &[(usize, &str)], name: &str) -> Vec<u64> {
    let named = calls.iter().filter(|(_, n)| *n == name);
    let at: Vec<usize> = match named.clone().next() {
        Some(_) => named.map(|(i, _)| *i).collect(),
        None => calls.iter().map(|(i, _)| *i).collect(),
    };
    at.into_iter().map(|i| ctx.signals()[i].index).collect()
}

/// "Read ×2, Edit ×1".
fn tally(calls: &[(usize, &str)]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for (_, name) in calls {
        match counts.iter_mut().find(|(n, _)| n == name) {
            Some((_, c)) => *c += 1,
            None => counts.push((name, 1)),
        }
    }
    if counts.is_empty() {
        return "none".into();
    }
    counts
        .iter()
        .map(|(n, c)| format!("{n} ×{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn called(a: &ToolCalled, ctx: &EvalContext<'_>) -> Outcome {
    let all = calls(ctx);
    let n = all.iter().filter(|(_, name)| *name == a.name).count() as u64;
    let bounds = Bounds {
        exact: a.count,
        min: a.min,
        max: a.max,
    }
    .or_at_least_one();
    let passed = bounds.holds(n);
    let mut message = format!(
        "{} was called {}, expected {}",
        a.name,
        display::plural(n as usize, "time"),
        bounds.describe()
    );
    if !passed {
        message.push_str(&format!("; tools called: {}", tally(&all)));
    }
    Outcome::new(passed, message)
        .expected(bounds.to_value())
        .actual(n)
        .matched(read(ctx, &all, &a.name))
}

pub(crate) fn not_called(a: &ToolNotCalled, ctx: &EvalContext<'_>) -> Outcome {
    let all = calls(ctx);
    let mine: Vec<usize> = all
        .iter()
        .filter(|(_, name)| *name == a.name)
        .map(|(i, _)| *i)
        .collect();
    let matched = read(ctx, &all, &a.name);
    match mine.first() {
        None => Outcome::pass(format!("{} was never called", a.name))
            .actual(0)
            .matched(matched),
        Some(&i) => {
            let s = &ctx.signals()[i];
            let input = s.payload.get("input").cloned().unwrap_or(Value::Null);
            Outcome::fail(format!(
                "{} was called {}, first at #{} with {}",
                a.name,
                display::plural(mine.len(), "time"),
                s.index,
                display::value(&input)
            ))
            .expected(0)
            .actual(mine.len())
            .matched(matched)
        }
    }
}

pub(crate) fn called_with(a: &ToolCalledWith, ctx: &EvalContext<'_>) -> Outcome {
    let expect = match Expect::compile(&a.args) {
        Ok(e) => e,
        Err(e) => return Outcome::fail(format!("invalid args: {e}")),
    };
    let all = calls(ctx);
    let mine: Vec<usize> = all
        .iter()
        .filter(|(_, name)| *name == a.name)
        .map(|(i, _)| *i)
        .collect();
    let want = expect.describe();
    let null = Value::Null;
    let input = |i: usize| ctx.signals()[i].payload.get("input").unwrap_or(&null);
    if let Some(&i) = mine.iter().find(|&&i| expect.test(input(i))) {
        return Outcome::pass(format!(
            "{} was called with {want} at #{}: {}",
            a.name,
            ctx.signals()[i].index,
            display::value(input(i))
        ))
        .expected(a.args.clone())
        .actual(input(i).clone())
        .matched(vec![ctx.signals()[i].index]);
    }
    if mine.is_empty() {
        return Outcome::fail(format!(
            "{} was never called (expected a call with {want}); tools called: {}",
            a.name,
            tally(&all)
        ))
        .expected(a.args.clone());
    }
    let misses: Vec<String> = mine
        .iter()
        .take(3)
        .map(|&i| {
            format!(
                "#{} {} ({})",
                ctx.signals()[i].index,
                display::value(input(i)),
                expect.explain(input(i)).unwrap_or_default()
            )
        })
        .collect();
    Outcome::fail(format!(
        "{} was called {} but never with {want}; calls: {}",
        a.name,
        display::plural(mine.len(), "time"),
        misses.join("; ")
    ))
    .expected(a.args.clone())
    .actual(Value::from(
        mine.iter()
            .take(10)
            .map(|&i| input(i).clone())
            .collect::<Vec<_>>(),
    ))
    .matched(mine.iter().map(|&i| ctx.signals()[i].index).collect())
}

pub(crate) fn sequence(a: &ToolSequence, ctx: &EvalContext<'_>) -> Outcome {
    let all = calls(ctx);
    let names_called: Vec<&str> = all.iter().map(|(_, n)| *n).collect();
    let shown: Vec<String> = names_called
        .iter()
        .take(50)
        .map(|s| s.to_string())
        .collect();
    let mut pos = 0;
    for (k, tool) in a.tools.iter().enumerate() {
        match names_called[pos..].iter().position(|n| n == tool) {
            Some(off) => pos += off + 1,
            None => {
                let what = if k == 0 {
                    format!("{tool} was never called")
                } else {
                    format!("{tool} was not called after {}", a.tools[k - 1])
                };
                return Outcome::fail(format!(
                    "expected tool calls in order [{}]; {what}; actual tool calls: [{}]{}",
                    a.tools.join(", "),
                    shown.join(", "),
                    if names_called.len() > shown.len() {
                        " …"
                    } else {
                        ""
                    }
                ))
                .expected(Value::from(a.tools.clone()))
                .trajectory(shown);
            }
        }
    }
    Outcome::pass(format!("tools called in order [{}]", a.tools.join(", ")))
        .expected(Value::from(a.tools.clone()))
        .trajectory(shown)
}
