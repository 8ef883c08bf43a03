//! Expected values: value matchers and partial (subset) matching.
//!
//! Wherever an assertion takes an expected value (`payload`, `args`,
//! snapshot `value`), the same rules apply:
//!
//! - **Objects are subsets.** Every key of the expected object must be in the
//!   actual object and match; other actual keys are ignored. Nested objects
//!   follow the same rule.
//! - **Arrays are ordered subsequences.** Each expected element must match an
//!   actual element, in order, with any number of other elements between:
//!   `[a, c]` matches `[a, b, c]` but not `[c, a]`. Use `{equals: [...]}` for
//!   an exact array.
//! - **Leaves are equal** (numbers compare by value: `1` equals `1.0`), unless
//!   the expected leaf is a **value matcher**: an object whose keys are all
//!   matcher names. Several matcher keys in one object must all hold
//!   (`{gte: 1, lte: 5}`).
//!
//! | matcher | holds when the actual value |
//! |---|---|
//! | `gte: n`, `gt: n`, `lte: n`, `lt: n` | is a number in that relation to `n`; for an array or object, its length |
//! | `between: [a, b]` | is a number (or length) with `a <= x <= b` |
//! | `contains: x` | is a string containing the string `x`; an array with an element that contains `x` (strings) or partially matches `x`; an object with key `x` |
//! | `startsWith: s`, `endsWith: s` | is a string starting / ending with `s` |
//! | `matches: re` | is a string (numbers and booleans as written) the regex `re` finds a match in |
//! | `equals: v` | is exactly `v` (deep, numbers by value); the escape hatch to compare against an object that looks like a matcher |

use std::sync::Arc;

use regex::Regex;
use serde_json::Value;

use super::display;

/// The names of the value matchers.
pub const MATCHER_KEYS: &[&str] = &[
    "gte",
    "lte",
    "gt",
    "lt",
    "between",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "equals",
];

/// Whether `v` is a value matcher: a non-empty object whose keys are all matcher names.
pub fn is_matcher(v: &Value) -> bool {
    match v {
        Value::Object(m) => !m.is_empty() && m.keys().all(|k| MATCHER_KEYS.contains(&k.as_str())),
        _ => false,
    }
}

