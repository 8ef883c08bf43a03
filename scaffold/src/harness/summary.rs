//! After the cells: per eval the table, the gate, the baseline comparison and
//! the report files; then the run's closing line and exit code.

use super::judge::Judged;
use super::*;

/// An eval's reports rendered ahead of their writing, by format.
type Rendered = Vec<(Format, String)>;

/// What the summary of each eval adds up for the run.
#[derive(Default)]
struct Tally {
    /// Session snapshots that changed.
    drift: usize,
    /// What the evals add up to, and whose gates failed.
    totals: RunTotals,
    /// A baseline comparison (of an eval whose gate test ran) blocks, or
    /// could not be made.
    blocked: bool,
    /// `SCAFFOLD_BASELINE` cannot be read.
    invalid_baseline: bool,
    /// The run's index page's line of each eval whose reports were written.
    index: Vec<reports::html::IndexEntry>,
}

impl Harness {
    /// Where the reports go: `SCAFFOLD_OUTPUT`, else `target/scaffold`.
    pub(super) fn reports_dir(&self) -> PathBuf {
        self.output
            .clone()
            .unwrap_or_else(|| results_dir(&self.manifest_dir))
    }

    /// The summary's lines of the budgets that kept cells from starting
    /// (each once), and how many cells they kept.
    fn budget_lines(&self) -> (Vec<String>, usize) {
        let run = self.run.as_ref().map(|r| r.id.as_str());
        let (mut lines, mut skipped) = (Vec::new(), 0);
        let mut seen: Vec<&Arc<Budget>> = Vec::new();
        for (index, budget) in self.budgets.iter().enumerate() {
            let Some(budget) = budget else { continue };
            if seen.iter().any(|b| Arc::ptr_eq(b, budget)) {
                continue;
            }
            seen.push(budget);
            // A budget of every eval counts every eval's cells.
            let planned: usize = (index..self.budgets.len())
                .filter(|&i| {
                    self.budgets[i]
                        .as_ref()
                        .is_some_and(|b| Arc::ptr_eq(b, budget))
                })
                .map(|i| self.planned.get(i).copied().unwrap_or(0))
                .sum();
            skipped += budget.skipped();
            lines.extend(budget.line(planned, run));
        }
        (lines, skipped)
    }

    /// Judge each eval (or take the verdict its `[gate]` test judged) and
    /// mark the run finished when every eval is whole; then, per eval,
    /// print the table, the gate, the baseline comparison and write the
    /// reports (while the store moves its last writes into the database),
    /// and print the closing line. `num_failed`: the tests libtest counted
    /// failed.
    pub(super) fn summarize(&self, num_failed: u64) -> ExitCode {
        let dir = self.reports_dir();
        let mut tally = Tally::default();
        if let Baseline::Invalid(e) = &self.baseline {
            eprintln!("\nerror: {BASELINE_ENV}: {e}");
            tally.invalid_baseline = true;
        }
        let judged: Vec<(Judged, bool)> = (0..self.evals.len())
            .filter_map(|index| {
                let tested = match self.judged[index].lock() {
                    Ok(mut j) => j.take(),
                    Err(poisoned) => poisoned.into_inner().take(),
                };
                let gate_tested = tested.is_some();
                Some((tested.or_else(|| self.judge_eval(index))?, gate_tested))
            })
            .collect();
        let resumed = judged.iter().map(|(j, _)| j.resumed).sum();
        let unfinished = judged.iter().any(|(j, _)| !j.results.complete);
        // The first eval's reports made in memory are rendered while the
        // run is marked finished (which waits for the store's writer);
        // without a thread for them, they are rendered as they are written.
        let (finished, mut ahead) = std::thread::scope(|scope| {
            let ahead = std::thread::Builder::new()
                .name("scaffold-reports".into())
                .spawn_scoped(scope, || self.render_ahead(judged.first()));
            let finished = self.finish_run(unfinished);
            let ahead = ahead.map(|thread| match thread.join() {
                Ok(rendered) => rendered,
                // Its panic, told once: the reports would panic again.
                Err(panic) => std::panic::resume_unwind(panic),
            });
            (finished, ahead.unwrap_or_default())
        });
        for (judged, gate_tested) in judged {
            // The first eval's; the others' are rendered as they are written.
            let rendered = std::mem::take(&mut ahead);
            self.summarize_eval(judged, gate_tested, &dir, rendered, &mut tally);
        }
        self.write_index(&dir, &tally.index);
        for line in self.limits.iter().flat_map(RateLimits::summary_lines) {
            eprintln!("\n{line}");
        }
        let (budget_lines, over_budget) = self.budget_lines();
        for line in &budget_lines {
            eprintln!("\n{line}");
        }
        let store_failed = self.print_run(resumed, finished);
        let unplayable = self.print_replay_notes(tally.drift);
        // Every failed test is one the harness failed for a reason (a
        // cell's, a gate's); more failed tests than that crashed.
        let crashed = num_failed as usize > self.failed_tests.load(Ordering::Relaxed);
        let mut reasons = tally.totals.gate_reasons();
        for (failed, reason) in [
            (
                tally.invalid_baseline,
                format!("{BASELINE_ENV} cannot be read"),
            ),
            (tally.blocked, "the baseline comparison blocks".to_string()),
            (
                tally.drift > 0,
                format!("{} session snapshot(s) changed", tally.drift),
            ),
            (
                unplayable > 0,
                format!("{unplayable} cell(s) could not be played back"),
            ),
            (crashed, "cells crashed before they were graded".into()),
            (
                store_failed,
                "the session store could not be written".into(),
            ),
            (
                over_budget > 0,
                format!("{over_budget} cell(s) kept from starting by a budget"),
            ),
        ] {
            if failed {
                reasons.push(reason);
            }
        }
        if reasons.is_empty() && num_failed > 0 {
            // Cells of evals that allow no failure, whose gate tests the
            // filter left out.
            reasons.push(format!("{num_failed} test(s) failed"));
        }
        if crashed {
            eprintln!("\nsome cells crashed before they could be graded (see above).");
        }
        eprintln!("\n{}", tally.totals.line(&reasons));
        // The line's verdict and the exit code are made of the same reasons,
        // each of them a failed test but a store or a baseline that cannot
        // be used.
        if reasons.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }

