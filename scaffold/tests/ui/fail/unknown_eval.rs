use scaffold::eval::Eval;
use scaffold::workflow::Workflow;
use scaffold::{eval, variant};

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct State {}

#[eval]
fn code_review() -> Eval<State> {
    Eval::new()
}

#[variant(eval = "code_revew")]
fn gpt_4o() -> Workflow<State> {
    Workflow::new("review", State::default())
}

fn main() {}
