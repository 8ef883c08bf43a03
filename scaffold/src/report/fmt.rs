//! Numbers as reports show them.

pub(crate) use crate::util::fmt::{duration, p_value, pct, usd};

use crate::eval::stats::VariantSummary;

/// What a report shows for a figure that is not known: never `$0` or `0ms`.
pub(crate) const UNKNOWN: &str = "unknown";

/// A variant's mean cost per cell, or `unknown` when a model it called has
/// no price or no cell of it has a cost of its own (never a misleading `$0`).
pub(crate) fn cost_per_case(s: &VariantSummary) -> String {
    s.known_cost().map_or_else(|| UNKNOWN.into(), usd)
}

/// A variant's mean latency per cell (`2.1s`), or `unknown` when no cell of
/// it has a latency of its own (never a misleading `0ms`).
pub(crate) fn latency_avg(s: &VariantSummary) -> String {
    s.known_latency().map_or_else(|| UNKNOWN.into(), duration)
}

/// A cell's latency (`812ms`), or `unknown` when it could not be played
/// back or errored.
pub(crate) fn cell_latency(c: &crate::eval::CellRecord) -> String {
    c.known_latency().map_or_else(|| UNKNOWN.into(), duration)
}

/// A cell's cost (`$0.0042`), or `unknown` when it could not be played
/// back, errored or called a model with no price.
pub(crate) fn cell_cost(c: &crate::eval::CellRecord) -> String {
    c.known_cost().map_or_else(|| UNKNOWN.into(), usd)
}

/// Why a cell's latency and cost are unknown, in a few words: `could not
/// be played back`, `errored`; for its cost alone, `no price for a model it
/// called`.
pub(crate) fn cell_unknown_reason(c: &crate::eval::CellRecord) -> Option<&'static str> {
    match c.unmeasured() {
        Some(why) => Some(why.reason()),
        None if c.known_cost().is_none() => Some("no price for a model it called"),
        None => None,
    }
}

/// The baseline's, the candidate's and the change of the mean latency and
/// of the mean cost per cell of a baseline comparison, as table cells: a
/// figure unknown on a side is `unknown`, and its change `–`.
pub(crate) fn baseline_figures(cmp: &crate::eval::Comparison) -> ([String; 3], [String; 3]) {
    let (b, c, s) = (&cmp.baseline, &cmp.candidate, &cmp.summary);
    let row = |base: Option<f64>, cand: Option<f64>, pct: f64, f: fn(f64) -> String| {
        let change = match (base, cand) {
            (Some(_), Some(_)) => format!("{:+.0}%", pct * 100.0),
            _ => "–".into(),
        };
        let shown = |v: Option<f64>| v.map_or_else(|| UNKNOWN.into(), f);
        [shown(base), shown(cand), change]
    };
    (
        row(
            b.known_latency(),
            c.known_latency(),
            s.avg_latency_delta_pct,
            duration,
        ),
        row(b.known_cost(), c.known_cost(), s.cost_delta_pct, usd),
    )
}

