//! `SCAFFOLD_FAKE`: record a suite from a fake model API whose answers are
//! rules in a YAML file, served by the harness itself.
//!
//! ```yaml
//! # evals/fake.yaml
//! rules:
//!   - when: { prompt_contains: Ada }
//!     then: { text: "Hello, Ada! Welcome." }
//!   - when: { model: gpt-4o, tool_result_contains: sunny }
//!     then: { text: It is sunny., usage: { input: 120, output: 8 } }
//!   - then: { tool_call: { name: get_weather, arguments: { city: Paris } } }
//! ```
//!
//! The vocabulary is [`FakeProvider`](crate::testing::FakeProvider)'s: a
//! rule's `when` holds `api`, `model`, `system_contains`, `prompt_contains`
//! and `tool_result_contains` (each `*_contains` a text or a list of texts,
//! all of which must be found), its `then` one of `text`, `structured`,
//! `tool_call` or `tool_calls`, with `usage`, `id` and `model` optional. The
//! first rule that matches answers. `timing: realistic` (the default) states
//! seeded, realistic latencies per model that record mode records;
//! `timing: measured` records the fake's own few milliseconds.
//!
//! With `SCAFFOLD_MODE=record` (or `live`), every provider call of the run
//! goes to that fake server instead of the API: no key, no cost, and the
//! recordings still name the API's own URL, so playback is unchanged. It is
//! the same test binary as playback's, so switching between the two never
//! rebuilds anything.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::dataset::node::{self, Key, Kind, Node, Pos};
use crate::dataset::{Diagnostic, DiagnosticKind, Severity, Validator, suggest};
use crate::provider::CallContext;
use crate::provider::http::ReqwestTransport;
use crate::provider::recorder::{MODE_ENV, RecorderMode, split_url};
use crate::provider::transport::{HttpRequest, HttpResponse, Transport, TransportError};
use crate::testing::{Answer, Api, FakeProvider, FakeProviderServer, Rule, SimulatedTiming, When};

/// Environment variable: the YAML file of fake-provider rules that answer
/// the run's provider calls in record and live modes.
pub const FAKE_ENV: &str = "SCAFFOLD_FAKE";

const TOP_FIELDS: &[&str] = &["rules", "timing"];
const RULE_FIELDS: &[&str] = &["when", "then"];
const WHEN_FIELDS: &[&str] = &[
    "api",
    "model",
    "system_contains",
    "prompt_contains",
    "tool_result_contains",
];
const REPLIES: &[&str] = &["text", "structured", "tool_call", "tool_calls"];
const THEN_FIELDS: &[&str] = &[
    "text",
    "structured",
    "tool_call",
    "tool_calls",
    "usage",
    "id",
    "model",
];
const APIS: &[&str] = &["openai", "anthropic", "responses"];
const TIMINGS: &[&str] = &["realistic", "measured"];

/// The rules of a `SCAFFOLD_FAKE` file, ready to serve.
#[derive(Debug, Clone)]
pub(crate) struct FakeRules {
    /// The file, as the user named it.
    pub(crate) file: String,
    rules: Vec<Rule>,
    timing: Option<SimulatedTiming>,
}

impl FakeRules {
    /// The rules `SCAFFOLD_FAKE` names, if it is set; an error in playback,
    /// which no fake answers.
    pub(crate) fn from_env(
        manifest_dir: &Path,
        mode: RecorderMode,
    ) -> Result<Option<FakeRules>, String> {
        let Some(raw) = super::settings::var(FAKE_ENV)? else {
            return Ok(None);
        };
        if mode == RecorderMode::Playback {
            return Err(format!(
                "{FAKE_ENV} is set, but {MODE_ENV} is `playback`: its rules answer record and live \
                 runs only (`{MODE_ENV}=record {FAKE_ENV}={raw} cargo test …` records from them); \
                 unset {FAKE_ENV} to play back"
            ));
        }
        FakeRules::read(manifest_dir, &raw).map(Some)
    }

