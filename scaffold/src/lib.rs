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
pub(crate) mod report;
pub mod scorer;
pub mod session;
pub mod signal;
pub(crate) mod stats;
pub mod store;
pub mod testing;
pub(crate) mod util;
pub mod workflow;

#[cfg(test)]
mod layers;

pub use scaffold_macros::{dataset, eval, scorer, variant};

/// serde, at the version scaffold uses: a suite's state, tool arguments and
/// outputs derive its traits without naming serde as a dependency (with
/// `#[serde(crate = "scaffold::serde")]`; see [`prelude`]).
pub use serde;

/// schemars, at the version scaffold uses: a tool's arguments and an
/// agent's structured output derive `JsonSchema` without naming schemars
/// as a dependency (with `#[schemars(crate = "scaffold::schemars")]`; see
/// [`prelude`]).
pub use schemars;

/// serde_json, at the version scaffold uses: case inputs, tool arguments and
/// structured outputs are its `Value`s (the prelude brings `Value` and
/// `json!`).
pub use serde_json;

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
    #[cfg(feature = "mimalloc")]
    pub use crate::harness::allocator::Allocator;
    pub use crate::harness::erased::{ErasedEval, HarnessCell, erase};
    pub use crate::harness::registry::{
        Built, DatasetRegistration, EvalDef, EvalOutput, EvalRegistration, IntoDatasets,
        ScorerRegistration, VariantRegistration,
    };
    pub use crate::workflow::IntoVariant;
    pub use inventory;
}

/// What `cargo-scaffold` and the workspace's own tests and benches reach;
/// not public API (like `insta::_cargo_insta_support`).
///
/// The results model, comparisons, statistics, reports and the harness's
/// environment names are the CLI's; a suite reads none of them. Paths
/// mirror the modules they come from. Closed to users:
/// ```compile_fail
/// use scaffold::eval::EvalResults;
/// ```
/// ```compile_fail
/// use scaffold::report::Format;
/// ```
/// ```compile_fail
/// let _ = scaffold::stats::mean(&[1.0]);
/// ```
/// ```compile_fail
/// use scaffold::assert::OutputContains;
/// ```
/// ```compile_fail
/// use scaffold::provider::limit::Limiter;
/// ```
/// ```compile_fail
/// use scaffold::signal::names::TOOL_CALL;
/// ```
/// ```
/// use scaffold::_cargo_scaffold_support::eval::{EvalResults, compare};
/// use scaffold::_cargo_scaffold_support::report::Format;
/// ```
#[doc(hidden)]
pub mod _cargo_scaffold_support {
    /// `cargo` as a shell starts it, from inside a cargo run: the one
    /// running us (`$CARGO`, else `cargo`) without the variables cargo set
    /// for the package it runs (see `util::without_package_vars`).
    pub fn nested_cargo() -> std::process::Command {
        let mut cmd =
            std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        crate::util::without_package_vars(&mut cmd);
        cmd
    }
    pub use crate::util::without_package_vars;
    /// Assertion internals the assertion tests check directly.
    pub mod assert {
        pub use crate::assert::glob::Glob;
        pub use crate::assert::path::{Path, PathSegment};
    }
    /// The results model, comparisons, gate and statistics.
    pub mod eval {
        pub use crate::eval::Cell;
        pub use crate::eval::cell::{CellEnv, CellResult};
        pub use crate::eval::compare::{
            CompareOptions, Comparison, VariantCompareOptions, Verdict, WinnerVerdict, compare,
            compare_variants,
        };
        pub use crate::eval::results::{CellRecord, EvalResults, RunConfig};
        pub use crate::eval::runs::{EvalPlan, EvalRunMeta, RecordedCell};
        pub use crate::eval::stats::summarize;
        /// Baseline and variant comparisons.
        pub mod compare {
            pub use crate::eval::compare::{Confidence, ImprovementKind, RegressionKind, Severity};
        }
        /// Quarantine files.
        pub mod gate {
            pub use crate::eval::gate::load_quarantine;
        }
        /// The results model.
        pub mod results {
            pub use crate::eval::results::{
                AssertionRecord, CellCounts, MergeError, RESULTS_SCHEMA, ScoreRecord,
            };
        }
        /// Statistics of results (and the pure ones of `crate::stats`).
        pub mod stats {
            pub use crate::eval::stats::{
                Alternative, LatencyStats, Power, PowerMethod, WilcoxonMethod, WilcoxonOptions,
                cases_for_effect, clustered_standard_error, mean, mean_interval,
                min_detectable_effect, paired_t_test, pass_at_k, pass_hat_k, percentile,
                sample_stddev, sign_flip_test, wilcoxon_signed_rank, wilson_interval,
            };
        }
    }
    /// The harness's environment variables, and its session summaries.
    pub mod harness {
        pub use crate::harness::fake::FAKE_ENV;
        pub use crate::harness::settings::{
            BASELINE_ENV, DATABASE_ENV, FORMAT_ENV, OUTPUT_ENV, RESUME_ENV, TAGS_ENV, TRIALS_ENV,
            VARIANTS_ENV,
        };
        pub use crate::harness::snapshot::session_summary;
    }
    /// Provider internals the provider tests reach.
    pub mod provider {
        /// The agent bridge's server of a run.
        pub mod bridge {
            pub use crate::provider::bridge::BridgeHost;
        }
        /// Rate limiting.
        pub mod limit {
            pub use crate::provider::limit::{RateLimits, with_rate_limits};
        }
        /// The recorder's redaction marker.
        pub mod recorder {
            pub use crate::provider::recorder::redact::REDACTED;
        }
        /// Structured-output schemas per API.
        pub mod schema {
            pub use crate::provider::schema::{AnswerCheck, anthropic_subset, openai_strict};
        }
    }
    /// The report renderers.
    pub mod report {
        pub use crate::report::escape::url_component as escape_url_component;
        pub use crate::report::escape::xml as escape_html;
        pub use crate::report::{ALL_FORMATS, Format, html, json, junit, markdown, render};
    }
    /// The fork environment variables.
    pub mod session {
        pub use crate::session::fork::{FORK_AT_ENV, FORK_FROM_ENV};
    }
    /// Signal names.
    pub mod signal {
        /// The names of the signals scaffold emits.
        pub mod names {
            pub use crate::signal::names::state_key;
        }
    }
    /// Store internals: run rows, the schema version, state folding.
    pub mod store {
        pub use crate::store::runs::EvalRunRecord;
        pub use crate::store::schema::SCHEMA_VERSION;
        pub use crate::store::state::fold_state;
    }
    /// Time formatting.
    pub mod util {
        pub use crate::util::rfc3339;
    }
}

