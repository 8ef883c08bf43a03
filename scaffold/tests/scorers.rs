//! The built-in scorers at their edges, and scorers inside an eval cell.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use scaffold::_cargo_scaffold_support::eval::CellEnv;
use scaffold::assert::{InMemoryJudgeCache, JudgeCache, JudgeCacheKey};
use scaffold::eval::Eval;
use scaffold::metrics::Metrics;
use scaffold::prelude::*;
use scaffold::provider::CallContext;
use scaffold::provider::openai::OpenAi;
use scaffold::provider::transport::{
    HttpBody, HttpRequest, HttpResponse, Transport, TransportError,
};
use scaffold::scorer::{
    Algorithm, CustomScore, Expected, Score, Scorer, ScorerContext, ScriptedEmbedder,
    SqliteJudgeCache, cost, custom, latency, llm_judge, output_valid, similarity, tokens,
};
use serde_json::{Value, json};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

fn score<S: Sync>(scorer: &dyn Scorer<S>, ctx: &ScorerContext<'_, S>) -> Score {
    rt().block_on(scorer.score(ctx))
}

fn metrics(latency_ms: u64, cost_usd: f64, input: u64, output: u64) -> Metrics {
    Metrics {
        latency_ms,
        cost_usd,
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
        ..Metrics::default()
    }
}

// ---------------------------------------------------------------- output_valid

#[test]
fn output_valid_needs_an_output_and_no_error() {
    let m = Metrics::default();
    let out = json!({"ok": true});
    let null = Value::Null;
    let s = score(
        &output_valid(),
        &ScorerContext::new(&(), &[], &m).with_output(&out),
    );
    assert_eq!(
        (s.name.as_str(), s.pass, s.value, s.detail),
        ("output-valid", true, 1.0, None)
    );
    let s = score(&output_valid(), &ScorerContext::new(&(), &[], &m));
    assert_eq!((s.pass, s.value), (false, 0.0));
    assert_eq!(s.detail.as_deref(), Some("the run produced no output"));
    let s = score(
        &output_valid(),
        &ScorerContext::new(&(), &[], &m).with_output(&null),
    );
    assert!(!s.pass);
    let s = score(
        &output_valid(),
        &ScorerContext::new(&(), &[], &m)
            .with_output(&out)
            .with_error("boom"),
    );
    assert_eq!((s.pass, s.detail.as_deref()), (false, Some("boom")));
}

// ---------------------------------------------------------------- metrics

#[test]
fn latency_is_one_at_the_ideal_and_zero_at_the_max() {
    let cases = [
        (0, 1.0, true),
        (1000, 1.0, true),
        (2000, 0.75, true),
        (5000, 0.0, true),
        (5001, 0.0, false),
        (60_000, 0.0, false),
    ];
    for (ms, value, pass) in cases {
        let m = metrics(ms, 0.0, 0, 0);
        let s = score(&latency(5000.0, 1000.0), &ScorerContext::new(&(), &[], &m));
        assert_eq!((s.value, s.pass), (value, pass), "{ms} ms");
        assert_eq!(s.name, "latency");
    }
}

#[test]
fn an_ideal_above_the_max_is_the_max() {
    let m = metrics(150, 0.0, 0, 0);
    let s = score(&latency(100.0, 200.0), &ScorerContext::new(&(), &[], &m));
    assert_eq!((s.value, s.pass), (0.0, false));
    let m = metrics(100, 0.0, 0, 0);
    let s = score(&latency(100.0, 200.0), &ScorerContext::new(&(), &[], &m));
    assert_eq!((s.value, s.pass), (1.0, true));
}

#[test]
fn cost_scores_dollars() {
    let m = metrics(0, 0.03, 0, 0);
    let s = score(&cost(0.05, 0.01), &ScorerContext::new(&(), &[], &m));
    assert!((s.value - 0.5).abs() < 1e-12);
    assert!(s.pass);
    assert_eq!(
        s.detail.as_deref(),
        Some("$0.03 (ideal ≤ $0.01, max $0.05)")
    );
    let named = cost(0.05, 0.01).named("budget");
    assert_eq!(Scorer::<()>::name(&named), "budget");
}

