//! Loading and validating datasets: the seeds' examples load unchanged;
//! every kind of error is reported at its file, line and column.

use proptest::prelude::*;
use scaffold::assert::{Assertion, SignalPattern};
use scaffold::dataset::{
    Dataset, DatasetError, DiagnosticKind, Format, Severity, load, load_str, validate, validate_str,
};
use serde_json::{Value, json};

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/datasets/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn load_fixture(name: &str) -> Dataset {
    load(fixture(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// The diagnostics of `src` as `line:col: severity: message` lines.
fn diagnostics(src: &str, format: Format) -> Vec<String> {
    validate_str(src, format, "t")
        .diagnostics
        .iter()
        .map(|d| {
            let s = d.to_string();
            s.strip_prefix("t:").unwrap_or(&s).to_string()
        })
        .collect()
}

// ------------------------------------------------------- the seeds' examples

#[test]
fn code_review_example_loads() {
    let ds = load_fixture("code-review-agent.yaml");
    assert_eq!(ds.name, "Code Review Agent Eval");
    assert_eq!(
        ds.description.as_deref(),
        Some("Tests the code review + fix suggestion workflow")
    );
    assert!(ds.warnings.is_empty(), "{:?}", ds.warnings);
    assert_eq!(ds.default_assertions.len(), 3);
    assert_eq!(ds.cases.len(), 11);
    let sql = ds.case("sql-injection").unwrap();
    assert_eq!(
        sql.name.as_deref(),
        Some("Detects SQL injection vulnerability")
    );
    assert_eq!(sql.tags, ["security", "sql", "critical"]);
    assert_eq!(sql.default_assertions().len(), 3);
    assert_eq!(sql.default_assertions(), ds.default_assertions);
    assert_eq!(sql.assertions().len(), 3 + 6);
    let first = json_of(sql.assertions().next());
    assert_eq!(
        (&first["type"], &first["value"]),
        (&json!("metric.latency.max"), &json!(30000.0))
    );
    assert_eq!(
        sql.input()["code"].as_str().unwrap().lines().next(),
        Some("async function getUser(userId) {")
    );
    let t = json_of(sql.assertions().nth(8));
    assert_eq!(t["type"], "signal.trajectory");
    assert_eq!(t["patterns"].as_array().map(Vec::len), Some(6));
    let second: SignalPattern = serde_json::from_value(t["patterns"][1].clone()).unwrap();
    assert_eq!(
        second,
        SignalPattern::with_payload("agent:activated", json!({"agent": "reviewer"}))
    );
    assert_ne!(t["strict"], true);
    let long = ds.case("very-long-file").unwrap();
    assert_eq!(long.timeout_ms, Some(60000));
    assert_eq!(ds.case("sql-injection").unwrap().timeout_ms, None);
    let m = json_of(ds.case("path-traversal").unwrap().assertions().nth(3));
    assert_eq!(m["type"], "output.matches");
    assert_eq!(m["regex"], r"path traversal|directory traversal|\.\.");
    assert_eq!(m["flags"], "i");
}

#[test]
fn code_generation_example_loads() {
    let ds = load_fixture("code-gen-agent.yaml");
    assert_eq!(ds.name, "Code Generation Agent Eval");
    assert!(ds.warnings.is_empty(), "{:?}", ds.warnings);
    assert_eq!(ds.cases.len(), 7);
    let ids: Vec<&str> = ds.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "fibonacci-function",
            "binary-search",
            "rest-endpoint",
            "impossible-task",
            "ambiguous-task",
            "file-creation-tools",
            "test-execution-tools"
        ]
    );
    let fib = ds.case("fibonacci-function").unwrap();
    assert_eq!(fib.input()["requirements"].as_array().unwrap().len(), 2);
    assert!(
        fib.assertions()
            .map(Some)
            .map(json_of)
            .any(|a| { a["type"] == "metric.activations" && a["exact"] == 4 })
    );
    let c = json_of(fib.assertions().next());
    assert_eq!(
        (&c["type"], &c["value"]),
        (&json!("metric.cost.max"), &json!(0.5))
    );
    let files = ds.case("file-creation-tools").unwrap();
    let w = json_of(files.assertions().nth(4));
    assert_eq!(w["type"], "tool.calledWith");
    assert_eq!(w["args"], json!({"file_path": {"endsWith": "utils.ts"}}));
}

#[test]
fn refactoring_example_loads() {
    let ds = load_fixture("refactoring-agent.yaml");
    assert_eq!(ds.name, "Refactoring Agent Eval");
    assert!(ds.warnings.is_empty(), "{:?}", ds.warnings);
    assert_eq!(ds.cases.len(), 3);
    let rename = ds.case("rename-function-across-files").unwrap();
    assert_eq!(rename.input()["files"][2]["path"], "tests/api.test.ts");
    let s = json_of(rename.assertions().nth(2));
    assert_eq!(s["type"], "snapshot.at");
    assert_eq!(s["afterSignal"], "analysis:complete");
    assert_eq!(s["value"], json!({"gte": 3}));
}

#[test]
fn debugging_example_loads_with_a_warning_about_its_null_tag() {
    let ds = load_fixture("debugging-agent.yaml");
    assert_eq!(ds.name, "Debugging Agent Eval");
    assert_eq!(ds.cases.len(), 3);
    // `tags: [debugging, null]`: YAML reads `null` as null; the tag is kept
    // as the text the author meant, with a warning.
    assert_eq!(ds.cases[0].tags, ["debugging", "null"]);
    let w: Vec<String> = ds.warnings.iter().map(|d| d.to_string()).collect();
    assert_eq!(
        w,
        [format!(
            "{}:8:23: warning: tag `null` is not a string in YAML (it reads as null); it is taken as the text \"null\"\n  = help: quote it: \"null\"",
            fixture("debugging-agent.yaml")
        )]
    );
    let m = json_of(ds.cases[0].assertions().nth(4));
    assert_eq!(
        (&m["type"], &m["flags"]),
        (&json!("output.matches"), &json!("i"))
    );
}

#[test]
fn seed_001_json_example_loads() {
    let ds = load_fixture("my-workflow.v1.json");
    assert_eq!(ds.name, "my-workflow.v1");
    assert_eq!(ds.id.as_deref(), Some("my-workflow.v1"));
    assert_eq!(ds.key(), "my-workflow.v1");
    assert_eq!(ds.workflow_name.as_deref(), Some("my-workflow"));
    assert_eq!(ds.version.as_deref(), Some("1.0.0"));
    assert!(ds.warnings.is_empty());
    let case = &ds.cases[0];
    assert_eq!(case.input(), json!({"task": "Say hello"}));
    assert_eq!(case.tags, ["smoke"]);
    assert_eq!(
        serde_json::to_value(case.assertions().collect::<Vec<_>>()).unwrap(),
        json!([
            {"type": "signal.not", "pattern": "error:**"},
            {"type": "output.contains", "path": "outputs.main.text", "text": "hello"},
            {"type": "metric.latency.max", "value": 30000.0}
        ])
    );
}

#[test]
fn seed_001_metric_aliases_keep_their_field() {
    let ds = load_str(
        r#"{"id": "x", "cases": [{"id": "a", "input": null, "assertions": [
            {"type": "metric.tokens.input.max", "value": 10000},
            {"type": "metric.tokens.output.max", "value": 5000},
            {"type": "metric.total_cost_usd.max", "value": 0.5},
            {"type": "behavior.node_invocations.max", "nodeId": "coder", "value": 3}
        ]}]}"#,
        Format::Json,
        "x.json",
    )
    .unwrap();
    let a: Vec<Value> = ds.cases[0]
        .own_assertions()
        .iter()
        .map(Some)
        .map(json_of)
        .collect();
    assert_eq!(
        (&a[0]["type"], &a[0]["field"], &a[0]["value"]),
        (
            &json!("metric.tokens.max"),
            &json!("input"),
            &json!(10000.0)
        )
    );
    assert_eq!(
        (&a[1]["type"], &a[1]["field"]),
        (&json!("metric.tokens.max"), &json!("output"))
    );
    assert_eq!(
        (&a[2]["type"], &a[2]["value"]),
        (&json!("metric.cost.max"), &json!(0.5))
    );
    assert_eq!(
        (&a[3]["type"], &a[3]["agentId"], &a[3]["max"]),
        (&json!("agent.activated"), &json!("coder"), &json!(3))
    );
}

