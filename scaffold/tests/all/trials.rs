//! Repeated trials you can trust: intervals and pass@k against reference
//! values, every trial judged on its own (recording and cache entry),
//! borderline judge verdicts at the edges of the margin and re-asked, the
//! lower-bound gate, the trials a winner needs, and quarantine in baseline
//! comparisons.
//!
//! Reference values come from SciPy 1.17: `binomtest(c, n).proportion_ci(
//! confidence_level=cl, method="wilson")` for Wilson intervals,
//! `1 - comb(n-c, k)/comb(n, k)` and `comb(c, k)/comb(n, k)` for pass@k and
//! pass^k, and `mean ± t.ppf(1 - α/2, m - 1)·std(ddof=1)/√m` for the mean's
//! interval.

use std::sync::Arc;

use scaffold::_cargo_scaffold_support::eval::stats::{
    mean_interval, pass_at_k, pass_hat_k, wilson_interval,
};
use scaffold::_cargo_scaffold_support::eval::{
    CellEnv, CellRecord, CompareOptions, EvalResults, RunConfig, VariantCompareOptions,
    WinnerVerdict, compare, compare_variants, summarize,
};
use scaffold::assert::{Assertion, Borderline, EvalContext, Judge, JudgeKey, evaluate_all};
use scaffold::dataset::{Format, load_str};
use scaffold::eval::{Eval, GateOptions};
use scaffold::prelude::*;
use scaffold::provider::RecordingId;
use scaffold::scorer::SqliteJudgeCache;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

// ---------------------------------------------------------------- intervals

#[test]
fn wilson_intervals_match_scipy() {
    // (successes, trials, confidence, lower, upper)
    let reference = [
        (8, 10, 0.95, 0.4901624715366418, 0.9433178485456248),
        (0, 10, 0.95, 0.0, 0.27753279986288926),
        (10, 10, 0.95, 0.7224672001371109, 1.0),
        (1, 2, 0.95, 0.09453120573423074, 0.9054687942657693),
        (3, 7, 0.95, 0.1582198552514697, 0.7495416354723428),
        (19, 20, 0.95, 0.763868806553258, 0.9911185511992047),
        (45, 50, 0.95, 0.7863976856252034, 0.9565242350681095),
        (1, 1, 0.95, 0.20654931437723745, 1.0),
        (8, 10, 0.90, 0.5407928056874879, 0.9314420122624679),
        (8, 10, 0.99, 0.4008186965216716, 0.9598688474953836),
        (3, 7, 0.90, 0.18644319036395607, 0.7105229089864071),
        (3, 7, 0.99, 0.11637368051613817, 0.8102850959116125),
    ];
    for (c, n, cl, lo, hi) in reference {
        let i = wilson_interval(c, n, cl);
        assert!(
            close(i.lower, lo) && close(i.upper, hi),
            "{c}/{n} at {cl}: {i:?}, want [{lo}, {hi}]"
        );
        assert_eq!(i.confidence, cl);
    }
    // The issue's figures, to three decimals.
    let r = |c, n| {
        let i = wilson_interval(c, n, 0.95);
        (
            (i.lower * 1000.0).round() / 1000.0,
            (i.upper * 1000.0).round() / 1000.0,
        )
    };
    assert_eq!(r(8, 10), (0.490, 0.943));
    assert_eq!(r(0, 10), (0.0, 0.278));
    assert_eq!(r(10, 10), (0.722, 1.0));
    assert_eq!(r(0, 0), (0.0, 1.0));
}

#[test]
fn pass_at_k_and_pass_hat_k_are_the_unbiased_estimators() {
    // (n, c, k, pass@k, pass^k)
    let reference = [
        (10, 3, 1, 0.3, 0.3),
        (10, 3, 5, 0.9166666666666666, 0.0),
        (10, 3, 2, 0.5333333333333333, 0.06666666666666667),
        (5, 3, 3, 1.0, 0.1),
        (5, 0, 5, 0.0, 0.0),
        (5, 5, 5, 1.0, 1.0),
        (3, 2, 3, 1.0, 0.0),
        (20, 19, 10, 1.0, 0.5),
    ];
    for (n, c, k, at, hat) in reference {
        assert!(
            close(pass_at_k(n, c, k).unwrap(), at),
            "pass@{k} of {c}/{n}"
        );
        assert!(
            close(pass_hat_k(n, c, k).unwrap(), hat),
            "pass^{k} of {c}/{n}"
        );
    }
    assert_eq!(pass_at_k(3, 1, 0), None);
    assert_eq!(pass_hat_k(3, 1, 4), None);
}

