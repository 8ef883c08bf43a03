//! The results of the runs last read, kept while the server runs, so that
//! filtering or paging a run again reads no record back. Each is kept with
//! the run's revision (it grows whenever a cell is recorded, again too) and
//! whether the run had finished: a run that changed since is read afresh.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use scaffold::_cargo_scaffold_support::eval::EvalResults;
use scaffold::_cargo_scaffold_support::store::EvalRunRecord;
use scaffold::store::{Store, StoreError};

/// How many runs are kept.
const KEPT: usize = 6;

/// A run's results, by eval name.
pub type Results = Arc<Vec<EvalResults>>;

/// A run as it was read: its id, revision and whether it had finished.
type Version = (String, i64, bool);

/// The runs' results last used, the most recent last.
#[derive(Default)]
pub struct RunCache {
    kept: Mutex<VecDeque<(Version, Results)>>,
}

impl RunCache {
    /// The results of `run`, from the cache when it has not changed since.
    pub fn results(&self, store: &Store, run: &EvalRunRecord) -> Result<Results, StoreError> {
        let version = (
            run.id.clone(),
            store.eval_run_revision(&run.id)?,
            run.finished,
        );
        let mut kept = self.kept();
        if let Some(at) = kept.iter().position(|(v, _)| *v == version) {
            let hit = kept.remove(at).expect("the position found");
            let results = hit.1.clone();
            kept.push_back(hit);
            return Ok(results);
        }
        drop(kept);
        let mut evals = store.eval_results(&run.id)?;
        evals.sort_by(|a, b| a.eval.cmp(&b.eval));
        let evals = Arc::new(evals);
        let mut kept = self.kept();
        kept.retain(|(v, _)| v.0 != run.id);
        if kept.len() == KEPT {
            kept.pop_front();
        }
        kept.push_back((version, evals.clone()));
        Ok(evals)
    }

    fn kept(&self) -> MutexGuard<'_, VecDeque<(Version, Results)>> {
        // A panic while holding the lock left the list whole: use it.
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}