    /// Read `raw` (relative to the package's directory): every mistake of
    /// the file at once, each as `file:line:column: error: …`.
    pub(crate) fn read(manifest_dir: &Path, raw: &str) -> Result<FakeRules, String> {
        let path = PathBuf::from(raw);
        let path = if path.is_absolute() {
            path
        } else {
            manifest_dir.join(path)
        };
        let src = std::fs::read_to_string(&path)
            .map_err(|e| format!("{FAKE_ENV}: cannot read {}: {e}", path.display()))?;
        FakeRules::parse(&src, raw)
    }

    /// Parse the text of a rules file named `file`.
    pub(crate) fn parse(src: &str, file: &str) -> Result<FakeRules, String> {
        let mut reader = Reader {
            found: Validator::new(file),
        };
        let parsed = match node::parse_yaml(src) {
            Ok(root) => reader.top(&root),
            Err(e) => {
                reader.error(e.pos, e.message, None);
                None
            }
        };
        match parsed {
            Some((rules, timing)) if reader.found.diagnostics.is_empty() => Ok(FakeRules {
                file: file.to_string(),
                rules,
                timing,
            }),
            _ => Err(render(file, &reader.found.diagnostics)),
        }
    }

    /// How many rules there are.
    pub(crate) fn len(&self) -> usize {
        self.rules.len()
    }

    /// Start serving the rules on `127.0.0.1` (on the current runtime).
    pub(crate) async fn serve(&self) -> std::io::Result<FakeProviderServer> {
        let builder = FakeProvider::builder().rules(self.rules.iter().cloned());
        match &self.timing {
            Some(timing) => builder.simulated_timing(timing.clone()).start().await,
            None => builder.start().await,
        }
    }
}

fn render(file: &str, diagnostics: &[Diagnostic]) -> String {
    let mut out = format!(
        "{FAKE_ENV}: invalid fake-provider rules {file}: {} error{}",
        diagnostics.len(),
        if diagnostics.len() == 1 { "" } else { "s" }
    );
    for d in diagnostics {
        out.push('\n');
        out.push_str(&d.to_string());
    }
    out
}

/// Reads the node tree of a rules file, collecting every mistake.
struct Reader<'f> {
    found: Validator<'f>,
}

fn entries(node: &Node) -> &[(Key, Node)] {
    match &node.kind {
        Kind::Map(entries) => entries,
        _ => &[],
    }
}