#[test]
fn mean_intervals_match_scipy() {
    let i = mean_interval(&[0.6, 0.7, 0.8], 0.95).unwrap();
    assert!(close(i.lower, 0.4515862288249668) && close(i.upper, 0.9484137711750329));
    let i = mean_interval(&[0.62, 0.71, 0.68, 0.74, 0.66], 0.95).unwrap();
    assert!(close(i.lower, 0.6248294961802596) && close(i.upper, 0.7391705038197405));
    // No spread: a point.
    let i = mean_interval(&[0.7, 0.7], 0.95).unwrap();
    assert_eq!((i.lower, i.upper), (0.7, 0.7));
}

// ---------------------------------------------------------------- cells

fn cell(variant: &str, case: &str, trial: u32, passed: bool) -> CellRecord {
    let mut c = CellRecord::new(variant, case);
    c.dataset = "ds".into();
    c.trial = trial;
    c.passed = passed;
    c
}

fn config(trials: u32, variants: &[&str], min_pass_rate: f64) -> RunConfig {
    RunConfig {
        trials,
        inputs: 0,
        variants: variants.iter().map(|v| v.to_string()).collect(),
        scorers: vec![],
        min_pass_rate,
    }
}

#[test]
fn pass_at_k_defaults_to_one_and_n_and_can_be_chosen() {
    let cells: Vec<CellRecord> = (0..5).map(|t| cell("v", "c", t, t < 2)).collect();
    let r = EvalResults::new("e", "2026-01-28T12:00:00Z", config(5, &["v"], 0.0), cells);
    let t = r.trial_stats().next().unwrap();
    assert_eq!(t.pass_at_k.keys().copied().collect::<Vec<_>>(), [1, 5]);
    assert!(t.flaky);
    let r = r.with_gate_options(GateOptions {
        pass_at_k: vec![2, 3, 9],
        confidence: 0.9,
        ..GateOptions::default()
    });
    let t = r.trial_stats().next().unwrap();
    assert_eq!(t.pass_at_k.keys().copied().collect::<Vec<_>>(), [2, 3]);
    // pass@2 of 2/5 = 1 − C(3,2)/C(5,2) = 0.7; pass^3 = 0.
    assert!(close(t.pass_at_k[&2], 0.7) && t.pass_hat_k[&3] == 0.0);
    assert_eq!(t.interval.confidence, 0.9);
    assert_eq!(r.summary["v"].pass_rate_interval.unwrap().confidence, 0.9);
}

#[test]
fn the_gate_can_use_the_wilson_lower_bound() {
    // 19 of 20: point estimate 95%, Wilson 95% lower bound 76.4%.
    let cells: Vec<CellRecord> = (0..20)
        .map(|i| cell("v", &format!("c{i:02}"), 0, i != 7))
        .collect();
    let r = EvalResults::new("e", "2026-01-28T12:00:00Z", config(1, &["v"], 0.8), cells);
    assert!(r.gate_passed());
    let point = r.gate_verdict();
    assert!(
        point.describe().starts_with(
            "passed: pass rate 95.0% (95% CI 76.4%–99.1%, 20 cells) ≥ min_pass_rate 80.0%"
        ),
        "{}",
        point.describe()
    );
    let strict = r.clone().with_gate_options(GateOptions {
        on_lower_bound: true,
        ..GateOptions::default()
    });
    assert!(!strict.gate_passed());
    let g = strict.gate_verdict();
    assert!(close(g.value, 0.763868806553258));
    assert!(
        g.describe()
            .starts_with("FAILED: Wilson lower bound 76.4% of pass rate 95.0%"),
        "{}",
        g.describe()
    );
    // The bound depends on the confidence: 0.8040 at 90% clears 80%.
    let at = |confidence| {
        r.clone()
            .with_gate_options(GateOptions {
                on_lower_bound: true,
                confidence,
                ..GateOptions::default()
            })
            .gate_verdict()
    };
    let g = at(0.9);
    assert!(
        g.passed && close(g.value, 0.8039927632259836),
        "{}",
        g.value
    );
    assert!(close(at(0.8).value, 0.8467799153536959));
}

