//! The example eval suite: `cargo test --test evals`.
//!
//! A code review workflow (reviewer → fixer) over seed 003's eleven code
//! review cases, three trials each, in two variants that differ in the
//! reviewer's prompt (v1: security only; v2: security, correctness and
//! maintainability); the fixes of four of them graded by a judge model;
//! and a code generation workflow (planner → coder with
//! `Write` and `Bash` tools → tester → reviewer) over seed 003's seven code
//! generation cases, OpenAI's cheap gpt-4o-mini against Claude Sonnet 4.5.
//! Provider calls (and `Bash`'s commands) are played back from `evals/recordings/`
//! (re-record them with `cargo run --example record_example_suite`, which
//! answers from `evals/answers/` on a local fake server: no keys, no cost).

use scaffold::prelude::*;
use scaffold_examples::code_generation::{self as codegen, CodeGenState};
use scaffold_examples::code_review::{self as review, ReviewState};

/// The code review eval: prompt v1 misses the bugs and quality problems
/// v2 catches, so the gate asks 70% of all cells to pass, not every one,
/// and the table shows what v1 misses; three trials show which cells are
/// flaky. Prompt v1's flaky cell is not quarantined: its failure is a
/// finding about v1, which the gate allows for already.
#[scaffold::eval(name = "code-review")]
fn code_review() -> Eval<ReviewState> {
    Eval::new()
        .trials(3)
        .min_pass_rate(0.7)
        .rerecord_command("cargo run --example record_example_suite")
        .scorer(scorer::output_valid())
        // Every finding got a fix (the fixer ran when there were findings).
        .scorer(scorer::custom(
            "fixed",
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

/// gpt-4o with the reviewer's prompt v1: security only.
#[scaffold::variant(eval = "code_review", name = "prompt-v1")]
fn review_prompt_v1() -> Workflow<ReviewState> {
    review::with_prompt(
        review::prompts::REVIEWER_V1,
        OpenAi::new("gpt-4o-2024-08-06"),
    )
}

/// gpt-4o with the reviewer's prompt v2: security, correctness, maintainability.
#[scaffold::variant(eval = "code_review", name = "prompt-v2")]
fn review_prompt_v2() -> Workflow<ReviewState> {
    review::with_prompt(
        review::prompts::REVIEWER_V2,
        OpenAi::new("gpt-4o-2024-08-06"),
    )
}

/// Seed 003's code review cases.
#[scaffold::dataset(eval = "code_review")]
fn cases() -> Result<Dataset, DatasetError> {
    dataset::load("evals/code-review.yaml")
}

/// The fix-quality eval: Claude Sonnet 4.5 judges the fixes of prompt v2
/// (the dataset's `llm.judge`, re-asked when borderline, and a scorer with
/// a rubric), what no string check can tell. Its verdicts come from the
/// recordings, so it keeps no verdict cache between runs.
#[scaffold::eval(name = "fix-quality")]
fn fix_quality() -> Eval<ReviewState> {
    let judge = || Anthropic::new("claude-sonnet-4-5-20250929");
    Eval::new()
        .min_pass_rate(1.0)
        .rerecord_command("cargo run --example record_example_suite")
        .judge(judge())
        .scorer(
            scorer::llm_judge(judge())
                .criteria(review::judging::CRITERIA)
                .rubric(review::judging::RUBRIC)
                .min_score(0.7)
                .memory_only()
                .named("fix-quality"),
        )
}

/// The code review workflow of prompt v2, whose fixes are judged.
#[scaffold::variant(eval = "fix_quality", name = "prompt-v2")]
fn fix_quality_prompt_v2() -> Workflow<ReviewState> {
    review_prompt_v2()
}

/// Four of seed 003's code review cases, with a judge's assertion.
#[scaffold::dataset(eval = "fix_quality")]
fn fix_quality_cases() -> Result<Dataset, DatasetError> {
    dataset::load("evals/fix-quality.yaml")
}

/// The code generation eval (planner → coder → tester → reviewer, the coder
/// with `Write` and `Bash` tools): every cell must pass; scored on the
/// tester's verdict, the reviewer's and cost.
#[scaffold::eval(name = "code-generation")]
fn code_generation() -> Eval<CodeGenState> {
    Eval::new()
        .min_pass_rate(1.0)
        .rerecord_command("cargo run --example record_example_suite")
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

scaffold::main!();
