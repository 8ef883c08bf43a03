//! The example eval suite: `cargo test --test evals`.
//!
//! A code review workflow (reviewer → fixer) over seed 003's eleven code
//! review cases, three trials each, in two variants that differ in the
//! reviewer's prompt (v1: security only; v2: security, correctness and
//! maintainability); the fixes of four of them graded by a judge model;
//! and a code generation workflow (planner → coder with
//! `Write` and `Bash` tools → tester that runs its tests with `RunTests` →
//! reviewer) over seed 003's seven code generation cases, OpenAI's cheap
//! gpt-4o-mini against Claude Sonnet 4.5.
//! Then seed 003's refactoring (analyst → planner → refactorer with `Edit`
//! and `Write` → verifier, gpt-4o-mini against Claude Sonnet 4.5) and
//! debugging (debugger with `Read` and `Grep` → fixer with `Edit`, two
//! debugger prompts) evals over in-state file trees, and seed 000's
//! fork-based eval: two verifier prompts from one committed session.
//! Provider calls (and the commands of `Bash` and `RunTests`) are played back from `evals/recordings/`
//! (re-record them with `cargo run --example record_example_suite`, which
//! answers from `evals/answers/` on a local fake server: no keys, no cost).
//! This file holds the code review eval; the others are in `tests/evals/`.

use scaffold::prelude::*;
use scaffold_examples::code_review::{self as review, ReviewState};

/// The other evals, one file each under `tests/evals/`.
mod evals {
    mod code_generation;
    mod debugging;
    mod fix_quality;
    mod refactoring;
    mod refactoring_verifier;
}

/// The code review eval: prompt v1 misses the bugs and quality problems
/// v2 catches, so the gate asks 70% of all cells to pass, not every one,
/// and the table shows what v1 misses (`fixed`: it fixed none of them);
/// three trials show which cells are flaky. Prompt v1's flaky cell is not quarantined: its failure is a
/// finding about v1, which the gate allows for already.
#[scaffold::eval(name = "code-review")]
fn code_review() -> Eval<ReviewState> {
    Eval::new()
        .trials(3)
        .min_pass_rate(0.7)
        .rerecord_command("cargo run --example record_example_suite -- {filter}")
        .scorer(scorer::output_valid())
        // The problems the case holds (its input's `problems`) got a fix,
        // and clean code was left alone: 0 where the reviewer found nothing.
        .scorer(scorer::custom("fixed", review::fixed))
        // 1 up to $0.002 a cell, 0 and failing past $0.008: a third above
        // the dearest recorded cell (the long file, $0.0060).
        .scorer(scorer::cost(0.008, 0.002))
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

scaffold::main!();
