//! The trials of the cells a process may run: one per cell of the suite,
//! or the one cell the run's index names, and each eval's gate.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use libtest_mimic::{Arguments, Trial};

use super::cell_index::{EvalCounts, IndexWriter, IndexedCell};
use super::settings::glob_matches;
use super::setup::Setup;
use super::{ErasedEval, EvalPlan, GateOptions, Harness, erased, under_nextest, wanted_tags};

/// The kind of a cell's trial: `--list` prints `[eval] NAME`.
pub(super) const CELL_KIND: &str = "eval";

/// The trials of the cells this process may run, and what the run and the
/// progress bar need to know of them.
#[derive(Default)]
pub(super) struct Cells {
    pub(super) trials: Vec<Trial>,
    /// Per eval, the distinct cases of its cells.
    pub(super) inputs: Vec<usize>,
    /// Per eval, how many cells this process runs.
    pub(super) running: Vec<usize>,
    /// Per eval, how many the whole run would without a test-name filter
    /// (what each process of a nextest run, given one name, plans for the run).
    pub(super) selected: Vec<usize>,
    /// The length of the shortest name of a running cell.
    pub(super) shortest: Option<usize>,
    /// The test names of every cell this process may run (empty unless resuming).
    pub(super) planned: HashSet<String>,
    /// `SCAFFOLD_TAGS`: the tags a cell needs one of to run.
    pub(super) tags: Option<Vec<String>>,
}

impl Cells {
    /// The trials are built before the harness they run on (the run and the
    /// progress bar depend on which cells they are), one cell at a time: no
    /// list of the cells is kept beside them.
    pub(super) fn build(setup: &Setup, args: &Arguments, shared: &Arc<OnceLock<Harness>>) -> Cells {
        if let Some(cell) = &setup.one_cell {
            return Cells::one(cell, args, shared);
        }
        let evals = &setup.evals;
        let tags = wanted_tags();
        let resuming = setup.settings.resume.is_some();
        // `NAME --exact`, as nextest runs each test: only that cell's trial is
        // kept (of 10,000 cells, 4 ms of a 23 ms process), as libtest's own
        // filter decides.
        let one_cell = args.exact && args.filter.is_some() && !args.list;
        let nextest = under_nextest();
        let mut index = setup.index.as_ref().map(|_| IndexWriter::new());
        let mut cases: Vec<HashSet<String>> = vec![HashSet::new(); evals.len()];
        let mut cells = Cells {
            running: vec![0; evals.len()],
            selected: vec![0; evals.len()],
            ..Cells::default()
        };
        for (e, eval) in evals.iter().enumerate() {
            eval.for_each_cell(&mut |cell| {
                if !setup.keeps(tags.as_deref(), e, &cell) {
                    return;
                }
                let name = cell.id.to_string();
                let (index_at, ignored) = (cell.index, cell.ignored);
                if let Some(index) = index.as_mut() {
                    let place = eval.cell_place(index_at);
                    index.add(&name, (e, ignored), place, |d, c| eval.case_alone(d, c));
                }
                cases[e].insert(cell.id.case);
                if resuming {
                    cells.planned.insert(name.clone());
                }
                let trial = cell_trial(name, (e, index_at), ignored, shared);
                let filtered_out = args.is_filtered_out(&trial);
                // Under nextest every process counts the same cells, whatever
                // its own `--ignored` flag (with `--run-ignored`, some have it).
                let counts = if nextest {
                    !ignored
                } else {
                    !args.is_ignored(&trial)
                };
                cells.selected[e] += usize::from(counts);
                if filtered_out && one_cell {
                    return;
                }
                if !filtered_out && !args.is_ignored(&trial) {
                    cells.running[e] += 1;
                    let len = trial.name().chars().count();
                    cells.shortest = Some(cells.shortest.map_or(len, |s| s.min(len)));
                }
                cells.trials.push(trial);
            });
        }
        if !nextest {
            cells.push_gates(evals, args, shared);
        }
        cells.inputs = cases.iter().map(HashSet::len).collect();
        cells.tags = tags;
        if let (Some(at), Some(index)) = (&setup.index, index) {
            at.write(index, &cells.counts(evals));
        }
        // Held until every trial has run: no room to spare (at 10,000 cells the
        // doubled vector left 0.5 MB unused).
        cells.trials.shrink_to_fit();
        cells
    }

