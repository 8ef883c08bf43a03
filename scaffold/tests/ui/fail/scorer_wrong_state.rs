use scaffold::eval::Eval;
use scaffold::scorer::{Score, Scorer, ScorerContext};
use scaffold::{eval, scorer};

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct State {}

#[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
struct OtherState {}

#[eval]
fn code_review() -> Eval<State> {
    Eval::new()
}

struct Quality;

#[async_trait::async_trait]
impl Scorer<OtherState> for Quality {
    fn name(&self) -> &str {
        "quality"
    }

    async fn score(&self, _ctx: &ScorerContext<'_, OtherState>) -> Score {
        unimplemented!()
    }
}

#[scorer(eval = "code_review")]
fn quality() -> Quality {
    Quality
}

fn main() {}