impl Reader<'_> {
    fn error(&mut self, pos: Pos, message: String, help: Option<String>) {
        let kind = match message.as_str() {
            m if m.starts_with("unknown field") => DiagnosticKind::UnknownField,
            m if m.starts_with("missing") => DiagnosticKind::MissingField,
            m if m.starts_with("expected") => DiagnosticKind::WrongType,
            _ => DiagnosticKind::BadValue,
        };
        self.found.push(Severity::Error, kind, pos, message, help);
    }

    /// `node` as a mapping whose keys are all in `known`, else an error.
    fn mapping<'n>(&mut self, node: &'n Node, what: &str, known: &[&str]) -> Option<&'n Node> {
        if !matches!(node.kind, Kind::Map(_)) {
            let message = format!("expected a mapping for {what}, found {}", node.describe());
            self.error(node.pos, message, None);
            return None;
        }
        for (key, _) in entries(node) {
            if !known.contains(&&*key.name) {
                let help = suggest(&key.name, known)
                    .map(|s| format!("did you mean `{s}`?"))
                    .unwrap_or_else(|| format!("expected one of: {}", known.join(", ")));
                let message = format!("unknown field `{}` in {what}", key.name);
                self.error(key.pos, message, Some(help));
            }
        }
        Some(node)
    }

    fn string(&mut self, node: &Node, field: &str) -> Option<String> {
        match &node.kind {
            Kind::Str(s) => Some(s.to_string()),
            _ => {
                let message = format!("expected a string for `{field}`, found {}", node.describe());
                self.error(node.pos, message, None);
                None
            }
        }
    }

    /// One of `allowed`, written as a string.
    fn choice(
        &mut self,
        node: &Node,
        field: &str,
        allowed: &[&'static str],
    ) -> Option<&'static str> {
        let text = self.string(node, field)?;
        let found = allowed.iter().find(|a| a.eq_ignore_ascii_case(&text));
        if found.is_none() {
            let message = format!(
                "`{field}` is `{text}`: expected one of {}",
                allowed.join(", ")
            );
            self.error(node.pos, message, None);
        }
        found.copied()
    }

    /// A string, or a list of strings.
    fn texts(&mut self, node: &Node, field: &str) -> Vec<String> {
        match &node.kind {
            Kind::Str(s) => vec![s.to_string()],
            Kind::Seq(items) => items.iter().filter_map(|i| self.string(i, field)).collect(),
            _ => {
                let message = format!(
                    "expected a string or a list of strings for `{field}`, found {}",
                    node.describe()
                );
                self.error(node.pos, message, None);
                Vec::new()
            }
        }
    }

    fn count(&mut self, node: Option<(&Key, &Node)>, field: &str, at: Pos) -> Option<u64> {
        let Some((_, node)) = node else {
            self.error(at, format!("missing `{field}` in `usage`"), None);
            return None;
        };
        let value = node.to_value().as_u64();
        if value.is_none() {
            let message = format!(
                "expected a whole number of tokens for `{field}`, found {}",
                node.describe()
            );
            self.error(node.pos, message, None);
        }
        value
    }

    fn top(&mut self, root: &Node) -> Option<(Vec<Rule>, Option<SimulatedTiming>)> {
        let root = self.mapping(root, "the rules file", TOP_FIELDS)?;
        let timing = match root.get("timing") {
            None => Some(SimulatedTiming::realistic()),
            Some((_, node)) => match self.choice(node, "timing", TIMINGS) {
                Some("measured") => None,
                _ => Some(SimulatedTiming::realistic()),
            },
        };
        let Some((_, rules)) = root.get("rules") else {
            let help = "a list of rules, each `when:` (optional) and `then:`".to_string();
            self.error(root.pos, "missing field `rules`".into(), Some(help));
            return None;
        };
        let Kind::Seq(items) = &rules.kind else {
            let message = format!("expected a list of rules, found {}", rules.describe());
            self.error(rules.pos, message, None);
            return None;
        };
        if items.is_empty() {
            self.error(
                rules.pos,
                "`rules` is empty: nothing would answer".into(),
                None,
            );
        }
        let rules = items.iter().filter_map(|r| self.rule(r)).collect();
        Some((rules, timing))
    }

    fn rule(&mut self, node: &Node) -> Option<Rule> {
        let node = self.mapping(node, "a rule", RULE_FIELDS)?;
        let when = match node.get("when") {
            Some((_, when)) => self.when(when),
            None => Some(Rule::when()),
        };
        let Some((_, then)) = node.get("then") else {
            let help = format!("one of: {}", REPLIES.join(", "));
            self.error(
                node.pos,
                "missing field `then` in a rule".into(),
                Some(help),
            );
            return None;
        };
        let answer = self.then(then);
        Some(when?.then(answer?))
    }

    fn when(&mut self, node: &Node) -> Option<When> {
        let node = self.mapping(node, "`when`", WHEN_FIELDS)?;
        let mut when = Rule::when();
        for (key, value) in entries(node) {
            when = match &*key.name {
                "api" => match self.choice(value, "api", APIS)? {
                    "anthropic" => when.api(Api::Anthropic),
                    "responses" => when.api(Api::Responses),
                    _ => when.api(Api::OpenAi),
                },
                "model" => when.model(self.string(value, "model")?),
                "system_contains" => self
                    .texts(value, &key.name)
                    .into_iter()
                    .fold(when, When::system_contains),
                "prompt_contains" => self
                    .texts(value, &key.name)
                    .into_iter()
                    .fold(when, When::prompt_contains),
                "tool_result_contains" => self
                    .texts(value, &key.name)
                    .into_iter()
                    .fold(when, When::tool_result_contains),
                _ => when,
            };
        }
        Some(when)
    }

    fn then(&mut self, node: &Node) -> Option<Answer> {
        let node = self.mapping(node, "`then`", THEN_FIELDS)?;
        let replies: Vec<&(Key, Node)> = entries(node)
            .iter()
            .filter(|(k, _)| REPLIES.contains(&&*k.name))
            .collect();
        let [(key, value)] = replies.as_slice() else {
            let message = match replies.len() {
                0 => "missing the answer in `then`".to_string(),
                _ => "`then` holds more than one answer".to_string(),
            };
            self.error(
                node.pos,
                message,
                Some(format!("exactly one of: {}", REPLIES.join(", "))),
            );
            return None;
        };
        let mut answer = match &*key.name {
            "text" => Answer::text(self.string(value, "text")?),
            "structured" => Answer::structured(value.to_value()),
            "tool_call" => {
                let (name, arguments) = self.tool_call(value)?;
                Answer::tool_call(name, arguments)
            }
            _ => Answer::tool_calls(self.tool_calls(value)?),
        };
        if let Some((_, usage)) = node.get("usage") {
            let usage = self.mapping(usage, "`usage`", &["input", "output"])?;
            let input = self.count(usage.get("input"), "input", usage.pos);
            let output = self.count(usage.get("output"), "output", usage.pos);
            answer = answer.usage(input?, output?);
        }
        if let Some((_, id)) = node.get("id") {
            answer = answer.id(self.string(id, "id")?);
        }
        if let Some((_, model)) = node.get("model") {
            answer = answer.model(self.string(model, "model")?);
        }
        Some(answer)
    }

    fn tool_calls(&mut self, node: &Node) -> Option<Vec<(String, Value)>> {
        let Kind::Seq(items) = &node.kind else {
            let message = format!("expected a list of tool calls, found {}", node.describe());
            self.error(node.pos, message, None);
            return None;
        };
        let calls: Vec<_> = items.iter().map(|i| self.tool_call(i)).collect();
        calls.into_iter().collect()
    }

    fn tool_call(&mut self, node: &Node) -> Option<(String, Value)> {
        let node = self.mapping(node, "a tool call", &["name", "arguments"])?;
        let Some((_, name)) = node.get("name") else {
            self.error(node.pos, "missing field `name` in a tool call".into(), None);
            return None;
        };
        let name = self.string(name, "name")?;
        let arguments = match node.get("arguments") {
            None => Value::Object(Default::default()),
            Some((_, args)) if matches!(args.kind, Kind::Map(_)) => args.to_value(),
            Some((_, args)) => {
                let message = format!(
                    "expected a mapping for a tool call's `arguments`, found {}",
                    args.describe()
                );
                self.error(args.pos, message, None);
                return None;
            }
        };
        Some((name, arguments))
    }
}