/// A run that errored at once cost $0, took no time and used no tokens:
/// the metric scorers give it 0, never their best grade.
#[test]
fn metric_scorers_never_reward_an_errored_run() {
    let m = metrics(0, 0.0, 0, 0);
    let ctx = ScorerContext::new(&(), &[], &m).with_error("agent `a`: HTTP 500");
    for scorer in [
        Box::new(cost(0.05, 0.01)) as Box<dyn Scorer<()>>,
        Box::new(latency(5000.0, 1000.0)),
        Box::new(tokens(8000.0, 2000.0)),
    ] {
        let s = score(scorer.as_ref(), &ctx);
        assert_eq!((s.value, s.pass), (0.0, false), "{}", s.name);
        let detail = s.detail.unwrap_or_default();
        assert!(
            detail.contains("errored") && detail.contains("HTTP 500"),
            "{detail}"
        );
    }
    // The same run without the error is graded on its figures.
    let ok = score(&cost(0.05, 0.01), &ScorerContext::new(&(), &[], &m));
    assert_eq!((ok.value, ok.pass), (1.0, true));
}

#[test]
fn tokens_weigh_input_tokens() {
    let m = metrics(0, 0.0, 8000, 1000);
    let ctx = ScorerContext::new(&(), &[], &m);
    // Unweighted: 9000 > max 8000.
    let s = score(&tokens(8000.0, 2000.0), &ctx);
    assert_eq!((s.value, s.pass), (0.0, false));
    // 8000 × 0.125 + 1000 = 2000: the ideal.
    let s = score(&tokens(8000.0, 2000.0).input_weight(0.125), &ctx);
    assert_eq!((s.value, s.pass), (1.0, true));
    assert!(
        s.detail
            .unwrap()
            .contains("8000 input × 0.125 + 1000 output")
    );
    // Negative weights count as zero.
    let s = score(&tokens(8000.0, 500.0).input_weight(-1.0), &ctx);
    assert!((s.value - (1.0 - 500.0 / 7500.0)).abs() < 1e-12);
}

// ---------------------------------------------------------------- similarity

fn sim(scorer: &dyn Scorer<()>, output: &Value, input: Option<&Value>) -> Score {
    let m = Metrics::default();
    let mut ctx = ScorerContext::new(&(), &[], &m).with_output(output);
    if let Some(i) = input {
        ctx = ctx.with_input(i);
    }
    score(scorer, &ctx)
}

#[test]
fn exact_and_contains() {
    let out = json!("The answer is Paris.");
    assert_eq!(
        sim(
            &similarity("The answer is Paris.", Algorithm::Exact),
            &out,
            None
        )
        .value,
        1.0
    );
    let s = sim(
        &similarity("the answer is paris.", Algorithm::Exact),
        &out,
        None,
    );
    assert_eq!((s.value, s.pass), (0.0, false));
    let s = sim(
        &similarity("the answer is paris.", Algorithm::Exact).case_sensitive(false),
        &out,
        None,
    );
    assert!(s.pass);
    assert!(sim(&similarity("Paris", Algorithm::Contains), &out, None).pass);
    assert!(!sim(&similarity("London", Algorithm::Contains), &out, None).pass);
    // The empty string is contained in everything.
    assert!(sim(&similarity("", Algorithm::Contains), &out, None).pass);
}

#[test]
fn levenshtein_is_normalized_by_the_longer_text() {
    let out = json!("kitten");
    let s = sim(&similarity("sitting", Algorithm::Levenshtein), &out, None);
    assert!((s.value - 4.0 / 7.0).abs() < 1e-12);
    assert!(!s.pass);
    let s = sim(
        &similarity("sitting", Algorithm::Levenshtein).min(0.5),
        &out,
        None,
    );
    assert!(s.pass);
    // Characters, not bytes.
    let s = sim(
        &similarity("naïve", Algorithm::Levenshtein),
        &json!("naive"),
        None,
    );
    assert!((s.value - 0.8).abs() < 1e-12);
    // Both empty: identical.
    assert_eq!(
        sim(&similarity("", Algorithm::Levenshtein), &json!(""), None).value,
        1.0
    );
    assert_eq!(
        sim(&similarity("abc", Algorithm::Levenshtein), &json!(""), None).value,
        0.0
    );
}

