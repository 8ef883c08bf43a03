//! Per-provider forms of a structured-output schema, and the check of the
//! answer against the original.
//!
//! A schema derived with schemars is full JSON Schema; the APIs accept less.
//!
//! [`openai_strict`] gives the form OpenAI's strict mode accepts, after
//! `to_strict_json_schema` of openai-python (`src/openai/lib/_pydantic.py`):
//! `$defs` are transformed in place; every object gets
//! `additionalProperties: false` and lists all its properties in `required`
//! (the required ones first, in their order: a strict schema is sent as it
//! is);
//! `items`, `anyOf` and `allOf` are walked; a one-entry `allOf` is merged
//! into its schema; a `null` default is dropped; a `$ref` with siblings
//! (schemars puts a field's doc comment next to the `$ref` of its type) is
//! inlined. Pydantic makes optional fields nullable itself, schemars only
//! for `Option`: here a property that was not required becomes nullable.
//! Two more rules the Python SDK needs not, for what schemars derives and
//! pydantic does not: `oneOf` (tagged enums, whose variants never overlap)
//! becomes `anyOf`, which strict mode accepts where it rejects `oneOf`; and
//! a `format` strict mode does not know (schemars writes `uint32`, `int64`,
//! `double`, ... on numbers) moves into the description, as strict mode
//! rejects an unknown format (`'uri' is not a valid format`, reported in
//! can1357/oh-my-pi#206 and 1jehuang/jcode#543). A schema strict mode cannot
//! express has no strict form: maps (`HashMap<String, T>`: an
//! `additionalProperties` schema), free-form values (`serde_json::Value`: a
//! `true` or empty schema, `items: true`), objects without properties.
//!
//! [`anthropic_subset`] gives the subset Anthropic's structured outputs
//! accept, after `transform_schema` of anthropic-sdk-python
//! (`src/anthropic/lib/_parse/_transform.py`) and `transformJSONSchema` of
//! anthropic-sdk-typescript (`src/lib/transform-json-schema.ts`): kept are
//! `$defs`, `$ref` (alone), `type`, `anyOf` (`oneOf` becomes `anyOf`),
//! `allOf`, `enum`, `description`, `title`, an object's `properties` and
//! `required` with `additionalProperties: false` always, a string's
//! `format` among the supported ones, an array's `items` and a `minItems`
//! of 0 or 1. Every other keyword (`minimum`, `maximum`, `pattern`,
//! `minLength`, `default`, another `format`, ...) moves into the
//! description as `{minimum: 0, format: "uint32"}`, so the model still
//! reads it. Beyond the SDKs, for what schemars derives: a `type` list
//! (`["string", "null"]` for `Option<String>`) becomes an `anyOf` of single
//! types, and `const` (the tag of an internally tagged enum) becomes a
//! one-value `enum`, which the subset keeps. A map loses its arbitrary keys
//! (`additionalProperties` other than `false` is outside the subset): the
//! model can only answer it empty.
//!
//! Both forms are looser than the original (a moved constraint is only
//! read by the model, a strict answer may carry `null` for an absent
//! optional field), so the answer is checked against the original schema
//! with [`AnswerCheck`].

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};
use thiserror::Error;

/// String formats OpenAI's strict mode accepts.
const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// String formats Anthropic's structured outputs accept.
const ANTHROPIC_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// How deep a schema is walked (inlined `$ref`s of recursive types stop here).
const MAX_DEPTH: usize = 64;

/// Why an answer was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SchemaError {
    /// The schema itself does not compile.
    #[error("invalid JSON schema: {0}")]
    Invalid(String),
    /// The answer breaks the schema: one entry per violation, each naming
    /// the path in the answer and the constraint.
    #[error("{}", .0.join("; "))]
    Mismatch(Vec<String>),
}

/// The form of `schema` OpenAI's strict structured outputs accept, or
/// `None` when strict mode cannot express it (then send the schema as it is
/// with `strict: false`); see the module docs.
pub fn openai_strict(schema: &Value) -> Option<Value> {
    if !is_object_schema(schema.as_object()?) {
        return None;
    }
    strict(schema, schema, 0)
}

/// The form of `schema` Anthropic's structured outputs accept; see the
/// module docs.
pub fn anthropic_subset(schema: &Value) -> Value {
    subset(schema.clone(), 0)
}

/// Checks structured answers against the full schema they were asked with.
///
/// An optional property answered `null` where the schema does not allow
/// `null` (strict mode's way of leaving it out) is dropped first, as the
/// SDKs' parsers read such a `null` as absent; then the answer must follow
/// the schema, constraints the provider form left to the description
/// included.
pub struct AnswerCheck {
    schema: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for AnswerCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnswerCheck")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl AnswerCheck {
    /// Violations named at most, per answer.
    const MAX_VIOLATIONS: usize = 5;

