//! A four-agent code generation workflow (seed 003, Example 2): a planner
//! plans the task (or finds it infeasible, or too vague), a coder writes
//! the files with a `Write` tool and may run commands with a `Bash` tool,
//! a tester checks the code against test cases it designs, and a reviewer
//! approves or not. A vague task goes to a clarifier instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use scaffold::prelude::*;
use scaffold::workflow::{Tool, ToolContext};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::file_tools::{self, Files, HasFiles};

/// The planner's verdict on a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// It can be built: `steps` say how.
    #[default]
    Feasible,
    /// It cannot be built as asked: `reason` says why.
    Infeasible,
    /// It is too vague to plan: `reason` says what is missing.
    Ambiguous,
}

/// The planner's structured answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// Whether the task can be planned.
    pub verdict: Verdict,
    /// The steps, in order; empty unless feasible.
    pub steps: Vec<String>,
    /// Why the task is infeasible or ambiguous, or a one-line approach.
    pub reason: String,
}

/// What the coder produced.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Code {
    /// Every file written, each headed by its path.
    pub content: String,
    /// The coder's closing words.
    pub summary: String,
}

/// The tester's structured answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TestReport {
    /// The test cases, one line each.
    pub cases: Vec<String>,
    /// How many test cases there are.
    pub count: u32,
    /// Whether the code passes every one of them.
    pub passed: bool,
    /// One-paragraph summary.
    pub summary: String,
}

/// The reviewer's structured answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Review {
    /// Whether the code can be merged as it is.
    pub approved: bool,
    /// One-paragraph review.
    pub summary: String,
}

/// The workflow's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CodeGenState {
    /// What to build.
    pub task: String,
    /// In which language.
    pub language: String,
    /// The task's requirements, if any.
    pub requirements: Vec<String>,
    /// The framework to use, if any.
    pub framework: Option<String>,
    /// The planner's plan.
    pub plan: Option<Plan>,
    /// The files the coder wrote, by path.
    pub files: BTreeMap<String, String>,
    /// The code, once written.
    pub code: Option<Code>,
    /// The tester's report.
    pub tests: Option<TestReport>,
    /// The reviewer's verdict.
    pub review: Option<Review>,
    /// The question for the user when the task is too vague.
    pub clarification: Option<String>,
}

impl CodeGenState {
    fn verdict(&self) -> Option<Verdict> {
        self.plan.as_ref().map(|p| p.verdict)
    }

    fn feasible(&self) -> bool {
        self.verdict() == Some(Verdict::Feasible)
    }

