//! `#[eval]`, `#[variant]`, `#[dataset]` and `#[scorer]`.
//!
//! This file is itself the passing case: an eval and its variants, datasets
//! and scorers spread over modules, naming the eval by relative, `crate::`
//! and `super::` paths and through `use`, with a state private to the crate
//! root behind a `pub fn`; it must compile without warnings. The tests check
//! what got registered. The failing cases are trybuild's, under `tests/ui/`
//! (regenerate their `.stderr` files with `TRYBUILD=overwrite`); trybuild
//! only type-checks them, which keeps its one-off build of the crate short.
#![deny(warnings)]

use std::sync::Arc;

use scaffold::__private::{
    DatasetRegistration, EvalDef, EvalRegistration, ScorerRegistration, VariantRegistration,
    inventory,
};
use scaffold::scorer::Scorer;
use scaffold::workflow::Workflow;

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Review {
    findings: Vec<String>,
}

mod evals {
    use crate::Review;
    use scaffold::eval::Eval;

    #[scaffold::eval(name = "code-review")]
    pub fn code_review() -> Eval<Review> {
        Eval::new()
    }

    /// Documented, `pub(crate)`, a raw name, a fully qualified return type
    /// and no `name`.
    #[scaffold::eval]
    pub(crate) fn r#match() -> scaffold::eval::Eval<(u32, String)> {
        scaffold::eval::Eval::new()
    }
}

mod variants {
    use crate::Review;
    use scaffold::variant;
    use scaffold::workflow::Workflow;

    #[variant(eval = "crate::evals::code_review", name = "gpt-4o")]
    fn gpt_4o() -> Workflow<Review> {
        Workflow::new("gpt-4o-review", Review::default())
    }

    pub mod nested {
        use crate::evals::code_review;

        #[scaffold::variant(eval = "code_review")]
        pub fn baseline() -> scaffold::workflow::Workflow<crate::Review> {
            scaffold::workflow::Workflow::new("review", crate::Review::default())
        }

        #[scaffold::variant(eval = "super::super::evals::r#match")]
        fn matcher() -> scaffold::workflow::Workflow<(u32, String)> {
            scaffold::workflow::Workflow::new("match", (0, String::new()))
        }
    }
}

mod datasets {
    use scaffold::dataset;
    use scaffold::dataset::{Dataset, DatasetError, Format};

    const SMOKE: &str = "name: smoke\ncases:\n  - id: hello\n    input: hi\n    assertions: []\n";

    #[dataset(eval = "super::evals::code_review")]
    fn cases() -> Dataset {
        dataset::load_str(SMOKE, Format::Yaml, "smoke.yaml").unwrap()
    }

    #[dataset(eval = "crate::evals::code_review", name = "from-files")]
    fn more_cases() -> Result<Vec<Dataset>, DatasetError> {
        Ok(vec![dataset::load_str(SMOKE, Format::Yaml, "smoke.yaml")?])
    }

    #[dataset(eval = "crate::evals::r#match")]
    fn broken() -> Result<Dataset, std::fmt::Error> {
        Err(std::fmt::Error)
    }
}

mod scorers {
    use crate::Review;
    use scaffold::scorer;
    use scaffold::scorer::{Score, Scorer, ScorerContext};

    #[scorer(eval = "crate::evals::code_review")]
    fn quality() -> impl Scorer<Review> {
        scaffold::scorer::output_valid()
    }

    pub struct NoFindings;

    #[async_trait::async_trait]
    impl Scorer<Review> for NoFindings {
        fn name(&self) -> &str {
            "no-findings"
        }

        async fn score(&self, ctx: &ScorerContext<'_, Review>) -> Score {
            let pass = ctx.state.findings.is_empty();
            Score {
                name: "no-findings".into(),
                pass,
                value: if pass { 1.0 } else { 0.0 },
                unit: None,
                detail: None,
                borderline: false,
            }
        }
    }

    #[scorer(eval = "crate::evals::code_review", name = "clean")]
    pub(crate) fn no_findings() -> NoFindings {
        NoFindings
    }
}

