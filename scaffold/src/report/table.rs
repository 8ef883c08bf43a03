//! The terminal table: one row per variant (with the pass rate's
//! confidence interval when the summaries have one), then Best / Cheapest /
//! Fastest; after it, for a results document, the flaky and quarantined
//! cells, the borderline judgements and the significance verdict.

use super::fmt::{UNKNOWN, ci_heading, figure_notes, interval, markers, pass_k};
use crate::eval::compare::{deciding_scorer, quality};
use crate::eval::{EvalResults, VariantSummary};
use crate::util::fmt::plural;

/// Flaky or quarantined cells, and borderline judgements, listed before "and N more".
const MAX_LISTED: usize = 10;

/// What the table's title line says about the eval.
#[derive(Debug, Clone, PartialEq)]
pub struct TableHeader<'a> {
    /// The eval's name.
    pub eval: &'a str,
    /// Distinct cases.
    pub inputs: usize,
    /// Variants.
    pub variants: usize,
    /// Trials per variant × case.
    pub trials: u32,
    /// The scorers, in the eval's order (columns follow it).
    pub scorers: &'a [String],
    /// The primary scorer, whose mean decides `Best:` (none, or one that
    /// gave every cell one value: the pass rate).
    pub primary_scorer: Option<&'a str>,
}

fn latency(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1}s avg", ms / 1000.0)
    } else {
        format!("{ms:.0}ms avg")
    }
}

fn dollars(usd: f64) -> String {
    super::fmt::usd(usd)
}

fn pad(s: &str, width: usize) -> String {
    let len = s.chars().count();
    format!("{s}{}", " ".repeat(width.saturating_sub(len)))
}

/// Render the table of seed 000 for `summaries`.
pub fn render(header: &TableHeader<'_>, summaries: &[VariantSummary]) -> String {
    let mut scorer_names: Vec<&str> = header.scorers.iter().map(String::as_str).collect();
    for s in summaries {
        for name in s.scores.keys() {
            if !scorer_names.contains(&name.as_str()) {
                scorer_names.push(name);
            }
        }
    }
    let confidence = summaries
        .iter()
        .find_map(|s| s.pass_rate_interval)
        .map(|i| i.confidence);
    let mut head = vec!["Variant".to_string(), "pass".into()];
    head.extend(confidence.map(ci_heading));
    head.extend(["latency".into(), "cost".into()]);
    // A scorer named like a metric column gets its own, distinct heading.
    head.extend(scorer_names.iter().map(|s| super::fmt::scorer_heading(s)));
    let rows: Vec<Vec<String>> = summaries
        .iter()
        .map(|s| {
            let mut row = vec![
                s.variant.clone(),
                format!("{}/{} ({:.0}%)", s.passed, s.cells, s.pass_rate * 100.0),
            ];
            if confidence.is_some() {
                row.push(s.pass_rate_interval.map_or("-".into(), |i| interval(&i)));
            }
            let avg = s.known_latency().map_or_else(|| UNKNOWN.into(), latency);
            row.extend([avg, super::fmt::cost_per_case(s)]);
            for name in &scorer_names {
                row.push(match s.scores.get(*name) {
                    Some(st) => format!("{:.2} ± {:.2}", st.mean, st.stddev),
                    None => "-".into(),
                });
            }
            row
        })
        .collect();
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count() + 2).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count() + 2);
        }
    }
    let title_left = format!(" Eval: {}", header.eval);
    let title_right = format!(
        "{} × {} × {}t ",
        plural(header.inputs, "input"),
        plural(header.variants, "variant"),
        header.trials
    );
    let inner: usize = widths.iter().map(|w| w + 1).sum::<usize>() - 1;
    let min_inner = title_left.chars().count() + title_right.chars().count() + 4;
    if inner < min_inner
        && let Some(last) = widths.last_mut()
    {
        *last += min_inner - inner;
    }
    let inner: usize = widths.iter().map(|w| w + 1).sum::<usize>() - 1;

    let line = |l: &str, m: &str, r: &str| {
        let parts: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
        format!("{l}{}{r}\n", parts.join(m))
    };
    let row_line = |cells: &[String]| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| pad(&format!(" {c}"), *w))
            .collect();
        format!("│{}│\n", parts.join("│"))
    };
    let mut out = String::new();
    out.push_str(&format!("┌{}┐\n", "─".repeat(inner)));
    let gap = inner - title_left.chars().count() - title_right.chars().count();
    out.push_str(&format!("│{title_left}{}{title_right}│\n", " ".repeat(gap)));
    out.push_str(&line("├", "┬", "┤"));
    out.push_str(&row_line(&head));
    out.push_str(&line("├", "┼", "┤"));
    for row in &rows {
        out.push_str(&row_line(row));
    }
    out.push_str(&line("└", "┴", "┘"));
    out.push_str(&verdict_lines(summaries, header.primary_scorer));
    out
}