    /// The files, each headed by its path.
    fn listing(&self) -> String {
        self.files
            .iter()
            .map(|(path, content)| format!("// {path}\n{content}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The `Bash` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BashCommand {
    /// The shell command to run in the project root.
    pub command: String,
}

impl HasFiles for CodeGenState {
    fn files(&self) -> &Files {
        &self.files
    }

    fn files_mut(&mut self) -> &mut Files {
        &mut self.files
    }
}

/// `Bash`: writes the state's files into a fresh directory under `root`
/// and runs a shell command there, off the runtime's threads.
///
/// It is `.recorded()`: a command's output depends on the machine (the
/// toolchain installed, timings in a test runner's report) and running it
/// takes far longer than the rest of a played-back cell, so record mode
/// runs it for real and keeps its output beside the provider recordings,
/// and playback answers from there without running anything. It only reads
/// the state (a recorded tool must not change it: playback would not).
pub fn bash_tool(root: PathBuf) -> Tool<CodeGenState> {
    Tool::stateful(
        "Bash",
        "Run a shell command in the project root (its files are those written so far)",
        move |c: BashCommand, ctx: ToolContext<CodeGenState>| {
            let dir = root.join(format!("{}-{}", std::process::id(), ctx.call_id()));
            let files = ctx.read(|s| s.files.clone());
            async move {
                tokio::task::spawn_blocking(move || {
                    let out = run_in(&dir, &files, &c.command);
                    let _ = std::fs::remove_dir_all(&dir);
                    out
                })
                .await
                .map_err(|e| e.to_string())?
            }
        },
    )
    .timeout(Duration::from_secs(60))
    .recorded()
}

/// `command` run by `sh` in `dir` holding `files`: its output, or its exit
/// status and standard error.
fn run_in(dir: &Path, files: &BTreeMap<String, String>, command: &str) -> Result<String, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    for (path, content) in files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        std::fs::write(&path, content).map_err(|e| e.to_string())?;
    }
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "{}: {stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The system prompts, which the recorder also uses to tell agents apart.
pub mod prompts {
    /// The planner's.
    pub const PLANNER: &str = "You are a software planner. Decide whether the task can be built: \
        feasible (list the steps), infeasible (say why) or ambiguous (say what is missing).";
    /// The clarifier's.
    pub const CLARIFIER: &str = "You ask the user for clarification: one short, specific question.";
    /// The coder's.
    pub const CODER: &str = "You are a coder. Write every file with the Write tool; \
        use Bash only to run commands such as tests. End with a one-paragraph summary.";
    /// The tester's.
    pub const TESTER: &str = "You are a tester. Design unit tests for the code and check the code \
        against each of them.";
    /// The reviewer's.
    pub const REVIEWER: &str = "You are a code reviewer. Approve the code only if it does the task \
        well and its tests pass.";
}

fn planner() -> Agent<CodeGenState> {
    Agent::new("planner")
        .system(prompts::PLANNER)
        .prompt(|s: &CodeGenState| {
            let mut prompt = format!("Task ({}): {}", s.language, s.task);
            if let Some(framework) = &s.framework {
                prompt.push_str(&format!("\nFramework: {framework}"));
            }
            for r in &s.requirements {
                prompt.push_str(&format!("\n- {r}"));
            }
            prompt
        })
        .output(|plan: Plan, s: &mut CodeGenState| s.plan = Some(plan))
        .temperature(0.0)
        .max_tokens(1024)
        .emits_with("plan:complete", |s: &CodeGenState| {
            let plan = s.plan.clone().unwrap_or_default();
            json!({"verdict": plan.verdict, "steps": plan.steps.len()})
        })
}

fn clarifier() -> Agent<CodeGenState> {
    Agent::new("clarifier")
        .system(prompts::CLARIFIER)
        .prompt(|s: &CodeGenState| {
            let reason = s.plan.as_ref().map_or("", |p| p.reason.as_str());
            format!("Task: {}\nWhat is missing: {reason}", s.task)
        })
        .update(|text, s| s.clarification = Some(text))
        .temperature(0.0)
        .max_tokens(256)
        .emits("clarification:needed")
}

fn coder(bash_root: PathBuf) -> Agent<CodeGenState> {
    Agent::new("coder")
        .system(prompts::CODER)
        .when_because(
            CodeGenState::feasible,
            "the planner found the task infeasible",
        )
        .prompt(|s: &CodeGenState| {
            let steps = s.plan.as_ref().map_or(&[][..], |p| p.steps.as_slice());
            format!(
                "Task ({}): {}\nPlan:\n{}",
                s.language,
                s.task,
                steps
                    .iter()
                    .enumerate()
                    .map(|(i, step)| format!("{}. {step}", i + 1))
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        })
        .tool(file_tools::write_tool())
        .tool(bash_tool(bash_root))
        .update(|text, s| {
            s.code = Some(Code {
                content: s.listing(),
                summary: text,
            })
        })
        .temperature(0.0)
        .max_tokens(4096)
        .emits_with("code:complete", |s| json!({"files": s.files.len()}))
}

fn tester() -> Agent<CodeGenState> {
    Agent::new("tester")
        .system(prompts::TESTER)
        .when_because(
            |s: &CodeGenState| !s.files.is_empty(),
            "no code was written",
        )
        .prompt(|s: &CodeGenState| format!("Task: {}\nCode:\n```\n{}```", s.task, s.listing()))
        .output(|report: TestReport, s: &mut CodeGenState| s.tests = Some(report))
        .temperature(0.0)
        .max_tokens(1024)
        .emits_with("tests:complete", |s: &CodeGenState| {
            let t = s.tests.clone().unwrap_or_default();
            json!({"count": t.count, "passed": t.passed})
        })
}

fn reviewer() -> Agent<CodeGenState> {
    Agent::new("reviewer")
        .system(prompts::REVIEWER)
        .when_because(
            |s: &CodeGenState| s.tests.is_some(),
            "the code was not tested",
        )
        .prompt(|s: &CodeGenState| {
            let tests = s
                .tests
                .as_ref()
                .map_or(String::new(), |t| t.summary.clone());
            format!(
                "Task: {}\nCode:\n```\n{}```\nTests: {tests}",
                s.task,
                s.listing()
            )
        })
        .output(|review: Review, s: &mut CodeGenState| s.review = Some(review))
        .temperature(0.0)
        .max_tokens(1024)
        .emits_with(
            "review:complete",
            |s: &CodeGenState| json!({"approved": s.review.as_ref().is_some_and(|r| r.approved)}),
        )
}

/// The workflow with one model for every agent; `Bash` runs its commands
/// under the system's temporary directory.
pub fn with_model(model: impl Provider + 'static) -> Workflow<CodeGenState> {
    workflow(
        Arc::new(model),
        std::env::temp_dir().join("scaffold-codegen"),
    )
}

/// The workflow with `model` for every agent, `Bash` running its commands
/// in fresh directories under `bash_root`.
pub fn workflow(model: Arc<dyn Provider>, bash_root: PathBuf) -> Workflow<CodeGenState> {
    let with = |agent: Agent<CodeGenState>| agent.provider_arc(model.clone());
    Workflow::new("code-generation", CodeGenState::default())
        .start(start)
        .phase(
            "plan",
            Phase::run(with(planner())).next_with(|s: &CodeGenState| {
                if s.verdict() == Some(Verdict::Ambiguous) {
                    "clarify"
                } else {
                    "code"
                }
            }),
        )
        .phase("clarify", Phase::run(with(clarifier())).next("done"))
        .phase("code", Phase::run(with(coder(bash_root))).next("test"))
        .phase("test", Phase::run(with(tester())).next("review"))
        .phase("review", Phase::run(with(reviewer())).next("done"))
        .terminal("done")
        .max_activations(10)
        .output(|s| Value::String(output(s)))
}

/// The state from a case's input.
fn start(input: &Value, s: &mut CodeGenState) {
    let text = |key: &str| input[key].as_str().map(str::to_string);
    s.task = text("task").unwrap_or_default();
    s.language = text("language").unwrap_or_else(|| "text".into());
    s.framework = text("framework");
    s.requirements = input["requirements"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
}

/// What the user reads: the plan's verdict, the question or the code, the
/// tests and the review.
fn output(s: &CodeGenState) -> String {
    let mut parts = Vec::new();
    if let Some(plan) = &s.plan {
        parts.push(plan.reason.clone());
    }
    if let Some(question) = &s.clarification {
        parts.push(question.clone());
    }
    if let Some(code) = &s.code {
        parts.push(code.summary.clone());
        parts.push(code.content.clone());
    }
    if let Some(tests) = &s.tests {
        parts.push(format!("Tests: {}", tests.summary));
    }
    if let Some(review) = &s.review {
        parts.push(format!("Review: {}", review.summary));
    }
    parts.join("\n\n")
}
