//! What the root package's benchmarks share: the workloads (a two-agent
//! and a one-agent workflow over echo answers, datasets of N cases with 4
//! assertions), the scripted echo model, and measuring helpers.
//!
//! Each bench binary uses part of it.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use scaffold::dataset::{Dataset, Format, load_str};
use scaffold::prelude::*;
use scaffold::scorer::{CustomScore, ScorerContext};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The state of the bench workflows.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Doc {
    pub topic: String,
    pub draft: String,
    pub review: String,
}

fn start(input: &serde_json::Value, s: &mut Doc) {
    s.topic = input["topic"].as_str().unwrap_or_default().to_string();
}

/// writer → reviewer, one model call each (the playback workload).
pub fn two_agent_workflow(writer: Arc<dyn Provider>, reviewer: Arc<dyn Provider>) -> Workflow<Doc> {
    let write = Agent::<Doc>::new("writer")
        .provider_arc(writer)
        .prompt(|s| format!("Write one sentence about {}", s.topic))
        .update(|t, s| s.draft = t)
        .emits("draft:ready");
    let review = Agent::<Doc>::new("reviewer")
        .provider_arc(reviewer)
        .prompt(|s| format!("Review: {}", s.draft))
        .update(|t, s| s.review = t);
    Workflow::new("write-review", Doc::default())
        .start(start)
        .phase("write", Phase::run(write).next("review"))
        .phase("review", Phase::run(review).next("done"))
        .terminal("done")
        .output(|s| json!(s.review))
}

/// One writer, one model call per cell (the live workload: one call per
/// cell, as promptfoo makes).
pub fn one_agent_workflow(writer: Arc<dyn Provider>) -> Workflow<Doc> {
    let write = Agent::<Doc>::new("writer")
        .provider_arc(writer)
        .prompt(|s| format!("Write one sentence about {}", s.topic))
        .update(|t, s| s.draft = t)
        .emits("draft:ready");
    Workflow::new("write", Doc::default())
        .start(start)
        .phase("write", Phase::run(write).next("done"))
        .terminal("done")
        .output(|s| json!(s.draft))
}

/// A scripted model answering like the fake provider server: `Echo: {last message}`.
pub fn scripted_echo() -> Arc<dyn Provider> {
    // It answers every cell of a run: no copy of each request kept.
    Arc::new(
        ScriptedProvider::responder("gpt-4o-mini", |req| {
            let last = req.messages.last().map(|m| m.text()).unwrap_or_default();
            ScriptedReply::text(format!("Echo: {last}"))
        })
        .forget_requests(),
    )
}

/// The 4 assertions of every cell, in the spirit of promptfoo's `contains`,
/// `icontains`, `regex` and a trajectory check over the signals.
/// `trajectory` lists the signals that must appear in order.
pub fn dataset_yaml(name: &str, cases: usize, trajectory: &[&str]) -> String {
    let mut yaml = format!(
        "name: {name}\ndefaultAssertions:\n  - type: output.contains\n    text: Echo\n  \
         - type: output.contains\n    text: echo\n    caseSensitive: false\n  \
         - type: output.matches\n    regex: \"^Echo: \"\n  \
         - type: signal.trajectory\n    patterns: [{}]\ncases:\n",
        trajectory.join(", ")
    );
    for i in 0..cases {
        let _ = writeln!(
            yaml,
            "  - id: case-{i}\n    input: {{topic: \"topic number {i}\"}}\n    assertions: []"
        );
    }
    yaml
}

/// The trajectory asserted of the two-agent workflow.
pub const TWO_AGENT_TRAJECTORY: &[&str] = &["harness:start", "draft:ready", "harness:end"];
/// The trajectory asserted of the one-agent workflow.
pub const ONE_AGENT_TRAJECTORY: &[&str] = &["harness:start", "draft:ready", "harness:end"];

/// [`dataset_yaml`], loaded.
pub fn dataset(cases: usize, trajectory: &[&str]) -> Dataset {
    match load_str(
        &dataset_yaml("bench", cases, trajectory),
        Format::Yaml,
        "bench.yaml",
    ) {
        Ok(d) => d,
        Err(e) => panic!("bench dataset: {e}"),
    }
}

/// The code check of every cell (promptfoo: `javascript: output.length > 0`).
pub fn code_check() -> impl scaffold::scorer::Scorer<Doc> + 'static {
    scaffold::scorer::custom("code-check", |ctx: &ScorerContext<'_, Doc>| {
        let ok = ctx
            .output
            .and_then(|o| o.as_str())
            .is_some_and(|s| !s.is_empty());
        CustomScore {
            value: if ok { 1.0 } else { 0.0 },
            pass: Some(ok),
            detail: None,
        }
    })
}

/// The median of sorted durations.
pub fn median(sorted: &[Duration]) -> Duration {
    sorted[sorted.len() / 2]
}

/// The 95th percentile of sorted durations.
pub fn p95(sorted: &[Duration]) -> Duration {
    sorted[(sorted.len() * 95 / 100).min(sorted.len() - 1)]
}

/// Microseconds.
pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The 1, 5 and 15 minute load averages (`/proc/loadavg`).
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".to_string())
}

/// A memory figure of process `pid` (`self` for this one) from
/// `/proc/{pid}/status`, such as `VmHWM` or `RssAnon`, in KiB (Linux).
pub fn status_kib(pid: &str, field: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// This process's resource use, read from `/proc/self`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SelfUsage {
    /// Peak resident memory (VmHWM), KiB.
    pub peak_rss_kib: u64,
    /// User plus system CPU time of all threads.
    pub cpu: Duration,
}

impl SelfUsage {
    /// Now.
    pub fn read() -> SelfUsage {
        let peak_rss_kib = status_kib("self", "VmHWM").unwrap_or(0);
        // Fields 14 and 15 (utime, stime) in clock ticks, after the `(comm)` field.
        let cpu = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|s| {
                let rest = &s[s.rfind(')')? + 2..];
                let fields: Vec<&str> = rest.split_whitespace().collect();
                let ticks: u64 =
                    fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
                // USER_HZ is 100 on Linux whatever the kernel's HZ.
                Some(Duration::from_millis(ticks * 10))
            })
            .unwrap_or_default();
        SelfUsage { peak_rss_kib, cpu }
    }

    /// `peak_rss_kib cpu_us`, one line.
    pub fn to_line(self) -> String {
        format!("{} {}", self.peak_rss_kib, self.cpu.as_micros())
    }

    /// Parse [`SelfUsage::to_line`].
    pub fn from_line(line: &str) -> Option<SelfUsage> {
        let mut it = line.split_whitespace();
        let peak_rss_kib = it.next()?.parse().ok()?;
        let cpu = Duration::from_micros(it.next()?.parse().ok()?);
        Some(SelfUsage { peak_rss_kib, cpu })
    }
}
