//! A cell's transcript: what its session did, built from the session's
//! signals, for the HTML report's viewer. Each [`Entry`] is one step of the
//! timeline (a phase entered, an agent activated, a provider call from
//! `provider:start` to its end or error, a tool call with its result, a
//! state change as a diff, a custom signal, an error), with the indices of
//! the signals it stands for, so that an assertion's matched signals can be
//! highlighted on it. Texts are cut at [`MAX_TEXT`] characters and a
//! transcript at [`MAX_ENTRIES`] entries, each cut with a visible marker.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::signal::{Signal, names};

/// The longest text a part keeps, in characters.
pub(crate) const MAX_TEXT: usize = 4_000;
/// The most entries a transcript keeps.
pub(crate) const MAX_ENTRIES: usize = 600;
/// Above this many line pairs a diff shows the old lines then the new ones.
const MAX_DIFF_CELLS: usize = 200_000;

/// A session as a timeline of entries (the JSON the viewer's script reads:
/// short keys keep the embedded data small).
#[derive(Debug, Default, Serialize)]
pub(crate) struct Transcript {
    /// The entries, in signal order.
    pub(crate) entries: Vec<Entry>,
    /// Signals past [`MAX_ENTRIES`] left out.
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) dropped: usize,
}

/// One step of the timeline.
#[derive(Debug, Serialize)]
pub(crate) struct Entry {
    /// The indices of the signals it stands for.
    pub(crate) i: Vec<u64>,
    /// Milliseconds since the session started (virtual in playback).
    pub(crate) at: u64,
    /// `run`, `phase`, `agent`, `provider`, `tool`, `state`, `signal` or `error`.
    pub(crate) k: &'static str,
    /// The headline.
    pub(crate) t: String,
    /// Figures after the headline (tokens, cost, duration).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) m: String,
    /// The agent, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) a: Option<String>,
    /// The phase it happened in (`fix` or `fix #2`): what side by side aligns on.
    pub(crate) p: String,
    /// Failed (an error, a failed tool, a provider error).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) e: bool,
    /// The texts shown folded under the headline.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) parts: Vec<Part>,
}

/// A labelled text of an entry.
#[derive(Debug, Serialize)]
pub(crate) struct Part {
    /// `system`, `messages`, `answer`, `arguments`, `result`, `diff`, …
    pub(crate) l: String,
    /// The text (cut at [`MAX_TEXT`]).
    pub(crate) x: String,
    /// A diff: lines start with `+ `, `- ` or two spaces.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) d: bool,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Part {
    fn new(label: &str, text: &str) -> Part {
        Part {
            l: label.to_string(),
            x: clip(text),
            d: false,
        }
    }

    fn json(label: &str, value: &Value) -> Part {
        Part::new(label, &pretty(value))
    }
}

/// `text` cut at [`MAX_TEXT`] characters, with a marker saying how much was cut.
pub(crate) fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT) {
        None => text.to_string(),
        Some((cut, _)) => {
            let rest = text[cut..].chars().count();
            format!("{}\n… [truncated: {rest} more characters]", &text[..cut])
        }
    }
}

/// A JSON value as text: a string as it is, anything else pretty-printed.
fn pretty(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

fn str_of<'v>(payload: &'v Value, key: &str) -> &'v str {
    payload.get(key).and_then(Value::as_str).unwrap_or("")
}

fn u64_of(payload: &Value, key: &str) -> Option<u64> {
    payload.get(key).and_then(Value::as_u64)
}

/// Builds a transcript signal by signal.
#[derive(Default)]
struct Builder {
    out: Transcript,
    phase: String,
    /// The open provider call of each agent: its entry.
    calls: HashMap<String, usize>,
    /// The open tool calls by call id: their entries.
    tools: HashMap<String, usize>,
}

