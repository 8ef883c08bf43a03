//! The session summary each cell checks with insta.
//!
//! It keeps what describes behaviour (the trajectory of signals with their
//! key payload fields, the final state, the output, tokens and cost) and
//! leaves out what changes from run to run (times, durations, session ids),
//! so playback is byte-identical run after run.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::eval::CellResult;
use crate::signal::{Signal, names};

/// The payload fields kept for each built-in signal; custom signals keep
/// their whole payload.
fn key_fields(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        names::HARNESS_START => &["workflow", "agents"],
        names::HARNESS_END => &["status", "activations"],
        names::HARNESS_TERMINATING => &["reason", "agent"],
        names::PHASE_ENTERED | names::PHASE_EXITED => &["phase", "occurrence"],
        names::AGENT_ACTIVATED => &["agent", "trigger"],
        names::AGENT_SKIPPED => &["agent", "reason", "trigger"],
        names::AGENT_COMPLETED => &["agent", "usage"],
        names::PROVIDER_START => &["provider", "model", "recordingId"],
        names::PROVIDER_END => &["model", "usage", "costUsd", "stopReason"],
        names::PROVIDER_ERROR => &["code", "error"],
        names::TEXT_COMPLETE => &[],
        names::TOOL_CALL => &["name", "input"],
        names::TOOL_RESULT => &["name", "result", "isError"],
        names::RECORDING_LINKED => &["recordingId"],
        _ if names::state_key(name).is_some() => &["newValue"],
        _ if name.starts_with("error:") => &["message"],
        _ => return None,
    })
}

fn summarize_signal(signal: &Signal) -> Value {
    let mut entry = Map::new();
    entry.insert("signal".into(), Value::String(signal.name.clone()));
    match (key_fields(&signal.name), &signal.payload) {
        (Some(fields), Value::Object(payload)) => {
            for field in fields {
                if let Some(v) = payload.get(*field) {
                    entry.insert((*field).to_string(), v.clone());
                }
            }
        }
        (None, Value::Object(payload)) => {
            for (k, v) in payload {
                if k != "agent" {
                    entry.insert(k.clone(), v.clone());
                }
            }
            if let Some(agent) = &signal.agent {
                entry.insert("agent".into(), Value::String(agent.clone()));
            }
        }
        (_, other) if !other.is_null() => {
            entry.insert("payload".into(), other.clone());
        }
        _ => {}
    }
    Value::Object(entry)
}

/// The snapshot of one cell: stable across runs of the same recordings.
pub fn session_summary(cell: &CellResult, signals: &[Signal], final_state: &Value) -> Value {
    let trajectory: Vec<Value> = signals
        .iter()
        .filter(|s| s.name != names::TEXT_DELTA)
        .map(summarize_signal)
        .collect();
    let deltas = signals
        .iter()
        .filter(|s| s.name == names::TEXT_DELTA)
        .count();
    let assertions: Vec<Value> = cell
        .assertions
        .iter()
        // Messages of passing assertions may quote timings; keep them only for failures.
        .map(|a| match a.passed {
            true => json!({"passed": true}),
            false => json!({"passed": false, "message": a.message}),
        })
        .collect();
    let scores: Vec<Value> = cell
        .scores
        .iter()
        // Values of latency-like scorers vary from run to run; pass/fail does not.
        .map(|s| json!({"name": s.name, "pass": s.pass}))
        .collect();
    json!({
        "cell": cell.id.to_string(),
        "status": cell.status,
        "passed": cell.passed,
        "error": cell.error,
        "input": cell.input,
        "trajectory": trajectory,
        "textDeltas": deltas,
        "finalState": final_state,
        "output": cell.output,
        "metrics": {
            "inputTokens": cell.metrics.input_tokens,
            "outputTokens": cell.metrics.output_tokens,
            "costUsd": cell.metrics.cost_usd,
            "activations": cell.metrics.activations,
            "providerCalls": cell.metrics.provider_calls,
        },
        "assertions": assertions,
        "scores": scores,
    })
}