#[test]
fn cosine_compares_words() {
    let s = sim(
        &similarity("SQL injection in the login query", Algorithm::Cosine),
        &json!("The login query has an SQL injection."),
        None,
    );
    assert!(s.value > 0.7, "{}", s.value);
    let s = sim(
        &similarity("red apple", Algorithm::Cosine),
        &json!("blue sky"),
        None,
    );
    assert_eq!(s.value, 0.0);
}

#[test]
fn expected_text_can_come_from_the_case_input_and_output_path() {
    let out = json!({"answer": {"city": "Paris"}, "n": 4});
    let input = json!({"expected": {"city": "Paris"}});
    let s = sim(
        &similarity(Expected::input("expected.city"), Algorithm::Exact).path("answer.city"),
        &out,
        Some(&input),
    );
    assert!(s.pass, "{s:?}");
    // Non-string values compare as compact JSON.
    let s = sim(
        &similarity(Expected::input("expected"), Algorithm::Exact).path("answer"),
        &out,
        Some(&input),
    );
    assert!(s.pass, "{s:?}");
    let s = sim(&similarity("4", Algorithm::Exact).path("n"), &out, None);
    assert!(s.pass);
}

#[test]
fn missing_pieces_fail_with_a_reason() {
    let out = json!({"answer": "x"});
    let s = sim(
        &similarity(Expected::input("expected"), Algorithm::Exact),
        &out,
        None,
    );
    assert_eq!((s.pass, s.value), (false, 0.0));
    assert!(s.detail.unwrap().contains("no case input"));
    let s = sim(
        &similarity(Expected::input("expected"), Algorithm::Exact),
        &out,
        Some(&json!({})),
    );
    assert!(s.detail.unwrap().contains("nothing at `expected`"));
    let s = sim(
        &similarity("x", Algorithm::Exact).path("missing"),
        &out,
        None,
    );
    assert!(
        s.detail
            .unwrap()
            .contains("the output has nothing at `missing`")
    );
    let s = sim(&similarity("x", Algorithm::Exact).path("a[[["), &out, None);
    assert!(s.detail.unwrap().contains("invalid path"));
    let m = Metrics::default();
    let s = score(
        &similarity("x", Algorithm::Exact),
        &ScorerContext::new(&(), &[], &m),
    );
    assert_eq!(s.detail.as_deref(), Some("the run produced no output"));
}

#[test]
fn semantic_embeds_both_texts_in_one_recorded_call() {
    let embedder = Arc::new(
        ScriptedEmbedder::new("text-embedding-3-small")
            .vector("The capital of France is Paris.", vec![0.9, 0.1, 0.0])
            .vector("Paris", vec![1.0, 0.0, 0.0]),
    );
    let scorer = similarity("Paris", Algorithm::Semantic(embedder.clone())).min(0.9);
    let m = Metrics::default();
    let out = json!("The capital of France is Paris.");
    let ctx = ScorerContext::new(&(), &[], &m)
        .with_output(&out)
        .with_cell("geo.v1", "capital", "small", Some(2));
    let s = score(&scorer, &ctx);
    let expected = 0.9 / (0.82f64).sqrt();
    assert!((s.value - expected).abs() < 1e-6, "{}", s.value);
    assert!(s.pass);
    let calls = embedder.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].inputs,
        ["The capital of France is Paris.", "Paris"]
    );
    assert_eq!(
        calls[0].context.recording_id.as_deref(),
        Some("eval__geo.v1__capital__small__scorer-similarity__inv0__t2")
    );
}

#[test]
fn semantic_counts_opposite_vectors_as_zero_and_reports_failures() {
    let embedder = ScriptedEmbedder::new("e")
        .vector("up", vec![1.0, 0.0])
        .vector("down", vec![-1.0, 0.0]);
    let s = sim(
        &similarity("down", Algorithm::semantic(embedder)),
        &json!("up"),
        None,
    );
    assert_eq!((s.value, s.pass), (0.0, false));
    let failing = ScriptedEmbedder::new("e").failing("quota exceeded");
    let s = sim(
        &similarity("x", Algorithm::semantic(failing)),
        &json!("y"),
        None,
    );
    assert!(!s.pass);
    assert!(
        s.detail
            .unwrap()
            .contains("embedding with e failed: quota exceeded")
    );
}

/// A transport that answers embeddings requests and keeps each call's context.
#[derive(Default)]
struct EmbeddingsApi {
    seen: Mutex<Vec<(HttpRequest, CallContext)>>,
}