impl Transcript {
    /// The transcript of a session's `signals` (in index order).
    pub(crate) fn from_signals(signals: &[Signal]) -> Transcript {
        let mut b = Builder::default();
        for s in signals {
            if b.out.entries.len() >= MAX_ENTRIES {
                b.out.dropped = signals.len() - s.index as usize;
                break;
            }
            b.signal(s);
        }
        b.out
    }
}

impl Transcript {
    /// Show the run's `output` under its end (what `output.*` assertions
    /// read), when the transcript has it.
    pub(crate) fn show_output(&mut self, output: &Value) {
        let end = (self.entries.iter_mut().rev()).find(|e| e.k == "run" && e.t == RUN_ENDED);
        if let Some(e) = end {
            e.parts.push(Part::json("output", output));
        }
    }
}

/// The headline of the run's end.
const RUN_ENDED: &str = "run ended";

impl Builder {
    fn push(&mut self, s: &Signal, kind: &'static str, title: String) -> usize {
        self.out.entries.push(Entry {
            i: vec![s.index],
            at: s.at_ms,
            k: kind,
            t: title,
            m: String::new(),
            a: s.agent.clone(),
            p: self.phase.clone(),
            e: kind == "error",
            parts: Vec::new(),
        });
        self.out.entries.len() - 1
    }

    fn signal(&mut self, s: &Signal) {
        let p = &s.payload;
        match s.name.as_str() {
            names::TEXT_DELTA | names::TEXT_COMPLETE | names::RECORDING_LINKED => {}
            names::HARNESS_START => {
                let e = self.push(s, "run", "run started".into());
                if let Some(state) = p.get("state") {
                    self.out.entries[e]
                        .parts
                        .push(Part::json("initial state", state));
                }
            }
            names::HARNESS_END => {
                let e = self.push(s, "run", RUN_ENDED.into());
                self.out.entries[e].m = duration(u64_of(p, "durationMs"));
            }
            names::HARNESS_TERMINATING => {
                let title = format!("run cut short: {}", str_of(p, "reason"));
                self.push(s, "error", title);
            }
            names::PHASE_ENTERED => self.phase_entered(s),
            names::PHASE_EXITED => {}
            names::AGENT_ACTIVATED | names::AGENT_SKIPPED | names::AGENT_COMPLETED => self.agent(s),
            names::PROVIDER_START => self.provider_start(s),
            names::PROVIDER_END | names::PROVIDER_ERROR => self.provider_end(s),
            names::TOOL_CALL => self.tool_call(s),
            names::TOOL_RESULT => self.tool_result(s),
            name if name.starts_with("error:") => {
                let e = self.push(s, "error", name.to_string());
                self.out.entries[e].parts.push(Part::json("payload", p));
            }
            _ => match s.state_key() {
                Some(key) => self.state(s, key),
                None => self.custom(s),
            },
        }
    }

    fn phase_entered(&mut self, s: &Signal) {
        let name = str_of(&s.payload, "phase");
        self.phase = match u64_of(&s.payload, "occurrence") {
            Some(n) if n > 1 => format!("{name} #{n}"),
            _ => name.to_string(),
        };
        let title = format!("phase {}", self.phase);
        self.push(s, "phase", title);
    }

    fn agent(&mut self, s: &Signal) {
        let p = &s.payload;
        let agent = str_of(p, "agent");
        let (title, meta) = match s.name.as_str() {
            names::AGENT_ACTIVATED => (
                format!("{agent} activated"),
                format!("by {}", str_of(p, "trigger")),
            ),
            names::AGENT_SKIPPED => (
                format!("{agent} skipped: {}", str_of(p, "reason")),
                String::new(),
            ),
            _ => (
                format!("{agent} completed"),
                duration(u64_of(p, "durationMs")),
            ),
        };
        let e = self.push(s, "agent", title);
        self.out.entries[e].m = meta;
    }

