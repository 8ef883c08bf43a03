//! Reports of eval results: the terminal [`table`], [`json`] (the results
//! document), [`markdown`] (fits a CI step summary), [`junit`] XML and a
//! single-file [`html`] page with SVG plots; plus the harness's `progress`
//! bar.
//!
//! Every renderer takes an [`EvalResults`] (and optionally a baseline
//! [`Comparison`]) and returns a string: rendering is pure and deterministic,
//! so the same results give byte-identical reports.

pub(crate) mod escape;
pub(crate) mod fmt;
pub mod html;
mod index;
pub mod json;
pub mod junit;
pub mod markdown;
mod plot;
pub(crate) mod progress;
#[doc(hidden)]
pub mod stream;
pub mod table;
mod transcript;
mod viewer;
pub(crate) mod why;

use std::str::FromStr;

use crate::eval::{Comparison, EvalResults};

/// A report format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// The terminal table (printed to stderr by the harness).
    Table,
    /// The results document, `{eval}.json`.
    Json,
    /// Markdown, `{eval}.md`.
    Markdown,
    /// JUnit XML, `{eval}.junit.xml`.
    Junit,
    /// A single HTML page, `{eval}.html`.
    Html,
}

/// The formats the harness writes without `SCAFFOLD_FORMAT`.
pub const DEFAULT_FORMATS: &[Format] = &[Format::Table, Format::Json];

/// Every format, in order.
pub const ALL_FORMATS: &[Format] = &[
    Format::Table,
    Format::Json,
    Format::Markdown,
    Format::Junit,
    Format::Html,
];

/// An unknown format name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown report format `{name}` (known: table, json, markdown, junit, html)")]
pub struct UnknownFormat {
    /// The name given.
    pub name: String,
}

impl Format {
    /// `table`, `json`, `markdown`, `junit` or `html`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Markdown => "markdown",
            Format::Junit => "junit",
            Format::Html => "html",
        }
    }

    /// The file name suffix: `txt`, `json`, `md`, `junit.xml`, `html`.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Table => "txt",
            Format::Json => "json",
            Format::Markdown => "md",
            Format::Junit => "junit.xml",
            Format::Html => "html",
        }
    }

    /// A comma-separated list (`table,json,markdown`), without duplicates,
    /// in the order given; empty entries are ignored.
    pub fn parse_list(list: &str) -> Result<Vec<Format>, UnknownFormat> {
        let mut out = Vec::new();
        for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let f: Format = part.parse()?;
            if !out.contains(&f) {
                out.push(f);
            }
        }
        Ok(out)
    }
}

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "table" | "text" | "terminal" => Ok(Format::Table),
            "json" => Ok(Format::Json),
            "markdown" | "md" => Ok(Format::Markdown),
            "junit" | "xml" | "junit-xml" => Ok(Format::Junit),
            "html" => Ok(Format::Html),
            _ => Err(UnknownFormat {
                name: s.to_string(),
            }),
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Render `results` in `format`, with the comparison against a baseline
/// when there is one (the JSON document does not include it; see
/// [`json::render_comparison`]).
pub fn render(format: Format, results: &EvalResults, baseline: Option<&Comparison>) -> String {
    match format {
        Format::Table => table::render_results(results),
        Format::Json => json::render(results),
        Format::Markdown => markdown::render(results, baseline),
        Format::Junit => junit::render(results, baseline),
        Format::Html => html::render(results, baseline),
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn a_format_list_is_parsed_without_repeats_and_an_unknown_format_refused() {
        use crate::report::Format;
        assert_eq!(
            Format::parse_list("json, md,json").unwrap(),
            [Format::Json, Format::Markdown]
        );
        assert!(Format::parse_list("pdf").is_err());
    }

    #[test]
    fn render_writes_the_format_asked_for() {
        use crate::eval::{CellRecord, EvalResults};
        use crate::report::{Format, render};
        let results = EvalResults::for_tests("qa", 1, vec![CellRecord::new("a", "c1")]);
        assert!(render(Format::Junit, &results, None).starts_with("<?xml"));
        assert!(render(Format::Markdown, &results, None).starts_with("## "));
    }
}

/// Results the reports' unit tests share.
#[cfg(test)]
pub(crate) mod fixtures {
    use crate::eval::results::AssertionRecord;
    use crate::eval::{CellRecord, EvalResults};

    /// The error of a cell whose recording is missing.
    pub(crate) const NO_RECORDING: &str = "agent `answerer`: playback: no recording \
        `qa__capital__unplayable__answerer__inv0`\n  record it with: SCAFFOLD_MODE=record \
        cargo test --test evals -- qa::unplayable::capital";

    /// Two variants of three cases: `played` passes two at 1.5s and $0.02
    /// each; no cell of `unplayable` could be played back (its sessions took
    /// 0ms and spent $0), and each failed its assertion for want of the
    /// recorded answer.
    pub(crate) fn one_variant_unplayable() -> EvalResults {
        let mut cells = Vec::new();
        for case in ["capital", "math", "poem"] {
            let mut c = CellRecord::new("played", case);
            c.passed = case != "poem";
            c.metrics.latency_ms = 1500;
            c.metrics.cost_usd = 0.02;
            cells.push(c);
            cells.push(unplayable_cell(
                "unplayable",
                case,
                &NO_RECORDING.replace("capital", case),
            ));
        }
        EvalResults::for_tests("qa", 1, cells)
    }

    /// A cell of `variant` and `case` that could not be played back, with
    /// `error`: its assertion failed for want of the recorded answer.
    pub(crate) fn unplayable_cell(variant: &str, case: &str, error: &str) -> CellRecord {
        let mut c = CellRecord::new(variant, case);
        c.unplayable = true;
        c.error = Some(error.into());
        c.assertions.push(AssertionRecord {
            assertion: serde_json::json!({"type": "output.contains", "text": "Paris"}),
            passed: false,
            message: "the run produced no output".into(),
            expected: None,
            actual: None,
            trajectory: None,
            children: Vec::new(),
            borderline: false,
        });
        c
    }
}
