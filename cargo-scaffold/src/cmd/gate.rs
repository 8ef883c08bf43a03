//! `cargo scaffold gate`: pass or fail stored results, for CI. Results of a
//! run that is not finished (`complete: false`) fail unless `--allow-partial`.

use scaffold::_cargo_scaffold_support::eval::compare::Severity;
use scaffold::_cargo_scaffold_support::eval::{EvalResults, compare};

use crate::cli::GateArgs;
use crate::cmd::compare::options;
use crate::error::{CliError, CmdResult, Exit};
use crate::results::{self, Baseline, BaselineFor};
use crate::text::pts;

/// A rate given as a fraction (`0.9`) or a percentage (`90%`).
pub fn parse_rate(raw: &str, flag: &str) -> Result<f64, CliError> {
    let bad = || {
        CliError::input(format!(
            "{flag} `{raw}`: expected a fraction from 0 to 1 (e.g. 0.9) or a percentage (e.g. 90%)"
        ))
    };
    let s = raw.trim();
    let rate = match s.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map_err(|_| bad())? / 100.0,
        None => s.parse::<f64>().map_err(|_| bad())?,
    };
    if rate.is_finite() && (0.0..=1.0).contains(&rate) {
        Ok(rate)
    } else {
        Err(bad())
    }
}

/// The gate's verdict on `results` (quarantine left out, on the Wilson lower
/// bound when the eval or `lower_bound` asks), against `min` when given, else
/// the eval's own `min_pass_rate`; and the lines that say so.
pub fn verdict(
    results: &EvalResults,
    min: Option<f64>,
    lower_bound: bool,
    allow_partial: bool,
) -> (bool, Vec<String>) {
    let mut judged = results.clone();
    // Gated on the cells recorded (the caller says so).
    judged.complete |= allow_partial;
    if let Some(min) = min {
        judged.config.min_pass_rate = min;
    }
    judged.gate_options.on_lower_bound |= lower_bound;
    let gate = judged.gate_verdict();
    let head = if gate.passed { "PASS" } else { "FAIL" };
    let described = gate.describe();
    // `describe` starts with `passed: ` or `FAILED: `, which `head` says already.
    let what = described
        .split_once(": ")
        .map_or(described.as_str(), |(_, w)| w);
    let mut lines = vec![format!("{head}  {}  {what}", results.eval)];
    lines.extend(
        gate.notes(&results.eval, &results.notable_trials())
            .into_iter()
            .map(|n| format!("        {n}")),
    );
    (gate.passed, lines)
}

/// `cargo scaffold gate`.
pub fn run(args: &GateArgs) -> CmdResult {
    let min = args
        .min_pass_rate
        .as_deref()
        .map(|r| parse_rate(r, "--min-pass-rate"))
        .transpose()?;
    let loaded = results::load_source(&args.source)?;
    let baseline = args
        .baseline
        .as_deref()
        .map(|p| Baseline::open(p, "--baseline"))
        .transpose()?;
    let opts = options(args.block_on_metrics);
    let mut failed = 0;
    for item in &loaded {
        let results = &item.results;
        if let Some(why) = results.partial() {
            if args.allow_partial {
                println!(
                    "warn  {}  {why}: gated on the cells recorded (--allow-partial)",
                    results.eval
                );
            } else {
                // The verdict below fails for it too.
                println!(
                    "FAIL  {}  {why}: finish the run (or merge every shard), or pass --allow-partial to gate the cells recorded",
                    results.eval
                );
            }
        }
        let (ok, lines) = verdict(results, min, args.lower_bound, args.allow_partial);
        lines.iter().for_each(|l| println!("{l}"));
        failed += usize::from(!ok);
        if !ok {
            for cell in results
                .results
                .iter()
                .filter(|c| !c.passed && !c.quarantined)
            {
                let why = cell.failures().join("; ");
                println!(
                    "        {}: {}",
                    cell.label(results.config.trials),
                    crate::text::cut(&why, 160)
                );
            }
        }
        let Some(b) = &baseline else { continue };
        match b.for_eval(&results.eval)? {
            BaselineFor::Found(base) => {
                let cmp = compare(&base.results, results, &opts);
                let s = &cmp.summary;
                let head = if s.should_block { "FAIL" } else { "PASS" };
                let mut line = format!(
                    "{head}  {}  against {}: {}, pass rate {}, {} regression(s), {} improvement(s)",
                    results.eval,
                    base.path.display(),
                    s.verdict.as_str(),
                    pts(s.pass_rate_delta),
                    cmp.regressions.len(),
                    cmp.improvements.len()
                );
                if s.should_block {
                    failed += 1;
                    line.push_str(&format!(
                        "; blocks: {}",
                        s.block_reason.as_deref().unwrap_or("regressions")
                    ));
                }
                println!("{line}");
                for r in &cmp.regressions {
                    let severity = match r.severity {
                        Severity::Critical => "critical",
                        Severity::Warning => "warning",
                    };
                    println!("        [{severity}] {}: {}", r.case_id, r.description);
                }
            }
            BaselineFor::Missing(why) => {
                println!(
                    "skip  {}  not compared with a baseline: {why}",
                    results.eval
                );
            }
        }
    }
    if failed == 0 {
        println!("gate: passed");
    } else {
        println!("gate: FAILED ({failed} check(s))");
    }
    Ok(Exit::from_ok(failed == 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("0.9", "--x").unwrap(), 0.9);
        assert_eq!(parse_rate("95%", "--x").unwrap(), 0.95);
        assert_eq!(parse_rate(" 1 ", "--x").unwrap(), 1.0);
        for bad in ["1.5", "-0.1", "abc", "NaN", "150%", ""] {
            let e = parse_rate(bad, "--min-pass-rate").unwrap_err().to_string();
            assert!(e.contains("expected a fraction from 0 to 1"), "{e}");
        }
    }
}