#[async_trait]
impl Transport for EmbeddingsApi {
    async fn send(
        &self,
        request: HttpRequest,
        context: &CallContext,
    ) -> Result<HttpResponse, TransportError> {
        let n = request
            .body
            .as_ref()
            .and_then(|b| b["input"].as_array())
            .map_or(0, Vec::len);
        let data: Vec<Value> = (0..n)
            .rev()
            .map(|i| json!({"index": i, "embedding": [1.0, i as f64], "object": "embedding"}))
            .collect();
        let body = json!({"object": "list", "data": data, "model": "text-embedding-3-small"});
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((request, context.clone()));
        }
        Ok(HttpResponse {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: HttpBody::Full(body.to_string().into()),
        })
    }
}

#[test]
fn openai_embeddings_go_through_the_transport_with_the_recording_id() {
    let api = Arc::new(EmbeddingsApi::default());
    let embedder = OpenAi::new("text-embedding-3-small")
        .base_url("http://embeddings.test/v1")
        .api_key("sk-test")
        .transport(api.clone());
    let scorer = similarity("expected", Algorithm::semantic(embedder)).named("meaning");
    let m = Metrics::default();
    let out = json!("actual");
    let ctx = ScorerContext::new(&(), &[], &m)
        .with_output(&out)
        .with_cell("ds", "case-1", "gpt-4o", None);
    let s = score(&scorer, &ctx);
    // [1, 0] against [1, 1], answered out of order and sorted by index.
    assert!(
        (s.value - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-6,
        "{s:?}"
    );
    let seen = api.seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let (request, context) = &seen[0];
    assert_eq!(request.url, "http://embeddings.test/v1/embeddings");
    assert_eq!(
        request.body.as_ref().unwrap()["input"],
        json!(["actual", "expected"])
    );
    assert_eq!(
        context.recording_id.as_deref(),
        Some("eval__ds__case-1__gpt-4o__scorer-meaning__inv0")
    );
}

// ---------------------------------------------------------------- llm_judge

/// Judge tests read `SCAFFOLD_MODE`; one of them sets it.
static MODE: Mutex<()> = Mutex::new(());

fn judge_reply(score: f64) -> ScriptedReply {
    ScriptedReply::json(json!({"score": score, "reasoning": format!("scored {score}")}))
}

#[test]
fn llm_judge_scores_passes_and_records() {
    let _mode = MODE.lock().unwrap_or_else(|p| p.into_inner());
    let provider = Arc::new(
        ScriptedProvider::new("judge-model")
            .reply(judge_reply(0.6))
            .reply(judge_reply(0.9)),
    );
    let scorer = scaffold::scorer::LlmJudgeScorer::from_arc(provider.clone())
        .criteria(["finds the SQL injection"])
        .rubric("1 when found and fixed")
        .min_score(0.7)
        .memory_only();
    let m = Metrics::default();
    let first = json!("looks fine");
    let second = json!("SQL injection in line 3; use parameters");
    let ctx = |out| {
        ScorerContext::new(&(), &[], &m)
            .with_output(out)
            .with_cell("reviews", "sqli", "gpt-4o", None)
    };
    let s = score(&scorer, &ctx(&first));
    assert_eq!(
        (s.name.as_str(), s.value, s.pass),
        ("llm-judge", 0.6, false)
    );
    assert!(s.detail.unwrap().contains("below the minimum"));
    let s = score(&scorer, &ctx(&second));
    assert_eq!((s.value, s.pass), (0.9, true));
    // The same output again: from the in-memory cache, no third call.
    let s = score(&scorer, &ctx(&second));
    assert_eq!(s.value, 0.9);
    assert!(s.detail.unwrap().contains("(cached)"));
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].context.recording_id.as_deref(),
        Some("eval__reviews__sqli__gpt-4o__scorer-llm-judge__inv0")
    );
    let prompt = requests[0].messages[0].text();
    assert!(
        prompt.contains("finds the SQL injection") && prompt.contains("1 when found and fixed")
    );
}

