//! Cases and datasets built in code, checked as a dataset file is.

use serde_json::{Map, Value, json};

use super::{Case, Dataset, DatasetError, Format, load_str};

/// A case built in code; [`Dataset::from_cases`] or [`DatasetBuilder::build`]
/// check it as the file loader checks a case.
///
/// Fields are a file's: `input`, `assertions` (each a spec as a file
/// writes it, e.g. `{"type": "output.contains", "text": "hello"}`), `tags`,
/// `timeout` (ms), `skip`, `only`, `name`, `description`.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseBuilder {
    fields: Map<String, Value>,
    assertions: Vec<Value>,
    tags: Vec<Value>,
}

impl Case {
    /// Build a case with this id.
    ///
    /// ```
    /// use scaffold::dataset::{Case, Dataset};
    /// use serde_json::json;
    ///
    /// let dataset = Dataset::from_cases("smoke", [
    ///     Case::builder("hello")
    ///         .input(json!({"task": "say hello"}))
    ///         .assert(json!({"type": "output.contains", "text": "hello"})),
    /// ])?;
    /// assert_eq!(dataset.cases[0].input(), json!({"task": "say hello"}));
    /// # Ok::<(), scaffold::dataset::DatasetError>(())
    /// ```
    pub fn builder(id: impl Into<String>) -> CaseBuilder {
        let mut fields = Map::new();
        fields.insert("id".into(), Value::String(id.into()));
        CaseBuilder {
            fields,
            assertions: Vec::new(),
            tags: Vec::new(),
        }
    }
}

impl CaseBuilder {
    fn set(mut self, key: &str, value: Value) -> Self {
        self.fields.insert(key.into(), value);
        self
    }

    /// The workflow's input.
    pub fn input(self, input: Value) -> Self {
        self.set("input", input)
    }

    /// A human-readable name.
    pub fn name(self, name: impl Into<String>) -> Self {
        self.set("name", Value::String(name.into()))
    }

    /// What the case tests.
    pub fn description(self, description: impl Into<String>) -> Self {
        self.set("description", Value::String(description.into()))
    }

    /// One more assertion, written as in a dataset file.
    pub fn assert(mut self, assertion: Value) -> Self {
        self.assertions.push(assertion);
        self
    }

    /// One more tag.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.tags.push(Value::String(tag.into()));
        self
    }

    /// The case's timeout in milliseconds.
    pub fn timeout_ms(self, ms: u64) -> Self {
        self.set("timeout", json!(ms))
    }

    /// Keep the case but do not run it.
    pub fn skip(self, skip: bool) -> Self {
        self.set("skip", Value::Bool(skip))
    }

    /// Run only the cases that have this.
    pub fn only(self, only: bool) -> Self {
        self.set("only", Value::Bool(only))
    }

    fn to_value(&self) -> Value {
        let mut fields = self.fields.clone();
        fields.insert("assertions".into(), Value::Array(self.assertions.clone()));
        if !self.tags.is_empty() {
            fields.insert("tags".into(), Value::Array(self.tags.clone()));
        }
        Value::Object(fields)
    }
}

/// A dataset built in code: its name, defaults and cases.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetBuilder {
    name: String,
    fields: Map<String, Value>,
    defaults: Vec<Value>,
    cases: Vec<CaseBuilder>,
}

impl Dataset {
    /// Build a dataset with this name.
    pub fn builder(name: impl Into<String>) -> DatasetBuilder {
        DatasetBuilder {
            name: name.into(),
            fields: Map::new(),
            defaults: Vec::new(),
            cases: Vec::new(),
        }
    }

    /// A dataset of these cases, with the checks of a dataset file: every
    /// error found (duplicate ids, unknown assertion types or fields, a
    /// missing input, no cases) fails it; warnings are kept in
    /// [`Dataset::warnings`].
    pub fn from_cases(
        name: impl Into<String>,
        cases: impl IntoIterator<Item = CaseBuilder>,
    ) -> Result<Dataset, DatasetError> {
        Dataset::builder(name).cases(cases).build()
    }
}

impl DatasetBuilder {
    /// What the dataset is about.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        let value = Value::String(description.into());
        self.fields.insert("description".into(), value);
        self
    }

    /// An assertion put in front of every case's own, written as in a file.
    pub fn default_assert(mut self, assertion: Value) -> Self {
        self.defaults.push(assertion);
        self
    }

    /// The default per-case timeout in milliseconds.
    pub fn default_timeout_ms(mut self, ms: u64) -> Self {
        self.fields.insert("defaultTimeout".into(), json!(ms));
        self
    }

    /// One more case.
    pub fn case(mut self, case: CaseBuilder) -> Self {
        self.cases.push(case);
        self
    }

    /// More cases, in order.
    pub fn cases(mut self, cases: impl IntoIterator<Item = CaseBuilder>) -> Self {
        self.cases.extend(cases);
        self
    }

    /// Where diagnostics say the dataset comes from.
    pub fn source(&self) -> String {
        format!("dataset `{}` (built in code)", self.name)
    }

    fn to_value(&self) -> Value {
        let mut fields = self.fields.clone();
        fields.insert("name".into(), Value::String(self.name.clone()));
        if !self.defaults.is_empty() {
            fields.insert(
                "defaultAssertions".into(),
                Value::Array(self.defaults.clone()),
            );
        }
        let cases = self.cases.iter().map(CaseBuilder::to_value).collect();
        fields.insert("cases".into(), Value::Array(cases));
        Value::Object(fields)
    }

    /// The dataset, checked as the file loader checks a file (its text is
    /// the dataset as JSON, which diagnostics' lines and columns refer to).
    pub fn build(self) -> Result<Dataset, DatasetError> {
        let text = serde_json::to_string_pretty(&self.to_value()).unwrap_or_default();
        load_str(&text, Format::Json, &self.source())
    }
}

