//! Checking a dataset document: every problem at once, each with its place.
//!
//! Errors: syntax, unknown assertion type, unknown field, missing required
//! field, wrong kind of value, duplicate case id, no cases, bad regex, bad
//! glob, bad path, bad value (matcher, schema, bounds). Warnings: `only` left
//! on, a case that checks nothing, a misspelt or mixed value matcher, a
//! `value` ignored because of `exists: false`. Unknown fields and types come
//! with a did-you-mean.

use std::collections::HashMap;

use super::node::{Key, Kind, Node, Pos};
use super::schema::{self, CASE_FIELDS, DATASET_FIELDS, FieldKind, FieldSpec, TypeSpec};
use super::{Diagnostic, DiagnosticKind, Severity};
use crate::assert::{Glob, MATCHER_KEYS, Path, build_regex};
use crate::util::file_safe;

/// Collects diagnostics for one file.
pub(crate) struct Validator<'f> {
    file: &'f str,
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// Each regex (and flags) checked so far, and why it is bad if it is:
    /// a large dataset repeats its regexes, and compiling one is costly.
    regexes: HashMap<(Box<str>, Box<str>), Result<(), String>>,
}

/// Levenshtein distance (by characters).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j + 1] + 1).min(cur[j] + 1).min(prev[j] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '_' | '-' | '.' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The closest candidate to `word`, if it is close enough to be a typo.
pub(crate) fn suggest<'c>(word: &str, candidates: &[&'c str]) -> Option<&'c str> {
    let nw = normalize(word);
    if let Some(c) = candidates.iter().find(|c| normalize(c) == nw) {
        return Some(c);
    }
    let limit = (word.chars().count() / 3).max(2);
    candidates
        .iter()
        .map(|c| (distance(&nw, &normalize(c)), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// A matcher name `key` looks like a misspelling of: same letters up to case
/// and separators (`starts_with`), or one edit away for longer names
/// (`contain`). Short payload keys (`at`, `get`) are left alone.
fn matcher_typo(key: &str) -> Option<&'static str> {
    let nk = normalize(key);
    MATCHER_KEYS.iter().copied().find(|m| {
        normalize(m) == nk || (key.chars().count() >= 5 && distance(&nk, &normalize(m)) <= 1)
    })
}

fn did_you_mean(word: &str, candidates: &[&str]) -> Option<String> {
    suggest(word, candidates).map(|s| format!("did you mean `{s}`?"))
}

/// The last line of a regex error, without the `error: ` lead.
fn regex_error(e: &str) -> String {
    let last = e.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or(e);
    last.trim().trim_start_matches("error: ").to_string()
}

fn entries(node: &Node) -> &[(Key, Node)] {
    match &node.kind {
        Kind::Map(e) => e,
        _ => &[],
    }
}

impl<'f> Validator<'f> {
    pub(crate) fn new(file: &'f str) -> Self {
        Validator {
            file,
            diagnostics: Vec::new(),
            regexes: HashMap::new(),
        }
    }

    pub(crate) fn push(
        &mut self,
        severity: Severity,
        kind: DiagnosticKind,
        pos: Pos,
        message: String,
        help: Option<String>,
    ) {
        self.diagnostics.push(Diagnostic {
            severity,
            kind,
            file: self.file.to_string(),
            line: pos.line,
            column: pos.column,
            message,
            help,
        });
    }

    fn error(&mut self, kind: DiagnosticKind, pos: Pos, message: String) {
        self.push(Severity::Error, kind, pos, message, None);
    }

    fn warn(&mut self, kind: DiagnosticKind, pos: Pos, message: String, help: Option<String>) {
        self.push(Severity::Warning, kind, pos, message, help);
    }

    fn unknown_fields(&mut self, node: &Node, known: &[&str], what: &str) {
        for (k, _) in entries(node) {
            if !known.contains(&&*k.name) {
                let help = did_you_mean(&k.name, known)
                    .or_else(|| Some(format!("expected one of: {}", known.join(", "))));
                self.push(
                    Severity::Error,
                    DiagnosticKind::UnknownField,
                    k.pos,
                    format!("unknown field `{}` in {what}", k.name),
                    help,
                );
            }
        }
    }

    fn wrong(&mut self, node: &Node, field: &str, want: &str) {
        self.error(
            DiagnosticKind::WrongType,
            node.pos,
            format!("`{field}` must be {want}, found {}", node.describe()),
        );
    }

    fn string<'n>(&mut self, node: &'n Node, field: &str) -> Option<&'n str> {
        match node.as_str() {
            Some(s) => Some(s),
            None => {
                self.wrong(node, field, "a string");
                None
            }
        }
    }

    fn count(&mut self, node: &Node, field: &str) -> Option<u64> {
        match &node.kind {
            Kind::Number(n) if n.as_u64().is_some() => n.as_u64(),
            _ => {
                self.wrong(node, field, "a whole number >= 0");
                None
            }
        }
    }

    fn boolean(&mut self, node: &Node, field: &str) {
        if !matches!(node.kind, Kind::Bool(_)) {
            self.wrong(node, field, "true or false");
        }
    }

    fn string_list(&mut self, node: &Node, field: &str, non_empty: bool) {
        match &node.kind {
            Kind::Seq(items) => {
                if non_empty && items.is_empty() {
                    self.error(
                        DiagnosticKind::BadValue,
                        node.pos,
                        format!("`{field}` must not be empty"),
                    );
                }
                for item in items {
                    self.string(item, field);
                }
            }
            _ => self.wrong(node, field, "a list of strings"),
        }
    }

    /// Tags are strings; a bare YAML scalar that is not one (`null`, `yes`
    /// is a string, `true`, `3`) is taken as its text, with a warning.
    fn tags(&mut self, node: &Node) {
        let Kind::Seq(items) = &node.kind else {
            self.wrong(node, "tags", "a list of strings");
            return;
        };
        for item in items {
            match &item.kind {
                Kind::Str(_) => {}
                Kind::Seq(_) | Kind::Map(_) => self.wrong(item, "tags", "a list of strings"),
                _ => {
                    let text = super::load::scalar_text(item).unwrap_or_default();
                    self.warn(
                        DiagnosticKind::Coerced,
                        item.pos,
                        format!("tag `{text}` is not a string in YAML (it reads as {}); it is taken as the text \"{text}\"", item.describe()),
                        Some(format!("quote it: \"{text}\"")),
                    );
                }
            }
        }
    }

    fn glob(&mut self, node: &Node, field: &str) {
        if let Some(s) = self.string(node, field)
            && let Err(e) = Glob::new(s)
        {
            self.error(
                DiagnosticKind::BadGlob,
                node.pos,
                format!("invalid glob `{s}` in `{field}`: {e}"),
            );
        }
    }

    fn path(&mut self, node: &Node, field: &str) {
        if let Some(s) = self.string(node, field)
            && let Err(e) = Path::parse(s)
        {
            self.error(
                DiagnosticKind::BadPath,
                node.pos,
                format!(
                    "invalid path `{s}`: {} at character {}",
                    e.message, e.position
                ),
            );
        }
    }

    fn regex(&mut self, node: &Node, field: &str, flags: Option<&str>) {
        let Some(s) = self.string(node, field) else {
            return;
        };
        let key: (Box<str>, Box<str>) = (s.into(), flags.unwrap_or("").into());
        let checked = self
            .regexes
            .entry(key)
            .or_insert_with(|| build_regex(s, flags).map(|_| ()))
            .clone();
        if let Err(e) = checked {
            self.error(
                DiagnosticKind::BadRegex,
                node.pos,
                format!("invalid regex `{s}`: {}", regex_error(&e)),
            );
        }
    }

    /// Walk an expected value, checking the value matchers inside.
    fn expected(&mut self, node: &Node) {
        match &node.kind {
            Kind::Map(entries) => {
                let is_matcher = !entries.is_empty()
                    && entries
                        .iter()
                        .all(|(k, _)| MATCHER_KEYS.contains(&&*k.name));
                if is_matcher {
                    for (k, v) in entries {
                        self.matcher(k, v);
                    }
                    return;
                }
                let matcher_keys: Vec<&str> = entries
                    .iter()
                    .map(|(k, _)| &*k.name)
                    .filter(|k| MATCHER_KEYS.contains(k))
                    .collect();
                if !matcher_keys.is_empty() {
                    self.warn(
                        DiagnosticKind::MatcherLike,
                        node.pos,
                        format!(
                            "this mapping mixes value matchers ({}) with other keys, so it is compared as a plain object",
                            matcher_keys.join(", ")
                        ),
                        Some("put matchers in a mapping of their own".into()),
                    );
                } else if let [(k, _)] = &**entries
                    && let Some(s) = matcher_typo(&k.name)
                {
                    self.warn(
                        DiagnosticKind::MatcherLike,
                        k.pos,
                        format!(
                            "`{}` is not a value matcher, so this expects a field named `{}`",
                            k.name, k.name
                        ),
                        Some(format!("did you mean `{s}`?")),
                    );
                }
                for (_, v) in entries {
                    self.expected(v);
                }
            }
            Kind::Seq(items) => {
                for item in items {
                    self.expected(item);
                }
            }
            _ => {}
        }
    }

    fn matcher(&mut self, key: &Key, v: &Node) {
        let name = &*key.name;
        match name {
            "gte" | "lte" | "gt" | "lt" if !matches!(v.kind, Kind::Number(_)) => {
                self.wrong(v, name, "a number");
            }
            "between" => {
                let nums: Option<Vec<f64>> = match &v.kind {
                    Kind::Seq(items) if items.len() == 2 => items
                        .iter()
                        .map(|i| match &i.kind {
                            Kind::Number(n) => n.as_f64(),
                            _ => None,
                        })
                        .collect(),
                    _ => None,
                };
                match nums.as_deref() {
                    Some([a, b]) if a > b => self.error(
                        DiagnosticKind::BadValue,
                        v.pos,
                        format!("`between: [{a}, {b}]` has its bounds reversed"),
                    ),
                    Some(_) => {}
                    None => self.wrong(v, name, "a list of two numbers [min, max]"),
                }
            }
            "startsWith" | "endsWith" => {
                self.string(v, name);
            }
            "matches" => self.regex(v, name, None),
            _ => {}
        }
    }

    fn field(&mut self, spec: &FieldSpec, node: &Node, owner: &Node) {
        let name = spec.name;
        match spec.kind {
            FieldKind::Str => {
                self.string(node, name);
            }
            FieldKind::Glob => self.glob(node, name),
            FieldKind::Regex => {
                let flags = owner.get("flags").and_then(|(_, f)| f.as_str());
                let flags_ok = flags.is_none_or(|f| build_regex("", Some(f)).is_ok());
                self.regex(node, name, if flags_ok { flags } else { None });
            }
            FieldKind::Flags => {
                if let Some(f) = self.string(node, name)
                    && let Err(e) = build_regex("", Some(f))
                {
                    self.error(DiagnosticKind::BadRegex, node.pos, e);
                }
            }
            FieldKind::Path => self.path(node, name),
            FieldKind::Number | FieldKind::Score => self.number(spec.kind, node, name),
            FieldKind::Count => {
                self.count(node, name);
            }
            FieldKind::Bool => self.boolean(node, name),
            FieldKind::Occurrence => match &node.kind {
                Kind::Str(s) if matches!(&**s, "first" | "last") => {}
                Kind::Number(n) if n.as_u64().is_some_and(|n| n >= 1) => {}
                _ => self.wrong(node, name, "`first`, `last` or a whole number from 1"),
            },
            FieldKind::Expected => self.expected(node),
            FieldKind::Payload => {
                if matches!(node.kind, Kind::Map(_)) {
                    self.expected(node);
                } else {
                    self.wrong(node, name, "a mapping (a partial payload)");
                }
            }
            FieldKind::Any => {}
            FieldKind::Steps => self.steps(node, name),
            FieldKind::StrList => self.string_list(node, name, false),
            FieldKind::GlobList => match &node.kind {
                Kind::Seq(items) => items.iter().for_each(|item| self.glob(item, name)),
                _ => self.wrong(node, name, "a list of signal-name globs"),
            },
            FieldKind::Criteria => self.string_list(node, name, true),
            FieldKind::Assertion => self.assertion(node),
            FieldKind::Assertions => self.assertions(node, name),
            FieldKind::Schema => self.schema(node, name),
            FieldKind::TokenField => self.token_field(node, name),
        }
    }

    /// A number >= 0 (`Number`) or from 0 to 1 (`Score`).
    fn number(&mut self, kind: FieldKind, node: &Node, name: &str) {
        let x = match &node.kind {
            Kind::Number(n) => n.as_f64(),
            _ => None,
        };
        match kind {
            FieldKind::Score if !x.is_some_and(|x| (0.0..=1.0).contains(&x)) => {
                self.wrong(node, name, "a number from 0 to 1")
            }
            FieldKind::Number if !x.is_some_and(|x| x >= 0.0) => {
                self.wrong(node, name, "a number >= 0")
            }
            _ => {}
        }
    }

    /// A trajectory: a non-empty list of patterns or `{pattern, payload}`.
    fn steps(&mut self, node: &Node, name: &str) {
        let Kind::Seq(items) = &node.kind else {
            return self.wrong(node, name, "a list of patterns");
        };
        if items.is_empty() {
            self.error(
                DiagnosticKind::BadValue,
                node.pos,
                format!("`{name}` must list at least one step"),
            );
        }
        for item in items {
            match &item.kind {
                Kind::Str(_) => self.glob(item, "pattern"),
                Kind::Map(_) => self.step(item),
                _ => self.wrong(item, "a trajectory step", "a pattern or {pattern, payload}"),
            }
        }
    }

    /// One `{pattern, payload}` step of a trajectory.
    fn step(&mut self, item: &Node) {
        self.unknown_fields(item, &["pattern", "payload"], "a trajectory step");
        match item.get("pattern") {
            Some((_, p)) => self.glob(p, "pattern"),
            None => self.error(
                DiagnosticKind::MissingField,
                item.pos,
                "missing required field `pattern` in a trajectory step".into(),
            ),
        }
        if let Some((_, p)) = item.get("payload") {
            if matches!(p.kind, Kind::Map(_)) {
                self.expected(p);
            } else {
                self.wrong(p, "payload", "a mapping (a partial payload)");
            }
        }
    }

    /// A non-empty list of assertions.
    fn assertions(&mut self, node: &Node, name: &str) {
        let Kind::Seq(items) = &node.kind else {
            return self.wrong(node, name, "a list of assertions");
        };
        if items.is_empty() {
            self.error(
                DiagnosticKind::BadValue,
                node.pos,
                format!("`{name}` must hold at least one assertion"),
            );
        }
        for item in items {
            self.assertion(item);
        }
    }

    /// A JSON schema that compiles.
    fn schema(&mut self, node: &Node, name: &str) {
        if !matches!(node.kind, Kind::Map(_) | Kind::Bool(_)) {
            return self.wrong(node, name, "a JSON schema (a mapping)");
        }
        if let Err(e) = jsonschema::validator_for(&node.to_value()) {
            self.error(
                DiagnosticKind::BadValue,
                node.pos,
                format!("invalid JSON schema: {e}"),
            );
        }
    }

    /// `input`, `output` or `total`.
    fn token_field(&mut self, node: &Node, name: &str) {
        let Some(s) = self.string(node, name) else {
            return;
        };
        const FIELDS: &[&str] = &["input", "output", "total"];
        if !FIELDS.contains(&s) {
            let help = did_you_mean(s, FIELDS);
            self.push(
                Severity::Error,
                DiagnosticKind::BadValue,
                node.pos,
                format!("`field` must be input, output or total, found `{s}`"),
                help,
            );
        }
    }

    /// Check one assertion (and what it holds).
    pub(crate) fn assertion(&mut self, node: &Node) {
        if !matches!(node.kind, Kind::Map(_)) {
            self.error(
                DiagnosticKind::WrongType,
                node.pos,
                format!(
                    "an assertion must be a mapping with a `type`, found {}",
                    node.describe()
                ),
            );
            return;
        }
        let Some((_, ty_node)) = node.get("type") else {
            self.error(
                DiagnosticKind::MissingField,
                node.pos,
                "missing required field `type` in assertion".into(),
            );
            return;
        };
        let Some(ty) = self.string(ty_node, "type") else {
            return;
        };
        let Some(spec) = schema::spec(ty) else {
            let names: Vec<&str> = schema::TYPES.iter().map(|t| t.name).collect();
            let help = did_you_mean(ty, &names);
            self.push(
                Severity::Error,
                DiagnosticKind::UnknownType,
                ty_node.pos,
                format!("unknown assertion type `{ty}`"),
                help,
            );
            return;
        };
        self.typed_assertion(spec, node);
    }

    fn typed_assertion(&mut self, spec: &TypeSpec, node: &Node) {
        let mut known: Vec<&str> = vec!["type"];
        known.extend(spec.fields.iter().map(|f| f.name));
        self.unknown_fields(node, &known, &format!("{} assertion", spec.name));
        for f in spec.fields {
            match node.get(f.name) {
                Some((_, v)) => self.field(f, v, node),
                None if f.required => self.error(
                    DiagnosticKind::MissingField,
                    node.pos,
                    format!(
                        "missing required field `{}` in {} assertion",
                        f.name, spec.name
                    ),
                ),
                None => {}
            }
        }
        if !spec.one_of.is_empty() && !spec.one_of.iter().any(|f| node.get(f).is_some()) {
            self.error(
                DiagnosticKind::MissingField,
                node.pos,
                format!(
                    "missing required field `{}` in {} assertion",
                    spec.one_of[0], spec.name
                ),
            );
        }
        // Bounds that cannot both hold.
        let num = |k: &str| {
            node.get(k).and_then(|(_, v)| match &v.kind {
                Kind::Number(n) => n.as_f64(),
                _ => None,
            })
        };
        if let (Some(min), Some(max)) = (num("min"), num("max"))
            && min > max
            && let Some((_, v)) = node.get("min")
        {
            self.error(
                DiagnosticKind::BadValue,
                v.pos,
                format!("`min` ({min}) is greater than `max` ({max})"),
            );
        }
        if let (Some((_, e)), Some(_)) = (node.get("exists"), node.get("value"))
            && e.kind == Kind::Bool(false)
        {
            self.warn(
                DiagnosticKind::Ignored,
                e.pos,
                "`value` is ignored when `exists` is false".into(),
                None,
            );
        }
    }

    fn assertion_list(&mut self, node: &Node, field: &str) -> usize {
        match &node.kind {
            Kind::Seq(items) => {
                for item in items {
                    self.assertion(item);
                }
                items.len()
            }
            _ => {
                self.wrong(node, field, "a list of assertions");
                0
            }
        }
    }

    /// Check a whole dataset document.
    pub(crate) fn dataset(&mut self, root: &Node) {
        if root.kind == Kind::Null {
            self.error(
                DiagnosticKind::MissingField,
                root.pos,
                "the dataset is empty: it needs `name` (or `id`) and `cases`".into(),
            );
            return;
        }
        if !matches!(root.kind, Kind::Map(_)) {
            self.error(
                DiagnosticKind::WrongType,
                root.pos,
                format!(
                    "a dataset must be a mapping with `name` (or `id`) and `cases`, found {}",
                    root.describe()
                ),
            );
            return;
        }
        self.unknown_fields(root, DATASET_FIELDS, "dataset");
        if root.get("name").is_none() && root.get("id").is_none() {
            self.error(
                DiagnosticKind::MissingField,
                root.pos,
                "missing required field `name` (or `id`) in dataset".into(),
            );
        }
        for key in ["name", "id", "description", "workflowName"] {
            if let Some((_, v)) = root.get(key) {
                self.string(v, key);
            }
        }
        if let Some((_, v)) = root.get("version")
            && !matches!(v.kind, Kind::Str(_) | Kind::Number(_))
        {
            self.wrong(v, "version", "a string");
        }
        if let Some((_, v)) = root.get("metadata")
            && !matches!(v.kind, Kind::Map(_))
        {
            self.wrong(v, "metadata", "a mapping");
        }
        if let Some((_, v)) = root.get("defaultTimeout") {
            self.count(v, "defaultTimeout");
        }
        let defaults = match root.get("defaultAssertions") {
            Some((_, v)) => self.assertion_list(v, "defaultAssertions"),
            None => 0,
        };
        let Some((_, cases)) = root.get("cases") else {
            self.error(
                DiagnosticKind::MissingField,
                root.pos,
                "missing required field `cases` in dataset".into(),
            );
            return;
        };
        let Kind::Seq(items) = &cases.kind else {
            self.wrong(cases, "cases", "a list of cases");
            return;
        };
        if items.is_empty() {
            self.error(
                DiagnosticKind::EmptyCases,
                cases.pos,
                "the dataset has no cases".into(),
            );
        }
        // Keyed by the id as file names hold it (recordings, snapshots).
        let mut seen: HashMap<String, (&str, Pos)> = HashMap::new();
        for case in items {
            self.case(case, &mut seen, defaults);
        }
    }

    fn case<'n>(
        &mut self,
        node: &'n Node,
        seen: &mut HashMap<String, (&'n str, Pos)>,
        defaults: usize,
    ) {
        if !matches!(node.kind, Kind::Map(_)) {
            self.error(
                DiagnosticKind::WrongType,
                node.pos,
                format!(
                    "a case must be a mapping with `id`, `input` and `assertions`, found {}",
                    node.describe()
                ),
            );
            return;
        }
        self.unknown_fields(node, CASE_FIELDS, "case");
        let id = self.case_id(node, seen);
        let which = id
            .as_deref()
            .map(|i| format!("case `{i}`"))
            .unwrap_or_else(|| "case".into());
        for key in ["name", "description"] {
            if let Some((_, v)) = node.get(key) {
                self.string(v, key);
            }
        }
        if node.get("input").is_none() {
            self.error(
                DiagnosticKind::MissingField,
                node.pos,
                format!("missing required field `input` in {which}"),
            );
        }
        let own = match node.get("assertions") {
            Some((_, v)) => self.assertion_list(v, "assertions"),
            None => {
                self.error(
                    DiagnosticKind::MissingField,
                    node.pos,
                    format!("missing required field `assertions` in {which}"),
                );
                usize::MAX
            }
        };
        if own == 0 && defaults == 0 {
            self.warn(
                DiagnosticKind::NoAssertions,
                node.pos,
                format!("{which} has no assertions (and the dataset has no defaultAssertions): it checks nothing"),
                None,
            );
        }
        self.case_options(node, &which);
    }

    /// The case's `id`, checked: present, not empty, and naming files of its own.
    fn case_id<'n>(
        &mut self,
        node: &'n Node,
        seen: &mut HashMap<String, (&'n str, Pos)>,
    ) -> Option<String> {
        let Some((_, v)) = node.get("id") else {
            self.error(
                DiagnosticKind::MissingField,
                node.pos,
                "missing required field `id` in case".into(),
            );
            return None;
        };
        let id = self.string(v, "id")?;
        if id.is_empty() {
            self.error(
                DiagnosticKind::BadValue,
                v.pos,
                "`id` must not be empty".into(),
            );
            return None;
        }
        let file = file_safe(id);
        match seen.get(&file) {
            Some((first_id, first)) if *first_id == id => self.error(
                DiagnosticKind::DuplicateCaseId,
                v.pos,
                format!("duplicate case id `{id}` (first used at {first})"),
            ),
            Some((first_id, first)) => self.error(
                DiagnosticKind::DuplicateCaseId,
                v.pos,
                format!(
                    "case id `{id}` names the same files as `{first_id}` (used at {first}): \
                     recordings and snapshots write both as `{file}`; rename one"
                ),
            ),
            None => {
                seen.insert(file, (id, v.pos));
            }
        }
        Some(id.to_string())
    }

    /// The case's `tags`, `timeout`, `skip` and `only` (`which` names it).
    fn case_options(&mut self, node: &Node, which: &str) {
        if let Some((_, v)) = node.get("tags") {
            self.tags(v);
        }
        if let Some((_, v)) = node.get("timeout") {
            self.count(v, "timeout");
        }
        if let Some((_, v)) = node.get("skip") {
            self.boolean(v, "skip");
        }
        if let Some((k, v)) = node.get("only") {
            self.boolean(v, "only");
            if v.kind == Kind::Bool(true) {
                self.warn(
                    DiagnosticKind::OnlyLeftOn,
                    k.pos,
                    format!("`only: true` on {which}: every other case of the dataset is left out"),
                    Some("remove `only` before committing".into()),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        let types = ["signal.contains", "signal.count", "output.contains"];
        assert_eq!(suggest("signal.contans", &types), Some("signal.contains"));
        assert_eq!(suggest("signal_count", &types), Some("signal.count"));
        assert_eq!(suggest("tool.called", &types), None);
        assert_eq!(suggest("startswith", MATCHER_KEYS), Some("startsWith"));
        assert_eq!(suggest("agentID", &["agentId"]), Some("agentId"));
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}