/// Trials of a case are not independent: 4 cases × 5 trials that agree
/// within each case (3 always pass, 1 always fails) are 4 cases of
/// evidence. Counted as 20 independent cells, the Wilson lower bound
/// (53%) would clear a 50% gate; clustered by case it does not.
#[test]
fn the_lower_bound_gate_clusters_trials_by_case() {
    let cells: Vec<CellRecord> = (0..4)
        .flat_map(|case| (0..5).map(move |t| cell("v", &format!("c{case}"), t, case != 3)))
        .collect();
    let r = EvalResults::new("e", "2026-01-28T12:00:00Z", config(5, &["v"], 0.5), cells)
        .with_gate_options(GateOptions {
            on_lower_bound: true,
            ..GateOptions::default()
        });
    let g = r.gate_verdict();
    assert!(close(g.pass_rate, 0.75));
    let independent = scaffold::_cargo_scaffold_support::eval::stats::wilson_interval(15, 20, 0.95);
    assert!(independent.lower > 0.5, "{}", independent.lower);
    let four = scaffold::_cargo_scaffold_support::eval::stats::wilson_interval(3, 4, 0.95);
    assert!(close(g.value, four.lower), "{} vs {}", g.value, four.lower);
    assert!(!g.passed, "{}", g.describe());
    // The summary's interval is the same clustered one.
    assert_eq!(r.summary["v"].pass_rate_interval, Some(four));
    // Trials that disagree within cases (as independent as cells get)
    // keep the plain interval.
    let cells: Vec<CellRecord> = (0..4)
        .flat_map(|case| {
            (0..5).map(move |t| cell("v", &format!("c{case}"), t, (case + t) % 4 != 0))
        })
        .collect();
    let r = EvalResults::new("e", "2026-01-28T12:00:00Z", config(5, &["v"], 0.5), cells);
    let g = r.gate_verdict();
    assert_eq!(g.passes, 15);
    assert!(g.interval.lower >= four.lower);
}

#[test]
fn no_winner_is_called_on_too_few_trials() {
    // "strong" passes all 12 cases, "weak" none: a clear winner on 24 pairs...
    let mut cells = Vec::new();
    for case in 0..12 {
        for trial in 0..2 {
            cells.push(cell("strong", &format!("c{case}"), trial, true));
            cells.push(cell("weak", &format!("c{case}"), trial, false));
        }
    }
    let summaries = summarize(&cells);
    let clear = compare_variants(&summaries, &cells, &VariantCompareOptions::default());
    assert_eq!(clear.verdict, WinnerVerdict::ClearWinner);
    assert_eq!(clear.trials_per_case, 2);
    // ...but not with 2 trials when 3 are required.
    let options = VariantCompareOptions {
        min_trials_for_winner: 3,
        ..VariantCompareOptions::default()
    };
    let c = compare_variants(&summaries, &cells, &options);
    assert_eq!(c.verdict, WinnerVerdict::NoClearWinner);
    assert_eq!(
        c.verdict_message(),
        "not enough trials (2 < 3) to call a winner"
    );
    let rec = c.recommendation.unwrap();
    assert_eq!(rec.variant, "strong");
    assert!(
        rec.reason
            .ends_with("; not enough trials (2 < 3) to call a winner"),
        "{}",
        rec.reason
    );
    assert_eq!(rec.confidence.as_str(), "low");
    // Through the eval's options, into the results document.
    let r = EvalResults::new(
        "e",
        "2026-01-28T12:00:00Z",
        config(2, &["strong", "weak"], 0.0),
        cells,
    )
    .with_gate_options(GateOptions {
        min_trials_for_winner: 2,
        ..GateOptions::default()
    });
    assert_eq!(r.comparison.unwrap().verdict, WinnerVerdict::ClearWinner);
}

#[test]
fn quarantined_cells_never_block_against_a_baseline() {
    let run = |passes: [bool; 3], quarantine: &[&str]| {
        let cells = ["a", "b", "c"]
            .iter()
            .zip(passes)
            .map(|(case, p)| cell("v", case, 0, p))
            .collect();
        EvalResults::new("e", "2026-01-28T12:00:00Z", config(1, &["v"], 1.0), cells)
            .with_gate_options(GateOptions {
                quarantine: quarantine.iter().map(|q| q.to_string()).collect(),
                ..GateOptions::default()
            })
    };
    let base = run([true, true, true], &[]);
    let blocked = compare(
        &base,
        &run([true, true, false], &[]),
        &CompareOptions::default(),
    );
    assert!(blocked.summary.should_block);
    let cmp = compare(
        &base,
        &run([true, true, false], &["c"]),
        &CompareOptions::default(),
    );
    assert!(!cmp.summary.should_block, "{:?}", cmp.summary.block_reason);
    let r = &cmp.regressions[0];
    assert!(r.quarantined && r.description.contains("QUARANTINED: does not block"));
    // The pass rate shown still counts every cell; the drop that blocks does not.
    assert!(close(cmp.summary.pass_rate_delta, -1.0 / 3.0));
}