// ------------------------------------------------------------ each error kind

const CASE_HEAD: &str = "name: t\ncases:\n  - id: a\n    input: {}\n    assertions:\n";

#[test]
fn unknown_assertion_type_with_did_you_mean() {
    let src = format!("{CASE_HEAD}      - type: signal.contans\n        pattern: x\n");
    assert_eq!(
        diagnostics(&src, Format::Yaml),
        [
            "6:15: error: unknown assertion type `signal.contans`\n  = help: did you mean `signal.contains`?"
        ]
    );
    let src = format!("{CASE_HEAD}      - type: behaviour.no_errors\n");
    assert_eq!(
        diagnostics(&src, Format::Yaml),
        [
            "6:15: error: unknown assertion type `behaviour.no_errors`\n  = help: did you mean `behavior.no_errors`?"
        ]
    );
    let src = format!("{CASE_HEAD}      - type: frobnicate\n");
    assert_eq!(
        diagnostics(&src, Format::Yaml),
        ["6:15: error: unknown assertion type `frobnicate`"]
    );
}

#[test]
fn unknown_fields_with_did_you_mean() {
    let src = format!("{CASE_HEAD}      - type: agent.activated\n        agentID: x\n");
    assert_eq!(
        diagnostics(&src, Format::Yaml),
        [
            "6:9: error: missing required field `agentId` in agent.activated assertion",
            "7:9: error: unknown field `agentID` in agent.activated assertion\n  = help: did you mean `agentId`?",
        ]
    );
    let src = "name: t\ndescripton: x\ncases:\n  - id: a\n    input: {}\n    assertions: []\n    tag: [x]\n";
    let d = diagnostics(src, Format::Yaml);
    assert_eq!(
        d,
        [
            "2:1: error: unknown field `descripton` in dataset\n  = help: did you mean `description`?",
            "4:5: warning: case `a` has no assertions (and the dataset has no defaultAssertions): it checks nothing",
            "7:5: error: unknown field `tag` in case\n  = help: did you mean `tags`?",
        ]
    );
}

#[test]
fn missing_required_fields() {
    let src = "description: no name\ncases:\n  - name: no id\n    assertions:\n      - type: snapshot.at\n        path: a\n";
    assert_eq!(
        diagnostics(src, Format::Yaml),
        [
            "1:1: error: missing required field `name` (or `id`) in dataset",
            "3:5: error: missing required field `id` in case",
            "3:5: error: missing required field `input` in case",
            "5:9: error: missing required field `afterSignal` in snapshot.at assertion",
        ]
    );
    let src = "{\n  \"id\": \"x\",\n  \"cases\": [{\"id\": \"a\", \"input\": 1, \"assertions\": [{\"type\": \"output.contains\"}]}]\n}";
    assert_eq!(
        diagnostics(src, Format::Json),
        ["3:52: error: missing required field `text` in output.contains assertion"]
    );
    assert_eq!(
        diagnostics("name: t\n", Format::Yaml),
        ["1:1: error: missing required field `cases` in dataset"]
    );
}

#[test]
fn duplicate_case_ids() {
    let src = "name: t\ncases:\n  - id: a\n    input: 1\n    assertions: [{type: behavior.no_errors}]\n  - id: a\n    input: 2\n    assertions: [{type: behavior.no_errors}]\n";
    assert_eq!(
        diagnostics(src, Format::Yaml),
        ["6:9: error: duplicate case id `a` (first used at 3:9)"]
    );
    let src = r#"{"id": "x", "cases": [
  {"id": "same", "input": 1, "assertions": []},
  {"id": "same", "input": 2, "assertions": []}
], "defaultAssertions": [{"type": "behavior.no_errors"}]}"#;
    assert_eq!(
        diagnostics(src, Format::Json),
        ["3:10: error: duplicate case id `same` (first used at 2:10)"]
    );
    // Ids that differ only in what file names cannot hold would share their
    // recordings and snapshots.
    let src = "name: t\ncases:\n  - id: sql injection\n    input: 1\n    assertions: [{type: behavior.no_errors}]\n  - id: sql/injection\n    input: 2\n    assertions: [{type: behavior.no_errors}]\n";
    assert_eq!(
        diagnostics(src, Format::Yaml),
        [
            "6:9: error: case id `sql/injection` names the same files as `sql injection` (used at 3:9): \
             recordings and snapshots write both as `sql-injection`; rename one"
        ]
    );
}

