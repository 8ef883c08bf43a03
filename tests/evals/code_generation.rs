//! The code generation eval of seed 003 (Example 2).

use scaffold::prelude::*;
use scaffold_examples::code_generation::{self as codegen, CodeGenState};

/// The code generation eval (planner → coder → tester → reviewer, the coder
/// with `Write` and `Bash` tools): every cell must pass; scored on the
/// tester's verdict, the reviewer's and cost.
#[scaffold::eval(name = "code-generation")]
fn code_generation() -> Eval<CodeGenState> {
    Eval::new()
        .min_pass_rate(1.0)
        .rerecord_command("cargo run --example record_example_suite -- {filter}")
        .scorer(scorer::custom(
            "tests-pass",
            |ctx: &ScorerContext<'_, CodeGenState>| match &ctx.state.tests {
                Some(t) => CustomScore {
                    value: if t.passed { 1.0 } else { 0.0 },
                    pass: Some(t.passed),
                    detail: Some(format!("{} test(s)", t.count)),
                },
                None => CustomScore {
                    value: 1.0,
                    pass: None,
                    detail: Some("no code to test".into()),
                },
            },
        ))
        .scorer(scorer::custom(
            "approved",
            |ctx: &ScorerContext<'_, CodeGenState>| {
                let approved = ctx.state.review.as_ref().map(|r| r.approved);
                CustomScore {
                    value: if approved == Some(false) { 0.0 } else { 1.0 },
                    pass: approved,
                    detail: None,
                }
            },
        ))
        .scorer(scorer::cost(0.10, 0.02))
}

/// OpenAI's gpt-4o-mini for every agent: the cheap one.
#[scaffold::variant(eval = "code_generation", name = "gpt-4o-mini")]
fn gpt_4o_mini() -> Workflow<CodeGenState> {
    codegen::with_model(OpenAi::new("gpt-4o-mini-2024-07-18"))
}

/// Anthropic's Claude Sonnet 4.5 for every agent.
#[scaffold::variant(eval = "code_generation", name = "claude-sonnet-4-5")]
fn codegen_claude_sonnet() -> Workflow<CodeGenState> {
    codegen::with_model(Anthropic::new("claude-sonnet-4-5-20250929"))
}

/// Seed 003's code generation cases.
#[scaffold::dataset(eval = "code_generation")]
fn codegen_cases() -> Result<Dataset, DatasetError> {
    dataset::load("evals/code-generation.yaml")
}