/// The names most programs need.
///
/// Enough for a suite's `tests/evals.rs`: `use scaffold::prelude::*;`
/// brings [`Eval`](crate::eval::Eval), datasets (the [`dataset`](mod@crate::dataset)
/// module, [`Dataset`](crate::dataset::Dataset), [`Case`](crate::dataset::Case)),
/// both HTTP providers, the [`scorer`](mod@crate::scorer) module with its
/// functions (`scorer::output_valid()`, `scorer::cost(..)`, ...), the
/// workflow types, the error policy and rate limits
/// ([`OnError`](crate::eval::OnError), [`RateLimit`](crate::provider::RateLimit)),
/// serde's and schemars' traits and derives, and serde_json's `Value` and
/// `json!`, re-exported so that
/// `scaffold` is the only dependency a suite names:
///
/// ```
/// use scaffold::prelude::*;
///
/// /// A tool's arguments: the model sees their JSON Schema.
/// #[derive(Debug, Deserialize, JsonSchema)]
/// #[serde(crate = "scaffold::serde")]
/// #[schemars(crate = "scaffold::schemars")]
/// struct ReadArgs {
///     /// The file to read.
///     path: String,
/// }
///
/// let schema = scaffold::schemars::schema_for!(ReadArgs);
/// assert_eq!(schema.get("required"), Some(&json!(["path"])));
/// ```
pub mod prelude {
    pub use crate::dataset::{self, Case, Dataset, DatasetBuilder, DatasetError};
    pub use crate::eval::{Eval, OnError};
    pub use crate::metrics::Metrics;
    pub use crate::provider::anthropic::Anthropic;
    pub use crate::provider::openai::OpenAi;
    pub use crate::provider::{
        Pricing, Provider, ProviderError, ProviderOptions, RateLimit, ScriptedProvider,
        ScriptedReply, Usage,
    };
    pub use crate::scorer::{self, CustomScore, ScorerContext};
    pub use crate::session::{
        ForkFrom, ForkOptions, ForkPoint, ForkSource, ReplayOptions, ScoreOptions, SessionExport,
    };
    pub use crate::signal::Signal;
    pub use crate::store::Store;
    pub use crate::workflow::{
        Agent, AgentCommand, AgentCx, AgentState, Phase, RunOptions, RunResult, RunStatus, Tool,
        ToolContext, Variant, Workflow, run, run_with,
    };
    pub use schemars::JsonSchema;
    pub use serde::{Deserialize, Serialize};
    pub use serde_json::{Value, json};
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
    /// Its `rust,ignore` blocks are excerpts of `tests/agents`, whose own
    /// test (`tests/agents/tests/guide.rs`) checks they are.
    #[doc = include_str!("../../docs/your-own-agent.md")]
    struct YourOwnAgent;
}
