use scaffold::eval::Eval;
use scaffold::workflow::Workflow;
use scaffold::{eval, variant};

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct State {}

#[eval(title = "Code review")]
fn code_review() -> Eval<State> {
    Eval::new()
}

#[variant(evl = "code_review")]
fn gpt_4o() -> Workflow<State> {
    Workflow::new("review", State::default())
}

fn main() {}