    /// The report files of `judged` made of its results alone (see
    /// [`Harness::rendered_alone`]), rendered by format. One eval's: the
    /// others are rendered as they are written, one at a time, so that
    /// memory holds no more report text at once than before.
    fn render_ahead(&self, judged: Option<&(Judged, bool)>) -> Rendered {
        let Some((judged, _)) = judged else {
            return Vec::new();
        };
        let comparison = judged.baseline.as_ref().ok().and_then(Option::as_ref);
        let comparison = comparison.map(|(cmp, _)| cmp);
        (self.formats.iter())
            .filter(|&&f| f != Format::Table)
            .filter_map(|&f| Some((f, self.rendered_alone(f, &judged.results, comparison)?)))
            .collect()
    }

    /// The report `format` of `results`, when it is made of them alone in
    /// memory: JSON, JUnit and the table, unless the results hold
    /// summaries whose whole records are read from the store. `None` for
    /// the others (the HTML page reads transcripts; the Markdown report
    /// links to it).
    fn rendered_alone(
        &self,
        format: Format,
        results: &EvalResults,
        comparison: Option<&crate::eval::Comparison>,
    ) -> Option<String> {
        let alone = matches!(format, Format::Json | Format::Junit | Format::Table);
        (alone && self.records_in_store().is_none())
            .then(|| reports::render(format, results, comparison))
    }

    /// The store and the run the whole records are read from, when the
    /// results hold summaries (see `keep_whole`).
    fn records_in_store(&self) -> Option<(&Store, &RunState)> {
        match (&self.store, &self.run) {
            (Some(store), Some(run)) if self.summarized.load(Ordering::Relaxed) => {
                Some((store, run))
            }
            _ => None,
        }
    }

    /// Summarize one eval's `judged` results: table, gate, baseline,
    /// reports into `dir` (those `rendered` already written as they are).
    /// `gate_tested`: its `[gate]` test ran (else its verdict does not
    /// decide the run: the test filter left it out).
    fn summarize_eval(
        &self,
        judged: Judged,
        gate_tested: bool,
        dir: &Path,
        rendered: Rendered,
        tally: &mut Tally,
    ) {
        let Judged {
            mut results,
            baseline,
            ..
        } = judged;
        tally.drift += results
            .results
            .iter()
            .filter(|c| c.snapshot_changed)
            .count();
        let gate_passed = self.print_verdict(&results, gate_tested);
        tally
            .totals
            .add(&results, gate_tested.then_some(gate_passed));
        let comparison = match baseline {
            Ok(Some((cmp, base))) => {
                tally.blocked |= print_comparison(&cmp) && gate_tested;
                Some((cmp, base))
            }
            Ok(None) => None,
            Err(e) => {
                eprintln!("  Baseline: error: {e}");
                tally.blocked |= gate_tested;
                None
            }
        };
        let against = comparison.as_ref().map(|(cmp, base)| (cmp, base));
        self.write_reports(dir, rendered, &mut results, against);
        if self.formats.contains(&Format::Html) {
            (tally.index).push(reports::html::IndexEntry::new(&results, &self.formats));
        }
        // Let go of on a thread of their own (some megabytes of small
        // allocations at a run's end): nothing waits for their freeing.
        memory::drop_aside((results, comparison));
    }

