use scaffold::eval::Eval;
use scaffold::workflow::Workflow;
use scaffold::{eval, variant};

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct State {}

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct OtherState {}

#[eval]
fn code_review() -> Eval<State> {
    Eval::new()
}

#[variant(eval = "code_review")]
fn gpt_4o() -> Workflow<OtherState> {
    Workflow::new("review", OtherState::default())
}

fn main() {}
