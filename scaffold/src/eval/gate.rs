//! The gate: whether a run's pass rate is good enough, with quarantined
//! cells left out and, optionally, judged on the lower bound of the pass
//! rate's confidence interval instead of the point estimate.
//!
//! **Quarantine.** A quarantined cell (every trial of a variant × case) is
//! run and reported like any other, marked `QUARANTINED`, but not counted
//! by the gate or by baseline blocking. Patterns name cells as `case` (that
//! case under every variant) or `variant::case`; `*` as a whole segment
//! matches anything (`*::sql-injection`, `gpt-4o::*`). They come from
//! [`Eval::quarantine`](crate::eval::Eval::quarantine) and from the
//! package's `evals/quarantine.yaml` (see [`load_quarantine`]), a mapping
//! from eval name to patterns:
//!
//! ```yaml
//! code-review:
//!   - gpt-4o::sql-injection   # flaky since the 2026-01 model update
//!   - xss
//! ```
//!
//! A quarantined cell whose trials all passed is a *release candidate*: the
//! summary suggests taking it out of quarantine.
//!
//! **Lower-bound gate.** With [`GateOptions::on_lower_bound`], the gate
//! compares the Wilson lower bound of the pass rate (at
//! [`GateOptions::confidence`]) with `min_pass_rate`, so "95% of 20 cells"
//! passes only when the data make a rate of at least `min_pass_rate`
//! plausible at that confidence. Trials of one case are not independent:
//! with several trials per case the interval is taken at the effective
//! sample size of the cells clustered by variant × case
//! ([`crate::eval::stats::cluster`]), so ten agreeing trials of one case
//! weigh as one case, not ten.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::stats::{CaseTrials, DEFAULT_CONFIDENCE, Interval, clustered_pass_interval};

/// The package's quarantine file, relative to its directory: eval name →
/// cell patterns.
pub const QUARANTINE_FILE: &str = "evals/quarantine.yaml";

/// How an eval's results are judged: the intervals' confidence, the k of
/// pass@k, the quarantine, the gate's statistic, the trials a winner needs
/// and the primary scorer. All optional in JSON (defaults below).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GateOptions {
    /// Confidence level of every interval (default 0.95).
    pub confidence: f64,
    /// The k of pass@k and pass^k (default empty: 1 and the number of trials).
    pub pass_at_k: Vec<u32>,
    /// Quarantined cells: `case` or `variant::case` patterns.
    pub quarantine: Vec<String>,
    /// Gate on the Wilson lower bound instead of the pass rate (default false).
    pub on_lower_bound: bool,
    /// Trials per case below which no variant is called the winner (default 0: no minimum).
    pub min_trials_for_winner: u32,
    /// The scorer whose mean is quality when variants are compared (the
    /// frontier, the recommendation, `Best:`, significance); default none:
    /// the pass rate (see `deciding_scorer`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_scorer: Option<String>,
    /// Strict: every counted cell must pass, whatever `min_pass_rate` says,
    /// and a cell that fails fails its test ([`Eval::strict`](crate::eval::Eval::strict),
    /// or `SCAFFOLD_STRICT=1` for every eval of a run; default false).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
}

impl Default for GateOptions {
    fn default() -> Self {
        GateOptions {
            confidence: DEFAULT_CONFIDENCE,
            pass_at_k: Vec::new(),
            quarantine: Vec::new(),
            on_lower_bound: false,
            min_trials_for_winner: 0,
            primary_scorer: None,
            strict: false,
        }
    }
}

impl GateOptions {
    /// Whether a gate of `min_pass_rate` lets a counted cell fail without
    /// failing the run: not strict, and a threshold below 100%. A cell that
    /// fails in an eval that allows no failure fails its test; one the gate
    /// allows is reported as an allowed failure (libtest: `ignored`, JUnit:
    /// `<skipped>`) and the gate judges the run.
    ///
    /// ```
    /// use scaffold::eval::GateOptions;
    /// let options = GateOptions::default();
    /// assert!(options.allows_failures(0.8));
    /// assert!(!options.allows_failures(1.0));
    /// let strict = GateOptions { strict: true, ..GateOptions::default() };
    /// assert!(!strict.allows_failures(0.8));
    /// ```
    pub fn allows_failures(&self, min_pass_rate: f64) -> bool {
        !self.strict && min_pass_rate < 1.0
    }

