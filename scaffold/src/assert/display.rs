//! Short, readable renderings of values and signals for assertion messages.
//!
//! Values are written in a YAML-like flow style (`{agent: fixer, n: 3}`)
//! because that is how datasets write them; long strings and large
//! collections are cut with `…`.

use std::fmt::Write;

use serde_json::Value;

use crate::signal::Signal;

/// At most this many characters of one string.
const MAX_STR: usize = 60;
/// At most this many entries of one array or object.
const MAX_ITEMS: usize = 6;
/// Nesting beyond this is written `…`.
const MAX_DEPTH: usize = 4;

/// `value` in flow style, cut to a readable size.
pub(crate) fn value(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, 0);
    out
}

/// A string cut to `max` characters with `…`.
pub(crate) fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

fn plain_str(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_STR
        && s.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':' | '@'))
        && !matches!(s, "true" | "false" | "null")
        && s.parse::<f64>().is_err()
}

fn write_value(out: &mut String, v: &Value, depth: usize) {
    match v {
        Value::String(s) if plain_str(s) => out.push_str(s),
        Value::String(s) => {
            let cut = cut(s, MAX_STR);
            let _ = write!(out, "{}", Value::String(cut));
        }
        Value::Array(items) => {
            if depth >= MAX_DEPTH {
                out.push_str("[…]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().take(MAX_ITEMS).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item, depth + 1);
            }
            if items.len() > MAX_ITEMS {
                let _ = write!(out, ", … {} more", items.len() - MAX_ITEMS);
            }
            out.push(']');
        }
        Value::Object(map) => {
            if depth >= MAX_DEPTH {
                out.push_str("{…}");
                return;
            }
            out.push('{');
            for (i, (k, item)) in map.iter().take(MAX_ITEMS).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                if plain_str(k) {
                    out.push_str(k);
                } else {
                    let _ = write!(out, "{}", Value::String(k.clone()));
                }
                out.push_str(": ");
                write_value(out, item, depth + 1);
            }
            if map.len() > MAX_ITEMS {
                let _ = write!(out, ", … {} more", map.len() - MAX_ITEMS);
            }
            out.push('}');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// A signal as `name{k: v, …}` showing only the payload fields in `keys`
/// (the bare name when none of them is present).
pub(crate) fn signal_with(signal: &Signal, keys: &[&str]) -> String {
    let mut out = signal.name.clone();
    let mut first = true;
    for key in keys {
        if let Some(v) = signal.payload.get(*key) {
            out.push(if first { '{' } else { ',' });
            if !first {
                out.push(' ');
            }
            first = false;
            out.push_str(key);
            out.push_str(": ");
            write_value(&mut out, v, 1);
        }
    }
    if !first {
        out.push('}');
    }
    out
}

/// A signal as `#index name{payload}` with the whole (cut) payload.
pub(crate) fn signal_full(signal: &Signal) -> String {
    match &signal.payload {
        Value::Object(m) if m.is_empty() => format!("#{} {}", signal.index, signal.name),
        Value::Null => format!("#{} {}", signal.index, signal.name),
        p => format!("#{} {}{}", signal.index, signal.name, value(p)),
    }
}

/// `pattern` with an optional expected payload, as in datasets:
/// `agent:activated{agent: fixer}`.
pub(crate) fn pattern(pattern: &str, payload: Option<&Value>) -> String {
    match payload {
        Some(p) => format!("{pattern}{}", value(p)),
        None => pattern.to_string(),
    }
}

pub(crate) use crate::util::fmt::plural;

/// A number without a trailing `.0`.
pub(crate) fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flow_style() {
        assert_eq!(
            value(&json!({"agent": "fixer", "n": 3})),
            "{agent: fixer, n: 3}"
        );
        assert_eq!(value(&json!("two words")), "\"two words\"");
        assert_eq!(value(&json!("true")), "\"true\"");
        assert_eq!(
            value(&json!([1, 2, 3, 4, 5, 6, 7, 8])),
            "[1, 2, 3, 4, 5, 6, … 2 more]"
        );
        assert_eq!(num(3.0), "3");
        assert_eq!(num(0.25), "0.25");
    }
}
