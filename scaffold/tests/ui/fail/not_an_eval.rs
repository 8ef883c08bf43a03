use scaffold::variant;
use scaffold::workflow::Workflow;

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct State {}

fn code_review() -> Workflow<State> {
    Workflow::new("review", State::default())
}

#[variant(eval = "code_review")]
fn gpt_4o() -> Workflow<State> {
    code_review()
}

#[variant(eval = "State")]
fn claude() -> Workflow<State> {
    code_review()
}

fn main() {}