#[test]
fn empty_cases() {
    assert_eq!(
        diagnostics("name: t\ncases: []\n", Format::Yaml),
        ["2:8: error: the dataset has no cases"]
    );
    assert_eq!(
        diagnostics("{\"name\": \"t\",\n \"cases\": []}", Format::Json),
        ["2:11: error: the dataset has no cases"]
    );
}

#[test]
fn bad_regexes() {
    let src = format!(
        "{CASE_HEAD}      - type: output.matches\n        regex: \"a(b\"\n        flags: iq\n"
    );
    assert_eq!(
        diagnostics(&src, Format::Yaml),
        [
            "7:16: error: invalid regex `a(b`: unclosed group",
            "8:16: error: unknown regex flag `q` (known: i, m, s, x, U; g, u, y, d are ignored)",
        ]
    );
    let src = format!(
        "{CASE_HEAD}      - type: tool.calledWith\n        name: Bash\n        args:\n          command:\n            matches: \"[z-a]\"\n"
    );
    assert_eq!(
        diagnostics(&src, Format::Yaml),
        [
            "10:22: error: invalid regex `[z-a]`: invalid character class range, the start must be <= the end"
        ]
    );
    // A regex met again is checked once but reported at each place; the
    // same text with other flags is another regex.
    let src = format!(
        "{CASE_HEAD}      - {{type: output.matches, regex: \"a(b\"}}\n      - {{type: output.matches, regex: \"x\"}}\n      - {{type: output.matches, regex: \"a(b\"}}\n      - {{type: output.matches, regex: \"x\", flags: q}}\n"
    );
    assert_eq!(
        diagnostics(&src, Format::Yaml),
        [
            "6:39: error: invalid regex `a(b`: unclosed group",
            "8:39: error: invalid regex `a(b`: unclosed group",
            "9:51: error: unknown regex flag `q` (known: i, m, s, x, U; g, u, y, d are ignored)",
        ]
    );
}

#[test]
fn bad_globs() {
    let src = format!(
        "{CASE_HEAD}      - type: signal.not\n        pattern: \"error:x**\"\n      - type: signal.trajectory\n        patterns:\n          - \"\"\n          - {{pattern: \"a:**b\"}}\n"
    );
    assert_eq!(
        diagnostics(&src, Format::Yaml),
        [
            "7:18: error: invalid glob `error:x**` in `pattern`: `**` must be a whole segment (as in `tool:**`), found `x**`",
            "10:13: error: invalid glob `` in `pattern`: empty pattern",
            "11:23: error: invalid glob `a:**b` in `pattern`: `**` must be a whole segment (as in `tool:**`), found `**b`",
        ]
    );
}

#[test]
fn a_strict_trajectory_ignores_a_list_of_globs() {
    let src = format!(
        "{CASE_HEAD}      - type: signal.trajectory\n        strict: true\n        patterns: [agent:activated, agent:completed]\n        ignore: [\"text:delta\", \"state:x**\"]\n      - type: signal.trajectory\n        patterns: [a]\n        ignore: text:delta\n"
    );
    assert_eq!(
        diagnostics(&src, Format::Yaml),
        [
            "9:32: error: invalid glob `state:x**` in `ignore`: `**` must be a whole segment (as in `tool:**`), found `x**`",
            "12:17: error: `ignore` must be a list of signal-name globs, found a string",
        ]
    );
}

#[test]
fn snapshot_at_takes_an_occurrence() {
    let src = format!(
        "{CASE_HEAD}      - type: snapshot.at\n        afterSignal: phase:entered\n        occurrence: last\n        path: plan\n      - type: snapshot.at\n        afterSignal: phase:entered\n        occurrence: 0\n        path: plan\n"
    );
    assert_eq!(
        diagnostics(&src, Format::Yaml),
        [
            "12:21: error: `occurrence` must be `first`, `last` or a whole number from 1, found a number"
        ]
    );
}

#[test]
fn only_left_on() {
    let src = "name: t\ncases:\n  - id: a\n    only: true\n    input: 1\n    assertions: [{type: behavior.no_errors}]\n  - id: b\n    input: 1\n    skip: true\n    assertions: [{type: behavior.no_errors}]\n  - id: c\n    input: 1\n    assertions: [{type: behavior.no_errors}]\n";
    assert_eq!(
        diagnostics(src, Format::Yaml),
        [
            "4:5: warning: `only: true` on case `a`: every other case of the dataset is left out\n  = help: remove `only` before committing"
        ]
    );
    // It still loads, with the warning, and only `a` runs.
    let ds = load_str(src, Format::Yaml, "t").unwrap();
    assert_eq!(ds.warnings.len(), 1);
    assert_eq!(ds.warnings[0].kind, DiagnosticKind::OnlyLeftOn);
    assert_eq!(ds.warnings[0].severity, Severity::Warning);
    let run: Vec<&str> = ds.runnable_cases().map(|c| c.id.as_str()).collect();
    assert_eq!(run, ["a"]);
    let without_only = src.replace("    only: true\n", "");
    let ds = load_str(&without_only, Format::Yaml, "t").unwrap();
    let run: Vec<&str> = ds.runnable_cases().map(|c| c.id.as_str()).collect();
    assert_eq!(run, ["a", "c"]);
}

#[test]
fn wrong_types_paths_and_values() {
    let src = format!(
        "{CASE_HEAD}      - type: snapshot.final\n        path: \"files[x]\"\n      - type: metric.tokens.max\n        value: -1\n        field: inptu\n      - type: tool.called\n        name: Edit\n        min: many\n      - type: llm.judge\n        criteria: []\n        minScore: 2\n"
    );
    assert_eq!(
        diagnostics(&src, Format::Yaml),
        [
            "7:15: error: invalid path `files[x]`: expected an integer index or a quoted key inside `[...]` at character 6",
            "9:16: error: `value` must be a number >= 0, found a number",
            "10:16: error: `field` must be input, output or total, found `inptu`\n  = help: did you mean `input`?",
            "13:14: error: `min` must be a whole number >= 0, found a string",
            "15:19: error: `criteria` must not be empty",
            "16:19: error: `minScore` must be a number from 0 to 1, found a number",
        ]
    );
}

