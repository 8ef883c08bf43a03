//! Datasets: cases with inputs and assertions, written as YAML or JSON.
//!
//! Both seed formats load: seed 003's YAML (`name`, `description`,
//! `defaultAssertions`, `defaultTimeout`, `metadata`, `cases`) and seed
//! 001's JSON (`id`, `workflowName`, `version`, `cases`, with its assertion
//! names). A case has `id`, `name`, `description`, `input`, `assertions`,
//! `tags`, `timeout` (ms), `skip`, `only`; `defaultAssertions` are put in
//! front of every case's own.
//!
//! [`validate`] returns every error and warning with its file, line and
//! column (and a did-you-mean for unknown types and fields); [`load`] fails
//! with a [`DatasetError`] listing all of them, like rustc:
//!
//! ```text
//! evals/review.yaml:14:15: error: unknown assertion type `signal.contans`
//!   = help: did you mean `signal.contains`?
//! evals/review.yaml:30:9: error: duplicate case id `sql-injection` (first used at 9:9)
//! ```
//!
//! Cases and datasets can be built in code too ([`Case::builder`],
//! [`Dataset::from_cases`], [`Dataset::builder`]), with the same checks: a
//! `#[dataset]` function may return the [`DatasetBuilder`] itself.
//!
//! YAML is parsed with `serde-saphyr` (maintained, pure Rust, keeps spans;
//! `serde_yaml` is archived and `serde_yml` unsound), with YAML 1.2 booleans
//! only (`yes` stays a string) and nesting capped at 32 levels (JSON too).
//! A YAML file may hold four values per byte of its text, plus 10,000 (at
//! most 20 million), the only limit on aliases: aliases (`*name`) that
//! repeat anchors past that, as a "billion laughs" file does, are counted
//! and refused before the file is read.
//!
//! ```
//! use scaffold::dataset::{Format, validate_str};
//! let deep = |n: usize| format!("name: x\ncases: {}{}\n", "[".repeat(n), "]".repeat(n));
//! // The root mapping is one level, each `[` one more.
//! assert!(!validate_str(&deep(31), Format::Yaml, "x.yaml").to_string().contains("nesting"));
//! assert!(validate_str(&deep(32), Format::Yaml, "x.yaml").to_string().contains("nesting deeper than 32 levels"));
//! ```
//!
//! ```
//! use scaffold::dataset::{Format, load_str};
//! let yaml = r#"
//! name: smoke
//! defaultAssertions:
//!   - type: signal.not
//!     pattern: "error:*"
//! cases:
//!   - id: hello
//!     input: {task: say hello}
//!     assertions:
//!       - type: output.contains
//!         text: hello
//! "#;
//! let ds = load_str(yaml, Format::Yaml, "smoke.yaml").unwrap();
//! assert_eq!(ds.name, "smoke");
//! assert_eq!(ds.cases[0].assertions().len(), 2); // the default first
//! ```

mod aliases;
mod builder;
pub(crate) mod cache;
mod indent;
mod load;
pub(crate) mod node;
mod schema;
mod validate;

pub use builder::{CaseBuilder, DatasetBuilder};
pub use load::{load, load_str, validate, validate_str};
pub(crate) use validate::{Validator, suggest};

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::assert::Assertion;

/// Which syntax a dataset is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// YAML (`.yaml`, `.yml`).
    Yaml,
    /// JSON (`.json`).
    Json,
}

impl Format {
    /// The format a file name's extension says; YAML for anything else
    /// (JSON is mostly YAML too, but its own reader gives better positions).
    pub fn from_path(path: &std::path::Path) -> Format {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("json") => Format::Json,
            _ => Format::Yaml,
        }
    }
}

