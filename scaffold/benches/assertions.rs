//! 20 mixed assertions over one 1M-signal session (budget: under 100 ms).
//!
//! `cargo bench -p scaffold-evals --bench assertions` prints the time to build the
//! shared index, each assertion's time, the total, and a baseline measured
//! in the same run: one linear scan over the signals comparing each name
//! with a string. Each figure is the median of several runs, each on a
//! fresh context (so the index is rebuilt every run). Two configurations:
//! a context as `EvalContext::from_run` makes it (the run's metrics and
//! final state given) and one from bare signals (both derived lazily).
//!
//! `SCAFFOLD_BENCH_SIGNALS` overrides the session size.

use std::hint::black_box;
use std::time::{Duration, Instant};

use scaffold::_cargo_scaffold_support::store::fold_state;
use scaffold::assert::{Assertion, AssertionResult, EvalContext, evaluate};
use scaffold::metrics::Metrics;
use scaffold::signal::Signal;
use serde_json::{Value, json};

const RUNS: usize = 5;
const AGENTS: [(&str, &str, &str); 4] = [
    ("planner", "plan:complete", "plan"),
    ("coder", "code:complete", "code"),
    ("tester", "tests:complete", "tests"),
    ("reviewer", "review:complete", "review"),
];
const TOOLS: [&str; 4] = ["Read", "Edit", "Bash", "Write"];

fn push(signals: &mut Vec<Signal>, name: &str, payload: Value, agent: Option<&str>) {
    let index = signals.len() as u64;
    signals.push(Signal {
        index,
        name: name.to_string(),
        payload,
        at_ms: index,
        agent: agent.map(str::to_string),
    });
}

/// A long agent loop: each round one agent is activated, streams, calls the
/// model and a tool, changes state, completes and emits its signal (19
/// signals a round, 14 distinct names plus a few one-offs).
fn session(target: usize) -> Vec<Signal> {
    let mut s = Vec::with_capacity(target + 64);
    push(
        &mut s,
        "harness:start",
        json!({"agents": ["planner", "coder", "tester", "reviewer"], "state": {"plan": {"steps": []}, "round": 0}}),
        None,
    );
    let mut round: u64 = 0;
    let mut trigger = "phase:entered".to_string();
    while s.len() + 22 < target {
        let (agent, emits, key) = AGENTS[(round % 4) as usize];
        let a = Some(agent);
        let occurrence = round / 4 + 1;
        push(
            &mut s,
            "phase:entered",
            json!({"phase": key, "occurrence": occurrence}),
            None,
        );
        push(
            &mut s,
            "agent:activated",
            json!({"agent": agent, "trigger": trigger}),
            a,
        );
        push(
            &mut s,
            "provider:start",
            json!({"provider": "scripted", "model": "gpt-4o", "recordingId": null}),
            a,
        );
        for i in 0..6 {
            push(
                &mut s,
                "text:delta",
                json!({"content": format!("chunk {i} ")}),
                a,
            );
        }
        push(
            &mut s,
            "provider:end",
            json!({"provider": "scripted", "model": "gpt-4o", "output": "chunk 0 chunk 1",
                   "usage": {"inputTokens": 120, "outputTokens": 30}, "costUsd": 0.0004, "durationMs": 3}),
            a,
        );
        let tool = TOOLS[(round % 4) as usize];
        let id = format!("call-{round}");
        push(
            &mut s,
            "tool:call",
            json!({"id": id, "name": tool, "input": {"file_path": format!("src/file{}.rs", round % 50), "command": "cargo test"}}),
            a,
        );
        push(
            &mut s,
            "tool:result",
            json!({"id": id, "name": tool, "result": "ok", "isError": false}),
            a,
        );
        let new_value = if key == "plan" {
            json!({"steps": [round, round + 1, round + 2], "confidence": 0.8})
        } else {
            json!({"round": round, "ok": true})
        };
        push(
            &mut s,
            &format!("state:{key}:changed"),
            json!({"key": key, "oldValue": null, "newValue": new_value, "agent": agent}),
            a,
        );
        push(
            &mut s,
            "agent:completed",
            json!({"agent": agent, "durationMs": 5, "usage": {"inputTokens": 120, "outputTokens": 30}}),
            a,
        );
        push(&mut s, emits, json!({"agent": agent, "round": round}), a);
        push(
            &mut s,
            "phase:exited",
            json!({"phase": key, "occurrence": occurrence}),
            None,
        );
        trigger = emits.to_string();
        round += 1;
        if round == 1000 {
            push(&mut s, "milestone:early", json!({"round": round}), None);
        }
    }
    while s.len() + 3 < target {
        push(&mut s, "text:delta", json!({"content": "tail"}), None);
    }
    push(&mut s, "milestone:late", json!({"round": round}), None);
    push(
        &mut s,
        "agent:skipped",
        json!({"agent": "deployer", "reason": "no credentials", "trigger": "review:complete"}),
        None,
    );
    push(
        &mut s,
        "harness:end",
        json!({"durationMs": 42_000, "activations": round}),
        None,
    );
    s
}

