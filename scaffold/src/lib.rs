//! # scaffold
//!
//! LLM-agent workflow evals that run as ordinary Cargo tests.
//!
//! Agents and workflows over a typed state emit a stream of [`signal::Signal`]s;
//! runs are stored in a SQLite [`store::Store`]; providers speak real HTTP and
//! are recorded and played back so CI is deterministic.
#![warn(missing_docs)]

pub mod assert;
pub mod clock;
pub mod dataset;
pub mod eval;
pub mod harness;
pub mod metrics;
pub mod provider;
pub mod report;
pub mod scorer;
pub mod session;
pub mod signal;
pub mod stats;
pub mod store;
pub mod testing;
pub mod util;
pub mod workflow;

#[cfg(test)]
mod layers;

pub use scaffold_macros::{dataset, eval, scorer, variant};

/// What the macros' expansions reach; not public API.
///
/// The plumbing is here only, not under the modules users read:
/// ```compile_fail
/// use scaffold::harness::EvalRegistration;
/// ```
/// ```compile_fail
/// let _ = scaffold::harness::erase::<serde_json::Value>;
/// ```
/// ```compile_fail
/// use scaffold::harness::HarnessCell;
/// ```
/// ```compile_fail
/// use scaffold::eval::small_map::Iter;
/// ```
/// ```compile_fail
/// use scaffold::report::progress::Progress;
/// ```
/// ```
/// use scaffold::__private::{EvalDef, EvalRegistration, HarnessCell, erase, inventory};
/// ```
#[doc(hidden)]
pub mod __private {
    pub use crate::harness::erased::{ErasedEval, HarnessCell, erase};
    pub use crate::harness::registry::{
        Built, DatasetRegistration, EvalDef, EvalOutput, EvalRegistration, IntoDatasets,
        ScorerRegistration, VariantRegistration,
    };
    pub use inventory;
}

/// The names most programs need.
///
/// Enough for a suite's `tests/evals.rs`: `use scaffold::prelude::*;`
/// brings [`Eval`](crate::eval::Eval), datasets (the [`dataset`](mod@crate::dataset)
/// module, [`Dataset`](crate::dataset::Dataset), [`Case`](crate::dataset::Case)),
/// both HTTP providers, the [`scorer`](mod@crate::scorer) module with its
/// functions (`scorer::output_valid()`, `scorer::cost(..)`, ...) and the
/// workflow types.
pub mod prelude {
    pub use crate::dataset::{self, Case, Dataset, DatasetBuilder, DatasetError};
    pub use crate::eval::Eval;
    pub use crate::metrics::Metrics;
    pub use crate::provider::anthropic::Anthropic;
    pub use crate::provider::openai::OpenAi;
    pub use crate::provider::{
        Pricing, Provider, ProviderError, ProviderOptions, ScriptedProvider, ScriptedReply, Usage,
    };
    pub use crate::scorer::{self, CustomScore, ScorerContext};
    pub use crate::session::{
        ForkFrom, ForkOptions, ForkPoint, ForkSource, ReplayOptions, ScoreOptions, SessionExport,
    };
    pub use crate::signal::Signal;
    pub use crate::store::Store;
    pub use crate::workflow::{
        Agent, Phase, RunOptions, RunResult, RunStatus, Tool, ToolContext, Workflow, run, run_with,
    };
}

/// The guides of `docs/`, included so that `cargo test --doc` compiles
/// (and, unless marked `no_run`, runs) every Rust example in them.
#[cfg(doctest)]
mod guides {
    #[doc = include_str!("../../docs/first-eval.md")]
    struct FirstEval;
    #[doc = include_str!("../../docs/datasets.md")]
    struct Datasets;
    #[doc = include_str!("../../docs/workflows.md")]
    struct Workflows;
    #[doc = include_str!("../../docs/recording.md")]
    struct Recording;
    #[doc = include_str!("../../docs/ci.md")]
    struct Ci;
    #[doc = include_str!("../../docs/statistics.md")]
    struct Statistics;
    #[doc = include_str!("../../docs/sessions.md")]
    struct Sessions;
    #[doc = include_str!("../../docs/cli.md")]
    struct Cli;
    #[doc = include_str!("../../docs/performance.md")]
    struct Performance;
}
