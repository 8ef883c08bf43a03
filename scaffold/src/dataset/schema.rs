//! What each assertion type accepts: its fields, their kinds, which are
//! required. The validator reads this table; a test checks it against the
//! [`Assertion`](crate::assert::Assertion) enum so the two cannot drift.

/// The kind of value a field takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldKind {
    /// A string.
    Str,
    /// A signal-name glob.
    Glob,
    /// A regex (compiled with the assertion's `flags`).
    Regex,
    /// Regex flags.
    Flags,
    /// A dot/bracket path.
    Path,
    /// A number >= 0.
    Number,
    /// A number in 0..=1.
    Score,
    /// An integer >= 0.
    Count,
    /// `true` / `false`.
    Bool,
    /// An expected value or value matcher.
    Expected,
    /// A partial payload: a mapping (leaves may be matchers).
    Payload,
    /// Any value, compared exactly.
    Any,
    /// Trajectory steps: strings or `{pattern, payload}`.
    Steps,
    /// A list of strings.
    StrList,
    /// A list of signal-name globs.
    GlobList,
    /// `first`, `last` or a whole number from 1.
    Occurrence,
    /// A non-empty list of strings.
    Criteria,
    /// One nested assertion.
    Assertion,
    /// A non-empty list of nested assertions.
    Assertions,
    /// A JSON Schema (a mapping or a boolean).
    Schema,
    /// `input`, `output` or `total`.
    TokenField,
}

/// One field of an assertion type.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FieldSpec {
    pub(crate) name: &'static str,
    pub(crate) kind: FieldKind,
    pub(crate) required: bool,
}

/// One assertion type.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TypeSpec {
    pub(crate) name: &'static str,
    pub(crate) fields: &'static [FieldSpec],
    /// At least one of these must be present (when not empty).
    pub(crate) one_of: &'static [&'static str],
}

const fn req(name: &'static str, kind: FieldKind) -> FieldSpec {
    FieldSpec {
        name,
        kind,
        required: true,
    }
}

const fn opt(name: &'static str, kind: FieldKind) -> FieldSpec {
    FieldSpec {
        name,
        kind,
        required: false,
    }
}

const fn ty(name: &'static str, fields: &'static [FieldSpec]) -> TypeSpec {
    TypeSpec {
        name,
        fields,
        one_of: &[],
    }
}

use FieldKind as K;

const PATTERN_PAYLOAD: &[FieldSpec] = &[req("pattern", K::Glob), opt("payload", K::Payload)];
const BOUND: &[FieldSpec] = &[req("value", K::Number)];
const TOKENS: &[FieldSpec] = &[req("value", K::Number), opt("field", K::TokenField)];
const TEXT: &[FieldSpec] = &[
    opt("text", K::Str),
    opt("value", K::Str),
    opt("path", K::Path),
    opt("caseSensitive", K::Bool),
];

/// Every type a dataset may write, canonical names first, then seed 001's.
pub(crate) const TYPES: &[TypeSpec] = &[
    ty("signal.contains", PATTERN_PAYLOAD),
    ty("signal.not", PATTERN_PAYLOAD),
    ty(
        "signal.count",
        &[
            req("pattern", K::Glob),
            opt("payload", K::Payload),
            opt("min", K::Count),
            opt("max", K::Count),
            opt("exact", K::Count),
        ],
    ),
    ty(
        "signal.trajectory",
        &[
            req("patterns", K::Steps),
            opt("strict", K::Bool),
            opt("ignore", K::GlobList),
        ],
    ),
    ty("signal.first", PATTERN_PAYLOAD),
    ty("signal.last", PATTERN_PAYLOAD),
    ty(
        "snapshot.at",
        &[
            req("afterSignal", K::Glob),
            opt("occurrence", K::Occurrence),
            req("path", K::Path),
            opt("value", K::Expected),
            opt("exists", K::Bool),
        ],
    ),
    ty(
        "snapshot.final",
        &[
            req("path", K::Path),
            opt("value", K::Expected),
            opt("exists", K::Bool),
        ],
    ),
    ty(
        "agent.activated",
        &[
            req("agentId", K::Str),
            opt("count", K::Count),
            opt("min", K::Count),
            opt("max", K::Count),
        ],
    ),
    ty("agent.completed", &[req("agentId", K::Str)]),
    ty(
        "agent.causedBy",
        &[req("agentId", K::Str), req("triggerPattern", K::Glob)],
    ),
    ty(
        "agent.emitted",
        &[req("agentId", K::Str), req("signal", K::Glob)],
    ),
    ty(
        "agent.skipped",
        &[req("agentId", K::Str), opt("reason", K::Str)],
    ),
    ty("metric.latency.max", BOUND),
    ty("metric.latency.min", BOUND),
    ty("metric.cost.max", BOUND),
    ty("metric.cost.min", BOUND),
    ty("metric.tokens.max", TOKENS),
    ty("metric.tokens.min", TOKENS),
    ty(
        "metric.activations",
        &[
            opt("min", K::Count),
            opt("max", K::Count),
            opt("exact", K::Count),
        ],
    ),
    TypeSpec {
        name: "output.contains",
        fields: TEXT,
        one_of: &["text", "value"],
    },
    TypeSpec {
        name: "output.notContains",
        fields: TEXT,
        one_of: &["text", "value"],
    },
    ty(
        "output.matches",
        &[
            req("regex", K::Regex),
            opt("flags", K::Flags),
            opt("path", K::Path),
        ],
    ),
    ty(
        "output.json",
        &[opt("schema", K::Schema), opt("path", K::Path)],
    ),
    ty(
        "output.length",
        &[
            opt("min", K::Count),
            opt("max", K::Count),
            opt("path", K::Path),
        ],
    ),
    ty(
        "output.equals",
        &[
            req("value", K::Any),
            opt("path", K::Path),
            opt("caseSensitive", K::Bool),
        ],
    ),
    ty(
        "tool.called",
        &[
            req("name", K::Str),
            opt("count", K::Count),
            opt("min", K::Count),
            opt("max", K::Count),
        ],
    ),
    ty("tool.notCalled", &[req("name", K::Str)]),
    ty(
        "tool.calledWith",
        &[req("name", K::Str), req("args", K::Payload)],
    ),
    ty("tool.sequence", &[req("tools", K::StrList)]),
    ty(
        "llm.judge",
        &[
            req("criteria", K::Criteria),
            opt("rubric", K::Str),
            req("minScore", K::Score),
            opt("model", K::Str),
            opt("temperature", K::Number),
            opt("path", K::Path),
            opt("borderlineMargin", K::Score),
            opt("reask", K::Count),
        ],
    ),
    ty("all", &[req("assertions", K::Assertions)]),
    ty("any", &[req("assertions", K::Assertions)]),
    ty("not", &[req("assertion", K::Assertion)]),
    // Seed 001.
    ty("metric.latency_ms.max", BOUND),
    ty("metric.total_cost_usd.max", BOUND),
    ty("metric.tokens.input.max", BOUND),
    ty("metric.tokens.output.max", BOUND),
    ty("behavior.no_errors", &[]),
    ty("behavior.node_executed", &[req("nodeId", K::Str)]),
    ty(
        "behavior.node_invocations.max",
        &[req("nodeId", K::Str), req("value", K::Count)],
    ),
];

