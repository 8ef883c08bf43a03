//! Re-records the example suite's cassettes from hand-written answers.
//!
//! `cargo run --example record_example_suite [-- FILTER]`
//!
//! Records what is missing or stale (`SCAFFOLD_RECORD=all` every call),
//! of the cells whose test name contains `FILTER` (all without one): the
//! command a playback failure names (`-- prompt-v1::sql-injection::t0`)
//! records that cell and writes no other file. A recording is written only
//! when its bytes change, and the fake server states realistic,
//! deterministic answer times (`SimulatedTiming`), so recording again
//! with nothing changed leaves every file as it was.
//!
//! Serves the answers of `evals/answers/code-review.yaml` from
//! [`FakeProvider`] rules (case by a line of its code, variant by the
//! reviewer's system prompt, the fixer by the finding it was given, the
//! judge by the output it grades), those of
//! `evals/answers/code-generation.yaml` (case by its task, the coder's and
//! the tester's turn by the answers they gave so far) and those of `refactoring.yaml`,
//! `debugging.yaml` and `refactoring-verifier.yaml` (case by its task or
//! error, a prompt variant by its system prompt), then runs `cargo test
//! --test evals` in record mode with the providers' base URLs pointed at it.
//! The code review eval's trials send the same requests, so its second and
//! third trials are recorded by runs of their own, each from a server with
//! that trial's answers; each run selects its cells by name (`--exact`,
//! skipping the others). The recorder writes `evals/recordings/*.json` (and insta the
//! snapshots) exactly as it would against the real APIs; the fake keys set
//! here never reach a file. The code generation eval's recorded tools run
//! for real: `Bash` its commands, `RunTests` the tests under node's test
//! runner with tsx (`npx` fetches it from the npm registry, once: the
//! recorder does so before the run, so the cells do not race for it).

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use scaffold::testing::{
    Answer, FakeProvider, FakeProviderServer, RecordedRequest, Rule, SimulatedTiming,
};
use scaffold_examples::code_generation as codegen;
use scaffold_examples::code_review as review;
use scaffold_examples::{debugging, refactoring};
use serde_json::Value;

type Answers = BTreeMap<String, BTreeMap<String, BTreeMap<String, Value>>>;

/// The case a request is about, told by a line of its code.
const CASE_MARKERS: &[(&str, &str)] = &[
    ("SELECT * FROM users WHERE id = ${userId}", "sql-injection"),
    ("innerHTML = comment.text", "xss-vulnerability"),
    ("req.params.filename", "path-traversal"),
    ("return sum / numbers.length;", "division-by-zero"),
    ("db.findUser(userId)", "null-dereference"),
    ("const current = counter;", "race-condition"),
    ("const unused = 42;", "unused-variable"),
    ("return price * 0.95;", "magic-numbers"),
    ("Promise<User | null>", "clean-code-no-issues"),
    ("// TODO: implement", "empty-function"),
    ("import { Db } from './db';", "very-long-file"),
];

/// The code review variants, told by the reviewer's system prompt; both run
/// this model.
const REVIEW_VARIANTS: &[(&str, &str)] = &[
    ("prompt-v1", review::prompts::REVIEWER_V1),
    ("prompt-v2", review::prompts::REVIEWER_V2),
];
const REVIEW_MODEL: &str = "gpt-4o";

/// The code review eval's trials (its `Eval::trials`): the first is recorded
/// with the whole suite, each other one by a run of its own (`::t{n}`), as
/// their requests are the same and only the answers differ.
const REVIEW_TRIALS: u32 = 3;

/// The judge's system prompt, as `llm.judge` sends it.
const JUDGE_SYSTEM: &str = "You are an impartial evaluator.";

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