/// A loaded dataset.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dataset {
    /// `name`, or `id` when there is no name.
    pub name: String,
    /// `id` (seed 001), if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// What it is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Assertions put in front of every case's own.
    pub default_assertions: Vec<Assertion>,
    /// Default per-case timeout in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_timeout_ms: Option<u64>,
    /// Free-form metadata.
    pub metadata: Map<String, Value>,
    /// Seed 001's `workflowName`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_name: Option<String>,
    /// Seed 001's `version`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The cases, in file order.
    pub cases: Vec<Case>,
    /// Where it was loaded from (as given to the loader).
    pub source: String,
    /// Warnings found while loading (errors make loading fail).
    #[serde(skip)]
    pub warnings: Vec<Diagnostic>,
}

impl Dataset {
    /// The id for recording keys and reports: `id` if given, else `name`.
    pub fn key(&self) -> &str {
        self.id.as_deref().unwrap_or(&self.name)
    }

    /// The case with this id.
    pub fn case(&self, id: &str) -> Option<&Case> {
        self.cases.iter().find(|c| c.id == id)
    }

    /// This dataset with its case `index` alone (none if there is no such
    /// case): what a process that runs one cell needs of it.
    pub(crate) fn with_one_case(&self, index: usize) -> Option<Dataset> {
        let case = self.cases.get(index)?.clone();
        Some(Dataset {
            name: self.name.clone(),
            id: self.id.clone(),
            description: self.description.clone(),
            default_assertions: self.default_assertions.clone(),
            default_timeout_ms: self.default_timeout_ms,
            metadata: self.metadata.clone(),
            workflow_name: self.workflow_name.clone(),
            version: self.version.clone(),
            cases: vec![case],
            source: self.source.clone(),
            warnings: Vec::new(),
        })
    }

    /// The cases to run: those with `only` if any has it, else all; minus
    /// the skipped ones.
    pub fn runnable_cases(&self) -> impl Iterator<Item = &Case> {
        let any_only = self.cases.iter().any(|c| c.only);
        self.cases
            .iter()
            .filter(move |c| !c.skip && (!any_only || c.only))
    }
}

/// One case of a dataset.
///
/// A loaded case is small: its input is kept as compact JSON text (see
/// [`Case::input`]) and the dataset's default assertions are shared by all
/// its cases rather than copied into each (see [`Case::assertions`]).
#[derive(Debug, Clone)]
pub struct Case {
    /// Unique within the dataset.
    pub id: String,
    /// Human-readable name.
    pub name: Option<String>,
    /// What it tests.
    pub description: Option<String>,
    /// The workflow's input as `serde_json` writes it (compact).
    input: Box<str>,
    /// The dataset's default assertions, shared by its cases.
    defaults: Arc<[Assertion]>,
    /// The case's own assertions.
    own: Box<[Assertion]>,
    /// Tags for filtering.
    pub tags: Vec<String>,
    /// Timeout in milliseconds: the case's own, else the dataset's default.
    pub timeout_ms: Option<u64>,
    /// Kept in the file but not run.
    pub skip: bool,
    /// Run only the cases that have this.
    pub only: bool,
}

impl Case {
    /// The workflow's input (`null` if the file gives none).
    ///
    /// The case keeps it as compact JSON text and parses it on each call, a
    /// matter of microseconds for a typical input: keep the value rather
    /// than calling this in a loop.
    ///
    /// ```
    /// use scaffold::dataset::{Format, load_str};
    /// let yaml = "name: x\ncases:\n  - id: a\n    input: {task: hi, n: 2.5}\n    assertions: []\n";
    /// let ds = load_str(yaml, Format::Yaml, "x.yaml").unwrap();
    /// assert_eq!(ds.cases[0].input(), serde_json::json!({"task": "hi", "n": 2.5}));
    /// ```
    pub fn input(&self) -> Value {
        // The text is `serde_json`'s own rendering of a value, so it parses.
        serde_json::from_str(&self.input).unwrap_or(Value::Null)
    }

