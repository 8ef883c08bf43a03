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
//! YAML is parsed with `serde-saphyr` (maintained, pure Rust, keeps spans;
//! `serde_yaml` is archived and `serde_yml` unsound), with YAML 1.2 booleans
//! only (`yes` stays a string) and nesting capped at 64 levels.
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
//! assert_eq!(ds.cases[0].assertions.len(), 2); // the default first
//! ```

mod load;
mod node;
mod schema;
mod validate;

pub use load::{load, load_str, validate, validate_str};

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;
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
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Case {
    /// Unique within the dataset.
    pub id: String,
    /// Human-readable name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What it tests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The workflow's input.
    pub input: Value,
    /// The dataset's default assertions, then the case's own.
    pub assertions: Vec<Assertion>,
    /// How many of `assertions` are the dataset's defaults (they come first).
    pub default_assertion_count: usize,
    /// Tags for filtering.
    pub tags: Vec<String>,
    /// Timeout in milliseconds: the case's own, else the dataset's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Kept in the file but not run.
    pub skip: bool,
    /// Run only the cases that have this.
    pub only: bool,
}

/// Error or warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Loading fails.
    Error,
    /// Loading succeeds; worth fixing.
    Warning,
}

/// What kind of problem a [`Diagnostic`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