fn assertions() -> Vec<(&'static str, Assertion)> {
    let a = |v: Value| -> Assertion { serde_json::from_value(v).expect("a valid assertion") };
    vec![
        (
            "signal.trajectory (6 steps, payloads)",
            a(json!({"type": "signal.trajectory", "patterns": [
            "harness:start",
            {"pattern": "agent:activated", "payload": {"agent": "planner"}},
            "plan:complete",
            {"pattern": "agent:activated", "payload": {"agent": "reviewer"}},
            "milestone:late",
            "harness:end"]})),
        ),
        (
            "signal.trajectory strict",
            a(
                json!({"type": "signal.trajectory", "strict": true, "patterns": [
            "milestone:late", "agent:skipped", "harness:end"]}),
            ),
        ),
        (
            "signal.trajectory (fails at the end)",
            a(json!({"type": "signal.trajectory", "patterns": [
            "harness:start", "milestone:late", "plan:complete"]})),
        ),
        (
            "signal.count tool:*",
            a(json!({"type": "signal.count", "pattern": "tool:*", "min": 10})),
        ),
        (
            "signal.count with payload",
            a(
                json!({"type": "signal.count", "pattern": "agent:activated", "payload": {"agent": "coder"}, "min": 1}),
            ),
        ),
        (
            "signal.contains late payload",
            a(
                json!({"type": "signal.contains", "pattern": "milestone:*", "payload": {"round": {"gte": 1000}}}),
            ),
        ),
        (
            "signal.not error:**",
            a(json!({"type": "signal.not", "pattern": "error:**"})),
        ),
        (
            "signal.first",
            a(
                json!({"type": "signal.first", "pattern": "agent:activated", "payload": {"agent": "planner"}}),
            ),
        ),
        (
            "signal.last",
            a(
                json!({"type": "signal.last", "pattern": "agent:activated", "payload": {"agent": {"startsWith": "re"}}}),
            ),
        ),
        (
            "snapshot.at (late)",
            a(
                json!({"type": "snapshot.at", "afterSignal": "milestone:late", "path": "plan.steps[0]", "value": {"gte": 0}}),
            ),
        ),
        (
            "snapshot.at (early)",
            a(
                json!({"type": "snapshot.at", "afterSignal": "milestone:early", "path": "plan.confidence", "value": {"between": [0.5, 1]}}),
            ),
        ),
        (
            "snapshot.final",
            a(json!({"type": "snapshot.final", "path": "review.ok", "value": true})),
        ),
        (
            "agent.activated",
            a(json!({"type": "agent.activated", "agentId": "tester", "min": 100})),
        ),
        (
            "agent.causedBy",
            a(json!({"type": "agent.causedBy", "agentId": "coder", "triggerPattern": "plan:*"})),
        ),
        (
            "agent.emitted",
            a(json!({"type": "agent.emitted", "agentId": "reviewer", "signal": "review:complete"})),
        ),
        (
            "agent.skipped",
            a(json!({"type": "agent.skipped", "agentId": "deployer", "reason": "credentials"})),
        ),
        (
            "metric.latency.max",
            a(json!({"type": "metric.latency.max", "value": 60000})),
        ),
        (
            "metric.tokens.max",
            a(json!({"type": "metric.tokens.max", "value": 1e12, "field": "input"})),
        ),
        (
            "tool.calledWith",
            a(
                json!({"type": "tool.calledWith", "name": "Write", "args": {"file_path": {"endsWith": "file49.rs"}}}),
            ),
        ),
        (
            "tool.sequence",
            a(json!({"type": "tool.sequence", "tools": ["Read", "Edit", "Bash", "Write"]})),
        ),
    ]
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// One configuration's figures (medians over [`RUNS`]).
struct Figures {
    prepare: Duration,
    each: Vec<Duration>,
    total: Duration,
    verdicts: Vec<AssertionResult>,
}

/// Evaluate `list` [`RUNS`] times, each on a fresh context from `make`.
fn measure<'s>(list: &[(&str, Assertion)], make: impl Fn() -> EvalContext<'s>) -> Figures {
    let mut prepare = Vec::new();
    let mut totals = Vec::new();
    let mut each: Vec<Vec<Duration>> = vec![Vec::new(); list.len()];
    let mut verdicts = Vec::new();
    for _ in 0..RUNS {
        let ctx = make();
        let t = Instant::now();
        ctx.prepare();
        let p = t.elapsed();
        prepare.push(p);
        let mut total = p;
        verdicts.clear();
        for (i, (_, a)) in list.iter().enumerate() {
            let t = Instant::now();
            let r = black_box(evaluate(a, &ctx));
            let d = t.elapsed();
            each[i].push(d);
            total += d;
            verdicts.push(r);
        }
        totals.push(total);
    }
    Figures {
        prepare: median(prepare),
        each: each.into_iter().map(median).collect(),
        total: median(totals),
        verdicts,
    }
}