    /// Whether the options can be used: the confidence is a probability
    /// strictly between 0 and 1 (`0.95`, not `95`). The harness checks this
    /// at set-up, naming the eval.
    ///
    /// ```
    /// use scaffold::eval::GateOptions;
    /// let mut options = GateOptions::default();
    /// assert!(options.check().is_ok());
    /// options.confidence = 95.0;
    /// assert_eq!(
    ///     options.check().unwrap_err(),
    ///     "confidence 95 is not a probability between 0 and 1 (write 0.95 for 95%)"
    /// );
    /// options.confidence = f64::NAN;
    /// assert!(options.check().unwrap_err().starts_with("confidence NaN"));
    /// ```
    pub fn check(&self) -> Result<(), String> {
        let c = self.confidence;
        if c.is_finite() && c > 0.0 && c < 1.0 {
            return Ok(());
        }
        let hint = if c.is_finite() && c > 1.0 && c < 100.0 {
            format!(" (write {} for {c}%)", c / 100.0)
        } else {
            String::new()
        };
        Err(format!(
            "confidence {c} is not a probability between 0 and 1{hint}"
        ))
    }

    /// Whether the primary scorer, if one is named, is among `scorers` (the
    /// eval's). The harness checks this at set-up, naming the eval.
    ///
    /// ```
    /// use scaffold::eval::GateOptions;
    /// let options = GateOptions { primary_scorer: Some("findngs".into()), ..GateOptions::default() };
    /// let scorers = ["output-valid".to_string(), "findings".to_string()];
    /// assert_eq!(
    ///     options.check_primary_scorer(&scorers).unwrap_err(),
    ///     "primary scorer `findngs` is not one of the eval's scorers (`output-valid`, `findings`)"
    /// );
    /// assert!(options.check_primary_scorer(&[]).unwrap_err().ends_with("(it has none)"));
    /// assert!(GateOptions::default().check_primary_scorer(&[]).is_ok());
    /// ```
    pub fn check_primary_scorer(&self, scorers: &[String]) -> Result<(), String> {
        let Some(name) = &self.primary_scorer else {
            return Ok(());
        };
        if scorers.contains(name) {
            return Ok(());
        }
        let there = if scorers.is_empty() {
            "it has none".to_string()
        } else {
            let names: Vec<String> = scorers.iter().map(|s| format!("`{s}`")).collect();
            names.join(", ")
        };
        Err(format!(
            "primary scorer `{name}` is not one of the eval's scorers ({there})"
        ))
    }
}

/// What the gate compared with `min_pass_rate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum GateStatistic {
    /// The pass rate (point estimate).
    PassRate,
    /// The lower bound of the pass rate's Wilson interval.
    WilsonLowerBound,
}

/// The gate's verdict and what it was based on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Gate {
    /// Whether the run passes the gate.
    pub passed: bool,
    /// The threshold.
    pub min_pass_rate: f64,
    /// What was compared with it.
    pub statistic: GateStatistic,
    /// Its value.
    pub value: f64,
    /// Cells counted (quarantined ones left out).
    pub cells: usize,
    /// Counted cells that passed.
    pub passes: usize,
    /// `passes / cells` (0 without cells).
    pub pass_rate: f64,
    /// The Wilson interval of that rate.
    pub interval: Interval,
    /// Quarantined cells (`variant::case`), not counted.
    #[serde(default)]
    pub quarantined: Vec<String>,
    /// How many cell runs (trials) quarantine left out.
    #[serde(default)]
    pub quarantined_cells: usize,
    /// Quarantined cells whose every trial passed: candidates for release.
    #[serde(default)]
    pub release_candidates: Vec<String>,
    /// Quarantine patterns that matched no cell.
    #[serde(default)]
    pub unmatched_quarantine: Vec<String>,
    /// Strict: every counted cell had to pass.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub strict: bool,
    /// What fails the run whatever the pass rate: cells missing from a run
    /// that is not finished, cells that could not be played back, session
    /// snapshots that changed. The gate passes only without any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_by: Vec<String>,
}

impl Gate {
    /// The gate line of a summary, e.g. `passed: Wilson lower bound 88.2% of
    /// pass rate 97.5% (95% CI 88.2%–99.6%, 40 cells) ≥ min_pass_rate 85.0%`.
    pub fn describe(&self) -> String {
        let pct = |x: f64| format!("{:.1}%", x * 100.0);
        let what = match self.statistic {
            GateStatistic::PassRate => format!("pass rate {}", pct(self.pass_rate)),
            GateStatistic::WilsonLowerBound => format!(
                "Wilson lower bound {} of pass rate {}",
                pct(self.value),
                pct(self.pass_rate)
            ),
        };
        let mut basis = format!(
            "{:.0}% CI {}–{}, {} cell{}",
            self.interval.confidence * 100.0,
            pct(self.interval.lower),
            pct(self.interval.upper),
            self.cells,
            if self.cells == 1 { "" } else { "s" }
        );
        if self.quarantined_cells > 0 {
            basis.push_str(&format!(
                ", {} quarantined left out",
                self.quarantined_cells
            ));
        }
        let min = pct(self.min_pass_rate);
        let judged = match (self.statistic_passed(), self.strict) {
            (true, false) => format!("{what} ({basis}) ≥ min_pass_rate {min}"),
            (true, true) => format!("{what} ({basis}), strict: every cell passed"),
            (false, false) => format!("{what} ({basis}) is below min_pass_rate {min}"),
            (false, true) => format!(
                "strict: {} of {} cells failed ({what}, {basis})",
                self.cells - self.passes,
                self.cells
            ),
        };
        match (self.passed, self.blocked_by.as_slice()) {
            (true, _) => format!("passed: {judged}"),
            (false, []) => format!("FAILED: {judged}"),
            (false, blocked) => format!("FAILED: {} ({judged})", blocked.join("; ")),
        }
    }