// ---------------------------------------------------------------- judges

fn judge_reply(score: f64) -> ScriptedReply {
    ScriptedReply::json(json!({"score": score, "reasoning": format!("scored {score}")}))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// An `llm.judge` with minimum 0.7 and margin 0.05, judged at `score`.
fn judged(score: f64, extra: Value) -> scaffold::assert::AssertionResult {
    let mut a = json!({"type": "llm.judge", "criteria": ["names the flaw"], "minScore": 0.7, "borderlineMargin": 0.05});
    a.as_object_mut()
        .unwrap()
        .extend(extra.as_object().cloned().unwrap_or_default());
    let a: Assertion = serde_json::from_value(a).unwrap();
    let judge = Judge::new(ScriptedProvider::new("judge").reply(judge_reply(score)));
    let output = json!("SQL injection on line 3");
    let ctx = EvalContext::new(&[]).output(output).judge(&judge);
    rt().block_on(evaluate_all(&[a], &ctx)).remove(0)
}

#[test]
fn borderline_is_inclusive_at_the_edges_of_the_margin() {
    for (score, borderline, passed) in [
        (0.65, true, false),
        (0.7, true, true),
        (0.75, true, true),
        (0.649, false, false),
        (0.751, false, true),
        (0.9, false, true),
    ] {
        let r = judged(score, json!({}));
        assert_eq!(
            (r.borderline, r.passed),
            (borderline, passed),
            "score {score}: {}",
            r.message
        );
        assert_eq!(
            r.actual.as_ref().unwrap().get("borderline").is_some(),
            borderline
        );
        assert_eq!(
            r.message
                .contains("(borderline: within 0.05 of the minimum)"),
            borderline
        );
    }
    // The default margin is 0.05 too; a negative margin turns it off.
    assert!(Borderline::default().is_borderline(0.75, 0.7));
    let off = judged(0.7, json!({"borderlineMargin": -1}));
    assert!(!off.borderline);
    // Wider margin from the dataset.
    let wide = judged(0.79, json!({"borderlineMargin": 0.1}));
    assert!(wide.borderline);
}

#[test]
fn the_borderline_margin_and_reask_load_from_datasets() {
    let ds = load_str(
        r#"{"name": "j", "cases": [{"id": "c", "input": 1, "assertions": [
            {"type": "llm.judge", "criteria": ["x"], "minScore": 0.7, "borderlineMargin": 0.1, "reask": 4}
        ]}]}"#,
        Format::Json,
        "j.json",
    )
    .unwrap();
    let j = serde_json::to_value(ds.cases[0].assertions().next()).unwrap();
    assert_eq!(j["type"], "llm.judge", "{j}");
    assert_eq!(
        (&j["borderlineMargin"], &j["reask"]),
        (&json!(0.1), &json!(4))
    );
}

/// Answers by recording id: the first ask, then each re-ask, differently.
fn reasking_judge(first: f64, reasks: &'static [f64]) -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::responder("judge", move |req| {
        let id = req.context.recording_id.clone().unwrap_or_default();
        let score = match id.split("-reask").nth(1) {
            None => first,
            Some(rest) => {
                let i: usize = rest.split("__").next().unwrap().parse().unwrap();
                reasks[i - 1]
            }
        };
        judge_reply(score)
    }))
}