/// The Best / Cheapest / Fastest lines.
fn verdict_lines(summaries: &[VariantSummary], primary: Option<&str>) -> String {
    let mut out = String::new();
    if summaries.is_empty() {
        return out;
    }
    // Best: highest quality (the deciding scorer's mean, else the pass
    // rate), then cheapest, then highest pass rate, then fastest: the
    // variant the comparison recommends (see `eval::compare`).
    let primary = deciding_scorer(summaries, primary);
    let quality_of = |s: &VariantSummary| quality(s, primary);
    let f = |x: f64, y: f64| x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal);
    // An unknown figure breaks no tie.
    let known = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => f(x, y),
        _ => std::cmp::Ordering::Equal,
    };
    let best = summaries.iter().min_by(|a, b| {
        f(quality_of(b), quality_of(a))
            .then(known(a.known_cost(), b.known_cost()))
            .then(f(b.pass_rate, a.pass_rate))
            .then(known(a.known_latency(), b.known_latency()))
            .then(a.variant.cmp(&b.variant))
    });
    // A variant that passed no cell is best at nothing.
    if summaries.iter().all(|s| s.passed == 0) {
        out.push_str("  Best: none (no variant passed a cell)\n");
    } else if let Some(best) = best {
        let pass = format!("pass rate {:.0}%", best.pass_rate * 100.0);
        let reason = match primary.and_then(|p| best.scores.get(p).map(|st| (p, st))) {
            Some((p, st)) => format!("{p} {:.2} ±{:.2}, {pass}", st.mean, st.stddev),
            None => pass,
        };
        out.push_str(&format!("  Best: {} ({reason})\n", best.variant));
    }
    // Only a known figure is ranked: an unpriced model's cost is unknown,
    // and so are the latency and cost of a variant none of whose cells could
    // be played back or ran without error.
    let cheapest = summaries
        .iter()
        .filter_map(|s| Some((s, s.known_cost()?)))
        .min_by(|(_, a), (_, b)| f(*a, *b));
    if let Some((c, cost)) = cheapest {
        out.push_str(&format!(
            "  Cheapest: {} ({} avg)\n",
            c.variant,
            dollars(cost)
        ));
    }
    let fastest = summaries
        .iter()
        .filter_map(|s| Some((s, s.known_latency()?)))
        .min_by(|(_, a), (_, b)| f(*a, *b));
    if let Some((s, ms)) = fastest {
        out.push_str(&format!("  Fastest: {} ({})\n", s.variant, latency(ms)));
    }
    for (heading, entries) in figure_notes(summaries, |v, why| format!("{v} ({why})")) {
        out.push_str(&format!("  {heading}: {}\n", entries.join(", ")));
    }
    out
}

/// The table of a results document, with the significance verdict of its
/// comparison when it has several variants.
pub fn render_results(results: &EvalResults) -> String {
    let summaries: Vec<VariantSummary> = results.summaries().into_iter().cloned().collect();
    let header = TableHeader {
        eval: &results.eval,
        inputs: results.config.inputs,
        variants: summaries.len(),
        trials: results.config.trials,
        scorers: &results.config.scorers,
        primary_scorer: results.gate_options.primary_scorer.as_deref(),
    };
    let mut out = render(&header, &summaries);
    if let Some(partial) = results.partial() {
        out.push_str(&format!("  Partial: {partial}\n"));
    }
    if let Some(c) = &results.comparison {
        out.push_str(&format!("  Significance: {}\n", c.verdict_message()));
    }
    out.push_str(&trial_lines(results));
    out
}