/// Whether `snapshots/{name}.snap` in `dir` already holds `summary`, checked
/// the way insta's default comparator does (the normalized YAML text).
///
/// The harness asks this before `assert_yaml_snapshot!`: insta scans the
/// whole snapshot folder on every assertion (for stale pending files), which
/// makes a suite quadratic in its cells. Only a missing or differing snapshot
/// goes to insta, which then writes the `.snap.new` and reports the diff. With
/// `INSTA_UPDATE=force`, `INSTA_FORCE_UPDATE=1` or `INSTA_REQUIRE_FULL_MATCH`
/// set, every snapshot goes to insta.
pub(crate) fn matches_committed(dir: &std::path::Path, name: &str, summary: &Value) -> bool {
    if insta_decides() {
        return false;
    }
    let path = dir.join(format!("{name}.snap"));
    if !compare(&path, summary).0 {
        return false;
    }
    // What insta does for a passing snapshot: drop a pending one left by an
    // earlier failing run.
    let pending = dir.join(format!("{name}.snap.new"));
    if pending.exists() {
        let _ = std::fs::remove_file(pending);
    }
    true
}

/// Whether insta's settings make it judge every snapshot itself.
fn insta_decides() -> bool {
    // The environment is read once per process, not once per cell.
    static INSTA_DECIDES: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *INSTA_DECIDES.get_or_init(|| {
        ["INSTA_FORCE_UPDATE", "INSTA_REQUIRE_FULL_MATCH"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty() && x != "0"))
            || std::env::var("INSTA_UPDATE").is_ok_and(|v| v == "force")
    })
}

/// Which comparison gave a verdict of [`compare`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decided {
    /// The committed body, read without parsing the header, equals the new text.
    Fast,
    /// insta's own reading and comparison of the file.
    Insta,
}

/// Whether the committed snapshot at `path` holds `value`, and how that was
/// decided.
///
/// The fast way answers only "equal", and only for a file insta would read
/// as a text snapshot with that body, compared with [`yaml`]'s text of the
/// value; anything else (a different body, a header it cannot vouch for, CR
/// characters) goes to insta's comparison with insta's own serialization,
/// which also accepts legacy formats. So it saves time, never changes a verdict.
fn compare(path: &std::path::Path, value: &Value) -> (bool, Decided) {
    if let Ok(file) = std::fs::read_to_string(path)
        && let Some(body) = fast_body(&file)
        && let Some(text) = yaml(value)
        && body.trim_end() == text.trim_end()
    {
        return (true, Decided::Fast);
    }
    (insta_matches(path, insta_yaml(value)), Decided::Insta)
}

/// insta's YAML serialization of `value` (what `assert_yaml_snapshot!`
/// compares).
fn insta_yaml(value: &Value) -> String {
    insta::_macro_support::serialize_value(value, insta::_macro_support::SerializationFormat::Yaml)
}

/// The text [`insta_yaml`] gives for `value`, written straight from the
/// JSON value: insta converts it to its own content tree, then to a YAML
/// tree, then writes that (most of a cell's snapshot check went there).
/// The rules are those of insta 1.49's emitter (`content/yaml/vendored/
/// emitter.rs`: two-space indents, compact sequences, `~` for null, double
/// quotes with JSON escapes where `need_quotes` says so); a property test
/// holds it to insta's output, and debug builds check every call. `None`
/// when `INSTA_YAML_BLOCK_STYLE=1` asks insta for literal blocks.
fn yaml(value: &Value) -> Option<String> {
    static BLOCK_STYLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *BLOCK_STYLE.get_or_init(|| std::env::var("INSTA_YAML_BLOCK_STYLE").as_deref() == Ok("1")) {
        return None;
    }
    let mut out = String::with_capacity(2048);
    YamlWriter {
        out: &mut out,
        level: -1,
    }
    .node(value);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    debug_assert_eq!(out, insta_yaml(value), "the snapshot YAML is not insta's");
    Some(out)
}

/// insta's YAML emitter over a JSON value.
struct YamlWriter<'a> {
    out: &'a mut String,
    /// The nesting level, -1 at the top.
    level: isize,
}