    fn provider_start(&mut self, s: &Signal) {
        let p = &s.payload;
        let title = format!("{} · {}", str_of(p, "provider"), str_of(p, "model"));
        let e = self.push(s, "provider", title);
        if let Some(req) = p.get("request") {
            let parts = &mut self.out.entries[e].parts;
            if let Some(system) = req.get("system").and_then(Value::as_str) {
                parts.push(Part::new("system", system));
            }
            if let Some(msgs) = req.get("messages").and_then(Value::as_array) {
                let earlier = u64_of(req, "earlier").unwrap_or(0);
                parts.push(Part::new("messages", &messages_text(msgs, earlier)));
            }
        }
        let agent = s.agent.clone().unwrap_or_default();
        self.calls.insert(agent, e);
    }

    fn provider_end(&mut self, s: &Signal) {
        let agent = s.agent.clone().unwrap_or_default();
        let e = match self.calls.remove(&agent) {
            Some(e) => e,
            None => self.push(s, "provider", "provider".into()),
        };
        let p = &s.payload;
        let entry = &mut self.out.entries[e];
        if !entry.i.contains(&s.index) {
            entry.i.push(s.index);
        }
        if s.name == names::PROVIDER_ERROR {
            entry.e = true;
            entry.m = format!("error {}", str_of(p, "code"));
            entry.parts.push(Part::new("error", str_of(p, "error")));
            return;
        }
        entry.m = provider_meta(p);
        answer_parts(p.get("output").unwrap_or(&Value::Null), &mut entry.parts);
    }

    fn tool_call(&mut self, s: &Signal) {
        let p = &s.payload;
        let e = self.push(s, "tool", format!("tool {}", str_of(p, "name")));
        let args = p.get("input").unwrap_or(&Value::Null);
        self.out.entries[e]
            .parts
            .push(Part::json("arguments", args));
        self.tools.insert(str_of(p, "id").to_string(), e);
    }

    fn tool_result(&mut self, s: &Signal) {
        let p = &s.payload;
        let e = match self.tools.remove(str_of(p, "id")) {
            Some(e) => e,
            None => self.push(s, "tool", format!("tool {}", str_of(p, "name"))),
        };
        let entry = &mut self.out.entries[e];
        if !entry.i.contains(&s.index) {
            entry.i.push(s.index);
        }
        let failed = p.get("isError") == Some(&Value::Bool(true));
        entry.e |= failed;
        let label = if failed { "error" } else { "result" };
        let result = p.get("result").unwrap_or(&Value::Null);
        entry.parts.push(Part::json(label, result));
    }

    fn state(&mut self, s: &Signal, key: &str) {
        let p = &s.payload;
        let removed = p.get("removed") == Some(&Value::Bool(true));
        let verb = if removed { "removed" } else { "changed" };
        let e = self.push(s, "state", format!("state {key} {verb}"));
        let old = state_text(p.get("oldValue").unwrap_or(&Value::Null));
        let new = if removed {
            String::new()
        } else {
            state_text(p.get("newValue").unwrap_or(&Value::Null))
        };
        self.out.entries[e].parts.push(Part {
            l: "diff".into(),
            x: clip(&diff(&old, &new)),
            d: true,
        });
    }

    fn custom(&mut self, s: &Signal) {
        let e = self.push(s, "signal", s.name.clone());
        let empty = s.payload.is_null() || s.payload.as_object().is_some_and(|m| m.is_empty());
        if !empty {
            self.out.entries[e]
                .parts
                .push(Part::json("payload", &s.payload));
        }
    }
}

/// A state value as its diff compares it, line by line: pretty JSON (a
/// one-line string quoted), but text on several lines (a file) as its
/// lines, and inside an object or array as a block (`"key": |` then its
/// lines two spaces further in), so that a changed line is one line of the
/// diff.
fn state_text(value: &Value) -> String {
    match value {
        Value::String(s) if s.contains('\n') => s.clone(),
        other => {
            let mut out = String::new();
            write_state(&mut out, other, 0);
            out
        }
    }
}