/// The notes of the variants' figures, each a heading and its entries
/// (`entry` of the variant and why, each as the report writes it: `alias
/// (no price …)`): the variants whose latency and cost are unknown, those
/// whose cost alone is, and those whose known figures leave some cells out.
/// Headings without entries are left out.
pub(crate) fn figure_notes<'s>(
    summaries: impl IntoIterator<Item = &'s VariantSummary>,
    entry: impl Fn(&str, &str) -> String,
) -> Vec<(&'static str, Vec<String>)> {
    let mut notes: [(&'static str, Vec<String>); 3] = [
        ("Latency and cost unknown", Vec::new()),
        ("Cost unknown", Vec::new()),
        ("Left out of latency and cost", Vec::new()),
    ];
    for s in summaries {
        let entry = |why: String| entry(&s.variant, &why);
        if let Some(why) = s.latency_unknown_reason() {
            notes[0].1.push(entry(why));
        } else if let Some(why) = s.cost_unknown_reason() {
            notes[1].1.push(entry(why));
        }
        if let Some(why) = s.left_out() {
            notes[2].1.push(entry(why));
        }
    }
    notes.into_iter().filter(|(_, v)| !v.is_empty()).collect()
}

/// A scorer's column heading: a scorer named like a metric column
/// (`latency`, `cost`, `pass`, `tokens`) is `{name} score`.
pub(crate) fn scorer_heading(name: &str) -> String {
    match name {
        "latency" | "cost" | "pass" | "tokens" => format!("{name} score"),
        other => other.to_string(),
    }
}

/// `+5.0 pts`, `-12.5 pts`.
pub(crate) fn points(delta: f64) -> String {
    format!("{:+.1} pts", delta * 100.0)
}

/// `57–100%`: an interval of rates.
pub(crate) fn interval(i: &crate::eval::Interval) -> String {
    format!("{:.0}–{:.0}%", i.lower * 100.0, i.upper * 100.0)
}

/// `95% CI`: the heading of an interval at `confidence`.
pub(crate) fn ci_heading(confidence: f64) -> String {
    format!("{} CI", pct(confidence))
}

/// `pass@1 0.67, pass@3 1.00, pass^3 0.00`: the estimators of one cell.
pub(crate) fn pass_k(t: &crate::eval::CaseTrials) -> String {
    let at = t.pass_at_k.iter().map(|(k, v)| format!("pass@{k} {v:.2}"));
    let hat = t
        .pass_hat_k
        .iter()
        .filter(|(k, _)| **k > 1)
        .map(|(k, v)| format!("pass^{k} {v:.2}"));
    at.chain(hat).collect::<Vec<_>>().join(", ")
}

/// `FLAKY`, `QUARANTINED`, `FLAKY, QUARANTINED` or nothing.
pub(crate) fn markers(t: &crate::eval::CaseTrials) -> String {
    let mut m = Vec::new();
    if t.flaky {
        m.push("FLAKY");
    }
    if t.quarantined {
        m.push("QUARANTINED");
    }
    m.join(", ")
}

/// The gate in a few words: `pass rate ≥ 80%` or `Wilson lower bound (95%) ≥ 80%`.
pub(crate) fn gate_rule(results: &crate::eval::EvalResults) -> String {
    let o = &results.gate_options;
    let min = pct(results.config.min_pass_rate);
    if o.on_lower_bound {
        format!("Wilson lower bound ({}) ≥ {min}", ci_heading(o.confidence))
    } else {
        format!("pass rate ≥ {min}")
    }
}

/// A number with at most 4 decimals, no trailing zeros.
pub(crate) fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The paired t-test of a comparison as a table cell: `t = 2.345, p = 0.031`.
pub(crate) fn t_test_cell(t: &crate::eval::compare::PairwiseTest) -> String {
    t.t_test
        .map(|t| format!("t = {:.3}, {}", t.statistic, p_value(t.p_value)))
        .unwrap_or_else(|| "–".into())
}

/// The Wilcoxon test of a comparison as a table cell: `W = 3, p = 0.25 (exact)`.
pub(crate) fn wilcoxon_cell(t: &crate::eval::compare::PairwiseTest) -> String {
    t.wilcoxon
        .map(|w| {
            format!(
                "W = {}, {} ({})",
                num(w.statistic),
                p_value(w.p_value),
                w.method.as_str()
            )
        })
        .unwrap_or_else(|| "–".into())
}

/// A pairwise test's sign-flip permutation test, for a table cell.
/// What the comparison's cases could detect: `≥ 57 points` (the minimum
/// detectable effect at 80% power) or `none (5 < 6 cases)`.
pub(crate) fn detectable_cell(t: &crate::eval::compare::PairwiseTest) -> String {
    match t.power {
        Some(p) => match p.min_detectable_effect {
            Some(mde) => format!("≥ {:.0} points", mde * 100.0),
            None => format!(
                "none ({} < {} cases)",
                p.cases,
                crate::eval::stats::min_cases_for(p.alpha)
            ),
        },
        None => "–".into(),
    }
}

pub(crate) fn sign_flip_cell(t: &crate::eval::compare::PairwiseTest) -> String {
    t.sign_flip
        .map(|s| {
            format!(
                "{} ({}, {} non-zero)",
                p_value(s.p_value),
                s.method.as_str(),
                s.n
            )
        })
        .unwrap_or_else(|| "–".into())
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats() {
        assert_eq!(super::usd(0.0042), "$0.0042");
        assert_eq!(super::usd(0.009999999999999998), "$0.01");
        assert_eq!(super::usd(0.0105), "$0.01");
        assert_eq!(super::usd(0.0035), "$0.0035");
        assert_eq!(super::usd(0.00350), "$0.0035");
        assert_eq!(super::usd(12.5), "$12.50");
        assert_eq!(super::duration(2100.0), "2.1s");
        assert_eq!(super::points(-0.125), "-12.5 pts");
        assert_eq!(super::num(0.5), "0.5");
    }
}