#[test]
fn matcher_lookalikes_warn() {
    let src = format!(
        "{CASE_HEAD}      - type: snapshot.final\n        path: a\n        value: {{startswith: x}}\n      - type: snapshot.final\n        path: a\n        value: {{gte: 1, name: x}}\n      - type: snapshot.final\n        path: a\n        value: {{between: [5, 1]}}\n"
    );
    assert_eq!(
        diagnostics(&src, Format::Yaml),
        [
            "8:17: warning: `startswith` is not a value matcher, so this expects a field named `startswith`\n  = help: did you mean `startsWith`?",
            "11:16: warning: this mapping mixes value matchers (gte) with other keys, so it is compared as a plain object\n  = help: put matchers in a mapping of their own",
            "14:26: error: `between: [5, 1]` has its bounds reversed",
        ]
    );
}

#[test]
fn syntax_errors_have_positions() {
    assert_eq!(
        diagnostics(
            "name: t\ncases:\n  - id: a\n    input: {x: 1\n",
            Format::Yaml
        ),
        ["4:12: error: unclosed bracket '{'"]
    );
    assert_eq!(
        diagnostics("name: t\ncases:\n  - id: a\n   bad: [\n", Format::Yaml),
        [
            "4:4: error: `bad` is indented 3 spaces, in line with nothing above it: expected 4, \
             to line up with `id` on line 3",
            "4:9: error: unclosed bracket '['"
        ]
    );
    assert_eq!(
        diagnostics("name: a\nname: b\ncases: []\n", Format::Yaml),
        ["2:1: error: duplicate mapping key: name"]
    );
    assert_eq!(
        diagnostics("", Format::Yaml),
        ["1:1: error: the dataset is empty: it needs `name` (or `id`) and `cases`"]
    );
    let v = validate_str("- a\n", Format::Yaml, "s.yaml");
    assert_eq!(v.diagnostics[0].kind, DiagnosticKind::WrongType);
    let d = diagnostics("{\n  \"name\": \"t\",\n  \"cases\": [,]\n}", Format::Json);
    assert_eq!(d, ["3:13: error: expected value"]);
    let d = diagnostics(
        "{\"name\": \"t\", \"name\": \"u\", \"cases\": []}",
        Format::Json,
    );
    assert_eq!(d, ["1:15: error: duplicate key `name`"]);
    let deep = format!("name: t\ncases: {}{}\n", "[".repeat(80), "]".repeat(80));
    assert_eq!(
        diagnostics(&deep, Format::Yaml),
        [
            "2:39: error: nesting deeper than 32 levels: expected at most 32 levels of lists and mappings"
        ]
    );
    let deep = format!(
        "{{\"name\": \"t\", \"cases\": {}{}}}",
        "[".repeat(80),
        "]".repeat(80)
    );
    assert_eq!(
        diagnostics(&deep, Format::Json),
        [
            "1:55: error: nesting deeper than 32 levels: expected at most 32 levels of lists and mappings"
        ]
    );
}

/// A YAML list nested `n` deep under `cases:`, in flow style.
fn flow_lists(n: usize) -> String {
    format!("name: t\ncases: {}{}\n", "[".repeat(n), "]".repeat(n))
}

/// A YAML mapping nested `n` deep under `cases:`, in flow style.
fn flow_maps(n: usize) -> String {
    format!("name: t\ncases: {}x{}\n", "{a: ".repeat(n), "}".repeat(n))
}

/// A YAML list nested `n` deep under `cases:`, in block style (`- - - x`).
fn block_lists(n: usize) -> String {
    format!("name: t\ncases:\n{}x\n", "- ".repeat(n))
}

/// A YAML mapping nested `n` deep under `cases:`, in block style.
fn block_maps(n: usize) -> String {
    let mut y = String::from("name: t\ncases:\n");
    for i in 0..n {
        y.push_str(&" ".repeat(i + 1));
        y.push_str("a:\n");
    }
    y
}

/// A JSON list nested `n` deep under `cases`.
fn json_lists(n: usize) -> String {
    format!(
        "{{\"name\": \"t\", \"cases\": {}{}}}",
        "[".repeat(n),
        "]".repeat(n)
    )
}

/// Every depth past the limit is refused with the same message at the same
/// place (the first level too deep), however the nesting is written: the
/// readers' own limits (255 nested `[` in YAML, 128 in JSON) never show.
#[test]
fn nesting_past_the_limit_is_refused_in_words_at_any_depth() {
    let too_deep =
        "error: nesting deeper than 32 levels: expected at most 32 levels of lists and mappings";
    // Each form: its name, how it is written, its format, where the first
    // level too deep is, and the deepest it is tried at.
    type Form = (
        &'static str,
        fn(usize) -> String,
        Format,
        &'static str,
        usize,
    );
    let forms: [Form; 5] = [
        ("flow lists", flow_lists, Format::Yaml, "2:39", 100_000),
        ("flow maps", flow_maps, Format::Yaml, "2:132", 100_000),
        ("block lists", block_lists, Format::Yaml, "3:63", 100_000),
        ("block maps", block_maps, Format::Yaml, "34:33", 1_000),
        ("json lists", json_lists, Format::Json, "1:55", 100_000),
    ];
    for (form, build, format, at, deepest) in forms {
        // The root mapping is one level, so 31 more fit and 32 do not.
        let fits = diagnostics(&build(31), format);
        assert!(
            !fits.iter().any(|d| d.contains("nesting")),
            "{form} 31: {fits:?}"
        );
        for n in [32, 33, 128, 129, 254, 255, 256, 257, 1_000, deepest] {
            if n > deepest {
                continue;
            }
            let d = diagnostics(&build(n), format);
            assert_eq!(d, [format!("{at}: {too_deep}")], "{form} {n}");
        }
    }
}