    /// Whether the statistic alone passes: at least `min_pass_rate`, and
    /// every counted cell passed when strict (nothing to judge when every
    /// cell is quarantined).
    fn statistic_passed(&self) -> bool {
        let nothing_to_judge = self.cells == 0 && self.quarantined_cells > 0;
        nothing_to_judge
            || (self.value + 1e-12 >= self.min_pass_rate
                && (!self.strict || self.passes == self.cells))
    }

    /// The gate with `reasons` that fail the run whatever the pass rate.
    pub(crate) fn blocked(mut self, reasons: Vec<String>) -> Gate {
        self.blocked_by.extend(reasons);
        self.passed = self.statistic_passed() && self.blocked_by.is_empty();
        self
    }
}

impl Gate {
    /// What a summary must say about quarantine, loudly: the cells left out
    /// of the gate (with their trials from `trials`, e.g.
    /// [`EvalResults::notable_trials`](crate::eval::EvalResults::notable_trials)),
    /// the ones that could be released, and patterns that matched nothing in
    /// eval `eval`.
    pub fn notes(&self, eval: &str, trials: &[CaseTrials]) -> Vec<String> {
        let trials = |label: &str| {
            trials
                .iter()
                .find(|t| t.label() == label)
                .map(|t| format!("{}/{}", t.passes, t.trials))
        };
        let mut out = Vec::new();
        if !self.quarantined.is_empty() {
            let listed: Vec<String> = self
                .quarantined
                .iter()
                .map(|l| match trials(l) {
                    Some(t) => format!("{l} ({t} passed)"),
                    None => l.clone(),
                })
                .collect();
            out.push(format!(
                "warning: {} quarantined cell{} did not count towards the gate: {}",
                self.quarantined.len(),
                if self.quarantined.len() == 1 { "" } else { "s" },
                listed.join(", ")
            ));
            if self.cells == 0 {
                out.push("warning: every cell is quarantined: the gate judged nothing".into());
            }
        }
        for l in &self.release_candidates {
            out.push(format!(
                "note: quarantined cell {l} passed every trial{}: consider releasing it from quarantine",
                trials(l).map(|t| format!(" ({t})")).unwrap_or_default()
            ));
        }
        for p in &self.unmatched_quarantine {
            out.push(format!(
                "warning: quarantine pattern `{p}` matches no cell of eval `{eval}`"
            ));
        }
        out
    }
}

/// Whether `pattern` (`case`, `variant::case`, `*` segments) names the cell
/// of `variant` and `case`.
pub fn quarantine_matches(pattern: &str, variant: &str, case: &str) -> bool {
    let seg = |p: &str, v: &str| p == "*" || p == v;
    let parts: Vec<&str> = pattern.trim().split("::").collect();
    match parts.as_slice() {
        [c] => seg(c, case),
        [v, c] => seg(v, variant) && seg(c, case),
        _ => false,
    }
}

/// Why a quarantine file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum QuarantineError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a mapping of eval names to lists of patterns.
    #[error(
        "{path} is not a mapping of eval names to lists of cell patterns (`case` or `variant::case`): {message}"
    )]
    Parse {
        /// The file.
        path: String,
        /// What the YAML reader said.
        message: String,
    },
}

/// The quarantine file: eval name → patterns. A missing file is an empty
/// quarantine; an empty file too.
pub fn load_quarantine(
    path: impl AsRef<Path>,
) -> Result<BTreeMap<String, Vec<String>>, QuarantineError> {
    let path = path.as_ref();
    let shown = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(source) => {
            return Err(QuarantineError::Read {
                path: shown,
                source,
            });
        }
    };
    if text.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#')
    }) {
        return Ok(BTreeMap::new());
    }
    serde_saphyr::from_str::<BTreeMap<String, Vec<String>>>(&text).map_err(|e| {
        QuarantineError::Parse {
            path: shown,
            message: e.to_string(),
        }
    })
}