    /// The input as compact JSON text, exactly as
    /// `serde_json::to_string(&case.input())` would write it.
    ///
    /// ```
    /// use scaffold::dataset::{Format, load_str};
    /// let yaml = "name: x\ncases:\n  - id: a\n    input: {task: hi}\n    assertions: []\n";
    /// let ds = load_str(yaml, Format::Yaml, "x.yaml").unwrap();
    /// assert_eq!(ds.cases[0].input_json(), r#"{"task":"hi"}"#);
    /// ```
    pub fn input_json(&self) -> &str {
        &self.input
    }

    /// Every assertion the case is graded with: the dataset's default
    /// assertions, then the case's own, in file order.
    ///
    /// ```
    /// use scaffold::dataset::{Format, load_str};
    /// let yaml = r#"
    /// name: x
    /// defaultAssertions:
    ///   - {type: output.contains, text: a}
    /// cases:
    ///   - id: one
    ///     input: {}
    ///     assertions:
    ///       - {type: output.contains, text: b}
    /// "#;
    /// let ds = load_str(yaml, Format::Yaml, "x.yaml").unwrap();
    /// let case = &ds.cases[0];
    /// assert_eq!(case.assertions().len(), 2);
    /// assert_eq!(case.default_assertions().len(), 1);
    /// assert_eq!(case.own_assertions().len(), 1);
    /// assert!(case.assertions().eq(case.default_assertions().iter().chain(case.own_assertions())));
    /// ```
    pub fn assertions(&self) -> Assertions<'_> {
        Assertions {
            defaults: self.defaults.iter(),
            own: self.own.iter(),
        }
    }

    /// The dataset's default assertions (the first of [`Case::assertions`]),
    /// shared with the dataset's other cases.
    pub fn default_assertions(&self) -> &[Assertion] {
        &self.defaults
    }

    /// The case's own assertions (the last of [`Case::assertions`]).
    pub fn own_assertions(&self) -> &[Assertion] {
        &self.own
    }
}

impl PartialEq for Case {
    fn eq(&self, other: &Case) -> bool {
        self.id == other.id
            && self.name == other.name
            && self.description == other.description
            && (self.input == other.input || self.input() == other.input())
            && self.defaults.len() == other.defaults.len()
            && self.assertions().eq(other.assertions())
            && self.tags == other.tags
            && self.timeout_ms == other.timeout_ms
            && self.skip == other.skip
            && self.only == other.only
    }
}

/// Written as it always was: the input as a value, `assertions` with the
/// defaults first, and `defaultAssertionCount`.
impl Serialize for Case {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = 7
            + usize::from(self.name.is_some())
            + usize::from(self.description.is_some())
            + usize::from(self.timeout_ms.is_some());
        let mut s = serializer.serialize_struct("Case", len)?;
        s.serialize_field("id", &self.id)?;
        match &self.name {
            Some(name) => s.serialize_field("name", name)?,
            None => s.skip_field("name")?,
        }
        match &self.description {
            Some(description) => s.serialize_field("description", description)?,
            None => s.skip_field("description")?,
        }
        s.serialize_field("input", &self.input())?;
        s.serialize_field("assertions", &SerializeAll(self))?;
        s.serialize_field("defaultAssertionCount", &self.defaults.len())?;
        s.serialize_field("tags", &self.tags)?;
        match &self.timeout_ms {
            Some(ms) => s.serialize_field("timeoutMs", ms)?,
            None => s.skip_field("timeoutMs")?,
        }
        s.serialize_field("skip", &self.skip)?;
        s.serialize_field("only", &self.only)?;
        s.end()
    }
}

/// A case's assertions as one list.
struct SerializeAll<'a>(&'a Case);

impl Serialize for SerializeAll<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.assertions())
    }
}

/// The assertions of a [`Case`]: the dataset's defaults, then the case's
/// own (from [`Case::assertions`]).
#[derive(Debug, Clone)]
pub struct Assertions<'a> {
    defaults: std::slice::Iter<'a, Assertion>,
    own: std::slice::Iter<'a, Assertion>,
}