    /// A check of answers against `schema`.
    pub fn new(schema: &Value) -> Result<Self, SchemaError> {
        let validator =
            jsonschema::validator_for(schema).map_err(|e| SchemaError::Invalid(e.to_string()))?;
        Ok(AnswerCheck {
            schema: schema.clone(),
            validator,
        })
    }

    /// The answer without strict mode's `null`s for absent fields, if it
    /// follows the schema.
    pub fn check(&self, mut answer: Value) -> Result<Value, SchemaError> {
        drop_absent_nulls(&self.schema, &self.schema, &mut answer, 0);
        let violations: Vec<String> = self
            .validator
            .iter_errors(&answer)
            .take(Self::MAX_VIOLATIONS)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_string() } else { at };
                format!("{at} ({}): {e}", e.kind().keyword())
            })
            .collect();
        if violations.is_empty() {
            Ok(answer)
        } else {
            Err(SchemaError::Mismatch(violations))
        }
    }
}

// ---------------------------------------------------------------------------
// OpenAI strict
// ---------------------------------------------------------------------------

fn strict(schema: &Value, root: &Value, depth: usize) -> Option<Value> {
    // A boolean schema (`true`: any value) has no strict form.
    let map = schema.as_object()?;
    if depth > MAX_DEPTH {
        return None;
    }
    if let Some(Value::String(reference)) = map.get("$ref") {
        let siblings = map
            .keys()
            .any(|k| !matches!(k.as_str(), "$ref" | "$defs" | "definitions"));
        if siblings {
            // Properties of the schema take priority over those of the `$ref`.
            let mut merged = resolve(root, reference)?.as_object()?.clone();
            merged.extend(
                map.iter()
                    .filter(|(k, _)| k.as_str() != "$ref")
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
            return strict(&Value::Object(merged), root, depth + 1);
        }
        resolve(root, reference)?;
    } else if !constrains_shape(map) {
        // `{}` or a description alone: any value.
        return None;
    }
    let mut out = map.clone();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = map.get(key) {
            let defs = defs
                .iter()
                .map(|(name, def)| Some((name.clone(), strict(def, root, depth + 1)?)))
                .collect::<Option<Map<_, _>>>()?;
            out.insert(key.into(), Value::Object(defs));
        }
    }
    if is_object_schema(map) {
        close_object(map, &mut out, root, depth)?;
    }
    strict_items(map, &mut out, root, depth)?;
    strict_variants(&mut out, root, depth)?;
    if out.get("default") == Some(&Value::Null) {
        out.remove("default");
    }
    let unknown_format = out
        .get("format")
        .is_some_and(|f| !(has_type(map, "string") && is_one_of(f, OPENAI_FORMATS)));
    if unknown_format {
        let mut moved = Map::new();
        moved.extend(out.remove_entry("format"));
        describe(&mut out, &moved);
    }
    Some(Value::Object(out))
}

/// `additionalProperties: false`, every property required, the optional
/// ones nullable; `None` for an object whose keys are not listed.
fn close_object(
    map: &Map<String, Value>,
    out: &mut Map<String, Value>,
    root: &Value,
    depth: usize,
) -> Option<()> {
    match map.get("additionalProperties") {
        None | Some(Value::Bool(false)) => {}
        // A map: its keys are not known in advance.
        Some(_) => return None,
    }
    if map.contains_key("patternProperties") {
        return None;
    }
    let Some(Value::Object(properties)) = map.get("properties") else {
        return None;
    };
    let required = required_of(map);
    // The required ones first, in their order, then the others.
    let order: Vec<Value> = map
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|name| name.as_str().is_some_and(|n| properties.contains_key(n)))
        .cloned()
        .chain(
            properties
                .keys()
                .filter(|k| !required.contains(k.as_str()))
                .map(|k| json!(k)),
        )
        .collect();
    let mut strict_properties = Map::new();
    for (name, property) in properties {
        let mut property = strict(property, root, depth + 1)?;
        if !required.contains(name.as_str()) {
            property = nullable(property, root);
        }
        strict_properties.insert(name.clone(), property);
    }
    out.insert("required".into(), Value::Array(order));
    out.insert("properties".into(), Value::Object(strict_properties));
    out.insert("additionalProperties".into(), Value::Bool(false));
    Some(())
}

/// An array's `items` and `prefixItems` in strict form.
fn strict_items(
    map: &Map<String, Value>,
    out: &mut Map<String, Value>,
    root: &Value,
    depth: usize,
) -> Option<()> {
    match map.get("items") {
        Some(items @ Value::Object(_)) => {
            out.insert("items".into(), strict(items, root, depth + 1)?);
        }
        // Items of any kind (`Vec<serde_json::Value>`).
        Some(Value::Bool(true)) => return None,
        _ => {}
    }
    if let Some(Value::Array(prefix)) = map.get("prefixItems") {
        out.insert("prefixItems".into(), strict_all(prefix, root, depth)?);
    }
    Some(())
}

