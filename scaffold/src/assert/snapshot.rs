//! `snapshot.at` and `snapshot.final`: the state mid-run and at the end.
//!
//! The state after a signal is the initial state with every
//! `state:<key>:changed` up to and including that signal applied (the
//! store's folding rule). Only the changes of the path's top-level key are
//! read, walking back from the signal, so a snapshot deep into a long session
//! costs one backwards scan over small integers and one clone of one value.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::context::EvalContext;
use super::display;
use super::glob::Glob;
use super::matcher::Expect;
use super::path::Path;
use super::result::Outcome;

/// The state right after the first signal matching `afterSignal`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotAt {
    /// Glob over signal names; the first match is the point in time.
    pub after_signal: String,
    /// Dot/bracket path into the state (`analysis.confidence`, `files[0].path`).
    pub path: String,
    /// Expected value or value matcher (`{gte: 0.7}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// Whether the path must exist (`true`) or must not (`false`). With
    /// neither `value` nor `exists`, the path must exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
}

/// The final state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotFinal {
    /// Dot/bracket path into the state.
    pub path: String,
    /// Expected value or value matcher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// Whether the path must exist (`true`) or must not (`false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
}

fn parse_path(path: &str) -> Result<Path, Box<Outcome>> {
    Path::parse(path).map_err(|e| Box::new(Outcome::fail(format!("invalid path: {e}"))))
}

/// Judge `found` against `value` / `exists`; `when` says which state
/// ("after review:complete (#12)", "at the end").
fn check(
    path: &str,
    found: Option<&Value>,
    value: Option<&Value>,
    exists: Option<bool>,
    when: &str,
) -> Outcome {
    let shown = if path.is_empty() { "the state" } else { path };
    if exists == Some(false) {
        return match found {
            None => Outcome::pass(format!("{when}, {shown} does not exist, as expected"))
                .expected(serde_json::json!({"exists": false})),
            Some(v) => Outcome::fail(format!(
                "{when}, {shown} exists ({}), expected it not to",
                display::value(v)
            ))
            .expected(serde_json::json!({"exists": false}))
            .actual(v.clone()),
        };
    }
    let Some(found) = found else {
        return Outcome::fail(format!("{when}, {shown} does not exist")).expected(
            value
                .cloned()
                .unwrap_or(serde_json::json!({"exists": true})),
        );
    };
    let Some(value) = value else {
        return Outcome::pass(format!("{when}, {shown} exists: {}", display::value(found)))
            .actual(found.clone());
    };
    let expect = match Expect::compile(value) {
        Ok(e) => e,
        Err(e) => return Outcome::fail(format!("invalid expected value: {e}")),
    };
    match expect.explain(found) {
        None if expect.is_literal() => Outcome::pass(format!(
            "{when}, {shown} is {}, as expected",
            display::value(found)
        ))
        .expected(value.clone())
        .actual(found.clone()),
        None => Outcome::pass(format!(
            "{when}, {shown} is {} ({})",
            display::value(found),
            expect.describe()
        ))
        .expected(value.clone())
        .actual(found.clone()),
        Some(why) => {
            // A mismatch inside the value names its place; at the top it
            // would only repeat what is said.
            let detail = if why.starts_with("expected ") {
                String::new()
            } else {
                format!(" ({why})")
            };
            Outcome::fail(format!(
                "{when}, {shown} is {}; expected {}{detail}",
                display::value(found),
                expect.describe()
            ))
            .expected(value.clone())
            .actual(found.clone())
        }
    }
}

pub(crate) fn at(a: &SnapshotAt, ctx: &EvalContext<'_>) -> Outcome {
    let path = match parse_path(&a.path) {
        Ok(p) => p,
        Err(o) => return *o,
    };
    let glob = match Glob::new(&a.after_signal) {
        Ok(g) => g,
        Err(e) => {
            return Outcome::fail(format!("invalid pattern `{}`: {e}", a.after_signal));
        }
    };
    let index = ctx.index();
    let set = index.set(&glob);
    let Some(i) = index.positions(&set).next() else {
        return Outcome::fail(format!(
            "{}, so there is no snapshot after it",
            super::signal::no_name(ctx, &a.after_signal)
        ));
    };
    let found = ctx.state_value_at(i, &path);
    let when = format!(
        "after {} (#{})",
        ctx.signals()[i].name,
        ctx.signals()[i].index
    );
    check(&a.path, found.as_deref(), a.value.as_ref(), a.exists, &when)
}

pub(crate) fn final_(a: &SnapshotFinal, ctx: &EvalContext<'_>) -> Outcome {
    let path = match parse_path(&a.path) {
        Ok(p) => p,
        Err(o) => return *o,
    };
    let found = ctx.final_value(&path);
    check(
        &a.path,
        found.as_deref(),
        a.value.as_ref(),
        a.exists,
        "in the final state",
    )
}
