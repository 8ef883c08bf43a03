//! `Eval<S>` behind a trait object, so evals over different states live in one list.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use super::registry::Built;
use super::snapshot::SessionSnapshot;
use crate::dataset::Dataset;
use crate::eval::{CellEnv, CellId, CellResult, Eval, GateOptions};
use crate::provider::recorder::MatchRules;
use crate::scorer::Scorer;
use crate::session::ForkFrom;
use crate::util::file_safe;
use crate::workflow::{State, Workflow};

/// One cell as the harness lists it.
#[derive(Debug, Clone)]
pub struct HarnessCell {
    /// Position in the eval's cell list.
    pub index: usize,
    /// Which cell.
    pub id: CellId,
    /// The case's tags.
    pub tags: Vec<String>,
    /// Skipped (`skip: true`, or another case of its dataset has `only: true`).
    pub ignored: bool,
}

/// What running a cell gives the harness.
#[derive(Debug, Clone)]
pub struct CellOutcome {
    /// The graded result.
    pub result: CellResult,
    /// What the session snapshot is made of.
    pub(crate) session: SessionSnapshot,
}

impl CellOutcome {
    /// The session summary the snapshot holds (see [`session_summary`](super::session_summary)).
    pub fn summary(&self) -> Value {
        self.session.summary(&self.result)
    }

    fn missing(eval: &str, index: usize) -> CellOutcome {
        let id = CellId {
            eval: eval.to_string(),
            variant: String::new(),
            case: format!("#{index}"),
            trial: None,
        };
        CellOutcome {
            result: CellResult::failed(id, format!("eval `{eval}` has no cell #{index}")),
            session: SessionSnapshot::default(),
        }
    }
}

/// A boxed future of a cell's outcome.
pub type CellFuture<'a> = Pin<Box<dyn Future<Output = CellOutcome> + Send + 'a>>;

/// An eval with its state type erased.
pub trait ErasedEval: Send + Sync {
    /// The eval's name.
    fn name(&self) -> &str;
    /// Name it `name` unless the builder named it.
    fn set_default_name(&mut self, name: &str);
    /// Add a registered variant (a boxed `Workflow<S>`).
    fn add_variant(&mut self, name: &str, workflow: Built) -> Result<(), String>;
    /// Add a registered dataset.
    fn add_dataset(&mut self, dataset: Dataset);
    /// Add a registered scorer (a boxed `Arc<dyn Scorer<S>>`).
    fn add_scorer(&mut self, scorer: Built) -> Result<(), String>;
    /// Check the eval is complete (variants, cases).
    fn check(&self) -> Result<(), String>;
    /// Call `f` with each cell, in order, one at a time (the harness keeps
    /// no list of them).
    fn for_each_cell(&self, f: &mut dyn FnMut(HarnessCell));
    /// Free the datasets' cases once every cell has run; the eval keeps its
    /// name, variants, scorers and settings, and has no cells after.
    fn release_cases(&mut self);
    /// The cells, in order.
    fn cells(&self) -> Vec<HarnessCell> {
        let mut cells = Vec::new();
        self.for_each_cell(&mut |cell| cells.push(cell));
        cells
    }
    /// Run cell `index`.
    fn run_cell<'a>(&'a self, index: usize, env: &'a CellEnv) -> CellFuture<'a>;
    /// Trials per variant × case.
    fn trials(&self) -> u32;
    /// Run every variant × case this many times (at least 1; `SCAFFOLD_TRIALS`).
    fn set_trials(&mut self, trials: u32);
    /// The pass-rate gate.
    fn min_pass_rate(&self) -> f64;
    /// Concurrency asked for.
    fn concurrency(&self) -> Option<usize>;
    /// Recordings folder, relative to the package.
    fn recordings_dir(&self) -> Option<std::path::PathBuf>;
    /// The command that re-records its calls, if it has its own.
    fn rerecord_command(&self) -> Option<&str>;
    /// Which differences between a request and its recording playback forgives.
    fn match_rules(&self) -> MatchRules;
    /// Variant names.
    fn variant_names(&self) -> Vec<String>;
    /// Per variant whose name `selected` keeps, each agent whose provider
    /// lacks the API key it needs, then the eval's judge and scorers that
    /// lack theirs: who (the variant and agent, the judge, the scorer) and
    /// the variable.
    fn missing_keys(&self, selected: &dyn Fn(&str) -> bool) -> Vec<(String, &'static str)>;
    /// Scorer names, in order.
    fn scorer_names(&self) -> Vec<String>;
    /// Where the cells fork from, if they do.
    fn forks_from(&self) -> Option<&ForkFrom>;
    /// Fork every cell from `from` (e.g. [`ForkFrom::from_env`]), replacing
    /// the eval's own `fork_from`.
    fn set_fork_from(&mut self, from: ForkFrom);
    /// The id of cell `index`, whose `to_string()` is its test name (the
    /// harness's trials hold the index, not a second copy of the name).
    fn cell_id(&self, index: usize) -> Option<CellId> {
        let _ = index;
        None
    }
    /// The dataset key and the case input of cell `index` (the harness
    /// picks the cells of a fork's parent case with them).
    fn cell_case(&self, index: usize) -> Option<(&str, Value)> {
        let _ = index;
        None
    }
    /// Where cell `index` is: its dataset, its case in that dataset, and
    /// its index among the case's cells (variant × trial), which is its
    /// index in an eval whose only dataset is that case alone.
    fn cell_place(&self, index: usize) -> Option<(usize, usize, usize)> {
        let _ = index;
        None
    }
    /// Dataset `dataset` with its case `case` alone.
    fn case_alone(&self, dataset: usize, case: usize) -> Option<Dataset> {
        let _ = (dataset, case);
        None
    }
    /// How the results are judged: quarantine, confidence, pass@k, gate.
    fn gate_options(&self) -> GateOptions;
    /// The eval's cost budget in US dollars, if it has one.
    fn max_cost_usd(&self) -> Option<f64> {
        None
    }
}

/// What [`ErasedEval::check`] says of an eval without cases.
pub(crate) const NO_CASES: &str = "it has no cases (add `.dataset(..)` or a `#[dataset]` function)";

/// Erase an eval's state type (the `#[eval]` macro calls this).
pub fn erase<S: State>(eval: Eval<S>) -> Box<dyn ErasedEval> {
    Box::new(eval)
}

impl<S: State> ErasedEval for Eval<S> {
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("eval")
    }

