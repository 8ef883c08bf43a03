//! Re-records the example suite's cassettes from hand-written answers.
//!
//! `cargo run --example record_example_suite`
//!
//! Serves the answers of `evals/answers/code-review.yaml` from
//! [`FakeProvider`] rules (case by a line of its code, variant by model,
//! agent by system prompt) and those of `evals/answers/code-generation.yaml`
//! (case by its task, the coder's turn by the answers it gave so far), those
//! of `refactoring.yaml`, `debugging.yaml` and `refactoring-verifier.yaml`
//! (case by its task or error, a prompt variant by its system prompt), then
//! runs `cargo test --test evals` in record mode with the providers' base URLs pointed at it. The recorder writes
//! `evals/recordings/*.json` (and insta the snapshots) exactly as it would
//! against the real APIs; the fake keys set here never reach a file.

use std::collections::BTreeMap;
use std::process::Command;

use scaffold::testing::{Answer, FakeProvider, RecordedRequest, Rule};
use scaffold_examples::code_generation as codegen;
use scaffold_examples::{debugging, refactoring};
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
            shaped(answer, anthropic, &id)
        })
}

/// `answer` with the ids and headers of the API a variant calls.
fn shaped(answer: Answer, anthropic: bool, id: &str) -> Answer {
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

/// The code generation agents, told by their system prompts.
const GEN_AGENTS: &[(&str, &str)] = &[
    ("planner", codegen::prompts::PLANNER),
    ("clarifier", codegen::prompts::CLARIFIER),
    ("coder", codegen::prompts::CODER),
    ("tester", codegen::prompts::TESTER),
    ("reviewer", codegen::prompts::REVIEWER),
];

/// How many answers the model already gave in this conversation.
fn turn(request: &RecordedRequest) -> usize {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
    body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count())
}

/// One answer of the code generation answers: a structured value, a text,
/// or one turn of the coder (`{Write: args}`, `{Bash: args}`, `{text: ..}`).
fn gen_answer(answer: &Value) -> Answer {
    match answer {
        Value::String(text) => Answer::text(text.clone()),
        Value::Object(turn) if turn.len() == 1 => {
            let (key, value) = turn.iter().next().expect("one key");
            match (key.as_str(), value) {
                ("text", Value::String(text)) => Answer::text(text.clone()),
                (tool, args) if tool != "text" && args.is_object() => {
                    Answer::tool_call(tool, args.clone())
                }
                _ => Answer::structured(answer.clone()),
            }
        }
        other => Answer::structured(other.clone()),
    }
}

/// The rule answering one code generation agent of one case and variant;
/// a list of answers is served turn by turn.
fn gen_rule(
    task: &str,
    case: &str,
    variant: &str,
    agent: &str,
    answer: &Value,
) -> Result<Rule, String> {
    let (_, system) = GEN_AGENTS
        .iter()
        .find(|(a, _)| *a == agent)
        .ok_or_else(|| format!("{case}/{variant}: no agent `{agent}` in the workflow"))?;
    let key = format!("{case}/{variant}/{agent}");
    Ok(turns_rule(variant, system, &[task], key, answer))
}

/// The rule answering requests to `model` whose system prompt contains
/// `system` and whose prompt contains every marker with `answer`; a list
/// of answers is served turn by turn (`key` makes the answers' ids).
fn turns_rule(model: &str, system: &str, markers: &[&str], key: String, answer: &Value) -> Rule {
    let turns: Vec<Value> = match answer {
        Value::Array(turns) => turns.clone(),
        one => vec![one.clone()],
    };
    let anthropic = model.starts_with("claude");
    let when = markers.iter().fold(
        Rule::when().model(model).system_contains(system),
        |when, marker| when.prompt_contains(*marker),
    );
    when.then_with(move |request| {
        let n = turn(request).min(turns.len().saturating_sub(1));
        let reply = &turns[n];
        let text = reply.to_string();
        let answer = gen_answer(reply).usage(
            tokens(&String::from_utf8_lossy(&request.body)),
            tokens(&text),
        );
        shaped(answer, anthropic, &tag(&format!("{key}/{n}")))
    })
}

/// The code generation rules: the dataset gives each case's task.
fn gen_rules(answers: &Answers, dataset: &Value) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for case in dataset["cases"].as_array().into_iter().flatten() {
        let (Some(id), Some(task)) = (case["id"].as_str(), case["input"]["task"].as_str()) else {
            continue;
        };
        for (variant, agents) in answers.get(id).into_iter().flatten() {
            for (agent, answer) in agents {
                rules.push(gen_rule(task, id, variant, agent, answer)?);
            }
        }
    }
    Ok(rules)
}

/// The refactoring agents, told by their system prompts.
const REFACTOR_AGENTS: &[(&str, &str)] = &[
    ("analyst", refactoring::prompts::ANALYST),
    ("planner", refactoring::prompts::PLANNER),
    ("refactorer", refactoring::prompts::REFACTORER),
    ("verifier", refactoring::prompts::VERIFIER),
];

/// The prompt variants of the debugging eval and the verifier fork eval:
/// variant, model, the agent whose prompt differs and that prompt.
const PROMPT_VARIANTS: &[(&str, &str, &str, &str)] = &[
    (
        "prompt-v1",
        "claude-sonnet-4-5",
        "debugger",
        debugging::prompts::DEBUGGER,
    ),
    (
        "prompt-v2",
        "claude-sonnet-4-5",
        "debugger",
        debugging::prompts::DEBUGGER_EVIDENCE,
    ),
];

