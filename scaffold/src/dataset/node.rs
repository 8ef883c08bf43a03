//! A parsed document that remembers where every value came from.
//!
//! YAML is read with `serde-saphyr`, whose `Spanned<T>` gives the line and
//! column of each node; JSON is checked with `serde_json` (for its error
//! messages) and then walked by a small reader here that records positions.
//! Both produce the same [`Node`] tree, so validation has one
//! implementation and reports `file:line:column` for either format.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::granit_parser::{ErrorKind, ScanError};
use serde_saphyr::{ExternalMessageSource, Spanned};

use super::{aliases, indent};

/// Nesting deeper than this is refused (both formats), so hostile input
/// cannot exhaust the stack: the YAML deserializer's frames are large enough
/// in debug builds that 64 levels overflow a 2 MiB test thread.
pub(crate) const MAX_DEPTH: usize = 32;

/// The error of nesting past [`MAX_DEPTH`], in both formats.
fn too_deep() -> String {
    format!(
        "nesting deeper than {MAX_DEPTH} levels: expected at most {MAX_DEPTH} levels of lists and \
         mappings"
    )
}

/// 1-based line and column (columns count characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct Pos {
    pub(crate) line: u32,
    pub(crate) column: u32,
}

impl Pos {
    pub(crate) fn new(line: u32, column: u32) -> Pos {
        Pos {
            line: line.max(1),
            column: column.max(1),
        }
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A mapping key and where it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Key {
    pub(crate) name: Box<str>,
    pub(crate) pos: Pos,
}

/// A value and where it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) pos: Pos,
    pub(crate) kind: Kind,
}

/// The shape of a value.
///
/// Boxed slices and strings rather than `Vec`s and `String`s: the tree of a
/// large dataset lives while it is checked and built, and this keeps a node
/// at 32 bytes with no spare capacity.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum Kind {
    #[default]
    Null,
    Bool(bool),
    Number(Number),
    Str(Box<str>),
    Seq(Box<[Node]>),
    Map(Box<[(Key, Node)]>),
}

impl Node {
    /// The plain JSON value.
    pub(crate) fn to_value(&self) -> Value {
        match &self.kind {
            Kind::Null => Value::Null,
            Kind::Bool(b) => Value::Bool(*b),
            Kind::Number(n) => Value::Number(n.clone()),
            Kind::Str(s) => Value::String(s.to_string()),
            Kind::Seq(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Kind::Map(entries) => {
                let mut m = Map::new();
                for (k, v) in entries {
                    m.insert(k.name.to_string(), v.to_value());
                }
                Value::Object(m)
            }
        }
    }

    /// The entry `key` of a mapping.
    pub(crate) fn get(&self, key: &str) -> Option<(&Key, &Node)> {
        match &self.kind {
            Kind::Map(entries) => entries
                .iter()
                .find(|(k, _)| &*k.name == key)
                .map(|(k, v)| (k, v)),
            _ => None,
        }
    }

    /// The value of the entry `key` of a mapping, to change.
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        match &mut self.kind {
            Kind::Map(entries) => entries
                .iter_mut()
                .find(|(k, _)| &*k.name == key)
                .map(|(_, v)| v),
            _ => None,
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::Str(s) => Some(s),
            _ => None,
        }
    }

    /// "a string", "a list", … for messages.
    pub(crate) fn describe(&self) -> &'static str {
        match &self.kind {
            Kind::Null => "null",
            Kind::Bool(_) => "a boolean",
            Kind::Number(_) => "a number",
            Kind::Str(_) => "a string",
            Kind::Seq(_) => "a list",
            Kind::Map(_) => "a mapping",
        }
    }
}

/// A syntax error and where.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SyntaxError {
    pub(crate) pos: Pos,
    pub(crate) message: String,
}

// ---------------------------------------------------------------- YAML

/// Deserialized through `Spanned<YamlKind>` so every child carries its span.
struct YamlKind(Kind);

fn spanned_pos<T>(s: &Spanned<T>) -> Pos {
    let loc = s.referenced;
    Pos::new(
        u32::try_from(loc.line()).unwrap_or(u32::MAX),
        u32::try_from(loc.column()).unwrap_or(u32::MAX),
    )
}

fn to_node(s: Spanned<YamlKind>) -> Node {
    let pos = spanned_pos(&s);
    Node {
        pos,
        kind: s.value.0,
    }
}

impl<'de> Deserialize<'de> for YamlKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(YamlVisitor).map(YamlKind)
    }
}

