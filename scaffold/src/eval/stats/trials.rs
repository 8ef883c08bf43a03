//! Repeated trials: confidence intervals of pass rates and mean scores, the
//! unbiased pass@k and pass^k estimators, and per-cell trial statistics
//! (a *cell across trials* is one variant × case, run `n` times).
//!
//! Definitions, so numbers can be checked elsewhere:
//!
//! * **Wilson score interval** of `c` successes in `n` trials at confidence
//!   `1 − α` (`scipy.stats.binomtest(c, n).proportion_ci(method="wilson")`):
//!   with `p = c/n` and `z` the `1 − α/2` quantile of the standard normal,
//!   `(p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n)`. It stays inside
//!   0..1 and is sensible at 0/n and n/n, where the normal (Wald) interval
//!   collapses to a point. With no trials it is `[0, 1]`.
//! * **pass@k** — the chance that at least one of `k` trials drawn without
//!   replacement from the `n` run passes: `1 − C(n−c, k) / C(n, k)` (the
//!   unbiased estimator of Chen et al., 2021). **pass^k** — the chance that
//!   all `k` pass: `C(c, k) / C(n, k)`. Both only for `1 ≤ k ≤ n`.
//! * **flaky** — the trials of a cell disagree: some passed, some failed.
//! * **mean interval** — Student's t interval of a mean,
//!   `x̄ ± t(1 − α/2, m − 1) · s / √m` with the sample standard deviation
//!   `s`; absent with fewer than two values.

use serde::{Deserialize, Serialize};

use crate::eval::SmallMap;
use crate::eval::results::CellRecord;
pub use crate::stats::interval::{Interval, pass_at_k, pass_hat_k, wilson_interval};

/// One variant × case over its trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseTrials {
    /// The variant.
    pub variant: String,
    /// The dataset of the case.
    #[serde(default)]
    pub dataset: String,
    /// The case id.
    pub case: String,
    /// Trials run.
    pub trials: usize,
    /// Trials passed.
    pub passes: usize,
    /// `passes / trials`.
    pub pass_rate: f64,
    /// The Wilson interval of the pass rate.
    pub interval: Interval,
    /// pass@k for each reported k (keys are k).
    #[serde(default)]
    pub pass_at_k: SmallMap<u32, f64>,
    /// pass^k for each reported k (keys are k).
    #[serde(default)]
    pub pass_hat_k: SmallMap<u32, f64>,
    /// Some trials passed and some failed.
    pub flaky: bool,
    /// Quarantined: reported, but not counted by the gate or baseline blocking.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quarantined: bool,
}

impl CaseTrials {
    /// `{variant}::{case}`, the cell's name without eval and trial.
    pub fn label(&self) -> String {
        format!("{}::{}", self.variant, self.case)
    }

    /// Whether every trial passed.
    pub fn all_passed(&self) -> bool {
        self.trials > 0 && self.passes == self.trials
    }
}

/// The k of pass@k and pass^k for a cell run `n` times: those of `ks` in
/// `1..=n`, or 1 and `n` when `ks` is empty.
pub fn reported_ks(ks: &[u32], n: usize) -> Vec<u32> {
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    let mut out: Vec<u32> = if ks.is_empty() {
        vec![1, n]
    } else {
        ks.to_vec()
    };
    out.retain(|k| (1..=n).contains(k));
    out.sort_unstable();
    out.dedup();
    out
}

/// Per variant × case (in the order they first appear in `cells`): trials,
/// passes, the Wilson interval at `confidence`, pass@k and pass^k for the
/// k of [`reported_ks`], and whether the trials disagree. A case is
/// quarantined when any of its trials is. (All of [`trial_stats`], collected.)
#[cfg(test)]
pub(crate) fn case_trials(cells: &[CellRecord], ks: &[u32], confidence: f64) -> Vec<CaseTrials> {
    trial_stats(cells, ks, confidence).collect()
}

/// [`case_trials`] one variant × case at a time: the cases are counted up
/// front (a few words each), each [`CaseTrials`] is built when the iterator
/// reaches it. A run of 10,000 cells holds no 10,000 of them at once.
pub fn trial_stats<'a>(cells: &'a [CellRecord], ks: &'a [u32], confidence: f64) -> TrialStats<'a> {
    // A case's trials are next to each other in results (they are sorted),
    // so each run of one case's cells is counted as it goes by; a case met
    // again after others (cells in any order) is merged into its first run.
    let mut runs: Vec<CaseRun> = Vec::new();
    // Excluded cells (errored, under `OnError::Exclude`) are no trials.
    for (i, c) in cells.iter().enumerate().filter(|(_, c)| !c.excluded) {
        match runs.last_mut() {
            Some(run) if key(&cells[run.first]) == key(c) => run.add(c),
            _ => runs.push(CaseRun {
                first: i,
                trials: 1,
                passes: usize::from(c.passed),
                quarantined: c.quarantined,
            }),
        }
    }
    // The runs by case, first runs first: a later run of the same case
    // adds to the first and is dropped.
    let mut by_case: Vec<usize> = (0..runs.len()).collect();
    by_case.sort_by(|&a, &b| {
        key(&cells[runs[a].first])
            .cmp(&key(&cells[runs[b].first]))
            .then(a.cmp(&b))
    });
    let mut dropped = vec![false; runs.len()];
    let mut head: Option<usize> = None;
    for &i in &by_case {
        match head {
            Some(h) if key(&cells[runs[h].first]) == key(&cells[runs[i].first]) => {
                let later = runs[i];
                runs[h].trials += later.trials;
                runs[h].passes += later.passes;
                runs[h].quarantined |= later.quarantined;
                dropped[i] = true;
            }
            _ => head = Some(i),
        }
    }
    drop(by_case);
    let mut kept = dropped.iter();
    runs.retain(|_| kept.next().is_some_and(|d| !*d));
    TrialStats {
        cells,
        runs: runs.into_iter(),
        ks,
        confidence,
    }
}