/// The spec of `name`, if it is a known type.
pub(crate) fn spec(name: &str) -> Option<&'static TypeSpec> {
    TYPES.iter().find(|t| t.name == name)
}

/// A field of the top level of a dataset.
pub(crate) const DATASET_FIELDS: &[&str] = &[
    "name",
    "id",
    "description",
    "defaultAssertions",
    "defaultTimeout",
    "metadata",
    "cases",
    "workflowName",
    "version",
];

/// A field of a case.
pub(crate) const CASE_FIELDS: &[&str] = &[
    "id",
    "name",
    "description",
    "input",
    "assertions",
    "tags",
    "timeout",
    "skip",
    "only",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert::{Assertion, LEGACY_TYPES};
    use serde_json::{Map, Value, json};

    /// A sample value for a field kind that deserializes.
    fn sample(kind: FieldKind) -> Value {
        match kind {
            K::Str | K::Glob | K::Regex => json!("x"),
            K::Flags => json!("i"),
            K::Path => json!("a.b"),
            K::Number | K::Score | K::Count => json!(1),
            K::Occurrence => json!(2),
            K::Bool => json!(true),
            K::Expected | K::Any => json!({"gte": 1}),
            K::Payload => json!({"a": 1}),
            K::Steps => json!(["a:b", {"pattern": "c", "payload": {"d": 1}}]),
            K::StrList | K::Criteria | K::GlobList => json!(["x"]),
            K::Assertion => json!({"type": "signal.contains", "pattern": "x"}),
            K::Assertions => json!([{"type": "signal.contains", "pattern": "x"}]),
            K::Schema => json!({"type": "object"}),
            K::TokenField => json!("input"),
        }
    }

    #[test]
    fn table_matches_the_enum() {
        let canonical: Vec<&str> = TYPES
            .iter()
            .map(|t| t.name)
            .filter(|n| !LEGACY_TYPES.iter().any(|(l, _)| l == n))
            .collect();
        assert_eq!(canonical, Assertion::TYPES);
        for t in TYPES {
            // Every field present: deserializes, and every field survives a
            // round trip (so no field is silently ignored).
            let mut all = Map::new();
            all.insert("type".into(), json!(t.name));
            for f in t.fields {
                if f.name == "value" && t.one_of.contains(&"value") {
                    continue; // an alias of `text`
                }
                all.insert(f.name.into(), sample(f.kind));
            }
            let a: Assertion = serde_json::from_value(Value::Object(all.clone()))
                .unwrap_or_else(|e| panic!("{}: {e}", t.name));
            if !LEGACY_TYPES.iter().any(|(l, _)| *l == t.name) {
                let back = serde_json::to_value(&a).unwrap();
                for f in t.fields {
                    if all.contains_key(f.name) {
                        assert!(
                            back.get(f.name).is_some() || f.name == "strict",
                            "{}: field {} lost in {back}",
                            t.name,
                            f.name
                        );
                    }
                }
            }
            // Only the required fields: deserializes.
            let mut min = Map::new();
            min.insert("type".into(), json!(t.name));
            for f in t.fields.iter().filter(|f| f.required) {
                min.insert(f.name.into(), sample(f.kind));
            }
            if let Some(first) = t.one_of.first() {
                min.insert((*first).into(), json!("x"));
            }
            serde_json::from_value::<Assertion>(Value::Object(min))
                .unwrap_or_else(|e| panic!("{} (required only): {e}", t.name));
        }
    }
}
