//! Session store benchmark: prints figures, asserts nothing.
//!
//! ```text
//! cargo bench -p scaffold-evals --bench store
//! SCAFFOLD_BENCH_SIGNALS=100000 cargo bench -p scaffold-evals --bench store
//! ```
//!
//! * insert throughput for one session of N signals (default 1,000,000; a
//!   realistic mix with ~10% small state changes) through `Store::append`,
//!   one signal per call and 64 per call, beside a baseline measured in the
//!   same run: the same signals inserted into the same schema, in blocks
//!   of 64, with one bare rusqlite prepared statement in one transaction. Every figure includes
//!   making the signals and serializing their payloads; the time to make
//!   them alone is printed too. `Store::append` serializes payloads on the
//!   caller's thread while the writer thread inserts, so on two or more
//!   cores the store can beat the single-threaded baseline (ratio > 1).
//!   "caller time" is how long the appending thread spent per signal,
//!   including waits on a full queue (the writer's pace then sets it).
//! * Other processes' load skews every figure (the baseline too): compare
//!   figures of one run, on a quiet machine.
//! * `state_at` latency (median, p99) at random indices of that session,
//!   with checkpoints (every 1000 signals, the default) and without.
//!
//! Budgets (DESIGN.md): >= 200k signals/s insert; `state_at` < 5 ms at 1M signals.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use scaffold::signal::Signal;
use scaffold::store::{SessionMeta, Store, StoreOptions};
use serde_json::{Value, json};

/// xorshift64*: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const STATE_KEYS: [&str; 5] = ["plan", "draft", "review", "attempts", "notes"];
const WORDS: [&str; 8] = [
    "the", "plan", "step", "tool", "reads", "file", "and", "answers",
];

/// Signal `i` of a realistic session: text deltas dominate, ~10% are state changes.
fn make_signal(i: u64, rng: &mut Rng) -> Signal {
    let agent = ["planner", "coder", "reviewer"][(i % 3) as usize];
    let roll = rng.below(100);
    let (name, payload) = if roll < 10 {
        let key = STATE_KEYS[rng.below(STATE_KEYS.len() as u64) as usize];
        let new_value = match rng.below(3) {
            0 => json!(rng.below(1000)),
            1 => json!(format!("{} {}", WORDS[(i % 8) as usize], i)),
            _ => json!([WORDS[(i % 8) as usize], WORDS[((i + 3) % 8) as usize]]),
        };
        (
            format!("state:{key}:changed"),
            json!({"key": key, "oldValue": null, "newValue": new_value, "agent": agent}),
        )
    } else if roll < 60 {
        let content: Vec<&str> = (0..4).map(|_| WORDS[rng.below(8) as usize]).collect();
        (
            "text:delta".to_owned(),
            json!({"content": content.join(" ")}),
        )
    } else if roll < 70 {
        (
            "tool:call".to_owned(),
            json!({"id": format!("call_{i}"), "name": "read_file", "input": {"path": "src/lib.rs"}}),
        )
    } else if roll < 80 {
        (
            "tool:result".to_owned(),
            json!({"id": format!("call_{i}"), "result": "fn main() {}", "isError": false}),
        )
    } else if roll < 90 {
        (
            "provider:end".to_owned(),
            json!({"output": "ok", "usage": {"inputTokens": 812, "outputTokens": 64},
                   "costUsd": 0.00042, "durationMs": 950}),
        )
    } else {
        (
            "agent:activated".to_owned(),
            json!({"agent": agent, "trigger": "phase:entered"}),
        )
    };
    Signal {
        index: i,
        name,
        payload,
        at_ms: i / 4,
        agent: Some(agent.to_owned()),
    }
}

fn signals(n: u64) -> impl Iterator<Item = Signal> {
    let mut rng = Rng(0x005E_ED0F_5CAF_F01D);
    (0..n).map(move |i| make_signal(i, &mut rng))
}

fn rate(n: u64, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

fn fresh_path(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
    }
    p
}

/// Signals per block in the baseline, as the store's batched appends.
const BASELINE_BLOCK: usize = 64;

/// The same signals, one prepared statement, one transaction: blocks of
/// [`BASELINE_BLOCK`] in the store's layout (`signal_blocks`, a JSON array
/// of signals each).
fn baseline(path: &Path, n: u64) -> Result<Duration, Box<dyn std::error::Error>> {
    // Same schema and pragmas as the store.
    drop(Store::open(path)?);
    let mut conn = rusqlite::Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.execute(
        "INSERT INTO sessions (id, workflow, input, initial_state, started_at) \
         VALUES ('base', 'bench', 'null', '{}', 0)",
        [],
    )?;
    let start = Instant::now();
    let tx = conn.transaction()?;
    {
        let mut st = tx.prepare(
            "INSERT INTO signal_blocks (session_id, first_idx, last_idx, signals) \
             VALUES (?1, ?2, ?3, ?4)",
        )?;
        let mut block = Vec::with_capacity(BASELINE_BLOCK);
        let mut insert = |block: &mut Vec<Signal>| -> Result<(), Box<dyn std::error::Error>> {
            if let (Some(first), Some(last)) = (block.first(), block.last()) {
                let text = serde_json::to_string(block)?;
                st.execute(rusqlite::params![
                    "base",
                    first.index as i64,
                    last.index as i64,
                    text
                ])?;
            }
            block.clear();
            Ok(())
        };
        for s in signals(n) {
            block.push(s);
            if block.len() == BASELINE_BLOCK {
                insert(&mut block)?;
            }
        }
        insert(&mut block)?;
    }
    tx.commit()?;
    Ok(start.elapsed())
}

