//! `output.contains`, `output.notContains`, `output.matches`,
//! `output.json`, `output.length`, `output.equals`: the run's output.
//!
//! Each takes an optional `path` into the output (`outputs.main.text`). Text
//! assertions read a string as it is and anything else as its compact JSON.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::context::EvalContext;
use super::display;
use super::matcher::values_equal;
use super::path::Path;
use super::result::{Bounds, Outcome};

/// The output contains `text`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputContains {
    /// The text to look for (seed 001 calls it `value`).
    #[serde(alias = "value")]
    pub text: String,
    /// Path into the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Default `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_sensitive: Option<bool>,
}

/// The output does not contain `text`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputNotContains {
    /// The text that must not appear.
    #[serde(alias = "value")]
    pub text: String,
    /// Path into the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Default `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_sensitive: Option<bool>,
}

/// The output matches a regular expression (Rust `regex` syntax).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputMatches {
    /// The regex; it may match anywhere.
    pub regex: String,
    /// Flags: `i` (ignore case), `m` (multi-line), `s` (dot matches newline),
    /// `x` (verbose), `U` (swap greed); JavaScript's `g`, `u`, `y`, `d` are
    /// accepted and change nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flags: Option<String>,
    /// Path into the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// The output is JSON (a string holding JSON, or a structured value) and
/// follows `schema` (JSON Schema, any draft the `jsonschema` crate knows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputJson {
    /// The JSON Schema; without one, the output only has to be JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Path into the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// The output's length: characters of a string, elements of an array,
/// characters of the compact JSON of anything else.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OutputLength {
    /// At least.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<u64>,
    /// At most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u64>,
    /// Path into the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// The output equals `value` (deep; numbers by value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputEquals {
    /// The expected value.
    pub value: Value,
    /// Path into the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// For strings; default `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_sensitive: Option<bool>,
}

/// The output (at `path`) or a failed outcome saying why there is none.
fn target<'c>(ctx: &'c EvalContext<'_>, path: Option<&str>) -> Result<&'c Value, Box<Outcome>> {
    let Some(output) = ctx.get_output() else {
        return Err(Box::new(Outcome::fail("the run produced no output")));
    };
    let Some(path) = path.filter(|p| !p.is_empty()) else {
        return Ok(output);
    };
    let parsed =
        Path::parse(path).map_err(|e| Box::new(Outcome::fail(format!("invalid path: {e}"))))?;
    parsed.resolve(output).ok_or_else(|| {
        Box::new(Outcome::fail(format!(
            "the output has nothing at `{path}`; output: {}",
            display::value(output)
        )))
    })
}

macro_rules! target {
    ($ctx:expr, $path:expr) => {
        match target($ctx, $path) {
            Ok(v) => v,
            Err(o) => return *o,
        }
    };
}

/// The text of a value: strings as they are, the rest as compact JSON.
pub(crate) fn text(v: &Value) -> Cow<'_, str> {
    match v {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

/// "output" or "output at `path`".
fn what(path: Option<&str>) -> String {
    match path.filter(|p| !p.is_empty()) {
        Some(p) => format!("output at `{p}`"),
        None => "output".into(),
    }
}

/// Some characters of `text` around the bytes `at..end`.
fn context_around(text: &str, (at, end): (usize, usize)) -> String {
    let len = end - at;
    let start = text[..at]
        .char_indices()
        .rev()
        .nth(30)
        .map(|(i, _)| i)
        .unwrap_or(0);
    let end = text[at + len..]
        .char_indices()
        .nth(30)
        .map(|(i, _)| at + len + i)
        .unwrap_or(text.len());
    format!(
        "{}{}{}",
        if start > 0 { "…" } else { "" },
        &text[start..end],
        if end < text.len() { "…" } else { "" }
    )
}

/// Byte range of `needle` in `hay`, ignoring case when asked.
fn find(hay: &str, needle: &str, case_sensitive: bool) -> Option<(usize, usize)> {
    if case_sensitive {
        hay.find(needle).map(|at| (at, at + needle.len()))
    } else {
        let re = cached_regex(&regex::escape(needle), Some("i")).ok()?;
        re.find(hay).map(|m| (m.start(), m.end()))
    }
}

fn case_note(case_sensitive: bool) -> &'static str {
    if case_sensitive {
        ""
    } else {
        " (ignoring case)"
    }
}

