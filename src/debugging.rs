//! A debugging workflow (seed 003, Example 4): a debugger reads the failing
//! test's error and the project's files with `Read` and `Grep` tools and
//! diagnoses the root cause (`diagnosis:complete`); a fixer then proposes
//! the fix with an `Edit` tool (`fix:proposed`). The files are a small
//! tree kept in the state: no real file system is read or written.

use std::sync::Arc;

use scaffold::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::file_tools::{self, Files, HasFiles};

/// The debugger's structured answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Diagnosis {
    /// The kind of bug, one word: null, async, imports, logic, ...
    pub category: String,
    /// What causes the failure, in a sentence.
    pub root_cause: String,
    /// The file to fix.
    pub file: String,
}

/// The workflow's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DebugState {
    /// The failing test's error, as the test runner printed it.
    pub error: String,
    /// The failing test's file, if known.
    pub test_file: Option<String>,
    /// The source file under test, if known.
    pub source_file: Option<String>,
    /// The project's files, by path, as the fixer left them.
    pub files: Files,
    /// The debugger's diagnosis.
    pub diagnosis: Option<Diagnosis>,
    /// The fixer's explanation of its fix.
    pub fix: Option<String>,
}

impl HasFiles for DebugState {
    fn files(&self) -> &Files {
        &self.files
    }

    fn files_mut(&mut self) -> &mut Files {
        &mut self.files
    }
}

impl DebugState {
    /// The error, the files named by the failing run and the project's paths.
    fn context(&self) -> String {
        let mut text = format!("Error:\n{}\n", self.error);
        if let Some(test) = &self.test_file {
            text.push_str(&format!("Test file: {test}\n"));
        }
        if let Some(source) = &self.source_file {
            text.push_str(&format!("Source file: {source}\n"));
        }
        let paths: Vec<&str> = self.files.keys().map(String::as_str).collect();
        text.push_str(&format!("Project files: {}", paths.join(", ")));
        text
    }
}

/// The system prompts, which the recorder also uses to tell agents apart.
pub mod prompts {
    /// The debugger's, version 1: find the bug.
    pub const DEBUGGER: &str = "You are a debugger. Find the root cause of the failing test \
        using the Read and Grep tools.";
    /// The debugger's, version 2: gather the evidence first, then classify.
    pub const DEBUGGER_EVIDENCE: &str = "You are a methodical debugger. Before diagnosing, read \
        the failing test and the code it calls (Read), and search for every definition and use \
        of the symbols in the error (Grep). Then name the root cause and its category.";
    /// The fixer's.
    pub const FIXER: &str = "You fix the diagnosed bug with the smallest change, using the Edit \
        tool, then explain the fix in one paragraph.";
}

fn debugger(system: &'static str) -> Agent<DebugState> {
    Agent::new("debugger")
        .system(system)
        .prompt(DebugState::context)
        .tool(file_tools::read_tool())
        .tool(file_tools::grep_tool())
        .output(|d: Diagnosis, s: &mut DebugState| s.diagnosis = Some(d))
        .temperature(0.0)
        .max_tokens(1024)
        .emits_with(
            "diagnosis:complete",
            |s: &DebugState| json!({"category": s.diagnosis.as_ref().map(|d| d.category.clone())}),
        )
}

fn fixer() -> Agent<DebugState> {
    Agent::new("fixer")
        .system(prompts::FIXER)
        .when_because(|s: &DebugState| s.diagnosis.is_some(), "no diagnosis")
        .prompt(|s: &DebugState| {
            let d = s.diagnosis.clone().unwrap_or_default();
            format!(
                "{}\nDiagnosis ({}): {}\nFile to fix: {}",
                s.context(),
                d.category,
                d.root_cause,
                d.file
            )
        })
        .tool(file_tools::read_tool())
        .tool(file_tools::edit_tool())
        .update(|text, s| s.fix = Some(text))
        .temperature(0.0)
        .max_tokens(2048)
        .emits("fix:proposed")
}

/// The workflow with `model` for both agents and `debugger` as the
/// debugger's system prompt ([`prompts::DEBUGGER`] or
/// [`prompts::DEBUGGER_EVIDENCE`]).
pub fn workflow(model: Arc<dyn Provider>, debugger_prompt: &'static str) -> Workflow<DebugState> {
    let with = |agent: Agent<DebugState>| agent.provider_arc(model.clone());
    Workflow::new("debugging", DebugState::default())
        .start(|input: &Value, s: &mut DebugState| {
            let text = |key: &str| input[key].as_str().map(str::to_string);
            s.error = text("error").unwrap_or_default();
            s.test_file = text("testFile");
            s.source_file = text("sourceFile");
            s.files = file_tools::files_of(&input["files"]);
        })
        .phase(
            "diagnose",
            Phase::run(with(debugger(debugger_prompt))).next("fix"),
        )
        .phase("fix", Phase::run(with(fixer())).next("done"))
        .terminal("done")
        .max_activations(4)
        .output(|s| Value::String(output(s)))
}

/// What the user reads: the diagnosis and the fix.
fn output(s: &DebugState) -> String {
    let mut parts = Vec::new();
    if let Some(d) = &s.diagnosis {
        parts.push(format!(
            "Diagnosis ({}, {}): {}",
            d.category, d.file, d.root_cause
        ));
    }
    if let Some(fix) = &s.fix {
        parts.push(format!("Fix: {fix}"));
    }
    parts.join("\n\n")
}
