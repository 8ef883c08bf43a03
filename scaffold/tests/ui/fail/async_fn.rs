use scaffold::eval::Eval;
use scaffold::{eval, scorer};

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct State {}

#[eval]
async fn code_review() -> Eval<State> {
    Eval::new()
}

#[scorer(eval = "code_review")]
async fn quality() -> impl scaffold::scorer::Scorer<State> {
    scaffold::scorer::output_valid()
}

fn main() {}