fn main() {
    let target: usize = std::env::var("SCAFFOLD_BENCH_SIGNALS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let built = Instant::now();
    let signals = session(target);
    let mut names: Vec<&str> = signals.iter().map(|s| s.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    println!(
        "session: {} signals, {} distinct names, built in {:.2} s (not timed)",
        signals.len(),
        names.len(),
        built.elapsed().as_secs_f64()
    );
    // What a RunResult carries besides its signals: the run computes them as
    // it goes, so EvalContext::from_run does not pay for them.
    let t = Instant::now();
    let metrics = Metrics::from_signals(&signals);
    let metrics_time = t.elapsed();
    let initial = signals[0].payload["state"].clone();
    let t = Instant::now();
    let final_state = fold_state(initial, &signals);
    let fold_time = t.elapsed();
    let output = json!("done: all tests pass");
    let list = assertions();
    assert_eq!(list.len(), 20);

    // Baseline: one pass comparing every name with a string.
    let mut baseline = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let n = black_box(&signals)
            .iter()
            .filter(|s| s.name == black_box("tool:call"))
            .count();
        black_box(n);
        baseline.push(t.elapsed());
    }
    let base = median(baseline);

    let run = measure(&list, || {
        EvalContext::new(&signals)
            .metrics(metrics)
            .final_state_ref(&final_state)
            .output_ref(&output)
    });
    let bare = measure(&list, || EvalContext::new(&signals).output_ref(&output));

    println!("\nper assertion, median of {RUNS} runs, each on a fresh context:");
    println!("  {:<40} {:>11} {:>13}", "", "from a run", "from signals");
    println!(
        "  {:<40} {:>11} {:>13}",
        "name index (shared, built once)",
        ms(run.prepare),
        ms(bare.prepare)
    );
    for (i, (label, _)) in list.iter().enumerate() {
        let r = &run.verdicts[i];
        println!(
            "  {:<40} {:>11} {:>13}  {}",
            label,
            ms(run.each[i]),
            ms(bare.each[i]),
            if r.passed {
                "pass"
            } else {
                "FAIL (as designed)"
            }
        );
    }
    let verdict = |d: Duration| {
        if d < Duration::from_millis(100) {
            "met"
        } else {
            "MISSED"
        }
    };
    println!(
        "\ntotal, 20 assertions incl. index, context from a run:  {}  (budget 100 ms: {})",
        ms(run.total),
        verdict(run.total)
    );
    println!(
        "total, 20 assertions incl. index, from bare signals:  {}  (budget 100 ms: {}; metrics and final state derived lazily)",
        ms(bare.total),
        verdict(bare.total)
    );
    println!(
        "baseline, one scan comparing every name:              {}",
        ms(base)
    );
    println!(
        "ratio to baseline: {:.1}× from a run, {:.1}× from signals",
        run.total.as_secs_f64() / base.as_secs_f64().max(1e-9),
        bare.total.as_secs_f64() / base.as_secs_f64().max(1e-9)
    );
    println!(
        "for reference, not in the totals: Metrics::from_signals over all signals {}, fold_state to the end {}",
        ms(metrics_time),
        ms(fold_time)
    );
    for (a, b) in run.verdicts.iter().zip(&bare.verdicts) {
        assert_eq!(a.passed, b.passed, "{a} / {b}");
    }
    println!("\nthe failures, as a person reads them:");
    for r in run.verdicts.iter().filter(|r| !r.passed) {
        println!("  {}", scaffold_cut(&r.to_string(), 300));
    }
    // For `cargo bench --bench suite` (root package), which checks the budgets.
    println!(
        "figures: signals={} total_ms={:.3} bare_total_ms={:.3} scan_ms={:.3}",
        signals.len(),
        run.total.as_secs_f64() * 1e3,
        bare.total.as_secs_f64() * 1e3,
        base.as_secs_f64() * 1e3
    );
}

fn scaffold_cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}
