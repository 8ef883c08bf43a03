//! The whole run in one line, after every eval's table.
//!
//! The line's verdict is made of the very reasons the process's exit code is
//! made of ([`RunTotals::verdict`]), so the two never disagree.

use crate::eval::EvalResults;
use crate::util::fmt::usd;

/// What the evals of one run add up to.
#[derive(Debug, Default)]
pub(crate) struct RunTotals {
    evals: usize,
    cells: usize,
    passed: usize,
    /// Failed and counted: neither quarantined nor excluded.
    failed: usize,
    /// Of those, failures their eval's gate allows (their tests ignored).
    allowed: usize,
    quarantined: usize,
    excluded: usize,
    /// Variant × case cells whose trials disagree.
    flaky: usize,
    /// The evals whose gate failed, in order.
    gates_failed: Vec<String>,
    /// Evals whose gate test the test filter left out: not judged.
    gates_not_judged: usize,
    cost_usd: f64,
}

impl RunTotals {
    /// Count the cells of one eval's `results`, whose gate passed or not
    /// (`None`: not judged, its test filtered out).
    pub(crate) fn add(&mut self, results: &EvalResults, gate_passed: Option<bool>) {
        self.evals += 1;
        for cell in &results.results {
            self.allowed += usize::from(results.allowed_failure(cell));
            self.cells += 1;
            self.cost_usd += cell.metrics.cost_usd;
            match () {
                _ if cell.excluded => self.excluded += 1,
                _ if cell.quarantined => self.quarantined += 1,
                _ if cell.passed => self.passed += 1,
                _ => self.failed += 1,
            }
        }
        self.flaky += results.flaky().count();
        match gate_passed {
            Some(true) => {}
            Some(false) => self.gates_failed.push(results.eval.clone()),
            None => self.gates_not_judged += 1,
        }
    }

    /// Why the run fails besides its gates, as the exit code sees it.
    pub(crate) fn gate_reasons(&self) -> Vec<String> {
        self.gates_failed
            .iter()
            .map(|eval| format!("the gate of {eval} failed"))
            .collect()
    }

    /// The one line: counts, cost and the run's verdict, failing for
    /// each of `reasons` (empty: the run passed).
    pub(crate) fn line(&self, reasons: &[String]) -> String {
        let mut counts = format!("{} passed, {} failed", self.passed, self.failed);
        if self.allowed > 0 {
            counts.push_str(&format!(" ({} allowed by their gate)", self.allowed));
        }
        for (n, what) in [
            (self.quarantined, "quarantined"),
            (self.excluded, "excluded"),
            (self.flaky, "flaky"),
        ] {
            if n > 0 {
                counts.push_str(&format!(", {n} {what}"));
            }
        }
        let judged = self.evals - self.gates_not_judged;
        let mut gates = format!("gates {}/{judged} passed", judged - self.gates_failed.len(),);
        if self.gates_not_judged > 0 {
            gates.push_str(&format!(
                " ({} not judged: the test filter left out their [gate] tests)",
                self.gates_not_judged
            ));
        }
        let verdict = match reasons {
            [] => "passed".to_string(),
            _ => format!("FAILED: {}", reasons.join("; ")),
        };
        format!(
            "Total: {} eval(s), {} cells: {counts}; {gates}; cost {}; run {verdict}",
            self.evals,
            self.cells,
            usd(self.cost_usd)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::CellRecord;
    use crate::eval::gate::GateOptions;
    use crate::eval::results::RunConfig;

    fn results(eval: &str, cells: Vec<CellRecord>) -> EvalResults {
        let config = RunConfig::for_tests(2, 3, &["v"]);
        let options = GateOptions {
            quarantine: vec!["q".into()],
            ..GateOptions::default()
        };
        EvalResults::new_with(eval, "t", config, options, cells)
    }

    fn cell(case: &str, trial: u32, passed: bool, cost: f64) -> CellRecord {
        let mut c = CellRecord::new("v", case);
        c.trial = trial;
        c.passed = passed;
        c.metrics.cost_usd = cost;
        c
    }

    #[test]
    fn the_line_adds_every_eval_up_and_says_why_the_run_failed() {
        let mut totals = RunTotals::default();
        let first = vec![
            cell("a", 0, true, 0.001),
            cell("a", 1, false, 0.001),
            cell("b", 0, true, 0.002),
            cell("q", 0, false, 0.0),
        ];
        totals.add(&results("review", first), Some(true));
        totals.add(&results("gen", vec![cell("c", 0, false, 0.0)]), Some(false));
        let mut reasons = totals.gate_reasons();
        reasons.push("1 session snapshot(s) changed".into());
        assert_eq!(
            totals.line(&reasons),
            "Total: 2 eval(s), 5 cells: 2 passed, 2 failed, 1 quarantined, 1 flaky; \
             gates 1/2 passed; cost $0.004; run FAILED: the gate of gen failed; \
             1 session snapshot(s) changed"
        );
    }

    #[test]
    fn a_run_without_reasons_passed() {
        let mut totals = RunTotals::default();
        totals.add(
            &results("review", vec![cell("a", 0, true, 0.0)]),
            Some(true),
        );
        assert_eq!(
            totals.line(&[]),
            "Total: 1 eval(s), 1 cells: 1 passed, 0 failed; gates 1/1 passed; cost $0; \
             run passed"
        );
    }
}
