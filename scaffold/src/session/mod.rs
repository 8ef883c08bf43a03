//! Session operations: fork, score, replay, export and import of stored
//! sessions. General tools, not eval-only: evals fork with
//! [`Eval::fork_from`](crate::eval::Eval::fork_from) and grade with the same
//! code as [`score`].
//!
//! - [`fork`] continues a session from a [`ForkPoint`] (a phase occurrence,
//!   a signal index, or a predicate over the state) with another workflow
//!   variant; the child records its parent and fork point and is
//!   self-contained.
//! - [`score`] grades a stored session with scorers and assertions, running
//!   nothing.
//! - [`replay`] runs a stored session again through its recordings and lists
//!   the signals that differ.
//! - [`SessionExport`] writes a session to a JSON file and imports it into
//!   another store; [`ForkSource::file`] forks from such a file.
//!
//! ```
//! use scaffold::prelude::*;
//! use scaffold::scorer::custom;
//! use scaffold::session::{self, ForkOptions, ForkPoint, ForkSource, ScoreOptions};
//! use serde_json::json;
//!
//! #[derive(Clone, Default, serde::Serialize, serde::Deserialize)]
//! struct Build { goal: String, plan: String, code: String }
//!
//! fn workflow(coder_model: &str, code: &'static str) -> Workflow<Build> {
//!     let planner = Agent::<Build>::new("planner")
//!         .provider(ScriptedProvider::responder("planner-model", |_| ScriptedReply::text("1. routes")))
//!         .prompt(|s| format!("Plan {}", s.goal))
//!         .update(|t, s| s.plan = t);
//!     let coder = Agent::<Build>::new("coder")
//!         .provider(ScriptedProvider::responder(coder_model, move |_| ScriptedReply::text(code)))
//!         .prompt(|s| format!("Code {}", s.plan))
//!         .update(|t, s| s.code = t);
//!     Workflow::new("build", Build::default())
//!         .start(|input, s| s.goal = input.as_str().unwrap_or_default().into())
//!         .phase("planning", Phase::run(planner).next("coding"))
//!         .phase("coding", Phase::run(coder))
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = tokio::runtime::Runtime::new()?;
//! let store = Store::in_memory()?;
//! let base = rt.block_on(run_with(
//!     &workflow("small", "fn main() {}"),
//!     json!("a REST API"),
//!     &RunOptions::new().store(store.clone()),
//! ));
//!
//! // Same plan, another coder: fork at the first entry into `coding`.
//! let child = rt.block_on(session::fork(
//!     &ForkSource::stored(&store, &base.session_id),
//!     &ForkPoint::phase("coding").first(),
//!     &workflow("large", "fn main() { serve() }"),
//!     &ForkOptions::new().run(RunOptions::new().variant("large-coder")),
//! ))?;
//! assert_eq!(child.state.plan, "1. routes");
//! let record = store.session(&child.session_id)?.unwrap();
//! assert_eq!(record.meta.parent_id.as_deref(), Some(base.session_id.as_str()));
//!
//! // Grade it without running anything.
//! let options = ScoreOptions::<Build>::new()
//!     .scorer(custom("serves", |ctx: &scaffold::scorer::ScorerContext<'_, Build>| {
//!         ctx.state.code.contains("serve")
//!     }));
//! let report = rt.block_on(session::score(&store, &child.session_id, &options))?;
//! assert!(report.passed);
//! # Ok(())
//! # }
//! ```

mod error;
mod export;
pub(crate) mod fork;
mod point;
mod replay;
mod score;

pub use error::SessionError;
pub use export::SessionExport;
pub(crate) use fork::fork_at;
pub(crate) use fork::{FORK_AT_ENV, FORK_FROM_ENV};
pub use fork::{ForkFrom, ForkOptions, ForkOrigin, ForkSource, ParentPoint, fork, lineage};
pub use point::{ForkPoint, Occurrence, PhasePoint, ResolvedFork};
pub use replay::{ReplayOptions, ReplayReport, SignalDifference, replay};
pub use score::{ScoreOptions, ScoreReport, score};

pub(crate) use score::Grader;

use crate::provider::RecordingId;
use crate::signal::{Signal, names};
use crate::store::SessionRecord;
use crate::workflow::RecordingScope;

/// Tag prefix of an eval cell's dataset.
const DATASET_TAG: &str = "dataset:";
/// Tag prefix of an eval cell's case.
const CASE_TAG: &str = "case:";
/// Tag prefix of an eval cell's trial (only when the eval runs several).
const TRIAL_TAG: &str = "trial:";

/// The tags that let a stored eval cell be replayed through its recordings:
/// `dataset:{key}`, `case:{id}` and, with several trials, `trial:{n}`.
pub(crate) fn scope_tags(scope: &RecordingScope) -> Vec<String> {
    let mut tags = vec![
        format!("{DATASET_TAG}{}", scope.dataset),
        format!("{CASE_TAG}{}", scope.case),
    ];
    if let Some(trial) = scope.trial {
        tags.push(format!("{TRIAL_TAG}{trial}"));
    }
    tags
}

/// The recording scope a stored session ran with: from its `dataset:`,
/// `case:` and `trial:` tags and its variant (eval cells have them), else
/// from the id of its first `recording:linked` signal; `None` if neither.
pub(crate) fn recording_scope(
    record: &SessionRecord,
    signals: &[Signal],
) -> Option<RecordingScope> {
    let tag = |prefix: &str| {
        record
            .meta
            .tags
            .iter()
            .find_map(|t| t.strip_prefix(prefix))
            .map(str::to_owned)
    };
    if let (Some(dataset), Some(case), Some(variant)) =
        (tag(DATASET_TAG), tag(CASE_TAG), record.meta.variant.clone())
    {
        let trial = tag(TRIAL_TAG).and_then(|t| t.parse().ok());
        return Some(RecordingScope {
            dataset,
            case,
            variant,
            trial,
        });
    }
    let id: RecordingId = signals
        .iter()
        .find(|s| s.name == names::RECORDING_LINKED)?
        .payload
        .get("recordingId")?
        .as_str()?
        .parse()
        .ok()?;
    Some(RecordingScope {
        dataset: id.dataset,
        case: id.case,
        variant: id.variant,
        trial: id.trial,
    })
}
