//! What `#[eval]`, `#[variant]`, `#[dataset]` and `#[scorer]` register.
//!
//! The macros of `scaffold-macros` expand to `inventory::submit!` of the
//! structs here. Values must be const, so everything is a `&'static str` or
//! a function pointer; the harness collects and sorts them at start-up
//! (inventory's order is unspecified).

use std::any::Any;

/// Implemented by the hidden marker type `#[eval]` puts beside the eval
/// function, so other attributes can name the eval by path and be
/// type-checked against its state at compile time.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an eval",
    label = "`eval = \"...\"` must name a function marked #[eval]",
    note = "write the path of the #[eval] function, e.g. `#[variant(eval = \"code_review\")]`"
)]
pub trait EvalDef {
    /// The eval's state type.
    type State;
    /// The eval's registered name.
    const NAME: &'static str;
}

/// Type-level access to `S` in `Eval<S>`, for the macros.
pub trait EvalOutput {
    /// The state type.
    type State;
}

impl<S> EvalOutput for crate::eval::Eval<S> {
    type State = S;
}

/// A type-erased value a registration builds (`Eval<S>`, `Workflow<S>`,
/// `Arc<dyn Scorer<S>>`, datasets). The harness downcasts it to the eval's
/// state type; the macros check the types at compile time.
pub type Built = Box<dyn Any + Send>;

/// One `#[eval]` function.
#[derive(Debug)]
pub struct EvalRegistration {
    /// The registered name (the attribute's `name`, else the function's).
    pub name: &'static str,
    /// Source file of the function.
    pub file: &'static str,
    /// Source line of the function.
    pub line: u32,
    /// Builds the eval, erased.
    pub build: fn() -> Box<dyn super::ErasedEval>,
}

/// One `#[variant(eval = "...")]` function.
#[derive(Debug)]
pub struct VariantRegistration {
    /// The eval it belongs to ([`EvalDef::NAME`]).
    pub eval: &'static str,
    /// The variant's name.
    pub name: &'static str,
    /// Source file.
    pub file: &'static str,
    /// Source line.
    pub line: u32,
    /// Builds a `Workflow<S>`, boxed.
    pub build: fn() -> Built,
}

/// One `#[dataset(eval = "...")]` function.
#[derive(Debug)]
pub struct DatasetRegistration {
    /// The eval it belongs to.
    pub eval: &'static str,
    /// The function's name.
    pub name: &'static str,
    /// Source file.
    pub file: &'static str,
    /// Source line.
    pub line: u32,
    /// Builds the datasets, or says why it could not.
    pub build: fn() -> Result<Vec<crate::dataset::Dataset>, String>,
}

/// One `#[scorer(eval = "...")]` function.
#[derive(Debug)]
pub struct ScorerRegistration {
    /// The eval it belongs to.
    pub eval: &'static str,
    /// The function's name.
    pub name: &'static str,
    /// Source file.
    pub file: &'static str,
    /// Source line.
    pub line: u32,
    /// Builds an `Arc<dyn Scorer<S>>`, boxed.
    pub build: fn() -> Built,
}

inventory::collect!(EvalRegistration);
inventory::collect!(VariantRegistration);
inventory::collect!(DatasetRegistration);
inventory::collect!(ScorerRegistration);

/// What a `#[dataset]` function may return.
pub trait IntoDatasets {
    /// The datasets, or why they could not be built.
    fn into_datasets(self) -> Result<Vec<crate::dataset::Dataset>, String>;
}

impl IntoDatasets for crate::dataset::Dataset {
    fn into_datasets(self) -> Result<Vec<crate::dataset::Dataset>, String> {
        Ok(vec![self])
    }
}

impl IntoDatasets for crate::dataset::DatasetBuilder {
    fn into_datasets(self) -> Result<Vec<crate::dataset::Dataset>, String> {
        self.build().map(|d| vec![d]).map_err(|e| e.to_string())
    }
}

impl IntoDatasets for Vec<crate::dataset::Dataset> {
    fn into_datasets(self) -> Result<Vec<crate::dataset::Dataset>, String> {
        Ok(self)
    }
}

impl<T: IntoDatasets, E: std::fmt::Display> IntoDatasets for Result<T, E> {
    fn into_datasets(self) -> Result<Vec<crate::dataset::Dataset>, String> {
        self.map_err(|e| e.to_string())?.into_datasets()
    }
}

#[cfg(test)]
mod tests {
    use super::IntoDatasets;
    use crate::dataset::{Case, Dataset};
    use serde_json::json;

    #[test]
    fn a_dataset_function_may_return_a_builder_and_its_errors_are_told() {
        let ok = Dataset::builder("d").case(Case::builder("a").input(json!(1)));
        let datasets = ok.into_datasets().expect("valid");
        assert_eq!(datasets[0].cases[0].id, "a");
        let dup = Dataset::builder("d")
            .case(Case::builder("a").input(json!(1)))
            .case(Case::builder("a").input(json!(2)));
        let err = dup.into_datasets().expect_err("duplicate ids");
        assert!(
            err.contains("invalid dataset dataset `d` (built in code)"),
            "{err}"
        );
        assert!(err.contains("duplicate case id `a`"), "{err}");
    }
}