/// `oneOf` as `anyOf`, variants in strict form, a one-part `allOf` merged.
fn strict_variants(out: &mut Map<String, Value>, root: &Value, depth: usize) -> Option<()> {
    if let Some(Value::Array(variants)) = out.remove("oneOf") {
        out.insert("anyOf".into(), Value::Array(variants));
    }
    if let Some(Value::Array(variants)) = out.get("anyOf") {
        let variants = strict_all(variants, root, depth)?;
        out.insert("anyOf".into(), variants);
    }
    if let Some(Value::Array(parts)) = out.remove("allOf") {
        match parts.as_slice() {
            [only] => {
                if let Value::Object(only) = strict(only, root, depth + 1)? {
                    out.extend(only);
                }
            }
            _ => {
                out.insert("allOf".into(), strict_all(&parts, root, depth)?);
            }
        }
    }
    Some(())
}

fn strict_all(schemas: &[Value], root: &Value, depth: usize) -> Option<Value> {
    schemas
        .iter()
        .map(|s| strict(s, root, depth + 1))
        .collect::<Option<Vec<_>>>()
        .map(Value::Array)
}

/// Whether `map` says anything about the shape of a value.
fn constrains_shape(map: &Map<String, Value>) -> bool {
    [
        "type",
        "$ref",
        "anyOf",
        "oneOf",
        "allOf",
        "enum",
        "const",
        "properties",
    ]
    .iter()
    .any(|k| map.contains_key(*k))
}

/// `schema` accepting `null` too: `type` lists `null`, or an `anyOf` has a
/// `null` variant.
fn nullable(schema: Value, root: &Value) -> Value {
    if accepts_null(&schema, root, 0) {
        return schema;
    }
    let Value::Object(mut map) = schema else {
        return schema;
    };
    let restricted = map.contains_key("enum") || map.contains_key("const");
    match map.get_mut("type") {
        Some(Value::String(t)) if !restricted => {
            let t = std::mem::take(t);
            map.insert("type".into(), json!([t, "null"]));
            return Value::Object(map);
        }
        Some(Value::Array(types)) if !restricted => {
            types.push(json!("null"));
            return Value::Object(map);
        }
        _ => {}
    }
    if map.len() == 1
        && let Some(Value::Array(variants)) = map.get_mut("anyOf")
    {
        variants.push(json!({"type": "null"}));
        return Value::Object(map);
    }
    json!({"anyOf": [Value::Object(map), {"type": "null"}]})
}

// ---------------------------------------------------------------------------
// Anthropic subset
// ---------------------------------------------------------------------------

fn subset(schema: Value, depth: usize) -> Value {
    let Value::Object(mut rest) = schema else {
        return schema;
    };
    if depth > MAX_DEPTH {
        return Value::Object(rest);
    }
    if let Some(Value::Array(types)) = rest.get("type") {
        let types = types.clone();
        return subset(split_types(rest, &types), depth + 1);
    }
    let mut out = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = rest.remove(key) {
            let defs = defs
                .into_iter()
                .map(|(name, def)| (name, subset(def, depth + 1)))
                .collect();
            out.insert(key.into(), Value::Object(defs));
        }
    }
    if let Some(reference) = rest.remove("$ref") {
        out.insert("$ref".into(), reference);
        return Value::Object(out);
    }
    let kind = rest.remove("type");
    let any_of = rest.remove("anyOf");
    let one_of = rest.remove("oneOf");
    let all_of = rest.remove("allOf");
    match (any_of, one_of, all_of) {
        (Some(Value::Array(v)), _, _) | (None, Some(Value::Array(v)), _) => {
            out.insert("anyOf".into(), subset_all(v, depth));
        }
        (None, None, Some(Value::Array(v))) => {
            out.insert("allOf".into(), subset_all(v, depth));
        }
        _ => {
            if let Some(kind) = &kind {
                out.insert("type".into(), kind.clone());
            }
        }
    }
    if let Some(Value::Array(values)) = rest.remove("enum") {
        out.insert("enum".into(), Value::Array(values));
    } else if let Some(value) = rest.remove("const") {
        out.insert("enum".into(), json!([value]));
    }
    for key in ["description", "title"] {
        out.extend(rest.remove_entry(key));
    }
    keep_for_type(
        kind.as_ref().and_then(Value::as_str),
        &mut rest,
        &mut out,
        depth,
    );
    describe(&mut out, &rest);
    Value::Object(out)
}