/// `value` as [`state_text`] writes it inside a value `indent` spaces in.
fn write_state(out: &mut String, value: &Value, indent: usize) {
    let pad = |out: &mut String, n: usize| out.extend(std::iter::repeat_n(' ', n));
    let (open, close, items): (char, char, Vec<(Option<&String>, &Value)>) = match value {
        Value::Object(m) if !m.is_empty() => {
            ('{', '}', m.iter().map(|(k, v)| (Some(k), v)).collect())
        }
        Value::Array(a) if !a.is_empty() => ('[', ']', a.iter().map(|v| (None, v)).collect()),
        Value::String(s) if s.contains('\n') => {
            out.push('|');
            for line in s.lines() {
                out.push('\n');
                pad(out, indent + 2);
                out.push_str(line);
            }
            return;
        }
        other => {
            out.push_str(&serde_json::to_string(other).unwrap_or_default());
            return;
        }
    };
    out.push(open);
    let last = items.len() - 1;
    for (i, (key, v)) in items.into_iter().enumerate() {
        out.push('\n');
        pad(out, indent + 2);
        if let Some(k) = key {
            out.push_str(&serde_json::to_string(k).unwrap_or_default());
            out.push_str(": ");
        }
        write_state(out, v, indent + 2);
        // A block's last line is text: no comma after it.
        let block = v.as_str().is_some_and(|s| s.contains('\n'));
        if i < last && !block {
            out.push(',');
        }
    }
    out.push('\n');
    pad(out, indent);
    out.push(close);
}

/// `1.2 s`, `850 ms`, or nothing without a duration.
fn duration(ms: Option<u64>) -> String {
    match ms {
        None => String::new(),
        Some(ms) if ms >= 1000 => format!("{:.1} s", ms as f64 / 1000.0),
        Some(ms) => format!("{ms} ms"),
    }
}

/// `120 in · 30 out tokens · $0.0012 · 850 ms` of a `provider:end` payload.
fn provider_meta(p: &Value) -> String {
    let mut meta = Vec::new();
    if let Some(usage) = p.get("usage") {
        meta.push(format!(
            "{} in · {} out tokens",
            u64_of(usage, "inputTokens").unwrap_or(0),
            u64_of(usage, "outputTokens").unwrap_or(0)
        ));
    }
    if let Some(cost) = p.get("costUsd").and_then(Value::as_f64) {
        meta.push(format!("${cost:.4}"));
    }
    let d = duration(u64_of(p, "durationMs"));
    if !d.is_empty() {
        meta.push(d);
    }
    meta.join(" · ")
}

/// The answer of a `provider:end` output: its text, its tool calls, and a
/// structured value when the text is JSON.
fn answer_parts(output: &Value, parts: &mut Vec<Part>) {
    let (text, calls) = match output {
        Value::String(s) => (s.as_str(), None),
        Value::Object(_) => (str_of(output, "text"), output.get("toolCalls")),
        _ => ("", None),
    };
    if !text.is_empty() {
        parts.push(Part::new("answer", text));
    }
    if let Some(calls) = calls {
        parts.push(Part::json("tool calls", calls));
    }
    let structured = serde_json::from_str::<Value>(text.trim()).ok();
    if let Some(v) = structured.filter(|v| v.is_object() || v.is_array()) {
        parts.push(Part::json("structured", &v));
    }
}

/// The messages of a request as text, one block per message.
fn messages_text(messages: &[Value], earlier: u64) -> String {
    let mut out = String::new();
    if earlier > 0 {
        out.push_str(&format!("… {earlier} earlier messages (shown above)\n\n"));
    }
    for m in messages {
        out.push_str(&format!("[{}]\n", str_of(m, "role")));
        for part in m
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.push_str(&content_text(part));
            out.push('\n');
        }
        out.push('\n');
    }
    out.trim_end().to_string()
}

