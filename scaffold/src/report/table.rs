//! The terminal table: one row per variant, then Best / Cheapest / Fastest.

use crate::eval::VariantSummary;

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
}

fn latency(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1}s avg", ms / 1000.0)
    } else {
        format!("{ms:.0}ms avg")
    }
}

fn dollars(usd: f64) -> String {
    if usd == 0.0 {
        "$0".into()
    } else if usd < 0.01 {
        format!("${usd:.4}")
    } else {
        format!("${usd:.2}")
    }
}

fn pad(s: &str, width: usize) -> String {
    let len = s.chars().count();
    format!("{s}{}", " ".repeat(width.saturating_sub(len)))
}

/// Render the table of seed 000 for `summaries`.
///
/// ```
/// use scaffold::eval::VariantSummary;
/// use scaffold::report::table::{render, TableHeader};
/// let v = VariantSummary { variant: "gpt-4o".into(), cells: 5, passed: 4, pass_rate: 0.8,
///     avg_latency_ms: 2100.0, avg_cost_usd: 0.04, total_cost_usd: 0.2, total_tokens: 900,
///     scores: Default::default() };
/// let out = render(&TableHeader { eval: "code-review", inputs: 5, variants: 1, trials: 1, scorers: &[] }, &[v]);
/// assert!(out.contains("│ gpt-4o "));
/// assert!(out.contains("4/5 (80%)"));
/// assert!(out.contains("Cheapest: gpt-4o ($0.04 avg)"));
/// ```
pub fn render(header: &TableHeader<'_>, summaries: &[VariantSummary]) -> String {
    let mut scorer_names: Vec<&str> = header.scorers.iter().map(String::as_str).collect();
    for s in summaries {
        for name in s.scores.keys() {
            if !scorer_names.contains(&name.as_str()) {
                scorer_names.push(name);
            }
        }
    }
    let mut head = vec![
        "Variant".to_string(),
        "pass".into(),
        "latency".into(),
        "cost".into(),
    ];
    // A scorer named like a metric column gets its own, distinct heading.
    head.extend(scorer_names.iter().map(|s| match *s {
        "latency" | "cost" | "pass" => format!("{s} score"),
        other => other.to_string(),
    }));
    let rows: Vec<Vec<String>> = summaries
        .iter()
        .map(|s| {
            let mut row = vec![
                s.variant.clone(),
                format!("{}/{} ({:.0}%)", s.passed, s.cells, s.pass_rate * 100.0),
                latency(s.avg_latency_ms),
                dollars(s.avg_cost_usd),
            ];
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
        "{} inputs × {} variants × {}t ",
        header.inputs, header.variants, header.trials
    );
    let inner: usize = widths.iter().map(|w| w + 1).sum::<usize>() - 1;
    let min_inner = title_left.chars().count() + title_right.chars().count() + 4;
    if inner < min_inner {
        if let Some(last) = widths.last_mut() {
            *last += min_inner - inner;
        }
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
    out.push_str(&verdict_lines(summaries, &scorer_names));
    out
}

/// The Best / Cheapest / Fastest lines.
fn verdict_lines(summaries: &[VariantSummary], scorers: &[&str]) -> String {
    let mut out = String::new();
    if summaries.is_empty() {
        return out;
    }
    // Best: highest pass rate, then highest mean on the first quality scorer
    // (not a metric or validity scorer), then lowest spread.
    let primary = scorers
        .iter()
        .copied()
        .find(|s| !matches!(*s, "output-valid" | "latency" | "cost" | "tokens"));
    let key = |s: &VariantSummary| {
        let st = primary.and_then(|p| s.scores.get(p));
        (
            s.pass_rate,
            st.map_or(0.0, |x| x.mean),
            -st.map_or(0.0, |x| x.stddev),
        )
    };
    let best = summaries.iter().max_by(|a, b| {
        key(a)
            .partial_cmp(&key(b))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    if let Some(best) = best {
        let mut reason = format!("pass rate {:.0}%", best.pass_rate * 100.0);
        if let Some(st) = primary.and_then(|p| best.scores.get(p).map(|st| (p, st))) {
            reason.push_str(&format!(", {} {:.2} ±{:.2}", st.0, st.1.mean, st.1.stddev));
        }
        out.push_str(&format!("  Best: {} ({reason})\n", best.variant));
    }
    let cheapest = summaries.iter().min_by(|a, b| {
        a.avg_cost_usd
            .partial_cmp(&b.avg_cost_usd)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    if let Some(c) = cheapest {
        out.push_str(&format!(
            "  Cheapest: {} ({} avg)\n",
            c.variant,
            dollars(c.avg_cost_usd)
        ));
    }
    let fastest = summaries.iter().min_by(|a, b| {
        a.avg_latency_ms
            .partial_cmp(&b.avg_latency_ms)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    if let Some(f) = fastest {
        out.push_str(&format!(
            "  Fastest: {} ({})\n",
            f.variant,
            latency(f.avg_latency_ms)
        ));
    }
    out
}
