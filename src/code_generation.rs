//! A four-agent code generation workflow (seed 003, Example 2): a planner
//! plans the task (or finds it infeasible, or too vague), a coder writes
//! the files with a `Write` tool and may run commands with a `Bash` tool,
//! a tester writes unit tests with `Write` and runs them with `RunTests`,
//! and a reviewer approves or not. A vague task goes to a clarifier
//! instead. [`scoring`] holds the example suite's scorers of it.

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
    /// Whether the code passes every one of them, as the tester says (the
    /// example suite's `tests-pass` scorer reads the test run's exit
    /// status instead: [`scoring::tests_pass`]).
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

/// The `RunTests` tool's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TestFiles {
    /// The test files to run, paths relative to the project root.
    pub files: Vec<String>,
}

impl HasFiles for CodeGenState {
    fn files(&self) -> &Files {
        &self.files
    }

    fn files_mut(&mut self) -> &mut Files {
        &mut self.files
    }
}

/// The tool's name for [`test_tool`].
pub const RUN_TESTS: &str = "RunTests";

/// The version of tsx that [`test_tool`] runs TypeScript with (`npx`
/// fetches it from the npm registry once, then from its cache).
pub const TSX: &str = "tsx@4.23.15";

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
    command_tool(
        "Bash",
        "Run a shell command in the project root (its files are those written so far)",
        root,
        Duration::from_secs(60),
        |c: BashCommand, _: &Files| Ok(vec!["sh".into(), "-c".into(), c.command]),
    )
}

/// `RunTests`: runs the given test files of the state under node's test
/// runner, TypeScript through [`TSX`], after `npm install` when the files
/// hold a `package.json`; a run whose exit status is not 0 is a tool
/// error. Not a shell: it runs only files the state holds, each passed as
/// an argument, never as shell text. Recorded as [`bash_tool`] is, and for
/// the same reasons; the example suite's `tests-pass` scorer reads its
/// results ([`scoring::tests_pass`]).
pub fn test_tool(root: PathBuf) -> Tool<CodeGenState> {
    command_tool(
        RUN_TESTS,
        "Run test files of the project (TypeScript or JavaScript, node:test) with node's test \
         runner; installs package.json's dependencies first if there is one",
        root,
        Duration::from_secs(180),
        |t: TestFiles, files: &Files| {
            if t.files.is_empty() {
                return Err("no test file given".to_string());
            }
            if let Some(unknown) = t.files.iter().find(|f| !files.contains_key(f.as_str())) {
                let known: Vec<&str> = files.keys().map(String::as_str).collect();
                return Err(format!(
                    "no file `{unknown}` (the files are: {})",
                    known.join(", ")
                ));
            }
            let script = format!(
                "if [ -f package.json ]; then \
                 npm install --silent --no-audit --no-fund --no-package-lock || exit; fi; \
                 exec npx --yes {TSX} --test --test-reporter=spec \"$@\""
            );
            let mut argv = vec!["sh".into(), "-c".into(), script, "sh".into()];
            // `./` first: a file named like an option stays a file.
            argv.extend(t.files.iter().map(|f| format!("./{f}")));
            Ok(argv)
        },
    )
}

/// A recorded tool that writes the state's files into a fresh directory
/// under `root` and runs the program `argv(args, files)` there, off the
/// runtime's threads (see [`bash_tool`]).
fn command_tool<A>(
    name: &str,
    description: &str,
    root: PathBuf,
    timeout: Duration,
    argv: impl Fn(A, &Files) -> Result<Vec<String>, String> + Send + Sync + 'static,
) -> Tool<CodeGenState>
where
    A: serde::de::DeserializeOwned + JsonSchema + Send + 'static,
{
    let argv = Arc::new(argv);
    Tool::stateful(
        name,
        description,
        move |args: A, ctx: ToolContext<CodeGenState>| {
            let dir = root.join(format!("{}-{}", std::process::id(), ctx.call_id()));
            let files = ctx.read(|s| s.files.clone());
            let argv = argv.clone();
            async move {
                let argv = argv(args, &files)?;
                tokio::task::spawn_blocking(move || {
                    let out = run_in(&dir, &files, &argv);
                    let _ = std::fs::remove_dir_all(&dir);
                    out
                })
                .await
                .map_err(|e| e.to_string())?
            }
        },
    )
    .timeout(timeout)
    .recorded()
}

/// `argv` run in `dir` holding `files`: its output, or its exit status and
/// output. The directory's path is cut from the output (paths are the
/// project's, relative to its root, on any machine); a file whose path
/// would leave the directory is refused.
fn run_in(dir: &Path, files: &BTreeMap<String, String>, argv: &[String]) -> Result<String, String> {
    let (program, args) = argv.split_first().ok_or("no command")?;
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    for (path, content) in files {
        let relative = Path::new(path);
        if !relative
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
        {
            return Err(format!("`{path}` is not a path inside the project"));
        }
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        std::fs::write(&path, content).map_err(|e| e.to_string())?;
    }
    let out = std::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| e.to_string())?;
    let root = dir.display().to_string();
    let relative = |bytes: &[u8]| {
        String::from_utf8_lossy(bytes)
            .replace(&format!("{root}/"), "")
            .replace(&root, ".")
    };
    let stdout = relative(&out.stdout);
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!("{}: {stdout}{}", out.status, relative(&out.stderr)))
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
    pub const TESTER: &str = "You are a tester. Write unit tests for the code (node:test) with the \
        Write tool, run them with the RunTests tool, then report what the run showed.";
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

