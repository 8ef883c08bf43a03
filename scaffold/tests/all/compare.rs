//! Comparison: variants against each other (rankings, frontier,
//! significance, recommendation) and a candidate against a baseline
//! (regressions, improvements, verdict, blocking).

use scaffold::_cargo_scaffold_support::eval::compare::{
    Confidence, ImprovementKind, RegressionKind, Severity,
};
use scaffold::_cargo_scaffold_support::eval::results::{AssertionRecord, ScoreRecord};
use scaffold::_cargo_scaffold_support::eval::{
    CellRecord, CompareOptions, EvalResults, RunConfig, VariantCompareOptions, Verdict,
    WinnerVerdict, compare, compare_variants, summarize,
};
use scaffold::_cargo_scaffold_support::report::{self, Format};
use scaffold::eval::GateOptions;
use serde_json::json;

fn config(variants: &[&str], scorers: &[&str]) -> RunConfig {
    RunConfig {
        trials: 1,
        inputs: 0,
        variants: variants.iter().map(|v| v.to_string()).collect(),
        scorers: scorers.iter().map(|v| v.to_string()).collect(),
        min_pass_rate: 1.0,
    }
}

/// A cell of `variant` on `case` with a latency, a cost and a quality score.
fn cell(
    variant: &str,
    case: &str,
    passed: bool,
    latency: u64,
    cost: f64,
    quality: f64,
) -> CellRecord {
    let mut c = CellRecord::new(variant, case);
    c.dataset = "ds".into();
    c.passed = passed;
    c.metrics.latency_ms = latency;
    c.metrics.cost_usd = cost;
    c.scores.insert(
        "quality".into(),
        ScoreRecord {
            pass: quality >= 0.5,
            value: quality,
            unit: None,
            detail: None,
            borderline: false,
        },
    );
    if !passed {
        c.assertions.push(AssertionRecord {
            assertion: json!({"type": "output.contains", "value": "fix"}),
            passed: false,
            message: "the output does not contain \"fix\"".into(),
            expected: Some(json!("fix")),
            actual: None,
            trajectory: None,
            children: Vec::new(),
            borderline: false,
        });
    }
    c
}

fn results(cells: Vec<CellRecord>) -> EvalResults {
    let mut variants: Vec<&str> = Vec::new();
    for c in &cells {
        if !variants.contains(&c.variant.as_str()) {
            variants.push(&c.variant);
        }
    }
    let cfg = config(&variants, &["output-valid", "quality"]);
    EvalResults::new("code-review", "2026-01-28T12:00:00Z", cfg, cells)
}

/// Ten passing cases of one variant.
fn baseline_cells() -> Vec<CellRecord> {
    (0..10)
        .map(|i| {
            cell(
                "gpt-4o",
                &format!("case-{i}"),
                true,
                1000 + i * 10,
                0.01,
                0.9,
            )
        })
        .collect()
}

// ---------------------------------------------------------------- baseline

#[test]
fn a_planted_regression_blocks() {
    let baseline = results(baseline_cells());
    let mut cells = baseline_cells();
    cells[3] = cell("gpt-4o", "case-3", false, 1030, 0.01, 0.2);
    let candidate = results(cells);
    let c = compare(&baseline, &candidate, &CompareOptions::default());
    let pass_to_fail: Vec<_> = c
        .regressions
        .iter()
        .filter(|r| r.kind == RegressionKind::PassToFail)
        .collect();
    assert_eq!(pass_to_fail.len(), 1);
    let r = pass_to_fail[0];
    assert_eq!(r.case_id, "gpt-4o::case-3");
    assert_eq!(r.severity, Severity::Critical);
    assert_eq!(r.failed_assertions.len(), 1);
    assert!(
        r.description.contains("does not contain"),
        "{}",
        r.description
    );
    // The quality score fell by 0.7 too: a metric regression of the same cell.
    assert!(
        c.regressions
            .iter()
            .any(|r| r.metric.as_deref() == Some("score:quality"))
    );
    assert_eq!(c.summary.verdict, Verdict::Worse);
    assert!(c.summary.should_block);
    let reason = c.summary.block_reason.as_deref().unwrap();
    assert!(
        reason.contains("1 cell(s) went from pass to fail: gpt-4o::case-3"),
        "{reason}"
    );
    assert!(reason.contains("pass rate fell by 10.0 points"), "{reason}");
    assert!((c.summary.pass_rate_delta + 0.1).abs() < 1e-12);
    assert_eq!(c.unchanged.len(), 9);
    assert_eq!(c.critical().count(), 1);
}

