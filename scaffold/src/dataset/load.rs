//! Reading dataset files into [`Dataset`]s.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::cache;
use super::node::{self, Kind, Node, Pos, SyntaxError};
use super::validate::Validator;
use super::{Case, Dataset, DatasetError, DiagnosticKind, Format, Severity, Validation};
use crate::assert::Assertion;

/// A file's text, or where it stops being UTF-8.
fn read(path: &Path) -> Result<Result<String, SyntaxError>, DatasetError> {
    let bytes = std::fs::read(path).map_err(|source| DatasetError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(String::from_utf8(bytes).map_err(|e| not_utf8(e.as_bytes(), e.utf8_error().valid_up_to())))
}

/// The syntax error of bytes that are UTF-8 up to `valid` only: the line and
/// column (in characters) of the first bad byte.
fn not_utf8(bytes: &[u8], valid: usize) -> SyntaxError {
    let text = std::str::from_utf8(&bytes[..valid]).unwrap_or_default();
    let line = text.bytes().filter(|&b| b == b'\n').count() + 1;
    let column = text.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let byte = bytes.get(valid).copied().unwrap_or_default();
    SyntaxError {
        pos: Pos::new(
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(column).unwrap_or(u32::MAX),
        ),
        message: format!("byte 0x{byte:02X} is not UTF-8: expected UTF-8 text"),
    }
}

/// The one diagnostic of a file that is not UTF-8.
fn not_text(file: &str, e: SyntaxError) -> Vec<super::Diagnostic> {
    let mut v = Validator::new(file);
    v.push(
        Severity::Error,
        DiagnosticKind::Syntax,
        e.pos,
        e.message,
        Some("save the file as UTF-8".into()),
    );
    v.diagnostics
}

/// Parse and validate; the tree is returned when the syntax was fine.
fn check<'f>(src: &str, format: Format, file: &'f str) -> (Option<Node>, Validator<'f>) {
    let mut v = Validator::new(file);
    let parsed = match format {
        Format::Yaml => node::read_yaml(src),
        Format::Json => node::read_json(src),
    };
    let mended = !parsed.errors.is_empty();
    for e in parsed.errors {
        v.push(
            Severity::Error,
            DiagnosticKind::Syntax,
            e.pos,
            e.message,
            None,
        );
    }
    match parsed.root {
        // A tree mended past syntax errors is checked for the file's other
        // errors, never built.
        Some(root) => {
            v.dataset(&root);
            (if mended { None } else { Some(root) }, v)
        }
        None => (None, v),
    }
}

fn sorted(mut diagnostics: Vec<super::Diagnostic>) -> Vec<super::Diagnostic> {
    diagnostics.sort_by_key(|d| (d.line, d.column));
    diagnostics
}

/// Validate dataset text; `file` names it in the diagnostics.
///
/// ```
/// use scaffold::dataset::{Format, validate_str};
/// let v = validate_str("name: x\ncases:\n  - id: a\n    input: {}\n    assertions:\n      - type: signal.contans\n        pattern: x\n", Format::Yaml, "x.yaml");
/// assert_eq!(v.to_string(), "x.yaml:6:15: error: unknown assertion type `signal.contans`\n  = help: did you mean `signal.contains`?\n");
/// ```
pub fn validate_str(src: &str, format: Format, file: &str) -> Validation {
    let (_, v) = check(src, format, file);
    Validation {
        diagnostics: sorted(v.diagnostics),
    }
}

/// Validate a dataset file (format from its extension).
pub fn validate(path: impl AsRef<Path>) -> Result<Validation, DatasetError> {
    let path = path.as_ref();
    let file = path.display().to_string();
    Ok(match read(path)? {
        Ok(src) => validate_str(&src, Format::from_path(path), &file),
        Err(e) => Validation {
            diagnostics: not_text(&file, e),
        },
    })
}

/// Load a dataset file (format from its extension). Fails with every error
/// found; warnings are kept in [`Dataset::warnings`].
///
/// Under the harness a file whose text was loaded before (by another
/// process of the run, as under cargo-nextest) is read from the harness's
/// cache of loaded datasets instead of being parsed again: the same
/// dataset, warnings included.
pub fn load(path: impl AsRef<Path>) -> Result<Dataset, DatasetError> {
    load_with(path.as_ref(), cache::shared())
}

/// [`load`], with `cache` if there is one.
pub(super) fn load_with(
    path: &Path,
    cache: Option<&cache::DatasetCache>,
) -> Result<Dataset, DatasetError> {
    let file = path.display().to_string();
    let src = read(path)?.map_err(|e| DatasetError::Invalid {
        diagnostics: not_text(&file, e),
        file: file.clone(),
    })?;
    let format = Format::from_path(path);
    let entry = cache.map(|c| c.entry(&src, format, &file));
    if let Some(dataset) = entry.as_ref().and_then(cache::Entry::read) {
        return Ok(dataset);
    }
    let (root, v) = check(&src, format, &file);
    // The tree holds everything the dataset needs: let the text go first.
    drop(src);
    let dataset = finish(root, v, &file)?;
    if let Some(entry) = entry {
        entry.write(&dataset);
    }
    Ok(dataset)
}