pub(crate) fn contains(a: &OutputContains, ctx: &EvalContext<'_>) -> Outcome {
    let v = target!(ctx, a.path.as_deref());
    let t = text(v);
    let cs = a.case_sensitive.unwrap_or(true);
    let w = what(a.path.as_deref());
    match find(&t, &a.text, cs) {
        Some(at) => Outcome::pass(format!(
            "{w} contains {:?}{}: {:?}",
            a.text,
            case_note(cs),
            context_around(&t, at)
        ))
        .expected(a.text.clone()),
        None => Outcome::fail(format!(
            "{w} does not contain {:?}{}; {w}: {:?}",
            a.text,
            case_note(cs),
            display::cut(&t, 200)
        ))
        .expected(a.text.clone())
        .actual(display::cut(&t, 2000)),
    }
}

pub(crate) fn not_contains(a: &OutputNotContains, ctx: &EvalContext<'_>) -> Outcome {
    let v = target!(ctx, a.path.as_deref());
    let t = text(v);
    let cs = a.case_sensitive.unwrap_or(true);
    let w = what(a.path.as_deref());
    match find(&t, &a.text, cs) {
        None => Outcome::pass(format!(
            "{w} does not contain {:?}{}",
            a.text,
            case_note(cs)
        ))
        .expected(format!("not {:?}", a.text)),
        Some(at) => Outcome::fail(format!(
            "{w} contains {:?}{}: {:?}",
            a.text,
            case_note(cs),
            context_around(&t, at)
        ))
        .expected(format!("not {:?}", a.text))
        .actual(display::cut(&t, 2000)),
    }
}

/// Build a regex with dataset flags.
pub fn build_regex(regex: &str, flags: Option<&str>) -> Result<Regex, String> {
    let mut b = RegexBuilder::new(regex);
    for f in flags.unwrap_or("").chars() {
        match f {
            'i' => {
                b.case_insensitive(true);
            }
            'm' => {
                b.multi_line(true);
            }
            's' => {
                b.dot_matches_new_line(true);
            }
            'x' => {
                b.ignore_whitespace(true);
            }
            'U' => {
                b.swap_greed(true);
            }
            'g' | 'u' | 'y' | 'd' => {}
            other => {
                return Err(format!(
                    "unknown regex flag `{other}` (known: i, m, s, x, U; g, u, y, d are ignored)"
                ));
            }
        }
    }
    b.build().map_err(|e| e.to_string())
}

/// [`build_regex`], compiled once per process: every cell of a suite checks
/// the same patterns, and compiling one costs more than matching it.
///
/// The regex is shared, not cloned: a clone of a `Regex` starts with an
/// empty pool of match caches, so each cell would build (and free) a lazy
/// DFA cache of its own; the shared one keeps its caches for every thread.
pub(crate) fn cached_regex(regex: &str, flags: Option<&str>) -> Result<Arc<Regex>, String> {
    type Cache = HashMap<(String, String), Arc<Regex>>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    /// Enough for any suite's patterns; a generated flood just starts over.
    const MAX: usize = 4096;
    let key = (regex.to_owned(), flags.unwrap_or("").to_owned());
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(re) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return Ok(re);
    }
    let re = Arc::new(build_regex(regex, flags)?);
    if let Ok(mut c) = cache.lock() {
        if c.len() >= MAX {
            c.clear();
        }
        c.insert(key, Arc::clone(&re));
    }
    Ok(re)
}

pub(crate) fn matches(a: &OutputMatches, ctx: &EvalContext<'_>) -> Outcome {
    let re = match cached_regex(&a.regex, a.flags.as_deref()) {
        Ok(r) => r,
        Err(e) => return Outcome::fail(format!("invalid regex /{}/: {e}", a.regex)),
    };
    let v = target!(ctx, a.path.as_deref());
    let t = text(v);
    let shown = format!("/{}/{}", a.regex, a.flags.as_deref().unwrap_or(""));
    let w = what(a.path.as_deref());
    match re.find(&t) {
        Some(m) => Outcome::pass(format!(
            "{w} matches {shown}: {:?}",
            display::cut(m.as_str(), 80)
        ))
        .expected(shown)
        .actual(m.as_str()),
        None => Outcome::fail(format!(
            "{w} does not match {shown}; {w}: {:?}",
            display::cut(&t, 200)
        ))
        .expected(shown)
        .actual(display::cut(&t, 2000)),
    }
}