impl YamlWriter<'_> {
    fn indent(&mut self, level: isize) {
        for _ in 0..level.max(0) {
            self.out.push_str("  ");
        }
    }

    fn node(&mut self, value: &Value) {
        match value {
            Value::Array(items) => self.array(items),
            Value::Object(map) => self.map(map),
            Value::String(s) => self.string(s),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            // serde_json hands insta a u64, an i64 or an f64; each is
            // written with its `Display`.
            Value::Number(n) => {
                let _ = match (n.as_u64(), n.as_i64(), n.as_f64()) {
                    (Some(u), _, _) => write!(self.out, "{u}"),
                    (None, Some(i), _) => write!(self.out, "{i}"),
                    (None, None, Some(f)) => write!(self.out, "{f}"),
                    (None, None, None) => write!(self.out, "{n}"),
                };
            }
            Value::Null => self.out.push('~'),
        }
    }

    fn array(&mut self, items: &[Value]) {
        if items.is_empty() {
            self.out.push_str("[]");
            return;
        }
        self.level += 1;
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push('\n');
                self.indent(self.level);
            }
            self.out.push('-');
            self.value(true, item);
        }
        self.level -= 1;
    }

    fn map(&mut self, map: &serde_json::Map<String, Value>) {
        if map.is_empty() {
            self.out.push_str("{}");
            return;
        }
        self.level += 1;
        for (i, (key, value)) in map.iter().enumerate() {
            if i > 0 {
                self.out.push('\n');
                self.indent(self.level);
            }
            self.string(key);
            self.out.push(':');
            self.value(false, value);
        }
        self.level -= 1;
    }

    /// A value after `-` (`inline`) or after `key:`: a non-empty sequence
    /// or map after a key starts on the next line, anything else after a space.
    fn value(&mut self, inline: bool, value: &Value) {
        let block = !inline
            && match value {
                Value::Array(items) => !items.is_empty(),
                Value::Object(map) => !map.is_empty(),
                _ => false,
            };
        if block {
            self.out.push('\n');
            self.indent(self.level + 1);
        } else {
            self.out.push(' ');
        }
        self.node(value);
    }

    fn string(&mut self, s: &str) {
        if !needs_quotes(s) {
            self.out.push_str(s);
            return;
        }
        self.out.push('"');
        let mut start = 0;
        for (i, byte) in s.bytes().enumerate() {
            // `None`: a control character written as `\u00XX`.
            let escaped = match byte {
                b'"' => Some("\\\""),
                b'\\' => Some("\\\\"),
                b'\x08' => Some("\\b"),
                b'\t' => Some("\\t"),
                b'\n' => Some("\\n"),
                b'\x0c' => Some("\\f"),
                b'\r' => Some("\\r"),
                0..=0x1f | 0x7f => None,
                _ => continue,
            };
            self.out.push_str(&s[start..i]);
            match escaped {
                Some(escaped) => self.out.push_str(escaped),
                None => {
                    let _ = write!(self.out, "\\u{byte:04x}");
                }
            }
            start = i + 1;
        }
        self.out.push_str(&s[start..]);
        self.out.push('"');
    }
}

/// Whether insta's emitter quotes `s` (its `need_quotes`).
fn needs_quotes(s: &str) -> bool {
    const WORDS: [&str; 22] = [
        "yes", "Yes", "YES", "no", "No", "NO", "True", "TRUE", "true", "False", "FALSE", "false",
        "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL", "~",
    ];
    s.is_empty()
        || s.starts_with(' ')
        || s.ends_with(' ')
        || s.starts_with(['&', '*', '?', '|', '-', '<', '>', '=', '!', '%', '@'])
        || s.contains(|c: char| {
            matches!(c, ':' | '{' | '}' | '[' | ']' | ',' | '#' | '`' | '"' | '\'' | '\\'
                | '\0'..='\x06' | '\t' | '\n' | '\r' | '\x0e'..='\x1a' | '\x1c'..='\x1f')
        })
        || WORDS.contains(&s)
        || s.starts_with('.')
        || s.starts_with("0x")
        || s.parse::<i64>().is_ok()
        || s.parse::<f64>().is_ok()
}

/// insta's own verdict: the committed `.snap` at `path` reads as `text`.
fn insta_matches(path: &std::path::Path, text: String) -> bool {
    use insta::internals::{SnapshotContents, TextSnapshotContents};
    insta::Snapshot::from_file(path).is_ok_and(|committed| {
        committed.contents()
            == &SnapshotContents::Text(TextSnapshotContents::new(
                text,
                insta::TextSnapshotKind::File,
            ))
    })
}

/// The body of a `.snap` file (after its `---` header block) when the file
/// is one insta surely reads as a text snapshot whose normalized contents
/// are `body.trim_end()`: a header of plain `key: value` lines (see
/// [`safe_header_line`]) with no `snapshot_kind` other than `text`, and no
/// CR anywhere. `None` means "ask insta".
///
/// insta 1.49 (`Snapshot::from_file`) reads the lines between the first
/// `---` and the next line that is `---` as YAML metadata, then the rest
/// line by line joined with `\n`; it compares `trim_end()` of that, with
/// CRLF made LF, against the same of the new text.
fn fast_body(file: &str) -> Option<&str> {
    if file.contains('\r') {
        return None;
    }
    let mut rest = file.strip_prefix("---\n")?;
    let mut keys: Vec<&str> = Vec::new();
    loop {
        let (line, after) = rest.split_once('\n')?;
        rest = after;
        if line == "---" {
            // An empty header is not a map: insta rejects the file.
            return (!keys.is_empty()).then_some(rest);
        }
        let key = safe_header_line(line)?;
        if keys.contains(&key) {
            return None;
        }
        keys.push(key);
    }
}