/// The key of a cell's case: variant, dataset, case.
fn key(c: &CellRecord) -> (&str, &str, &str) {
    (&c.variant, &c.dataset, &c.case)
}

/// One variant × case as counted: where its first cell is, its trials.
#[derive(Debug, Clone, Copy)]
struct CaseRun {
    first: usize,
    trials: usize,
    passes: usize,
    quarantined: bool,
}

impl CaseRun {
    /// Some trials passed and some failed.
    fn flaky(&self) -> bool {
        self.passes > 0 && self.passes < self.trials
    }

    fn add(&mut self, c: &CellRecord) {
        self.trials += 1;
        self.passes += usize::from(c.passed);
        self.quarantined |= c.quarantined;
    }
}

/// The trial statistics of some cells, one variant × case at a time (see
/// [`trial_stats`]); it knows how many are left ([`ExactSizeIterator`]).
#[derive(Debug, Clone)]
pub struct TrialStats<'a> {
    cells: &'a [CellRecord],
    runs: std::vec::IntoIter<CaseRun>,
    ks: &'a [u32],
    confidence: f64,
}

impl TrialStats<'_> {
    /// Only the variant × cases whose trials disagree (`flaky`) or, with
    /// `or_quarantined`, are quarantined; the others are skipped without
    /// being built.
    pub(crate) fn notable(mut self, or_quarantined: bool) -> Self {
        let mut runs: Vec<CaseRun> = self.runs.collect();
        runs.retain(|r| r.flaky() || (or_quarantined && r.quarantined));
        self.runs = runs.into_iter();
        self
    }

    /// How many trials each variant × case left ran, without building
    /// their statistics.
    pub(crate) fn trial_counts(&self) -> impl Iterator<Item = usize> + '_ {
        self.runs.as_slice().iter().map(|r| r.trials)
    }

    fn build(&self, run: CaseRun) -> CaseTrials {
        let CaseRun {
            first,
            trials: n,
            passes: c,
            quarantined,
        } = run;
        let (variant, dataset, case) = key(&self.cells[first]);
        let ks = reported_ks(self.ks, n);
        // `ks` is sorted and unique: each k goes at the end, and the
        // map has room for exactly the k reported.
        let k_map = |f: fn(usize, usize, usize) -> Option<f64>| {
            let mut map = SmallMap::with_capacity(ks.len());
            for &k in &ks {
                if let Some(v) = f(n, c, k as usize) {
                    map.insert(k, v);
                }
            }
            map
        };
        CaseTrials {
            variant: variant.to_string(),
            dataset: dataset.to_string(),
            case: case.to_string(),
            trials: n,
            passes: c,
            pass_rate: if n == 0 { 0.0 } else { c as f64 / n as f64 },
            interval: wilson_interval(c, n, self.confidence),
            pass_at_k: k_map(pass_at_k),
            pass_hat_k: k_map(pass_hat_k),
            flaky: run.flaky(),
            quarantined,
        }
    }
}

impl Iterator for TrialStats<'_> {
    type Item = CaseTrials;

    fn next(&mut self) -> Option<CaseTrials> {
        let run = self.runs.next()?;
        Some(self.build(run))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.runs.size_hint()
    }
}

impl ExactSizeIterator for TrialStats<'_> {}