/// A line indented to no level of the lines above is named, with the line
/// it should line up with, and the file is read as if it did (so its other
/// errors show too).
#[test]
fn a_yaml_indentation_error_says_what_to_line_up_with_and_hides_nothing() {
    let src = "\
name: t
cases:
  - id: a
    input: {}
   assertions:
      - type: signal.contans
        pattern: x
  - id: b
    input: {}
    assertions:
      - type: output.contains
         text: hi
";
    assert_eq!(
        diagnostics(src, Format::Yaml),
        [
            "5:4: error: `assertions` is indented 3 spaces, in line with nothing above it: \
             expected 4, to line up with `input` on line 4",
            "6:15: error: unknown assertion type `signal.contans`\n  = help: did you mean \
             `signal.contains`?",
            "12:10: error: `text` is indented 9 spaces, in line with nothing above it: \
             expected 8, to line up with `type` on line 11",
        ]
    );
    // A list item out of line: the `-` lines up with the `-` above, and
    // the lines under it stay where they are.
    let src = "\
name: t
cases:
  - id: a
    input: {}
    assertions: []
 - id: b
    input: {}
    assertions: []
";
    assert_eq!(
        diagnostics(src, Format::Yaml),
        [
            "3:5: warning: case `a` has no assertions (and the dataset has no \
             defaultAssertions): it checks nothing",
            "6:2: error: `-` is indented 1 space, in line with nothing above it: expected 2, \
             to line up with the `-` on line 3",
            "6:4: warning: case `b` has no assertions (and the dataset has no \
             defaultAssertions): it checks nothing",
        ]
    );
    // A key in line with a list's `-`, and one under a key that has a
    // value already.
    assert_eq!(
        diagnostics(
            "name: t\ncases:\n  - id: a\n  input: {}\n    assertions: []\n",
            Format::Yaml
        ),
        [
            "3:5: warning: case `a` has no assertions (and the dataset has no \
             defaultAssertions): it checks nothing",
            "4:3: error: `input` is indented 2 spaces, in line with the `-` on line 3: \
             expected 4, to line up with `id` on line 3",
        ]
    );
    assert_eq!(
        diagnostics("name: t\n  cases: []\n", Format::Yaml),
        [
            "2:3: error: `cases` is indented 2 spaces, in line with nothing above it: \
             expected 0, to line up with `name` on line 1",
            "2:10: error: the dataset has no cases",
        ]
    );
}

// -------------------------------------------------- load lists every error

#[test]
fn load_fails_with_every_error_listed() {
    let path = fixture("invalid.yaml");
    let err = load(&path).unwrap_err();
    assert!(matches!(err, DatasetError::Invalid { .. }));
    let expected = [
        "invalid dataset {f}: 9 errors, 2 warnings",
        "{f}:3:11: error: unknown assertion type `signal.contans`",
        "  = help: did you mean `signal.contains`?",
        "{f}:10:16: error: invalid regex `unclosed(`: unclosed group",
        "{f}:12:18: error: invalid glob `tool:a**` in `pattern`: `**` must be a whole segment (as in `tool:**`), found `a**`",
        "{f}:13:14: error: `min` (3) is greater than `max` (1)",
        "{f}:15:9: error: duplicate case id `first` (first used at 6:9)",
        "{f}:16:5: warning: `only: true` on case `first`: every other case of the dataset is left out",
        "  = help: remove `only` before committing",
        "{f}:19:9: error: missing required field `name` in tool.called assertion",
        "{f}:22:15: error: invalid path `plan..steps`: expected a key after `.` at character 5",
        "{f}:23:17: warning: `startswith` is not a value matcher, so this expects a field named `startswith`",
        "  = help: did you mean `startsWith`?",
        "{f}:24:5: error: missing required field `assertions` in case `third`",
        "{f}:26:5: error: unknown field `asertions` in case",
        "  = help: did you mean `assertions`?",
    ]
    .join("\n")
    .replace("{f}", &path);
    assert_eq!(err.to_string(), expected);
    assert_eq!(err.diagnostics().len(), 11);
    // validate() gives the same list without failing.
    let v = validate(&path).unwrap();
    assert_eq!(v.errors().count(), 9);
    assert_eq!(v.warnings().count(), 2);
    assert!(!v.is_ok());
}

#[test]
fn json_errors_are_placed_too() {
    let path = fixture("invalid.json");
    let err = load(&path).unwrap_err();
    let expected = [
        "invalid dataset {f}: 5 errors, 1 warning",
        "{f}:8:9: error: missing required field `nodeId` in behavior.node_executed assertion",
        "{f}:8:45: error: unknown field `node` in behavior.node_executed assertion",
        "  = help: did you mean `nodeId`?",
        "{f}:9:53: error: `value` must be a number >= 0, found a string",
        "{f}:10:46: error: invalid path `outputs[x]`: expected an integer index or a quoted key inside `[...]` at character 8",
        "{f}:13:5: warning: case `a` has no assertions (and the dataset has no defaultAssertions): it checks nothing",
        "{f}:13:13: error: duplicate case id `a` (first used at 5:13)",
    ]
    .join("\n")
    .replace("{f}", &path);
    assert_eq!(err.to_string(), expected);
}

/// A comma after the last item or entry is named as what it is, where it
/// is, and the rest of the file is still checked.
#[test]
fn a_json_trailing_comma_is_named_and_the_other_errors_still_shown() {
    let src = "{\n  \"name\": \"t\",\n  \"cases\": [\n    {\"id\": \"a\", \"input\": {}, \
               \"assertions\": [{\"type\": \"signal.contans\", \"pattern\": \"x\"},]},\n  ],\n}\n";
    let list = "trailing comma before `]`: expected another item after it, or no comma after \
                the last item";
    let map = "trailing comma before `}`: expected another `\"key\": value` after it, or no \
               comma after the last entry";
    assert_eq!(
        diagnostics(src, Format::Json),
        [
            "4:54: error: unknown assertion type `signal.contans`\n  = help: did you mean \
             `signal.contains`?"
                .to_string(),
            format!("4:87: error: {list}"),
            format!("4:90: error: {list}"),
            format!("5:4: error: {map}"),
        ]
    );
    // Another syntax error after a trailing comma is reported too.
    assert_eq!(
        diagnostics(
            "{\"name\": \"t\", \"cases\": [1,], \"x\": [1 2]}",
            Format::Json
        ),
        [
            format!("1:26: error: {list}"),
            "1:38: error: expected `,` or `]`".to_string(),
        ]
    );
}

#[test]
fn io_errors_name_the_file() {
    let err = load("no/such/dataset.yaml").unwrap_err();
    assert!(matches!(err, DatasetError::Io { .. }));
    assert!(
        err.to_string()
            .starts_with("cannot read dataset no/such/dataset.yaml: "),
        "{err}"
    );
}