fn tester(root: PathBuf) -> Agent<CodeGenState> {
    Agent::new("tester")
        .system(prompts::TESTER)
        .when_because(
            |s: &CodeGenState| !s.files.is_empty(),
            "no code was written",
        )
        .prompt(|s: &CodeGenState| format!("Task: {}\nCode:\n```\n{}```", s.task, s.listing()))
        .tool(file_tools::write_tool())
        .tool(test_tool(root))
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

/// The workflow with one model for every agent; `Bash` and `RunTests` run
/// their commands under the system's temporary directory.
pub fn with_model(model: impl Provider + 'static) -> Workflow<CodeGenState> {
    workflow(
        Arc::new(model),
        std::env::temp_dir().join("scaffold-codegen"),
    )
}

/// The workflow with `model` for every agent, `Bash` and `RunTests`
/// running their commands in fresh directories under `bash_root`.
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
        .phase(
            "code",
            Phase::run(with(coder(bash_root.clone()))).next("test"),
        )
        .phase("test", Phase::run(with(tester(bash_root))).next("review"))
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

/// The example suite's scorers of the workflow. Each judges a cell
/// against what its case expects, the input's `expect` (a planner's
/// [`Verdict`]: `feasible` when the task should be coded, `infeasible` or
/// `ambiguous` when no code should be written; the workflow does not read
/// it), so a case that should get no code scores 1 only when none was
/// written, and a case that should get code scores 1 only for what was
/// really done with it.
pub mod scoring {
    use scaffold::prelude::*;
    use scaffold::signal::Signal;
    use serde_json::Value;

    use super::{CodeGenState, RUN_TESTS, Verdict};

    /// What the case expects, by its input's `expect`.
    fn expected(ctx: &ScorerContext<'_, CodeGenState>) -> Result<Verdict, String> {
        let expect = ctx.input.map_or(&Value::Null, |i| &i["expect"]);
        serde_json::from_value(expect.clone()).map_err(|_| {
            format!("the case does not say what it expects (input.expect: feasible, infeasible or ambiguous; got {expect})")
        })
    }

    /// A case that expects no code: right when none was written.
    fn no_code(s: &CodeGenState, verdict: Verdict) -> CustomScore {
        let task = serde_json::to_value(verdict).unwrap_or_default();
        let task = task.as_str().unwrap_or_default();
        if s.files.is_empty() {
            CustomScore::from(true)
                .detail(format!("no code, as the case expects: the task is {task}"))
        } else {
            CustomScore::from(false).detail(format!(
                "the task is {task}, yet {} file(s) were written",
                s.files.len()
            ))
        }
    }

    /// The last `RunTests` result: whether it was an error, and its text.
    fn last_test_run(signals: &[Signal]) -> Option<(bool, &str)> {
        signals
            .iter()
            .rev()
            .filter(|s| s.name == "tool:result" && s.payload["name"] == RUN_TESTS)
            .map(|s| {
                let p = &s.payload;
                (
                    p["isError"] == true,
                    p["result"].as_str().unwrap_or_default(),
                )
            })
            .next()
    }

    /// The test runner's counts (`ℹ tests 3`, `ℹ pass 2`, `ℹ fail 1`), or
    /// the output's first line when it printed none.
    fn counts(output: &str) -> String {
        let count = |what: &str| {
            output.lines().find_map(|l| {
                l.strip_prefix(&format!("ℹ {what} "))?
                    .trim()
                    .parse::<u32>()
                    .ok()
            })
        };
        match (count("tests"), count("pass"), count("fail")) {
            (Some(tests), Some(pass), Some(fail)) => {
                format!("{tests} test(s), {pass} passed, {fail} failed")
            }
            _ => output
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(120)
                .collect(),
        }
    }

    /// `tests-pass`: the tester's tests ran and passed, by the exit status
    /// of the last `RunTests` run (a tool error when not 0), not by what
    /// the tester says; a case that expects no code passes when none was
    /// written.
    pub fn tests_pass(ctx: &ScorerContext<'_, CodeGenState>) -> CustomScore {
        let s = ctx.state;
        match expected(ctx) {
            Err(e) => CustomScore::from(false).detail(e),
            Ok(Verdict::Feasible) => match last_test_run(ctx.signals) {
                Some((false, out)) => CustomScore::from(true)
                    .detail(format!("the test run exited 0: {}", counts(out))),
                Some((true, out)) => {
                    // `exit status: 1: {output}`, or why the tool did not run.
                    let (status, out) = match out
                        .strip_prefix("exit status: ")
                        .and_then(|rest| rest.split_once(": "))
                    {
                        Some((code, out)) => (format!(" (exit status {code})"), out),
                        None => (String::new(), out),
                    };
                    CustomScore::from(false)
                        .detail(format!("the test run failed{status}: {}", counts(out)))
                }
                None if s.files.is_empty() => {
                    CustomScore::from(false).detail("no code was written, so none was tested")
                }
                None => CustomScore::from(false).detail("the tests were never run"),
            },
            Ok(verdict) => no_code(s, verdict),
        }
    }

    /// `approved`: the reviewer approved the code; a case that expects no
    /// code passes when none was written (and so none was reviewed).
    pub fn approved(ctx: &ScorerContext<'_, CodeGenState>) -> CustomScore {
        let s = ctx.state;
        match expected(ctx) {
            Err(e) => CustomScore::from(false).detail(e),
            Ok(Verdict::Feasible) => match &s.review {
                Some(r) => CustomScore::from(r.approved).detail(format!(
                    "{}: {}",
                    if r.approved {
                        "approved"
                    } else {
                        "not approved"
                    },
                    r.summary
                )),
                None if s.files.is_empty() => {
                    CustomScore::from(false).detail("no code was written, so none was reviewed")
                }
                None => CustomScore::from(false).detail("the code was not reviewed"),
            },
            Ok(verdict) => no_code(s, verdict),
        }
    }
}