impl std::iter::FusedIterator for TrialStats<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_case_with_disagreeing_trials_is_flaky() {
        let cells: Vec<CellRecord> = (0..3)
            .map(|t| {
                let mut c = CellRecord::new("gpt-4o", "sqli");
                c.trial = t;
                c.passed = t != 1;
                c
            })
            .collect();
        let s = &case_trials(&cells, &[], 0.95)[0];
        assert_eq!((s.trials, s.passes, s.flaky), (3, 2, true));
        assert_eq!(s.pass_at_k[&3], 1.0);
        assert_eq!(s.pass_hat_k[&3], 0.0);
    }

    #[test]
    fn wilson_edges() {
        let i = wilson_interval(0, 10, 0.95);
        assert_eq!(i.lower, 0.0);
        assert!((i.upper - 0.27753279986288926).abs() < 1e-12);
        // More successes than trials are capped.
        assert_eq!(wilson_interval(12, 10, 0.95).upper, 1.0);
    }

    /// pass@k and pass^k take one slot per reported k, in k order, and
    /// serialize as the `BTreeMap<u32, f64>` they were.
    #[test]
    fn k_maps_hold_room_for_the_reported_ks() {
        let cells: Vec<CellRecord> = (0..4)
            .map(|t| {
                let mut c = CellRecord::new("v", "c");
                c.trial = t;
                c.passed = t % 2 == 0;
                c
            })
            .collect();
        let t = &case_trials(&cells, &[4, 9, 2], 0.95)[0];
        assert_eq!(t.pass_at_k.keys().copied().collect::<Vec<_>>(), [2, 4]);
        assert_eq!(t.pass_at_k.capacity(), 2);
        let t = &case_trials(&cells, &[], 0.95)[0];
        assert_eq!((t.pass_hat_k.len(), t.pass_hat_k.capacity()), (2, 2));
        let as_btree: BTreeMap<u32, f64> = t.pass_at_k.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(
            serde_json::to_string(&t.pass_at_k).unwrap(),
            serde_json::to_string(&as_btree).unwrap()
        );
    }

    /// Cells in any order: a case met again after others adds to the
    /// statistics of its first appearance, and the cases keep the order in
    /// which they first appear.
    #[test]
    fn a_case_met_again_later_is_counted_once() {
        let cell = |variant: &str, case: &str, passed: bool, quarantined: bool| {
            let mut c = CellRecord::new(variant, case);
            c.passed = passed;
            c.quarantined = quarantined;
            c
        };
        let cells = [
            cell("v", "b", true, false),
            cell("v", "a", true, false),
            cell("w", "b", false, false),
            cell("v", "b", false, true),
            cell("v", "a", true, false),
            cell("v", "b", true, false),
        ];
        let stats = case_trials(&cells, &[], 0.95);
        let seen: Vec<_> = stats
            .iter()
            .map(|t| (t.label(), t.trials, t.passes, t.flaky, t.quarantined))
            .collect();
        assert_eq!(
            seen,
            [
                ("v::b".to_string(), 3, 2, true, true),
                ("v::a".to_string(), 2, 2, false, false),
                ("w::b".to_string(), 1, 0, false, false),
            ]
        );
    }

    /// The notable cases, skipped to without building the others, are the
    /// ones the whole statistics call flaky (or quarantined), in order; the
    /// iterator counts what is left.
    #[test]
    fn notable_cases_are_those_the_whole_statistics_flag() {
        // 40 cases × 3 trials, cells interleaved across cases, with every
        // mix of passes and some quarantined.
        let cells: Vec<CellRecord> = (0..120u32)
            .map(|i| {
                let (case, trial) = (i % 40, i / 40);
                let mut c =
                    CellRecord::new(if case % 2 == 0 { "v" } else { "w" }, format!("c{case}"));
                c.trial = trial;
                c.passed = (case * 7 + trial * 3) % 5 < case % 4;
                c.quarantined = case % 9 == 0 && trial == 1;
                c
            })
            .collect();
        let all = case_trials(&cells, &[], 0.95);
        assert_eq!(trial_stats(&cells, &[], 0.95).len(), 40);
        for or_quarantined in [false, true] {
            let expected: Vec<CaseTrials> = all
                .iter()
                .filter(|t| t.flaky || (or_quarantined && t.quarantined))
                .cloned()
                .collect();
            assert!(
                expected.len() > 3 && expected.len() < 40,
                "{}",
                expected.len()
            );
            let notable = trial_stats(&cells, &[], 0.95).notable(or_quarantined);
            assert_eq!(notable.len(), expected.len());
            assert_eq!(notable.collect::<Vec<_>>(), expected);
        }
        assert!(all.iter().any(|t| t.quarantined && !t.flaky));
    }

    #[test]
    fn ks_default_and_filtering() {
        assert_eq!(reported_ks(&[], 5), [1, 5]);
        assert_eq!(reported_ks(&[], 1), [1]);
        assert_eq!(reported_ks(&[10, 3, 0, 3], 5), [3]);
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn a_case_whose_trials_disagree_is_flaky() {
        use crate::eval::CellRecord;
        use crate::eval::stats::trial_stats;
        let cells: Vec<CellRecord> = ["a", "b", "a"]
            .iter()
            .zip([true, true, false])
            .enumerate()
            .map(|(t, (case, passed))| {
                let mut c = CellRecord::new("v", *case);
                c.trial = t as u32;
                c.passed = passed;
                c
            })
            .collect();
        let stats = trial_stats(&cells, &[], 0.95);
        assert_eq!(stats.len(), 2);
        let flaky: Vec<String> = stats.filter(|t| t.flaky).map(|t| t.label()).collect();
        assert_eq!(flaky, ["v::a"]);
    }
}