impl TryFrom<DatasetBuilder> for Dataset {
    type Error = DatasetError;

    fn try_from(builder: DatasetBuilder) -> Result<Dataset, DatasetError> {
        builder.build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{DiagnosticKind, load_str};

    fn kinds(err: &DatasetError) -> Vec<DiagnosticKind> {
        err.diagnostics()
            .iter()
            .filter(|d| d.severity == super::super::Severity::Error)
            .map(|d| d.kind)
            .collect()
    }

    #[test]
    fn a_built_dataset_equals_the_file_that_says_the_same() {
        let built = Dataset::builder("smoke")
            .description("two cases")
            .default_assert(json!({"type": "signal.not", "pattern": "error:*"}))
            .default_timeout_ms(5000)
            .case(
                Case::builder("hello")
                    .name("Hello")
                    .input(json!({"task": "say hello", "n": 2.5}))
                    .assert(json!({"type": "output.contains", "text": "hello"}))
                    .tag("smoke")
                    .timeout_ms(100),
            )
            .case(Case::builder("later").input(json!("x")).skip(true))
            .build()
            .expect("valid");
        let yaml = r#"
name: smoke
description: two cases
defaultTimeout: 5000
defaultAssertions:
  - type: signal.not
    pattern: "error:*"
cases:
  - id: hello
    name: Hello
    input: {task: say hello, n: 2.5}
    assertions:
      - type: output.contains
        text: hello
    tags: [smoke]
    timeout: 100
  - id: later
    input: x
    assertions: []
    skip: true
"#;
        let loaded = load_str(yaml, Format::Yaml, "smoke.yaml").expect("valid");
        assert_eq!(built.cases, loaded.cases);
        assert_eq!(built.default_assertions, loaded.default_assertions);
        assert_eq!(built.default_timeout_ms, Some(5000));
        assert_eq!(built.cases[0].assertions().len(), 2);
        assert_eq!(built.source, "dataset `smoke` (built in code)");
    }

    #[test]
    fn duplicate_ids_fail_as_in_a_file() {
        let err = Dataset::from_cases(
            "dup",
            [
                Case::builder("a").input(json!(1)),
                Case::builder("a").input(json!(2)),
            ],
        )
        .expect_err("duplicate");
        assert_eq!(kinds(&err), vec![DiagnosticKind::DuplicateCaseId]);
        assert!(
            err.to_string().contains("dataset `dup` (built in code)"),
            "{err}"
        );
        assert!(err.to_string().contains("duplicate case id `a`"), "{err}");
    }

    #[test]
    fn bad_assertion_specs_fail_with_the_loaders_help() {
        let err = Dataset::from_cases(
            "bad",
            [Case::builder("a")
                .input(json!({}))
                .assert(json!({"type": "signal.contans", "pattern": "x"}))
                .assert(json!({"type": "output.contains", "text": "x", "txet": "y"}))],
        )
        .expect_err("bad specs");
        let text = err.to_string();
        assert!(
            text.contains("unknown assertion type `signal.contans`"),
            "{text}"
        );
        assert!(text.contains("did you mean `signal.contains`?"), "{text}");
        assert!(text.contains("txet"), "{text}");
        assert_eq!(kinds(&err).len(), 2, "{text}");
    }

    #[test]
    fn a_missing_input_an_empty_id_and_no_cases_fail() {
        let err = Dataset::from_cases("x", [Case::builder("a")]).expect_err("no input");
        assert!(
            err.to_string()
                .contains("missing required field `input` in case `a`"),
            "{err}"
        );
        let err =
            Dataset::from_cases("x", [Case::builder("").input(json!(1))]).expect_err("empty id");
        assert!(err.to_string().contains("`id` must not be empty"), "{err}");
        let err = Dataset::from_cases("x", []).expect_err("no cases");
        assert_eq!(kinds(&err), vec![DiagnosticKind::EmptyCases]);
    }

    #[test]
    fn warnings_are_kept_as_for_a_file() {
        let ds = Dataset::from_cases("w", [Case::builder("a").input(json!(1))]).expect("valid");
        assert_eq!(ds.warnings.len(), 1);
        assert_eq!(ds.warnings[0].kind, DiagnosticKind::NoAssertions);
    }
}
