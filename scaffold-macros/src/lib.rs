//! The attributes of [scaffold](https://docs.rs/scaffold): `#[eval]`,
//! `#[variant]`, `#[dataset]` and `#[scorer]`.
//!
//! Use them through `scaffold` (`use scaffold::{eval, variant, dataset,
//! scorer};`); the expansions name `::scaffold::...`.
//!
//! Each goes on a free function that takes no arguments and returns what it
//! registers. The function stays as written; the attribute adds an
//! `inventory` registration the harness collects at start-up. The pieces of
//! one eval may live in different modules or files of the test binary: the
//! others name the eval by the Rust path of its `#[eval]` function.
//!
//! ```rust,ignore
//! use scaffold::dataset::{self, Dataset, DatasetError};
//! use scaffold::eval::Eval;
//! use scaffold::scorer::Scorer;
//! use scaffold::workflow::Workflow;
//! use scaffold::{eval, scorer, variant};
//!
//! #[eval(name = "code-review")]
//! pub fn code_review() -> Eval<State> {
//!     Eval::new().trials(3)
//! }
//!
//! // In another module: name the eval by path, or `use` it.
//! #[variant(eval = "crate::evals::code_review", name = "gpt-4o")]
//! fn gpt_4o() -> Workflow<State> {
//!     review_workflow().with_agent("reviewer", |a| a.provider(openai("gpt-4o")))
//! }
//!
//! #[scaffold::dataset(eval = "crate::evals::code_review")]
//! fn cases() -> Result<Dataset, DatasetError> {
//!     dataset::load("evals/code-review.yaml")
//! }
//!
//! #[scorer(eval = "crate::evals::code_review")]
//! fn fast() -> impl Scorer<State> {
//!     scaffold::scorer::latency(5_000.0, 1_000.0)
//! }
//! ```
//!
//! Mistakes are compile errors at the user's tokens: an unknown eval at the
//! `eval = "..."` string, a variant whose workflow's state is not the eval's
//! at the function's name, arguments at the arguments.

use proc_macro::TokenStream;

mod args;
mod expand;
mod item;
mod kind;

use kind::Kind;

/// Declares an eval: `#[eval]` or `#[eval(name = "code-review")]` on
/// `fn code_review() -> Eval<State>`.
///
/// The name defaults to the function's. Besides registering the eval, it
/// puts a hidden marker type of the function's name and visibility beside
/// it, which `#[variant]`, `#[dataset]` and `#[scorer]` name with
/// `eval = "code_review"` (any path: `"crate::evals::code_review"`,
/// `"super::code_review"`); `use evals::code_review;` imports both.
#[proc_macro_attribute]
pub fn eval(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(Kind::Eval, args.into(), item.into()).into()
}

/// Declares a variant of an eval: `#[variant(eval = "code_review")]` or
/// `#[variant(eval = "code_review", name = "gpt-4o")]` on
/// `fn gpt_4o() -> Workflow<State>`.
///
/// `eval` is the path of the `#[eval]` function; the workflow's state must
/// be the eval's (checked at compile time). The name defaults to the
/// function's.
#[proc_macro_attribute]
pub fn variant(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(Kind::Variant, args.into(), item.into()).into()
}

/// Adds cases to an eval: `#[dataset(eval = "code_review")]` on
/// `fn cases() -> Dataset`, `-> Vec<Dataset>` or `-> Result<_, E>` with
/// `E: Display` (an error fails the eval's trials with its message).
///
/// Under `cargo nextest run` the function runs in the run's first process
/// only: the others read their cell's case from that process's index.
#[proc_macro_attribute]
pub fn dataset(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(Kind::Dataset, args.into(), item.into()).into()
}

/// Adds a scorer to an eval: `#[scorer(eval = "code_review")]` on
/// `fn quality() -> impl Scorer<State>` (or a concrete scorer type); the
/// scorer's state must be the eval's (checked at compile time).
#[proc_macro_attribute]
pub fn scorer(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::expand(Kind::Scorer, args.into(), item.into()).into()
}
