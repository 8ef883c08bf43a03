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

/// The state right after a signal matching `afterSignal`: its first
/// occurrence unless `occurrence` says `last` or which one (from 1), for
/// loops such as planning → review → planning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotAt {
    /// Glob over signal names; with `occurrence`, the point in time.
    pub after_signal: String,
    /// Which matching signal: `first` (the default), `last` or `n` (from 1).
    #[serde(default, skip_serializing_if = "Occurrence::is_first")]
    pub occurrence: Occurrence,
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

/// Which of the signals a pattern matches: `first`, `last` or the `n`th
/// (from 1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Occurrence {
    /// The first match (the default).
    #[default]
    First,
    /// The last match.
    Last,
    /// The n-th match, from 1.
    Nth(u32),
}

impl Occurrence {
    fn is_first(&self) -> bool {
        matches!(self, Occurrence::First | Occurrence::Nth(1))
    }

    /// The chosen one of `matches` (positions, in order).
    fn pick(self, mut matches: impl Iterator<Item = usize>) -> Option<usize> {
        match self {
            Occurrence::First => matches.next(),
            Occurrence::Last => matches.last(),
            Occurrence::Nth(n) => matches.nth((n as usize).checked_sub(1)?),
        }
    }
}

impl Serialize for Occurrence {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Occurrence::First => s.serialize_str("first"),
            Occurrence::Last => s.serialize_str("last"),
            Occurrence::Nth(n) => s.serialize_u32(*n),
        }
    }
}

impl<'de> Deserialize<'de> for Occurrence {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) if s == "first" => Ok(Occurrence::First),
            Value::String(s) if s == "last" => Ok(Occurrence::Last),
            Value::Number(n) => match n.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) if n >= 1 => Ok(Occurrence::Nth(n)),
                _ => Err(serde::de::Error::custom(format!(
                    "occurrence {n} is not a whole number from 1"
                ))),
            },
            other => Err(serde::de::Error::custom(format!(
                "occurrence must be `first`, `last` or a whole number from 1, found {other}"
            ))),
        }
    }
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
    let Some(i) = a.occurrence.pick(index.positions(&set)) else {
        let matches = index.positions(&set).count();
        if matches == 0 {
            return Outcome::fail(format!(
                "{}, so there is no snapshot after it",
                super::signal::no_name(ctx, &a.after_signal)
            ));
        }
        let asked = match a.occurrence {
            Occurrence::Nth(n) => n.to_string(),
            other => format!("{other:?}"),
        };
        return Outcome::fail(format!(
            "occurrence {asked} of {} asked, but {} match it",
            a.after_signal,
            display::plural(matches, "signal")
        ));
    };
    let found = ctx.state_value_at(i, &path);
    let nth = match a.occurrence {
        Occurrence::First | Occurrence::Nth(1) => String::new(),
        Occurrence::Last => ", the last".to_string(),
        Occurrence::Nth(n) => format!(", occurrence {n}"),
    };
    let when = format!(
        "after {} (#{}{nth})",
        ctx.signals()[i].name,
        ctx.signals()[i].index
    );
    check(&a.path, found.as_deref(), a.value.as_ref(), a.exists, &when)
        .matched(vec![ctx.signals()[i].index])
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

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn an_occurrence_is_a_positive_index_first_or_last() {
        use crate::assert::Occurrence;
        let o: Occurrence = serde_json::from_value(serde_json::json!(2)).unwrap();
        assert_eq!(o, Occurrence::Nth(2));
        let o: Occurrence = serde_json::from_value(serde_json::json!("last")).unwrap();
        assert_eq!(o, Occurrence::Last);
        assert!(serde_json::from_value::<Occurrence>(serde_json::json!(0)).is_err());
        assert_eq!(serde_json::to_value(Occurrence::First).unwrap(), "first");
    }
}