    fn set_default_name(&mut self, name: &str) {
        Eval::set_default_name(self, name);
    }

    fn add_variant(&mut self, name: &str, workflow: Built) -> Result<(), String> {
        let workflow = workflow.downcast::<Workflow<S>>().map_err(|_| {
            format!(
                "returns a workflow over another state type than the eval's `{}`",
                std::any::type_name::<S>()
            )
        })?;
        if self.variants.iter().any(|(n, _)| n == name) {
            return Err(format!("the eval already has a variant named `{name}`"));
        }
        let workflow = self.with_agent(*workflow);
        self.variants.push((name.to_string(), workflow));
        Ok(())
    }

    fn add_dataset(&mut self, dataset: Dataset) {
        self.datasets.push(dataset);
    }

    fn add_scorer(&mut self, scorer: Built) -> Result<(), String> {
        let scorer = scorer.downcast::<Arc<dyn Scorer<S>>>().map_err(|_| {
            format!(
                "is not a scorer over the eval's state `{}`",
                std::any::type_name::<S>()
            )
        })?;
        self.scorers.push(*scorer);
        Ok(())
    }

    fn check(&self) -> Result<(), String> {
        if self.variants.is_empty() {
            return Err(
                "it has no variants (add `.variant(..)` or a `#[variant]` function)".into(),
            );
        }
        if self.datasets.iter().all(|d| d.cases.is_empty()) {
            return Err(NO_CASES.into());
        }
        self.gate.check()?;
        self.gate
            .check_primary_scorer(&ErasedEval::scorer_names(self))?;
        if let Some(usd) = self.max_cost_usd.filter(|usd| !super::budget::valid(*usd)) {
            return Err(format!(
                "max_cost_usd {usd} is not a cost in US dollars above 0 (e.g. 0.50)"
            ));
        }
        for (name, wf) in &self.variants {
            if let Err(errors) = wf.validate() {
                return Err(format!("variant `{name}`: {}", errors.join("; ")));
            }
        }
        // Recordings and snapshots name a variant by its file-safe form.
        let mut files: HashMap<String, &str> = HashMap::new();
        for (name, _) in &self.variants {
            let file = file_safe(name);
            if let Some(first) = files.insert(file.clone(), name) {
                return Err(format!(
                    "variants `{first}` and `{name}` name the same files: recordings and \
                     snapshots write both as `{file}`; rename one"
                ));
            }
        }
        Ok(())
    }

    fn release_cases(&mut self) {
        self.datasets = Vec::new();
    }

    fn for_each_cell(&self, f: &mut dyn FnMut(HarnessCell)) {
        // Whether a case of the dataset has `only: true`, once per dataset.
        let mut with_only: Option<(*const Dataset, bool)> = None;
        for (index, cell) in Eval::cells(self).enumerate() {
            let only = match with_only {
                Some((dataset, only)) if std::ptr::eq(dataset, cell.dataset) => only,
                _ => {
                    let only = cell.dataset.cases.iter().any(|c| c.only);
                    with_only = Some((cell.dataset, only));
                    only
                }
            };
            f(HarnessCell {
                index,
                id: cell.id,
                tags: cell.case.tags.clone(),
                ignored: cell.case.skip || (only && !cell.case.only),
            });
        }
    }