/// Start serving `rules` on `runtime`, saying so on stderr (unless only
/// listing the tests).
pub(crate) fn serve(
    rules: &FakeRules,
    runtime: &tokio::runtime::Runtime,
    list: bool,
) -> Result<FakeProviderServer, String> {
    let server = runtime.block_on(rules.serve()).map_err(|e| {
        format!(
            "{FAKE_ENV}: cannot start the fake provider of {}: {e}",
            rules.file
        )
    })?;
    if !list {
        eprintln!(
            "Fake provider: {} rule(s) of {} answer every provider call (no API is called)",
            rules.len(),
            rules.file
        );
    }
    Ok(server)
}

/// Sends every request to a fake server's origin, keeping its path and
/// query: under the recorder, so the recordings keep the API's own URL.
pub(crate) struct ToFake {
    origin: String,
    inner: Arc<dyn Transport>,
}

impl ToFake {
    /// To `server`, through `inner` (else the shared client).
    pub(crate) fn new(
        server: &FakeProviderServer,
        inner: Option<Arc<dyn Transport>>,
    ) -> Arc<ToFake> {
        Arc::new(ToFake {
            origin: server.url(),
            inner: inner.unwrap_or_else(ReqwestTransport::shared),
        })
    }
}

#[async_trait]
impl Transport for ToFake {
    async fn send(
        &self,
        mut request: HttpRequest,
        context: &CallContext,
    ) -> Result<HttpResponse, TransportError> {
        let (origin, _, _) = split_url(&request.url);
        request.url = format!("{}{}", self.origin, &request.url[origin.len()..]);
        self.inner.send(request, context).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rules_file_reads_into_rules() {
        let src = r#"
timing: measured
rules:
  - when: { model: gpt-4o, prompt_contains: [Ada, Lovelace], tool_result_contains: "" }
    then: { text: "Hello, Ada!", usage: { input: 12, output: 4 }, id: chatcmpl-1 }
  - when: { api: anthropic, system_contains: reviewer }
    then: { structured: { findings: [] } }
  - then:
      tool_calls:
        - { name: read, arguments: { path: a.rs } }
        - { name: grep }
"#;
        let rules = FakeRules::parse(src, "fake.yaml").unwrap();
        assert_eq!(rules.len(), 3);
        assert!(rules.timing.is_none());
        let first = format!("{:?}", rules.rules[0]);
        assert!(
            first.contains("Lovelace") && first.contains("chatcmpl-1"),
            "{first}"
        );
    }

    /// Every rules file the guides show reads without a mistake.
    #[test]
    fn the_guides_rules_files_read() {
        let guide = include_str!("../../../docs/first-eval.md");
        let blocks: Vec<&str> = guide
            .split("```yaml\n")
            .skip(1)
            .filter_map(|rest| rest.split("```").next())
            .filter(|block| block.contains("rules:"))
            .collect();
        assert!(blocks.len() >= 2, "the guide's rules files: {blocks:?}");
        for block in blocks {
            let rules = FakeRules::parse(block, "docs/first-eval.md");
            assert!(
                rules.as_ref().is_ok_and(|r| r.len() == 2),
                "{rules:?}\n{block}"
            );
        }
    }

    #[test]
    fn every_mistake_is_named_with_its_place() {
        let src = "rules:\n  - when: { promt_contains: Ada, api: gemini }\n    then: { text: 1, usage: { input: x } }\n  - when: {}\n  - then: { text: a, structured: {} }\n";
        let e = FakeRules::parse(src, "evals/fake.yaml").unwrap_err();
        assert_eq!(
            e,
            "SCAFFOLD_FAKE: invalid fake-provider rules evals/fake.yaml: 5 errors\n\
             evals/fake.yaml:2:13: error: unknown field `promt_contains` in `when`\n  = help: did you mean `prompt_contains`?\n\
             evals/fake.yaml:2:39: error: `api` is `gemini`: expected one of openai, anthropic, responses\n\
             evals/fake.yaml:3:19: error: expected a string for `text`, found a number\n\
             evals/fake.yaml:4:5: error: missing field `then` in a rule\n  = help: one of: text, structured, tool_call, tool_calls\n\
             evals/fake.yaml:5:11: error: `then` holds more than one answer\n  = help: exactly one of: text, structured, tool_call, tool_calls"
        );
    }

    #[test]
    fn a_file_that_is_not_rules_says_what_was_expected() {
        let e = FakeRules::parse("- a\n", "f.yaml").unwrap_err();
        assert!(
            e.contains("f.yaml:1:1: error: expected a mapping for the rules file, found a list"),
            "{e}"
        );
        let e = FakeRules::parse("timing: measured\n", "f.yaml").unwrap_err();
        assert!(
            e.contains("f.yaml:1:1: error: missing field `rules`"),
            "{e}"
        );
        let e = FakeRules::parse("rules: [\n", "f.yaml").unwrap_err();
        assert!(
            e.starts_with("SCAFFOLD_FAKE: invalid fake-provider rules f.yaml: 1 error\nf.yaml:"),
            "{e}"
        );
    }

    #[test]
    fn requests_go_to_the_fake_keeping_path_and_answer() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let rules = FakeRules::parse("rules:\n  - then: { text: hi }\n", "f.yaml").unwrap();
            let server = rules.serve().await.unwrap();
            let to_fake = ToFake::new(&server, None);
            let request = HttpRequest {
                method: "POST".into(),
                url: "https://api.openai.com/v1/chat/completions?trace=1".into(),
                headers: vec![("content-type".into(), "application/json".into())],
                body: Some(serde_json::json!({
                    "model": "gpt-4o-mini",
                    "messages": [{"role": "user", "content": "hello"}]
                })),
            };
            let response = to_fake
                .send(request, &CallContext::default())
                .await
                .unwrap();
            assert_eq!(response.status, 200);
            let seen = server.last_request().unwrap();
            assert_eq!(seen.path, "/v1/chat/completions");
        });
    }
}
