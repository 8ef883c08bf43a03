//! The results of the runs last read, kept while the server runs: a
//! finished run never changes, so filtering or paging it again reads no
//! record back. A run still going is read afresh each time.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use scaffold::_cargo_scaffold_support::eval::EvalResults;
use scaffold::_cargo_scaffold_support::store::EvalRunRecord;
use scaffold::store::{Store, StoreError};

/// How many finished runs are kept.
const KEPT: usize = 6;

/// A run's results, by eval name.
pub type Results = Arc<Vec<EvalResults>>;

/// The finished runs' results last read, the latest last.
#[derive(Default)]
pub struct RunCache {
    kept: Mutex<VecDeque<(String, Results)>>,
}

impl RunCache {
    /// The results of `run`, from the cache when it is finished and kept.
    pub fn results(&self, store: &Store, run: &EvalRunRecord) -> Result<Results, StoreError> {
        if run.finished
            && let Some(found) = self.kept().iter().find(|(id, _)| *id == run.id)
        {
            return Ok(found.1.clone());
        }
        let mut evals = store.eval_results(&run.id)?;
        evals.sort_by(|a, b| a.eval.cmp(&b.eval));
        let evals = Arc::new(evals);
        if run.finished {
            let mut kept = self.kept();
            kept.retain(|(id, _)| *id != run.id);
            if kept.len() == KEPT {
                kept.pop_front();
            }
            kept.push_back((run.id.clone(), evals.clone()));
        }
        Ok(evals)
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, VecDeque<(String, Results)>> {
        // A panic while holding the lock left the list whole: use it.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}
