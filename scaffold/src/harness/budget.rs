//! The cost budget of a run: `SCAFFOLD_MAX_COST` (one budget for every
//! eval of the run) or, without it, each eval's [`Eval::max_cost_usd`]
//! (for its own cells).
//!
//! The harness adds up the cost of the cells that finish (their
//! `metrics.costUsd`); once a budget is reached, no new cell it counts
//! starts: those cells fail as not started, the run stays unfinished and
//! resumable, and the summary says so in one line. The budget is per
//! invocation: a resume (`SCAFFOLD_RESUME`) may spend it again on the cells
//! left, without counting those finished before. Under nextest (a process
//! per cell) the invocation is the nextest run: each process adds up the
//! cost its run's cells recorded in the store before it starts its own.
//! Cells already under way when the budget is reached finish, so a run may
//! end above its budget by up to the cost of the cells running at once.
//!
//! [`Eval::max_cost_usd`]: crate::eval::Eval::max_cost_usd

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::ErasedEval;
use super::settings::MAX_COST_ENV;
use crate::eval::RecordedCell;
use crate::report::fmt::usd;

/// A cost budget and what was spent of it in this invocation.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: f64,
    /// What set it, for messages: `SCAFFOLD_MAX_COST`, or the eval's `max_cost_usd`.
    source: String,
    /// The eval whose cells it counts; `None`: every eval's.
    eval: Option<String>,
    spent: Mutex<f64>,
    not_started: AtomicUsize,
}

impl Budget {
    fn new(limit: f64, source: String, eval: Option<String>) -> Budget {
        Budget {
            limit,
            source,
            eval,
            spent: Mutex::new(0.0),
            not_started: AtomicUsize::new(0),
        }
    }

    fn spent(&self) -> f64 {
        *self.spent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether it is spent: no new cell starts.
    pub(crate) fn is_spent(&self) -> bool {
        // A hair of rounding (0.1 + 0.2) does not let one more cell start.
        self.spent() >= self.limit - 1e-12
    }

    /// Count a finished cell's cost.
    pub(crate) fn spend(&self, usd: f64) {
        if usd.is_finite() && usd > 0.0 {
            *self.spent.lock().unwrap_or_else(|p| p.into_inner()) += usd;
        }
    }

    /// Take what the run's cells recorded so far as spent (under nextest,
    /// where each process runs one cell).
    pub(crate) fn spent_as_recorded(&self, cells: &[RecordedCell]) {
        let spent = cells
            .iter()
            .filter(|c| self.eval.as_ref().is_none_or(|e| *e == c.eval))
            .map(|c| c.record.metrics.cost_usd)
            .filter(|c| c.is_finite() && *c > 0.0)
            .sum();
        *self.spent.lock().unwrap_or_else(|p| p.into_inner()) = spent;
    }

    /// A cell that does not start: counted, and why (its test's failure).
    pub(crate) fn not_started(&self) -> String {
        self.not_started.fetch_add(1, Ordering::Relaxed);
        format!(
            "not started: the cost budget is spent ({} of {}, {}); the run stays unfinished: \
             resume it with SCAFFOLD_RESUME=1",
            usd(self.spent()),
            usd(self.limit),
            self.source
        )
    }

    /// Cells it kept from starting.
    pub(crate) fn skipped(&self) -> usize {
        self.not_started.load(Ordering::Relaxed)
    }

    /// The summary's line, when the budget kept cells from starting:
    /// `Budget: $0.50 spent of $0.50 (SCAFFOLD_MAX_COST); 37 of 120 cells
    /// not started; run … stays unfinished: resume it with SCAFFOLD_RESUME=1`.
    pub(crate) fn line(&self, planned: usize, run: Option<&str>) -> Option<String> {
        let skipped = self.skipped();
        if skipped == 0 {
            return None;
        }
        let run = run.map_or(String::new(), |id| format!("run {id} "));
        Some(format!(
            "Budget: {} spent of {} ({}); {skipped} of {planned} cells not started; {run}stays \
             unfinished: resume it with SCAFFOLD_RESUME=1",
            usd(self.spent()),
            usd(self.limit),
            self.source
        ))
    }
}

/// The budget of each eval (in order): `SCAFFOLD_MAX_COST`'s, one for all,
/// else the eval's own, if any.
pub(crate) fn budgets(
    from_env: Option<f64>,
    evals: &[Box<dyn ErasedEval>],
) -> Vec<Option<Arc<Budget>>> {
    if let Some(limit) = from_env {
        let budget = Arc::new(Budget::new(limit, MAX_COST_ENV.to_string(), None));
        return evals.iter().map(|_| Some(budget.clone())).collect();
    }
    evals
        .iter()
        .map(|eval| {
            eval.max_cost_usd().map(|limit| {
                let source = format!("max_cost_usd of eval `{}`", eval.name());
                Arc::new(Budget::new(limit, source, Some(eval.name().to_string())))
            })
        })
        .collect()
}

/// Whether `usd` is a budget: a finite number of dollars above 0.
pub(crate) fn valid(usd: f64) -> bool {
    usd.is_finite() && usd > 0.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::CellRecord;

    #[test]
    fn a_budget_is_spent_once_the_cells_cost_reaches_it() {
        let budget = Budget::new(0.25, MAX_COST_ENV.into(), None);
        budget.spend(0.1);
        budget.spend(0.1);
        assert!(!budget.is_spent());
        budget.spend(f64::NAN);
        budget.spend(-1.0);
        assert!(!budget.is_spent(), "no cost from nonsense");
        budget.spend(0.1);
        assert!(budget.is_spent());
        assert_eq!(
            budget.line(8, Some("r1")),
            None,
            "no cell kept from starting"
        );
        assert!(budget.not_started().starts_with(
            "not started: the cost budget is spent ($0.30 of $0.25, SCAFFOLD_MAX_COST)"
        ));
        assert_eq!(
            budget.line(8, Some("r1")).as_deref(),
            Some(
                "Budget: $0.30 spent of $0.25 (SCAFFOLD_MAX_COST); 1 of 8 cells not started; \
                 run r1 stays unfinished: resume it with SCAFFOLD_RESUME=1"
            )
        );
        // Rounding does not let one more start: 0.1 + 0.2 is 0.30000000000000004.
        let exact = Budget::new(0.3, MAX_COST_ENV.into(), None);
        exact.spend(0.1);
        exact.spend(0.2);
        assert!(exact.is_spent());
    }

    #[test]
    fn under_nextest_the_store_says_what_was_spent() {
        let mut record = CellRecord::new("v", "c1");
        record.metrics.cost_usd = 0.2;
        let cells = vec![
            RecordedCell::new("qa", "qa::v::c1", record.clone(), true),
            RecordedCell::new("other", "other::v::c1", record, true),
        ];
        let own = Budget::new(0.3, "max_cost_usd of eval `qa`".into(), Some("qa".into()));
        own.spent_as_recorded(&cells);
        assert!(!own.is_spent(), "only its eval's cells count");
        let all = Budget::new(0.3, MAX_COST_ENV.into(), None);
        all.spent_as_recorded(&cells);
        assert!(all.is_spent());
    }

    #[test]
    fn budgets_are_numbers_of_dollars_above_zero() {
        assert!(valid(0.5));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(!valid(bad), "{bad}");
        }
    }
}