    /// Write the run's index page into `dir`: each eval of `entries`
    /// linked to its page and its other reports (each page links back).
    fn write_index(&self, dir: &Path, entries: &[reports::html::IndexEntry]) {
        if entries.is_empty() {
            return;
        }
        let path = dir.join(reports::html::INDEX_FILE);
        let run = self.run.as_ref().map(|r| r.id.as_str());
        let page = reports::html::render_index(run, entries);
        let written = crate::util::write_atomic(&path, false, |out| {
            std::io::Write::write_all(out, page.as_bytes())
        });
        match written {
            Ok(()) => eprintln!("\nIndex: {}", path.display()),
            Err(e) => eprintln!("\nwarning: cannot write {}: {e}", path.display()),
        }
    }

    /// Print the table (when asked for), the gate and the notes of
    /// `results`; whether the gate passed.
    fn print_verdict(&self, results: &EvalResults, gate_tested: bool) -> bool {
        if self.formats.contains(&Format::Table) {
            eprintln!("\n{}", reports::table::render_results(results));
        } else {
            eprintln!();
        }
        let gate = results.gate_verdict();
        match gate_tested {
            true => eprintln!("  Gate: {}", gate.describe()),
            false => eprintln!(
                "  Gate: not judged (the test filter left out `[gate] {}`): {}",
                results.eval,
                gate.describe()
            ),
        }
        for line in gate.notes(&results.eval, &results.notable_trials()) {
            eprintln!("  {line}");
        }
        if let Some(line) = results.cost_warning() {
            eprintln!("  {line}");
        }
        if let Some(line) = results.excluded_line() {
            eprintln!("  {line}");
        }
        gate.passed
    }