    fn run_cell<'a>(&'a self, index: usize, env: &'a CellEnv) -> CellFuture<'a> {
        Box::pin(async move {
            let Some(cell) = self.cell_at(index) else {
                return CellOutcome::missing(self.name(), index);
            };
            let (result, run) = Eval::run_cell(self, &cell, env).await;
            let final_state = serde_json::to_value(&run.state).unwrap_or(Value::Null);
            let session = SessionSnapshot {
                signals: run.signals,
                final_state,
            };
            CellOutcome { result, session }
        })
    }

    fn trials(&self) -> u32 {
        self.trials
    }

    fn set_trials(&mut self, trials: u32) {
        self.trials = trials.max(1);
    }

    fn min_pass_rate(&self) -> f64 {
        self.min_pass_rate
    }

    fn concurrency(&self) -> Option<usize> {
        self.concurrency
    }

    fn recordings_dir(&self) -> Option<std::path::PathBuf> {
        self.recordings.clone()
    }

    fn rerecord_command(&self) -> Option<&str> {
        self.rerecord.as_deref()
    }

    fn match_rules(&self) -> MatchRules {
        self.match_rules.clone()
    }

    fn variant_names(&self) -> Vec<String> {
        self.variants.iter().map(|(n, _)| n.clone()).collect()
    }

    fn missing_keys(&self, selected: &dyn Fn(&str) -> bool) -> Vec<(String, &'static str)> {
        let mut missing = Vec::new();
        for (variant, workflow) in self.variants.iter().filter(|(n, _)| selected(n)) {
            for agent in workflow.agents() {
                if let Some(var) = agent.provider_ref().and_then(|p| p.missing_key()) {
                    missing.push((
                        format!("variant `{variant}`, agent `{}`", agent.name()),
                        var,
                    ));
                }
            }
        }
        // The judges grade the cells of the variants that run, if any do.
        if !self.variants.iter().any(|(n, _)| selected(n)) {
            return missing;
        }
        if let Some(var) = self.judge.as_ref().and_then(|j| j.missing_key()) {
            missing.push(("the judge of its llm.judge assertions".to_string(), var));
        }
        for scorer in &self.scorers {
            if let Some(var) = scorer.missing_key() {
                missing.push((format!("scorer `{}`", scorer.name()), var));
            }
        }
        missing
    }

    fn scorer_names(&self) -> Vec<String> {
        Eval::scorer_names(self)
    }

    fn forks_from(&self) -> Option<&ForkFrom> {
        Eval::forks_from(self)
    }

    fn set_fork_from(&mut self, from: ForkFrom) {
        Eval::set_fork_from(self, from);
    }

    fn cell_id(&self, index: usize) -> Option<CellId> {
        self.cell_at(index).map(|cell| cell.id)
    }

    fn cell_case(&self, index: usize) -> Option<(&str, Value)> {
        let cell = self.cell_at(index)?;
        Some((cell.dataset.key(), cell.case.input()))
    }

    fn cell_place(&self, index: usize) -> Option<(usize, usize, usize)> {
        self.locate(index)
    }

    fn case_alone(&self, dataset: usize, case: usize) -> Option<Dataset> {
        self.datasets.get(dataset)?.with_one_case(case)
    }

    fn gate_options(&self) -> GateOptions {
        Eval::gate_options(self).clone()
    }

    fn max_cost_usd(&self) -> Option<f64> {
        self.max_cost_usd
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{Format, load_str};
    use crate::harness::erased::erase;
    use crate::provider::{ScriptedProvider, ScriptedReply};
    use crate::workflow::{Agent, Phase};

    fn eval(variants: &[&str]) -> Box<dyn ErasedEval> {
        let workflow = || {
            let agent = Agent::<String>::new("a")
                .provider(ScriptedProvider::new("m").reply(ScriptedReply::text("x")))
                .prompt(|s| s.clone())
                .update(|t, s| *s = t);
            Workflow::new("w", String::new()).phase("p", Phase::run(agent))
        };
        let src = "name: d\ncases:\n  - id: a\n    input: 1\n    assertions: []\n";
        let mut eval = Eval::new().dataset(load_str(src, Format::Yaml, "d.yaml").unwrap());
        for v in variants {
            eval = eval.variant(*v, workflow());
        }
        erase(eval)
    }

    #[test]
    fn variants_that_name_the_same_files_are_refused() {
        assert_eq!(eval(&["gpt-4o", "claude"]).check(), Ok(()));
        assert_eq!(
            eval(&["gpt 4o", "claude", "gpt-4o"]).check(),
            Err(
                "variants `gpt 4o` and `gpt-4o` name the same files: recordings and \
                 snapshots write both as `gpt-4o`; rename one"
                    .to_string()
            )
        );
    }
}
