//! `cargo scaffold plan`: how many cases a target difference between
//! variants needs, from the spread of stored results.

use scaffold::_cargo_scaffold_support::eval::EvalResults;
use scaffold::_cargo_scaffold_support::eval::stats::PowerMethod;

use crate::cli::PlanArgs;
use crate::cmd::gate::parse_rate;
use crate::error::{CliError, CmdResult, Exit};
use crate::results;

/// `cargo scaffold plan`.
pub fn run(args: &PlanArgs) -> CmdResult {
    let effect = parse_rate(&args.effect, "--effect")?;
    if effect == 0.0 {
        return Err(CliError::input(
            "--effect `0`: no number of cases detects a difference of 0; give e.g. 0.05 or 5%",
        ));
    }
    let power = parse_rate(&args.power, "--power")?;
    if !(power > 0.0 && power < 1.0) {
        return Err(CliError::input(format!(
            "--power `{}`: expected a probability between 0 and 1 exclusive (e.g. 0.8)",
            args.power
        )));
    }
    for item in results::load_source(&args.source)? {
        for line in plan(&item.results, effect, power) {
            println!("{line}");
        }
    }
    Ok(Exit::Success)
}

/// The lines of one eval's plan.
fn plan(results: &EvalResults, effect: f64, power: f64) -> Vec<String> {
    let points = effect * 100.0;
    let Some(cmp) = &results.comparison else {
        return vec![format!(
            "{}: one variant, nothing to compare (plan compares variants)",
            results.eval
        )];
    };
    let tested: Vec<_> = cmp
        .significance
        .iter()
        .filter_map(|t| t.power.map(|p| (t, p)))
        .collect();
    if tested.is_empty() {
        return vec![format!(
            "{}: no comparison was tested (no variant passed a cell, or the results predate power)",
            results.eval
        )];
    }
    let mut lines = vec![format!(
        "{}: to detect {points:.0} points at α = {} with {:.0}% power (paired by case):",
        results.eval,
        cmp.alpha,
        power * 100.0
    )];
    for (t, p) in tested {
        let (needed, method) = p.cases_for(effect, power);
        let spread = if p.sd_assumed {
            format!(
                "spread {} assumed: the stored differences cannot estimate it",
                p.sd
            )
        } else {
            format!("spread {:.3} of the per-case differences", p.sd)
        };
        let now = match p.detectable(power).0 {
            Some(mde) => format!("with {} detects ~{:.0} points", p.cases, mde * 100.0),
            None => format!("with {} detects none", p.cases),
        };
        let how = match method {
            PowerMethod::Exact => "exact McNemar power",
            PowerMethod::Normal => "normal approximation",
        };
        lines.push(format!(
            "  {} vs {} on {}: about {needed} cases ({now}; {spread}; {how})",
            t.variant,
            t.other,
            t.metric_label()
        ));
    }
    lines
}
