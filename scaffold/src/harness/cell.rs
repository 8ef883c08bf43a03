//! One cell's test: run it (or report the verdict a resumed run stored),
//! check its snapshot, record it, and tell libtest whether it passed, failed,
//! or failed in a way its eval's gate allows.

use libtest_mimic::Completion;

use super::*;

impl Harness {
    fn push_finished(&self, eval: usize, record: CellRecord) {
        let Some(finished) = self.finished.get(eval) else {
            return;
        };
        match finished.lock() {
            Ok(mut f) => f.push(record),
            Err(poisoned) => poisoned.into_inner().push(record),
        }
        self.trim.cell_finished();
    }

    /// A cell of the eval at index `eval` finished in the run before it was
    /// interrupted: its stored verdict.
    fn report_done(
        &self,
        eval: usize,
        id: &CellId,
        run: &str,
        done: &RecordedCell,
    ) -> Result<Completion, Failed> {
        self.push_finished(eval, done.record.clone());
        // Checked before the interruption; still this run's snapshot.
        if let Snapshots::Dir(dir) = &self.snapshots {
            snapshot::reference(dir, id)?;
        }
        let record = &done.record;
        // As the run before the interruption said it.
        let mut failures = crate::report::why::why(record);
        if !done.snapshot_ok {
            failures.push(format!(
                "the session differed from its snapshot {} (review with `cargo insta review`)",
                self.snapshot_file(&id.snapshot_path())
            ));
        }
        let excuse = self.excuse(eval, record, !record.fails_the_run() && done.snapshot_ok);
        if !failures.is_empty() && excuse.is_none() {
            failures.push(format!(
                "(finished in run {run} before the interruption; not run again)"
            ));
        }
        self.verdict(
            eval,
            &done.cell,
            failures,
            excuse.filter(|_| !record.passed),
        )
    }

    /// Where the snapshot at `name` (a [`CellId::snapshot_path`]) lives, for messages.
    fn snapshot_file(&self, name: &str) -> String {
        match &self.snapshots {
            Snapshots::Dir(dir) if *dir == self.manifest_dir.join("snapshots") => {
                format!("snapshots/{name}.snap")
            }
            Snapshots::Dir(dir) => dir.join(format!("{name}.snap")).display().to_string(),
            Snapshots::Off => format!("{name}.snap"),
        }
    }

    /// The test of cell `cell` of eval `eval`: counted finished for the
    /// eval's gate test however it ends, and counted when it fails.
    pub(super) fn cell_test(&self, eval: usize, cell: usize) -> Result<Completion, Failed> {
        let _done = self.countdowns.get(eval).map(judge::Countdown::cell);
        self.priority.enter();
        let verdict = self.run_trial(eval, cell);
        if verdict.is_err() {
            self.failed_tests.fetch_add(1, Ordering::Relaxed);
        }
        verdict
    }

    fn run_trial(&self, eval: usize, cell: usize) -> Result<Completion, Failed> {
        let erased = &self.evals[eval];
        let Some(id) = erased.cell_id(cell) else {
            return Err(format!("eval `{}` has no cell #{cell}", erased.name()).into());
        };
        let name = id.to_string();
        let name = name.as_str();
        if let Some(run) = &self.run
            && let Some(done) = run.done.get(name)
        {
            return self.report_done(eval, &id, &run.id, done);
        }
        // Held while the workflow runs (its cost counted before it goes); a
        // store error or a spent budget found meanwhile keeps the cell from
        // starting.
        let slot = self.slots.take();
        if let Some(cause) = self.store_broken.get() {
            self.not_started.fetch_add(1, Ordering::Relaxed);
            if let Some(p) = &self.progress {
                p.tick(true);
            }
            return Err(format!(
                "not started: the session store could not record an earlier cell: {cause}"
            )
            .into());
        }
        if let Some(budget) = self.budgets.get(eval).and_then(Option::as_ref) {
            self.check_budget(budget)?;
        }
        let env = &self.envs[eval];
        let outcome = self.runtime.block_on(async {
            match &self.limits {
                Some(limits) => with_rate_limits(limits.clone(), erased.run_cell(cell, env)).await,
                None => erased.run_cell(cell, env).await,
            }
        });
        let record = CellRecord::from(&outcome.result);
        // Spent before the next cell may start and check the budget.
        if let Some(budget) = self.budgets.get(eval).and_then(Option::as_ref) {
            budget.spend(record.metrics.cost_usd);
        }
        drop(slot);
        let unplayable = record.unplayable;
        if unplayable {
            self.unplayable.fetch_add(1, Ordering::Relaxed);
        }
        // As every report says it: a cell that could not be played back
        // fails with the run's error alone.
        let mut failures = crate::report::why::why(&record);
        let snapshot_ok = self.check_snapshot(&outcome, unplayable, &mut failures);
        let eval_name = outcome.result.id.eval.clone();
        let mut recorded = RecordedCell::new(eval_name, name, record, snapshot_ok);
        if self.store.is_some() && self.run.is_some() {
            // What search finds it by, from the signals at hand.
            recorded = recorded.signals(&outcome.session.signals);
        }
        drop(outcome);
        let (stored, store_failure) = self.store_cell(name, &recorded);
        // Quarantine, exclusion and the gate excuse the workflow's failures,
        // never a changed snapshot, recordings that no longer fit the
        // requests or a store that cannot write.
        let excusable = store_failure.is_none() && snapshot_ok && !unplayable;
        let excuse = self
            .excuse(eval, &recorded.record, excusable)
            .filter(|_| !failures.is_empty());
        failures.extend(store_failure);
        if !failures.is_empty() {
            failures.extend(self.transcript_link(&recorded.eval, &recorded.record));
        }
        let record = if stored && !self.keep_whole() {
            // Nothing more of this cell stays in memory than its summary:
            // the store has the whole record, the reports that show more
            // are written from it.
            recorded.record.into_summary()
        } else {
            recorded.record
        };
        self.push_finished(eval, record);
        self.verdict(eval, name, failures, excuse)
    }