    /// Mark the run finished unless cells of it are missing (a budget
    /// stopped it, a cell crashed: it stays unfinished, to be resumed), and
    /// have the store move its writes into the database while the reports
    /// are written: its close then has nothing left to sync. The store's
    /// error, when the mark could not be written.
    fn finish_run(&self, unfinished: bool) -> Result<(), StoreError> {
        let (Some(store), Some(run)) = (&self.store, &self.run) else {
            return Ok(());
        };
        if unfinished {
            return Ok(());
        }
        store.finish_eval_run(&run.id)?;
        store.checkpoint_now();
        let claim = match run.claim.lock() {
            Ok(mut c) => c.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(claim) = claim {
            claim.release_finished();
        }
        Ok(())
    }

    /// Name the run (`resumed`: the cells it finished before an
    /// interruption) and say whether marking it `finished` failed; whether
    /// the store failed.
    fn print_run(&self, resumed: usize, finished: Result<(), StoreError>) -> bool {
        let (Some(_), Some(run)) = (&self.store, &self.run) else {
            return false;
        };
        let resumed = match resumed {
            0 => String::new(),
            n => format!(" (resumed: {n} cell(s) finished before the interruption)"),
        };
        eprintln!("\nRun: {}{resumed}", run.id);
        match finished {
            Ok(()) => false,
            Err(e) => {
                eprintln!("error: the session store could not be written: {e}");
                true
            }
        }
    }

    /// Say how many snapshots changed (`drift`) and how many cells could
    /// not be played back; returns the latter.
    fn print_replay_notes(&self, drift: usize) -> usize {
        if drift > 0 {
            eprintln!(
                "\n{drift} session snapshot(s) changed: review them with `cargo insta review`."
            );
        }
        let unplayable = self.unplayable.load(Ordering::Relaxed);
        if unplayable > 0 {
            eprintln!(
                "\n{unplayable} cell(s) could not be played back: their requests differ from \
                 their recordings, or have none (their snapshots were not compared); \
                 re-record them as each failure above says."
            );
        }
        unplayable
    }

    /// Write the selected report files of one eval into `dir`, those
    /// `rendered` already as they are.
    fn write_reports(
        &self,
        dir: &Path,
        rendered: Rendered,
        results: &mut EvalResults,
        against: Option<(&crate::eval::Comparison, &EvalResults)>,
    ) {
        let comparison = against.map(|(cmp, _)| cmp);
        // Each report file, by its format; `None` is the baseline comparison.
        let mut files: Vec<(PathBuf, Option<Format>)> = self
            .formats
            .iter()
            .filter(|&&f| f != Format::Table)
            .map(|&f| {
                let path = dir.join(format!("{}.{}", results.eval, f.extension()));
                (path, Some(f))
            })
            .collect();
        if comparison.is_some() && self.formats.contains(&Format::Json) {
            files.push((dir.join(format!("{}.comparison.json", results.eval)), None));
        }
        if files.is_empty() {
            return;
        }
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("  warning: cannot create {}: {e}", dir.display());
            return;
        }
        for (path, format) in files {
            // Whole or not at all: a report cut short by a store error must
            // not pass for this run's, nor must the last run's.
            let ahead = rendered.iter().find(|(f, _)| Some(*f) == format);
            let written = crate::util::write_atomic(&path, false, |out| match (format, ahead) {
                (_, Some((_, text))) => std::io::Write::write_all(out, text.as_bytes()),
                (Some(format), None) => self.write_report(out, format, results, against),
                (None, None) => comparison.map_or(Ok(()), |cmp| {
                    std::io::Write::write_all(out, reports::json::render_comparison(cmp).as_bytes())
                }),
            });
            let label = if format == Some(Format::Json) {
                "Results"
            } else {
                "Report"
            };
            match written {
                Ok(()) => eprintln!("  {label}: {}", path.display()),
                Err(e) => {
                    let _ = std::fs::remove_file(&path);
                    eprintln!("  warning: cannot write {}: {e}", path.display());
                }
            }
        }
        if self.formats.contains(&Format::Markdown)
            && let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|v| !v.is_empty())
        {
            let md = reports::markdown::render(results, comparison);
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&summary)
                .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{md}\n").as_bytes()));
            if let Err(e) = appended {
                eprintln!(
                    "  warning: cannot append to GITHUB_STEP_SUMMARY {}: {e}",
                    PathBuf::from(summary).display()
                );
            }
        }
    }

    /// Write the report `format` of `results` to `out`. The JSON, JUnit and
    /// HTML reports show what a cell summary drops: when the results hold
    /// summaries, they are written cell by cell with the whole records read
    /// from the store a chunk at a time.
    fn write_report(
        &self,
        out: &mut impl std::io::Write,
        format: Format,
        results: &mut EvalResults,
        against: Option<(&crate::eval::Comparison, &EvalResults)>,
    ) -> std::io::Result<()> {
        let comparison = against.map(|(cmp, _)| cmp);
        if let Some(text) = self.rendered_alone(format, results, comparison) {
            return out.write_all(text.as_bytes());
        }
        // The baseline's transcripts stand beside regressions when its
        // sessions are in this store.
        let transcripts = (self.store.as_ref()).map(|s| {
            let t = Transcripts::new(s, self.transcripts);
            match against {
                Some((_, base)) => t.baseline(base),
                None => t,
            }
        });
        // The page links back to the run's index, written beside it.
        let mut page = reports::html::Page::new(results)
            .baseline(comparison)
            .index(reports::html::INDEX_FILE);
        if let Some(t) = &transcripts {
            page = page.transcripts(t);
        }
        let Some((store, run)) = self.records_in_store() else {
            return match format {
                Format::Html => out.write_all(page.render().as_bytes()),
                Format::Markdown => out.write_all(self.markdown(results, comparison).as_bytes()),
                _ => out.write_all(reports::render(format, results, comparison).as_bytes()),
            };
        };
        let (eval, trials) = (results.eval.clone(), results.config.trials);
        let details = |chunk: &[CellRecord]| {
            let names = chunk.iter().map(|c| c.test_name(&eval, trials)).collect();
            store
                .cell_records(&run.id, &eval, names)
                .map_err(|e| e.to_string())
        };
        match format {
            Format::Json => reports::json::write_streamed(results, out, details),
            Format::Junit => reports::junit::write_streamed(results, comparison, out, details),
            Format::Html => page.write_streamed(out, details),
            Format::Markdown => out.write_all(self.markdown(results, comparison).as_bytes()),
            Format::Table => out.write_all(reports::render(format, results, comparison).as_bytes()),
        }
    }

    /// The Markdown report, its failed cells linked to the HTML report
    /// written beside it (when it is).
    fn markdown(
        &self,
        results: &EvalResults,
        comparison: Option<&crate::eval::Comparison>,
    ) -> String {
        match self.formats.contains(&Format::Html) {
            true => reports::markdown::render_linked(
                results,
                comparison,
                &format!("{}.{}", results.eval, Format::Html.extension()),
            ),
            false => reports::markdown::render(results, comparison),
        }
    }
}