/// One compiled matcher check.
#[derive(Debug)]
pub(crate) enum Check<'e> {
    Gte(f64),
    Lte(f64),
    Gt(f64),
    Lt(f64),
    Between(f64, f64),
    Contains(&'e Value),
    StartsWith(&'e str),
    EndsWith(&'e str),
    Matches(Arc<Regex>),
    Equals(&'e Value),
}

/// An expected value compiled once (regexes built, matchers recognised) and
/// tested against many actual values.
#[derive(Debug)]
pub(crate) enum Expect<'e> {
    /// A value matcher: every check must hold.
    Matcher(Vec<Check<'e>>),
    /// Subset of an object.
    Object(Vec<(&'e str, Expect<'e>)>),
    /// Ordered subsequence of an array.
    Array(Vec<Expect<'e>>),
    /// Equality with a scalar.
    Literal(&'e Value),
}

impl<'e> Expect<'e> {
    /// Compile `expected`; the error says which matcher is wrong.
    pub(crate) fn compile(expected: &'e Value) -> Result<Expect<'e>, String> {
        Ok(match expected {
            Value::Object(map) if is_matcher(expected) => {
                let mut checks = Vec::with_capacity(map.len());
                for (k, v) in map {
                    checks.push(compile_check(k, v)?);
                }
                Expect::Matcher(checks)
            }
            Value::Object(map) => {
                let mut fields = Vec::with_capacity(map.len());
                for (k, v) in map {
                    fields.push((k.as_str(), Expect::compile(v)?));
                }
                Expect::Object(fields)
            }
            Value::Array(items) => Expect::Array(
                items
                    .iter()
                    .map(Expect::compile)
                    .collect::<Result<_, _>>()?,
            ),
            leaf => Expect::Literal(leaf),
        })
    }

    /// Whether `actual` matches.
    pub(crate) fn test(&self, actual: &Value) -> bool {
        self.mismatch(actual, &mut String::new(), false).is_none()
    }

    /// Why `actual` does not match (`None` when it does), naming the path of
    /// the first difference, e.g. `agent: expected fixer, got reviewer`.
    pub(crate) fn explain(&self, actual: &Value) -> Option<String> {
        self.mismatch(actual, &mut String::new(), true)
    }

    fn mismatch(&self, actual: &Value, at: &mut String, explain: bool) -> Option<String> {
        fn here(at: &str, explain: bool, msg: impl FnOnce() -> String) -> Option<String> {
            Some(if !explain {
                String::new()
            } else if at.is_empty() {
                msg()
            } else {
                format!("{at}: {}", msg())
            })
        }
        match self {
            Expect::Literal(e) => {
                if values_equal(e, actual) {
                    None
                } else {
                    here(at, explain, || {
                        format!(
                            "expected {}, got {}",
                            display::value(e),
                            display::value(actual)
                        )
                    })
                }
            }
            Expect::Matcher(checks) => {
                for c in checks {
                    if !c.holds(actual) {
                        return here(at, explain, || {
                            format!("expected {}, got {}", c.describe(), display::value(actual))
                        });
                    }
                }
                None
            }
            Expect::Object(fields) => {
                let Value::Object(map) = actual else {
                    return here(at, explain, || {
                        format!("expected an object, got {}", display::value(actual))
                    });
                };
                for (k, e) in fields {
                    let len = at.len();
                    if explain {
                        if !at.is_empty() {
                            at.push('.');
                        }
                        at.push_str(k);
                    }
                    let result = match map.get(*k) {
                        Some(v) => e.mismatch(v, at, explain),
                        None => here(at, explain, || "missing".to_string()),
                    };
                    at.truncate(len);
                    if result.is_some() {
                        return result;
                    }
                }
                None
            }
            Expect::Array(items) => {
                let Value::Array(actual_items) = actual else {
                    return here(at, explain, || {
                        format!("expected an array, got {}", display::value(actual))
                    });
                };
                let mut pos = 0;
                for (i, e) in items.iter().enumerate() {
                    match actual_items[pos..].iter().position(|a| e.test(a)) {
                        Some(found) => pos += found + 1,
                        None => {
                            return here(at, explain, || {
                                format!(
                                    "expected element {i} ({}) in order, got {}",
                                    e.describe(),
                                    display::value(actual)
                                )
                            });
                        }
                    }
                }
                None
            }
        }
    }

    /// A top-level `key: "text"` of an object expectation: every match has
    /// that field with that exact string, so a field column can prefilter.
    pub(crate) fn literal_str_field(&self) -> Option<(&'e str, &'e str)> {
        match self {
            Expect::Object(fields) => fields.iter().find_map(|(k, e)| match e {
                Expect::Literal(Value::String(v)) => Some((*k, v.as_str())),
                _ => None,
            }),
            _ => None,
        }
    }

    /// Whether this is a plain value (no matcher, object or array rules).
    pub(crate) fn is_literal(&self) -> bool {
        matches!(self, Expect::Literal(_))
    }

    /// The expectation in dataset notation.
    pub(crate) fn describe(&self) -> String {
        match self {
            Expect::Literal(v) => display::value(v),
            Expect::Matcher(checks) => checks
                .iter()
                .map(Check::describe)
                .collect::<Vec<_>>()
                .join(" and "),
            Expect::Object(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, e)| format!("{k}: {}", e.describe()))
                    .collect();
                format!("{{{}}}", parts.join(", "))
            }
            Expect::Array(items) => {
                let parts: Vec<String> = items.iter().map(Expect::describe).collect();
                format!("[{}]", parts.join(", "))
            }
        }
    }
}

fn number(key: &str, v: &Value) -> Result<f64, String> {
    v.as_f64()
        .ok_or_else(|| format!("`{key}` needs a number, got {}", display::value(v)))
}

fn string<'e>(key: &str, v: &'e Value) -> Result<&'e str, String> {
    v.as_str()
        .ok_or_else(|| format!("`{key}` needs a string, got {}", display::value(v)))
}

fn compile_check<'e>(key: &str, v: &'e Value) -> Result<Check<'e>, String> {
    Ok(match key {
        "gte" => Check::Gte(number(key, v)?),
        "lte" => Check::Lte(number(key, v)?),
        "gt" => Check::Gt(number(key, v)?),
        "lt" => Check::Lt(number(key, v)?),
        "between" => match v.as_array().map(Vec::as_slice) {
            Some([a, b]) => {
                let (a, b) = (number(key, a)?, number(key, b)?);
                if a > b {
                    return Err(format!("`between: [{a}, {b}]` has its bounds reversed"));
                }
                Check::Between(a, b)
            }
            _ => {
                return Err(format!(
                    "`between` needs two numbers [min, max], got {}",
                    display::value(v)
                ));
            }
        },
        "contains" => Check::Contains(v),
        "startsWith" => Check::StartsWith(string(key, v)?),
        "endsWith" => Check::EndsWith(string(key, v)?),
        "matches" => {
            let re = string(key, v)?;
            // Compiled once per process, not once per cell that checks it.
            Check::Matches(
                super::output::cached_regex(re, None)
                    .map_err(|e| format!("bad regex in `matches`: {e}"))?,
            )
        }
        "equals" => Check::Equals(v),
        other => return Err(format!("unknown matcher `{other}`")),
    })
}