/// The rule's answer: `answers` served one per matching request, in order
/// (the last one again after that), with usage and the API's ids.
fn answering(
    answers: Vec<Value>,
    anthropic: bool,
    key: String,
) -> impl Fn(&RecordedRequest) -> Answer {
    let served = AtomicUsize::new(0);
    move |request| {
        let n = served.fetch_add(1, Ordering::SeqCst).min(answers.len() - 1);
        let answer = match &answers[n] {
            Value::String(s) => Answer::text(s.clone()),
            other => Answer::structured(other.clone()),
        };
        let text = answers[n].to_string();
        let answer = answer.usage(
            tokens(&String::from_utf8_lossy(&request.body)),
            tokens(&text),
        );
        shaped(answer, anthropic, &tag(&format!("{key}/{n}")))
    }
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

/// The line of the fixer's prompt that quotes a review's first finding
/// (see `src/code_review.rs`): it tells the variants' fixer calls apart.
fn first_finding(review: &Value) -> Option<String> {
    let f = review["findings"].get(0)?;
    let field = |k: &str| f[k].as_str().unwrap_or_default().to_string();
    Some(format!(
        "- {} ({}): {}",
        field("issue"),
        field("severity"),
        field("explanation")
    ))
}

/// Whether `key` names a trial's answers (`t1`), not an agent's.
fn is_trial(key: &str) -> bool {
    key.strip_prefix('t')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// One variant's answers in trial `trial`: its own, with those of its
/// `t{trial}` entry instead where it has one.
fn in_trial(agents: &BTreeMap<String, Value>, trial: u32) -> BTreeMap<String, Value> {
    let mut chosen: BTreeMap<String, Value> = agents
        .iter()
        .filter(|(k, _)| !is_trial(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(Value::Object(overrides)) = agents.get(&format!("t{trial}")) {
        chosen.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    chosen
}

/// The rules of the code review workflow's calls in trial `trial`: the
/// reviewer by its variant's prompt and the case, the fixer by the case and
/// the finding it was given.
fn rules(answers: &Answers, trial: u32) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for (marker, case) in CASE_MARKERS {
        for (variant, agents) in answers.get(*case).into_iter().flatten() {
            let (_, system) = REVIEW_VARIANTS
                .iter()
                .find(|(v, _)| v == variant)
                .ok_or_else(|| format!("{case}: no variant `{variant}` in the suite"))?;
            let agents = in_trial(agents, trial);
            let key = format!("{case}/{variant}/t{trial}");
            let Some(review) = agents.get("reviewer") else {
                return Err(format!("{case}/{variant}: no reviewer answer"));
            };
            rules.push(
                Rule::when()
                    .model(REVIEW_MODEL)
                    .system_contains(*system)
                    .prompt_contains(*marker)
                    .then_with(answering(
                        vec![review.clone()],
                        false,
                        format!("{key}/reviewer"),
                    )),
            );
            if let (Some(fix), Some(finding)) = (agents.get("fixer"), first_finding(review)) {
                rules.push(
                    Rule::when()
                        .model(REVIEW_MODEL)
                        .system_contains(review::prompts::FIXER)
                        .prompt_contains(*marker)
                        .prompt_contains(finding)
                        .then_with(answering(vec![fix.clone()], false, format!("{key}/fixer"))),
                );
            }
        }
    }
    Ok(rules)
}

/// The judge's rules: by the case's output (prompt v2's summary opens it),
/// the scorer's calls (they quote its rubric) before the assertion's.
fn judge_rules(answers: &Answers) -> Vec<Rule> {
    let mut scorer_rules = Vec::new();
    let mut assertion_rules = Vec::new();
    for (case, kinds) in answers.get("judge").into_iter().flatten() {
        let summary = answers
            .get(case)
            .and_then(|v| v.get("prompt-v2"))
            .and_then(|a| a.get("reviewer"))
            .and_then(|r| r["summary"].as_str())
            .unwrap_or_default()
            .to_string();
        let asks = |kind: &str| match kinds.get(kind) {
            Some(Value::Array(list)) => list.clone(),
            Some(one) => vec![one.clone()],
            None => Vec::new(),
        };
        let when = || {
            Rule::when()
                .model("claude-sonnet-4-5")
                .system_contains(JUDGE_SYSTEM)
                .prompt_contains(summary.clone())
        };
        let (scorer, assertion) = (asks("scorer"), asks("assertion"));
        if !scorer.is_empty() {
            let key = format!("{case}/judge/scorer");
            scorer_rules.push(
                when()
                    .prompt_contains(review::judging::RUBRIC)
                    .then_with(answering(scorer, true, key)),
            );
        }
        if !assertion.is_empty() {
            let key = format!("{case}/judge/assertion");
            assertion_rules.push(when().then_with(answering(assertion, true, key)));
        }
    }
    scorer_rules.extend(assertion_rules);
    scorer_rules
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

/// Runs `cargo test --test evals -- {selection}` in record mode against
/// `server`, and fails if a cell's run errored: a call no rule answered, a
/// tool that failed. Failed checks are expected (the weaker variants fail
/// some), so the exit status alone does not tell.
fn record(
    root: &str,
    server: &FakeProviderServer,
    run: &str,
    selection: &[String],
) -> Result<(), Box<dyn std::error::Error>> {
    let output =
        std::env::temp_dir().join(format!("record-example-suite-{}-{run}", std::process::id()));
    // Without the variables `cargo run` set for this example: a rebuild of
    // the dependencies at every switch between recording and playback.
    let mut command = scaffold::_cargo_scaffold_support::nested_cargo();
    command
        .current_dir(root)
        .args(["test", "--test", "evals", "--"])
        .args(selection)
        .env("SCAFFOLD_MODE", "record")
        .env("SCAFFOLD_OUTPUT", &output)
        .env("SCAFFOLD_FORMAT", "table,json")
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("ANTHROPIC_BASE_URL", server.anthropic_base_url())
        .env("OPENAI_API_KEY", "sk-proj-recording-canary-0000")
        .env("ANTHROPIC_API_KEY", "sk-ant-recording-canary-0000")
        .env("INSTA_UPDATE", "always")
        .env("INSTA_FORCE_PASS", "1");
    let status = command.status()?;
    let mut written = 0;
    for entry in std::fs::read_dir(&output).map_err(|e| {
        format!(
            "recording run failed ({status}): no results in {}: {e}",
            output.display()
        )
    })? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        // The results document (`results-schema.md`): its cells' errors.
        let results: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
        written += 1;
        let cells = results["results"].as_array().into_iter().flatten();
        if let Some(cell) = cells.into_iter().find(|c| c["error"].is_string()) {
            return Err(format!(
                "recording run failed: {}::{}::{} errored: {}",
                results["eval"], cell["variant"], cell["case"], cell["error"]
            )
            .into());
        }
    }
    let _ = std::fs::remove_dir_all(&output);
    if written == 0 {
        return Err(format!("recording run failed ({status}): no results written").into());
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = env!("CARGO_MANIFEST_DIR");
    let filter = filter_argument()?;
    let tests = test_names(root)?;
    let names: Vec<String> = tests.iter().map(|(_, name)| name.clone()).collect();
    // The cells (not the evals' `[gate]` tests, which need no recording).
    let selected: Vec<&String> = tests
        .iter()
        .filter(|(kind, _)| kind == "eval")
        .map(|(_, name)| name)
        .filter(|name| filter.as_deref().is_none_or(|f| name.contains(f)))
        .collect();
    if selected.is_empty() {
        let filter = filter.unwrap_or_default();
        return Err(format!("no cell of the example suite matches `{filter}`").into());
    }
    if selected
        .iter()
        .any(|name| name.starts_with("code-generation::"))
    {
        fetch_test_runner()?;
    }
    let answers: Answers = load(root, "evals/answers/code-review.yaml")?;
    let gen_answers: Answers = load(root, "evals/answers/code-generation.yaml")?;
    let gen_dataset: Value = load(root, "evals/code-generation.yaml")?;
    // The code review eval's trials after the first are recorded by runs
    // of their own; every other selected cell by the first run.
    let runs: Vec<u32> = std::iter::once(0)
        .chain(1..trials().min(REVIEW_TRIALS))
        .collect();
    for run in runs {
        let cells: Vec<&String> = selected
            .iter()
            .copied()
            .filter(|name| review_trial_run(name) == run)
            .collect();
        if cells.is_empty() {
            continue;
        }
        let server = if run == 0 {
            FakeProvider::builder()
                .rules(rules(&answers, 0)?)
                .rules(judge_rules(&answers))
                .rules(gen_rules(&gen_answers, &gen_dataset)?)
                .rules(more_rules(root)?)
        } else {
            FakeProvider::builder().rules(rules(&answers, run)?)
        }
        .simulated_timing(SimulatedTiming::realistic())
        .start()
        .await?;
        // Exactly these cells: every other one skipped by its whole name.
        let mut selection = vec!["--exact".to_string()];
        for name in names.iter().filter(|n| !cells.contains(n)) {
            selection.extend(["--skip".to_string(), name.clone()]);
        }
        record(root, &server, &format!("t{run}"), &selection)?;
    }
    println!(
        "{} cell(s): what was missing or stale is recorded in {root}/evals/recordings",
        selected.len()
    );
    Ok(())
}

/// Brings the code generation workflow's test runner (tsx, through `npx`)
/// into npm's cache, so the cells' `RunTests` calls find it there.
fn fetch_test_runner() -> Result<(), String> {
    let output = Command::new("npx")
        .args(["--yes", codegen::TSX, "--version"])
        .output()
        .map_err(|e| format!("the code generation eval's tests run with npx (node ≥ 20): {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "npx could not fetch {} for the code generation eval's tests ({}):\n{}",
            codegen::TSX,
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

/// The test filter given after `--`, if any.
fn filter_argument() -> Result<Option<String>, String> {
    let mut args = std::env::args().skip(1);
    let filter = args.next();
    if let Some(arg) = filter.as_deref()
        && (arg.starts_with('-') || args.next().is_some())
    {
        return Err(format!(
            "usage: cargo run --example record_example_suite [-- FILTER] \
             (the cells whose test name contains FILTER; got `{arg}`)"
        ));
    }
    Ok(filter.filter(|f| !f.is_empty()))
}

/// The suite's tests (`cargo test --test evals -- --list`): each one's
/// kind (`eval` for a cell, `gate` for an eval's gate) and name.
fn test_names(root: &str) -> Result<Vec<(String, String)>, Box<dyn std::error::Error>> {
    let output = scaffold::_cargo_scaffold_support::nested_cargo()
        .current_dir(root)
        .args(["test", "--test", "evals", "--", "--list"])
        .env("SCAFFOLD_MODE", "record")
        .env("OPENAI_API_KEY", "sk-proj-recording-canary-0000")
        .env("ANTHROPIC_API_KEY", "sk-ant-recording-canary-0000")
        .output()?;
    if !output.status.success() {
        return Err(format!(
            "listing the suite's cells failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.strip_suffix(": test"))
        // `[eval] code-review::…`: `--exact` takes the name without it.
        .map(
            |line| match line.strip_prefix('[').and_then(|l| l.split_once("] ")) {
                Some((kind, name)) => (kind.to_string(), name.to_string()),
                None => ("eval".to_string(), line.to_string()),
            },
        )
        .collect())
}

/// The run that records cell `name`: the code review eval's trial `n` for
/// `n` from 1 (its answers differ), else the first (0).
fn review_trial_run(name: &str) -> u32 {
    let trial = name
        .strip_prefix("code-review::")
        .and_then(|rest| rest.rsplit_once("::t"))
        .and_then(|(_, n)| n.parse::<u32>().ok());
    match trial {
        Some(n) if n < trials().min(REVIEW_TRIALS) => n,
        _ => 0,
    }
}

/// The trials the suite runs: `SCAFFOLD_TRIALS`, else the code review eval's.
fn trials() -> u32 {
    std::env::var("SCAFFOLD_TRIALS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(REVIEW_TRIALS)
}