#[test]
fn llm_judge_failures_fail_the_score() {
    let _mode = MODE.lock().unwrap_or_else(|p| p.into_inner());
    let m = Metrics::default();
    let out = json!("x");
    let ctx = ScorerContext::new(&(), &[], &m).with_output(&out);
    let no_criteria = llm_judge(ScriptedProvider::new("j")).memory_only();
    assert!(
        score(&no_criteria, &ctx)
            .detail
            .unwrap()
            .contains("no criteria")
    );
    let broken = llm_judge(ScriptedProvider::new("j").reply(ScriptedReply::error("overloaded")))
        .criteria(["c"])
        .memory_only();
    let s = score(&broken, &ctx);
    assert_eq!((s.value, s.pass), (0.0, false));
    assert!(s.detail.unwrap().contains("overloaded"));
    let garbled = llm_judge(ScriptedProvider::new("j").reply(ScriptedReply::text("great!")))
        .criteria(["c"])
        .memory_only();
    assert!(
        score(&garbled, &ctx)
            .detail
            .unwrap()
            .contains("did not answer with JSON")
    );
    let s = score(
        &llm_judge(ScriptedProvider::new("j"))
            .criteria(["c"])
            .memory_only(),
        &ScorerContext::new(&(), &[], &m),
    );
    assert_eq!(
        s.detail.as_deref(),
        Some("the run produced no output to judge")
    );
}

fn temp_db(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "scaffold-scorers-{name}-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4()
    ));
    dir.join("scaffold.db")
}

