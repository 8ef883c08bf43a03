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
    use insta::internals::{SnapshotContents, TextSnapshotContents};
    // The environment is read once per process, not once per cell.
    static INSTA_DECIDES: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let insta_decides = *INSTA_DECIDES.get_or_init(|| {
        ["INSTA_FORCE_UPDATE", "INSTA_REQUIRE_FULL_MATCH"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty() && x != "0"))
            || std::env::var("INSTA_UPDATE").is_ok_and(|v| v == "force")
    });
    if insta_decides {
        return false;
    }
    let path = dir.join(format!("{name}.snap"));
    let Ok(committed) = insta::Snapshot::from_file(&path) else {
        return false;
    };
    let text = insta::_macro_support::serialize_value(
        summary,
        insta::_macro_support::SerializationFormat::Yaml,
    );
    let current = SnapshotContents::Text(TextSnapshotContents::new(
        text,
        insta::TextSnapshotKind::File,
    ));
    if committed.contents() != &current {
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
