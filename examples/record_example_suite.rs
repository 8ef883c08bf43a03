//! Re-records the example suite's cassettes from hand-written answers.
//!
//! `cargo run --example record_example_suite`
//!
//! Serves the answers of `evals/answers/code-review.yaml` in the real OpenAI
//! chat-completions and Anthropic Messages response shapes from a local
//! wiremock server, then runs `cargo test --test evals` in record mode with
//! the providers' base URLs pointed at it. The recorder writes
//! `evals/recordings/*.json` (and insta the snapshots) exactly as it would
//! against the real APIs; the fake keys set here never reach a file.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

type Answers = BTreeMap<String, BTreeMap<String, BTreeMap<String, Value>>>;

/// The case a request is about, told by a line of its code.
const CASE_MARKERS: &[(&str, &str)] = &[
    ("SELECT * FROM users WHERE id = ${userId}", "sql-injection"),
    ("innerHTML = comment.text", "xss-vulnerability"),
    ("req.params.filename", "path-traversal"),
    ("db.findUser(userId)", "null-dereference"),
    ("Promise<User | null>", "clean-code-no-issues"),
];

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

fn answer_for(answers: &Answers, request: &Request) -> Result<(String, String, String), String> {
    let body = String::from_utf8_lossy(&request.body).to_string();
    let case = CASE_MARKERS
        .iter()
        .find(|(marker, _)| body.contains(marker))
        .map(|(_, case)| *case)
        .ok_or("no known case in the request")?;
    let agent = if body.contains("code reviewer") {
        "reviewer"
    } else {
        "fixer"
    };
    let anthropic = request.url.path().ends_with("/messages");
    let variant = if anthropic {
        "claude-sonnet-4-5"
    } else {
        "gpt-4o"
    };
    let answer = answers
        .get(case)
        .and_then(|v| v.get(variant))
        .and_then(|a| a.get(agent))
        .ok_or(format!("no answer for {case}/{variant}/{agent}"))?;
    let text = match answer {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Ok((text, body, format!("{case}/{variant}/{agent}")))
}

fn respond(answers: &Answers, request: &Request) -> ResponseTemplate {
    let (text, body, key) = match answer_for(answers, request) {
        Ok(found) => found,
        Err(e) => {
            return ResponseTemplate::new(400)
                .set_body_json(json!({"error": {"message": e, "type": "invalid_request_error"}}));
        }
    };
    let id = tag(&key);
    let (input, output) = (tokens(&body), tokens(&text));
    if request.url.path().ends_with("/messages") {
        ResponseTemplate::new(200)
            .insert_header("request-id", format!("req_011C{}", &id[..12]).as_str())
            .set_body_json(json!({
                "id": format!("msg_01{id}"),
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": null,
                "usage": {
                    "input_tokens": input,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                    "output_tokens": output,
                    "service_tier": "standard"
                }
            }))
    } else {
        ResponseTemplate::new(200)
            .insert_header("x-request-id", format!("req_{id}").as_str())
            .set_body_json(json!({
                "id": format!("chatcmpl-{id}"),
                "object": "chat.completion",
                "created": 1_763_800_000,
                "model": "gpt-4o-2024-08-06",
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": null, "annotations": []},
                    "logprobs": null,
                    "finish_reason": "stop"
                }],
                "usage": {
                    "prompt_tokens": input,
                    "completion_tokens": output,
                    "total_tokens": input + output,
                    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                    "completion_tokens_details": {
                        "reasoning_tokens": 0, "audio_tokens": 0,
                        "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0
                    }
                },
                "service_tier": "default",
                "system_fingerprint": "fp_7f5a3c1b2d"
            }))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = env!("CARGO_MANIFEST_DIR");
    let source = std::fs::read_to_string(format!("{root}/evals/answers/code-review.yaml"))?;
    let answers: Answers = serde_saphyr::from_str(&source)?;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(move |request: &Request| respond(&answers, request))
        .mount(&server)
        .await;
    let recordings = format!("{root}/evals/recordings");
    let _ = std::fs::remove_dir_all(&recordings);
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .args(["test", "--test", "evals"])
        .env("SCAFFOLD_MODE", "record")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.uri()))
        .env("ANTHROPIC_BASE_URL", server.uri())
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
