//! Runs the code review workflow once on a scripted model and prints its
//! signals, metrics and where the session was stored.
//!
//! `cargo run --example code_review`

use std::sync::Arc;

use scaffold::prelude::*;
use scaffold_examples::code_review;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reviewer = ScriptedProvider::new("gpt-4o").reply(
        ScriptedReply::json(json!({
            "findings": [{
                "issue": "SQL injection",
                "severity": "critical",
                "explanation": "The user id is interpolated into the SQL string; use a parameterized query."
            }],
            "summary": "The query is built by string interpolation, which allows SQL injection."
        }))
        .with_usage(412, 96),
    );
    let fixer = ScriptedProvider::new("gpt-4o").reply(
        ScriptedReply::text(
            "Use a prepared statement:\n\nconst query = 'SELECT * FROM users WHERE id = $1';\nreturn db.query(query, [userId]);",
        )
        .with_usage(520, 61),
    );
    let workflow = code_review::workflow(Arc::new(reviewer), Arc::new(fixer));
    let store = Store::open_default()?;
    let input = json!({
        "code": "async function getUser(userId) {\n  const query = `SELECT * FROM users WHERE id = ${userId}`;\n  return db.query(query);\n}\n",
        "language": "typescript"
    });
    let result = run_with(
        &workflow,
        input,
        &RunOptions::new().store(store.clone()).tag("example"),
    )
    .await;

    for s in &result.signals {
        println!(
            "{:>3} {:>5}ms  {:<24} {}",
            s.index,
            s.at_ms,
            s.name,
            s.agent.as_deref().unwrap_or("")
        );
    }
    let m = result.metrics;
    println!(
        "\nstatus {:?}  activations {}  tokens {} in / {} out  cost ${:.6}  latency {} ms",
        result.status, m.activations, m.input_tokens, m.output_tokens, m.cost_usd, m.latency_ms
    );
    store.flush()?;
    let stored = store.signals(&result.session_id)?;
    println!(
        "session {} stored with {} signals",
        result.session_id,
        stored.len()
    );
    if let Some(error) = result.error {
        return Err(error.into());
    }
    Ok(())
}