/// Through the store; returns (time until the last append returned, total time to flushed).
fn through_store(
    store: &Store,
    id: &str,
    n: u64,
    chunk: usize,
) -> Result<(Duration, Duration), Box<dyn std::error::Error>> {
    store.begin_session(&SessionMeta::new(id, "bench").initial_state(json!({})))?;
    store.flush()?;
    let start = Instant::now();
    let mut buf = Vec::with_capacity(chunk);
    for s in signals(n) {
        buf.push(s);
        if buf.len() == chunk {
            store.append(id, &buf)?;
            buf.clear();
        }
    }
    store.append(id, &buf)?;
    let queued = start.elapsed();
    store.flush()?;
    Ok((queued, start.elapsed()))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn latencies(
    samples: usize,
    n: u64,
    rng: &mut Rng,
    mut f: impl FnMut(u64) -> Result<Value, scaffold::store::StoreError>,
) -> Result<(Duration, Duration), Box<dyn std::error::Error>> {
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let i = rng.below(n);
        let t = Instant::now();
        let v = f(i)?;
        times.push(t.elapsed());
        std::hint::black_box(v);
    }
    times.sort();
    Ok((percentile(&times, 0.5), percentile(&times, 0.99)))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::var("SCAFFOLD_BENCH_SIGNALS")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(1_000_000);
    let dir = std::env::temp_dir().join(format!("scaffold-store-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    println!(
        "session store benchmark: {n} signals per session, files in {}",
        dir.display()
    );

    let t = Instant::now();
    let mut count = 0u64;
    for s in signals(n) {
        count += std::hint::black_box(&s).index & 1;
    }
    let gen_time = t.elapsed();
    std::hint::black_box(count);
    println!(
        "  making the signals alone:          {:>8.0} ms ({:.2} µs/signal, included below)",
        ms(gen_time),
        gen_time.as_secs_f64() * 1e6 / n as f64
    );

    let base = baseline(&fresh_path(&dir, "baseline.db"), n)?;
    let base_rate = rate(n, base);
    println!(
        "  baseline (bare prepared statement, one transaction): {:>10.0} signals/s  ({:.0} ms)",
        base_rate,
        ms(base)
    );

    let mut kept = None;
    let mut insert_rate = 0.0;
    for chunk in [1usize, 64] {
        let path = fresh_path(&dir, &format!("store-{chunk}.db"));
        let store = Store::open(&path)?;
        let (queued, total) = through_store(&store, "bench", n, chunk)?;
        println!(
            "  Store::append, {chunk:>2} signal(s)/call:  {:>10.0} signals/s  ({:.0} ms, ratio to baseline {:.2}); \
             caller time {:.2} µs/signal",
            rate(n, total),
            ms(total),
            rate(n, total) / base_rate,
            queued.as_secs_f64() * 1e6 / n as f64
        );
        if chunk == 1 {
            insert_rate = rate(n, total);
            kept = Some(store);
        }
    }
    let Some(store) = kept else {
        return Ok(());
    };

    let mut rng = Rng(42);
    let (med, p99) = latencies(200, n, &mut rng, |i| store.state_at("bench", i))?;
    println!(
        "  state_at with checkpoints (200 random indices):    median {:>8.3} ms, p99 {:>8.3} ms",
        ms(med),
        ms(p99)
    );
    let samples = if n > 200_000 { 20 } else { 200 };
    let (med_nc, p99_nc) = latencies(samples, n, &mut rng, |i| {
        store.state_at_without_checkpoints("bench", i)
    })?;
    println!(
        "  state_at without checkpoints ({samples} random indices): median {:>8.3} ms, p99 {:>8.3} ms",
        ms(med_nc),
        ms(p99_nc)
    );
    println!(
        "  checkpoints make state_at {:.0}x faster (median)",
        med_nc.as_secs_f64() / med.as_secs_f64().max(1e-9)
    );
    drop(store);
    // For `cargo bench --bench suite` (root package), which checks the budgets.
    println!(
        "figures: signals={n} insert_rate={insert_rate:.0} baseline_rate={base_rate:.0} \
         state_at_median_ms={:.4} state_at_p99_ms={:.4} state_at_no_checkpoints_median_ms={:.4}",
        ms(med),
        ms(p99),
        ms(med_nc)
    );

    // Nothing beside the options' defaults is tuned; print them for the record.
    let o = StoreOptions::default();
    println!(
        "  (options: checkpoint_interval {}, batch_size {}, queue_capacity {})",
        o.checkpoint_interval, o.batch_size, o.queue_capacity
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