#[test]
fn defaults_merge_and_timeouts_fall_back() {
    let src = "name: t\ndefaultTimeout: 5000\nmetadata: {owner: qa}\ndefaultAssertions:\n  - type: signal.not\n    pattern: \"error:*\"\ncases:\n  - id: a\n    input: 1\n    assertions:\n      - type: output.contains\n        text: x\n  - id: b\n    timeout: 9000\n    input: 2\n    assertions: []\n";
    let ds = load_str(src, Format::Yaml, "t").unwrap();
    assert_eq!(ds.default_timeout_ms, Some(5000));
    assert_eq!(ds.metadata["owner"], "qa");
    assert_eq!(ds.cases[0].timeout_ms, Some(5000));
    assert_eq!(ds.cases[1].timeout_ms, Some(9000));
    assert_eq!(ds.cases[0].assertions().len(), 2);
    let first = ds.cases[0].assertions().next().map(Assertion::type_name);
    assert_eq!(first, Some("signal.not"));
    assert_eq!(ds.cases[1].assertions().len(), 1);
    assert!(ds.warnings.is_empty(), "defaults count as assertions");
}

#[test]
fn every_assertion_type_loads_from_yaml() {
    let src = r#"
name: all types
cases:
  - id: everything
    input: {}
    assertions:
      - {type: signal.contains, pattern: "agent:*", payload: {agent: x}}
      - {type: signal.not, pattern: "error:**"}
      - {type: signal.count, pattern: "tool:call", min: 1, max: 3}
      - {type: signal.trajectory, strict: true, patterns: [a, {pattern: b, payload: {k: 1}}]}
      - {type: signal.first, pattern: "agent:activated", payload: {agent: p}}
      - {type: signal.last, pattern: "agent:activated"}
      - {type: snapshot.at, afterSignal: "plan:complete", path: "plan.steps[0]", exists: true}
      - {type: snapshot.final, path: 'files["a.b"]', value: {matches: "^x"}}
      - {type: agent.activated, agentId: a, count: 2}
      - {type: agent.completed, agentId: a}
      - {type: agent.causedBy, agentId: a, triggerPattern: "review:*"}
      - {type: agent.emitted, agentId: a, signal: "review:complete"}
      - {type: agent.skipped, agentId: a, reason: guard}
      - {type: metric.latency.max, value: 1}
      - {type: metric.latency.min, value: 1}
      - {type: metric.cost.max, value: 0.1}
      - {type: metric.cost.min, value: 0}
      - {type: metric.tokens.max, value: 10, field: output}
      - {type: metric.tokens.min, value: 10}
      - {type: metric.activations, exact: 4}
      - {type: output.contains, text: a, caseSensitive: false, path: x}
      - {type: output.notContains, text: a}
      - {type: output.matches, regex: "a|b", flags: im}
      - {type: output.json, schema: {type: object, required: [a]}}
      - {type: output.length, min: 1, max: 10}
      - {type: output.equals, value: {a: [1, 2]}, path: "r"}
      - {type: tool.called, name: Edit, min: 1}
      - {type: tool.notCalled, name: Bash}
      - {type: tool.calledWith, name: Write, args: {file_path: {endsWith: ".ts"}}}
      - {type: tool.sequence, tools: [Read, Edit]}
      - {type: llm.judge, criteria: [clear], rubric: r, minScore: 0.7, model: m, temperature: 0}
      - {type: all, assertions: [{type: behavior.no_errors}]}
      - {type: any, assertions: [{type: behavior.no_errors}]}
      - {type: not, assertion: {type: tool.called, name: rm}}
"#;
    let ds = load_str(src, Format::Yaml, "all.yaml").unwrap_or_else(|e| panic!("{e}"));
    assert!(ds.warnings.is_empty(), "{:?}", ds.warnings);
    let types: Vec<&str> = ds.cases[0].assertions().map(Assertion::type_name).collect();
    assert_eq!(types, Assertion::TYPES);
}

// ------------------------------------------------------------- robustness

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn loading_never_panics(src in "\\PC{0,200}") {
        let _ = load_str(&src, Format::Yaml, "p.yaml");
        let _ = load_str(&src, Format::Json, "p.json");
    }

    #[test]
    fn mangled_seed_files_never_panic(cut in 0usize..7391, junk in "[\\[\\]{}:,\"'\\- a-z\n]{0,8}") {
        let src = std::fs::read_to_string(fixture("code-review-agent.yaml")).unwrap();
        let mut cut = cut.min(src.len());
        while !src.is_char_boundary(cut) {
            cut -= 1;
        }
        let mangled = format!("{}{}{}", &src[..cut], junk, &src[cut..]);
        let _ = load_str(&mangled, Format::Yaml, "m.yaml");
    }
}

// ------------------------------------------------------- size and encoding