    /// The trial of the one cell the run's index names, and the run's plan
    /// as the index has it.
    fn one(cell: &IndexedCell, args: &Arguments, shared: &Arc<OnceLock<Harness>>) -> Cells {
        let evals = cell.evals.len();
        let trial = cell_trial(
            cell.name.clone(),
            (cell.eval, cell.within),
            cell.ignored,
            shared,
        );
        let mut running = vec![0; evals];
        if !args.is_filtered_out(&trial) && !args.is_ignored(&trial) {
            running[cell.eval] = 1;
        }
        Cells {
            shortest: Some(trial.name().chars().count()),
            trials: vec![trial],
            inputs: cell.evals.iter().map(|(_, c)| c.inputs).collect(),
            selected: cell.evals.iter().map(|(_, c)| c.selected).collect(),
            running,
            planned: HashSet::new(),
            tags: wanted_tags(),
        }
    }

    /// Per eval, its name and what the run plans of it.
    fn counts(&self, evals: &[Box<dyn ErasedEval>]) -> Vec<(String, EvalCounts)> {
        evals
            .iter()
            .zip(self.selected.iter().zip(&self.inputs))
            .map(|(eval, (&selected, &inputs))| {
                (eval.name().to_string(), EvalCounts { selected, inputs })
            })
            .collect()
    }

    /// After every cell, one test per eval that has cells: its gate
    /// (`[gate] {eval}`, see `judge.rs`). Not under nextest, whose
    /// processes each run one test and never see the whole run.
    pub(super) fn push_gates(
        &mut self,
        evals: &[Box<dyn ErasedEval>],
        args: &Arguments,
        shared: &Arc<OnceLock<Harness>>,
    ) {
        let one_test = args.exact && args.filter.is_some() && !args.list;
        for (e, eval) in evals.iter().enumerate() {
            if self.selected[e] == 0 {
                continue;
            }
            let h = shared.clone();
            let gate = Trial::ignorable_test(eval.name(), move || match h.get() {
                Some(h) => h.run_gate(e),
                None => Err("the harness was not set up".into()),
            })
            .with_kind("gate");
            if one_test && args.is_filtered_out(&gate) {
                continue;
            }
            self.trials.push(gate);
        }
    }

    /// Per eval, its gate options and the cells planned for the run.
    pub(super) fn plans(&self, gate_options: &[GateOptions]) -> Vec<EvalPlan> {
        let planned_cells = if under_nextest() {
            &self.selected
        } else {
            &self.running
        };
        gate_options
            .iter()
            .zip(planned_cells)
            .map(|(options, &planned)| EvalPlan {
                gate_options: options.clone(),
                planned_cells: Some(planned),
            })
            .collect()
    }
}

impl Setup {
    /// Whether the cell of eval `e` is selected by the tags, the variant
    /// globs and the fork.
    fn keeps(&self, tags: Option<&[String]>, e: usize, cell: &erased::HarnessCell) -> bool {
        tags.is_none_or(|tags| cell.tags.iter().any(|t| tags.contains(t)))
            && self
                .settings
                .variants
                .as_ref()
                .is_none_or(|globs| globs.iter().any(|g| glob_matches(g, &cell.id.variant)))
            && self.fork.as_ref().is_none_or(|f| f.keeps(e, cell.index))
    }
}

/// The trial of cell `index` of eval `e`, named `name`, run on the harness
/// `shared` holds once it is set up.
fn cell_trial(
    name: String,
    (e, index): (usize, usize),
    ignored: bool,
    shared: &Arc<OnceLock<Harness>>,
) -> Trial {
    let h = shared.clone();
    Trial::ignorable_test(name, move || match h.get() {
        Some(h) => h.cell_test(e, index),
        None => Err("the harness was not set up".into()),
    })
    .with_kind(CELL_KIND)
    .with_ignored_flag(ignored)
}
