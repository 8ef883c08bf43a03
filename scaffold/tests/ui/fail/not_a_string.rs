use scaffold::eval::Eval;
use scaffold::workflow::Workflow;
use scaffold::{eval, variant};

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct State {}

#[eval]
fn code_review() -> Eval<State> {
    Eval::new()
}

#[variant(eval = code_review)]
fn gpt_4o() -> Workflow<State> {
    Workflow::new("review", State::default())
}

#[variant(eval = "code-review", name = gpt4)]
fn gpt_4() -> Workflow<State> {
    Workflow::new("review", State::default())
}

fn main() {}