/// A fresh directory of this test process, `name` telling the tests apart.
fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("scaffold-datasets-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A generated YAML dataset of `cases` cases × 4 assertions (about 730
/// bytes a case).
fn big_yaml(cases: usize) -> String {
    use std::fmt::Write;
    let mut y = String::from("name: big\ndescription: a generated dataset\ncases:\n");
    for i in 0..cases {
        let _ = write!(
            y,
            "  - id: case-{i:05}\n    name: Case number {i}\n    description: Checks that \
             the reviewer flags the problem planted in snippet {i}\n    tags: [generated, \
             review]\n    input:\n      task: Review this change and list every problem in \
             it\n      code: \"fn handler_{i}(id: &str) {{ db.query(format!(\\\"SELECT * \
             FROM t WHERE id = {{id}}\\\")) }}\"\n    assertions:\n      - type: \
             output.contains\n        text: injection\n        caseSensitive: false\n      - \
             type: output.matches\n        regex: \"sql injection\"\n      - type: \
             signal.contains\n        pattern: \"review:finding:*\"\n      - type: \
             output.notContains\n        text: looks good to me\n"
        );
    }
    y
}

#[test]
fn a_10_mb_yaml_dataset_loads() {
    let cases = 17_000;
    let src = big_yaml(cases);
    assert!(src.len() >= 10_000_000, "{} bytes", src.len());
    let started = std::time::Instant::now();
    let ds = load_str(&src, Format::Yaml, "big.yaml").unwrap_or_else(|e| {
        panic!("{}", e.to_string().chars().take(500).collect::<String>());
    });
    println!("{} bytes loaded in {:?}", src.len(), started.elapsed());
    assert_eq!(ds.cases.len(), cases);
    assert_eq!(ds.cases[cases - 1].id, format!("case-{:05}", cases - 1));
    assert!(ds.cases.iter().all(|c| c.assertions().len() == 4));
}

/// Nine levels of ten aliases: 10⁹ values from 400 bytes.
const BILLION_LAUGHS: &str = "\
name: lol
a: &a [x, x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
cases: []
";

#[test]
fn a_billion_laughs_is_refused_at_once_and_in_words() {
    let path = temp_dir("lol").join("lol.yaml");
    std::fs::write(&path, BILLION_LAUGHS).expect("write");
    let started = std::time::Instant::now();
    let err = load(&path).unwrap_err();
    let elapsed = started.elapsed();
    // Refused before expanding: 10^9 values would take minutes and
    // gigabytes. A bound far above the milliseconds it takes, so a loaded
    // machine cannot fail it; the error below says the guard fired.
    assert!(elapsed < std::time::Duration::from_secs(10), "{elapsed:?}");
    let f = path.display().to_string();
    let bytes = BILLION_LAUGHS.len();
    // At the alias that breaks the budget: the 10th `*c` of line 5.
    assert_eq!(
        err.to_string(),
        format!(
            "invalid dataset {f}: 1 error\n{f}:5:44: error: with 30 aliases (`*name`) expanded, \
             the file holds more than {n} values: expected at most {n} in a file of {bytes} \
             bytes (an alias counts the values of its anchor each time it is used)",
            n = 10_000 + 4 * bytes
        )
    );
    assert!(!err.to_string().contains("Nodes {"), "{err}");
}

/// The peak memory of this process so far, in MiB (0 where unknown).
fn peak_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kib| kib / 1024)
}

/// Padding makes a file's budget the largest there is (20 million values):
/// a billion laughs after 5 MB of comments is still refused before a value
/// is built, at the alias that breaks the budget, in words.
#[test]
fn a_billion_laughs_padded_with_comments_is_refused_before_it_expands() {
    let comment = "# a comment of the padding, seventy-five bytes long, to raise the budget.\n";
    let lines = 5_000_000 / comment.len() + 1;
    let src = format!("{}{BILLION_LAUGHS}", comment.repeat(lines));
    let (bytes, before) = (src.len(), peak_mib());
    let started = std::time::Instant::now();
    let v = validate_str(&src, Format::Yaml, "t");
    println!(
        "{bytes} bytes refused in {:?}; peak memory {before} MiB before, {} MiB after",
        started.elapsed(),
        peak_mib()
    );
    // 12 million values once `g` is expanded, and its first use in `h`
    // takes the file past 20 million.
    let line = lines + 9;
    assert_eq!(
        v.to_string(),
        format!(
            "t:{line}:8: error: with 61 aliases (`*name`) expanded, the file holds more than \
             20000000 values: expected at most 20000000 in a file of {bytes} bytes (an alias \
             counts the values of its anchor each time it is used)\n"
        )
    );
}

/// A dataset of `lines` lines whose line `lines - 6` uses the anchor of the
/// line before it `uses` times; the anchor is a list of `values` values.
fn anchor_used_late(lines: usize, values: usize, uses: usize) -> String {
    let mut y = String::from(
        "name: t\ncases:\n  - id: a\n    input: {}\n    assertions: [{type: signal.not, \
         pattern: x}]\nmetadata:\n",
    );
    for i in 0..lines - 14 {
        y.push_str(&format!("  k{i}: v\n"));
    }
    y.push_str(&format!("  one: &one [{}]\n", vec!["x"; values].join(", ")));
    y.push_str(&format!("  uses: [{}]\n", vec!["*one"; uses].join(", ")));
    for i in 0..6 {
        y.push_str(&format!("  t{i}: v\n"));
    }
    y
}

/// An anchor may be used as often as the budget allows (the reader's own
/// "ten uses of an anchor" is not a rule of datasets, and it was reported
/// past the end of the file); an alias past the budget is reported where
/// it is.
#[test]
fn aliases_are_limited_by_the_budget_alone_and_placed_in_the_file() {
    let src = anchor_used_late(3_850, 1, 101);
    assert_eq!(src.lines().count(), 3_850);
    let ds = load_str(&src, Format::Yaml, "t").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ds.metadata["uses"].as_array().map(Vec::len), Some(101));

    // 200 uses of 2,000 values: 400,000 values, ten times the budget.
    let src = anchor_used_late(3_850, 2_000, 200);
    let budget = 10_000 + 4 * src.len();
    assert!(400_000 > budget, "{budget}");
    let v = validate_str(&src, Format::Yaml, "t");
    assert_eq!(v.diagnostics.len(), 1, "{v}");
    let d = &v.diagnostics[0];
    assert_eq!(d.line, 3_844, "{v}");
    let line = src.lines().nth(3_843).expect("line 3844");
    let at: String = line.chars().skip(d.column as usize - 1).take(4).collect();
    assert_eq!(at, "*one", "{v}");
    assert!(
        d.message.starts_with("with ") && d.message.contains(&format!("more than {budget} values")),
        "{v}"
    );
}

/// The reader keeps a copy of each anchor's values for its aliases to
/// repeat, one more for each anchor around them: what anchors hold has the
/// budget's limit too, in words, at the alias that passes it.
#[test]
fn anchors_holding_more_than_the_budget_are_refused_in_words() {
    let src = format!(
        "name: t\ncases: []\na: &a [{}]\nc: &c [&d [&e [{}]]]\n",
        vec!["x"; 1_000].join(", "),
        ["*a"; 10].join(", ")
    );
    let (bytes, budget) = (src.len(), 10_000 + 4 * src.len());
    // 11,000 values, held three times over by `c`, `d` and `e`.
    assert!(11_100 < budget && 3 * 10_010 > budget, "{budget}");
    let v = validate_str(&src, Format::Yaml, "t");
    assert_eq!(v.diagnostics.len(), 1, "{v}");
    let d = &v.diagnostics[0];
    assert_eq!(
        d.message,
        format!(
            "anchors (`&name`) hold more than {budget} values, with the aliases in them expanded \
             and an anchor inside another counted again: expected at most {budget} in a file of \
             {bytes} bytes"
        )
    );
    let line = src.lines().nth(d.line as usize - 1).expect("the line");
    let at: String = line.chars().skip(d.column as usize - 1).take(2).collect();
    assert_eq!((d.line, at.as_str()), (4, "*a"), "{v}");
}

