//! A multi-file refactoring workflow (seed 003, Example 3): an analyst
//! finds the files a refactoring touches, a planner orders the edits, a
//! refactorer makes them with `Edit` and `Write` tools over a small file
//! tree kept in the state, and a verifier checks the result.

use std::sync::Arc;

use scaffold::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::file_tools::{self, Files, HasFiles};

/// The analyst's structured answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Analysis {
    /// Every file the refactoring must change or create, by path.
    pub affected_files: Vec<String>,
    /// One paragraph: what changes and why.
    pub summary: String,
}

/// The planner's structured answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RefactorPlan {
    /// The edits, in order, one line each.
    pub steps: Vec<String>,
}

/// The verifier's structured answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Verification {
    /// Whether the refactoring is complete and correct.
    pub passed: bool,
    /// What is still wrong, one line each; empty when it passed.
    pub issues: Vec<String>,
    /// One-paragraph verdict.
    pub summary: String,
}

/// The workflow's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefactorState {
    /// The refactoring asked for.
    pub task: String,
    /// The project's files, by path, as the refactorer left them.
    pub files: Files,
    /// The analyst's findings.
    pub analysis: Option<Analysis>,
    /// The planner's steps.
    pub plan: Option<RefactorPlan>,
    /// The files `Edit` and `Write` changed, in the order first changed.
    pub files_modified: Vec<String>,
    /// The refactorer's closing words.
    pub summary: Option<String>,
    /// The verifier's verdict.
    pub verification: Option<Verification>,
}

impl HasFiles for RefactorState {
    fn files(&self) -> &Files {
        &self.files
    }

    fn files_mut(&mut self) -> &mut Files {
        &mut self.files
    }

    fn modified(&mut self, path: &str) {
        if !self.files_modified.iter().any(|p| p == path) {
            self.files_modified.push(path.to_string());
        }
    }
}

impl RefactorState {
    /// The files, each headed by its path.
    fn listing(&self) -> String {
        self.files
            .iter()
            .map(|(path, content)| format!("// {path}\n{content}\n"))
            .collect()
    }
}

/// The system prompts, which the recorder also uses to tell agents apart.
pub mod prompts {
    /// The analyst's.
    pub const ANALYST: &str = "You analyse a codebase before a refactoring: list every file \
        the refactoring must change or create.";
    /// The planner's.
    pub const PLANNER: &str = "You plan a refactoring as an ordered list of file edits.";
    /// The refactorer's.
    pub const REFACTORER: &str = "You carry out a refactoring: change files with the Edit tool \
        (exact text, once) and create files with the Write tool. End with a summary naming \
        every file you changed.";
    /// The verifier's, version 1: checks that the task was done.
    pub const VERIFIER: &str = "You verify a refactoring: say whether the task was done.";
    /// The verifier's, version 2: checks every file for what the task
    /// should have removed, naming each file still wrong.
    pub const VERIFIER_STRICT: &str = "You are a strict refactoring checker. Go through every \
        file, test files included, for any remaining use of what the task renamed, moved or \
        extracted; fail the refactoring naming each file that still has one.";
}

fn analyst() -> Agent<RefactorState> {
    Agent::new("analyst")
        .system(prompts::ANALYST)
        .prompt(|s: &RefactorState| format!("Task: {}\nFiles:\n{}", s.task, s.listing()))
        .output(|a: Analysis, s: &mut RefactorState| s.analysis = Some(a))
        .temperature(0.0)
        .max_tokens(1024)
        .emits_with("analysis:complete", |s: &RefactorState| {
            let files = s.analysis.as_ref().map_or(0, |a| a.affected_files.len());
            json!({"affectedFiles": files})
        })
}

