//! The refactoring eval of seed 003 (Example 3).

use scaffold::prelude::*;
use scaffold_examples::refactoring::{self as refactor, RefactorState};

/// The refactoring eval (analyst → planner → refactorer with `Edit` and
/// `Write` tools over an in-state file tree → verifier): scored on the
/// verifier's verdict and cost. gpt-4o-mini misses the test file of the
/// rename and its verifier lets it pass: a real weakness of the cheap
/// variant, counted (not quarantined: it is no flake); the gate asks 80%.
#[scaffold::eval(name = "refactoring")]
fn refactoring() -> Eval<RefactorState> {
    Eval::new()
        .min_pass_rate(0.8)
        .rerecord_command("cargo run --example record_example_suite -- {filter}")
        .scorer(scorer::custom(
            "verified",
            |ctx: &ScorerContext<'_, RefactorState>| {
                let passed = ctx.state.verification.as_ref().map(|v| v.passed);
                CustomScore {
                    value: if passed == Some(true) { 1.0 } else { 0.0 },
                    pass: passed,
                    detail: Some(format!(
                        "{} file(s) changed",
                        ctx.state.files_modified.len()
                    )),
                }
            },
        ))
        // 1 up to $0.005 a cell, 0 and failing past $0.018: a third above
        // the dearest recorded cell (Claude's rename, $0.0132).
        .scorer(scorer::cost(0.018, 0.005))
}

/// OpenAI's gpt-4o-mini for every agent.
#[scaffold::variant(eval = "refactoring", name = "gpt-4o-mini")]
fn refactor_gpt_4o_mini() -> Workflow<RefactorState> {
    refactor::with_model(OpenAi::new("gpt-4o-mini-2024-07-18"))
}

/// Anthropic's Claude Sonnet 4.5 for every agent.
#[scaffold::variant(eval = "refactoring", name = "claude-sonnet-4-5")]
fn refactor_claude_sonnet() -> Workflow<RefactorState> {
    refactor::with_model(Anthropic::new("claude-sonnet-4-5-20250929"))
}

/// Seed 003's refactoring cases.
#[scaffold::dataset(eval = "refactoring")]
fn refactor_cases() -> Result<Dataset, DatasetError> {
    dataset::load("evals/refactoring.yaml")
}