/// One content part of a message as text.
fn content_text(part: &Value) -> String {
    if let Some(text) = part.get("text").and_then(Value::as_str) {
        return text.to_string();
    }
    if let Some(content) = part.get("content").and_then(Value::as_str) {
        return format!("tool result: {content}");
    }
    serde_json::to_string(part).unwrap_or_default()
}

/// A line diff of `old` and `new`: `  ` kept, `- ` removed, `+ ` added.
pub(crate) fn diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = if old.is_empty() {
        Vec::new()
    } else {
        old.lines().collect()
    };
    let b: Vec<&str> = if new.is_empty() {
        Vec::new()
    } else {
        new.lines().collect()
    };
    let mut out = Vec::new();
    if a.len() * b.len() > MAX_DIFF_CELLS {
        out.extend(a.iter().map(|l| format!("- {l}")));
        out.extend(b.iter().map(|l| format!("+ {l}")));
        return out.join("\n");
    }
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push(format!("  {}", a[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(format!("- {}", a[i]));
            i += 1;
        } else {
            out.push(format!("+ {}", b[j]));
            j += 1;
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sig(index: u64, name: &str, payload: Value, agent: Option<&str>) -> Signal {
        Signal {
            index,
            name: name.into(),
            payload,
            at_ms: index * 10,
            agent: agent.map(str::to_string),
        }
    }

    fn session() -> Vec<Signal> {
        let a = Some("coder");
        vec![
            sig(0, "harness:start", json!({"state": {"plan": null}}), None),
            sig(
                1,
                "phase:entered",
                json!({"phase": "code", "occurrence": 1}),
                None,
            ),
            sig(
                2,
                "agent:activated",
                json!({"agent": "coder", "trigger": "phase:entered"}),
                a,
            ),
            sig(
                3,
                "provider:start",
                json!({"provider": "openai", "model": "gpt-4o", "request": {"system": "You code.", "messages": [{"role": "user", "content": [{"type": "text", "text": "Write it"}]}], "earlier": 0}}),
                a,
            ),
            sig(4, "text:delta", json!({"content": "x"}), a),
            sig(
                5,
                "provider:end",
                json!({"output": {"text": "", "toolCalls": [{"id": "c1", "name": "write", "arguments": {"path": "a.rs"}}]}, "usage": {"inputTokens": 120, "outputTokens": 30}, "costUsd": 0.0012, "durationMs": 850}),
                a,
            ),
            sig(
                6,
                "tool:call",
                json!({"id": "c1", "name": "write", "input": {"path": "a.rs"}}),
                a,
            ),
            sig(
                7,
                "tool:result",
                json!({"id": "c1", "name": "write", "result": "denied", "isError": true}),
                a,
            ),
            sig(
                8,
                "state:plan:changed",
                json!({"key": "plan", "oldValue": null, "newValue": ["a"]}),
                a,
            ),
            sig(9, "review:complete", json!({"verdict": "ok"}), a),
            sig(10, "error:output", json!({"message": "bad json"}), a),
            sig(
                11,
                "phase:entered",
                json!({"phase": "code", "occurrence": 2}),
                None,
            ),
            sig(12, "harness:end", json!({"durationMs": 1200}), None),
        ]
    }

    #[test]
    fn a_session_becomes_a_timeline_of_calls_tools_states_and_errors() {
        let t = Transcript::from_signals(&session());
        let kinds: Vec<(&str, &str)> = t.entries.iter().map(|e| (e.k, e.t.as_str())).collect();
        assert_eq!(
            kinds,
            [
                ("run", "run started"),
                ("phase", "phase code"),
                ("agent", "coder activated"),
                ("provider", "openai · gpt-4o"),
                ("tool", "tool write"),
                ("state", "state plan changed"),
                ("signal", "review:complete"),
                ("error", "error:output"),
                ("phase", "phase code #2"),
                ("run", "run ended"),
            ]
        );
        let call = &t.entries[3];
        assert_eq!(call.i, [3, 5]);
        assert_eq!(call.m, "120 in · 30 out tokens · $0.0012 · 850 ms");
        assert_eq!(call.p, "code");
        let labels: Vec<&str> = call.parts.iter().map(|p| p.l.as_str()).collect();
        assert_eq!(labels, ["system", "messages", "tool calls"]);
        assert_eq!(call.parts[1].x, "[user]\nWrite it");
        let tool = &t.entries[4];
        assert_eq!((tool.i.clone(), tool.e), (vec![6, 7], true));
        assert_eq!(tool.parts[1].l, "error");
        assert_eq!(t.entries[5].parts[0].x, "- null\n+ [\n+   \"a\"\n+ ]");
        assert_eq!(t.entries[8].p, "code #2");
    }

    #[test]
    fn a_provider_error_marks_its_call() {
        let a = Some("x");
        let t = Transcript::from_signals(&[
            sig(
                0,
                "provider:start",
                json!({"provider": "p", "model": "m"}),
                a,
            ),
            sig(
                1,
                "provider:error",
                json!({"error": "HTTP 500", "code": "http"}),
                a,
            ),
        ]);
        assert_eq!(t.entries.len(), 1);
        assert!(t.entries[0].e);
        assert_eq!(t.entries[0].parts[0].x, "HTTP 500");
    }

    #[test]
    fn huge_texts_and_sessions_are_cut_with_a_marker() {
        let long = "é".repeat(MAX_TEXT + 10);
        let clipped = clip(&long);
        assert!(clipped.ends_with("… [truncated: 10 more characters]"));
        let many: Vec<Signal> = (0..MAX_ENTRIES as u64 + 5)
            .map(|i| sig(i, "tick", json!({}), None))
            .collect();
        let t = Transcript::from_signals(&many);
        assert_eq!((t.entries.len(), t.dropped), (MAX_ENTRIES, 5));
    }

    /// A state change of text on many lines (a file) is a diff of its
    /// lines, also inside an object (a map of files): one line changed is
    /// one `-` and one `+`, the rest kept; not one escaped line per side
    /// that repeats the whole file.
    #[test]
    fn multi_line_state_changes_are_line_diffs() {
        let old = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";
        let new = old.replace("= 1", "= 2");
        let t = Transcript::from_signals(&[
            sig(
                0,
                "state:source:changed",
                json!({"key": "source", "oldValue": old, "newValue": new}),
                None,
            ),
            sig(
                1,
                "state:files:changed",
                json!({"key": "files", "oldValue": {"src/main.rs": old, "README": "hi"}, "newValue": {"src/main.rs": new, "README": "hi"}}),
                None,
            ),
        ]);
        let diff = &t.entries[0].parts[0].x;
        assert_eq!(
            diff,
            "  fn main() {\n-     let x = 1;\n+     let x = 2;\n      println!(\"{x}\");\n  }"
        );
        let diff = &t.entries[1].parts[0].x;
        assert!(!diff.contains("\\n"), "{diff}");
        let changed: Vec<&str> = diff
            .lines()
            .filter(|l| l.starts_with('-') || l.starts_with('+'))
            .collect();
        // A block's lines stand four spaces in (the key's two, and two).
        let indented = |sign: char, line: &str| format!("{sign} {}{line}", " ".repeat(4));
        assert_eq!(
            changed,
            [
                indented('-', "    let x = 1;"),
                indented('+', "    let x = 2;")
            ],
            "{diff}"
        );
        assert!(diff.contains("  \"README\": \"hi\""), "{diff}");
        assert!(diff.contains("\"src/main.rs\": |"), "{diff}");
    }

    #[test]
    fn diffs_keep_common_lines() {
        assert_eq!(diff("a\nb\nc", "a\nc\nd"), "  a\n- b\n  c\n+ d");
        assert_eq!(diff("", "x"), "+ x");
    }
}