    /// How the test of cell `name` of eval `eval` ends: passed without
    /// `failures`; else ignored, said loudly, when `excuse` lets it fail;
    /// else failed with them.
    fn verdict(
        &self,
        eval: usize,
        name: &str,
        failures: Vec<String>,
        excuse: Option<Excuse>,
    ) -> Result<Completion, Failed> {
        if let Some(p) = &self.progress {
            // An excused failure is still a failure to the person watching.
            p.tick(!failures.is_empty());
        }
        if failures.is_empty() {
            return Ok(Completion::Completed);
        }
        let Some(excuse) = excuse else {
            return Err(failures.join("\n").into());
        };
        let eval = &self.evals[eval];
        eprintln!("{}", excuse.announce(name, eval.name(), &failures));
        Ok(Completion::ignored_with(
            excuse.reason(eval.min_pass_rate()),
        ))
    }

    /// What lets cell `record` of eval `eval` fail without failing its test,
    /// if anything: quarantine, `OnError::Exclude`, or a gate that allows
    /// failures. Nothing does unless the failure is `excusable` (the
    /// workflow's own, not a changed snapshot, an unplayable recording or
    /// a store error).
    fn excuse(&self, eval: usize, record: &CellRecord, excusable: bool) -> Option<Excuse> {
        if !excusable {
            return None;
        }
        if self.quarantined(eval, record) {
            return Some(Excuse::Quarantined);
        }
        if record.excluded {
            return Some(Excuse::Excluded(record.error.clone()));
        }
        let options = self.gate_options.get(eval)?;
        options
            .allows_failures(self.evals[eval].min_pass_rate())
            .then_some(Excuse::Allowed)
    }

    /// Where the HTML report shows the cell's transcript, for its failure
    /// message (so a CI log points at it); none unless HTML is written.
    pub(super) fn transcript_link(&self, eval: &str, record: &CellRecord) -> Option<String> {
        if !self.formats.contains(&Format::Html) {
            return None;
        }
        let page = self
            .reports_dir()
            .join(format!("{eval}.{}", Format::Html.extension()));
        let anchor = reports::html::cell_anchor(eval, &record.variant, &record.case, record.trial);
        Some(format!("transcript: {}#{anchor}", page.display()))
    }

    /// Record the cell in the run, durable before the test reports (a run
    /// killed after this resumes past the cell): whether its record is
    /// stored, and why the cell fails when the store could not be written
    /// (no cell starts after it).
    fn store_cell(&self, name: &str, recorded: &RecordedCell) -> (bool, Option<String>) {
        let (Some(store), Some(run)) = (&self.store, &self.run) else {
            return (false, None);
        };
        let error = match store.record_cell(&run.id, recorded) {
            Ok(()) => return (true, None),
            // The cell's record is stored; earlier writes (its session's signals, say) are not.
            Err(e @ StoreError::QueuedWrites { .. }) => {
                return self.store_failed_with(true, e.to_string());
            }
            Err(e) => format!("cell {name} was not recorded: {e}"),
        };
        self.store_failed_with(false, error)
    }

    /// Note the store's error `e`: no cell starts after it.
    fn store_failed_with(&self, stored: bool, e: String) -> (bool, Option<String>) {
        self.store_error(e.clone());
        let _ = self.store_broken.set(e.clone());
        (
            stored,
            Some(format!("the session store could not be written: {e}")),
        )
    }

