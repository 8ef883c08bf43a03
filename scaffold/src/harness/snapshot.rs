//! The session summary each cell checks with insta.
//!
//! It keeps what describes behaviour (the trajectory of signals with their
//! key payload fields, the final state, the output, tokens and cost) and
//! leaves out what changes from run to run (times, durations, session ids),
//! so playback is byte-identical run after run.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::eval::CellResult;
use crate::harness::erased::CellOutcome;
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

/// The signals a summary's trajectory lists (all but the text deltas), and
/// how many text deltas it counts instead.
fn trajectory(signals: &[Signal]) -> (impl Iterator<Item = &Signal>, usize) {
    let listed = signals.iter().filter(|s| s.name != names::TEXT_DELTA);
    (
        listed,
        signals
            .iter()
            .filter(|s| s.name == names::TEXT_DELTA)
            .count(),
    )
}

/// The snapshot of one cell: stable across runs of the same recordings.
pub fn session_summary(cell: &CellResult, signals: &[Signal], final_state: &Value) -> Value {
    let (listed, deltas) = trajectory(signals);
    let trajectory: Vec<Value> = listed.map(summarize_signal).collect();
    let assertions: Vec<Value> = cell
        .assertions
        .iter()
        // Each names its type, so adding one does not shift the others.
        // Messages of passing assertions may quote timings; keep them only for failures.
        .map(|a| match a.passed {
            true => json!({"assertion": a.assertion.type_name(), "passed": true}),
            false => json!({
                "assertion": a.assertion.type_name(),
                "passed": false,
                "message": a.message,
            }),
        })
        .collect();
    let scores: Vec<Value> = cell
        .scores
        .iter()
        // Values of latency-like scorers vary from run to run; pass/fail does not.
        .map(|s| json!({"name": s.name, "pass": s.pass}))
        .collect();
    let summary = json!({
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
    });
    sorted_keys(summary)
}

/// `value` with every object's keys in order, as serde_json keeps them
/// without its `preserve_order` feature: a dependency of the suite may
/// turn that on (rig-core does), and a session's snapshot must not change
/// with it.
fn sorted_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted_keys(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted_keys).collect()),
        other => other,
    }
}

/// What a cell's snapshot is made of: its signals and final state, kept
/// until the snapshot is checked.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionSnapshot {
    pub(crate) signals: Vec<Signal>,
    pub(crate) final_state: Value,
}

impl SessionSnapshot {
    /// The summary as a JSON value (what insta is given).
    pub(crate) fn summary(&self, cell: &CellResult) -> Value {
        session_summary(cell, &self.signals, &self.final_state)
    }

    /// [`yaml`] of [`SessionSnapshot::summary`], written without building
    /// the value: the tree of a summary (a map per signal, each payload
    /// field cloned) was a fifth of a playback cell's allocations.
    pub(crate) fn yaml(&self, cell: &CellResult) -> Option<String> {
        if block_style() {
            return None;
        }
        let out = summary_yaml(cell, &self.signals, &self.final_state);
        debug_assert_eq!(
            Some(&out),
            yaml(&self.summary(cell)).as_ref(),
            "the direct summary YAML is not the summary's"
        );
        Some(out)
    }
}

/// A node of a summary as [`summary_yaml`] writes it: borrowed from the
/// cell where it can be.
enum Node<'a> {
    Json(&'a Value),
    /// A scalar made on the spot (numbers, booleans, null: no allocation).
    Scalar(Value),
    Str(&'a str),
    /// Entries in key order, keys unique.
    Map(Vec<(&'a str, Node<'a>)>),
    Seq(Vec<Node<'a>>),
}

impl Node<'_> {
    /// A number as `json!` makes it from an `f64`: null when not finite.
    fn float(f: f64) -> Node<'static> {
        Node::Scalar(Value::from(f))
    }
}

