use scaffold::eval::Eval;
use scaffold::workflow::Workflow;
use scaffold::{eval, variant};

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct State {}

#[eval]
fn code_review() -> Eval<State> {
    Eval::new()
}

#[variant(eval = "code_review")]
fn gpt_4o(model: &str) -> Workflow<State> {
    Workflow::new(model, State::default())
}

fn main() {}
