//! `SCAFFOLD_FORK_FROM` and `SCAFFOLD_FORK_AT`: run the suite's variants
//! from a point of a stored session instead of from the start.
//!
//! The parent (a session of the run's database, or an exported `.json`
//! file) is read once at start-up and the fork point resolved in it, so a
//! bad point is one error before any cell runs. Only the cells of the
//! parent's case take part: those of its `eval:`, `case:` and `dataset:`
//! tags when it has them (eval cells do), else those whose case input is
//! the parent's input. Every other cell is left out of the run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::{DATABASE_ENV, ErasedEval};
use crate::session::SessionExport;
use crate::session::{FORK_AT_ENV, FORK_FROM_ENV, ForkFrom, ForkOrigin, ForkSource, SessionError};
use crate::store::{SessionRecord, Store};

/// The cells that fork, and from where.
pub(crate) struct ForkPlan {
    /// Per eval index, the indices of its cells that fork.
    cells: BTreeMap<usize, BTreeSet<usize>>,
    /// One line saying what forks, for the run's output.
    pub(crate) banner: String,
}

impl ForkPlan {
    /// Whether cell `cell` of eval `eval` takes part.
    pub(crate) fn keeps(&self, eval: usize, cell: usize) -> bool {
        self.cells.get(&eval).is_some_and(|c| c.contains(&cell))
    }
}

/// Read the fork settings; when they are set, pick the cells of the
/// parent's case and set the fork on their evals. `store` is the run's
/// store (`None` when the harness only lists its tests).
pub(crate) fn plan(
    manifest_dir: &Path,
    evals: &mut [Box<dyn ErasedEval>],
    store: Option<&Store>,
) -> Result<Option<ForkPlan>, String> {
    let Some(from) = ForkFrom::from_env().map_err(|e| env_error(e, FORK_FROM_ENV))? else {
        return Ok(None);
    };
    let from = from.base_dir(manifest_dir);
    let (parent, source) = load_parent(&from, manifest_dir, store)?;
    let point = source
        .resolve(from.point())
        .map_err(|e| format!("{FORK_AT_ENV}={}: {e}", from.point()))?;
    let cells = parent_cells(&parent, evals)?;
    for &e in cells.keys() {
        evals[e].set_fork_from(from.clone());
    }
    let banner = format!(
        "fork: the cells start from session {} at {} (phase `{}`, signal {}){}",
        parent.meta.id,
        from.point(),
        point.resolved.phase,
        point.resolved.event_index,
        tag(&parent, CASE)
            .map(|c| format!(", case `{c}`"))
            .unwrap_or_default()
    );
    Ok(Some(ForkPlan { cells, banner }))
}

const EVAL: &str = "eval:";
const CASE: &str = "case:";
const DATASET: &str = "dataset:";

fn tag<'a>(record: &'a SessionRecord, prefix: &str) -> Option<&'a str> {
    record.meta.tags.iter().find_map(|t| t.strip_prefix(prefix))
}

/// A session error as one line naming `var` (unless it names a variable already).
fn env_error(e: SessionError, var: &str) -> String {
    match e {
        SessionError::BadEnv { .. } => e.to_string(),
        SessionError::BadForkPoint { .. } => format!("{FORK_AT_ENV}: {e}"),
        other => format!("{var}: {other}"),
    }
}