#[test]
fn a_file_that_is_not_utf8_is_placed_at_its_first_bad_byte() {
    let dir = temp_dir("utf8");
    let path = dir.join("latin1.yaml");
    std::fs::write(&path, b"name: t\ncases:\n  - id: caf\xe9\n    input: {}\n").expect("write");
    let f = path.display().to_string();
    let expected = format!(
        "{f}:3:12: error: byte 0xE9 is not UTF-8: expected UTF-8 text\n  = help: save the file as UTF-8"
    );
    let v = validate(&path).expect("readable");
    assert_eq!(v.to_string(), format!("{expected}\n"));
    assert_eq!(v.diagnostics[0].kind, DiagnosticKind::Syntax);
    let err = load(&path).unwrap_err();
    assert!(matches!(err, DatasetError::Invalid { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("invalid dataset {f}: 1 error\n{expected}")
    );
    // Characters, not bytes, before the bad one: `é` is one column.
    let path = dir.join("mixed.json");
    let mut bytes = b"{\"name\": \"\xc3\xa9".to_vec();
    bytes.extend_from_slice(b"\xff\"}");
    std::fs::write(&path, bytes).expect("write");
    let v = validate(&path).expect("readable");
    assert_eq!((v.diagnostics[0].line, v.diagnostics[0].column), (1, 12));
}

#[test]
fn a_tab_error_points_at_the_tab() {
    assert_eq!(
        diagnostics("name: t\ncases:\n\t- id: a\n", Format::Yaml),
        ["3:1: error: tabs disallowed within this context (block indentation)"]
    );
    assert_eq!(
        diagnostics(
            "name: t\ncases:\n  - id: a\n    input:\n  \tx: 1\n",
            Format::Yaml
        ),
        ["5:3: error: tabs disallowed within this context (block indentation)"]
    );
}

// ------------------------------------------------------- the guides' YAML

/// The ```yaml blocks of the guide `docs/{page}`, each without the
/// indentation of its fence (blocks in list items are indented).
fn guide_yaml(page: &str) -> Vec<String> {
    let path = format!("{}/../docs/{page}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let indent = line.len() - line.trim_start().len();
        if line.trim_start() != "```yaml" {
            continue;
        }
        let block: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.trim_start().starts_with("```"))
            .map(|l| l.get(indent..).unwrap_or(l.trim_start()))
            .collect();
        blocks.push(block.join("\n") + "\n");
    }
    blocks
}

/// `block` loaded as what it shows: a whole dataset (it has `cases:`), a
/// case's assertions (a list), or a quarantine file (a mapping of evals to
/// cell patterns). Any error or warning is an `Err`.
fn check_guide_yaml(block: &str) -> Result<&'static str, String> {
    let starts_list = block
        .lines()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .is_some_and(|l| l.starts_with("- "));
    if block.lines().any(|l| l.starts_with("cases:")) {
        check_dataset_yaml(block).map(|()| "dataset")
    } else if starts_list {
        let indented: String = block.lines().map(|l| format!("      {l}\n")).collect();
        let dataset = format!(
            "name: guide\ncases:\n  - id: guide\n    input: {{}}\n    assertions:\n{indented}"
        );
        check_dataset_yaml(&dataset).map(|()| "assertions")
    } else {
        check_quarantine_yaml(block).map(|()| "quarantine")
    }
}

fn check_dataset_yaml(src: &str) -> Result<(), String> {
    let found = diagnostics(src, Format::Yaml);
    if !found.is_empty() {
        return Err(format!("{}\nin:\n{src}", found.join("\n")));
    }
    let dataset = load_str(src, Format::Yaml, "guide.yaml").map_err(|e| e.to_string())?;
    match dataset
        .cases
        .iter()
        .all(|c| c.assertions().next().is_some())
    {
        true => Ok(()),
        false => Err(format!("a case checks nothing in:\n{src}")),
    }
}

fn check_quarantine_yaml(src: &str) -> Result<(), String> {
    let dir = temp_dir("quarantine");
    let hash = std::hash::BuildHasher::hash_one(&std::hash::RandomState::new(), src);
    let path = dir.join(format!("{hash:x}.yaml"));
    std::fs::write(&path, src).map_err(|e| e.to_string())?;
    let loaded = scaffold::_cargo_scaffold_support::eval::gate::load_quarantine(&path)
        .map_err(|e| e.to_string());
    let _ = std::fs::remove_file(&path);
    let quarantine = loaded?;
    match quarantine.values().any(|patterns| !patterns.is_empty()) {
        true => Ok(()),
        false => Err(format!("no cell pattern in:\n{src}")),
    }
}

#[test]
fn the_guides_yaml_examples_load() {
    let mut kinds = Vec::new();
    for page in ["datasets.md", "statistics.md"] {
        for block in guide_yaml(page) {
            let kind = check_guide_yaml(&block).unwrap_or_else(|e| panic!("docs/{page}: {e}"));
            kinds.push((page, kind));
        }
    }
    assert_eq!(
        kinds,
        [
            ("datasets.md", "dataset"),
            ("datasets.md", "assertions"),
            ("statistics.md", "quarantine"),
        ]
    );
}

#[test]
fn the_guides_yaml_check_refuses_a_broken_example() {
    let typo = check_guide_yaml("- type: signal.contans\n  pattern: x\n").unwrap_err();
    assert!(typo.contains("did you mean `signal.contains`"), "{typo}");
    let no_cases = check_guide_yaml("name: x\ncases: []\n").unwrap_err();
    assert!(no_cases.contains("error"), "{no_cases}");
    let not_patterns = check_guide_yaml("code-review: 3\n").unwrap_err();
    assert!(not_patterns.contains("not a mapping"), "{not_patterns}");
}

/// An assertion as it serializes (its `type` and fields), `null` for none.
fn json_of(a: Option<&Assertion>) -> Value {
    a.map(|a| serde_json::to_value(a).expect("an assertion serializes"))
        .unwrap_or(Value::Null)
}
