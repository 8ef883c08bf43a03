use scaffold::eval;

#[eval]
struct CodeReview {
    trials: u32,
}

fn main() {}