/// A number for the numeric matchers: numbers themselves, lengths of arrays and objects.
fn numeric(actual: &Value) -> Option<f64> {
    match actual {
        Value::Number(n) => n.as_f64(),
        Value::Array(a) => Some(a.len() as f64),
        Value::Object(m) => Some(m.len() as f64),
        _ => None,
    }
}

impl Check<'_> {
    fn holds(&self, actual: &Value) -> bool {
        match self {
            Check::Gte(n) => numeric(actual).is_some_and(|x| x >= *n),
            Check::Lte(n) => numeric(actual).is_some_and(|x| x <= *n),
            Check::Gt(n) => numeric(actual).is_some_and(|x| x > *n),
            Check::Lt(n) => numeric(actual).is_some_and(|x| x < *n),
            Check::Between(a, b) => numeric(actual).is_some_and(|x| x >= *a && x <= *b),
            Check::Contains(e) => contains(actual, e),
            Check::StartsWith(s) => actual.as_str().is_some_and(|a| a.starts_with(s)),
            Check::EndsWith(s) => actual.as_str().is_some_and(|a| a.ends_with(s)),
            Check::Matches(re) => match actual {
                Value::String(s) => re.is_match(s),
                Value::Number(_) | Value::Bool(_) => re.is_match(&actual.to_string()),
                _ => false,
            },
            Check::Equals(e) => values_equal(e, actual),
        }
    }

    fn describe(&self) -> String {
        match self {
            Check::Gte(n) => format!("gte {}", display::num(*n)),
            Check::Lte(n) => format!("lte {}", display::num(*n)),
            Check::Gt(n) => format!("gt {}", display::num(*n)),
            Check::Lt(n) => format!("lt {}", display::num(*n)),
            Check::Between(a, b) => {
                format!("between {} and {}", display::num(*a), display::num(*b))
            }
            Check::Contains(e) => format!("contains {}", display::value(e)),
            Check::StartsWith(s) => format!("startsWith {}", display::value(&Value::from(*s))),
            Check::EndsWith(s) => format!("endsWith {}", display::value(&Value::from(*s))),
            Check::Matches(re) => format!("matches /{}/", re.as_str()),
            Check::Equals(e) => format!("equals {}", display::value(e)),
        }
    }
}

fn contains(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::String(a), Value::String(e)) => a.contains(e.as_str()),
        (Value::Array(items), e) => items.iter().any(|item| match (item, e) {
            (Value::String(s), Value::String(e)) => s.contains(e.as_str()),
            (item, e) => Expect::compile(e).is_ok_and(|x| x.test(item)),
        }),
        (Value::Object(map), Value::String(key)) => map.contains_key(key),
        _ => false,
    }
}