#[test]
fn no_regression_does_not_block() {
    let baseline = results(baseline_cells());
    let candidate = results(baseline_cells());
    let c = compare(&baseline, &candidate, &CompareOptions::default());
    assert!(c.regressions.is_empty() && c.improvements.is_empty());
    assert_eq!(c.unchanged.len(), 10);
    assert_eq!(c.summary.verdict, Verdict::Equivalent);
    assert!(!c.summary.should_block);
    assert_eq!(c.summary.block_reason, None);
}

#[test]
fn improvements_make_it_better() {
    let mut cells = baseline_cells();
    cells[0] = cell("gpt-4o", "case-0", false, 1000, 0.01, 0.3);
    let baseline = results(cells);
    let candidate = results(baseline_cells());
    let c = compare(&baseline, &candidate, &CompareOptions::default());
    assert_eq!(c.improvements[0].kind, ImprovementKind::FailToPass);
    assert_eq!(c.summary.verdict, Verdict::Better);
    assert!(!c.summary.should_block);
}

#[test]
fn metric_regressions_warn_past_both_thresholds() {
    let baseline = results(baseline_cells());
    let mut cells = baseline_cells();
    // +50% and +520 ms: past both the 10% and the 50 ms thresholds.
    cells[1].metrics.latency_ms = 1560;
    // +30 ms is +3%: noise.
    cells[2].metrics.latency_ms = 1050;
    cells[4].metrics.cost_usd = 0.02; // +100%: a cost regression.
    let candidate = results(cells);
    let c = compare(&baseline, &candidate, &CompareOptions::default());
    let metrics: Vec<(&str, &str)> = c
        .regressions
        .iter()
        .map(|r| (r.case_id.as_str(), r.metric.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(
        metrics,
        [("gpt-4o::case-1", "latency"), ("gpt-4o::case-4", "cost")]
    );
    assert!(
        c.regressions
            .iter()
            .all(|r| r.severity == Severity::Warning)
    );
    assert_eq!(c.regressions[0].delta, Some(550.0));
    assert!(
        c.regressions[0].description.contains("+54%"),
        "{}",
        c.regressions[0].description
    );
    assert_eq!(c.summary.verdict, Verdict::Worse);
    assert!(
        !c.summary.should_block,
        "metric regressions only warn by default"
    );
    let strict = CompareOptions {
        block_on_metric_regressions: true,
        ..CompareOptions::default()
    };
    let c = compare(&baseline, &candidate, &strict);
    assert!(c.summary.should_block);
    assert!(
        c.summary
            .block_reason
            .unwrap()
            .contains("2 metric regression(s)")
    );
}

#[test]
fn thresholds_are_configurable() {
    let baseline = results(baseline_cells());
    let mut cells = baseline_cells();
    cells[3] = cell("gpt-4o", "case-3", false, 1030, 0.01, 0.9);
    let candidate = results(cells);
    let lenient = CompareOptions {
        critical_on_pass_to_fail: false,
        pass_rate_threshold: 0.2,
        ..CompareOptions::default()
    };
    let c = compare(&baseline, &candidate, &lenient);
    assert_eq!(c.regressions[0].severity, Severity::Warning);
    assert!(!c.summary.should_block, "{:?}", c.summary.block_reason);
    // Only the pass-rate drop: blocks by the pass-rate rule alone.
    let rate_only = CompareOptions {
        critical_on_pass_to_fail: false,
        ..CompareOptions::default()
    };
    let c = compare(&baseline, &candidate, &rate_only);
    assert!(c.summary.should_block);
    assert!(!c.summary.block_reason.unwrap().contains("pass to fail"));
}

#[test]
fn new_removed_and_mixed() {
    let mut base = baseline_cells();
    base.push(cell("gpt-4o", "old-case", true, 1000, 0.01, 0.9));
    base[5] = cell("gpt-4o", "case-5", false, 1000, 0.01, 0.1);
    let mut cand = baseline_cells();
    cand.push(cell("gpt-4o", "new-case", false, 1000, 0.01, 0.1));
    cand[6] = cell("gpt-4o", "case-6", false, 1060, 0.01, 0.9);
    let c = compare(&results(base), &results(cand), &CompareOptions::default());
    assert_eq!(c.new_cases, ["gpt-4o::new-case"]);
    assert_eq!(c.removed_cases, ["gpt-4o::old-case"]);
    // case-5 improved, but case-6 went critically from pass to fail.
    assert_eq!(c.summary.verdict, Verdict::Worse);
    assert!(c.summary.should_block, "case-6 went from pass to fail");
}

#[test]
fn an_improvement_beside_a_metric_warning_is_mixed() {
    let mut base = baseline_cells();
    base[5] = cell("gpt-4o", "case-5", false, 1050, 0.01, 0.9);
    let mut cand = baseline_cells();
    cand[6] = cell("gpt-4o", "case-6", true, 5000, 0.01, 0.9);
    let c = compare(&results(base), &results(cand), &CompareOptions::default());
    assert_eq!(c.critical().count(), 0);
    assert_eq!(c.regressions[0].metric.as_deref(), Some("latency"));
    assert_eq!(c.summary.verdict, Verdict::Mixed);
    assert!(!c.summary.should_block);
}

/// 50 cells: 5 go critically from pass to fail, 2 from fail to pass (a
/// 6-point drop), and 25 earlier cells only got slower.
fn critical_behind_warnings() -> (EvalResults, EvalResults) {
    let mk = |i: usize, passed: bool, latency: u64| {
        cell(
            "gpt-4o",
            &format!("case-{i:02}"),
            passed,
            latency,
            0.01,
            0.9,
        )
    };
    let base = (0..50).map(|i| mk(i, i < 48, 1000)).collect();
    let cand = (0..50)
        .map(|i| match i {
            0..25 => mk(i, true, 2000),
            40..45 => mk(i, false, 1000),
            48 | 49 => mk(i, true, 1000),
            _ => mk(i, true, 1000),
        })
        .collect();
    (results(base), results(cand))
}

#[test]
fn critical_regressions_make_it_worse_whatever_improved() {
    let (base, cand) = critical_behind_warnings();
    let c = compare(&base, &cand, &CompareOptions::default());
    assert_eq!(c.critical().count(), 5);
    assert_eq!(c.improvements.len(), 2);
    assert!((c.summary.pass_rate_delta + 0.06).abs() < 1e-12);
    assert_eq!(c.summary.verdict, Verdict::Worse);
    assert!(c.summary.should_block);
    // Listed first, before the 25 latency warnings of earlier cells.
    let severities: Vec<Severity> = c.regressions.iter().map(|r| r.severity).collect();
    assert_eq!(severities.len(), 30);
    assert!(severities[..5].iter().all(|s| *s == Severity::Critical));
    assert!(severities[5..].iter().all(|s| *s == Severity::Warning));
    assert_eq!(c.regressions[0].case_id, "gpt-4o::case-40");
    assert_eq!(c.regressions[5].case_id, "gpt-4o::case-00");
}

#[test]
fn every_report_lists_critical_regressions_first() {
    let (base, cand) = critical_behind_warnings();
    let c = compare(&base, &cand, &CompareOptions::default());
    let md = report::render(Format::Markdown, &cand, Some(&c));
    assert!(md.contains("**Verdict: worse**"), "{md}");
    let rows: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("#### Regressions (30)"))
        .skip(1)
        .take_while(|l| !l.starts_with("####"))
        .filter(|l| l.starts_with("| `gpt-4o::"))
        .collect();
    assert_eq!(rows.len(), 20, "{md}");
    for critical in 40..45 {
        let cell = format!("| `gpt-4o::case-{critical}` |");
        assert!(
            rows[..5].iter().any(|r| r.starts_with(&cell)),
            "{cell} not among the first rows: {rows:#?}"
        );
    }
    let html = report::render(Format::Html, &cand, Some(&c));
    let first = html.find("gpt-4o::case-40").unwrap();
    assert!(first < html.find("<code>gpt-4o::case-00</code>").unwrap());
    let json: serde_json::Value =
        serde_json::from_str(&report::json::render_comparison(&c)).unwrap();
    assert_eq!(json["regressions"][0]["severity"], "critical");
    assert_eq!(json["summary"]["verdict"], "worse");
}

#[test]
fn trials_label_cells() {
    let mk = |trial: u32, passed: bool| {
        let mut c = cell("v", "case", passed, 100, 0.0, 1.0);
        c.trial = trial;
        c
    };
    let mut cfg = config(&["v"], &[]);
    cfg.trials = 2;
    let base = EvalResults::new("e", "t", cfg.clone(), vec![mk(0, true), mk(1, true)]);
    let cand = EvalResults::new("e", "t", cfg, vec![mk(0, true), mk(1, false)]);
    let c = compare(&base, &cand, &CompareOptions::default());
    assert_eq!(c.regressions[0].case_id, "v::case::t1");
}

#[test]
fn baselines_round_trip_through_json_files() {
    let dir = std::env::temp_dir().join(format!("scaffold-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("code-review.json");
    std::fs::write(&path, results(baseline_cells()).to_json()).unwrap();
    let loaded = EvalResults::load(&path).unwrap();
    assert_eq!(loaded, results(baseline_cells()));
    let c = compare(
        &loaded,
        &results(baseline_cells()),
        &CompareOptions::default(),
    );
    assert!(!c.summary.should_block);
    // A newer schema is refused; a missing file says which.
    let newer = loaded
        .to_json()
        .replace("\"schemaVersion\": 1", "\"schemaVersion\": 99");
    std::fs::write(&path, newer).unwrap();
    let err = EvalResults::load(&path).unwrap_err().to_string();
    assert!(err.contains("schema version 99"), "{err}");
    let err = EvalResults::load(dir.join("missing.json"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing.json"), "{err}");
    std::fs::write(&path, "{\"eval\": 1}").unwrap();
    assert!(
        EvalResults::load(&path)
            .unwrap_err()
            .to_string()
            .contains("not a scaffold results document")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------- variants

/// `n` cases of three variants: `strong` (quality ~0.9, $0.05, slow),
/// `cheap` (~0.6, $0.01, fast), `bad` (~0.5, $0.06, slow: dominated).
fn three_variants(n: usize) -> Vec<CellRecord> {
    let mut cells = Vec::new();
    for i in 0..n {
        let wobble = (i % 5) as f64 * 0.02;
        let case = format!("case-{i:02}");
        cells.push(cell("strong", &case, true, 3000, 0.05, 0.88 + wobble));
        cells.push(cell(
            "cheap",
            &case,
            i % 4 != 0,
            900,
            0.01,
            0.55 + wobble * 2.0,
        ));
        cells.push(cell("bad", &case, i % 2 == 0, 3500, 0.06, 0.5 + wobble));
    }
    cells
}

/// Options of a comparison whose primary scorer is `quality`.
fn on_quality() -> VariantCompareOptions {
    VariantCompareOptions {
        quality: Some("quality".into()),
        ..VariantCompareOptions::default()
    }
}

#[test]
fn rankings_frontier_and_a_clear_winner() {
    let cells = three_variants(12);
    let c = compare_variants(&summarize(&cells), &cells, &on_quality());
    assert_eq!(c.quality, "quality");
    assert_eq!(c.by_pass_rate, ["strong", "cheap", "bad"]);
    assert_eq!(c.by_cost, ["cheap", "strong", "bad"]);
    assert_eq!(c.by_latency, ["cheap", "strong", "bad"]);
    assert_eq!(c.pareto_frontier, ["strong", "cheap"]);
    assert_eq!(c.verdict, WinnerVerdict::ClearWinner);
    assert_eq!(c.verdict.message(), "clear winner");
    let rec = c.recommendation.as_ref().unwrap();
    assert_eq!(rec.variant, "strong");
    assert_eq!(rec.confidence, Confidence::High);
    assert!(
        rec.reason
            .contains("significantly better than all 2 other variants"),
        "{}",
        rec.reason
    );
    assert_eq!(rec.tradeoffs.len(), 1);
    assert!(
        rec.tradeoffs[0].starts_with("cheap is cheaper ($0.01 vs $0.05 per case) and faster (900ms vs 3.0s avg) but passes less (75% vs 100%)"),
        "{}",
        rec.tradeoffs[0]
    );
    for t in &c.significance {
        assert_eq!(t.pairs, 12);
        assert!(t.significant && t.mean_difference > 0.0);
        assert!(t.t_test.unwrap().p_value < 0.001);
        assert!(t.wilcoxon.unwrap().p_value < 0.01);
    }
}

#[test]
fn few_trials_give_no_clear_winner() {
    let cells = three_variants(3);
    let c = compare_variants(&summarize(&cells), &cells, &on_quality());
    assert_eq!(c.verdict, WinnerVerdict::NoClearWinner);
    assert_eq!(c.verdict.message(), "no clear winner");
    let rec = c.recommendation.unwrap();
    assert_eq!(rec.variant, "strong");
    assert!(
        rec.reason
            .contains("more cases, not more trials, would tell"),
        "{}",
        rec.reason
    );
    assert_ne!(rec.confidence, Confidence::High);
}

#[test]
fn without_a_quality_scorer_quality_is_pass_fail() {
    let mut cells = Vec::new();
    for i in 0..30 {
        let case = format!("c{i}");
        let mut a = CellRecord::new("a", &case);
        a.passed = true;
        let mut b = CellRecord::new("b", &case);
        b.passed = i % 3 == 0;
        cells.push(a);
        cells.push(b);
    }
    let c = compare_variants(
        &summarize(&cells),
        &cells,
        &VariantCompareOptions::default(),
    );
    assert_eq!(c.quality, "pass");
    assert_eq!(c.quality_by_variant["b"], 10.0 / 30.0);
    assert_eq!(c.verdict, WinnerVerdict::ClearWinner);
    // Every difference is 0 or 1: constant spread, Wilcoxon by the normal approximation.
    let t = &c.significance[0];
    assert_eq!(t.wilcoxon.unwrap().n, 20);
    assert_eq!(t.wilcoxon.unwrap().zeros, 10);
}

#[test]
fn the_results_document_carries_the_comparison() {
    let r = results(three_variants(12));
    let cmp = r
        .comparison
        .as_ref()
        .expect("several variants are compared");
    assert_eq!(cmp.recommendation.as_ref().unwrap().variant, "strong");
    assert_eq!(r.summaries().len(), 3);
    let single = results(baseline_cells());
    assert!(single.comparison.is_none());
}

/// Pass/fail cells of `a` and `b` over `cases` × `trials`: `a` passes
/// every cell, `b` passes those `b_passes` says yes to.
fn pass_fail(cases: usize, trials: u32, b_passes: impl Fn(usize) -> bool) -> EvalResults {
    let mut cells = Vec::new();
    for i in 0..cases {
        for t in 0..trials {
            let case = format!("c{i}");
            let mut a = CellRecord::new("a", &case);
            (a.passed, a.trial) = (true, t);
            let mut b = CellRecord::new("b", &case);
            (b.passed, b.trial) = (b_passes(i), t);
            cells.extend([a, b]);
        }
    }
    let mut cfg = config(&["a", "b"], &[]);
    cfg.trials = trials;
    EvalResults::new("e", "2026-01-28T12:00:00Z", cfg, cells)
}

/// Every difference the same: no t-test (it would say t = ∞, p = 0); the
/// exact sign-flip test decides: 2 of 2⁸ assignments are as extreme.
#[test]
fn identical_pass_fail_differences_are_decided_by_the_exact_sign_flip() {
    let r = pass_fail(8, 1, |_| false);
    let c = r.comparison.as_ref().unwrap();
    let t = &c.significance[0];
    assert_eq!(t.t_test, None);
    let s = t.sign_flip.unwrap();
    assert_eq!((s.n, s.method.as_str()), (8, "exact"));
    assert!((s.p_value - 2.0 / 256.0).abs() < 1e-12);
    assert!(t.significant);
    let back = EvalResults::from_json(&r.to_json()).unwrap();
    assert_eq!(back.comparison.unwrap().significance[0].sign_flip, Some(s));
}

/// The case is the unit of analysis: one discriminating case repeated over
/// five trials is one case of evidence, not five.
#[test]
fn one_case_repeated_over_trials_is_not_a_clear_winner() {
    let r = pass_fail(2, 5, |case| case == 0);
    let c = r.comparison.as_ref().unwrap();
    let t = &c.significance[0];
    assert_eq!(t.pairs, 2, "pairs are cases");
    assert!((t.mean_difference - 0.5).abs() < 1e-12);
    assert_eq!(t.sign_flip.map(|s| (s.n, s.p_value)), Some((1, 1.0)));
    assert!(!t.significant);
    assert_ne!(c.verdict, WinnerVerdict::ClearWinner);
}

/// 5/5 against 0/5: the exact p is 0.0625, so no test at α = 0.05 calls
/// it, and the recommendation says so.
#[test]
fn five_of_five_against_none_is_p_0_0625_and_no_clear_winner() {
    let r = pass_fail(5, 1, |_| false);
    let c = r.comparison.as_ref().unwrap();
    let t = &c.significance[0];
    assert!((t.sign_flip.unwrap().p_value - 0.0625).abs() < 1e-12);
    assert!(!t.significant);
    assert_ne!(c.verdict, WinnerVerdict::ClearWinner);
    let reason = &c.recommendation.as_ref().unwrap().reason;
    assert!(
        reason.contains("sign-flip p = 0.062") && reason.contains("5 cases, on pass/fail"),
        "{reason}"
    );
}

/// A scorer that is the same for every cell of both variants never
/// decides (more trials could not change its answer): the pass rate does.
#[test]
fn a_constant_scorer_is_never_the_deciding_test() {
    let mut cells = Vec::new();
    for i in 0..10 {
        let case = format!("c{i}");
        // `a` passes all, `b` only the first 2; both score 1.0 on `quality`.
        cells.push(cell("a", &case, true, 1000, 0.01, 1.0));
        cells.push(cell("b", &case, i < 2, 1000, 0.01, 1.0));
    }
    let r = results(cells);
    let c = r.comparison.as_ref().unwrap();
    let t = &c.significance[0];
    assert_eq!(t.metric, "pass");
    assert!((t.mean_difference - 0.8).abs() < 1e-12);
    assert!(t.significant, "{t:?}");
    // A primary scorer that does vary decides.
    let mut cells = Vec::new();
    for i in 0..10 {
        let case = format!("c{i}");
        cells.push(cell("a", &case, true, 1000, 0.01, 0.9));
        cells.push(cell("b", &case, true, 1000, 0.01, 0.5));
    }
    let r = results(cells).with_gate_options(GateOptions {
        primary_scorer: Some("quality".into()),
        ..GateOptions::default()
    });
    assert_eq!(
        r.comparison.as_ref().unwrap().significance[0].metric,
        "quality"
    );
}

#[test]
fn when_every_variant_fails_none_is_named_best() {
    let cells: Vec<CellRecord> = (0..10)
        .flat_map(|i| {
            let case = format!("case-{i:02}");
            // `strong` scores higher but fails every cell too.
            [
                cell("strong", &case, false, 3000, 0.05, 0.9),
                cell("cheap", &case, false, 900, 0.01, 0.2),
            ]
        })
        .collect();
    let r = results(cells);
    let c = r.comparison.as_ref().unwrap();
    assert_eq!(c.recommendation, None);
    assert!(c.significance.is_empty());
    assert_eq!(c.verdict, WinnerVerdict::NoClearWinner);
    let table = report::render(Format::Table, &r, None);
    assert!(
        table.contains("  Best: none (no variant passed a cell)"),
        "{table}"
    );
    for &format in report::ALL_FORMATS {
        let text = report::render(format, &r, None);
        for named in ["Best: strong", "Best: cheap", "Recommendation:"] {
            assert!(!text.contains(named), "{format} says {named}:\n{text}");
        }
    }
    // One passing cell: that variant is best again.
    let mut cells = r.results.clone();
    cells[0].passed = true;
    let r = results(cells);
    assert!(r.comparison.unwrap().recommendation.is_some());
}

/// "No clear winner" becomes advice: what these cases could detect and
/// how many cases 10 points would need; the verdict names its metric.
#[test]
fn no_clear_winner_says_what_more_cases_would_detect() {
    let r = pass_fail(5, 1, |_| false);
    let c = r.comparison.as_ref().unwrap();
    assert_eq!(
        c.verdict_message(),
        "no clear winner on pass/fail: with 5 cases no difference can reach α = 0.05 \
         (an exact test needs 6 that differ); about 215 cases would detect 10 points, \
         assuming a spread of 0.5 (exact McNemar power)"
    );
    let p = c.significance[0].power.unwrap();
    assert_eq!(
        (p.cases, p.min_detectable_effect, p.sd_assumed),
        (5, None, true)
    );
    // Twelve cases with varied per-case differences (three trials each):
    // an MDE from their own spread, in the JSON too.
    let r = pass_fail(12, 3, |case| case < 8);
    let c = r.comparison.as_ref().unwrap();
    let p = c.significance[0].power.unwrap();
    assert!(!p.sd_assumed && p.cases == 12);
    let mde = p.min_detectable_effect.unwrap();
    assert!(
        c.verdict_message().contains(&format!(
            "only differences above ~{:.0} points",
            mde * 100.0
        )),
        "{}",
        c.verdict_message()
    );
    let back = EvalResults::from_json(&r.to_json()).unwrap();
    assert_eq!(back.comparison.unwrap().significance[0].power, Some(p));
}

/// A clear winner's verdict names the metric, the cases and the p-value.
#[test]
fn a_clear_winner_names_its_metric_and_evidence() {
    let r = pass_fail(8, 1, |_| false);
    let c = r.comparison.as_ref().unwrap();
    assert_eq!(c.verdict, WinnerVerdict::ClearWinner);
    assert_eq!(
        c.verdict_message(),
        "clear winner on pass/fail (8 cases, sign-flip p = 0.008)"
    );
}

// ------------------------------------------------------ the primary scorer

/// Ten cases where the pass rate and a varying `findings` scorer disagree:
/// `a` passes every case at $0.02 with findings 0.5, `b` passes 6 of 10 at
/// $0.03 with findings about 0.9.
fn pass_rate_against_findings(options: GateOptions) -> EvalResults {
    let mut cells = Vec::new();
    for i in 0..10 {
        let case = format!("c{i}");
        let wobble = (i % 3) as f64 * 0.02;
        for (variant, passed, cost, findings) in [
            ("a", true, 0.02, 0.5 + wobble),
            ("b", i < 6, 0.03, 0.88 + wobble),
        ] {
            let mut c = cell(variant, &case, passed, 1000, cost, 0.0);
            let score = c.scores.remove("quality").unwrap();
            c.scores.insert(
                "findings".into(),
                ScoreRecord {
                    value: findings,
                    ..score
                },
            );
            cells.push(c);
        }
    }
    let cfg = config(&["a", "b"], &["output-valid", "findings"]);
    EvalResults::new_with("code-review", "2026-01-28T12:00:00Z", cfg, options, cells)
}

/// The first line of `text` that starts with `prefix` (after spaces).
fn line<'t>(text: &'t str, prefix: &str) -> &'t str {
    text.lines()
        .find(|l| l.trim_start().starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{text}"))
}

/// No primary scorer named: quality is the pass rate everywhere, however
/// much a scorer varies.
#[test]
fn without_a_primary_scorer_the_pass_rate_decides() {
    let r = pass_rate_against_findings(GateOptions::default());
    let c = r.comparison.as_ref().unwrap();
    assert_eq!(c.quality, "pass");
    assert_eq!(c.quality_by_variant["b"], 0.6);
    assert_eq!(c.pareto_frontier, ["a"]);
    let rec = c.recommendation.as_ref().unwrap();
    assert_eq!(rec.variant, "a");
    assert!(
        rec.reason.starts_with("highest pass rate (100%)"),
        "{}",
        rec.reason
    );
    assert_eq!(c.significance[0].metric, "pass");
    let table = report::render(Format::Table, &r, None);
    assert_eq!(line(&table, "Best:"), "  Best: a (pass rate 100%)");
    let md = report::render(Format::Markdown, &r, None);
    assert!(md.contains("quality = pass/fail"), "{md}");
    let html = report::render(Format::Html, &r, None);
    assert!(html.contains("Cost per case vs pass rate"));
}

/// A primary scorer named: it decides the frontier, the recommendation,
/// `Best:`, the significance and the plot, and travels with the results.
#[test]
fn naming_a_primary_scorer_makes_it_decide() {
    let options = GateOptions {
        primary_scorer: Some("findings".into()),
        ..GateOptions::default()
    };
    let r = pass_rate_against_findings(options);
    let c = r.comparison.as_ref().unwrap();
    assert_eq!(c.quality, "findings");
    assert!((c.quality_by_variant["b"] - 0.898).abs() < 1e-9);
    assert_eq!(c.pareto_frontier, ["b", "a"]);
    let rec = c.recommendation.as_ref().unwrap();
    assert_eq!(rec.variant, "b");
    assert!(
        rec.reason
            .starts_with("highest findings (0.90), pass rate 60%"),
        "{}",
        rec.reason
    );
    let t = &c.significance[0];
    assert_eq!(
        (t.metric.as_str(), t.pairs, t.significant),
        ("findings", 10, true)
    );
    assert_eq!(c.verdict, WinnerVerdict::ClearWinner);
    let table = report::render(Format::Table, &r, None);
    assert_eq!(
        line(&table, "Best:"),
        "  Best: b (findings 0.90 ±0.02, pass rate 60%)"
    );
    let md = report::render(Format::Markdown, &r, None);
    assert!(md.contains("quality = `findings`"), "{md}");
    let html = report::render(Format::Html, &r, None);
    assert!(html.contains("Cost per case vs findings"));
    // The results document keeps it: read back, it decides the same.
    let back = EvalResults::from_json(&r.to_json()).unwrap();
    assert_eq!(
        back.gate_options.primary_scorer.as_deref(),
        Some("findings")
    );
    assert_eq!(back.comparison, r.comparison);
    assert!(r.to_json().contains("\"primaryScorer\": \"findings\""));
}

/// A primary scorer that gave every cell one value can tell no variant
/// from another: the pass rate decides, and the comparison says so.
#[test]
fn a_constant_primary_scorer_leaves_the_decision_to_the_pass_rate() {
    let mut cells = Vec::new();
    for i in 0..10 {
        let case = format!("c{i}");
        // `b` is cheaper, `a` passes more; both score 1.0 on `quality`.
        cells.push(cell("a", &case, true, 1000, 0.02, 1.0));
        cells.push(cell("b", &case, i < 6, 1000, 0.01, 1.0));
    }
    let r = results(cells).with_gate_options(GateOptions {
        primary_scorer: Some("quality".into()),
        ..GateOptions::default()
    });
    let c = r.comparison.as_ref().unwrap();
    assert_eq!(c.quality, "pass");
    assert_eq!(c.pareto_frontier, ["a", "b"]);
    assert_eq!(c.recommendation.as_ref().unwrap().variant, "a");
    assert_eq!(c.significance[0].metric, "pass");
    let table = report::render(Format::Table, &r, None);
    assert_eq!(line(&table, "Best:"), "  Best: a (pass rate 100%)");
    let html = report::render(Format::Html, &r, None);
    assert!(html.contains("Cost per case vs pass rate"));
}

// ------------------------------------------------------------ unknown cost

/// A variant that called a model with no price (a proxy alias) has an
/// unknown cost: shown as `unknown`, never `$0`, never `Cheapest`, never
/// ranked by cost nor beaten or beating on it, and a warning says how to
/// price it. A baseline comparison claims no cost change for it either.
#[test]
fn an_unpriced_model_has_an_unknown_cost_never_ranked() {
    let mut cells = Vec::new();
    for i in 0..5 {
        let case = format!("c{i}");
        cells.push(cell("priced", &case, i < 3, 1000, 0.02, 0.6));
        let mut alias = cell("alias", &case, true, 1000, 0.0, 0.9);
        alias.metrics.unpriced_calls = 2;
        cells.push(alias);
    }
    let r = results(cells);
    assert!(!r.summary["alias"].cost_known() && r.summary["priced"].cost_known());
    assert_eq!(r.summary["alias"].cost.unpriced_cells, 5);
    let c = r.comparison.as_ref().unwrap();
    assert_eq!(c.by_cost, ["priced"]);
    assert_eq!(c.cost_unknown, ["alias"]);
    assert_eq!(
        c.pareto_frontier.len(),
        2,
        "neither beats the other on cost"
    );
    let rec = c.recommendation.as_ref().unwrap();
    assert_eq!(rec.variant, "alias");
    assert!(!rec.reason.contains("cheapest"), "{}", rec.reason);
    assert!(
        rec.tradeoffs.iter().all(|t| !t.contains("cheaper")),
        "{:?}",
        rec.tradeoffs
    );

    let table = report::render(Format::Table, &r, None);
    let alias_row = table.lines().find(|l| l.contains("│ alias")).unwrap();
    assert!(
        alias_row.contains("unknown") && !alias_row.contains("$0 "),
        "{alias_row}"
    );
    assert_eq!(line(&table, "Cheapest:"), "  Cheapest: priced ($0.02 avg)");
    assert!(line(&table, "Cost unknown:").contains("alias"));
    let warning = r.cost_warning().unwrap();
    assert!(warning.contains("`alias` (5 of 5 cells)") && warning.contains("Eval::pricing("));
    let markdown = report::render(Format::Markdown, &r, None);
    assert!(markdown.contains("unknown") && markdown.contains("no price for a model of variant"));
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(json["summary"]["alias"]["cost"]["unpricedCells"], 5);
    assert_eq!(json["comparison"]["costUnknown"], json!(["alias"]));
    let html = report::render(Format::Html, &r, None);
    let plot = &html[html.find("plot-cost-quality").unwrap()..];
    let plot = &plot[..plot.find("</svg>").unwrap()];
    assert!(
        plot.contains("priced") && !plot.contains(">alias<"),
        "{plot}"
    );

    // A cell that went unpriced did not get cheaper.
    let base = results(
        (0..5)
            .map(|i| cell("v", &format!("c{i}"), true, 1000, 0.02, 0.6))
            .collect(),
    );
    let mut now: Vec<CellRecord> = (0..5)
        .map(|i| cell("v", &format!("c{i}"), true, 1000, 0.0, 0.6))
        .collect();
    for c in &mut now {
        c.metrics.unpriced_calls = 1;
    }
    let cmp = compare(&base, &results(now), &CompareOptions::default());
    assert!(
        cmp.improvements
            .iter()
            .all(|i| i.kind != ImprovementKind::MetricImproved),
        "{:?}",
        cmp.improvements
    );
}
