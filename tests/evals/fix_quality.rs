//! The fix-quality eval: a judge model grades the code review's fixes.

use scaffold::prelude::*;
use scaffold_examples::code_review::{self as review, ReviewState};

/// The fix-quality eval: Claude Sonnet 4.5 judges the fixes of prompt v2
/// (the dataset's `llm.judge`, re-asked when borderline, and a scorer with
/// a rubric), what no string check can tell. Its verdicts come from the
/// recordings, so it keeps no verdict cache between runs.
#[scaffold::eval(name = "fix-quality")]
fn fix_quality() -> Eval<ReviewState> {
    let judge = || Anthropic::new("claude-sonnet-4-5-20250929");
    Eval::new()
        .min_pass_rate(1.0)
        .rerecord_command("cargo run --example record_example_suite -- {filter}")
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
    review::with_prompt(
        review::prompts::REVIEWER_V2,
        OpenAi::new("gpt-4o-2024-08-06"),
    )
}

/// Four of seed 003's code review cases, with a judge's assertion.
#[scaffold::dataset(eval = "fix_quality")]
fn fix_quality_cases() -> Result<Dataset, DatasetError> {
    dataset::load("evals/fix-quality.yaml")
}
