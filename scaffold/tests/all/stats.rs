//! Statistics against reference values computed with NumPy and SciPy
//! (`tests/vectors/gen.py` → `tests/vectors/stats.json`), plus the
//! per-variant summaries built on them.

use scaffold::_cargo_scaffold_support::eval::results::ScoreRecord;
use scaffold::_cargo_scaffold_support::eval::stats::{
    Alternative, LatencyStats, WilcoxonMethod, WilcoxonOptions, mean, paired_t_test, percentile,
    sample_stddev, wilcoxon_signed_rank,
};
use scaffold::_cargo_scaffold_support::eval::{CellRecord, summarize};
use serde::Deserialize;

#[derive(Deserialize)]
struct Vectors {
    scipy: String,
    descriptive: Vec<Descriptive>,
    ttest_rel: Vec<TCase>,
    wilcoxon: Vec<WCase>,
    mcnemar: Vec<McNemarCase>,
    sign_flip: Vec<SignFlipCase>,
    clustered_se: Vec<ClusteredCase>,
    power: Vec<PowerCase>,
    sign_flip_binomial: Vec<BinomialCase>,
    sign_flip_grid: Vec<SignFlipCase>,
    power_exact: Vec<ExactPowerCase>,
}

#[derive(Deserialize)]
struct BinomialCase {
    wins: usize,
    losses: usize,
    agreeing: usize,
    pvalue: f64,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum ExactPowerCase {
    Power {
        cases: usize,
        effect: f64,
        sd: f64,
        alpha: f64,
        power: f64,
    },
    Mde {
        cases: usize,
        sd: f64,
        alpha: f64,
        effect: Option<f64>,
    },
    Cases {
        effect: f64,
        sd: f64,
        alpha: f64,
        cases: usize,
    },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct McNemarCase {
    wins: usize,
    losses: usize,
    both_pass: usize,
    both_fail: usize,
    pvalue: f64,
}

#[derive(Deserialize)]
struct SignFlipCase {
    name: String,
    a: Vec<f64>,
    b: Vec<f64>,
    pvalue: f64,
}

#[derive(Deserialize)]
struct ClusteredCase {
    name: String,
    values: Vec<f64>,
    clusters: Vec<i64>,
    se: f64,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum PowerCase {
    Mde {
        cases: usize,
        sd: f64,
        alpha: f64,
        effect: f64,
    },
    Cases {
        effect: f64,
        sd: f64,
        alpha: f64,
        cases: usize,
    },
}

#[derive(Deserialize)]
struct Descriptive {
    name: String,
    values: Vec<f64>,
    mean: f64,
    stddev: Option<f64>,
    min: f64,
    max: f64,
    percentiles: std::collections::BTreeMap<String, f64>,
}

#[derive(Deserialize)]
struct TCase {
    name: String,
    a: Vec<f64>,
    b: Vec<f64>,
    alternative: String,
    statistic: f64,
    df: f64,
    pvalue: f64,
}

#[derive(Deserialize)]
struct WCase {
    name: String,
    a: Vec<f64>,
    b: Vec<f64>,
    alternative: String,
    correction: bool,
    method: String,
    force: Option<String>,
    n: usize,
    zeros: usize,
    ties: bool,
    statistic: f64,
    pvalue: f64,
}

fn vectors() -> Vectors {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/stats.json");
    let text = std::fs::read_to_string(path).expect("tests/vectors/stats.json (run gen.py)");
    serde_json::from_str(&text).expect("stats.json parses")
}

fn alternative(s: &str) -> Alternative {
    match s {
        "two-sided" => Alternative::TwoSided,
        "less" => Alternative::Less,
        "greater" => Alternative::Greater,
        other => panic!("unknown alternative {other}"),
    }
}

/// The largest relative difference seen (printed with `--nocapture`).
static WORST: std::sync::Mutex<f64> = std::sync::Mutex::new(0.0);

/// Equal within `1e-9` relative (or absolute near zero).
fn close(actual: f64, expected: f64, what: &str) {
    let tol = 1e-9 * expected.abs().max(1e-3);
    if let Ok(mut w) = WORST.lock() {
        *w = w.max((actual - expected).abs() / expected.abs().max(1e-3));
    }
    assert!(
        (actual - expected).abs() <= tol,
        "{what}: got {actual:e}, SciPy/NumPy says {expected:e} (diff {:e})",
        (actual - expected).abs()
    );
}

#[test]
fn vectors_come_from_scipy() {
    let v = vectors();
    assert!(!v.scipy.is_empty());
    assert!(v.descriptive.len() >= 5 && v.ttest_rel.len() >= 10 && v.wilcoxon.len() >= 30);
}

#[test]
fn descriptive_statistics_match_numpy() {
    for case in vectors().descriptive {
        let name = &case.name;
        close(
            mean(&case.values).unwrap(),
            case.mean,
            &format!("{name} mean"),
        );
        match case.stddev {
            Some(sd) => close(
                sample_stddev(&case.values).unwrap(),
                sd,
                &format!("{name} stddev"),
            ),
            None => assert_eq!(sample_stddev(&case.values), None, "{name}"),
        }
        for (q, expected) in &case.percentiles {
            let q: f64 = q.parse().unwrap();
            close(
                percentile(&case.values, q).unwrap(),
                *expected,
                &format!("{name} p{q}"),
            );
        }
        let l = LatencyStats::of(&case.values);
        close(l.min, case.min, &format!("{name} min"));
        close(l.max, case.max, &format!("{name} max"));
        close(
            l.p50,
            case.percentiles["50"],
            &format!("{name} latency p50"),
        );
        close(
            l.p95,
            case.percentiles["95"],
            &format!("{name} latency p95"),
        );
        close(
            l.p99,
            case.percentiles["99"],
            &format!("{name} latency p99"),
        );
    }
}

#[test]
fn paired_t_test_matches_scipy_ttest_rel() {
    for case in vectors().ttest_rel {
        let t = paired_t_test(&case.a, &case.b, alternative(&case.alternative))
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        close(t.statistic, case.statistic, &format!("{} t", case.name));
        close(t.df, case.df, &format!("{} df", case.name));
        close(t.p_value, case.pvalue, &format!("{} p", case.name));
        assert_eq!(t.n, case.a.len());
    }
}

#[test]
fn wilcoxon_matches_scipy_wilcoxon() {
    let (mut exact, mut permutation, mut normal) = (0, 0, 0);
    for case in vectors().wilcoxon {
        let name = &case.name;
        let force = case.force.as_deref().map(|f| match f {
            "exact" => WilcoxonMethod::Exact,
            _ => WilcoxonMethod::Normal,
        });
        let forced = force.is_some();
        let options = WilcoxonOptions {
            alternative: alternative(&case.alternative),
            correction: case.correction,
            force,
            ..WilcoxonOptions::default()
        };
        let w = wilcoxon_signed_rank(&case.a, &case.b, &options)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            w.method.as_str(),
            case.method,
            "{name}: method chosen (forced: {forced})"
        );
        assert_eq!(
            (w.n, w.zeros, w.ties),
            (case.n, case.zeros, case.ties),
            "{name}"
        );
        close(w.statistic, case.statistic, &format!("{name} statistic"));
        close(w.p_value, case.pvalue, &format!("{name} p"));
        match w.method {
            WilcoxonMethod::Exact => exact += 1,
            WilcoxonMethod::Permutation => permutation += 1,
            WilcoxonMethod::Normal => normal += 1,
        }
    }
    assert!(
        exact >= 15 && normal >= 15 && permutation >= 12,
        "exact {exact}, permutation {permutation}, normal {normal}"
    );
    println!(
        "Wilcoxon: {exact} exact, {permutation} permutation and {normal} normal-approximation vectors; largest relative difference so far {:e}",
        WORST.lock().map(|w| *w).unwrap_or(f64::NAN)
    );
}

#[test]
fn wilcoxon_exact_distribution_small_n_by_hand() {
    // n = 3 untied, all positive: W+ = 6, P(W+ >= 6) = 1/8, two-sided 1/4.
    let w = wilcoxon_signed_rank(&[1.0, 2.0, 3.0], &[0.0; 3], &WilcoxonOptions::default()).unwrap();
    assert_eq!((w.w_plus, w.w_minus, w.statistic), (6.0, 0.0, 0.0));
    assert_eq!(w.p_value, 0.25);
    let greater = WilcoxonOptions::default().alternative(Alternative::Greater);
    let w = wilcoxon_signed_rank(&[1.0, 2.0, 3.0], &[0.0; 3], &greater).unwrap();
    assert_eq!((w.statistic, w.p_value), (6.0, 0.125));
}

#[test]
fn summaries_use_the_same_definitions() {
    let mut cells = Vec::new();
    for (i, (latency, cost, quality)) in [(100, 0.01, 0.5), (300, 0.03, 1.0), (200, 0.02, 0.0)]
        .into_iter()
        .enumerate()
    {
        let mut c = CellRecord::new("v", format!("case-{i}"));
        c.passed = quality > 0.0;
        c.metrics.latency_ms = latency;
        c.metrics.cost_usd = cost;
        c.metrics.input_tokens = 100;
        c.metrics.output_tokens = 20;
        c.metrics.total_tokens = 120;
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
        cells.push(c);
    }
    let s = &summarize(&cells)[0];
    assert_eq!((s.cells, s.passed), (3, 2));
    assert!((s.pass_rate - 2.0 / 3.0).abs() < 1e-15);
    assert_eq!(
        (s.latency.p50, s.latency.min, s.latency.max),
        (200.0, 100.0, 300.0)
    );
    assert!((s.latency.p95 - 290.0).abs() < 1e-9);
    assert!((s.cost.total - 0.06).abs() < 1e-15 && (s.cost.per_case - 0.02).abs() < 1e-15);
    assert_eq!(
        (s.tokens.input, s.tokens.output, s.tokens.total),
        (300, 60, 360)
    );
    assert_eq!(s.tokens.per_case, 120.0);
    let q = s.scores["quality"];
    assert_eq!(
        (q.mean, q.stddev, q.min, q.max, q.count),
        (0.5, 0.5, 0.0, 1.0, 3)
    );
    assert!((q.pass_rate - 2.0 / 3.0).abs() < 1e-15);
}

/// The sign-flip test on pass/fail differences is the exact McNemar test
/// at any size (a two-sided binomial test on the discordant cases, computed
/// here from the binomial formula), zeros dropped. Differences of several
/// sizes and no common step are enumerated up to 20, sampled with a fixed
/// seed up to 200 (the same p every run, its sampling error bounded by
/// `p_upper`, which decides), and approximated beyond.
#[test]
fn sign_flip_is_exact_mcnemar_on_pass_fail_and_seeded_beyond() {
    use scaffold::_cargo_scaffold_support::eval::stats::sign_flip_test;
    fn binomial_two_sided(wins: u64, n: u64) -> f64 {
        let choose = |k: u64| (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64);
        let tail = (0..=wins.min(n - wins)).map(choose).sum::<f64>() / 2f64.powi(n as i32);
        (2.0 * tail).min(1.0)
    }
    for (wins, losses, zeros) in [
        (5, 0, 0),
        (5, 1, 3),
        (7, 2, 1),
        (4, 4, 2),
        (12, 3, 0),
        (22, 8, 0),
        (170, 130, 9),
    ] {
        let d: Vec<f64> = std::iter::repeat_n(1.0, wins)
            .chain(std::iter::repeat_n(-1.0, losses))
            .chain(std::iter::repeat_n(0.0, zeros))
            .collect();
        let t = sign_flip_test(&d);
        let n = (wins + losses) as u64;
        let expected = binomial_two_sided(wins.min(losses) as u64, n);
        assert!(
            (t.p_value - expected).abs() < 1e-12 * expected.max(1e-3),
            "{wins}/{losses}: {} vs {expected}",
            t.p_value
        );
        assert_eq!(
            (t.n, t.method.as_str(), t.p_upper),
            (wins + losses, "exact", None)
        );
    }
    // No common step: 30 differences are sampled, the same p twice, and
    // the upper bound that decides lies above it.
    let d: Vec<f64> = (0..30)
        .map(|i| {
            (0.37 + (i as f64 * 0.7548776662).fract()) * if i % 3 == 0 { -1.0 } else { 1.0 }
                / 1.0e3_f64.sqrt()
        })
        .collect();
    let (first, second) = (sign_flip_test(&d), sign_flip_test(&d));
    assert_eq!(first.method.as_str(), "sampled");
    assert_eq!(first.p_value, second.p_value);
    let upper = first.p_upper.expect("a sampled p has an upper bound");
    assert!(
        upper > first.p_value && upper - first.p_value < 0.01,
        "{first:?}"
    );
    assert!(!first.below(upper));
    assert!(first.below(upper + 1e-9));
    // Beyond 200 such differences: the normal approximation.
    let d: Vec<f64> = (0..250)
        .map(|i| (i as f64 * 0.7548776662).fract() - 0.4)
        .collect();
    assert_eq!(sign_flip_test(&d).method.as_str(), "normal");
}

/// Issue 38: 202 pass/fail cases, 115 against 87, printed "clear winner
/// (sign-flip p = 0.049)" from samples where the exact McNemar p is 0.0572.
/// Pass/fail comparisons of any size now take the exact test (statsmodels'
/// McNemar, SciPy's binomtest).
#[test]
fn sign_flip_is_exact_on_pass_fail_at_any_size() {
    use scaffold::_cargo_scaffold_support::eval::stats::sign_flip_test;
    let cases = vectors().sign_flip_binomial;
    assert!(cases.len() >= 8);
    for c in cases {
        let d: Vec<f64> = std::iter::repeat_n(1.0, c.wins)
            .chain(std::iter::repeat_n(-1.0, c.losses))
            .chain(std::iter::repeat_n(0.0, c.agreeing))
            .collect();
        let t = sign_flip_test(&d);
        assert_eq!(t.method.as_str(), "exact");
        close(
            t.p_value,
            c.pvalue,
            &format!("{}/{} (+{})", c.wins, c.losses, c.agreeing),
        );
    }
}

/// Differences on a common step (trial means, scores in hundredths) are
/// counted exactly at sizes enumeration cannot reach, against exact counts
/// in Python integers.
#[test]
fn sign_flip_counts_differences_on_a_common_step_exactly() {
    use scaffold::_cargo_scaffold_support::eval::stats::sign_flip_test;
    let cases = vectors().sign_flip_grid;
    assert!(cases.len() >= 6);
    for c in cases {
        let d: Vec<f64> = c.a.iter().zip(&c.b).map(|(x, y)| x - y).collect();
        let t = sign_flip_test(&d);
        assert_eq!(t.method.as_str(), "exact", "{}", c.name);
        close(t.p_value, c.pvalue, &c.name);
    }
}

/// Exact McNemar (statsmodels) is the sign-flip test on pass/fail
/// differences: wins +1, losses -1, agreements 0.
#[test]
fn sign_flip_matches_statsmodels_exact_mcnemar() {
    use scaffold::_cargo_scaffold_support::eval::stats::sign_flip_test;
    for c in vectors().mcnemar {
        let d: Vec<f64> = std::iter::repeat_n(1.0, c.wins)
            .chain(std::iter::repeat_n(-1.0, c.losses))
            .chain(std::iter::repeat_n(0.0, c.both_pass + c.both_fail))
            .collect();
        let name = format!(
            "{}/{} (+{} agreeing)",
            c.wins,
            c.losses,
            c.both_pass + c.both_fail
        );
        close(sign_flip_test(&d).p_value, c.pvalue, &name);
    }
}

/// The sign-flip test against SciPy's exact paired permutation test, with
/// ties, zeros and trial means.
#[test]
fn sign_flip_matches_scipy_permutation_test() {
    use scaffold::_cargo_scaffold_support::eval::stats::sign_flip_test;
    let cases = vectors().sign_flip;
    assert!(cases.len() >= 5);
    for c in cases {
        let d: Vec<f64> = c.a.iter().zip(&c.b).map(|(x, y)| x - y).collect();
        close(sign_flip_test(&d).p_value, c.pvalue, &c.name);
    }
}

#[test]
fn clustered_standard_error_matches_statsmodels() {
    use scaffold::_cargo_scaffold_support::eval::stats::clustered_standard_error;
    for c in vectors().clustered_se {
        let se = clustered_standard_error(&c.values, &c.clusters)
            .unwrap_or_else(|| panic!("{}: no standard error", c.name));
        close(se, c.se, &c.name);
    }
    assert_eq!(clustered_standard_error(&[1.0, 0.0], &[1, 1]), None);
    assert_eq!(clustered_standard_error(&[f64::NAN, 0.0], &[1, 2]), None);
    assert_eq!(clustered_standard_error(&[1.0], &[1, 2]), None);
}

#[test]
fn power_matches_statsmodels_normal_power() {
    use scaffold::_cargo_scaffold_support::eval::stats::{cases_for_effect, min_detectable_effect};
    for c in vectors().power {
        match c {
            PowerCase::Mde {
                cases,
                sd,
                alpha,
                effect,
            } => {
                let mde = min_detectable_effect(cases, sd, alpha, 0.8)
                    .unwrap_or_else(|| panic!("no MDE for {cases} cases"));
                assert!(
                    (mde - effect).abs() < 1e-6,
                    "MDE of {cases} cases, sd {sd}, α {alpha}: {mde} vs statsmodels {effect}"
                );
            }
            PowerCase::Cases {
                effect,
                sd,
                alpha,
                cases,
            } => assert_eq!(
                cases_for_effect(effect, sd, alpha, 0.8),
                cases,
                "cases for {effect} with sd {sd} at α {alpha}"
            ),
        }
    }
}

/// Exact McNemar power, and the minimum detectable effect and cases needed
/// searched on it, against SciPy (`binom`, `binomtest`; the small ones also
/// by enumerating all 3ⁿ outcomes). Issue 38: "11 cases detect ~42 points"
/// had a real power of 0.29, not 0.80.
#[test]
fn power_of_pass_fail_comparisons_is_exact() {
    use scaffold::_cargo_scaffold_support::eval::stats::{Power, PowerMethod};
    // A pass/fail comparison of `cases` with spread `sd`: differences of
    // ±1 and 0 whose sample spread is `sd` need not exist, so the power is
    // asked of one built from pass/fail differences and its spread set.
    let design = |cases: usize, sd: f64, alpha: f64| {
        let mut d = vec![0.0; cases];
        d[0] = 1.0;
        let mut p = Power::of(&d, alpha);
        p.sd = sd;
        p.sd_assumed = false;
        p
    };
    for c in vectors().power_exact {
        match c {
            ExactPowerCase::Power {
                cases,
                effect,
                sd,
                alpha,
                power,
            } => {
                let p = design(cases, sd, alpha);
                close(
                    p.exact_power(cases, effect).expect("exact"),
                    power,
                    &format!("power of {cases} cases to detect {effect}"),
                );
            }
            ExactPowerCase::Mde {
                cases,
                sd,
                alpha,
                effect,
            } => {
                let (mde, method) = design(cases, sd, alpha).detectable(0.8);
                assert_eq!(method, PowerMethod::Exact);
                match (mde, effect) {
                    (Some(mde), Some(effect)) => assert!(
                        (mde - effect).abs() < 1e-6,
                        "MDE of {cases} cases: {mde} vs {effect}"
                    ),
                    (mde, effect) => assert_eq!(mde, effect, "MDE of {cases} cases"),
                }
            }
            ExactPowerCase::Cases {
                effect,
                sd,
                alpha,
                cases,
            } => {
                assert_eq!(
                    design(20, sd, alpha).cases_for(effect, 0.8),
                    (cases, PowerMethod::Exact),
                    "cases for {effect}"
                );
            }
        }
    }
    // The advice says which, and so does a comparison of averaged trials.
    let exact = Power::of(
        &[1.0, 0.0, 1.0, -1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0],
        0.05,
    );
    assert!(
        exact.advice().ends_with("(exact McNemar power)"),
        "{}",
        exact.advice()
    );
    let normal = Power::of(
        &[1.0, 0.5, 0.0, 0.5, 1.0, -0.5, 1.0, 0.0, 0.5, 1.0, 0.5],
        0.05,
    );
    assert_eq!(normal.method, PowerMethod::Normal);
    assert!(
        normal.advice().ends_with("(normal approximation)"),
        "{}",
        normal.advice()
    );
}