    /// Fail a cell that may not start because `budget` is spent. Under
    /// nextest (a process per cell) what the run spent is what its cells
    /// recorded in the store.
    fn check_budget(&self, budget: &Budget) -> Result<(), Failed> {
        if under_nextest()
            && let (Some(store), Some(run)) = (&self.store, &self.run)
        {
            let cells = store.recorded_cells(&run.id).map_err(|e| {
                format!("not started: the cost budget could not be checked in the store: {e}")
            })?;
            budget.spent_as_recorded(&cells);
        }
        if !budget.is_spent() {
            return Ok(());
        }
        if let Some(p) = &self.progress {
            p.tick(true);
        }
        Err(budget.not_started().into())
    }

    /// Check the cell's snapshot, adding what fails to `failures`; whether
    /// the session matched it. The session of a cell whose calls could not
    /// be played back is not its workflow's behaviour: it is not compared
    /// (no diff, no `.snap.new` to accept), its recordings must change first.
    fn check_snapshot(
        &self,
        outcome: &erased::CellOutcome,
        unplayable: bool,
        failures: &mut Vec<String>,
    ) -> bool {
        let Snapshots::Dir(dir) = &self.snapshots else {
            return true;
        };
        let id = &outcome.result.id;
        let existed = dir.join(format!("{}.snap", id.snapshot_path())).is_file();
        let checked = match unplayable {
            true => snapshot::reference(dir, id).map(|()| true),
            false => snapshot::check(
                (dir, &self.insta_workspace),
                outcome,
                (&self.source.0, self.source.1),
            ),
        };
        match checked {
            Ok(true) => true,
            Ok(false) if !existed => {
                failures.push(format!(
                    "no snapshot of this session yet: {} is new (accept it with `cargo insta \
                     review`, or run with INSTA_UPDATE=always)",
                    self.snapshot_file(&id.snapshot_path())
                ));
                false
            }
            Ok(false) => {
                failures.push(format!(
                    "the session differs from {} (review with `cargo insta review`)",
                    self.snapshot_file(&id.snapshot_path())
                ));
                false
            }
            Err(e) => {
                failures.push(e);
                true
            }
        }
    }

    /// Whether the next finished cell keeps its whole record in memory;
    /// notes that the results hold summaries when it does not.
    fn keep_whole(&self) -> bool {
        let whole = self
            .whole_left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok();
        if !whole {
            self.summarized.store(true, Ordering::Relaxed);
        }
        whole
    }

    /// Whether the cell `record` of the eval at index `eval` is
    /// quarantined: its failed checks neither fail its test nor count
    /// towards the gate. Snapshot drift still fails it.
    fn quarantined(&self, eval: usize, record: &CellRecord) -> bool {
        self.gate_options.get(eval).is_some_and(|options| {
            options
                .quarantine
                .iter()
                .any(|p| gate::quarantine_matches(p, &record.variant, &record.case))
        })
    }
}

/// Why a cell that failed does not fail its test (libtest reports it
/// `ignored`, JUnit `<skipped>`; the table, the reports and the gate still
/// count it as failed, except where quarantine and exclusion leave it out).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Excuse {
    /// Quarantined: reported, not counted by the gate.
    Quarantined,
    /// Errored under `OnError::Exclude`, with its error: left out of the statistics.
    Excluded(Option<String>),
    /// Its eval's gate allows failures (`min_pass_rate` below 1, not
    /// strict): the eval's `[gate]` test judges the run.
    Allowed,
}

impl Excuse {
    /// The loud line (and the failures under it) for the terminal.
    fn announce(&self, name: &str, eval: &str, failures: &[String]) -> String {
        let mut text = match self {
            Excuse::Quarantined => {
                format!("QUARANTINED {name} failed; not counted by the gate, its test is ignored:")
            }
            Excuse::Excluded(error) => {
                return format!(
                    "EXCLUDED {name} errored; left out of the statistics and the gate \
                     (OnError::Exclude): {}",
                    error.as_deref().unwrap_or("(no error recorded)")
                );
            }
            Excuse::Allowed => format!(
                "ALLOWED FAILURE {name} failed; its eval's gate allows failures and judges \
                 the run (test `[gate] {eval}`):"
            ),
        };
        for f in failures {
            text.push_str(&format!("\n    {f}"));
        }
        text
    }

    /// What libtest prints after `ignored`, for an eval of `min_pass_rate`.
    fn reason(&self, min_pass_rate: f64) -> String {
        match self {
            Excuse::Quarantined => "FAILED, quarantined: not counted by the gate".into(),
            Excuse::Excluded(_) => "ERRORED, excluded from the statistics".into(),
            Excuse::Allowed => format!(
                "FAILED, allowed by the gate: min_pass_rate {}",
                crate::util::fmt::pct(min_pass_rate)
            ),
        }
    }
}