#[test]
fn a_borderline_verdict_is_reasked_and_decided_on_the_mean() {
    let provider = reasking_judge(0.72, &[0.6, 0.66]);
    let judge = Judge::from_arc(provider.clone())
        .recording_id(RecordingId::new("ds", "c", "v", "judge", 0).with_trial(Some(1)))
        .borderline(Borderline::margin(0.05).reask(2));
    let a = Assertion::llm_judge(["names the flaw"], 0.7);
    let ctx = EvalContext::new(&[]).output(json!("out")).judge(&judge);
    let r = rt()
        .block_on(evaluate_all(std::slice::from_ref(&a), &ctx))
        .remove(0);
    // 0.72 alone would pass; the mean of 0.72, 0.6 and 0.66 (0.66) does not.
    assert!(r.borderline && !r.passed, "{}", r.message);
    let actual = r.actual.unwrap();
    assert_eq!(actual["scores"], json!([0.72, 0.6, 0.66]));
    assert!(close(actual["score"].as_f64().unwrap(), 0.66));
    // t interval of [0.72, 0.6, 0.66]: 0.66 ± 4.302653·0.06/√3.
    let half = 4.302652729749464 * 0.06 / 3f64.sqrt();
    assert!(close(
        actual["interval"]["lower"].as_f64().unwrap(),
        0.66 - half
    ));
    assert!(close(
        actual["interval"]["upper"].as_f64().unwrap(),
        0.66 + half
    ));
    assert!(
        r.message.starts_with("judge judge scored a mean of 0.66 over 3 asks [0.72, 0.6, 0.66], 95% CI 0.511–0.809, below the minimum 0.7 (borderline"),
        "{}",
        r.message
    );
    // Each ask its own recording.
    let ids: Vec<String> = provider
        .requests()
        .iter()
        .map(|r| r.context.recording_id.clone().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "eval__ds__c__v__judge__inv0__t1",
            "eval__ds__c__v__judge-reask1__inv0__t1",
            "eval__ds__c__v__judge-reask2__inv0__t1"
        ]
    );
    // Not borderline: asked once.
    let provider = reasking_judge(0.9, &[0.0, 0.0]);
    let judge = Judge::from_arc(provider.clone()).borderline(Borderline::margin(0.05).reask(2));
    let ctx = EvalContext::new(&[]).output(json!("out")).judge(&judge);
    let r = rt().block_on(evaluate_all(&[a], &ctx)).remove(0);
    assert!(r.passed && !r.borderline);
    assert_eq!(provider.requests().len(), 1);
}

#[test]
fn the_judge_scorer_marks_and_reasks_borderline_scores() {
    let provider = reasking_judge(0.68, &[0.8, 0.74]);
    let scorer = scaffold::scorer::LlmJudgeScorer::from_arc(provider.clone())
        .criteria(["names the flaw"])
        .min_score(0.7)
        .borderline_margin(0.05)
        .reask(2)
        .memory_only()
        .named("quality");
    let m = scaffold::metrics::Metrics::default();
    let out = json!("out");
    let ctx = scaffold::scorer::ScorerContext::new(&(), &[], &m)
        .with_output(&out)
        .with_cell("ds", "c", "v", Some(0));
    let s = rt().block_on(scaffold::scorer::Scorer::score(&scorer, &ctx));
    // 0.68 alone fails; the mean of 0.68, 0.8 and 0.74 (0.74) passes.
    assert!(s.borderline && s.pass && close(s.value, 0.74), "{s:?}");
    let ids: Vec<String> = provider
        .requests()
        .iter()
        .map(|r| r.context.recording_id.clone().unwrap())
        .collect();
    assert_eq!(ids[2], "eval__ds__c__v__scorer-quality-reask2__inv0__t0");
}

#[test]
fn cache_keys_separate_trials_asks_and_temperatures() {
    let criteria = ["c".to_string()];
    let base = JudgeKey::new("m", Some("r"), &criteria, "out");
    let keys = [
        base.key(),
        base.trial(Some(0)).key(),
        base.trial(Some(1)).key(),
        base.ask(1).key(),
        base.temperature(0.7).key(),
        JudgeKey::new("other", Some("r"), &criteria, "out").key(),
        JudgeKey::new("m", None, &criteria, "out").key(),
        JudgeKey::new("m", Some("r"), &[], "out").key(),
        JudgeKey::new("m", Some("r"), &criteria, "out2").key(),
    ];
    let mut unique = keys.to_vec();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), keys.len());
}

// ---------------------------------------------------------------- trials

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Review {
    code: String,
    review: String,
}

/// The same answer on every trial: only the judge differs.
fn reviewer() -> Workflow<Review> {
    let agent = Agent::<Review>::new("reviewer")
        .provider(ScriptedProvider::responder("gpt-4o", |_| {
            ScriptedReply::text("SQL injection: use parameters")
        }))
        .prompt(|s| s.code.clone())
        .update(|t, s| s.review = t);
    Workflow::new("review", Review::default())
        .start(|input, s| s.code = input.as_str().unwrap_or_default().into())
        .phase("review", Phase::run(agent))
        .output(|s| json!(s.review))
}