/// Move what the subset keeps for a `kind` of value from `rest` to `out`.
fn keep_for_type(
    kind: Option<&str>,
    rest: &mut Map<String, Value>,
    out: &mut Map<String, Value>,
    depth: usize,
) {
    match kind {
        Some("object") => {
            let properties = match rest.remove("properties") {
                Some(Value::Object(p)) => p
                    .into_iter()
                    .map(|(name, s)| (name, subset(s, depth + 1)))
                    .collect(),
                _ => Map::new(),
            };
            out.insert("properties".into(), Value::Object(properties));
            rest.remove("additionalProperties");
            out.insert("additionalProperties".into(), Value::Bool(false));
            out.extend(rest.remove_entry("required"));
        }
        Some("string")
            if rest
                .get("format")
                .is_some_and(|f| is_one_of(f, ANTHROPIC_FORMATS)) =>
        {
            out.extend(rest.remove_entry("format"));
        }
        Some("array") => {
            if let Some(items) = rest.remove("items") {
                out.insert("items".into(), subset(items, depth + 1));
            }
            if matches!(rest.get("minItems").and_then(Value::as_u64), Some(0 | 1)) {
                out.extend(rest.remove_entry("minItems"));
            }
        }
        _ => {}
    }
}

fn subset_all(schemas: Vec<Value>, depth: usize) -> Value {
    Value::Array(schemas.into_iter().map(|s| subset(s, depth + 1)).collect())
}

/// `{type: [a, b], ...}` as `{anyOf: [{type: a, ...}, {type: b, ...}]}`,
/// the annotations staying outside.
fn split_types(mut rest: Map<String, Value>, types: &[Value]) -> Value {
    rest.remove("type");
    let mut outer = Map::new();
    for key in ["description", "title", "default"] {
        outer.extend(rest.remove_entry(key));
    }
    if let [only] = types {
        rest.insert("type".into(), only.clone());
        rest.extend(outer);
        return Value::Object(rest);
    }
    let variants = types
        .iter()
        .map(|t| {
            if t == "null" {
                return json!({"type": "null"});
            }
            let mut variant = rest.clone();
            variant.insert("type".into(), t.clone());
            Value::Object(variant)
        })
        .collect();
    outer.insert("anyOf".into(), Value::Array(variants));
    Value::Object(outer)
}

// ---------------------------------------------------------------------------
// Shared
// ---------------------------------------------------------------------------

/// Append `moved` keywords to the description of `out`, as the Anthropic
/// SDKs do: `{minimum: 0, format: "uint32"}` after a blank line.
fn describe(out: &mut Map<String, Value>, moved: &Map<String, Value>) {
    if moved.is_empty() {
        return;
    }
    let listed: Vec<String> = moved.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let listed = format!("{{{}}}", listed.join(", "));
    let description = match out.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => format!("{d}\n\n{listed}"),
        _ => listed,
    };
    out.insert("description".into(), Value::String(description));
}

fn is_one_of(value: &Value, allowed: &[&str]) -> bool {
    value.as_str().is_some_and(|v| allowed.contains(&v))
}

/// Whether `type` is `kind` or a list holding it.
fn has_type(map: &Map<String, Value>, kind: &str) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == kind,
        Some(Value::Array(types)) => types.iter().any(|t| t == kind),
        _ => false,
    }
}

fn is_object_schema(map: &Map<String, Value>) -> bool {
    has_type(map, "object") || map.contains_key("properties")
}

fn required_of(map: &Map<String, Value>) -> BTreeSet<&str> {
    map.get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The schema a local `$ref` (`#/$defs/Name`) points to.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let path = reference.strip_prefix("#")?;
    if path.is_empty() {
        return Some(root);
    }
    root.pointer(path)
}

/// Whether `schema` lets a value be `null`.
fn accepts_null(schema: &Value, root: &Value, depth: usize) -> bool {
    let Some(map) = schema.as_object() else {
        return schema == &Value::Bool(true);
    };
    if depth > MAX_DEPTH {
        return false;
    }
    if let Some(target) = map
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve(root, r))
        && !accepts_null(target, root, depth + 1)
    {
        return false;
    }
    let in_variants = |key: &str| {
        map.get(key)
            .and_then(Value::as_array)
            .map(|v| v.iter().any(|s| accepts_null(s, root, depth + 1)))
    };
    if let Some(any) = in_variants("anyOf").or_else(|| in_variants("oneOf")) {
        return any;
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        return values.contains(&Value::Null);
    }
    if let Some(value) = map.get("const") {
        return value.is_null();
    }
    match map.get("type") {
        Some(_) => has_type(map, "null"),
        None => !map.contains_key("properties"),
    }
}

