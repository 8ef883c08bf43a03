//! What the fuzz targets run, shared by the libFuzzer target and the
//! libFuzzer-free smoke loop.

use scaffold::assert::{EvalContext, evaluate_all_sync};
use scaffold::dataset::{Format, load_str, validate_str};
use scaffold::signal::Signal;
use serde_json::json;

/// Feed one input to the dataset loader in both formats; when it loads,
/// evaluate every assertion of every case against a small session. Nothing
/// here may panic, whatever the input.
pub fn dataset_loader(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for format in [Format::Yaml, Format::Json] {
        let validation = validate_str(text, format, "fuzz");
        let _ = validation.to_string();
        match load_str(text, format, "fuzz") {
            Ok(dataset) => {
                assert!(validation.is_ok(), "loaded although validation failed");
                let signals = session();
                let ctx = EvalContext::new(&signals).output(json!("output text"));
                for case in &dataset.cases {
                    let input = serde_json::to_string(&case.input()).unwrap();
                    assert_eq!(input, case.input_json(), "the input does not round-trip");
                    for result in evaluate_all_sync(case.assertions(), &ctx) {
                        let _ = result.to_string();
                    }
                }
            }
            Err(e) => {
                assert!(!e.diagnostics().is_empty(), "an error without diagnostics");
                let _ = e.to_string();
            }
        }
    }
}

fn session() -> Vec<Signal> {
    let sig = |index: u64, name: &str, payload: serde_json::Value| Signal {
        index,
        name: name.into(),
        payload,
        at_ms: index,
        agent: None,
    };
    vec![
        sig(0, "harness:start", json!({"state": {"a": {"b": [1, 2]}}})),
        sig(
            1,
            "agent:activated",
            json!({"agent": "x", "trigger": "phase:entered"}),
        ),
        sig(
            2,
            "tool:call",
            json!({"id": "1", "name": "Edit", "input": {"file_path": "a.ts"}}),
        ),
        sig(
            3,
            "state:a:changed",
            json!({"key": "a", "newValue": {"b": [3]}}),
        ),
        sig(4, "review:complete", json!({"agent": "x"})),
        sig(5, "harness:end", json!({"durationMs": 5})),
    ]
}