#[test]
fn llm_judge_verdicts_persist_in_the_store_database() {
    let _mode = MODE.lock().unwrap_or_else(|p| p.into_inner());
    let path = temp_db("persist");
    let store = Store::open(&path).unwrap();
    let m = Metrics::default();
    let out = json!("Thanks! 2 + 2 = 4.");
    let ctx = ScorerContext::new(&(), &[], &m)
        .with_output(&out)
        .with_store(&store);
    let first = llm_judge(ScriptedProvider::new("judge-model").reply(judge_reply(0.8)))
        .criteria(["is polite"]);
    assert_eq!(score(&first, &ctx).value, 0.8);
    // A new scorer (a later run) with a judge that cannot answer: the verdict comes from SQLite.
    let later = llm_judge(ScriptedProvider::new("judge-model")).criteria(["is polite"]);
    let s = score(&later, &ctx);
    assert_eq!((s.value, s.pass), (0.8, true), "{s:?}");
    assert!(s.detail.unwrap().contains("(cached)"));
    // Keyed by model, rubric, criteria and output: another criterion is another verdict.
    let cache = SqliteJudgeCache::for_store(&store).unwrap().unwrap();
    assert_eq!(cache.len(), 1);
    let key = JudgeCacheKey::new(
        "judge-model",
        None,
        &["is polite".into()],
        "Thanks! 2 + 2 = 4.",
    );
    assert_eq!(cache.get(&key).map(|v| v.score), Some(0.8));
    let other = JudgeCacheKey::new(
        "judge-model",
        None,
        &["is terse".into()],
        "Thanks! 2 + 2 = 4.",
    );
    assert_eq!(cache.get(&other), None);
    // The store still works beside the extra table.
    store.flush().unwrap();
    assert_eq!(
        store.schema_version().unwrap(),
        scaffold::_cargo_scaffold_support::store::SCHEMA_VERSION
    );
    drop(store);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn recording_judges_every_cell_even_when_cached() {
    let _mode = MODE.lock().unwrap_or_else(|p| p.into_inner());
    let cache: Arc<dyn JudgeCache> = Arc::new(InMemoryJudgeCache::new());
    let m = Metrics::default();
    let out = json!("same output");
    let ctx = ScorerContext::new(&(), &[], &m).with_output(&out);
    let warm = llm_judge(ScriptedProvider::new("judge-model").reply(judge_reply(0.7)))
        .criteria(["c"])
        .cache(cache.clone());
    assert_eq!(score(&warm, &ctx).value, 0.7);
    // SAFETY: the MODE lock serializes every test of this binary that reads it.
    unsafe { std::env::set_var("SCAFFOLD_MODE", "record") };
    let provider = Arc::new(ScriptedProvider::new("judge-model").reply(judge_reply(0.75)));
    let recording = scaffold::scorer::LlmJudgeScorer::from_arc(provider.clone())
        .criteria(["c"])
        .cache(cache.clone());
    let s = score(&recording, &ctx);
    unsafe { std::env::remove_var("SCAFFOLD_MODE") };
    assert_eq!(s.value, 0.75, "recording must call the judge");
    assert_eq!(provider.requests().len(), 1);
}

#[test]
fn sqlite_cache_reports_a_bad_path() {
    let err = SqliteJudgeCache::open("/proc/definitely/not/writable/scaffold.db").unwrap_err();
    assert!(
        err.to_string().contains("judge cache /proc/definitely"),
        "{err}"
    );
    let store = Store::in_memory().unwrap();
    assert!(SqliteJudgeCache::for_store(&store).unwrap().is_none());
}

// ---------------------------------------------------------------- custom

#[test]
fn custom_takes_numbers_bools_and_explicit_scores() {
    let m = Metrics::default();
    let ctx = ScorerContext::new(&(), &[], &m);
    let s = score(&custom("n", |_: &ScorerContext<'_, ()>| 0.5), &ctx);
    assert_eq!((s.value, s.pass), (0.5, true));
    let s = score(&custom("n", |_: &ScorerContext<'_, ()>| 0.49), &ctx);
    assert!(!s.pass);
    let s = score(&custom("b", |_: &ScorerContext<'_, ()>| false), &ctx);
    assert_eq!((s.value, s.pass), (0.0, false));
    let s = score(&custom("t", |_: &ScorerContext<'_, ()>| (0.2, true)), &ctx);
    assert_eq!((s.value, s.pass), (0.2, true));
    let s = score(
        &custom("d", |_: &ScorerContext<'_, ()>| {
            CustomScore::new(0.9).pass(false).detail("strict")
        }),
        &ctx,
    );
    assert_eq!(
        (s.value, s.pass, s.detail.as_deref()),
        (0.9, false, Some("strict"))
    );
    let s = score(&custom("nan", |_: &ScorerContext<'_, ()>| f64::NAN), &ctx);
    assert_eq!((s.value, s.pass), (0.0, false));
    assert!(s.detail.unwrap().contains("not a finite number"));
}

// ---------------------------------------------------------------- in an eval

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Answer {
    question: String,
    answer: String,
}

#[test]
fn scorers_in_an_eval_see_the_case_and_call_models_through_the_cell() {
    let dataset = scaffold::dataset::load_str(
        r#"{"name": "geo", "cases": [
            {"id": "capital", "input": {"question": "Capital of France?", "expected": "Paris"}, "assertions": []}
        ]}"#,
        scaffold::dataset::Format::Json,
        "geo.json",
    )
    .unwrap();
    let agent = Agent::<Answer>::new("answerer")
        .provider(ScriptedProvider::new("small").reply(ScriptedReply::text("Paris")))
        .prompt(|s| s.question.clone())
        .update(|text, s| s.answer = text);
    let workflow = Workflow::new("qa", Answer::default())
        .start(|input, s| s.question = input["question"].as_str().unwrap_or_default().into())
        .phase("answer", Phase::run(agent))
        .output(|s| json!(s.answer));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let embedder = Arc::new(ScriptedEmbedder::new("embed"));
    let eval = Eval::new()
        .name("geo")
        .variant("small", workflow)
        .dataset(dataset)
        .scorer(output_valid())
        .scorer(similarity(Expected::input("expected"), Algorithm::Exact).named("exact"))
        .scorer(similarity(
            Expected::input("expected"),
            Algorithm::Semantic(embedder.clone()),
        ))
        .scorer(custom(
            "sees-the-cell",
            move |ctx: &ScorerContext<'_, Answer>| {
                seen2
                    .lock()
                    .unwrap()
                    .push(ctx.recording_id("custom", 0).map(|r| r.to_string()));
                ctx.input.is_some() && ctx.state.answer == "Paris"
            },
        ));
    let cell = eval.cells().next().unwrap();
    let (result, _) = rt().block_on(eval.run_cell(&cell, &CellEnv::default()));
    assert!(result.passed, "{:?}", result.failures());
    let names: Vec<&str> = result.scores.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["output-valid", "exact", "similarity", "sees-the-cell"]
    );
    assert_eq!(result.scores[2].value, 1.0);
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [Some("eval__geo__capital__small__custom__inv0".to_string())]
    );
    assert_eq!(
        embedder.calls()[0].context.recording_id.as_deref(),
        Some("eval__geo__capital__small__scorer-similarity__inv0")
    );
}