impl<'a> Iterator for Assertions<'a> {
    type Item = &'a Assertion;

    fn next(&mut self) -> Option<&'a Assertion> {
        self.defaults.next().or_else(|| self.own.next())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.defaults.len() + self.own.len();
        (n, Some(n))
    }

    fn nth(&mut self, n: usize) -> Option<&'a Assertion> {
        let d = self.defaults.len();
        if n < d {
            self.defaults.nth(n)
        } else {
            self.defaults = [].iter();
            self.own.nth(n - d)
        }
    }
}

impl DoubleEndedIterator for Assertions<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.own.next_back().or_else(|| self.defaults.next_back())
    }
}

impl ExactSizeIterator for Assertions<'_> {}

impl std::iter::FusedIterator for Assertions<'_> {}

/// Error or warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Loading fails.
    Error,
    /// Loading succeeds; worth fixing.
    Warning,
}

/// What kind of problem a [`Diagnostic`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DiagnosticKind {
    /// The file is not valid YAML/JSON.
    Syntax,
    /// An assertion `type` nobody knows.
    UnknownType,
    /// A field the dataset, a case or an assertion does not have.
    UnknownField,
    /// A required field is missing.
    MissingField,
    /// A field has the wrong kind of value.
    WrongType,
    /// Two cases share an id.
    DuplicateCaseId,
    /// `cases` is empty.
    EmptyCases,
    /// A regex (or its flags) does not compile.
    BadRegex,
    /// A signal-name glob is malformed.
    BadGlob,
    /// A state/output path is malformed.
    BadPath,
    /// A value is out of range or malformed (bounds, matcher, schema).
    BadValue,
    /// `only: true` is set on a case.
    OnlyLeftOn,
    /// A case checks nothing.
    NoAssertions,
    /// Something looks like a value matcher but is not one.
    MatcherLike,
    /// A field has no effect.
    Ignored,
    /// A value of another kind was taken as text (an unquoted `null` tag).
    Coerced,
}

/// One problem, with its place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// What kind of problem.
    pub kind: DiagnosticKind,
    /// The file (as given to the loader).
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
    /// What is wrong.
    pub message: String,
    /// How to fix it (a did-you-mean, the accepted values).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl fmt::Display for Diagnostic {
    /// `file:line:col: error: message`, then `  = help: …` on its own line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(
            f,
            "{}:{}:{}: {sev}: {}",
            self.file, self.line, self.column, self.message
        )?;
        if let Some(help) = &self.help {
            write!(f, "\n  = help: {help}")?;
        }
        Ok(())
    }
}

/// Everything [`validate`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Validation {
    /// Errors and warnings in file order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Validation {
    /// Whether there is no error (warnings allowed).
    pub fn is_ok(&self) -> bool {
        self.errors().next().is_none()
    }

    /// The errors.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
    }

    /// The warnings.
    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
    }
}

impl fmt::Display for Validation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.diagnostics {
            writeln!(f, "{d}")?;
        }
        Ok(())
    }
}

/// Why a dataset did not load.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The file could not be read.
    #[error("cannot read dataset {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file has errors; all of them are listed (warnings too).
    #[error("{}", render_invalid(file, diagnostics))]
    Invalid {
        /// The file.
        file: String,
        /// Every error and warning.
        diagnostics: Vec<Diagnostic>,
    },
}

fn render_invalid(file: &str, diagnostics: &[Diagnostic]) -> String {
    let errors = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = diagnostics.len() - errors;
    let mut out = format!(
        "invalid dataset {file}: {errors} error{}{}",
        if errors == 1 { "" } else { "s" },
        match warnings {
            0 => String::new(),
            1 => ", 1 warning".to_string(),
            n => format!(", {n} warnings"),
        }
    );
    for d in diagnostics {
        out.push('\n');
        out.push_str(&d.to_string());
    }
    out
}

