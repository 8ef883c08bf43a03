//! The agent bridge's overhead per cell in playback.
//!
//! `cargo bench --bench bridge` (`SCAFFOLD_BENCH_CELLS` to change the 1,000 cells)
//!
//! The same two calls per cell (writer → reviewer, the playback bench's
//! workload) made two ways, both played back through the harness's cell
//! path (`Eval::run_cell`: run, 4 assertions, a code-check scorer, an
//! in-memory store): by a native workflow on the OpenAI provider, and by
//! an agent of your own, plain reqwest through the cell's bridge (a local
//! server per cell, one more HTTP hop per call, the calls read back into
//! signals). The two are measured alternately in the same run; the figure
//! is the ratio of their median cells (budget: at most 1.5×).

mod common;

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use common::{Doc, code_check, dataset, median, p95, two_agent_workflow, us};
use scaffold::_cargo_scaffold_support::eval::CellEnv;
use scaffold::_cargo_scaffold_support::provider::bridge::BridgeHost;
use scaffold::eval::Eval;
use scaffold::prelude::*;
use scaffold::provider::openai::OpenAi;
use scaffold::provider::recorder::{ProviderRecorder, RecorderMode};
use scaffold::testing::FakeProviderServer;
use serde_json::{Value, json};

/// The bridged agent's budget, as a multiple of the native cell.
const BUDGET: f64 = 1.5;

/// One client for every cell, as an agent keeps its own.
fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(reqwest::Client::new)
}

async fn chat(cx: &AgentCx, agent: &str, prompt: String) -> Result<String, String> {
    let body = json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]});
    let response = client()
        .post(format!("{}/chat/completions", cx.openai_base_url(agent)))
        .bearer_auth(cx.openai_api_key())
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let text = response.text().await.map_err(|e| e.to_string())?;
    let answer: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    Ok(answer["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

/// The two-agent workload as an agent of your own: the same requests.
async fn writer_reviewer(cx: AgentCx) -> Result<String, String> {
    let topic = cx.input()["topic"].as_str().unwrap_or_default().to_string();
    let draft = chat(&cx, "writer", format!("Write one sentence about {topic}")).await?;
    cx.emit_as("writer", "draft:ready", json!({}));
    let review = chat(&cx, "reviewer", format!("Review: {draft}")).await?;
    cx.state(&Doc {
        topic,
        draft,
        review: review.clone(),
    });
    Ok(review)
}

fn native(url: &str, cases: usize) -> Eval<Doc> {
    let openai = || -> Arc<dyn Provider> {
        Arc::new(OpenAi::new("gpt-4o-mini").base_url(url).api_key("sk-bench"))
    };
    Eval::new()
        .name("native")
        .variant("a", two_agent_workflow(openai(), openai()))
        .dataset(dataset(cases, common::TWO_AGENT_TRAJECTORY))
        .scorer(code_check())
}

fn bridged(url: &str, cases: usize) -> Eval<Doc> {
    Eval::new()
        .name("bridged")
        .agent(writer_reviewer)
        .variant("a", Variant::new().model("gpt-4o-mini"))
        .bridge_openai(OpenAi::new("").base_url(url))
        .dataset(dataset(cases, common::TWO_AGENT_TRAJECTORY))
        .scorer(code_check())
}

/// The harness's environment: one bridge server for every cell.
fn env(recorder: &ProviderRecorder, store: Option<Store>, bridges: &BridgeHost) -> CellEnv {
    CellEnv {
        store,
        transport: Some(recorder.transport()),
        virtual_time: recorder.mode() == RecorderMode::Playback,
        tools: None,
        recorder: Some(recorder.clone()),
        bridges: Some(bridges.clone()),
    }
}

/// Per-cell times of every cell of `eval`, one after the other.
async fn time_cells(eval: &Eval<Doc>, env: &CellEnv) -> Vec<Duration> {
    let mut times = Vec::with_capacity(eval.cell_count());
    for cell in eval.cells() {
        let t = Instant::now();
        let (result, _) = eval.run_cell(&cell, env).await;
        times.push(t.elapsed());
        assert!(result.passed, "{}: {:?}", result.id, result.failures());
    }
    times.sort();
    times
}

fn main() {
    let cells: usize = std::env::var("SCAFFOLD_BENCH_CELLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = std::env::temp_dir().join(format!("scaffold-bench-bridge-{}", std::process::id()));
    runtime.block_on(async {
        let server = FakeProviderServer::start().await.expect("fake server");
        let url = server.openai_base_url();
        let bridges = BridgeHost::new();
        let record = ProviderRecorder::new(&dir, RecorderMode::Record);
        let _ = time_cells(&native(&url, cells), &env(&record, None, &bridges)).await;
        let _ = time_cells(&bridged(&url, cells), &env(&record, None, &bridges)).await;

        let store = Store::in_memory().expect("store");
        let playback = ProviderRecorder::new(&dir, RecorderMode::Playback);
        let env = env(&playback, Some(store.clone()), &bridges);
        let (native, bridged) = (native(&url, cells), bridged(&url, cells));
        let mut native_times = Vec::new();
        let mut bridged_times = Vec::new();
        // Alternately, twice each: the first pair warms connections and caches.
        for round in 0..2 {
            let n = time_cells(&native, &env).await;
            let b = time_cells(&bridged, &env).await;
            if round == 1 {
                (native_times, bridged_times) = (n, b);
            }
        }
        store.flush().expect("flush");
        let (n, b) = (us(median(&native_times)), us(median(&bridged_times)));
        println!("bridge, {cells} cells of two calls each, played back (alternated, same run):");
        println!(
            "  native workflow    median {n:>9.1} µs   p95 {:>9.1} µs",
            us(p95(&native_times))
        );
        println!(
            "  bridged agent      median {b:>9.1} µs   p95 {:>9.1} µs",
            us(p95(&bridged_times))
        );
        let ratio = b / n;
        println!(
            "  bridged ÷ native   {ratio:.2}× per cell (budget {BUDGET}×: {})",
            if ratio <= BUDGET { "met" } else { "NOT met" }
        );
        println!("figures: native_us={n:.1} bridged_us={b:.1} bridged_over_native={ratio:.3}");
    });
    let _ = std::fs::remove_dir_all(&dir);
}