struct YamlVisitor;

impl<'de> Visitor<'de> for YamlVisitor {
    type Value = Kind;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E>(self) -> Result<Kind, E> {
        Ok(Kind::Null)
    }
    fn visit_none<E>(self) -> Result<Kind, E> {
        Ok(Kind::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Kind, D::Error> {
        d.deserialize_any(YamlVisitor)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Kind, E> {
        Ok(Kind::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Kind, E> {
        Ok(Kind::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Kind, E> {
        Ok(Kind::Number(n.into()))
    }
    fn visit_i128<E: de::Error>(self, n: i128) -> Result<Kind, E> {
        match i64::try_from(n) {
            Ok(x) => Ok(Kind::Number(x.into())),
            Err(_) => match u64::try_from(n) {
                Ok(x) => Ok(Kind::Number(x.into())),
                Err(_) => self.visit_f64(n as f64),
            },
        }
    }
    fn visit_u128<E: de::Error>(self, n: u128) -> Result<Kind, E> {
        match u64::try_from(n) {
            Ok(x) => Ok(Kind::Number(x.into())),
            Err(_) => self.visit_f64(n as f64),
        }
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Kind, E> {
        Number::from_f64(n)
            .map(Kind::Number)
            .ok_or_else(|| E::custom(format!("the number {n} cannot be represented in JSON")))
    }
    fn visit_str<E>(self, s: &str) -> Result<Kind, E> {
        Ok(Kind::Str(s.into()))
    }
    fn visit_string<E>(self, s: String) -> Result<Kind, E> {
        Ok(Kind::Str(s.into_boxed_str()))
    }
    fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Kind, E> {
        String::from_utf8(b.to_vec())
            .map(|s| Kind::Str(s.into_boxed_str()))
            .map_err(|_| E::custom("binary data is not supported"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Kind, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<YamlKind>>()? {
            items.push(to_node(item));
        }
        Ok(Kind::Seq(items.into_boxed_slice()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Kind, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<YamlKind>>()? {
            let pos = spanned_pos(&key);
            let name = match key.value.0 {
                Kind::Str(s) => s,
                Kind::Number(n) => n.to_string().into_boxed_str(),
                Kind::Bool(b) => b.to_string().into_boxed_str(),
                Kind::Null => "null".into(),
                Kind::Seq(_) | Kind::Map(_) => {
                    return Err(de::Error::custom(
                        "a mapping key must be a string, not a list or mapping",
                    ));
                }
            };
            let value = map.next_value::<Spanned<YamlKind>>()?;
            entries.push((Key { name, pos }, to_node(value)));
        }
        Ok(Kind::Map(entries.into_boxed_slice()))
    }
}

/// Strip saphyr's `error: line L column C: ` lead, its trailing
/// ` at line L, column C` (the diagnostic has the position) and advice about
/// its own options from a message.
fn plain_message(message: &str) -> String {
    let m = message.trim();
    let m = m.strip_prefix("error: ").unwrap_or(m);
    let m = match m
        .strip_prefix("line ")
        .and_then(|rest| rest.split_once(": "))
    {
        Some((_, after)) => after,
        None => m,
    };
    let mut m = m.lines().next().unwrap_or(m).trim();
    if let Some(at) = m.rfind(" at line ") {
        let tail = &m[at + " at line ".len()..];
        if tail
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, ',' | ' ') || c.is_ascii_alphabetic())
            && tail.contains("column")
        {
            m = &m[..at];
        }
    }
    m.replace(", set DuplicateKeyPolicy in Options if acceptable", "")
}

/// The node budget of every YAML file, however small: room for a small
/// file's anchors, and what a billion-laughs file breaches in milliseconds.
const MIN_NODES: usize = 10_000;
/// Nodes a YAML file may hold per byte of its text, aliases expanded.
const NODES_PER_BYTE: usize = 4;
/// The node budget of any YAML file, however large: it bounds the memory
/// and time of a load.
const MAX_NODES: usize = 20_000_000;

/// The most nodes (scalars, lists, mappings) a YAML text of `len` bytes may
/// hold once its aliases are expanded. Written out, a node takes a byte at
/// least (`{a,b}`: two keys, two nulls), so a file without aliases never
/// reaches it; aliases that repeat anchors past it are refused.
pub(crate) fn node_budget(len: usize) -> usize {
    len.saturating_mul(NODES_PER_BYTE)
        .saturating_add(MIN_NODES)
        .min(MAX_NODES)
}

/// The parser's lookahead for a simple key, in characters (its default).
const SIMPLE_KEY_LOOKAHEAD: usize = 1_024;

/// How many flow collections (`[`, `{`) the parser may have open. It reads
/// up to a simple key's lookahead ahead of the events the depth is checked
/// on, so `[[[…` past a lower limit would fail there, in its own words,
/// before the depth check.
const FLOW_NESTING: usize = SIMPLE_KEY_LOOKAHEAD + MAX_DEPTH + 1;

/// The reader's options for a YAML text of `len` bytes.
///
/// The node budget is the only limit on aliases: the counts of aliases and
/// anchors, their ratio, merge keys, the values replayed and those anchors
/// hold all follow it (the reader's own defaults, such as a million values
/// replayed or ten uses of an anchor, would refuse files the budget allows,
/// in its own words). [`aliases::excess`] checks the budget before the file
/// is read; the reader's checks stay as a second line.
fn yaml_options(len: usize) -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    options.with_snippet = false;
    let nodes = node_budget(len);
    // Each node is one event, each list or mapping one more to close it,
    // each alias one more for itself (and it replays one node at least).
    let events = nodes.saturating_mul(3).saturating_add(1_024);
    options.alias_limits.max_total_replayed_events = events;
    if let Some(budget) = options.budget.as_mut() {
        budget.max_depth = MAX_DEPTH;
        budget.simple_key_max_lookahead = SIMPLE_KEY_LOOKAHEAD;
        budget.flow_nesting_limit = FLOW_NESTING;
        budget.max_nodes = nodes;
        budget.max_events = events;
        budget.max_aliases = nodes;
        budget.max_anchors = nodes;
        budget.enforce_alias_anchor_ratio = false;
        budget.max_merge_keys = nodes;
        // Copies of events, of which a node makes two at most (no alias is
        // kept: what it replays is).
        budget.max_recorded_anchor_events = nodes.saturating_mul(2).saturating_add(1_024);
    }
    options
}

/// The parser's options for [`aliases::excess`]: those the reader uses.
fn parser_options() -> serde_saphyr::granit_parser::Options {
    let mut options = serde_saphyr::granit_parser::options! {
        simple_key_max_lookahead: SIMPLE_KEY_LOOKAHEAD,
        flow_nesting_limit: FLOW_NESTING,
    };
    options.set_emit_comments(false);
    options
}

/// Aliases past the budget, found before the file is read, in words.
fn alias_excess(src: &str) -> Option<SyntaxError> {
    // No alias without both an anchor (`&`) and an alias (`*`).
    if !(src.contains('&') && src.contains('*')) {
        return None;
    }
    let len = src.len();
    let budget = node_budget(len);
    let limits = aliases::Limits {
        values: budget,
        held: budget,
    };
    let (pos, excess) = aliases::excess(src, parser_options(), limits)?;
    let message = match excess {
        aliases::Excess::Values { aliases } => format!(
            "with {aliases} alias{es} (`*name`) expanded, the file holds more than {budget} \
             values: expected at most {budget} in a file of {len} bytes (an alias counts the \
             values of its anchor each time it is used)",
            es = if aliases == 1 { "" } else { "es" }
        ),
        aliases::Excess::Held => held_too_much(len),
    };
    Some(SyntaxError { pos, message })
}

/// The words for anchors that hold more than the budget.
fn held_too_much(len: usize) -> String {
    let budget = node_budget(len);
    format!(
        "anchors (`&name`) hold more than {budget} values, with the aliases in them expanded \
         and an anchor inside another counted again: expected at most {budget} in a file of \
         {len} bytes"
    )
}

/// The position of a saphyr location.
fn location_pos(l: serde_saphyr::Location) -> Pos {
    Pos::new(
        u32::try_from(l.line()).unwrap_or(u32::MAX),
        u32::try_from(l.column()).unwrap_or(u32::MAX),
    )
}

/// The budget breach behind a saphyr error, if that is what it is.
fn breach(e: &serde_saphyr::Error) -> Option<&BudgetBreach> {
    match e {
        serde_saphyr::Error::Budget { breach, .. } => Some(breach),
        serde_saphyr::Error::AliasError { error, .. }
        | serde_saphyr::Error::WithSnippet { error, .. } => breach(error),
        _ => None,
    }
}

/// The YAML parser's own error behind a saphyr error, if that is what it is.
fn scan_error(e: &serde_saphyr::Error) -> Option<&ScanError> {
    match e {
        serde_saphyr::Error::ExternalMessage { source, .. } => match source.as_ref() {
            ExternalMessageSource::Parser(scan) => Some(scan),
            _ => None,
        },
        serde_saphyr::Error::AliasError { error, .. }
        | serde_saphyr::Error::WithSnippet { error, .. } => scan_error(error),
        _ => None,
    }
}

/// A budget breach in words: what was found and what was expected.
fn breach_message(b: &BudgetBreach, len: usize) -> String {
    let budget = node_budget(len);
    match b {
        BudgetBreach::Depth { .. } => too_deep(),
        BudgetBreach::Nodes { .. } | BudgetBreach::Events { .. } => format!(
            "more than {budget} values once aliases (`*name`) are expanded: expected at most \
             {budget} in a file of {len} bytes (an alias counts the values of its anchor each \
             time it is used)"
        ),
        BudgetBreach::Aliases { aliases } => format!(
            "{aliases} aliases (`*name`): expected far fewer (each repeats its anchor's values)"
        ),
        BudgetBreach::AliasAnchorRatio { aliases, anchors } => format!(
            "{aliases} aliases (`*name`) for {anchors} anchor(s) (`&name`): expected at most \
             10 uses of each anchor"
        ),
        BudgetBreach::Anchors { anchors } => {
            format!("{anchors} anchors (`&name`): expected far fewer")
        }
        BudgetBreach::RecordedAnchorEvents { .. } => held_too_much(len),
        BudgetBreach::RecordedAnchorBytes { .. } => {
            "anchors (`&name`) hold more than 64 MiB of text, with the aliases in them \
             expanded and an anchor inside another counted again: expected smaller anchors"
                .into()
        }
        BudgetBreach::ScalarBytes { .. } => {
            "more than 64 MiB of text in values: expected a smaller dataset".into()
        }
        BudgetBreach::Documents { .. } => "too many YAML documents (`---`): expected one".into(),
        _ => "the file is beyond what the YAML reader takes: expected a smaller, plainer \
              document"
            .into(),
    }
}

/// The first tab on `pos`'s line at or before `pos`, where a tab error is:
/// the reader reports the character after it.
fn tab_pos(src: &str, pos: Pos) -> Pos {
    let Some(line) = src.lines().nth(pos.line.saturating_sub(1) as usize) else {
        return pos;
    };
    let upto = usize::try_from(pos.column).unwrap_or(usize::MAX);
    match line.chars().take(upto).position(|c| c == '\t') {
        Some(i) => Pos::new(pos.line, u32::try_from(i + 1).unwrap_or(u32::MAX)),
        None => pos,
    }
}

/// Parse YAML into a node tree.
pub(crate) fn parse_yaml(src: &str) -> Result<Node, SyntaxError> {
    yaml_tree(src).map_err(|f| f.error)
}

/// A YAML syntax error, and whether the parser's kind of it is one a line
/// indented to no level gives.
struct YamlFailure {
    error: SyntaxError,
    indentation: bool,
}

fn yaml_tree(src: &str) -> Result<Node, YamlFailure> {
    let fail = |pos, message| YamlFailure {
        error: SyntaxError { pos, message },
        indentation: false,
    };
    if let Some(e) = alias_excess(src) {
        return Err(fail(e.pos, e.message));
    }
    match serde_saphyr::from_str_with_options::<Spanned<YamlKind>>(src, yaml_options(src.len())) {
        Ok(root) => Ok(to_node(root)),
        Err(e) => {
            let pos = e.location().map(location_pos).unwrap_or(Pos::new(1, 1));
            if let Some(b) = breach(&e) {
                return Err(fail(pos, breach_message(b, src.len())));
            }
            let kind = scan_error(&e).map(ScanError::kind);
            // The parser's own nesting limit, should it come before the
            // budget's (it is set above it): the same words.
            if matches!(kind, Some(ErrorKind::RecursionLimitExceeded)) {
                return Err(fail(pos, too_deep()));
            }
            let message = plain_message(&e.without_snippet().to_string());
            let pos = if message.contains("tab") {
                tab_pos(src, pos)
            } else {
                pos
            };
            Err(YamlFailure {
                error: SyntaxError { pos, message },
                indentation: matches!(
                    kind,
                    Some(
                        ErrorKind::ExpectedBlockSequenceEntry
                            | ErrorKind::ExpectedBlockMappingKey
                            | ErrorKind::MappingValueNotAllowed
                            | ErrorKind::BlockSequenceEntryNotAllowed
                            | ErrorKind::InvalidIndentation
                    )
                ),
            })
        }
    }
}

/// Lines moved by [`read_yaml`] to go past an indentation error: lines
/// `first..=last`, whose text is `shift` characters right (left if
/// negative) of where it is in the file.
#[derive(Debug, Clone, Copy)]
struct Shift {
    first: u32,
    last: u32,
    shift: i64,
}

/// Where `pos` of the mended text is in the file.
fn unshift(pos: Pos, shifts: &[Shift]) -> Pos {
    let column = shifts
        .iter()
        .rev()
        .filter(|s| (s.first..=s.last).contains(&pos.line))
        .fold(i64::from(pos.column), |c, s| c - s.shift);
    Pos::new(pos.line, u32::try_from(column.max(1)).unwrap_or(u32::MAX))
}

/// Every position of a tree read from mended text, put back where it is in
/// the file.
fn unshift_tree(node: &mut Node, shifts: &[Shift]) {
    node.pos = unshift(node.pos, shifts);
    match &mut node.kind {
        Kind::Seq(items) => items.iter_mut().for_each(|n| unshift_tree(n, shifts)),
        Kind::Map(entries) => {
            for (k, v) in entries.iter_mut() {
                k.pos = unshift(k.pos, shifts);
                unshift_tree(v, shifts);
            }
        }
        _ => {}
    }
}

/// The most lines [`read_yaml`] moves to go past indentation errors: each
/// is a parse of the whole file (or two).
const MAX_MOVES: usize = 16;

/// Parse YAML, going past lines indented to no level of the lines above:
/// each is reported with the line it should line up with, and the file is
/// read as if it did, so that its other errors are found too.
pub(crate) fn read_yaml(src: &str) -> Parsed {
    let mut failure = match yaml_tree(src) {
        Ok(root) => return Parsed::of(Ok(root)),
        Err(f) => f,
    };
    let mut errors = Vec::new();
    let mut shifts: Vec<Shift> = Vec::new();
    let mut text = src.to_string();
    loop {
        let line = failure.error.pos.line;
        // The indentation of a line moved already is left to the next run:
        // the move may be what is wrong with it.
        if failure.indentation && shifts.iter().any(|s| (s.first..=s.last).contains(&line)) {
            return Parsed { root: None, errors };
        }
        let to_move = (failure.indentation && shifts.len() < MAX_MOVES)
            .then(|| indent::misplaced(&text, line as usize))
            .flatten();
        let Some(m) = to_move else {
            let pos = unshift(failure.error.pos, &shifts);
            errors.push(SyntaxError {
                pos,
                ..failure.error
            });
            return Parsed { root: None, errors };
        };
        let column = u32::try_from(m.from + 1).unwrap_or(u32::MAX);
        errors.push(SyntaxError {
            pos: unshift(Pos::new(line, column), &shifts),
            message: m.message.clone(),
        });
        // The lines under it move with it, unless it reads further alone.
        let (with_block, last) = indent::apply(&text, &m, true);
        let (alone, _) = indent::apply(&text, &m, false);
        let (with_block_read, alone_read) = (yaml_tree(&with_block), yaml_tree(&alone));
        let alone_further = match (&with_block_read, &alone_read) {
            (Err(_), Ok(_)) => true,
            (Err(a), Err(b)) => b.error.pos > a.error.pos,
            _ => false,
        };
        let (next, read, last) = if alone_further {
            (alone, alone_read, m.line)
        } else {
            (with_block, with_block_read, last)
        };
        shifts.push(Shift {
            first: line,
            last: u32::try_from(last).unwrap_or(u32::MAX),
            shift: i64::try_from(m.to).unwrap_or(i64::MAX) - i64::try_from(m.from).unwrap_or(0),
        });
        text = next;
        match read {
            Ok(mut root) => {
                unshift_tree(&mut root, &shifts);
                return Parsed {
                    root: Some(root),
                    errors,
                };
            }
            Err(f) => failure = f,
        }
    }
}

// ---------------------------------------------------------------- JSON

/// Parse JSON into a node tree.
pub(crate) fn parse_json(src: &str) -> Result<Node, SyntaxError> {
    // serde_json first: its messages and positions are the ones people know.
    if let Err(e) = serde_json::from_str::<de::IgnoredAny>(src) {
        let at = Pos::new(
            u32::try_from(e.line()).unwrap_or(u32::MAX),
            u32::try_from(e.column()).unwrap_or(u32::MAX),
        );
        // serde_json stops at 128 levels, in its own words; ours come first.
        if let Some(pos) = json_too_deep(src).filter(|&deep| deep <= at) {
            return Err(SyntaxError {
                pos,
                message: too_deep(),
            });
        }
        // serde_json says "key must be a string" or "expected value" at the
        // `}` or `]` after a trailing comma: name the comma instead.
        let closer = byte_offset(src, e.line(), e.column()).and_then(|at| after_comma(src, at));
        if let Some((comma, closer)) = closer {
            return Err(SyntaxError {
                pos: pos_of(src, comma),
                message: trailing_comma(closer),
            });
        }
        let message = e.to_string();
        let message = match message.rfind(" at line ") {
            Some(cut) => message[..cut].to_string(),
            None => message,
        };
        return Err(SyntaxError { pos: at, message });
    }
    let mut r = JsonReader {
        src,
        at: 0,
        line: 1,
        col: 1,
    };
    r.skip_ws();
    let node = r.value(0)?;
    r.skip_ws();
    if r.at != src.len() {
        return Err(r.error("trailing characters"));
    }
    Ok(node)
}

/// A parse that went on past the syntax errors it could mend.
#[derive(Debug)]
pub(crate) struct Parsed {
    /// The tree of the text, mended where there were errors (with the
    /// positions of the text as it is), if it could be read.
    pub(crate) root: Option<Node>,
    /// Every syntax error found, in order.
    pub(crate) errors: Vec<SyntaxError>,
}

impl Parsed {
    pub(crate) fn of(result: Result<Node, SyntaxError>) -> Parsed {
        match result {
            Ok(root) => Parsed {
                root: Some(root),
                errors: Vec::new(),
            },
            Err(e) => Parsed {
                root: None,
                errors: vec![e],
            },
        }
    }
}

/// Parse JSON, going past trailing commas: each is reported, and the text
/// is read without them (so its other errors are found too).
pub(crate) fn read_json(src: &str) -> Parsed {
    let first = match parse_json(src) {
        Err(e) if e.message.starts_with(TRAILING_COMMA) => e,
        result => return Parsed::of(result),
    };
    let commas = trailing_commas(src);
    if commas.first().map(|c| c.0) != Some(first.pos) {
        return Parsed::of(Err(first));
    }
    let mut mended = src.as_bytes().to_vec();
    let mut errors = Vec::with_capacity(commas.len() + 1);
    for (pos, at, closer) in commas {
        // A space for the comma: every other position stays as it was.
        mended[at] = b' ';
        errors.push(SyntaxError {
            pos,
            message: trailing_comma(closer),
        });
    }
    let mended = String::from_utf8(mended).unwrap_or_default();
    let mut parsed = Parsed::of(parse_json(&mended));
    errors.append(&mut parsed.errors);
    Parsed {
        root: parsed.root,
        errors,
    }
}

/// How the message of a trailing comma begins.
const TRAILING_COMMA: &str = "trailing comma before";

/// The message of a trailing comma before `closer` (`}` or `]`).
fn trailing_comma(closer: char) -> String {
    if closer == '}' {
        format!(
            "{TRAILING_COMMA} `}}`: expected another `\"key\": value` after it, or no comma \
             after the last entry"
        )
    } else {
        format!(
            "{TRAILING_COMMA} `]`: expected another item after it, or no comma after the last \
             item"
        )
    }
}

/// The byte offset of serde_json's 1-based line and (byte) column.
fn byte_offset(src: &str, line: usize, column: usize) -> Option<usize> {
    let start = if line <= 1 {
        0
    } else {
        src.match_indices('\n').nth(line - 2)?.0 + 1
    };
    Some(start + column.checked_sub(1)?)
}

/// When the byte at `at` is a `}` or `]` right after a comma (whitespace
/// between), where the comma is and which it is.
fn after_comma(src: &str, at: usize) -> Option<(usize, char)> {
    let closer = char::from(*src.as_bytes().get(at)?);
    if !matches!(closer, '}' | ']') {
        return None;
    }
    let before = src.get(..at)?.trim_end_matches([' ', '\t', '\n', '\r']);
    before.ends_with(',').then(|| (before.len() - 1, closer))
}

/// The position (in characters) of the byte offset `at`.
fn pos_of(src: &str, at: usize) -> Pos {
    let before = src.get(..at).unwrap_or(src);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Pos::new(
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(column).unwrap_or(u32::MAX),
    )
}

/// The characters of JSON text outside its strings (their quotes
/// included, their insides not), with each one's position and byte offset.
fn outside_strings(src: &str) -> impl Iterator<Item = (Pos, usize, char)> + '_ {
    let (mut line, mut column) = (1u32, 0u32);
    let (mut in_string, mut escaped) = (false, false);
    src.char_indices().filter_map(move |(at, c)| {
        if c == '\n' {
            line = line.saturating_add(1);
            column = 0;
        } else {
            column = column.saturating_add(1);
        }
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            return None;
        }
        in_string = c == '"';
        Some((Pos::new(line, column), at, c))
    })
}

/// Every comma of JSON text that comes right before a `}` or `]`
/// (whitespace between): its position, byte offset and the closer.
fn trailing_commas(src: &str) -> Vec<(Pos, usize, char)> {
    let mut found = Vec::new();
    let mut comma: Option<(Pos, usize)> = None;
    for (pos, at, c) in outside_strings(src) {
        match c {
            ' ' | '\t' | '\n' | '\r' => continue,
            '}' | ']' => {
                if let Some((comma_pos, comma_at)) = comma {
                    found.push((comma_pos, comma_at, c));
                }
            }
            _ => {}
        }
        comma = (c == ',').then_some((pos, at));
    }
    found
}

/// Where JSON text opens its list or object number [`MAX_DEPTH`] + 1, if it
/// does (brackets in strings aside).
fn json_too_deep(src: &str) -> Option<Pos> {
    let mut depth = 0usize;
    for (pos, _, c) in outside_strings(src) {
        match c {
            '[' | '{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(pos);
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// A reader over text that `serde_json` already accepted; it only adds
/// positions, and still fails cleanly (never panics) on anything odd.
struct JsonReader<'s> {
    src: &'s str,
    at: usize,
    line: u32,
    col: u32,
}

impl JsonReader<'_> {
    fn pos(&self) -> Pos {
        Pos::new(self.line, self.col)
    }

    fn error(&self, message: &str) -> SyntaxError {
        SyntaxError {
            pos: self.pos(),
            message: message.to_string(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.src[self.at..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t' | '\n' | '\r')) {
            self.bump();
        }
    }

    fn expect(&mut self, c: char) -> Result<(), SyntaxError> {
        if self.peek() == Some(c) {
            self.bump();
            Ok(())
        } else {
            Err(self.error(&format!("expected `{c}`")))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, SyntaxError> {
        if depth >= MAX_DEPTH {
            return Err(self.error(&too_deep()));
        }
        let pos = self.pos();
        let kind = match self.peek() {
            Some('{') => {
                self.bump();
                let mut entries: Vec<(Key, Node)> = Vec::new();
                self.skip_ws();
                if self.peek() == Some('}') {
                    self.bump();
                } else {
                    loop {
                        self.skip_ws();
                        let kpos = self.pos();
                        let name = self.string()?;
                        if entries.iter().any(|(k, _)| k.name == name) {
                            return Err(SyntaxError {
                                pos: kpos,
                                message: format!("duplicate key `{name}`"),
                            });
                        }
                        self.skip_ws();
                        self.expect(':')?;
                        self.skip_ws();
                        let v = self.value(depth + 1)?;
                        entries.push((Key { name, pos: kpos }, v));
                        self.skip_ws();
                        match self.bump() {
                            Some(',') => continue,
                            Some('}') => break,
                            _ => return Err(self.error("expected `,` or `}`")),
                        }
                    }
                }
                Kind::Map(entries.into_boxed_slice())
            }
            Some('[') => {
                self.bump();
                let mut items = Vec::new();
                self.skip_ws();
                if self.peek() == Some(']') {
                    self.bump();
                } else {
                    loop {
                        self.skip_ws();
                        items.push(self.value(depth + 1)?);
                        self.skip_ws();
                        match self.bump() {
                            Some(',') => continue,
                            Some(']') => break,
                            _ => return Err(self.error("expected `,` or `]`")),
                        }
                    }
                }
                Kind::Seq(items.into_boxed_slice())
            }
            Some('"') => Kind::Str(self.string()?),
            Some('t') => {
                self.word("true")?;
                Kind::Bool(true)
            }
            Some('f') => {
                self.word("false")?;
                Kind::Bool(false)
            }
            Some('n') => {
                self.word("null")?;
                Kind::Null
            }
            Some(c) if c == '-' || c.is_ascii_digit() => {
                let start = self.at;
                while matches!(self.peek(), Some(c) if c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
                {
                    self.bump();
                }
                let n: Number =
                    serde_json::from_str(&self.src[start..self.at]).map_err(|_| SyntaxError {
                        pos,
                        message: "invalid number".into(),
                    })?;
                Kind::Number(n)
            }
            _ => return Err(self.error("expected a value")),
        };
        Ok(Node { pos, kind })
    }

    fn word(&mut self, w: &str) -> Result<(), SyntaxError> {
        if self.src[self.at..].starts_with(w) {
            for _ in 0..w.len() {
                self.bump();
            }
            Ok(())
        } else {
            Err(self.error(&format!("expected `{w}`")))
        }
    }

    fn string(&mut self) -> Result<Box<str>, SyntaxError> {
        if self.peek() != Some('"') {
            return Err(self.error("expected a string"));
        }
        let start = self.at;
        self.bump();
        loop {
            match self.bump() {
                None => return Err(self.error("unterminated string")),
                Some('\\') => {
                    self.bump();
                }
                Some('"') => break,
                Some(_) => {}
            }
        }
        serde_json::from_str(&self.src[start..self.at]).map_err(|e| self.error(&e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_positions() {
        let n = parse_yaml("name: x\ncases:\n  - id: a\n    input: {k: 1}\n").unwrap();
        let (k, cases) = n.get("cases").unwrap();
        assert_eq!(k.pos, Pos::new(2, 1));
        let Kind::Seq(items) = &cases.kind else {
            panic!()
        };
        let (idk, id) = items[0].get("id").unwrap();
        assert_eq!((idk.pos, id.pos), (Pos::new(3, 5), Pos::new(3, 9)));
        assert_eq!(items[0].get("input").unwrap().1.pos, Pos::new(4, 12));
    }

    #[test]
    fn json_positions() {
        let n = parse_json("{\n  \"id\": \"x\",\n  \"cases\": [ {\"id\": 1.5} ]\n}").unwrap();
        let (k, v) = n.get("id").unwrap();
        assert_eq!((k.pos, v.pos), (Pos::new(2, 3), Pos::new(2, 9)));
        let (_, cases) = n.get("cases").unwrap();
        let Kind::Seq(items) = &cases.kind else {
            panic!()
        };
        assert_eq!(items[0].pos, Pos::new(3, 14));
        assert_eq!(items[0].get("id").unwrap().1.pos, Pos::new(3, 21));
        assert_eq!(
            n.to_value(),
            serde_json::json!({"id": "x", "cases": [{"id": 1.5}]})
        );
    }

    #[test]
    fn json_errors_and_depth() {
        let e = parse_json("{\"a\": }").unwrap_err();
        assert_eq!(e.pos, Pos::new(1, 7));
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(parse_json(&deep).is_err());
        assert!(parse_json("{\"a\": 1, \"a\": 2}").is_err());
    }

    /// More values replayed from anchors than the reader's own cap (a
    /// million events), within the budget: the alias check lets the file
    /// through and the reader reads it.
    #[test]
    fn aliases_replay_as_many_values_as_the_budget_allows() {
        let mut y = String::from("name: t\ncases: []\nmetadata:\n");
        for g in 0..100 {
            y.push_str(&format!(
                "  a{g}: &a{g} [{}]\n",
                vec!["x"; 1_000].join(", ")
            ));
            y.push_str(&format!(
                "  b{g}: [{}]\n",
                vec![format!("*a{g}"); 10].join(", ")
            ));
        }
        // 100 × 10 × 1,002 events replayed; 1.1 million values of the 1.24
        // million its 308,000 bytes allow.
        assert!(node_budget(y.len()) > 1_200_000);
        assert_eq!(alias_excess(&y), None);
        let read = serde_saphyr::from_str_with_options::<de::IgnoredAny>(&y, yaml_options(y.len()));
        assert!(
            read.is_ok(),
            "{}",
            read.err().map(|e| e.to_string()).unwrap_or_default()
        );
    }

    #[test]
    fn yaml_strict_booleans_and_depth() {
        let n = parse_yaml("a: yes\nb: true\n").unwrap();
        assert_eq!(n.to_value(), serde_json::json!({"a": "yes", "b": true}));
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(parse_yaml(&deep).is_err());
    }
}
