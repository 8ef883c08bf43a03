//! Why a cell failed, as every report says it: one line per failed check,
//! the run's error written out once, and for a cell that could not be played
//! back the run's error alone (the terminal's lines are the same).

use crate::eval::CellRecord;

/// The prefix of the line that quotes the run's error.
const RUN_FAILED: &str = "run failed: ";

/// Why `c` failed, one line per failed check (empty when it passed): the
/// lines of [`CellRecord::failures`], the run's error written out once
/// ([`error_once`]); for a cell that could not be played back, the run's
/// error alone ([`only_the_run_error`]).
pub(crate) fn why(c: &CellRecord) -> Vec<String> {
    let failures = error_once(c.failures(), c.error.as_deref());
    if c.unplayable {
        only_the_run_error(failures)
    } else {
        failures
    }
}

/// The failures of a cell that could not be played back: the run's error
/// alone (the missing or stale recording and how to record it); every check
/// that failed for want of the recorded answers would only repeat it.
pub(crate) fn only_the_run_error(failures: Vec<String>) -> Vec<String> {
    let run: Vec<String> = failures
        .iter()
        .filter(|f| f.starts_with(RUN_FAILED))
        .cloned()
        .collect();
    if run.is_empty() { failures } else { run }
}

/// `failures` with the run's `error` written out once: a later line that
/// quotes it (the `output-valid` scorer's) refers to it instead, so that a
/// stale recording's diff is printed once per cell.
pub(crate) fn error_once(failures: Vec<String>, error: Option<&str>) -> Vec<String> {
    let Some(error) = error.filter(|e| !e.is_empty()) else {
        return failures;
    };
    let mut written = false;
    failures
        .into_iter()
        .map(|line| match (line.contains(error), written) {
            (false, _) => line,
            (true, false) => {
                written = true;
                line
            }
            (true, true) => line.replace(error, "the run's error (above)"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::results::ScoreRecord;

    /// A cell whose recording is missing: its run failed, and so did the
    /// checks that wanted the recorded answer.
    fn unplayable() -> CellRecord {
        let error = "agent `answerer`: playback: no recording `qa__capital__v__answerer__inv0`\n  \
                     record it with: SCAFFOLD_MODE=record cargo test";
        let mut c = crate::report::fixtures::unplayable_cell("v", "capital", error);
        c.scores.insert(
            "output-valid".into(),
            ScoreRecord {
                pass: false,
                value: 0.0,
                unit: None,
                detail: Some(format!("the run failed: {error}")),
                borderline: false,
            },
        );
        c
    }

    #[test]
    fn a_cell_that_could_not_be_played_back_fails_with_the_runs_error_alone() {
        let c = unplayable();
        let why = why(&c);
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].starts_with("run failed: agent `answerer`: playback: no recording"));
        assert!(why[0].contains("record it with"), "{why:?}");
    }

    #[test]
    fn another_failed_cell_shows_every_check_and_its_error_once() {
        let mut c = unplayable();
        c.unplayable = false;
        let why = why(&c);
        assert_eq!(why.len(), 3, "{why:?}");
        assert!(why[1].starts_with("output.contains: the run produced no output"));
        assert!(
            why[2].ends_with("the run failed: the run's error (above)"),
            "{why:?}"
        );
    }

    #[test]
    fn without_a_runs_error_the_checks_stay() {
        let checks = vec!["output.contains: no Paris".to_string()];
        assert_eq!(only_the_run_error(checks.clone()), checks);
        assert_eq!(error_once(checks.clone(), None), checks);
    }

    #[test]
    fn the_runs_error_is_written_out_once_per_cell() {
        let error = "playback: the request differs:\n  a: 1 → 2";
        let failures = vec![
            format!("run failed: {error}"),
            "assertion failed: no output".to_string(),
            format!("scorer `output-valid` failed: value 0 {error}"),
        ];
        assert_eq!(
            error_once(failures.clone(), Some(error)),
            [
                failures[0].as_str(),
                "assertion failed: no output",
                "scorer `output-valid` failed: value 0 the run's error (above)"
            ]
        );
        assert_eq!(error_once(failures.clone(), None), failures);
    }

    #[test]
    fn an_unplayable_cell_fails_with_the_runs_error_alone() {
        let failures = vec![
            "run failed: playback: no recording `x`\n  record it with: y".to_string(),
            "assertion failed: the run produced no output".to_string(),
            "scorer `cost` failed: value 0 the run's error (above)".to_string(),
        ];
        assert_eq!(only_the_run_error(failures.clone()), [failures[0].clone()]);
        let checks = failures[1..].to_vec();
        assert_eq!(only_the_run_error(checks.clone()), checks);
    }
}
