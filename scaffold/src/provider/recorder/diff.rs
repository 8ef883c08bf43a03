//! Readable differences between a recorded request and a new one.

use serde_json::Value;

use super::cassette::RecordedRequest;

/// How many differences a message lists before summarizing the rest.
const MAX_LISTED: usize = 12;
/// How many characters of a value a difference shows.
const MAX_SHOWN: usize = 80;
/// Characters of common text shown before the first changed character.
const CONTEXT_BEFORE: usize = 24;

/// One difference: where, and the old and new values (`None` = absent).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Change {
    pub(crate) path: String,
    pub(crate) old: Option<Value>,
    pub(crate) new: Option<Value>,
}

/// The differences between the recorded request and an incoming one
/// (method, path, query and JSON body by path). Empty when they match.
pub(crate) fn diff_requests(
    recorded: &RecordedRequest,
    method: &str,
    path: &str,
    query: Option<&str>,
    body: Option<&Value>,
) -> Vec<Change> {
    let mut changes = Vec::new();
    let mut scalar = |name: &str, old: Option<&str>, new: Option<&str>| {
        if old != new {
            changes.push(Change {
                path: name.to_string(),
                old: old.map(|s| Value::String(s.to_string())),
                new: new.map(|s| Value::String(s.to_string())),
            });
        }
    };
    scalar(
        "(method)",
        Some(recorded.method.as_str()),
        Some(method.to_ascii_uppercase().as_str()),
    );
    scalar("(path)", Some(recorded.path.as_str()), Some(path));
    scalar(
        "(query)",
        recorded.query.as_deref().filter(|q| !q.is_empty()),
        query.filter(|q| !q.is_empty()),
    );
    match (recorded.body.as_ref(), body) {
        (Some(old), Some(new)) => diff_values(old, new, &mut String::new(), &mut changes),
        (None, None) => {}
        (old, new) => changes.push(Change {
            path: "(body)".to_string(),
            old: old.cloned(),
            new: new.cloned(),
        }),
    }
    changes
}

/// Append the differences between `old` and `new` under `path`.
pub(crate) fn diff_values(old: &Value, new: &Value, path: &mut String, out: &mut Vec<Change>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let len = path.len();
                push_key(path, key);
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => diff_values(x, y, path, out),
                    (x, y) => out.push(Change {
                        path: path.clone(),
                        old: x.cloned(),
                        new: y.cloned(),
                    }),
                }
                path.truncate(len);
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                match (a.get(i), b.get(i)) {
                    (Some(x), Some(y)) => diff_values(x, y, path, out),
                    (x, y) => out.push(Change {
                        path: path.clone(),
                        old: x.cloned(),
                        new: y.cloned(),
                    }),
                }
                path.truncate(len);
            }
        }
        (a, b) if numbers_equal(a, b) => {}
        (a, b) => {
            if a != b {
                out.push(Change {
                    path: if path.is_empty() {
                        "(body)".to_string()
                    } else {
                        path.clone()
                    },
                    old: Some(a.clone()),
                    new: Some(b.clone()),
                });
            }
        }
    }
}

/// `1` and `1.0` are the same number to an API.
fn numbers_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64().is_some() && x.as_f64() == y.as_f64(),
        _ => false,
    }
}

fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
    } else {
        path.push('[');
        path.push_str(&Value::String(key.to_string()).to_string());
        path.push(']');
    }
}

/// The differences as indented lines, `path: old → new`.
pub(crate) fn render_changes(changes: &[Change]) -> String {
    let mut out = String::new();
    for change in changes.iter().take(MAX_LISTED) {
        let (old, new) = show_pair(change.old.as_ref(), change.new.as_ref());
        out.push_str(&format!("  {}: {old} → {new}\n", change.path));
    }
    if changes.len() > MAX_LISTED {
        out.push_str(&format!(
            "  … and {} more difference(s)\n",
            changes.len() - MAX_LISTED
        ));
    }
    out
}

fn show_pair(old: Option<&Value>, new: Option<&Value>) -> (String, String) {
    match (old, new) {
        (Some(Value::String(a)), Some(Value::String(b))) => {
            let start = first_difference(a, b).saturating_sub(CONTEXT_BEFORE);
            (show_str(a, start), show_str(b, start))
        }
        (a, b) => (show(a), show(b)),
    }
}

/// Char index of the first difference between `a` and `b`.
fn first_difference(a: &str, b: &str) -> usize {
    a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count()
}

/// A quoted excerpt of `s` from char `start`, at most [`MAX_SHOWN`] chars,
/// with `…` where text is left out.
fn show_str(s: &str, start: usize) -> String {
    let total = s.chars().count();
    let start = start.min(total);
    let excerpt: String = s.chars().skip(start).take(MAX_SHOWN).collect();
    let quoted = Value::String(excerpt).to_string();
    let inner = &quoted[1..quoted.len() - 1];
    let before = if start > 0 { "…" } else { "" };
    let after = if start + MAX_SHOWN < total { "…" } else { "" };
    format!("\"{before}{inner}{after}\"")
}

fn show(value: Option<&Value>) -> String {
    match value {
        None => "(absent)".to_string(),
        Some(Value::String(s)) => show_str(s, 0),
        Some(v) => {
            let text = v.to_string();
            if text.chars().count() > MAX_SHOWN {
                let cut: String = text.chars().take(MAX_SHOWN).collect();
                format!("{cut}…")
            } else {
                text
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_and_values() {
        let old = json!({"model": "a", "messages": [{"role": "user", "content": "hi"}], "n": 1});
        let new = json!({"model": "b", "messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "x"}], "n": 1.0, "temperature": 0.5});
        let mut changes = Vec::new();
        diff_values(&old, &new, &mut String::new(), &mut changes);
        let text = render_changes(&changes);
        assert!(text.contains("model: \"a\" → \"b\""), "{text}");
        assert!(text.contains("messages[1]: (absent) → {"), "{text}");
        assert!(text.contains("temperature: (absent) → 0.5"), "{text}");
        assert!(!text.contains("  n:"), "{text}");
    }

    #[test]
    fn long_strings_show_the_changed_part() {
        let a = format!("{}old ending", "x".repeat(200));
        let b = format!("{}new ending", "x".repeat(200));
        let (sa, sb) = show_pair(Some(&json!(a)), Some(&json!(b)));
        assert!(sa.starts_with("\"…") && sa.contains("old ending"), "{sa}");
        assert!(sb.contains("new ending"), "{sb}");
    }

    #[test]
    fn odd_keys_are_quoted() {
        let mut changes = Vec::new();
        diff_values(
            &json!({"a b": 1}),
            &json!({"a b": 2}),
            &mut String::new(),
            &mut changes,
        );
        assert_eq!(changes[0].path, "[\"a b\"]");
    }
}
