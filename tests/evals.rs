//! The example eval suite: `cargo test --test evals`.
//!
//! A code review workflow (reviewer → fixer) over five cases of seed 003's
//! code review dataset, in two variants: OpenAI's gpt-4o and Anthropic's
//! Claude Sonnet 4.5. Provider calls are played back from `evals/recordings/`
//! (re-record them with `cargo run --example record_example_suite`, which
//! answers from `evals/answers/` on a local fake server: no keys, no cost).

use scaffold::prelude::*;
use scaffold_examples::code_review::{self as review, ReviewState};

/// The eval: every cell must pass; scored on validity, findings and cost.
#[scaffold::eval(name = "code-review")]
fn code_review() -> Eval<ReviewState> {
    Eval::new()
        .min_pass_rate(1.0)
        .rerecord_command("cargo run --example record_example_suite")
        .scorer(scorer::output_valid())
        .scorer(scorer::custom(
            "findings",
            |ctx: &ScorerContext<'_, ReviewState>| {
                let has_fix = ctx.state.fix.is_some() || ctx.state.findings.is_empty();
                CustomScore {
                    value: if has_fix { 1.0 } else { 0.0 },
                    pass: Some(has_fix),
                    detail: Some(format!("{} finding(s)", ctx.state.findings.len())),
                }
            },
        ))
        .scorer(scorer::cost(0.05, 0.01))
}

/// OpenAI's gpt-4o for both agents.
#[scaffold::variant(eval = "code_review", name = "gpt-4o")]
fn gpt_4o() -> Workflow<ReviewState> {
    review::with_model(OpenAi::new("gpt-4o-2024-08-06"))
}

/// Anthropic's Claude Sonnet 4.5 for both agents.
#[scaffold::variant(eval = "code_review", name = "claude-sonnet-4-5")]
fn claude_sonnet() -> Workflow<ReviewState> {
    review::with_model(Anthropic::new("claude-sonnet-4-5-20250929"))
}

/// Seed 003's code review cases.
#[scaffold::dataset(eval = "code_review")]
fn cases() -> Result<Dataset, DatasetError> {
    dataset::load("evals/code-review.yaml")
}

scaffold::main!();