fn planner() -> Agent<RefactorState> {
    Agent::new("planner")
        .system(prompts::PLANNER)
        .prompt(|s: &RefactorState| {
            let analysis = s.analysis.clone().unwrap_or_default();
            format!(
                "Task: {}\nAffected files: {}\n{}",
                s.task,
                analysis.affected_files.join(", "),
                analysis.summary
            )
        })
        .output(|p: RefactorPlan, s: &mut RefactorState| s.plan = Some(p))
        .temperature(0.0)
        .max_tokens(1024)
        .emits_with(
            "plan:complete",
            |s: &RefactorState| json!({"steps": s.plan.as_ref().map_or(0, |p| p.steps.len())}),
        )
}

fn refactorer() -> Agent<RefactorState> {
    Agent::new("refactorer")
        .system(prompts::REFACTORER)
        .prompt(|s: &RefactorState| {
            let steps = s.plan.as_ref().map_or(&[][..], |p| p.steps.as_slice());
            let plan: Vec<String> = steps
                .iter()
                .enumerate()
                .map(|(i, step)| format!("{}. {step}", i + 1))
                .collect();
            format!(
                "Task: {}\nPlan:\n{}\nFiles:\n{}",
                s.task,
                plan.join("\n"),
                s.listing()
            )
        })
        .tool(file_tools::edit_tool())
        .tool(file_tools::write_tool())
        .update(|text, s| s.summary = Some(text))
        .temperature(0.0)
        .max_tokens(4096)
        .emits_with(
            "refactor:complete",
            |s: &RefactorState| json!({"filesModified": s.files_modified}),
        )
}

fn verifier(system: &'static str) -> Agent<RefactorState> {
    Agent::new("verifier")
        .system(system)
        .prompt(|s: &RefactorState| {
            format!(
                "Task: {}\nFiles changed: {}\nFiles now:\n{}",
                s.task,
                s.files_modified.join(", "),
                s.listing()
            )
        })
        .output(|v: Verification, s: &mut RefactorState| s.verification = Some(v))
        .temperature(0.0)
        .max_tokens(1024)
        .emits_with("verification:complete", |s: &RefactorState| {
            json!({"passed": s.verification.as_ref().is_some_and(|v| v.passed)})
        })
}

/// The workflow with `model` for every agent and the version 1 verifier.
pub fn with_model(model: impl Provider + 'static) -> Workflow<RefactorState> {
    workflow(Arc::new(model), prompts::VERIFIER)
}

/// The workflow with `model` for every agent and `verifier` as the
/// verifier's system prompt ([`prompts::VERIFIER`] or
/// [`prompts::VERIFIER_STRICT`]).
pub fn workflow(
    model: Arc<dyn Provider>,
    verifier_prompt: &'static str,
) -> Workflow<RefactorState> {
    let with = |agent: Agent<RefactorState>| agent.provider_arc(model.clone());
    Workflow::new("refactoring", RefactorState::default())
        .start(|input: &Value, s: &mut RefactorState| {
            s.task = input["task"].as_str().unwrap_or_default().to_string();
            s.files = file_tools::files_of(&input["files"]);
        })
        .phase("analysis", Phase::run(with(analyst())).next("plan"))
        .phase("plan", Phase::run(with(planner())).next("refactor"))
        .phase(
            "refactor",
            Phase::run(with(refactorer())).next("verification"),
        )
        .phase(
            "verification",
            Phase::run(with(verifier(verifier_prompt))).next("done"),
        )
        .terminal("done")
        .max_activations(8)
        .output(|s| Value::String(output(s)))
}

/// What the user reads: the refactorer's summary, the files it changed and
/// the verifier's verdict.
fn output(s: &RefactorState) -> String {
    let mut parts = Vec::new();
    if let Some(summary) = &s.summary {
        parts.push(summary.clone());
    }
    if !s.files_modified.is_empty() {
        parts.push(format!("Files modified: {}", s.files_modified.join(", ")));
    }
    if let Some(v) = &s.verification {
        let verdict = if v.passed { "passed" } else { "failed" };
        let mut text = format!("Verification {verdict}: {}", v.summary);
        for issue in &v.issues {
            text.push_str(&format!("\n- {issue}"));
        }
        parts.push(text);
    }
    parts.join("\n\n")
}
