//! `cargo scaffold compare A B`: a candidate run against a baseline run.

use std::fmt::Write as _;

use scaffold::_cargo_scaffold_support::eval::compare::Severity;
use scaffold::_cargo_scaffold_support::eval::{CompareOptions, Comparison, compare};
use scaffold::_cargo_scaffold_support::report::{json, markdown};

use crate::cli::CompareArgs;
use crate::error::{CliError, CmdResult, Exit};
use crate::results::{self, Loaded};
use crate::text::{pct, pts};

/// How `compare` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    Text,
    Json,
    Markdown,
}

fn output(name: &str) -> Result<Output, CliError> {
    match name.trim().to_ascii_lowercase().as_str() {
        "text" | "table" => Ok(Output::Text),
        "json" => Ok(Output::Json),
        "markdown" | "md" => Ok(Output::Markdown),
        _ => Err(CliError::input(format!(
            "--format `{name}`: compare prints text, json or markdown"
        ))),
    }
}

/// The comparison options of `--block-on-metrics`.
pub fn options(block_on_metrics: bool) -> CompareOptions {
    CompareOptions {
        block_on_metric_regressions: block_on_metrics,
        ..CompareOptions::default()
    }
}

/// `cargo scaffold compare`.
pub fn run(args: &CompareArgs) -> CmdResult {
    let format = output(&args.format)?;
    let base = results::load(&args.baseline, "BASELINE")?;
    let cand = results::load(&args.candidate, "CANDIDATE")?;
    let pairs = pair(&base, &cand)?;
    let opts = options(args.block_on_metrics);
    let comparisons: Vec<(String, Comparison)> = pairs
        .iter()
        .map(|(b, c)| {
            (
                c.results.eval.clone(),
                compare(&b.results, &c.results, &opts),
            )
        })
        .collect();
    match format {
        Output::Text => {
            let texts: Vec<String> = comparisons
                .iter()
                .map(|(eval, cmp)| summary(eval, cmp))
                .collect();
            print!("{}", texts.join("\n"));
        }
        Output::Json => {
            if let [(_, cmp)] = comparisons.as_slice() {
                print!("{}", json::render_comparison(cmp));
            } else {
                let map: serde_json::Map<String, serde_json::Value> = comparisons
                    .iter()
                    .map(|(eval, cmp)| {
                        (
                            eval.clone(),
                            serde_json::to_value(cmp).unwrap_or(serde_json::Value::Null),
                        )
                    })
                    .collect();
                let doc = serde_json::to_string_pretty(&map).unwrap_or_default();
                println!("{doc}");
            }
        }
        Output::Markdown => {
            for (eval, cmp) in &comparisons {
                if comparisons.len() > 1 {
                    println!("## {eval}\n");
                }
                print!("{}", markdown::render_comparison(cmp));
            }
        }
    }
    Ok(Exit::from_ok(
        !comparisons.iter().any(|(_, c)| c.summary.should_block),
    ))
}

/// Baseline and candidate documents of the same eval. Two single files are
/// compared whatever their evals are called (a renamed eval); otherwise
/// evals are matched by name.
fn pair<'a>(
    base: &'a [Loaded],
    cand: &'a [Loaded],
) -> Result<Vec<(&'a Loaded, &'a Loaded)>, CliError> {
    if let ([b], [c]) = (base, cand) {
        if b.results.eval != c.results.eval {
            eprintln!(
                "note: comparing eval `{}` ({}) with eval `{}` ({})",
                b.results.eval,
                b.path.display(),
                c.results.eval,
                c.path.display()
            );
        }
        return Ok(vec![(b, c)]);
    }
    let mut pairs = Vec::new();
    for c in cand {
        match base.iter().find(|b| b.results.eval == c.results.eval) {
            Some(b) => pairs.push((b, c)),
            None => eprintln!(
                "note: eval `{}` is only in the candidate ({})",
                c.results.eval,
                c.path.display()
            ),
        }
    }
    for b in base {
        if !cand.iter().any(|c| c.results.eval == b.results.eval) {
            eprintln!(
                "note: eval `{}` is only in the baseline ({})",
                b.results.eval,
                b.path.display()
            );
        }
    }
    if pairs.is_empty() {
        let names = |l: &[Loaded]| {
            l.iter()
                .map(|x| format!("`{}`", x.results.eval))
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(CliError::input(format!(
            "no eval is in both: the baseline holds {}, the candidate {}",
            names(base),
            names(cand)
        )));
    }
    Ok(pairs)
}

/// A comparison in words: verdict, figures, regressions, improvements.
pub fn summary(eval: &str, cmp: &Comparison) -> String {
    let s = &cmp.summary;
    let mut out = String::new();
    let block = if s.should_block {
        format!(
            "BLOCKS: {}",
            s.block_reason.as_deref().unwrap_or("regressions")
        )
    } else {
        "does not block".into()
    };
    let _ = writeln!(out, "{eval}: {} ({block})", s.verdict.as_str());
    let (b, c) = (&cmp.baseline, &cmp.candidate);
    let _ = writeln!(
        out,
        "  pass rate  {} → {} ({})   cells {} → {}",
        pct(b.pass_rate),
        pct(c.pass_rate),
        pts(s.pass_rate_delta),
        b.cells,
        c.cells
    );
    // A side with no measured cell (none could be played back, every one
    // errored) or an unpriced call has no figure to show, nor a change.
    let figure = |v: Option<f64>, show: &dyn Fn(f64) -> String| v.map_or("unknown".into(), show);
    let latency = |v: Option<f64>| figure(v, &|ms| format!("{ms:.0}ms"));
    let cost = |v: Option<f64>| figure(v, &|usd| format!("${usd:.4}"));
    let change = |known: bool, delta: f64| match known {
        true => format!("{:+.0}%", delta * 100.0),
        false => "change unknown".to_string(),
    };
    let latency_known = b.known_latency().is_some() && c.known_latency().is_some();
    let cost_known = b.known_cost().is_some() && c.known_cost().is_some();
    let _ = writeln!(
        out,
        "  latency    {} → {} per cell ({})   cost {} → {} per cell ({})",
        latency(b.known_latency()),
        latency(c.known_latency()),
        change(latency_known, s.avg_latency_delta_pct),
        cost(b.known_cost()),
        cost(c.known_cost()),
        change(cost_known, s.cost_delta_pct)
    );
    let _ = writeln!(
        out,
        "  baseline {} · candidate {}",
        b.timestamp, c.timestamp
    );
    if !cmp.regressions.is_empty() {
        let _ = writeln!(out, "  Regressions ({}):", cmp.regressions.len());
        for r in &cmp.regressions {
            let severity = match r.severity {
                Severity::Critical => "critical",
                Severity::Warning => "warning",
            };
            let _ = writeln!(out, "    [{severity}] {}: {}", r.case_id, r.description);
        }
    }
    if !cmp.improvements.is_empty() {
        let _ = writeln!(out, "  Improvements ({}):", cmp.improvements.len());
        for i in &cmp.improvements {
            let _ = writeln!(out, "    {}: {}", i.case_id, i.description);
        }
    }
    let mut tail = vec![format!("unchanged {}", cmp.unchanged.len())];
    if !cmp.new_cases.is_empty() {
        tail.push(format!("new: {}", cmp.new_cases.join(", ")));
    }
    if !cmp.removed_cases.is_empty() {
        tail.push(format!("removed: {}", cmp.removed_cases.join(", ")));
    }
    let _ = writeln!(out, "  {}", tail.join(" · "));
    out
}
