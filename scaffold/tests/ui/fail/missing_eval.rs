use scaffold::eval::Eval;
use scaffold::workflow::Workflow;
use scaffold::{eval, scorer, variant};

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct State {}

#[eval]
fn code_review() -> Eval<State> {
    Eval::new()
}

#[variant]
fn gpt_4o() -> Workflow<State> {
    Workflow::new("review", State::default())
}

#[scorer(name = "quality")]
fn quality() -> impl scaffold::scorer::Scorer<State> {
    scaffold::scorer::output_valid()
}

fn main() {}
