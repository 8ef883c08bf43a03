//! Seed 000's fork-based eval: two verifier prompts from one committed session.

use scaffold::prelude::*;
use scaffold_examples::refactoring::{self as refactor, RefactorState};
use std::sync::Arc;

/// The fork-based eval of seed 000: every cell forks gpt-4o-mini's stored
/// rename run of the refactoring eval at its verification phase, so only
/// the verifier runs, and compares two verifier prompts on the same
/// incomplete refactoring: prompt v1 (the refactoring eval's own) passes
/// it and fails its cell, prompt v2 catches it; the gate asks half.
#[scaffold::eval(name = "refactoring-verifier")]
fn refactoring_verifier() -> Eval<RefactorState> {
    let parent = ForkFrom::file("evals/sessions/refactoring-rename-gpt-4o-mini.json");
    Eval::new()
        .min_pass_rate(0.5)
        .rerecord_command("cargo run --example record_example_suite -- {filter}")
        .fork_from(parent.at(ForkPoint::phase("verification").first()))
        .scorer(scorer::custom(
            "caught",
            |ctx: &ScorerContext<'_, RefactorState>| {
                let caught = ctx.state.verification.as_ref().is_some_and(|v| !v.passed);
                CustomScore {
                    value: if caught { 1.0 } else { 0.0 },
                    pass: Some(caught),
                    detail: None,
                }
            },
        ))
}

/// Verifier prompt v1 (the refactoring eval's): "say whether the task was done".
#[scaffold::variant(eval = "refactoring_verifier", name = "prompt-v1")]
fn fork_verifier_v1() -> Workflow<RefactorState> {
    let model = OpenAi::new("gpt-4o-mini-2024-07-18");
    refactor::workflow(Arc::new(model), refactor::prompts::VERIFIER)
}

/// Verifier prompt v2: check every file, tests included, for leftovers.
#[scaffold::variant(eval = "refactoring_verifier", name = "prompt-v2")]
fn fork_verifier_v2() -> Workflow<RefactorState> {
    let model = OpenAi::new("gpt-4o-mini-2024-07-18");
    refactor::workflow(Arc::new(model), refactor::prompts::VERIFIER_STRICT)
}

/// The one case of the fork: the parent session's input.
#[scaffold::dataset(eval = "refactoring_verifier")]
fn fork_cases() -> Result<Dataset, DatasetError> {
    dataset::load("evals/refactoring-verifier.yaml")
}