/// A judge whose recorded answer differs per trial (0.2, 0.5, 0.8).
fn judge_per_trial() -> Arc<ScriptedProvider> {
    Arc::new(ScriptedProvider::responder("judge-model", |req| {
        let id = req.context.recording_id.clone().unwrap_or_default();
        let score = match id.rsplit("__").next() {
            Some("t0") => 0.2,
            Some("t1") => 0.5,
            Some("t2") => 0.8,
            _ => 0.0,
        };
        judge_reply(score)
    }))
}

fn temp_db() -> std::path::PathBuf {
    std::env::temp_dir()
        .join(format!(
            "scaffold-trials-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ))
        .join("scaffold.db")
}

/// Run every cell of `eval` and return, per trial, the judge scorer's value
/// and the `llm.judge` assertion's score.
fn scores(eval: &Eval<Review>, env: &CellEnv) -> Vec<(u32, f64, f64)> {
    let rt = rt();
    eval.cells()
        .map(|cell| {
            let (r, _) = rt.block_on(eval.run_cell(&cell, env));
            let scorer = r.scores.iter().find(|s| s.name == "quality").unwrap().value;
            let assertion = r.assertions[0].actual.as_ref().unwrap()["score"]
                .as_f64()
                .unwrap();
            (r.id.trial.unwrap(), scorer, assertion)
        })
        .collect()
}

#[test]
fn three_trials_with_three_recorded_answers_give_three_scores() {
    let dataset = load_str(
        r#"{"name": "reviews", "cases": [{"id": "sqli", "input": "SELECT ... ${id}",
            "assertions": [{"type": "llm.judge", "criteria": ["names the flaw"], "minScore": 0.1}]}]}"#,
        Format::Json,
        "reviews.json",
    )
    .unwrap();
    let path = temp_db();
    let store = Store::open(&path).unwrap();
    let env = CellEnv {
        store: Some(store.clone()),
        transport: None,
        virtual_time: false,
        tools: None,
        recorder: None,
        bridges: None,
    };
    let eval = |judge: Arc<ScriptedProvider>| {
        Eval::new()
            .name("reviews")
            .variant("gpt-4o", reviewer())
            .dataset(dataset.clone())
            .trials(3)
            .judge(ScriptedProvider::clone(&judge))
            .scorer(
                scaffold::scorer::LlmJudgeScorer::from_arc(judge)
                    .criteria(["names the flaw"])
                    .min_score(0.1)
                    .named("quality"),
            )
    };
    let provider = judge_per_trial();
    let first = scores(&eval(provider.clone()), &env);
    assert_eq!(
        first,
        [(0, 0.2, 0.2), (1, 0.5, 0.5), (2, 0.8, 0.8)],
        "the same output, three trials: three verdicts"
    );
    // Each trial's judge calls had their own recording ids.
    let mut ids: Vec<String> = provider
        .requests()
        .iter()
        .map(|r| r.context.recording_id.clone().unwrap())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 6, "{ids:?}");
    // A later run whose judge cannot answer: the scorer's three verdicts come
    // from the persistent cache, one entry per trial, not one replayed thrice.
    let cache = SqliteJudgeCache::for_store(&store).unwrap().unwrap();
    assert_eq!(cache.len(), 3);
    let mute = Arc::new(ScriptedProvider::new("judge-model"));
    let scorer = scaffold::scorer::LlmJudgeScorer::from_arc(mute)
        .criteria(["names the flaw"])
        .min_score(0.1)
        .named("quality");
    let again: Vec<f64> = {
        let rt = rt();
        let eval = Eval::new()
            .name("reviews")
            .variant("gpt-4o", reviewer())
            .dataset(dataset.clone())
            .trials(3)
            .scorer(scorer);
        eval.cells()
            .map(|cell| {
                let (r, _) = rt.block_on(eval.run_cell(&cell, &env));
                let s = &r.scores[0];
                assert!(s.detail.as_deref().unwrap().contains("(cached)"), "{s:?}");
                s.value
            })
            .collect()
    };
    assert_eq!(again, [0.2, 0.5, 0.8]);
    drop(store);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}
