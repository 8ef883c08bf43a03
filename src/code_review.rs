//! A two-agent code review workflow: a reviewer finds problems, a fixer
//! proposes a corrected version when there is something to fix. The
//! reviewer's instructions come in two versions ([`prompts`]), which the
//! example suite compares.

use std::sync::Arc;

use scaffold::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One problem the reviewer found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// Short name of the problem, e.g. "SQL injection".
    pub issue: String,
    /// `critical`, `high`, `medium` or `low`.
    pub severity: String,
    /// Why it is a problem and how to fix it.
    pub explanation: String,
}

/// The reviewer's structured answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReviewOutput {
    /// Problems found; empty when the code is fine.
    pub findings: Vec<Finding>,
    /// One-paragraph summary.
    pub summary: String,
}

/// The workflow's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReviewState {
    /// The code under review.
    pub code: String,
    /// Its language.
    pub language: String,
    /// What the reviewer found.
    pub findings: Vec<Finding>,
    /// The reviewer's summary.
    pub summary: String,
    /// The fixer's proposal.
    pub fix: Option<String>,
}

/// The agents' system prompts.
pub mod prompts {
    /// The reviewer, version 1: security only.
    pub const REVIEWER_V1: &str = "You are a senior security-minded code reviewer. \
        Report concrete problems only; an empty list when the code is fine.";
    /// The reviewer, version 2: security, correctness and maintainability.
    pub const REVIEWER_V2: &str = "You are a senior code reviewer. Check security \
        (injection, XSS, path traversal), correctness (null or undefined values, division \
        by zero, race conditions) and maintainability (unused code, magic numbers, \
        unfinished stubs). Report concrete problems only; an empty list when the code is fine.";
    /// The fixer.
    pub const FIXER: &str = "You fix code. Answer with an explanation and the corrected code.";
}

/// How the example suite's judge grades a fix (its `fix-quality` scorer).
pub mod judging {
    /// What the judge checks.
    pub const CRITERIA: [&str; 2] = [
        "the fix removes the problem the review found",
        "the explanation says why the original code was wrong",
    ];
    /// How it scores.
    pub const RUBRIC: &str = "1.0: a correct, minimal fix with a clear explanation. \
        0.7: correct, but the explanation is thin or a side effect of the change goes unmentioned. \
        0.4: the problem is only partly fixed. 0: the problem remains.";
}

/// The example suite's `fixed` scorer: every problem the case holds got a
/// fix, and clean code was left alone. What a case holds is what its
/// dataset says, the input's `problems` (the workflow reads only `code`
/// and `language`: the reviewer never sees them), so a reviewer that finds
/// nothing in code with a known bug scores 0: it fixed nothing.
///
/// A fix is the fixer's proposal, which runs only on findings; whether it
/// is right is for the case's assertions and the judge of the
/// `fix-quality` eval to say.
pub fn fixed(ctx: &ScorerContext<'_, ReviewState>) -> CustomScore {
    let Some(problems) = ctx.input.and_then(|i| i["problems"].as_array()) else {
        return CustomScore::from(false)
            .detail("the case does not say what its code holds (input.problems)");
    };
    let problems: Vec<&str> = problems.iter().filter_map(Value::as_str).collect();
    let found = ctx.state.findings.len();
    let (pass, detail) = match (problems.is_empty(), ctx.state.fix.is_some()) {
        (false, true) => (
            true,
            format!(
                "fix proposed for {} ({found} finding(s))",
                problems.join(", ")
            ),
        ),
        (false, false) if found == 0 => (
            false,
            format!(
                "not fixed: the reviewer found nothing in code with {}",
                problems.join(", ")
            ),
        ),
        (false, false) => (
            false,
            format!("not fixed: no fix proposed for {}", problems.join(", ")),
        ),
        (true, false) => (true, "clean code, left alone".to_string()),
        (true, true) => (
            false,
            format!("clean code, changed anyway for {found} finding(s)"),
        ),
    };
    CustomScore::from(pass).detail(detail)
}

/// The code review workflow with one model for both agents and the
/// reviewer's instructions `reviewer_prompt` (one of [`prompts`]).
pub fn with_prompt(
    reviewer_prompt: &'static str,
    model: impl Provider + 'static,
) -> Workflow<ReviewState> {
    let model: Arc<dyn Provider> = Arc::new(model);
    reviewed_by(reviewer_prompt, model.clone(), model)
}

/// The code review workflow with one model for both agents (the reviewer's
/// prompt v2).
pub fn with_model(model: impl Provider + 'static) -> Workflow<ReviewState> {
    with_prompt(prompts::REVIEWER_V2, model)
}

/// The code review workflow with the given providers for its two agents
/// (the reviewer's prompt v2).
pub fn workflow(reviewer: Arc<dyn Provider>, fixer: Arc<dyn Provider>) -> Workflow<ReviewState> {
    reviewed_by(prompts::REVIEWER_V2, reviewer, fixer)
}

fn reviewed_by(
    reviewer_prompt: &'static str,
    reviewer: Arc<dyn Provider>,
    fixer: Arc<dyn Provider>,
) -> Workflow<ReviewState> {
    let reviewer = Agent::<ReviewState>::new("reviewer")
        .provider_arc(reviewer)
        .system(reviewer_prompt)
        .prompt(|s| format!("Review this {} code:\n```\n{}```", s.language, s.code))
        .output(|review: ReviewOutput, s: &mut ReviewState| {
            s.findings = review.findings;
            s.summary = review.summary;
        })
        .temperature(0.0)
        .max_tokens(1024)
        .emits_with("review:complete", |s| json!({"findings": s.findings.len()}));
    let fixer = Agent::<ReviewState>::new("fixer")
        .provider_arc(fixer)
        .system(prompts::FIXER)
        .when_because(|s| !s.findings.is_empty(), "no findings to fix")
        .prompt(|s| {
            let issues: Vec<String> = s
                .findings
                .iter()
                .map(|f| format!("- {} ({}): {}", f.issue, f.severity, f.explanation))
                .collect();
            format!(
                "Fix these problems:\n{}\n\nCode:\n```\n{}```",
                issues.join("\n"),
                s.code
            )
        })
        .update(|text, s| s.fix = Some(text))
        .temperature(0.0)
        .max_tokens(1024)
        .emits("fix:proposed");
    Workflow::new("code-review", ReviewState::default())
        .start(|input: &Value, s| {
            s.code = input["code"].as_str().unwrap_or_default().to_string();
            s.language = input["language"].as_str().unwrap_or("text").to_string();
        })
        .phase("review", Phase::run(reviewer).next("fix"))
        .phase("fix", Phase::run(fixer).next("done"))
        .terminal("done")
        .output(|s| {
            let findings: Vec<String> = s
                .findings
                .iter()
                .map(|f| format!("{} ({}): {}", f.issue, f.severity, f.explanation))
                .collect();
            let mut out = format!("{}\n{}", s.summary, findings.join("\n"));
            if let Some(fix) = &s.fix {
                out.push_str("\n\n");
                out.push_str(fix);
            }
            Value::String(out)
        })
}
