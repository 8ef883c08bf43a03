//! The debugging eval of seed 003 (Example 4).

use scaffold::prelude::*;
use scaffold_examples::debugging::{self as debug, DebugState};
use std::sync::Arc;

/// The debugging eval (debugger with `Read` and `Grep` → fixer with
/// `Edit`, over in-state files): two debugger prompts on Claude Sonnet 4.5,
/// scored on whether a fix was made and cost. Prompt v1 does not read the
/// failing test of the null error: a real weakness of the prompt, counted
/// (not quarantined: it is no flake); the gate asks 80%.
#[scaffold::eval(name = "debugging")]
fn debugging() -> Eval<DebugState> {
    Eval::new()
        .min_pass_rate(0.8)
        .rerecord_command("cargo run --example record_example_suite -- {filter}")
        .scorer(scorer::custom(
            "fixed",
            |ctx: &ScorerContext<'_, DebugState>| {
                let fixed = ctx.state.fix.is_some();
                CustomScore {
                    value: if fixed { 1.0 } else { 0.0 },
                    pass: Some(fixed),
                    detail: ctx.state.diagnosis.as_ref().map(|d| d.category.clone()),
                }
            },
        ))
        // 1 up to $0.008 a cell, 0 and failing past $0.016: a third above
        // the dearest recorded cell (prompt v2's null error, $0.0121).
        .scorer(scorer::cost(0.016, 0.008))
}

/// Debugger prompt v1: "find the root cause".
#[scaffold::variant(eval = "debugging", name = "prompt-v1")]
fn debug_prompt_v1() -> Workflow<DebugState> {
    let model = Anthropic::new("claude-sonnet-4-5-20250929");
    debug::workflow(Arc::new(model), debug::prompts::DEBUGGER)
}

/// Debugger prompt v2: read the test and the code, grep the symbols, then diagnose.
#[scaffold::variant(eval = "debugging", name = "prompt-v2")]
fn debug_prompt_v2() -> Workflow<DebugState> {
    let model = Anthropic::new("claude-sonnet-4-5-20250929");
    debug::workflow(Arc::new(model), debug::prompts::DEBUGGER_EVIDENCE)
}

/// Seed 003's debugging cases.
#[scaffold::dataset(eval = "debugging")]
fn debug_cases() -> Result<Dataset, DatasetError> {
    dataset::load("evals/debugging.yaml")
}