/// Strip one surrounding Markdown code fence (```json … ```), if any.
fn unfence(s: &str) -> &str {
    let t = s.trim();
    if let Some(rest) = t.strip_prefix("```")
        && let Some(body) = rest.strip_suffix("```")
    {
        // Drop the info string (`json`) on the first line.
        return body.split_once('\n').map(|(_, b)| b).unwrap_or(body).trim();
    }
    t
}

pub(crate) fn json(a: &OutputJson, ctx: &EvalContext<'_>) -> Outcome {
    let v = target!(ctx, a.path.as_deref());
    let w = what(a.path.as_deref());
    let parsed: Cow<'_, Value> = match v {
        Value::String(s) => match serde_json::from_str(unfence(s)) {
            Ok(x) => Cow::Owned(x),
            Err(e) => {
                return Outcome::fail(format!(
                    "{w} is not JSON ({e}); {w}: {:?}",
                    display::cut(s, 200)
                ));
            }
        },
        other => Cow::Borrowed(other),
    };
    let Some(schema) = &a.schema else {
        return Outcome::pass(format!("{w} is JSON: {}", display::value(&parsed)));
    };
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => return Outcome::fail(format!("invalid JSON schema: {e}")),
    };
    let errors: Vec<String> = validator
        .iter_errors(&parsed)
        .take(5)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        Outcome::pass(format!("{w} follows the schema"))
            .expected(schema.clone())
            .actual(parsed.into_owned())
    } else {
        Outcome::fail(format!(
            "{w} does not follow the schema: {}",
            errors.join("; ")
        ))
        .expected(schema.clone())
        .actual(parsed.into_owned())
    }
}

pub(crate) fn length(a: &OutputLength, ctx: &EvalContext<'_>) -> Outcome {
    let v = target!(ctx, a.path.as_deref());
    let (n, unit) = match v {
        Value::String(s) => (s.chars().count(), "character"),
        Value::Array(items) => (items.len(), "element"),
        other => (other.to_string().chars().count(), "character"),
    };
    let bounds = Bounds {
        exact: None,
        min: a.min,
        max: a.max,
    };
    Outcome::new(
        bounds.holds(n as u64),
        format!(
            "{} is {} long, expected {}",
            what(a.path.as_deref()),
            display::plural(n, unit),
            bounds.describe()
        ),
    )
    .expected(bounds.to_value())
    .actual(n)
}

pub(crate) fn equals(a: &OutputEquals, ctx: &EvalContext<'_>) -> Outcome {
    let v = target!(ctx, a.path.as_deref());
    let cs = a.case_sensitive.unwrap_or(true);
    let equal = match (v, &a.value) {
        (Value::String(x), Value::String(y)) if !cs => x.to_lowercase() == y.to_lowercase(),
        (x, y) => values_equal(x, y),
    };
    let w = what(a.path.as_deref());
    if equal {
        Outcome::pass(format!("{w} is {}{}", display::value(v), case_note(cs)))
            .expected(a.value.clone())
            .actual(v.clone())
    } else {
        Outcome::fail(format!(
            "{w} is {}, expected {}{}",
            display::value(v),
            display::value(&a.value),
            case_note(cs)
        ))
        .expected(a.value.clone())
        .actual(v.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_is_compiled_once_and_shared() {
        let a = cached_regex("^echo: .*$", Some("i")).unwrap();
        let again = cached_regex("^echo: .*$", Some("i")).unwrap();
        // One regex, so one pool of match caches for every cell.
        assert!(Arc::ptr_eq(&a, &again));
        let other = cached_regex("^echo: .*$", None).unwrap();
        assert!(!Arc::ptr_eq(&a, &other), "flags are part of the key");
        assert!(a.is_match("Echo: hi") && !other.is_match("Echo: hi"));
        let err = cached_regex("(", None).unwrap_err();
        assert!(err.contains("unclosed group"), "{err}");
    }
}