impl DatasetError {
    /// The diagnostics, if the file was read.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            DatasetError::Invalid { diagnostics, .. } => diagnostics,
            DatasetError::Io { .. } => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_CASES: &str = "name: t
defaultAssertions:
  - {type: output.contains, text: a}
  - {type: signal.not, pattern: 'error:*'}
cases:
  - id: one
    input: {b: 1, a: 2}
    assertions:
      - {type: output.contains, text: own}
  - id: two
    input: x
    assertions: []
";

    #[test]
    fn defaults_are_shared_and_come_first() {
        let ds = load_str(TWO_CASES, Format::Yaml, "t.yaml").unwrap();
        let [one, two] = &ds.cases[..] else {
            panic!("{:?}", ds.cases)
        };
        assert!(Arc::ptr_eq(&one.defaults, &two.defaults));
        assert_eq!(one.default_assertions(), ds.default_assertions);
        let texts = |c: &Case| -> Vec<String> {
            c.assertions()
                .map(|a| serde_json::to_value(a).unwrap().to_string())
                .collect()
        };
        assert_eq!(
            texts(one),
            [
                r#"{"text":"a","type":"output.contains"}"#,
                r#"{"pattern":"error:*","type":"signal.not"}"#,
                r#"{"text":"own","type":"output.contains"}"#,
            ]
        );
        assert_eq!(texts(two), texts(one)[..2]);
        // The iterator knows its length and walks both ways.
        let mut all = one.assertions();
        assert_eq!(all.len(), 3);
        assert_eq!(all.next_back(), one.own_assertions().first());
        assert_eq!(all.len(), 2);
        assert_eq!(one.assertions().nth(2), one.own_assertions().first());
        assert_eq!(one.assertions().nth(3), None);
        let mut skip = one.assertions();
        assert_eq!(skip.nth(1), ds.default_assertions.get(1));
        assert_eq!(skip.next(), one.own_assertions().first());
        assert_eq!(skip.next(), None);
        let in_order = one.default_assertions().iter().chain(one.own_assertions());
        assert!(one.assertions().rev().eq(in_order.rev()));
        // Clones share the defaults too, and compare equal.
        let copy = one.clone();
        assert!(Arc::ptr_eq(&copy.defaults, &one.defaults));
        assert_eq!(&copy, one);
        assert_ne!(&copy, two);
    }

