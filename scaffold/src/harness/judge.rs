//! Each eval's verdict as a test of its own, `[gate] {eval}`, so that
//! libtest's closing line, the exit code and the reports tell one story.
//!
//! A cell that fails in an eval whose gate allows failures is reported
//! `ignored` (see `cell.rs`); the eval's gate test, listed after every cell,
//! waits for the eval's cells in this process to finish, judges them (the
//! gate, an unfinished run, the baseline) and fails when the eval fails the
//! run. The results it judged are kept for the summary, which prints and
//! writes them. Under nextest (one process per test) no gate test is
//! listed: the cells are the tests, and `cargo scaffold gate --run` judges
//! the run afterwards.

use std::sync::{Condvar, Mutex};

use libtest_mimic::{Completion, Failed};

use super::summary::add_resumed;
use super::*;

/// How many failed cells a failed gate test lists.
const LISTED_CELLS: usize = 20;

/// The cells of one eval that this process has yet to finish.
#[derive(Debug, Default)]
pub(super) struct Countdown {
    left: Mutex<usize>,
    none_left: Condvar,
}

impl Countdown {
    pub(super) fn new(cells: usize) -> Countdown {
        Countdown {
            left: Mutex::new(cells),
            none_left: Condvar::new(),
        }
    }

    /// A guard that counts one cell finished when dropped, however its
    /// test ends (a panic included).
    pub(super) fn cell(&self) -> CellDone<'_> {
        CellDone(self)
    }

    /// Wait until every cell has finished.
    fn wait(&self) {
        let mut left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        while *left > 0 {
            left = self.none_left.wait(left).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Counts a cell of its [`Countdown`] finished when dropped.
pub(super) struct CellDone<'a>(&'a Countdown);

impl Drop for CellDone<'_> {
    fn drop(&mut self) {
        let mut left = self.0.left.lock().unwrap_or_else(|e| e.into_inner());
        *left = left.saturating_sub(1);
        if *left == 0 {
            self.0.none_left.notify_all();
        }
    }
}

/// One eval judged: its results and what its baseline said.
pub(super) struct Judged {
    pub(super) results: EvalResults,
    /// Cells a resumed run finished before the interruption.
    pub(super) resumed: usize,
    /// The comparison with the baseline and the baseline itself (its
    /// transcripts stand beside regressions); `Err` when it could not be read.
    pub(super) baseline: Result<Option<(crate::eval::Comparison, EvalResults)>, String>,
}

impl Judged {
    /// Why the eval fails the run, if it does: the gate (a run not
    /// finished, unplayable cells and changed snapshots included) and the
    /// baseline.
    pub(super) fn failure(&self) -> Option<String> {
        let gate = self.results.gate_verdict();
        let mut why: Vec<String> = Vec::new();
        if !gate.passed {
            why.push(format!("gate {}", gate.describe()));
        }
        match &self.baseline {
            Ok(Some((cmp, _))) if cmp.summary.should_block => why.push(format!(
                "the baseline comparison blocks: {}",
                cmp.summary.block_reason.as_deref().unwrap_or("regressions")
            )),
            Ok(_) => {}
            Err(e) => why.push(format!("baseline: {e}")),
        }
        (!why.is_empty()).then(|| why.join("\n"))
    }
}

impl Harness {
    /// The test of eval `index`'s gate: once its cells in this process have
    /// finished, judge them; fails when the eval fails the run. An eval
    /// with no cell finished has nothing to judge: its gate test is ignored.
    pub(super) fn run_gate(&self, index: usize) -> Result<Completion, Failed> {
        if let Some(countdown) = self.countdowns.get(index) {
            countdown.wait();
        }
        let Some(judged) = self.judge_eval(index) else {
            return Ok(Completion::ignored_with("no cell of this eval ran"));
        };
        let failure = judged
            .failure()
            .map(|why| self.with_failed_cells(why, &judged.results));
        match self.judged.get(index).map(Mutex::lock) {
            Some(Ok(mut slot)) => *slot = Some(judged),
            Some(Err(poisoned)) => *poisoned.into_inner() = Some(judged),
            None => {}
        }
        match failure {
            None => Ok(Completion::Completed),
            Some(why) => {
                self.failed_tests.fetch_add(1, Ordering::Relaxed);
                Err(why.into())
            }
        }
    }

    /// `why` the eval failed, followed by its failed cells (the first
    /// [`LISTED_CELLS`]), each with the first line of its first failure
    /// and, when the HTML report is written, where its transcript is.
    fn with_failed_cells(&self, why: String, results: &EvalResults) -> String {
        let failed: Vec<&CellRecord> = (results.results.iter())
            .filter(|c| !c.passed && !c.quarantined && !c.excluded)
            .collect();
        let mut text = why;
        if !failed.is_empty() {
            text.push_str(&format!("\nfailed cells ({}):", failed.len()));
        }
        let trials = results.config.trials;
        for cell in failed.iter().take(LISTED_CELLS) {
            // The first line of the first failure: the cell's own test
            // printed it whole.
            let failures = cell.failures();
            let first = failures.first().and_then(|f| f.lines().next());
            text.push_str(&format!(
                "\n  {}: {}",
                cell.label(trials),
                first.unwrap_or("failed")
            ));
            if let Some(link) = self.transcript_link(&results.eval, cell) {
                text.push_str(&format!("\n    {link}"));
            }
        }
        if failed.len() > LISTED_CELLS {
            text.push_str(&format!("\n  … and {} more", failed.len() - LISTED_CELLS));
        }
        text
    }

    /// Eval `index`'s results from the cells this process finished (taken:
    /// at 10,000 cells they are most of the memory) and those a resumed run
    /// finished before, compared with the baseline. `None` when it has
    /// nothing to judge: no cell finished and none planned.
    pub(super) fn judge_eval(&self, index: usize) -> Option<Judged> {
        let eval = &self.evals[index];
        let finished = match self.finished.get(index)?.lock() {
            Ok(mut f) => std::mem::take(&mut *f),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        let mut cells = finished.into_records();
        let mut resumed = 0;
        if let Some(run) = self.run.as_ref().filter(|r| r.resuming) {
            resumed = add_resumed(run, eval.as_ref(), &mut cells);
        }
        let planned = self.planned.get(index).copied().unwrap_or(0);
        if cells.is_empty() && planned == 0 {
            return None;
        }
        let config = run_config(eval.as_ref(), distinct_inputs(&cells));
        let options = self.gate_options[index].clone();
        let timestamp = self.timestamp.get_or_init(crate::util::now_rfc3339).clone();
        // Cells that did not finish (kept from starting by a budget, or
        // crashed): the results say how many are missing.
        let results = EvalResults::new_with(eval.name(), timestamp, config, options, cells)
            .with_planned_cells(planned);
        let baseline = self.baseline.for_eval(eval.name()).map(|base| {
            base.map(|base| (compare(&base, &results, &CompareOptions::default()), base))
        });
        Some(Judged {
            results,
            resumed,
            baseline,
        })
    }
}
