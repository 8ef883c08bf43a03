//! The session summary each cell checks with insta.
//!
//! It keeps what describes behaviour (the trajectory of signals with their
//! key payload fields, the final state, the output, tokens and cost) and
//! leaves out what changes from run to run (times, durations, session ids),
//! so playback is byte-identical run after run.

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
    let text = insta::_macro_support::serialize_value(
        summary,
        insta::_macro_support::SerializationFormat::Yaml,
    );
    if !compare(&path, text).0 {
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

/// Whether the committed snapshot at `path` holds `text` (insta's YAML
/// serialization of the new value), and how that was decided.
///
/// The fast way answers only "equal", and only for a file insta would read
/// as a text snapshot with that body; anything else (a different body, a
/// header it cannot vouch for, CR characters) goes to insta's comparison,
/// which also accepts legacy formats. So it saves time, never changes a verdict.
fn compare(path: &std::path::Path, text: String) -> (bool, Decided) {
    if let Ok(file) = std::fs::read_to_string(path)
        && fast_body(&file).is_some_and(|body| body.trim_end() == text.trim_end())
    {
        return (true, Decided::Fast);
    }
    (insta_matches(path, text), Decided::Insta)
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

    fn yaml(value: &Value) -> String {
        insta::_macro_support::serialize_value(
            value,
            insta::_macro_support::SerializationFormat::Yaml,
        )
    }

    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let dir = std::env::temp_dir()
                .join(format!("scaffold-snapshot-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("temp dir");
            Dir(dir)
        }

        /// Write `{name}.snap` and compare it with `text`, checking the
        /// verdict against insta's.
        fn check(&self, name: &str, file: &str, text: &str) -> (bool, Decided) {
            let path = self.0.join(format!("{name}.snap"));
            std::fs::write(&path, file).expect("write snapshot");
            let got = compare(&path, text.to_string());
            assert_eq!(
                got.0,
                insta_matches(&path, text.to_string()),
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
        let text = yaml(&summary("Echo: hi"));
        assert_eq!(
            dir.check("same", &as_insta_writes(&text), &text),
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
        let committed = as_insta_writes(&yaml(&summary("Echo: hi")));
        let text = yaml(&summary("Echo: bye"));
        assert_eq!(
            dir.check("drift", &committed, &text),
            (false, Decided::Insta)
        );
        assert!(!matches_committed(&dir.0, "drift", &summary("Echo: bye")));
        // A missing file is not a match either.
        assert!(!matches_committed(&dir.0, "missing", &summary("Echo: bye")));
    }

    #[test]
    fn other_headers_with_the_same_body_behave_as_insta() {
        let dir = Dir::new("headers");
        let text = yaml(&summary("Echo: hi"));
        let body = format!("{text}\n");
        let with = |header: &str| format!("---\n{header}---\n{body}");
        // Other plain metadata: same contents, fast.
        let fast = [
            "source: tests/evals.rs\nassertion_line: 42\nexpression: summary\n",
            "description: \"a \\\"quoted\\\" name\\n\"\nsnapshot_kind: text\n",
            "input_file: data/cases.yaml\n",
        ];
        for (i, header) in fast.iter().enumerate() {
            let got = dir.check(&format!("fast-{i}"), &with(header), &text);
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
            let got = dir.check(&format!("insta-{i}"), &with(header), &text);
            assert_eq!(got.1, Decided::Insta, "{header}");
        }
        // Line endings and legacy layouts insta still accepts.
        let crlf = with("source: a.rs\n").replace('\n', "\r\n");
        assert_eq!(dir.check("crlf", &crlf, &text), (true, Decided::Insta));
        // insta's legacy rule: leading newlines and a `---` line before the value.
        let legacy = format!("---\nsource: a.rs\n---\n\n---\n{body}");
        assert_eq!(dir.check("legacy", &legacy, &text), (true, Decided::Insta));
        let trailing = format!("{}\n\n  \n", as_insta_writes(&text));
        assert_eq!(
            dir.check("trailing", &trailing, &text),
            (true, Decided::Fast)
        );
    }
}