/// Deep equality where numbers compare by value (`1 == 1.0`).
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                x == y
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| values_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => a == b,
    }
}

/// Whether `actual` matches `expected` under the rules of this module.
/// A malformed matcher (bad regex, `between` without two numbers) never matches.
#[cfg(test)]
pub(crate) fn matches_value(expected: &Value, actual: &Value) -> bool {
    Expect::compile(expected).is_ok_and(|e| e.test(actual))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_value_reads_matchers() {
        let actual =
            json!({"agent": "fixer", "usage": {"inputTokens": 120}, "files": ["a.ts", "b.ts"]});
        assert!(matches_value(&json!({"agent": "fixer"}), &actual));
        assert!(matches_value(
            &json!({"usage": {"inputTokens": {"gte": 100}}}),
            &actual
        ));
        assert!(matches_value(&json!({"files": ["b.ts"]}), &actual));
        assert!(!matches_value(
            &json!({"agent": {"startsWith": "rev"}}),
            &actual
        ));
    }

    #[test]
    fn matchers() {
        let t = |e: Value, a: Value| matches_value(&e, &a);
        assert!(t(json!({"gte": 3}), json!(3)));
        assert!(t(json!({"gte": 3}), json!(["a", "b", "c"])));
        assert!(!t(json!({"gt": 3}), json!(3)));
        assert!(t(json!({"between": [1, 2]}), json!(1.5)));
        assert!(t(json!({"contains": "null"}), json!("a null check")));
        assert!(t(json!({"contains": "utils.ts"}), json!(["src/utils.ts"])));
        assert!(t(
            json!({"contains": {"path": "a"}}),
            json!([{"path": "a", "x": 1}])
        ));
        assert!(t(json!({"endsWith": "user.ts"}), json!("src/user.ts")));
        assert!(t(json!({"matches": "test|jest"}), json!("bun test")));
        assert!(t(json!({"equals": {"gte": 1}}), json!({"gte": 1})));
        assert!(t(json!({"gte": 1, "lte": 5}), json!(4)));
        assert!(!t(json!({"gte": 1, "lte": 5}), json!(6)));
        assert!(t(json!([1, 3]), json!([1, 2, 3])));
        assert!(!t(json!([3, 1]), json!([1, 2, 3])));
        assert!(t(json!({"a": {"b": 1}}), json!({"a": {"b": 1.0, "c": 2}})));
        assert!(!t(json!({"matches": "("}), json!("(")));
        let bad = json!({"matches": "("});
        let err = Expect::compile(&bad).err().unwrap();
        assert!(err.starts_with("bad regex in `matches`: "), "{err}");
    }

    #[test]
    fn explains() {
        let e = json!({"agent": "fixer", "usage": {"n": {"gte": 2}}});
        let x = Expect::compile(&e).unwrap();
        assert_eq!(
            x.explain(&json!({"agent": "reviewer"})).unwrap(),
            "agent: expected fixer, got reviewer"
        );
        assert_eq!(
            x.explain(&json!({"agent": "fixer", "usage": {"n": 1}}))
                .unwrap(),
            "usage.n: expected gte 2, got 1"
        );
        assert_eq!(
            x.explain(&json!({"agent": "fixer"})).unwrap(),
            "usage: missing"
        );
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn an_object_of_operators_is_a_matcher_and_one_of_fields_is_not() {
        use crate::assert::matcher::is_matcher;
        use serde_json::json;
        assert!(is_matcher(&json!({"gte": 0.7})));
        assert!(!is_matcher(&json!({"agent": "fixer"})));
    }

    #[test]
    fn values_equal_compares_numbers_by_value_and_objects_by_every_key() {
        use crate::assert::matcher::values_equal;
        use serde_json::json;
        assert!(values_equal(
            &json!({"a": [1, 2.0]}),
            &json!({"a": [1.0, 2]})
        ));
        assert!(!values_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
    }
}