/// The parent's record, and the source the cells fork from.
fn load_parent(
    from: &ForkFrom,
    manifest_dir: &Path,
    store: Option<&Store>,
) -> Result<(SessionRecord, ForkSource), String> {
    match from.origin() {
        ForkOrigin::File(path) => {
            let path = if path.is_relative() {
                manifest_dir.join(path)
            } else {
                path.clone()
            };
            let export = SessionExport::load(&path).map_err(|e| format!("{FORK_FROM_ENV}: {e}"))?;
            let record = export.session.clone();
            Ok((record, ForkSource::export(export)))
        }
        ForkOrigin::Session(id) => {
            let opened;
            let store = match store {
                Some(store) => store,
                None => {
                    opened = reading_store(manifest_dir, id)?;
                    &opened
                }
            };
            let missing = || {
                let memory = store.path().starts_with(":memory:");
                let hint = if memory {
                    format!(
                        "{DATABASE_ENV} is `:memory:`, a new empty database: use the database \
                         that holds the session, or fork from an export of it \
                         ({FORK_FROM_ENV}=file.json)"
                    )
                } else {
                    format!(
                        "check {DATABASE_ENV} (the session's database) or the id \
                         (`cargo scaffold sessions list`)"
                    )
                };
                format!(
                    "{FORK_FROM_ENV}: no session `{id}` in {}: {hint}",
                    store.path()
                )
            };
            let record = store
                .session(id)
                .map_err(|e| format!("{FORK_FROM_ENV}: {e}"))?
                .ok_or_else(missing)?;
            Ok((record, ForkSource::stored(store, id.clone())))
        }
    }
}

/// The store the parent is read from when the harness opened none (it
/// only lists its tests): the run's database, which must exist.
fn reading_store(manifest_dir: &Path, id: &str) -> Result<Store, String> {
    let path = match std::env::var(DATABASE_ENV) {
        Ok(v) if v == ":memory:" => {
            return Err(format!(
                "{FORK_FROM_ENV}: session `{id}` cannot be in {DATABASE_ENV}=:memory:, a new \
                 empty database: use the database that holds it, or fork from an export of it \
                 ({FORK_FROM_ENV}=file.json)"
            ));
        }
        Ok(v) if !v.is_empty() => std::path::PathBuf::from(v),
        _ => Store::default_path_from(manifest_dir),
    };
    match Store::open_existing(&path) {
        Ok(Some(store)) => Ok(store),
        Ok(None) => Err(format!(
            "{FORK_FROM_ENV}: session `{id}`: there is no session database at {} (set \
             {DATABASE_ENV} to the database that holds it)",
            path.display()
        )),
        Err(e) => Err(format!("{FORK_FROM_ENV}: {e}")),
    }
}

/// The cells of the parent's case, per eval; an error when there are none.
fn parent_cells(
    parent: &SessionRecord,
    evals: &[Box<dyn ErasedEval>],
) -> Result<BTreeMap<usize, BTreeSet<usize>>, String> {
    let eval_tag = tag(parent, EVAL);
    let case = tag(parent, CASE);
    let dataset = tag(parent, DATASET);
    // The parent's eval when this suite has it; else every eval.
    let scope: Vec<usize> = match eval_tag.and_then(|n| evals.iter().position(|e| e.name() == n)) {
        Some(e) => vec![e],
        None => (0..evals.len()).collect(),
    };
    let mut out: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for e in scope {
        let eval = &evals[e];
        for cell in eval.cells() {
            let of_parent = match case {
                Some(case) => {
                    cell.id.case == case
                        && dataset.is_none_or(|d| {
                            eval.cell_case(cell.index).is_some_and(|(key, _)| key == d)
                        })
                }
                None => eval
                    .cell_case(cell.index)
                    .is_some_and(|(_, input)| input == parent.meta.input),
            };
            if of_parent {
                out.entry(e).or_default().insert(cell.index);
            }
        }
    }
    if !out.is_empty() {
        return Ok(out);
    }
    let id = &parent.meta.id;
    Err(match case {
        Some(case) => format!(
            "{FORK_FROM_ENV}: session {id} ran case `{case}`{}{}, which no eval of this suite \
             has: fork it in the suite that ran it, or pick another session",
            dataset
                .map(|d| format!(" of dataset `{d}`"))
                .unwrap_or_default(),
            eval_tag
                .map(|e| format!(" in eval `{e}`"))
                .unwrap_or_default(),
        ),
        None => format!(
            "{FORK_FROM_ENV}: session {id} ran on input {}, which no case of this suite has: a \
             fork continues the parent's run, so a case must have the parent's input",
            short_json(&parent.meta.input)
        ),
    })
}