/// The key of `line` if it is a header line whose YAML meaning is plain:
/// an unindented `key: value` with a lowercase key and a value that is a
/// simple plain scalar or a double-quoted string with simple escapes, and
/// not a `snapshot_kind` other than `text`. `None` does not mean invalid
/// YAML, only that the fast path does not decide.
fn safe_header_line(line: &str) -> Option<&str> {
    let (key, value) = line.split_once(": ")?;
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
        return None;
    }
    let safe = if key == "snapshot_kind" {
        value == "text"
    } else {
        safe_scalar(value)
    };
    safe.then_some(key)
}

/// Whether `value` is a double-quoted string with only `\\`, `\"`, `\n`,
/// `\t`, `\0` escapes and no control characters, or a plain scalar of
/// path- and name-like characters (`:` never last).
fn safe_scalar(value: &str) -> bool {
    if let Some(inner) = value.strip_prefix('"') {
        let Some(inner) = inner.strip_suffix('"') else {
            return false;
        };
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return false,
                '\\' if !matches!(chars.next(), Some('\\' | '"' | 'n' | 't' | '0')) => {
                    return false;
                }
                c if c.is_control() => return false,
                _ => {}
            }
        }
        return true;
    }
    value
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'/' || b == b'.' || b == b'_')
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-:".contains(&b))
        && !value.ends_with(':')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let dir = std::env::temp_dir()
                .join(format!("scaffold-snapshot-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("temp dir");
            Dir(dir)
        }

        /// Write `{name}.snap` and compare it with `value`, checking the
        /// verdict against insta's.
        fn check(&self, name: &str, file: &str, value: &Value) -> (bool, Decided) {
            let path = self.0.join(format!("{name}.snap"));
            std::fs::write(&path, file).expect("write snapshot");
            let got = compare(&path, value);
            assert_eq!(
                got.0,
                insta_matches(&path, insta_yaml(value)),
                "{name}: not insta's verdict"
            );
            got
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn summary(output: &str) -> Value {
        json!({
            "cell": "e::v::c",
            "output": output,
            "trajectory": [{"signal": "harness:start", "agents": ["a", "b"]}],
            "metrics": {"costUsd": 0.25, "inputTokens": 12},
        })
    }

    /// How insta writes a new `.snap` (header, `---`, the YAML, a newline).
    fn as_insta_writes(body: &str) -> String {
        format!("---\nsource: scaffold/src/harness/mod.rs\ndescription: \"e::v::c\"\n---\n{body}\n")
    }

    #[test]
    fn an_unchanged_snapshot_is_decided_by_the_fast_path() {
        let dir = Dir::new("unchanged");
        let value = summary("Echo: hi");
        let text = insta_yaml(&value);
        assert_eq!(
            dir.check("same", &as_insta_writes(&text), &value),
            (true, Decided::Fast)
        );
        // And by the harness's entry point, which also drops a stale pending
        // file (unless insta's settings make insta decide everything).
        if !insta_decides() {
            std::fs::write(dir.0.join("same.snap.new"), "stale").expect("write");
            assert!(matches_committed(&dir.0, "same", &summary("Echo: hi")));
            assert!(!dir.0.join("same.snap.new").exists());
        }
    }

    #[test]
    fn a_changed_snapshot_still_fails() {
        let dir = Dir::new("changed");
        let committed = as_insta_writes(&insta_yaml(&summary("Echo: hi")));
        assert_eq!(
            dir.check("drift", &committed, &summary("Echo: bye")),
            (false, Decided::Insta)
        );
        assert!(!matches_committed(&dir.0, "drift", &summary("Echo: bye")));
        // A missing file is not a match either.
        assert!(!matches_committed(&dir.0, "missing", &summary("Echo: bye")));
    }

    #[test]
    fn other_headers_with_the_same_body_behave_as_insta() {
        let dir = Dir::new("headers");
        let value = summary("Echo: hi");
        let text = insta_yaml(&value);
        let body = format!("{text}\n");
        let with = |header: &str| format!("---\n{header}---\n{body}");
        // Other plain metadata: same contents, fast.
        let fast = [
            "source: tests/evals.rs\nassertion_line: 42\nexpression: summary\n",
            "description: \"a \\\"quoted\\\" name\\n\"\nsnapshot_kind: text\n",
            "input_file: data/cases.yaml\n",
        ];
        for (i, header) in fast.iter().enumerate() {
            let got = dir.check(&format!("fast-{i}"), &with(header), &value);
            assert_eq!(got, (true, Decided::Fast), "{header}");
        }
        // Headers the fast path does not vouch for: insta decides, whatever it says.
        let insta_decides = [
            // a nested info map (valid): equal
            "source: x.rs\ninfo:\n  k: v\n",
            // a binary snapshot (no data file): not equal
            "snapshot_kind: binary\nextension: txt\n",
            // a mapping value where none may be (invalid YAML): insta warns, not equal
            "description: a: b\n",
            // an empty header (not a map): not equal
            "",
            // a duplicated key
            "source: a.rs\nsource: b.rs\n",
            // a comment
            "# comment\nsource: a.rs\n",
        ];
        for (i, header) in insta_decides.iter().enumerate() {
            let got = dir.check(&format!("insta-{i}"), &with(header), &value);
            assert_eq!(got.1, Decided::Insta, "{header}");
        }
        // Line endings and legacy layouts insta still accepts.
        let crlf = with("source: a.rs\n").replace('\n', "\r\n");
        assert_eq!(dir.check("crlf", &crlf, &value), (true, Decided::Insta));
        // insta's legacy rule: leading newlines and a `---` line before the value.
        let legacy = format!("---\nsource: a.rs\n---\n\n---\n{body}");
        assert_eq!(dir.check("legacy", &legacy, &value), (true, Decided::Insta));
        let trailing = format!("{}\n\n  \n", as_insta_writes(&text));
        assert_eq!(
            dir.check("trailing", &trailing, &value),
            (true, Decided::Fast)
        );
    }

    /// Strings that exercise every rule of insta's quoting: its indicator
    /// characters first and anywhere, its reserved words, numbers, dates,
    /// spaces at either end, control characters, non-ASCII.
    fn tricky_string() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let pieces = prop::sample::select(vec![
            "a",
            "Echo",
            " ",
            ":",
            ": ",
            "-",
            "- ",
            "&",
            "*",
            "?",
            "|",
            "<",
            ">",
            "=",
            "!",
            "%",
            "@",
            "{",
            "}",
            "[",
            "]",
            ",",
            "#",
            "`",
            "\"",
            "'",
            "\\",
            "\0",
            "\x01",
            "\x07",
            "\x08",
            "\t",
            "\n",
            "\x0b",
            "\x0c",
            "\r",
            "\x0e",
            "\x1b",
            "\x1f",
            "\x7f",
            ".",
            "0x",
            "1",
            "12",
            "-3",
            "2.5",
            "1e3",
            "inf",
            "NaN",
            "true",
            "no",
            "Null",
            "~",
            "y",
            "2014-12-31",
            "é",
            "日本",
            "\u{2028}",
            "\u{85}",
        ]);
        prop::collection::vec(pieces, 0..5).prop_map(|p| p.concat())
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            prop::sample::select(vec![0.0, 1.0, -1.5, 0.000084, 1e21, 1e-7]).prop_map(Value::from),
            tricky_string().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(tricky_string(), inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The fast path's YAML is insta's, byte for byte: an equal text
        /// from it means what an equal text from insta means.
        #[test]
        fn the_yaml_writer_writes_what_insta_writes(value in json_value()) {
            if let Some(text) = yaml(&value) {
                proptest::prop_assert_eq!(text, insta_yaml(&value));
            }
        }
    }

    #[test]
    fn the_yaml_writer_writes_what_insta_writes_for_a_session_summary() {
        let value = json!({
            "cell": "code-review::gpt-4o::sql-injection",
            "trajectory": [
                {"signal": "harness:start", "agents": ["reviewer", "fixer"], "workflow": "code-review"},
                {"signal": "state:findings:changed", "newValue": {"issues": [], "notes": {}}},
                {"signal": "provider:end", "usage": {"inputTokens": 12}, "costUsd": 0.000084},
            ],
            "finalState": {"empty": [], "nested": {"list": [[1, 2], {"a": null}], "n": -3}},
            "output": "line one\nline \"two\": done",
            "assertions": [{"passed": false, "message": "output contains \"Echo\": no"}],
            "scores": [],
            "textDeltas": 0,
        });
        assert_eq!(yaml(&value), Some(insta_yaml(&value)));
    }
}
