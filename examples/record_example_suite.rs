//! Re-records the example suite's cassettes from hand-written answers.
//!
//! `cargo run --example record_example_suite`
//!
//! Serves the answers of `evals/answers/code-review.yaml` from
//! [`FakeProvider`] rules (case by a line of its code, variant by model,
//! agent by system prompt), then runs `cargo test --test evals` in record
//! mode with the providers' base URLs pointed at it. The recorder writes
//! `evals/recordings/*.json` (and insta the snapshots) exactly as it would
//! against the real APIs; the fake keys set here never reach a file.

use std::collections::BTreeMap;
use std::process::Command;

use scaffold::testing::{Answer, FakeProvider, Rule};
use serde_json::Value;

type Answers = BTreeMap<String, BTreeMap<String, BTreeMap<String, Value>>>;

/// The case a request is about, told by a line of its code.
const CASE_MARKERS: &[(&str, &str)] = &[
    ("SELECT * FROM users WHERE id = ${userId}", "sql-injection"),
    ("innerHTML = comment.text", "xss-vulnerability"),
    ("req.params.filename", "path-traversal"),
    ("db.findUser(userId)", "null-dereference"),
    ("Promise<User | null>", "clean-code-no-issues"),
];

/// The agent a request comes from, told by its system prompt.
const AGENTS: &[(&str, &str)] = &[("reviewer", "code reviewer"), ("fixer", "You fix code")];

/// A short stable hex tag for ids (FNV-1a).
fn tag(text: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// About four characters per token, as tokenizers average on English and code.
fn tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// The rule answering one case, variant and agent with `answer`.
fn rule(marker: &str, variant: &str, agent: &str, system: &str, answer: &Value) -> Rule {
    let text = match answer {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let id = tag(&format!("{}/{variant}/{agent}", case_of(marker)));
    let anthropic = variant.starts_with("claude");
    Rule::when()
        .model(variant)
        .system_contains(system)
        .prompt_contains(marker)
        .then_with(move |request| {
            let answer = Answer::text(text.clone()).usage(
                tokens(&String::from_utf8_lossy(&request.body)),
                tokens(&text),
            );
            if anthropic {
                answer
                    .id(format!("msg_01{id}"))
                    .request_id(format!("req_011C{}", &id[..12]))
            } else {
                answer
                    .id(format!("chatcmpl-{id}"))
                    .request_id(format!("req_{id}"))
                    .created(1_763_800_000)
                    .fingerprint("fp_7f5a3c1b2d")
            }
        })
}

fn case_of(marker: &str) -> &'static str {
    CASE_MARKERS
        .iter()
        .find(|(m, _)| *m == marker)
        .map_or("", |(_, case)| case)
}

fn rules(answers: &Answers) -> Vec<Rule> {
    let mut rules = Vec::new();
    for (marker, case) in CASE_MARKERS {
        for (variant, agents) in answers.get(*case).into_iter().flatten() {
            for (agent, system) in AGENTS {
                if let Some(answer) = agents.get(*agent) {
                    rules.push(rule(marker, variant, agent, system, answer));
                }
            }
        }
    }
    rules
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = env!("CARGO_MANIFEST_DIR");
    let source = std::fs::read_to_string(format!("{root}/evals/answers/code-review.yaml"))?;
    let answers: Answers = serde_saphyr::from_str(&source)?;
    let server = FakeProvider::builder()
        .rules(rules(&answers))
        .start()
        .await?;
    let recordings = format!("{root}/evals/recordings");
    let _ = std::fs::remove_dir_all(&recordings);
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["test", "--test", "evals"])
        .env("SCAFFOLD_MODE", "record")
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("ANTHROPIC_BASE_URL", server.anthropic_base_url())
        .env("OPENAI_API_KEY", "sk-proj-recording-canary-0000")
        .env("ANTHROPIC_API_KEY", "sk-ant-recording-canary-0000")
        .env("INSTA_UPDATE", "always")
        .env("INSTA_FORCE_PASS", "1")
        .status()?;
    if !status.success() {
        return Err(format!("recording run failed: {status}").into());
    }
    println!("recorded into {recordings}");
    Ok(())
}