fn sorted<T: Ord>(mut items: Vec<T>) -> Vec<T> {
    items.sort();
    items
}

#[test]
fn everything_is_registered_under_its_eval() {
    let evals = sorted(
        inventory::iter::<EvalRegistration>()
            .map(|r| r.name)
            .collect(),
    );
    assert_eq!(evals, ["code-review", "match"]);
    let variants = sorted(
        inventory::iter::<VariantRegistration>()
            .map(|r| (r.eval, r.name))
            .collect(),
    );
    assert_eq!(
        variants,
        [
            ("code-review", "baseline"),
            ("code-review", "gpt-4o"),
            ("match", "matcher")
        ]
    );
    let datasets = sorted(
        inventory::iter::<DatasetRegistration>()
            .map(|r| (r.eval, r.name))
            .collect(),
    );
    assert_eq!(
        datasets,
        [
            ("code-review", "cases"),
            ("code-review", "from-files"),
            ("match", "broken")
        ]
    );
    let scorers = sorted(
        inventory::iter::<ScorerRegistration>()
            .map(|r| (r.eval, r.name))
            .collect(),
    );
    assert_eq!(
        scorers,
        [("code-review", "clean"), ("code-review", "quality")]
    );
}

#[test]
fn registrations_know_where_the_function_is() {
    let eval = inventory::iter::<EvalRegistration>()
        .find(|r| r.name == "code-review")
        .unwrap();
    assert!(eval.file.ends_with("macros.rs"), "{}", eval.file);
    // The line of the function's name, not of the attribute.
    assert_eq!(eval.line, 31);
    let variant = inventory::iter::<VariantRegistration>()
        .find(|r| r.name == "gpt-4o")
        .unwrap();
    assert_eq!((variant.file, variant.line), (eval.file, 49));
}

#[test]
fn registrations_build_what_the_functions_return() {
    let eval = inventory::iter::<EvalRegistration>()
        .find(|r| r.name == "code-review")
        .unwrap();
    let _erased = (eval.build)();

    let variant = inventory::iter::<VariantRegistration>()
        .find(|r| r.name == "gpt-4o")
        .unwrap();
    let workflow = (variant.build)()
        .downcast::<Workflow<Review>>()
        .expect("a Workflow<Review>");
    drop(workflow);

    let built = |name: &str| {
        let dataset = inventory::iter::<DatasetRegistration>()
            .find(|r| r.name == name)
            .unwrap();
        (dataset.build)()
    };
    let datasets = built("from-files").unwrap();
    assert_eq!(datasets.len(), 1);
    assert_eq!(datasets[0].name, "smoke");
    assert_eq!(built("cases").unwrap()[0].cases.len(), 1);
    assert_eq!(built("broken").unwrap_err(), std::fmt::Error.to_string());

    let scorer = inventory::iter::<ScorerRegistration>()
        .find(|r| r.name == "clean")
        .unwrap();
    let scorer = (scorer.build)()
        .downcast::<Arc<dyn Scorer<Review>>>()
        .expect("an Arc<dyn Scorer<Review>>");
    assert_eq!(scorer.name(), "no-findings");
}

#[test]
fn the_marker_type_gives_the_state_and_name() {
    fn name_of<E: EvalDef<State = Review>>() -> &'static str {
        E::NAME
    }
    assert_eq!(name_of::<evals::code_review>(), "code-review");
    assert_eq!(<evals::r#match as EvalDef>::NAME, "match");
}

/// trybuild builds the crate again in a project of its own, the slowest part
/// of `cargo test --workspace` by minutes: run by CI (`.ci/run`) with
/// `cargo test -p scaffold-evals --test macros -- --ignored`.
#[test]
#[ignore = "trybuild's own build takes minutes; CI runs it with --ignored"]
fn misuse_is_a_compile_error_at_the_users_code() {
    trybuild::TestCases::new().compile_fail("tests/ui/fail/*.rs");
}