/// One trajectory entry of [`summarize_signal`], as a node.
fn signal_node(signal: &Signal) -> Node<'_> {
    // `summarize_signal` inserts into a sorted map: a later key replaces
    // an earlier one.
    fn insert<'a>(entries: &mut Vec<(&'a str, Node<'a>)>, key: &'a str, node: Node<'a>) {
        match entries.iter_mut().find(|(k, _)| *k == key) {
            Some(entry) => entry.1 = node,
            None => entries.push((key, node)),
        }
    }
    let mut entries: Vec<(&str, Node<'_>)> = Vec::with_capacity(6);
    entries.push(("signal", Node::Str(&signal.name)));
    match (key_fields(&signal.name), &signal.payload) {
        (Some(fields), Value::Object(payload)) => {
            for field in fields {
                if let Some(v) = payload.get(*field) {
                    insert(&mut entries, field, Node::Json(v));
                }
            }
        }
        (None, Value::Object(payload)) => {
            for (k, v) in payload {
                if k != "agent" {
                    insert(&mut entries, k, Node::Json(v));
                }
            }
            if let Some(agent) = &signal.agent {
                insert(&mut entries, "agent", Node::Str(agent));
            }
        }
        (_, other) if !other.is_null() => insert(&mut entries, "payload", Node::Json(other)),
        _ => {}
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    Node::Map(entries)
}

/// The YAML text of [`session_summary`], written from the cell.
fn summary_yaml(cell: &CellResult, signals: &[Signal], final_state: &Value) -> String {
    let (listed, deltas) = trajectory(signals);
    let trajectory = listed.map(signal_node).collect();
    let assertions = cell
        .assertions
        .iter()
        .map(|a| {
            let assertion = ("assertion", Node::Str(a.assertion.type_name()));
            let passed = ("passed", Node::Scalar(Value::Bool(a.passed)));
            Node::Map(match a.passed {
                true => vec![assertion, passed],
                false => vec![assertion, ("message", Node::Str(&a.message)), passed],
            })
        })
        .collect();
    let scores = cell
        .scores
        .iter()
        .map(|s| {
            Node::Map(vec![
                ("name", Node::Str(&s.name)),
                ("pass", Node::Scalar(Value::Bool(s.pass))),
            ])
        })
        .collect();
    let m = &cell.metrics;
    let id = cell.id.to_string();
    let status = serde_json::to_value(cell.status).unwrap_or(Value::Null);
    let null = Value::Null;
    // In key order, as the summary's map has them.
    let top = Node::Map(vec![
        ("assertions", Node::Seq(assertions)),
        ("cell", Node::Str(&id)),
        (
            "error",
            cell.error
                .as_deref()
                .map_or(Node::Scalar(Value::Null), Node::Str),
        ),
        ("finalState", Node::Json(final_state)),
        ("input", Node::Json(&cell.input)),
        (
            "metrics",
            Node::Map(vec![
                ("activations", Node::Scalar(m.activations.into())),
                ("costUsd", Node::float(m.cost_usd)),
                ("inputTokens", Node::Scalar(m.input_tokens.into())),
                ("outputTokens", Node::Scalar(m.output_tokens.into())),
                ("providerCalls", Node::Scalar(m.provider_calls.into())),
            ]),
        ),
        ("output", Node::Json(cell.output.as_ref().unwrap_or(&null))),
        ("passed", Node::Scalar(Value::Bool(cell.passed))),
        ("scores", Node::Seq(scores)),
        ("status", Node::Json(&status)),
        ("textDeltas", Node::Scalar(deltas.into())),
        ("trajectory", Node::Seq(trajectory)),
    ]);
    document(&top)
}

/// Check the cell's session against its snapshot in `dir`, at its
/// [`CellId::snapshot_path`](crate::eval::CellId::snapshot_path): here when
/// the committed file holds it, else with insta, which reports the diff and
/// writes the `.snap.new` (or the `.snap`, as `INSTA_UPDATE` says). A
/// snapshot still in the flat folder of old is moved to its path first.
///
/// `Ok(false)`: the session differs. Either way the snapshot counts as
/// referenced for `cargo insta test --unreferenced` (see [`reference`]).
/// The header insta writes names `source`, the suite's file (no path of
/// this machine or of this library), and insta shows `line` with it;
/// insta takes `workspace` as the workspace root. `Err`: the snapshot could
/// not be checked, why.
pub(crate) fn check(
    (dir, workspace): (&Path, &Path),
    outcome: &CellOutcome,
    (source, line): (&Path, u32),
) -> Result<bool, String> {
    let (cell, session) = (&outcome.result, &outcome.session);
    let path = cell.id.snapshot_path();
    if matches_committed(dir, &path, cell, session)
        || (adopt_legacy(dir, &cell.id.legacy_snapshot_name(), &path)
            && matches_committed(dir, &path, cell, session))
    {
        // insta, which never saw it, would have noted it.
        reference(dir, &cell.id)?;
        return Ok(true);
    }
    let text = insta_yaml(&outcome.summary());
    // insta lists the folder of the snapshot for stale pending files on
    // every assertion: a folder per case keeps that small.
    let (folder, name) = path.rsplit_once('/').unwrap_or(("", path.as_str()));
    let folder = dir.join(folder);
    let description = cell.id.to_string();
    let source = source.to_string_lossy();
    quiet_insta_failures();
    let checked = std::panic::catch_unwind(|| {
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(folder);
        settings.set_prepend_module_to_snapshot(false);
        settings.set_omit_expression(true);
        settings.set_description(description);
        // What `assert_yaml_snapshot!` expands to, with the suite's file as
        // the source rather than this one's `file!()`.
        settings.bind(|| {
            insta::_macro_support::assert_snapshot(
                (name, text.as_str()).into(),
                workspace,
                "scaffold::harness::snapshot::check",
                module_path!(),
                &source,
                line,
                "summary",
            )
            .map_err(|e| e.to_string())
        })
    });
    match checked {
        Ok(Ok(())) => Ok(true),
        Ok(Err(e)) => Err(format!(
            "insta could not check the snapshot {}: {e}",
            dir.join(format!("{path}.snap")).display()
        )),
        Err(_) => Ok(false),
    }
}

/// Note the snapshot of cell `id` in `dir` as referenced, as insta does
/// for each snapshot it checks: `cargo insta test --unreferenced=reject`
/// rejects, and `=delete` deletes, every `.snap` file that no test named
/// in insta's references file (`INSTA_SNAPSHOT_REFERENCES_FILE`, set by
/// `cargo insta test`). Nothing to do without that file.
pub(crate) fn reference(dir: &Path, id: &crate::eval::CellId) -> Result<(), String> {
    static FILE: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    let Some(file) = FILE.get_or_init(|| {
        std::env::var_os("INSTA_SNAPSHOT_REFERENCES_FILE")
            .filter(|f| !f.is_empty())
            .map(Into::into)
    }) else {
        return Ok(());
    };
    let snapshot = dir.join(format!("{}.snap", id.snapshot_path()));
    note_reference(file, &snapshot).map_err(|e| {
        format!(
            "could not note the snapshot {} as referenced in {} (INSTA_SNAPSHOT_REFERENCES_FILE): {e}",
            snapshot.display(),
            file.display()
        )
    })
}

/// Append `snapshot`, absolute, as a line of the references file `file`:
/// one write, so that lines of cells that note at once (threads,
/// nextest's processes) do not mix.
fn note_reference(file: &Path, snapshot: &Path) -> std::io::Result<()> {
    use std::io::Write as _;
    let snapshot = std::path::absolute(snapshot)?;
    let line = format!("{}\n", snapshot.display());
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(file)?
        .write_all(line.as_bytes())
}

/// How insta's panic for a differing snapshot begins (insta 1.49).
const INSTA_FAILURE: &str = "snapshot assertion for '";

/// Whether a panic at `file` with `message` is insta's for a differing snapshot.
fn is_insta_failure(file: Option<&str>, message: Option<&str>) -> bool {
    file.is_some_and(|f| f.contains("insta"))
        && message.is_some_and(|m| m.starts_with(INSTA_FAILURE))
}

/// insta reports a differing snapshot by printing its diff, then panicking;
/// [`check`] catches that panic and the harness fails the cell with the
/// snapshot's path. Install, once, a panic hook that stays silent for that
/// panic alone (no "panicked at" line, nor, under `RUST_BACKTRACE=1`, a
/// backtrace of some sixty frames a cell) and hands every other panic,
/// insta's own errors included, to the hook of before.
fn quiet_insta_failures() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| info.payload().downcast_ref::<&str>().copied());
            if !is_insta_failure(info.location().map(|l| l.file()), message) {
                before(info);
            }
        }));
    });
}