/// Add to `cells`, the cells of `eval` this process reported, the cells
/// finished before the interruption of `run` that it did not report (left
/// out by a filter): they belong to the run's results too. Returns how many
/// of `eval`'s cells the interrupted run had finished.
pub(super) fn add_resumed(
    run: &RunState,
    eval: &dyn ErasedEval,
    cells: &mut Vec<CellRecord>,
) -> usize {
    let reported: HashSet<String> = cells
        .iter()
        .map(|r| r.test_name(eval.name(), eval.trials()))
        .collect();
    let mut resumed = reported
        .iter()
        .filter(|c| run.done.contains_key(*c))
        .count();
    for d in run.done.values().filter(|d| {
        d.eval == eval.name() && run.planned.contains(&d.cell) && !reported.contains(&d.cell)
    }) {
        cells.push(d.record.clone());
        resumed += 1;
    }
    resumed
}

/// Print a baseline comparison; returns whether it blocks.
pub(super) fn print_comparison(cmp: &crate::eval::Comparison) -> bool {
    let s = &cmp.summary;
    eprintln!(
        "  Baseline ({}): {}; pass rate {:+.1} pts; {} regression(s), {} improvement(s), {} new, {} removed",
        cmp.baseline.timestamp,
        s.verdict.as_str(),
        s.pass_rate_delta * 100.0,
        cmp.regressions.len(),
        cmp.improvements.len(),
        cmp.new_cases.len(),
        cmp.removed_cases.len()
    );
    if !s.should_block {
        return false;
    }
    eprintln!(
        "  Baseline: BLOCKED: {}",
        s.block_reason.as_deref().unwrap_or("regressions")
    );
    for r in &cmp.regressions {
        let severity = match r.severity {
            crate::eval::compare::Severity::Critical => "critical",
            crate::eval::compare::Severity::Warning => "warning",
        };
        eprintln!("    [{severity}] {}: {}", r.case_id, r.description);
    }
    true
}

/// What `SCAFFOLD_BASELINE` names.
pub(super) enum Baseline {
    /// Not set.
    None,
    /// One results file (for the eval it names).
    File(PathBuf, Box<EvalResults>),
    /// A directory of `{eval}.json` files.
    Dir(PathBuf),
    /// Set, but unreadable.
    Invalid(String),
}

impl Baseline {
    pub(super) fn from_env() -> Baseline {
        let Some(raw) = std::env::var_os(BASELINE_ENV).filter(|v| !v.is_empty()) else {
            return Baseline::None;
        };
        let path = PathBuf::from(raw);
        if path.is_dir() {
            return Baseline::Dir(path);
        }
        match EvalResults::load(&path) {
            Ok(r) => Baseline::File(path, Box::new(r)),
            Err(e) => Baseline::Invalid(e.to_string()),
        }
    }

    /// The baseline of eval `name`, if there is one.
    pub(super) fn for_eval(&self, name: &str) -> Result<Option<EvalResults>, String> {
        match self {
            Baseline::None => Ok(None),
            Baseline::Invalid(e) => Err(format!("{BASELINE_ENV}: {e}")),
            Baseline::File(path, r) => {
                if r.eval == name {
                    Ok(Some(EvalResults::clone(r)))
                } else {
                    eprintln!(
                        "  Baseline: {} holds eval `{}`, not `{name}`: not compared",
                        path.display(),
                        r.eval
                    );
                    Ok(None)
                }
            }
            Baseline::Dir(dir) => {
                let path = dir.join(format!("{name}.json"));
                if !path.exists() {
                    eprintln!("  Baseline: no {}: not compared", path.display());
                    return Ok(None);
                }
                EvalResults::load(&path)
                    .map(Some)
                    .map_err(|e| e.to_string())
            }
        }
    }
}