fn short_json(v: &Value) -> String {
    let s = serde_json::to_string(v).unwrap_or_default();
    if s.chars().count() > 120 {
        let mut cut: String = s.chars().take(119).collect();
        cut.push('…');
        cut
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{Format, load_str};
    use crate::eval::Eval;
    use crate::harness::erased::erase;
    use crate::provider::{ScriptedProvider, ScriptedReply};
    use crate::store::{SessionMeta, SessionStatus};
    use crate::workflow::{Agent, Phase, Workflow};
    use serde_json::json;

    fn workflow() -> Workflow<String> {
        let agent = Agent::<String>::new("a")
            .provider(ScriptedProvider::new("m").reply(ScriptedReply::text("x")))
            .prompt(|s| s.clone())
            .update(|t, s| *s = t);
        Workflow::new("w", String::new()).phase("p", Phase::run(agent))
    }

    fn suite() -> Vec<Box<dyn ErasedEval>> {
        let ds = |name: &str| {
            let src = format!(
                "name: {name}\ncases:\n  - id: a\n    input: {{n: 1}}\n    assertions: []\n  - id: b\n    input: {{n: 2}}\n    assertions: []\n"
            );
            load_str(&src, Format::Yaml, "t.yaml").unwrap()
        };
        let eval = |name: &str| {
            Eval::new()
                .name(name)
                .variant("v1", workflow())
                .variant("v2", workflow())
                .dataset(ds("one"))
                .dataset(ds("two"))
        };
        vec![erase(eval("first")), erase(eval("second"))]
    }

    fn parent(tags: &[&str], input: Value) -> SessionRecord {
        SessionRecord {
            meta: SessionMeta::new("p-1", "w")
                .tags(tags.iter().copied())
                .input(input),
            status: SessionStatus::Completed,
            error: None,
            ended_at_ms: None,
            duration_ms: None,
            output: None,
            final_state: None,
            signal_count: 0,
        }
    }

    fn picked(record: &SessionRecord) -> Result<Vec<String>, String> {
        let evals = suite();
        let cells = parent_cells(record, &evals)?;
        let mut names = Vec::new();
        for (e, set) in cells {
            for cell in evals[e].cells() {
                if set.contains(&cell.index) {
                    let (ds, _) = evals[e].cell_case(cell.index).unwrap();
                    names.push(format!("{}/{ds}", cell.id));
                }
            }
        }
        Ok(names)
    }

    #[test]
    fn tags_pick_the_parents_eval_dataset_and_case() {
        let p = parent(&["eval:second", "dataset:two", "case:b"], json!({"n": 2}));
        assert_eq!(
            picked(&p).unwrap(),
            ["second::v1::b/two", "second::v2::b/two"]
        );
        // Without a dataset tag: the case in every dataset of the eval.
        let p = parent(&["eval:first", "case:a"], json!({"n": 1}));
        assert_eq!(picked(&p).unwrap().len(), 4);
        // An eval this suite does not have: every eval.
        let p = parent(&["eval:gone", "dataset:one", "case:a"], json!({"n": 1}));
        assert_eq!(picked(&p).unwrap().len(), 4);
    }

    #[test]
    fn without_tags_the_input_decides() {
        let p = parent(&[], json!({"n": 2}));
        assert_eq!(picked(&p).unwrap().len(), 8);
        let err = picked(&parent(&[], json!({"n": 3}))).unwrap_err();
        assert_eq!(
            err,
            "SCAFFOLD_FORK_FROM: session p-1 ran on input {\"n\":3}, which no case of this suite \
             has: a fork continues the parent's run, so a case must have the parent's input"
        );
        let err = picked(&parent(&["eval:first", "dataset:one", "case:zz"], json!(1))).unwrap_err();
        assert_eq!(
            err,
            "SCAFFOLD_FORK_FROM: session p-1 ran case `zz` of dataset `one` in eval `first`, which \
             no eval of this suite has: fork it in the suite that ran it, or pick another session"
        );
    }
}