/// Move `{legacy}.snap` in `dir` (the flat layout of old) to `{path}.snap`
/// if it is there and nothing is at `path` yet; whether it moved. The first
/// move of a process says what happens, once.
fn adopt_legacy(dir: &Path, legacy: &str, path: &str) -> bool {
    let from = dir.join(format!("{legacy}.snap"));
    let to = dir.join(format!("{path}.snap"));
    if !from.is_file() || to.exists() {
        return false;
    }
    let moved = to
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::rename(&from, &to));
    match moved {
        Ok(()) => {
            static TOLD: std::sync::Once = std::sync::Once::new();
            TOLD.call_once(|| {
                eprintln!(
                    "scaffold: snapshots now live in a folder per case, `{{eval}}/{{case}}/{{variant}}.snap`; \
                     moving those of the flat layout there as their cells run (first: {} -> {}); commit the move",
                    from.display(),
                    to.display()
                );
            });
            true
        }
        Err(e) => {
            eprintln!(
                "scaffold: could not move the snapshot {} to {}: {e}",
                from.display(),
                to.display()
            );
            false
        }
    }
}

/// Whether `{name}.snap` in `dir` already holds the cell's summary, checked
/// the way insta's default comparator does (the normalized YAML text).
///
/// [`check`] asks this before `assert_yaml_snapshot!`: insta lists the
/// snapshot's folder on every assertion (for stale pending files), which
/// makes a suite quadratic in the cells of a folder. Only a missing or
/// differing snapshot goes to insta, which then writes the `.snap.new` and
/// reports the diff. With `INSTA_UPDATE=force`, `INSTA_FORCE_UPDATE=1` or
/// `INSTA_REQUIRE_FULL_MATCH` set, every snapshot goes to insta.
pub(crate) fn matches_committed(
    dir: &Path,
    name: &str,
    cell: &CellResult,
    session: &SessionSnapshot,
) -> bool {
    if insta_decides() {
        return false;
    }
    let path = dir.join(format!("{name}.snap"));
    if !compare(&path, session.yaml(cell).as_deref(), || {
        session.summary(cell)
    })
    .0
    {
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
fn compare(path: &Path, text: Option<&str>, value: impl FnOnce() -> Value) -> (bool, Decided) {
    if let Ok(file) = std::fs::read_to_string(path)
        && let Some(body) = fast_body(&file)
        && let Some(text) = text
        && body.trim_end() == text.trim_end()
    {
        return (true, Decided::Fast);
    }
    (insta_matches(path, insta_yaml(&value())), Decided::Insta)
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
    if block_style() {
        return None;
    }
    let out = document(value);
    debug_assert_eq!(out, insta_yaml(value), "the snapshot YAML is not insta's");
    Some(out)
}

/// The YAML text of `node` as insta writes a snapshot: ending in a newline.
fn document(node: &impl Emit) -> String {
    let mut out = String::with_capacity(2048);
    node.emit(&mut YamlWriter {
        out: &mut out,
        level: -1,
    });
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// Whether `INSTA_YAML_BLOCK_STYLE=1` asks insta for literal blocks.
fn block_style() -> bool {
    static BLOCK_STYLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *BLOCK_STYLE.get_or_init(|| std::env::var("INSTA_YAML_BLOCK_STYLE").as_deref() == Ok("1"))
}

/// insta's YAML emitter over a JSON value.
struct YamlWriter<'a> {
    out: &'a mut String,
    /// The nesting level, -1 at the top.
    level: isize,
}

/// What [`YamlWriter`] writes: a JSON value, or a summary [`Node`].
trait Emit {
    /// A non-empty sequence or map: after a key it starts on the next line.
    fn is_block(&self) -> bool;
    fn emit(&self, w: &mut YamlWriter<'_>);
}

impl Emit for Value {
    fn is_block(&self) -> bool {
        match self {
            Value::Array(items) => !items.is_empty(),
            Value::Object(map) => !map.is_empty(),
            _ => false,
        }
    }

    fn emit(&self, w: &mut YamlWriter<'_>) {
        match self {
            Value::Array(items) => w.seq(items),
            Value::Object(map) => {
                // In key order whatever serde_json's map keeps (see `sorted_keys`).
                let mut entries: Vec<(&str, &Value)> =
                    map.iter().map(|(k, v)| (k.as_str(), v)).collect();
                entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
                w.map(entries.len(), entries.into_iter())
            }
            Value::String(s) => w.string(s),
            Value::Bool(b) => w.out.push_str(if *b { "true" } else { "false" }),
            // serde_json hands insta a u64, an i64 or an f64; each is
            // written with its `Display`.
            Value::Number(n) => {
                let _ = match (n.as_u64(), n.as_i64(), n.as_f64()) {
                    (Some(u), _, _) => write!(w.out, "{u}"),
                    (None, Some(i), _) => write!(w.out, "{i}"),
                    (None, None, Some(f)) => write!(w.out, "{f}"),
                    (None, None, None) => write!(w.out, "{n}"),
                };
            }
            Value::Null => w.out.push('~'),
        }
    }
}

impl Emit for Node<'_> {
    fn is_block(&self) -> bool {
        match self {
            Node::Json(v) => v.is_block(),
            Node::Scalar(v) => v.is_block(),
            Node::Str(_) => false,
            Node::Map(entries) => !entries.is_empty(),
            Node::Seq(items) => !items.is_empty(),
        }
    }

    fn emit(&self, w: &mut YamlWriter<'_>) {
        match self {
            Node::Json(v) => v.emit(w),
            Node::Scalar(v) => v.emit(w),
            Node::Str(s) => w.string(s),
            Node::Seq(items) => w.seq(items),
            Node::Map(entries) => w.map(entries.len(), entries.iter().map(|(k, v)| (*k, v))),
        }
    }
}

impl YamlWriter<'_> {
    fn indent(&mut self, level: isize) {
        for _ in 0..level.max(0) {
            self.out.push_str("  ");
        }
    }

    fn seq<T: Emit>(&mut self, items: &[T]) {
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

    fn map<'v, T: Emit + 'v>(
        &mut self,
        len: usize,
        entries: impl Iterator<Item = (&'v str, &'v T)>,
    ) {
        if len == 0 {
            self.out.push_str("{}");
            return;
        }
        self.level += 1;
        for (i, (key, value)) in entries.enumerate() {
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
    fn value<T: Emit>(&mut self, inline: bool, value: &T) {
        if !inline && value.is_block() {
            self.out.push('\n');
            self.indent(self.level + 1);
        } else {
            self.out.push(' ');
        }
        value.emit(self);
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
fn insta_matches(path: &Path, text: String) -> bool {
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
    use crate::assert::{Assertion, AssertionResult};
    use crate::eval::CellId;
    use crate::scorer::Score;
    use crate::util::arbitrary::{json_value, tricky_string};
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
            let got = compare(&path, yaml(value).as_deref(), || value.clone());
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

    /// A finished cell whose output is `output`, and its session.
    fn cell_and_session(output: &str) -> (CellResult, SessionSnapshot) {
        let id = CellId {
            eval: "e".into(),
            variant: "v".into(),
            case: "c".into(),
            trial: None,
        };
        let mut cell = CellResult::failed(id, "boom".into());
        cell.status = crate::workflow::RunStatus::Completed;
        cell.passed = true;
        cell.error = None;
        cell.input = json!({"topic": "t"});
        cell.output = Some(json!(output));
        cell.metrics.cost_usd = 0.25;
        cell.metrics.input_tokens = 12;
        let signal = |index, name: &str, payload| Signal {
            index,
            name: name.into(),
            payload,
            at_ms: index * 7,
            agent: None,
        };
        let session = SessionSnapshot {
            signals: vec![
                signal(
                    0,
                    names::HARNESS_START,
                    json!({"workflow": "w", "agents": ["a", "b"]}),
                ),
                signal(1, names::TEXT_DELTA, json!({"text": "Ec"})),
                signal(
                    2,
                    names::HARNESS_END,
                    json!({"status": "completed", "activations": 2}),
                ),
            ],
            final_state: json!({"draft": output}),
        };
        (cell, session)
    }

    /// How insta writes a new `.snap` (header, `---`, the YAML, a newline).
    fn as_insta_writes(body: &str) -> String {
        format!("---\nsource: scaffold/src/harness/mod.rs\ndescription: \"e::v::c\"\n---\n{body}\n")
    }

    #[test]
    fn each_assertion_names_its_type() {
        let (mut cell, session) = cell_and_session("Echo: hi");
        let assertion = |json| serde_json::from_value::<Assertion>(json).expect("an assertion");
        let result = |assertion: Assertion, passed| AssertionResult {
            assertion,
            passed,
            message: "why".into(),
            expected: None,
            actual: None,
            trajectory: None,
            children: Vec::new(),
            borderline: false,
            matched: Vec::new(),
        };
        cell.assertions = vec![
            result(
                assertion(json!({"type": "output.contains", "text": "x"})),
                true,
            ),
            result(
                assertion(json!({"type": "agent.completed", "agentId": "a"})),
                false,
            ),
        ];
        assert_eq!(
            session.summary(&cell)["assertions"],
            json!([
                {"assertion": "output.contains", "passed": true},
                {"assertion": "agent.completed", "passed": false, "message": "why"},
            ])
        );
        let text = session.yaml(&cell).expect("plain YAML");
        assert!(
            text.starts_with(
                "assertions:\n  - assertion: output.contains\n    passed: true\n  \
                 - assertion: agent.completed\n    message: why\n    passed: false\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn references_are_noted_one_absolute_line_each() {
        let dir = Dir::new("references");
        let file = dir.0.join("refs.txt");
        note_reference(&file, &dir.0.join("e/c/a.snap")).expect("noted");
        note_reference(&file, Path::new("snapshots/e/c/b.snap")).expect("noted");
        let text = std::fs::read_to_string(&file).expect("the references");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(Path::new(lines[0]), dir.0.join("e/c/a.snap"));
        assert!(Path::new(lines[1]).is_absolute(), "{text}");
        assert!(lines[1].ends_with("snapshots/e/c/b.snap"), "{text}");
        // A references file that cannot be written is an error, not a silence.
        let unwritable = dir.0.join("no-such-folder").join("refs.txt");
        assert!(note_reference(&unwritable, &dir.0.join("e/c/a.snap")).is_err());
    }

    #[test]
    fn only_insta_differing_snapshot_panics_are_kept_quiet() {
        let insta = Some("/registry/insta-1.49.0/src/runtime.rs");
        let msg = Some("snapshot assertion for 'openai' failed in line 12");
        assert!(super::is_insta_failure(insta, msg));
        // insta's own errors (a snapshot it cannot write) still speak.
        assert!(!super::is_insta_failure(
            insta,
            Some("called `Result::unwrap()` on an `Err` value")
        ));
        // So does a user's panic, whatever it says.
        assert!(!super::is_insta_failure(Some("evals/main.rs"), msg));
        assert!(!super::is_insta_failure(None, msg));
        assert!(!super::is_insta_failure(insta, None));
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
            let (cell, session) = cell_and_session("Echo: hi");
            let text = insta_yaml(&session.summary(&cell));
            std::fs::write(dir.0.join("cell.snap"), as_insta_writes(&text)).expect("write");
            std::fs::write(dir.0.join("cell.snap.new"), "stale").expect("write");
            assert!(matches_committed(&dir.0, "cell", &cell, &session));
            assert!(!dir.0.join("cell.snap.new").exists());
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
        let (hi, hi_session) = cell_and_session("Echo: hi");
        let text = insta_yaml(&hi_session.summary(&hi));
        std::fs::write(dir.0.join("cell.snap"), as_insta_writes(&text)).expect("write");
        let (bye, bye_session) = cell_and_session("Echo: bye");
        assert!(!matches_committed(&dir.0, "cell", &bye, &bye_session));
        // A missing file is not a match either.
        assert!(!matches_committed(&dir.0, "missing", &hi, &hi_session));
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

    fn signal_name() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let known = prop::sample::select(vec![
            names::HARNESS_START,
            names::HARNESS_END,
            names::HARNESS_TERMINATING,
            names::PHASE_ENTERED,
            names::AGENT_ACTIVATED,
            names::AGENT_COMPLETED,
            names::PROVIDER_START,
            names::PROVIDER_END,
            names::PROVIDER_ERROR,
            names::TEXT_DELTA,
            names::TEXT_COMPLETE,
            names::TOOL_CALL,
            names::RECORDING_LINKED,
            "state:draft:changed",
            "error:provider",
            "draft:ready",
        ])
        .prop_map(String::from);
        prop_oneof![known, tricky_string()]
    }

    /// A payload: mostly objects whose keys include the ones the summary
    /// keeps and the ones it treats specially (`signal`, `agent`, `payload`).
    fn payload() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = prop_oneof![
            prop::sample::select(vec![
                "workflow",
                "agents",
                "status",
                "agent",
                "phase",
                "usage",
                "model",
                "recordingId",
                "newValue",
                "message",
                "name",
                "signal",
                "payload",
                "text",
            ])
            .prop_map(String::from),
            tricky_string(),
        ];
        prop_oneof![
            3 => prop::collection::btree_map(key, json_value(), 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            1 => json_value(),
        ]
    }

    fn signal() -> impl proptest::strategy::Strategy<Value = Signal> {
        use proptest::prelude::*;
        (
            signal_name(),
            payload(),
            proptest::option::of(tricky_string()),
        )
            .prop_map(|(name, payload, agent)| Signal {
                index: 0,
                name,
                payload,
                at_ms: 0,
                agent,
            })
    }

    fn cell() -> impl proptest::strategy::Strategy<Value = CellResult> {
        use crate::workflow::RunStatus;
        use proptest::prelude::*;
        let status = prop::sample::select(vec![
            RunStatus::Completed,
            RunStatus::Failed,
            RunStatus::Terminated,
        ]);
        let assertions = prop::collection::vec((any::<bool>(), tricky_string()), 0..4);
        let scores = prop::collection::vec((tricky_string(), any::<bool>()), 0..3);
        let numbers = (
            any::<u64>(),
            any::<u64>(),
            any::<f64>(),
            any::<u64>(),
            any::<u64>(),
        );
        (
            (tricky_string(), status, any::<bool>()),
            (
                proptest::option::of(tricky_string()),
                json_value(),
                proptest::option::of(json_value()),
            ),
            assertions,
            scores,
            numbers,
        )
            .prop_map(
                |((case, status, passed), (error, input, output), assertions, scores, numbers)| {
                    let id = CellId {
                        eval: "e".into(),
                        variant: "v".into(),
                        case,
                        trial: None,
                    };
                    let mut cell = CellResult::failed(id, String::new());
                    cell.status = status;
                    cell.passed = passed;
                    cell.error = error;
                    cell.input = input;
                    cell.output = output;
                    let contains: Assertion =
                        serde_json::from_value(json!({"type": "output.contains", "text": "x"}))
                            .expect("an assertion");
                    cell.assertions = assertions
                        .into_iter()
                        .map(|(passed, message)| AssertionResult {
                            assertion: contains.clone(),
                            passed,
                            message,
                            expected: None,
                            actual: None,
                            trajectory: None,
                            children: Vec::new(),
                            borderline: false,
                            matched: Vec::new(),
                        })
                        .collect();
                    cell.scores = scores
                        .into_iter()
                        .map(|(name, pass)| Score {
                            name,
                            pass,
                            value: 1.0,
                            unit: None,
                            detail: None,
                            borderline: false,
                        })
                        .collect();
                    let m = &mut cell.metrics;
                    (
                        m.input_tokens,
                        m.output_tokens,
                        m.cost_usd,
                        m.activations,
                        m.provider_calls,
                    ) = numbers;
                    cell
                },
            )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
        /// The summary written straight from the cell is the summary
        /// value's YAML (and so insta's).
        #[test]
        fn the_direct_summary_yaml_is_the_summary_values(
            cell in cell(),
            signals in proptest::collection::vec(signal(), 0..8),
            final_state in json_value(),
        ) {
            let value = session_summary(&cell, &signals, &final_state);
            if let Some(expected) = yaml(&value) {
                proptest::prop_assert_eq!(summary_yaml(&cell, &signals, &final_state), expected);
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