/// Drop, in `value`, the `null`s of optional properties whose schema does
/// not allow `null`, walking `schema` along the answer.
fn drop_absent_nulls(schema: &Value, root: &Value, value: &mut Value, depth: usize) {
    let Some(map) = schema.as_object() else {
        return;
    };
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(target) = map
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve(root, r))
    {
        drop_absent_nulls(target, root, value, depth + 1);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(variants)) = map.get(key) {
            for variant in variants {
                drop_absent_nulls(variant, root, value, depth + 1);
            }
        }
    }
    match value {
        Value::Object(fields) => {
            let Some(Value::Object(properties)) = map.get("properties") else {
                return;
            };
            let required = required_of(map);
            fields.retain(|name, v| {
                !(v.is_null()
                    && !required.contains(name.as_str())
                    && properties
                        .get(name)
                        .is_some_and(|p| !accepts_null(p, root, depth + 1)))
            });
            for (name, v) in fields.iter_mut() {
                if let Some(property) = properties.get(name) {
                    drop_absent_nulls(property, root, v, depth + 1);
                }
            }
        }
        Value::Array(elements) => {
            let prefix = map.get("prefixItems").and_then(Value::as_array);
            let prefix_len = prefix.map_or(0, Vec::len);
            for (i, element) in elements.iter_mut().enumerate() {
                let item = match prefix {
                    Some(prefix) if i < prefix_len => prefix.get(i),
                    _ => map.get("items"),
                };
                if let Some(item) = item {
                    drop_absent_nulls(item, root, element, depth + 1);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    // The types here are only read through their schemas.
    #![allow(dead_code)]

    use std::collections::HashMap;

    use schemars::JsonSchema;
    use serde::Deserialize;

    use super::*;

    /// Who wrote it.
    #[derive(Debug, Deserialize, JsonSchema)]
    struct Author {
        /// Their name.
        name: String,
        /// Their email.
        #[schemars(email)]
        email: Option<String>,
    }

    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    enum Verdict {
        Accept,
        Reject,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(tag = "kind")]
    enum Change {
        Rename { from: String, to: String },
        Delete,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    enum Mark {
        Plain,
        Scored(u8),
        Tagged { tag: String },
    }

    /// A review with most of what schemars derives.
    #[derive(Debug, Deserialize, JsonSchema)]
    struct Review {
        /// The reviewer.
        author: Author,
        co_author: Option<Author>,
        verdict: Verdict,
        maybe: Option<Verdict>,
        changes: Vec<Change>,
        mark: Mark,
        /// Lines looked at.
        lines: u32,
        #[schemars(range(min = 1, max = 5))]
        stars: u8,
        #[serde(default)]
        retries: u32,
        #[schemars(length(min = 2))]
        tags: Vec<String>,
        #[schemars(regex(pattern = r"^[a-z]+$"))]
        slug: String,
        score: f64,
        note: Option<String>,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    struct Labelled {
        name: String,
        labels: HashMap<String, u32>,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    struct Nested {
        inner: Labelled,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    struct Free {
        extra: Value,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    struct FreeItems {
        extras: Vec<Value>,
    }

    /// A recursive type.
    #[derive(Debug, Deserialize, JsonSchema)]
    struct Tree {
        label: String,
        /// The subtrees.
        children: Vec<Tree>,
        #[serde(default)]
        weight: Option<u32>,
    }

    /// A recursive type whose `$ref` carries a description.
    #[derive(Debug, Deserialize, JsonSchema)]
    struct Chain {
        /// The next link.
        next: Box<Chain>,
    }

    fn schema_of<T: JsonSchema>() -> Value {
        let mut schema = schemars::schema_for!(T).to_value();
        schema.as_object_mut().map(|m| m.remove("$schema"));
        schema
    }

    /// Every schema in `schema` (itself, `$defs`, properties, items, variants).
    fn walk<'a>(schema: &'a Value, out: &mut Vec<&'a Value>) {
        out.push(schema);
        let Some(map) = schema.as_object() else {
            return;
        };
        for key in ["$defs", "definitions", "properties"] {
            if let Some(Value::Object(children)) = map.get(key) {
                children.values().for_each(|c| walk(c, out));
            }
        }
        for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
            if let Some(Value::Array(children)) = map.get(key) {
                children.iter().for_each(|c| walk(c, out));
            }
        }
        if let Some(items) = map.get("items") {
            walk(items, out);
        }
        if let Some(extra @ Value::Object(_)) = map.get("additionalProperties") {
            walk(extra, out);
        }
    }

    fn nodes(schema: &Value) -> Vec<&Value> {
        let mut out = Vec::new();
        walk(schema, &mut out);
        out
    }

    fn is_object(node: &Value) -> bool {
        node.as_object().is_some_and(is_object_schema)
    }

    fn keys(value: &Value) -> Vec<&str> {
        value
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    // -- OpenAI strict ------------------------------------------------------

    #[test]
    fn openai_strict_closes_every_object_and_requires_every_property() {
        let strict = openai_strict(&schema_of::<Review>()).expect("a strict form");
        let objects: Vec<&Value> = nodes(&strict)
            .into_iter()
            .filter(|n| is_object(n))
            .collect();
        // Review, Author, Change's two variants, Mark's two object variants
        // and the Tagged variant's body, the inlined Author.
        assert!(objects.len() >= 7, "{objects:#?}");
        for object in objects {
            assert_eq!(object["additionalProperties"], json!(false), "{object:#}");
            let mut required: Vec<&str> = object["required"]
                .as_array()
                .expect("required")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            required.sort_unstable();
            assert_eq!(required, keys(&object["properties"]), "{object:#}");
        }
    }

    #[test]
    fn openai_strict_makes_optional_properties_nullable() {
        let strict = openai_strict(&schema_of::<Review>()).unwrap();
        let properties = &strict["properties"];
        // `#[serde(default)]`: was optional, not nullable.
        assert_eq!(properties["retries"]["type"], json!(["integer", "null"]));
        // Option: nullable already, unchanged.
        assert_eq!(properties["note"]["type"], json!(["string", "null"]));
        assert_eq!(
            properties["maybe"],
            json!({"anyOf": [{"$ref": "#/$defs/Verdict"}, {"type": "null"}]})
        );
        assert_eq!(
            strict["$defs"]["Author"]["properties"]["email"]["type"],
            json!(["string", "null"])
        );
        // Required ones stay non-nullable.
        assert_eq!(properties["lines"]["type"], json!("integer"));
        assert_eq!(properties["verdict"], json!({"$ref": "#/$defs/Verdict"}));
    }

    #[test]
    fn openai_strict_inlines_refs_with_siblings_and_turns_one_of_into_any_of() {
        let strict = openai_strict(&schema_of::<Review>()).unwrap();
        let author = &strict["properties"]["author"];
        assert_eq!(author["description"], json!("The reviewer."));
        assert_eq!(author["type"], json!("object"));
        assert_eq!(author["additionalProperties"], json!(false));
        assert!(author.get("$ref").is_none());
        for node in nodes(&strict) {
            assert!(node.get("oneOf").is_none(), "{node:#}");
            if node.get("$ref").is_some() {
                assert_eq!(keys(node), ["$ref"], "{node:#}");
            }
        }
        assert_eq!(
            strict["$defs"]["Change"]["anyOf"].as_array().unwrap().len(),
            2
        );
    }

    #[test]
    fn openai_strict_moves_unknown_formats_into_the_description_and_keeps_bounds() {
        let strict = openai_strict(&schema_of::<Review>()).unwrap();
        let properties = &strict["properties"];
        assert_eq!(
            properties["lines"],
            json!({"type": "integer", "minimum": 0,
                   "description": "Lines looked at.\n\n{format: \"uint32\"}"})
        );
        assert_eq!(properties["stars"]["minimum"], json!(1));
        assert_eq!(properties["stars"]["maximum"], json!(5));
        assert_eq!(properties["slug"]["pattern"], json!("^[a-z]+$"));
        assert_eq!(properties["tags"]["minItems"], json!(2));
        for node in nodes(&strict) {
            if let Some(format) = node.get("format") {
                assert!(is_one_of(format, OPENAI_FORMATS), "{node:#}");
            }
        }
        let email = &strict["$defs"]["Author"]["properties"]["email"];
        assert_eq!(email["format"], json!("email"));
    }

    #[test]
    fn openai_strict_is_impossible_for_maps_and_free_values() {
        assert_eq!(openai_strict(&schema_of::<Labelled>()), None);
        assert_eq!(openai_strict(&schema_of::<Nested>()), None);
        assert_eq!(openai_strict(&schema_of::<Free>()), None);
        assert_eq!(openai_strict(&schema_of::<FreeItems>()), None);
        assert_eq!(openai_strict(&schema_of::<Vec<String>>()), None);
        assert_eq!(openai_strict(&json!({"type": "object"})), None);
        let dangling = json!({"type": "object", "properties": {
            "a": {"$ref": "#/$defs/Missing"}}, "required": ["a"]});
        assert_eq!(openai_strict(&dangling), None);
    }

    #[test]
    fn openai_strict_keeps_an_already_strict_schema_as_it_is() {
        let schema = json!({"type": "object",
            "properties": {"summary": {"type": "string"}, "celsius": {"type": "number"}},
            "required": ["summary", "celsius"], "additionalProperties": false});
        assert_eq!(
            openai_strict(&schema).unwrap(),
            json!({"type": "object",
                "properties": {"summary": {"type": "string"}, "celsius": {"type": "number"}},
                "required": ["summary", "celsius"], "additionalProperties": false})
        );
    }

    #[test]
    fn a_strict_answer_with_nulls_passes_the_original_schema_and_deserializes() {
        let original = schema_of::<Review>();
        let strict = openai_strict(&original).unwrap();
        let answer = json!({
            "author": {"name": "Ada", "email": null},
            "co_author": null, "verdict": "Accept", "maybe": null,
            "changes": [{"kind": "Rename", "from": "a", "to": "b"}, {"kind": "Delete"}],
            "mark": {"Scored": 3}, "lines": 10, "stars": 4, "retries": null,
            "tags": ["x", "y"], "slug": "abc", "score": 0.5, "note": null
        });
        assert!(
            jsonschema::is_valid(&strict, &answer),
            "the strict form takes it"
        );
        // `retries` does not take null in the original schema.
        assert!(!jsonschema::is_valid(&original, &answer));
        let checked = AnswerCheck::new(&original).unwrap().check(answer).unwrap();
        assert!(checked.get("retries").is_none());
        assert_eq!(checked["note"], Value::Null, "an Option keeps its null");
        let review: Review = serde_json::from_value(checked).unwrap();
        assert_eq!(review.retries, 0);
        assert_eq!(review.maybe, None);
        assert_eq!(review.author.email, None);
    }

    #[test]
    fn recursive_types_keep_their_refs() {
        let tree = schema_of::<Tree>();
        let strict = openai_strict(&tree).unwrap();
        assert_eq!(
            strict["properties"]["children"]["items"],
            json!({"$ref": "#"})
        );
        assert_eq!(strict["required"], json!(["label", "children", "weight"]));
        let subset = anthropic_subset(&tree);
        assert_eq!(
            subset["properties"]["children"]["items"],
            json!({"$ref": "#"})
        );
        let answer = json!({"label": "a", "weight": null,
            "children": [{"label": "b", "children": [], "weight": -2}]});
        let err = AnswerCheck::new(&tree).unwrap().check(answer).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("/children/0/weight (minimum): -2"),
            "{err}"
        );
        // Inlining a described `$ref` to itself never ends: no strict form.
        assert_eq!(openai_strict(&schema_of::<Chain>()), None);
    }

    // -- Anthropic subset ---------------------------------------------------

    /// The keywords Anthropic's subset keeps (the SDKs' `transform_schema`).
    const ANTHROPIC_KEYWORDS: &[&str] = &[
        "$defs",
        "definitions",
        "$ref",
        "type",
        "anyOf",
        "allOf",
        "enum",
        "description",
        "title",
        "properties",
        "additionalProperties",
        "required",
        "format",
        "items",
        "minItems",
    ];

    #[test]
    fn anthropic_subset_keeps_only_supported_keywords() {
        for schema in [
            schema_of::<Review>(),
            schema_of::<Labelled>(),
            schema_of::<Nested>(),
        ] {
            let subset = anthropic_subset(&schema);
            for node in nodes(&subset) {
                for key in keys(node) {
                    assert!(ANTHROPIC_KEYWORDS.contains(&key), "{key} in {node:#}");
                }
                if is_object(node) {
                    assert_eq!(node["additionalProperties"], json!(false), "{node:#}");
                }
                if let Some(kind) = node.get("type") {
                    assert!(kind.is_string(), "a type list in {node:#}");
                }
                if let Some(format) = node.get("format") {
                    assert!(is_one_of(format, ANTHROPIC_FORMATS), "{node:#}");
                }
                if let Some(min) = node.get("minItems") {
                    assert!(min == 0 || min == 1, "{node:#}");
                }
                if node.get("$ref").is_some() {
                    assert_eq!(keys(node), ["$ref"], "{node:#}");
                }
            }
        }
    }

    #[test]
    fn anthropic_subset_moves_constraints_into_the_description() {
        let subset = anthropic_subset(&schema_of::<Review>());
        let properties = &subset["properties"];
        assert_eq!(
            properties["lines"],
            json!({"type": "integer",
                   "description": "Lines looked at.\n\n{format: \"uint32\", minimum: 0}"})
        );
        assert_eq!(
            properties["stars"]["description"],
            json!("{format: \"uint8\", maximum: 5, minimum: 1}")
        );
        assert_eq!(
            properties["retries"]["description"],
            json!("{default: 0, format: \"uint32\", minimum: 0}")
        );
        assert_eq!(
            properties["slug"],
            json!({"type": "string", "description": "{pattern: \"^[a-z]+$\"}"})
        );
        assert_eq!(
            properties["tags"],
            json!({"type": "array", "items": {"type": "string"},
                   "description": "{minItems: 2}"})
        );
        assert_eq!(
            properties["score"],
            json!({"type": "number", "description": "{format: \"double\"}"})
        );
        let scored = &subset["$defs"]["Mark"]["anyOf"][1]["properties"]["Scored"];
        assert_eq!(
            scored["description"],
            json!("{format: \"uint8\", maximum: 255, minimum: 0}")
        );
    }

    #[test]
    fn anthropic_subset_handles_options_enums_refs_and_maps() {
        let subset = anthropic_subset(&schema_of::<Review>());
        let properties = &subset["properties"];
        assert_eq!(
            properties["note"],
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
        );
        assert_eq!(
            subset["$defs"]["Author"]["properties"]["email"],
            json!({"description": "Their email.",
                   "anyOf": [{"type": "string", "format": "email"}, {"type": "null"}]})
        );
        assert_eq!(
            properties["co_author"],
            json!({"anyOf": [{"$ref": "#/$defs/Author"}, {"type": "null"}]})
        );
        // The SDKs keep a `$ref` alone.
        assert_eq!(properties["author"], json!({"$ref": "#/$defs/Author"}));
        assert_eq!(
            subset["$defs"]["Verdict"],
            json!({"type": "string", "enum": ["Accept", "Reject"]})
        );
        let rename = &subset["$defs"]["Change"]["anyOf"][0];
        assert_eq!(
            rename["properties"]["kind"],
            json!({"type": "string", "enum": ["Rename"]})
        );
        assert_eq!(rename["required"], json!(["kind", "from", "to"]));
        assert_eq!(
            anthropic_subset(&schema_of::<Labelled>())["properties"]["labels"],
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
    }

    // -- The answer against the original ------------------------------------

    fn valid_review() -> Value {
        json!({
            "author": {"name": "Ada"}, "verdict": "Reject", "changes": [],
            "mark": "Plain", "lines": 3, "stars": 5, "tags": ["a", "b"],
            "slug": "ok", "score": 1.0
        })
    }

    #[test]
    fn a_moved_constraint_is_still_enforced_naming_the_field() {
        let check = AnswerCheck::new(&schema_of::<Review>()).unwrap();
        assert_eq!(check.check(valid_review()), Ok(valid_review()));
        let cases = [
            (
                "lines",
                json!(-1),
                "/lines (minimum): -1 is less than the minimum of 0",
            ),
            (
                "stars",
                json!(6),
                "/stars (maximum): 6 is greater than the maximum of 5",
            ),
            ("slug", json!("Not A Slug"), "/slug (pattern): "),
            ("tags", json!(["one"]), "/tags (minItems): "),
        ];
        for (field, value, expected) in cases {
            let mut answer = valid_review();
            answer[field] = value;
            let err = check.check(answer).unwrap_err();
            assert!(
                matches!(&err, SchemaError::Mismatch(v) if v.len() == 1),
                "{err:?}"
            );
            assert!(err.to_string().starts_with(expected), "{err}");
        }
        let mut nested = valid_review();
        nested["mark"] = json!({"Scored": 300});
        let err = check.check(nested).unwrap_err().to_string();
        assert!(err.contains("/mark"), "{err}");
    }

    #[test]
    fn a_null_for_a_required_field_is_not_dropped() {
        let check = AnswerCheck::new(&schema_of::<Review>()).unwrap();
        let mut answer = valid_review();
        answer["lines"] = Value::Null;
        let err = check.check(answer).unwrap_err().to_string();
        assert!(
            err.starts_with("/lines (type): null is not of type \"integer\""),
            "{err}"
        );
    }

    #[test]
    fn an_invalid_schema_is_an_error() {
        let err = AnswerCheck::new(&json!({"type": 12})).unwrap_err();
        assert!(matches!(err, SchemaError::Invalid(_)), "{err:?}");
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn openai_strict_requires_every_property_and_refuses_open_maps() {
        use crate::provider::schema::openai_strict;
        use serde_json::json;
        let derived = json!({"type": "object", "properties": {
    "title": {"type": "string"}, "note": {"type": ["string", "null"]}},
    "required": ["title"]});
        let strict = openai_strict(&derived).unwrap();
        assert_eq!(strict["additionalProperties"], json!(false));
        assert_eq!(strict["required"], json!(["title", "note"]));
        let map = json!({"type": "object", "additionalProperties": {"type": "integer"}});
        assert_eq!(openai_strict(&map), None);
    }

    #[test]
    fn anthropic_subset_moves_unsupported_keywords_into_the_description() {
        use crate::provider::schema::anthropic_subset;
        use serde_json::json;
        let derived = json!({"type": "object", "properties": {
    "stars": {"type": "integer", "format": "uint8", "minimum": 1, "maximum": 5}},
    "required": ["stars"]});
        let subset = anthropic_subset(&derived);
        assert_eq!(subset["additionalProperties"], json!(false));
        assert_eq!(
            subset["properties"]["stars"],
            json!({"type": "integer",
    "description": "{format: \"uint8\", maximum: 5, minimum: 1}"})
        );
    }

    #[test]
    fn an_answer_check_drops_nulls_and_names_the_failed_constraint() {
        use crate::provider::schema::AnswerCheck;
        use serde_json::json;
        let check = AnswerCheck::new(&json!({"type": "object", "properties": {
    "count": {"type": "integer", "minimum": 0}}}))
        .unwrap();
        assert_eq!(check.check(json!({"count": null})), Ok(json!({})));
        let err = check.check(json!({"count": -1})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/count (minimum): -1 is less than the minimum of 0"
        );
    }
}