/// The verifier fork eval's variant answered from its own answers file
/// (its prompt-v1 is the refactoring eval's verifier, answered from there).
const FORK_VARIANTS: &[(&str, &str, &str, &str)] = &[(
    "prompt-v2",
    "gpt-4o-mini",
    "verifier",
    refactoring::prompts::VERIFIER_STRICT,
)];

/// The cases of `dataset` with the text of their input's `field`.
fn cases_by<'a>(dataset: &'a Value, field: &str) -> Vec<(&'a str, &'a str)> {
    dataset["cases"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| Some((c["id"].as_str()?, c["input"][field].as_str()?)))
        .collect()
}

/// The refactoring rules: variants are models, cases told by their task.
fn refactor_rules(answers: &Answers, dataset: &Value) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for (case, task) in cases_by(dataset, "task") {
        for (variant, agents) in answers.get(case).into_iter().flatten() {
            for (agent, answer) in agents {
                let (_, system) = REFACTOR_AGENTS
                    .iter()
                    .find(|(a, _)| a == agent)
                    .ok_or_else(|| format!("{case}/{variant}: no agent `{agent}`"))?;
                let key = format!("refactoring/{case}/{variant}/{agent}");
                rules.push(turns_rule(variant, system, &[task], key, answer));
            }
        }
    }
    Ok(rules)
}

/// Rules for variants that differ in one agent's prompt (`variants`),
/// cases told by their input's `field` (its first line). The other agents
/// share their prompt across variants, so each is also told by the
/// variant's own answer it is given: `follows` names, per agent, the
/// agent and field of the structured answer its prompt quotes.
fn prompt_variant_rules(
    variants: &[(&str, &str, &str, &str)],
    shared: &[(&str, &str)],
    follows: &[(&str, &str, &str)],
    (answers, dataset, field): (&Answers, &Value, &str),
) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for (case, text) in cases_by(dataset, field) {
        let marker = text.lines().next().unwrap_or(text);
        for (variant, model, varied, system) in variants {
            let agents = answers.get(case).and_then(|v| v.get(*variant));
            for (agent, answer) in agents.into_iter().flatten() {
                let key = format!("{case}/{variant}/{agent}");
                if agent == varied {
                    rules.push(turns_rule(model, system, &[marker], key, answer));
                    continue;
                }
                let (_, system) = shared
                    .iter()
                    .find(|(a, _)| a == agent)
                    .ok_or_else(|| format!("{case}/{variant}: no agent `{agent}`"))?;
                let (_, from, quoted) = follows
                    .iter()
                    .find(|(a, _, _)| a == agent)
                    .ok_or_else(|| format!("{case}/{variant}: `{agent}` follows no answer"))?;
                let quote = agents
                    .and_then(|a| a.get(*from))
                    .and_then(|a| a.as_array()?.last()?[*quoted].as_str())
                    .ok_or_else(|| format!("{case}/{variant}: no `{from}` answer with {quoted}"))?;
                rules.push(turns_rule(model, system, &[marker, quote], key, answer));
            }
        }
    }
    Ok(rules)
}

/// The rules of the refactoring, debugging and verifier fork evals.
fn more_rules(root: &str) -> Result<Vec<Rule>, Box<dyn std::error::Error>> {
    let refactor: Value = load(root, "evals/refactoring.yaml")?;
    let mut rules = refactor_rules(&load(root, "evals/answers/refactoring.yaml")?, &refactor)?;
    let shared = [("fixer", debugging::prompts::FIXER)];
    let follows = [("fixer", "debugger", "rootCause")];
    let debug: Value = load(root, "evals/debugging.yaml")?;
    let debug_answers: Answers = load(root, "evals/answers/debugging.yaml")?;
    let source = (&debug_answers, &debug, "error");
    rules.extend(prompt_variant_rules(
        PROMPT_VARIANTS,
        &shared,
        &follows,
        source,
    )?);
    let fork: Value = load(root, "evals/refactoring-verifier.yaml")?;
    let fork_answers: Answers = load(root, "evals/answers/refactoring-verifier.yaml")?;
    let source = (&fork_answers, &fork, "task");
    rules.extend(prompt_variant_rules(FORK_VARIANTS, &[], &[], source)?);
    Ok(rules)
}

/// A YAML file of the repository, parsed.
fn load<T: serde::de::DeserializeOwned>(
    root: &str,
    path: &str,
) -> Result<T, Box<dyn std::error::Error>> {
    let source = std::fs::read_to_string(format!("{root}/{path}"))?;
    Ok(serde_saphyr::from_str(&source)?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = env!("CARGO_MANIFEST_DIR");
    let answers: Answers = load(root, "evals/answers/code-review.yaml")?;
    let gen_answers: Answers = load(root, "evals/answers/code-generation.yaml")?;
    let gen_dataset: Value = load(root, "evals/code-generation.yaml")?;
    let server = FakeProvider::builder()
        .rules(rules(&answers))
        .rules(gen_rules(&gen_answers, &gen_dataset)?)
        .rules(more_rules(root)?)
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
