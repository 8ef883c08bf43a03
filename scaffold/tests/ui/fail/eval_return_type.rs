use scaffold::eval;
use scaffold::workflow::Workflow;

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct State {}

#[eval]
fn code_review() -> Workflow<State> {
    Workflow::new("review", State::default())
}

#[eval]
fn no_return() {}

fn main() {}