/// The flaky and quarantined cells and the borderline judgements.
fn trial_lines(results: &EvalResults) -> String {
    let mut out = String::new();
    // The flaky are among the notable: the statistics are counted once.
    let notable = results.notable_trials();
    let flaky = notable.iter().filter(|t| t.flaky).count();
    if flaky > 0 {
        out.push_str(&format!(
            "  Flaky: {flaky} of {} cells disagree across trials\n",
            results.trial_stats().len()
        ));
    }
    for t in notable.iter().take(MAX_LISTED) {
        out.push_str(&format!(
            "    {} {}: {}/{} passed ({} {}; {})\n",
            markers(t),
            t.label(),
            t.passes,
            t.trials,
            ci_heading(t.interval.confidence),
            interval(&t.interval),
            pass_k(t)
        ));
    }
    if notable.len() > MAX_LISTED {
        out.push_str(&format!("    and {} more\n", notable.len() - MAX_LISTED));
    }
    let borderline = results.borderline();
    if !borderline.is_empty() {
        out.push_str(&format!(
            "  Borderline: {} judgement{} within the margin of the threshold\n",
            borderline.len(),
            if borderline.len() == 1 { "" } else { "s" }
        ));
        for (cell, what) in borderline.iter().take(MAX_LISTED) {
            out.push_str(&format!("    {cell}: {what}\n"));
        }
        if borderline.len() > MAX_LISTED {
            out.push_str(&format!("    and {} more\n", borderline.len() - MAX_LISTED));
        }
    }
    out
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn the_table_shows_a_variants_pass_rate_interval_and_the_cheapest() {
        use crate::eval::VariantSummary;
        use crate::report::table::{TableHeader, render};
        let v = VariantSummary {
            variant: "gpt-4o".into(),
            cells: 5,
            passed: 4,
            pass_rate: 0.8,
            avg_latency: 2100.0,
            avg_cost: 0.04,
            latency: Default::default(),
            cost: Default::default(),
            unmeasured: Default::default(),
            tokens: Default::default(),
            scores: Default::default(),
            pass_rate_interval: Some(crate::eval::stats::wilson_interval(4, 5, 0.95)),
        };
        let header = TableHeader {
            eval: "code-review",
            inputs: 5,
            variants: 1,
            trials: 1,
            scorers: &[],
            primary_scorer: None,
        };
        let out = render(&header, &[v]);
        assert!(out.contains("│ gpt-4o "));
        assert!(out.contains("4/5 (80%) │ 38–96%"));
        assert!(out.contains("Cheapest: gpt-4o ($0.04 avg)"));
    }

    /// A variant none of whose cells could be played back is not the
    /// cheapest at $0 nor the fastest at 0ms: its latency and cost are
    /// unknown, and the table says why (issue 36).
    #[test]
    fn a_variant_that_could_not_be_played_back_has_unknown_figures() {
        let results = crate::report::fixtures::one_variant_unplayable();
        let out = crate::report::table::render_results(&results);
        let row = out.lines().find(|l| l.contains("│ unplayable")).unwrap();
        assert!(row.contains("│ unknown "), "{row}");
        assert!(!row.contains("$0 ") && !row.contains("0ms"), "{row}");
        assert!(out.contains("  Cheapest: played ($0.02 avg)\n"), "{out}");
        assert!(out.contains("  Fastest: played (1.5s avg)\n"), "{out}");
        assert!(
            out.contains(
                "  Latency and cost unknown: unplayable (3 of 3 cells could not be played back)\n"
            ),
            "{out}"
        );
    }

    #[test]
    fn the_table_of_results_is_headed_by_the_eval() {
        use crate::eval::{CellRecord, EvalResults};
        let results = EvalResults::for_tests("qa", 1, vec![CellRecord::new("a", "c1")]);
        let out = crate::report::table::render_results(&results);
        assert!(out.contains("│ Eval: qa"));
        assert!(out.contains("0/1 (0%)"));
    }
}