    /// `a` and `b` are the same value: same keys in the same order, same
    /// kind and bits of every number.
    fn identical(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                (x.as_u64(), x.as_i64(), x.as_f64().map(f64::to_bits))
                    == (y.as_u64(), y.as_i64(), y.as_f64().map(f64::to_bits))
                    && x.is_f64() == y.is_f64()
            }
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(x, y)| identical(x, y))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .zip(y)
                        .all(|((kx, x), (ky, y))| kx == ky && identical(x, y))
            }
            _ => a == b,
        }
    }

    #[test]
    fn the_input_round_trips_exactly() {
        let inputs = [
            r#"{"z": 1, "a": {"y": [1, -1, 0.1, -0.0, 1e300, 2.638344616030823e-256, 5e-324, 1.7976931348623157e308, 18446744073709551615, -9223372036854775808, 3.0]}, "m": "ünï\"code\\\n\u0001", "e": {}, "l": [], "n": null, "t": true}"#,
            r#""just text""#,
            "12345678901234567890",
            "-0.0",
            "null",
            "[[[]], {}]",
        ];
        for input in inputs {
            let json = format!(
                r#"{{"id": "x", "cases": [{{"id": "c", "input": {input}, "assertions": []}}]}}"#
            );
            // YAML is a superset of JSON: the same text through both readers.
            for format in [Format::Json, Format::Yaml] {
                let ds = load_str(&json, format, "x").unwrap_or_else(|e| panic!("{e}"));
                let case = &ds.cases[0];
                let tree = match format {
                    Format::Json => node::parse_json(&json),
                    Format::Yaml => node::parse_yaml(&json),
                }
                .unwrap();
                let (_, cases) = tree.get("cases").unwrap();
                let node::Kind::Seq(cases) = &cases.kind else {
                    panic!()
                };
                // What the case held before it kept text: the tree's value.
                let before = cases[0].get("input").unwrap().1.to_value();
                let after = case.input();
                assert!(
                    identical(&before, &after),
                    "{format:?}: {before} became {after}"
                );
                assert_eq!(serde_json::to_string(&after).unwrap(), case.input_json());
                assert_eq!(serde_json::to_string(&before).unwrap(), case.input_json());
            }
        }
        let ds = load_str(TWO_CASES, Format::Yaml, "t.yaml").unwrap();
        assert_eq!(ds.cases[0].input_json(), r#"{"a":2,"b":1}"#);
        assert_eq!(ds.cases[1].input(), Value::from("x"));
    }

    #[test]
    fn a_case_serializes_as_before() {
        let src = "name: t
description: d
defaultTimeout: 7
defaultAssertions:
  - {type: output.contains, text: a}
cases:
  - id: one
    name: first
    description: the first
    input: {b: [1, 2.5], a: null}
    tags: [x, y]
    timeout: 9
    skip: true
    assertions:
      - {type: output.contains, text: own}
  - id: two
    only: true
    input: 3
    assertions: []
";
        let ds = load_str(src, Format::Yaml, "t.yaml").unwrap();
        assert_eq!(
            serde_json::to_string(&ds.cases).unwrap(),
            concat!(
                r#"[{"id":"one","name":"first","description":"the first","input":{"a":null,"b":[1,2.5]},"#,
                r#""assertions":[{"type":"output.contains","text":"a"},{"type":"output.contains","text":"own"}],"#,
                r#""defaultAssertionCount":1,"tags":["x","y"],"timeoutMs":9,"skip":true,"only":false},"#,
                r#"{"id":"two","input":3,"assertions":[{"type":"output.contains","text":"a"}],"#,
                r#""defaultAssertionCount":1,"tags":[],"timeoutMs":7,"skip":false,"only":true}]"#
            )
        );
        let pretty = serde_json::to_string_pretty(&ds.cases[1]).unwrap();
        assert!(
            pretty.starts_with(
                "{\n  \"id\": \"two\",\n  \"input\": 3,\n  \"assertions\": [\n    {\n"
            ),
            "{pretty}"
        );
    }

    #[test]
    fn a_malformed_case_is_reported_at_its_file_line_and_field() {
        let src = "name: t\ncases:\n  - id: ok\n    input: {a: 1}\n    assertions: [{type: output.contains, text: a}]\n  - id: [bad]\n    input: {}\n    assertions:\n      - type: output.contains\n        txt: x\n";
        let dir = std::env::temp_dir().join(format!("scaffold-ds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.yaml");
        std::fs::write(&path, src).unwrap();
        let err = load(&path).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        let file = path.display().to_string();
        let lines: Vec<String> = err.diagnostics().iter().map(|d| d.to_string()).collect();
        assert_eq!(
            lines,
            [
                format!("{file}:6:9: error: `id` must be a string, found a list"),
                format!(
                    "{file}:9:9: error: missing required field `text` in output.contains assertion"
                ),
                format!(
                    "{file}:10:9: error: unknown field `txt` in output.contains assertion\n  = help: did you mean `text`?"
                ),
            ]
        );
        assert!(
            err.to_string()
                .starts_with(&format!("invalid dataset {file}: 3 errors\n")),
            "{err}"
        );
    }

    #[test]
    fn a_case_is_small() {
        // Inline: id, name, description, tags (24 B each), input text and
        // the two assertion lists (16 B each), timeout (16 B), two flags.
        assert!(
            std::mem::size_of::<Case>() <= 168,
            "{}",
            std::mem::size_of::<Case>()
        );
    }
}