/// Load dataset text; `file` names it in diagnostics and [`Dataset::source`].
pub fn load_str(src: &str, format: Format, file: &str) -> Result<Dataset, DatasetError> {
    let (root, v) = check(src, format, file);
    finish(root, v, file)
}

/// Build the dataset from a checked tree, or fail with the diagnostics.
fn finish(root: Option<Node>, mut v: Validator<'_>, file: &str) -> Result<Dataset, DatasetError> {
    let has_errors = v.diagnostics.iter().any(|d| d.severity == Severity::Error);
    let dataset = match root {
        Some(root) if !has_errors => build(root, file, &mut v),
        _ => None,
    };
    let diagnostics = sorted(std::mem::take(&mut v.diagnostics));
    match dataset {
        Some(mut ds) if !diagnostics.iter().any(|d| d.severity == Severity::Error) => {
            ds.warnings = diagnostics;
            Ok(ds)
        }
        _ => Err(DatasetError::Invalid {
            file: file.to_string(),
            diagnostics,
        }),
    }
}

fn string(node: &Node, key: &str) -> Option<String> {
    node.get(key).and_then(|(_, v)| match &v.kind {
        Kind::Str(s) => Some(s.to_string()),
        Kind::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

/// The text of a scalar: strings as they are, `null`, `true`, numbers as written.
pub(crate) fn scalar_text(node: &Node) -> Option<String> {
    match &node.kind {
        Kind::Str(s) => Some(s.to_string()),
        Kind::Null => Some("null".into()),
        Kind::Bool(b) => Some(b.to_string()),
        Kind::Number(n) => Some(n.to_string()),
        Kind::Seq(_) | Kind::Map(_) => None,
    }
}

fn count(node: &Node, key: &str) -> Option<u64> {
    node.get(key).and_then(|(_, v)| match &v.kind {
        Kind::Number(n) => n.as_u64(),
        _ => None,
    })
}

fn flag(node: &Node, key: &str) -> bool {
    matches!(node.get(key), Some((_, v)) if v.kind == Kind::Bool(true))
}

fn items<'n>(node: Option<(&'n super::node::Key, &'n Node)>) -> &'n [Node] {
    match node.map(|(_, v)| &v.kind) {
        Some(Kind::Seq(items)) => items,
        _ => &[],
    }
}

/// Turn each assertion node into an [`Assertion`]; a failure (which the
/// validator should have caught) is reported at the node.
fn assertions(nodes: &[Node], v: &mut Validator<'_>) -> Vec<Assertion> {
    let mut out = Vec::with_capacity(nodes.len());
    for n in nodes {
        match serde_json::from_value::<Assertion>(n.to_value()) {
            Ok(a) => out.push(a),
            Err(e) => v.push(
                Severity::Error,
                DiagnosticKind::BadValue,
                n.pos,
                format!("cannot read this assertion: {e}"),
                None,
            ),
        }
    }
    out
}

/// The compact JSON text of a case's input (`null` when it has none).
fn input_json(node: Option<&Node>) -> Box<str> {
    let value = node.map(Node::to_value).unwrap_or(Value::Null);
    // Writing a `Value` to a string cannot fail (its keys are strings).
    serde_json::to_string(&value)
        .unwrap_or_else(|_| "null".to_string())
        .into_boxed_str()
}

/// One case from its validated node.
fn case(
    c: &Node,
    defaults: &Arc<[Assertion]>,
    timeout_ms: Option<u64>,
    v: &mut Validator<'_>,
) -> Case {
    Case {
        id: string(c, "id").unwrap_or_default(),
        name: string(c, "name"),
        description: string(c, "description"),
        input: input_json(c.get("input").map(|(_, n)| n)),
        defaults: defaults.clone(),
        own: assertions(items(c.get("assertions")), v).into_boxed_slice(),
        tags: items(c.get("tags"))
            .iter()
            .filter_map(scalar_text)
            .collect(),
        timeout_ms: count(c, "timeout").or(timeout_ms),
        skip: flag(c, "skip"),
        only: flag(c, "only"),
    }
}

/// Build the typed dataset from a validated tree, freeing each case's
/// nodes once the case is built (the tree is several times the size of the
/// cases it becomes).
fn build(mut root: Node, file: &str, v: &mut Validator<'_>) -> Option<Dataset> {
    let defaults = assertions(items(root.get("defaultAssertions")), v);
    let shared: Arc<[Assertion]> = Arc::from(defaults.as_slice());
    let default_timeout_ms = count(&root, "defaultTimeout");
    let mut cases = Vec::new();
    if let Some(Node {
        kind: Kind::Seq(nodes),
        ..
    }) = root.get_mut("cases")
    {
        cases.reserve_exact(nodes.len());
        for node in nodes.iter_mut() {
            cases.push(case(node, &shared, default_timeout_ms, v));
            node.kind = Kind::Null;
        }
    }
    let id = string(&root, "id");
    let metadata = match root.get("metadata").map(|(_, n)| n.to_value()) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    Some(Dataset {
        name: string(&root, "name")
            .or_else(|| id.clone())
            .unwrap_or_default(),
        id,
        description: string(&root, "description"),
        default_assertions: defaults,
        default_timeout_ms,
        metadata,
        workflow_name: string(&root, "workflowName"),
        version: string(&root, "version"),
        cases,
        source: file.to_string(),
        warnings: Vec::new(),
    })
}
