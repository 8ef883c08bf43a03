//! Playback overhead per cell.
//!
//! `cargo bench --bench playback` (`SCAFFOLD_BENCH_CELLS` to change the 1,000 cells)
//!
//! A two-agent workflow (writer → reviewer, both on the OpenAI provider) runs
//! over 500 cases × 2 variants. The cells are first recorded against the fake
//! provider server, then each cell is run through the harness's cell path
//! (`Eval::run_cell`: run, 4 assertions, a code-check scorer, in-memory store) in playback,
//! over real HTTP to the shared wiremock server. The baseline, measured in the
//! same run, is the same cells with a scripted provider (no HTTP, no
//! recordings): the difference is what playback costs per cell.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Doc, code_check, dataset, median, p95, scripted_echo, two_agent_workflow, us};
use scaffold::_cargo_scaffold_support::eval::CellEnv;
use scaffold::eval::Eval;
use scaffold::prelude::*;
use scaffold::provider::openai::OpenAi;
use scaffold::provider::recorder::{ProviderRecorder, RecorderMode};
use scaffold::testing::FakeProviderServer;

fn eval(provider: impl Fn() -> Arc<dyn Provider>, cases: usize) -> Eval<Doc> {
    Eval::new()
        .name("bench")
        .variant("a", two_agent_workflow(provider(), provider()))
        .variant("b", two_agent_workflow(provider(), provider()))
        .dataset(dataset(cases, common::TWO_AGENT_TRAJECTORY))
        .scorer(code_check())
}

/// Per-cell times of every cell of `eval`, run one after the other.
async fn time_cells(eval: &Eval<Doc>, env: &CellEnv) -> (Vec<Duration>, usize) {
    let mut times = Vec::with_capacity(eval.cell_count());
    let mut failed = 0;
    for cell in eval.cells() {
        let t = Instant::now();
        let (result, _) = eval.run_cell(&cell, env).await;
        times.push(t.elapsed());
        failed += usize::from(!result.passed);
    }
    times.sort();
    (times, failed)
}

fn main() {
    let cells: usize = std::env::var("SCAFFOLD_BENCH_CELLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let cases = cells.div_ceil(2);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let dir = std::env::temp_dir().join(format!("scaffold-bench-playback-{}", std::process::id()));
    runtime.block_on(async {
        let server = FakeProviderServer::start().await.expect("fake server");
        let url = server.openai_base_url();
        let openai = |url: String| {
            move || -> Arc<dyn Provider> {
                Arc::new(
                    OpenAi::new("gpt-4o-mini")
                        .base_url(url.clone())
                        .api_key("sk-bench"),
                )
            }
        };

        // Record every cell once against the fake server.
        let recorder = ProviderRecorder::new(&dir, RecorderMode::Record);
        let recording = eval(openai(url.clone()), cases);
        let env = CellEnv {
            store: None,
            transport: Some(recorder.transport()),
            virtual_time: false,
            tools: None,
            recorder: None,
            bridges: None,
        };
        let (_, failed) = time_cells(&recording, &env).await;
        assert_eq!(failed, 0, "recording run had failing cells");

        // Playback: real HTTP to the shared wiremock server, 4 assertions, a scorer, a store.
        let store = Store::in_memory().expect("store");
        let playback = ProviderRecorder::new(&dir, RecorderMode::Playback);
        let env = CellEnv {
            store: Some(store.clone()),
            transport: Some(playback.transport()),
            virtual_time: true,
            tools: None,
            recorder: None,
            bridges: None,
        };
        let replay = eval(openai("http://unused.invalid/v1".into()), cases);
        let _ = time_cells(&replay, &env).await; // warm-up: connections, cassette cache
        let (played, failed) = time_cells(&replay, &env).await;
        assert_eq!(failed, 0, "playback had failing cells");
        store.flush().expect("flush");

        // Baseline: the same cells with a scripted provider (no HTTP).
        let base = eval(scripted_echo, cases);
        let env = CellEnv {
            store: Some(store.clone()),
            transport: None,
            virtual_time: false,
            tools: None,
            recorder: None,
            bridges: None,
        };
        let _ = time_cells(&base, &env).await;
        let (baseline, _) = time_cells(&base, &env).await;

        let (p, b) = (us(median(&played)), us(median(&baseline)));
        println!(
            "playback, {} cells of a two-agent workflow (2 HTTP calls per cell):",
            played.len()
        );
        println!(
            "  playback cell      median {p:>9.1} µs   p95 {:>9.1} µs",
            us(p95(&played))
        );
        println!(
            "  scripted baseline  median {b:>9.1} µs   p95 {:>9.1} µs",
            us(p95(&baseline))
        );
        println!(
            "  playback overhead  median {:>9.1} µs per cell ({:.1}× the baseline cell)",
            p - b,
            p / b
        );
    });
    let _ = std::fs::remove_dir_all(&dir);
}
