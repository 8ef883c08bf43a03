//! The code generation eval of seed 003 (Example 2).

use scaffold::prelude::*;
use scaffold_examples::code_generation::{self as codegen, CodeGenState};

/// The code generation eval (planner → coder → tester → reviewer, the coder
/// with `Write` and `Bash` tools, the tester with `Write` and `RunTests`):
/// scored on the tests' real run (`tests-pass`: the exit status of the
/// tester's `RunTests`, recorded, not what the tester says), the
/// reviewer's approval and cost, each against what the case expects (no
/// code at all for the infeasible and the vague task). gpt-4o-mini's
/// fibonacci stops its loop one step early: its tests fail, its reviewer
/// rejects it and its cell fails, a real weakness of the cheap variant,
/// counted; the gate asks 90%.
#[scaffold::eval(name = "code-generation")]
fn code_generation() -> Eval<CodeGenState> {
    Eval::new()
        .min_pass_rate(0.9)
        .rerecord_command("cargo run --example record_example_suite -- {filter}")
        .scorer(scorer::custom("tests-pass", codegen::scoring::tests_pass))
        .scorer(scorer::custom("approved", codegen::scoring::approved))
        // 1 up to $0.005 a cell, 0 and failing past $0.055: a third above
        // the dearest recorded cell (Claude's rest-endpoint, $0.0413).
        .scorer(scorer::cost(0.055, 0.005))
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