/// The gate over `cells`, given each cell's `(variant, case, passed,
/// quarantined)`.
pub(crate) fn judge<'a>(
    cells: impl IntoIterator<Item = (&'a str, &'a str, bool, bool)>,
    min_pass_rate: f64,
    options: &GateOptions,
) -> Gate {
    // The counted cells' outcomes, clustered by variant × case (trials).
    let mut counted: Vec<((&str, &str), bool)> = Vec::new();
    let mut quarantined_cells = 0;
    // Per quarantined variant::case: (trials, passes), in first-seen order.
    let mut quarantined: Vec<(String, usize, usize)> = Vec::new();
    let mut matched = vec![false; options.quarantine.len()];
    for (variant, case, passed, is_quarantined) in cells {
        for (m, p) in matched.iter_mut().zip(&options.quarantine) {
            *m |= quarantine_matches(p, variant, case);
        }
        if is_quarantined {
            quarantined_cells += 1;
            let label = format!("{variant}::{case}");
            match quarantined.iter_mut().find(|(l, ..)| *l == label) {
                Some(q) => {
                    q.1 += 1;
                    q.2 += usize::from(passed);
                }
                None => quarantined.push((label, 1, usize::from(passed))),
            }
        } else {
            counted.push(((variant, case), passed));
        }
    }
    let (n, c) = (counted.len(), counted.iter().filter(|(_, p)| *p).count());
    let pass_rate = if n == 0 { 0.0 } else { c as f64 / n as f64 };
    let interval = clustered_pass_interval(&counted, options.confidence);
    let (statistic, value) = if options.on_lower_bound {
        (GateStatistic::WilsonLowerBound, interval.lower)
    } else {
        (GateStatistic::PassRate, pass_rate)
    };
    let gate = Gate {
        passed: false,
        min_pass_rate,
        statistic,
        value,
        cells: n,
        passes: c,
        pass_rate,
        interval,
        release_candidates: quarantined
            .iter()
            .filter(|(_, t, p)| t == p)
            .map(|(l, ..)| l.clone())
            .collect(),
        quarantined: quarantined.into_iter().map(|(l, ..)| l).collect(),
        quarantined_cells,
        unmatched_quarantine: options
            .quarantine
            .iter()
            .zip(matched)
            .filter(|(_, m)| !m)
            .map(|(p, _)| p.clone())
            .collect(),
        strict: options.strict,
        blocked_by: Vec::new(),
    };
    // With every cell quarantined there is nothing to judge: the summary says so.
    gate.blocked(Vec::new())
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn the_gate_notes_warn_of_quarantined_cells_and_stale_patterns() {
        use crate::eval::{CellRecord, EvalResults, GateOptions};
        let mut cells = vec![CellRecord::new("v", "ok"), CellRecord::new("v", "flaky")];
        cells[0].passed = true;
        let options = GateOptions {
            quarantine: vec!["flaky".into(), "gone".into()],
            ..GateOptions::default()
        };
        let r = EvalResults::for_tests("qa", 1, cells).with_gate_options(options);
        let notes = r.gate_verdict().notes(&r.eval, &r.notable_trials());
        assert_eq!(
            notes[0],
            "warning: 1 quarantined cell did not count towards the gate: v::flaky (0/1 passed)"
        );
        assert_eq!(
            notes[1],
            "warning: quarantine pattern `gone` matches no cell of eval `qa`"
        );
    }

    #[test]
    fn a_quarantine_pattern_names_a_case_of_any_variant_or_of_one() {
        use crate::eval::gate::quarantine_matches;
        assert!(quarantine_matches("sqli", "gpt-4o", "sqli"));
        assert!(quarantine_matches("gpt-4o::sqli", "gpt-4o", "sqli"));
        assert!(quarantine_matches("*::sqli", "claude", "sqli"));
        assert!(!quarantine_matches("claude::sqli", "gpt-4o", "sqli"));
        assert!(!quarantine_matches("a::b::c", "b", "c"));
    }

    #[test]
    fn a_quarantine_file_lists_patterns_per_eval_and_a_missing_one_none() {
        let dir = std::env::temp_dir().join(format!("quarantine-doc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("quarantine.yaml");
        std::fs::write(&path, "code-review:\n  - gpt-4o::sqli  # flaky\n  - xss\n").unwrap();
        let q = crate::eval::gate::load_quarantine(&path).unwrap();
        assert_eq!(q["code-review"], ["gpt-4o::sqli", "xss"]);
        assert!(
            crate::eval::gate::load_quarantine(dir.join("none.yaml"))
                .unwrap()
                .is_empty()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
