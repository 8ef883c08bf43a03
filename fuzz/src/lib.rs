//! What the fuzz targets run, shared by the libFuzzer target and the
//! libFuzzer-free smoke loop.

use scaffold::assert::{EvalContext, evaluate_all_sync};
use scaffold::dataset::{DiagnosticKind, Format, load, load_str, validate, validate_str};
use scaffold::signal::Signal;
use serde_json::json;

/// Feed one input to the dataset loader in both formats; when it loads,
/// evaluate every assertion of every case against a small session. Then the
/// same bytes as a file, through `validate` and `load` (what `cargo
/// scaffold validate` and the harness read): text must get the diagnostics
/// it got as a string, other bytes one syntax error with a place. Nothing
/// here may panic, whatever the input.
pub fn dataset_loader(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        for format in [Format::Yaml, Format::Json] {
            from_text(text, format);
        }
    }
    from_file(data);
}

/// The string entry points on `text`.
fn from_text(text: &str, format: Format) {
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

/// The file entry points on `data`, written to this process's own file.
fn from_file(data: &[u8]) {
    let path = std::env::temp_dir().join(format!("scaffold-fuzz-{}.yaml", std::process::id()));
    if std::fs::write(&path, data).is_err() {
        return; // No room to write: nothing to check.
    }
    let file = path.display().to_string();
    let validation = validate(&path).expect("a file just written reads");
    match std::str::from_utf8(data) {
        Ok(text) => assert_eq!(
            validation,
            validate_str(text, Format::Yaml, &file),
            "a file and its text validate differently"
        ),
        Err(e) => {
            let [d] = validation.diagnostics.as_slice() else {
                panic!("not one diagnostic for bytes that are not UTF-8: {validation}");
            };
            assert_eq!(d.kind, DiagnosticKind::Syntax);
            let line = data[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            assert_eq!(d.line as usize, line, "{d}");
            assert!(d.column >= 1, "{d}");
        }
    }
    match load(&path) {
        Ok(_) => assert!(
            validation.is_ok(),
            "a file loaded although validation failed"
        ),
        Err(e) => {
            assert!(
                !validation.is_ok(),
                "a file failed although validation passed: {e}"
            );
            assert_eq!(e.diagnostics(), validation.diagnostics.as_slice());
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
