//! A key an API echoes back ("Incorrect API key provided: sk-…") reaches
//! nothing scaffold writes or prints: not the error, the signals, the
//! snapshot, a report, the database or the failure text.

use scaffold::_cargo_scaffold_support::eval::{CellEnv, EvalResults, RunConfig};
use scaffold::dataset::{Format, load_str};
use scaffold::eval::Eval;
use scaffold::prelude::*;
use scaffold::provider::anthropic::Anthropic;
use scaffold::provider::http::RetryPolicy;
use scaffold::provider::openai::OpenAi;
use scaffold::testing::FakeProviderServer;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Key-shaped: caught by the built-in pattern as well as by its value.
const OPENAI_KEY: &str = "sk-proj-CANARYwrong0123456789abcdef";
/// Not key-shaped: caught only as the credential the request carried.
const ANTHROPIC_KEY: &str = "canary-anthropic-wrong-4242";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Qa {
    question: String,
    answer: String,
}

fn workflow(provider: impl Provider + 'static) -> Workflow<Qa> {
    let agent = Agent::<Qa>::new("answerer")
        .provider(provider)
        .prompt(|s| s.question.clone())
        .update(|t, s| s.answer = t);
    Workflow::new("qa", Qa::default())
        .start(|input, s| s.question = input["q"].as_str().unwrap_or_default().into())
        .phase("answer", Phase::run(agent))
        .output(|s| json!(s.answer))
}

#[tokio::test]
async fn a_key_echoed_by_the_api_is_nowhere_in_what_scaffold_writes() {
    let server = FakeProviderServer::builder()
        .require_api_key("sk-proj-the-right-key-000000000000")
        .start()
        .await
        .unwrap();
    let openai = OpenAi::new("gpt-4o")
        .base_url(server.openai_base_url())
        .api_key(OPENAI_KEY)
        .retry(RetryPolicy::none());
    let anthropic = Anthropic::new("claude-sonnet-4-5")
        .base_url(server.anthropic_base_url())
        .api_key(ANTHROPIC_KEY)
        .retry(RetryPolicy::none());
    let dataset = load_str(
        "name: qa.v1\ncases:\n  - id: capital\n    input: {q: \"Capital?\"}\n    assertions:\n      - type: output.contains\n        text: Paris\n",
        Format::Yaml,
        "qa.yaml",
    )
    .unwrap();
    let eval = Eval::new()
        .name("qa")
        .variant("gpt-4o", workflow(openai))
        .variant("claude", workflow(anthropic))
        .dataset(dataset)
        .scorer(scaffold::scorer::output_valid());
    let dir = std::env::temp_dir().join(format!("scaffold-secrets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("scaffold.db");
    let store = Store::open(&db).unwrap();
    let env = CellEnv {
        store: Some(store.clone()),
        ..CellEnv::default()
    };

    let mut written = Vec::new();
    let mut cells = Vec::new();
    for cell in eval.cells() {
        let (result, run) = eval.run_cell(&cell, &env).await;
        // The API did echo the key: the call failed on it.
        let error = result.error.clone().unwrap_or_default();
        assert!(
            error.contains("401") && error.contains("[REDACTED]"),
            "{error}"
        );
        written.push(error);
        written.push(result.failures().join("\n"));
        written.push(serde_json::to_string(&run.signals).unwrap());
        let snapshot = scaffold::_cargo_scaffold_support::harness::session_summary(
            &result,
            &run.signals,
            &serde_json::to_value(&run.state).unwrap(),
        );
        written.push(serde_yaml_like(&snapshot));
        cells.push(result);
    }
    let config = RunConfig {
        trials: 1,
        inputs: 1,
        variants: vec!["gpt-4o".into(), "claude".into()],
        scorers: vec!["output-valid".into()],
        min_pass_rate: 1.0,
    };
    let results = EvalResults::from_cells("qa", "2026-11-26T00:00:00Z", config, &cells);
    for format in [
        scaffold::_cargo_scaffold_support::report::Format::Table,
        scaffold::_cargo_scaffold_support::report::Format::Json,
        scaffold::_cargo_scaffold_support::report::Format::Markdown,
        scaffold::_cargo_scaffold_support::report::Format::Junit,
        scaffold::_cargo_scaffold_support::report::Format::Html,
    ] {
        written.push(scaffold::_cargo_scaffold_support::report::render(
            format, &results, None,
        ));
    }
    store.flush().unwrap();
    // The HTML report's transcripts, read from the store, hold none either.
    use scaffold::_cargo_scaffold_support::report::html::{
        TranscriptSelection, Transcripts, render_with_transcripts,
    };
    let transcripts = Transcripts::new(&store, TranscriptSelection::All);
    let html = render_with_transcripts(&results, None, &transcripts);
    assert_eq!(html.matches("type=\"application/json\"").count(), 2);
    written.push(html);
    // Nor do the viewer's pages of each cell, or its search index (the
    // database's bytes, read below, hold the index's words).
    use scaffold::_cargo_scaffold_support::eval::{EvalRunMeta, RecordedCell};
    use scaffold::_cargo_scaffold_support::report::html::CellPage;
    store
        .begin_eval_run(&EvalRunMeta::new("run", "harness").eval("qa", results.config.clone()))
        .unwrap();
    for c in &results.results {
        let name = c.test_name("qa", 1);
        written.push(CellPage::new(&store, &name, c).baseline(Some(c)).render());
        let recorded = RecordedCell::new("qa", name, c.clone(), true);
        store.record_cell("run", &recorded).unwrap();
    }
    for word in ["canary", "CANARYwrong0123456789abcdef", "4242", "redacted"] {
        let found = store.search_cells("run", word).unwrap();
        assert_eq!(
            found.len(),
            usize::from(word == "redacted") * 2,
            "{word}: {found:?}"
        );
    }
    drop(store);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        written.push(String::from_utf8_lossy(&bytes).into_owned());
    }
    for (i, text) in written.iter().enumerate() {
        for key in [OPENAI_KEY, ANTHROPIC_KEY, "CANARY", "canary"] {
            assert!(!text.contains(key), "output {i} holds `{key}`:\n{text}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The snapshot as text (its JSON is what insta's YAML holds, field by field).
fn serde_yaml_like(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap()
}
