//! Paths into JSON values: `analysis.confidence`, `files[0].path`,
//! `["weird key"].x`, `items[-1]`.
//!
//! Grammar:
//!
//! ```text
//! path    := "" | first rest*
//! first   := key | bracket
//! rest    := "." key | bracket
//! key     := one or more characters other than `.` `[` `]`
//! bracket := "[" integer "]" | "[" quoted "]"
//! quoted  := '"' ... '"' | "'" ... "'"      (backslash escapes the quote and itself)
//! ```
//!
//! An integer in brackets indexes an array; a negative one counts from the
//! end (`[-1]` is the last element). A key that is all digits also indexes an
//! array when the value is one (`files.0.path`). The empty path is the value
//! itself.

use std::fmt;

use serde_json::Value;

/// One step of a [`Path`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathSegment {
    /// An object key (or, if all digits, an array index too).
    Key(String),
    /// An array index; negative counts from the end.
    Index(i64),
}

/// Why a string is not a valid path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at character {position} of path `{path}`")]
pub struct PathError {
    /// The path as written.
    pub path: String,
    /// 0-based character offset of the problem.
    pub position: usize,
    /// What is wrong.
    pub message: String,
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Path {
    segments: Vec<PathSegment>,
}

impl Path {
    /// The empty path (the value itself).
    pub fn root() -> Path {
        Path::default()
    }

    /// A path from segments.
    pub fn from_segments(segments: Vec<PathSegment>) -> Path {
        Path { segments }
    }

    /// The segments.
    pub fn segments(&self) -> &[PathSegment] {
        &self.segments
    }

    /// Whether this is the empty path.
    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    /// The first segment when it is an object key (the top-level state key).
    pub fn first_key(&self) -> Option<&str> {
        match self.segments.first() {
            Some(PathSegment::Key(k)) => Some(k),
            _ => None,
        }
    }

    /// Parse `text`.
    pub fn parse(text: &str) -> Result<Path, PathError> {
        let chars: Vec<char> = text.chars().collect();
        let err = |position: usize, message: &str| PathError {
            path: text.to_string(),
            position,
            message: message.to_string(),
        };
        let mut segments = Vec::new();
        let mut i = 0;
        let mut first = true;
        while i < chars.len() {
            match chars[i] {
                '[' => {
                    let start = i;
                    i += 1;
                    match chars.get(i) {
                        Some(&q @ ('"' | '\'')) => {
                            i += 1;
                            let mut key = String::new();
                            loop {
                                match chars.get(i) {
                                    None => return Err(err(start, "unterminated quoted key")),
                                    Some('\\') => {
                                        match chars.get(i + 1) {
                                            Some(&c) => key.push(c),
                                            None => {
                                                return Err(err(i, "unterminated quoted key"));
                                            }
                                        }
                                        i += 2;
                                    }
                                    Some(&c) if c == q => {
                                        i += 1;
                                        break;
                                    }
                                    Some(&c) => {
                                        key.push(c);
                                        i += 1;
                                    }
                                }
                            }
                            if chars.get(i) != Some(&']') {
                                return Err(err(i, "expected `]` after the quoted key"));
                            }
                            i += 1;
                            segments.push(PathSegment::Key(key));
                        }
                        _ => {
                            let num_start = i;
                            while i < chars.len() && chars[i] != ']' {
                                i += 1;
                            }
                            if i >= chars.len() {
                                return Err(err(start, "unterminated `[`"));
                            }
                            let digits: String = chars[num_start..i].iter().collect();
                            let index: i64 = digits.trim().parse().map_err(|_| {
                                err(
                                    num_start,
                                    "expected an integer index or a quoted key inside `[...]`",
                                )
                            })?;
                            i += 1;
                            segments.push(PathSegment::Index(index));
                        }
                    }
                }
                '.' if !first => {
                    i += 1;
                    let start = i;
                    while i < chars.len() && !matches!(chars[i], '.' | '[' | ']') {
                        i += 1;
                    }
                    if i == start {
                        return Err(err(start, "expected a key after `.`"));
                    }
                    segments.push(PathSegment::Key(chars[start..i].iter().collect()));
                }
                ']' => return Err(err(i, "unexpected `]`")),
                '.' => return Err(err(i, "a path cannot start with `.`")),
                _ if first => {
                    let start = i;
                    while i < chars.len() && !matches!(chars[i], '.' | '[' | ']') {
                        i += 1;
                    }
                    segments.push(PathSegment::Key(chars[start..i].iter().collect()));
                }
                _ => return Err(err(i, "expected `.` or `[`")),
            }
            first = false;
        }
        Ok(Path { segments })
    }

    /// The value at this path inside `value`, if there is one.
    pub fn resolve<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        resolve_segments(&self.segments, value)
    }
}

/// Follow `segments` from `value`.
pub(crate) fn resolve_segments<'v>(
    segments: &[PathSegment],
    value: &'v Value,
) -> Option<&'v Value> {
    let mut current = value;
    for seg in segments {
        current = match (seg, current) {
            (PathSegment::Key(k), Value::Object(map)) => map.get(k)?,
            (PathSegment::Key(k), Value::Array(items)) => {
                let i: usize = k.parse().ok()?;
                items.get(i)?
            }
            (PathSegment::Index(i), Value::Array(items)) => {
                let idx = if *i < 0 {
                    items.len().checked_sub(i.unsigned_abs() as usize)?
                } else {
                    *i as usize
                };
                items.get(idx)?
            }
            _ => return None,
        };
    }
    Some(current)
}

fn plain_key(k: &str) -> bool {
    !k.is_empty() && !k.contains(['.', '[', ']', '"', '\'', '\\'])
}

impl fmt::Display for Path {
    /// Writes the path so that [`Path::parse`] reads it back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.segments.iter().enumerate() {
            match seg {
                PathSegment::Key(k) if plain_key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                PathSegment::Key(k) => {
                    f.write_str("[\"")?;
                    for c in k.chars() {
                        if c == '"' || c == '\\' {
                            f.write_str("\\")?;
                        }
                        write!(f, "{c}")?;
                    }
                    f.write_str("\"]")?;
                }
                PathSegment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for Path {
    type Err = PathError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Path::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        use PathSegment::*;
        assert_eq!(Path::parse("").unwrap().segments(), &[]);
        assert_eq!(
            Path::parse("a.b[0].c").unwrap().segments(),
            &[Key("a".into()), Key("b".into()), Index(0), Key("c".into())]
        );
        assert_eq!(
            Path::parse(r#"["x.y"]['z\'q'][-2]"#).unwrap().segments(),
            &[Key("x.y".into()), Key("z'q".into()), Index(-2)]
        );
        assert!(Path::parse("a..b").is_err());
        assert!(Path::parse(".a").is_err());
        assert!(Path::parse("a[").is_err());
        assert!(Path::parse("a[x]").is_err());
        assert!(Path::parse("a]").is_err());
        assert!(Path::parse("a[0]b").is_err());
        assert!(Path::parse("a[\"x").is_err());
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn paths_resolve_indices_from_either_end_quoted_keys_and_dotted_numbers() {
        use crate::assert::Path;
        use serde_json::json;
        let state = json!({"files": [{"path": "a.rs"}, {"path": "b.rs"}], "weird key": {"x": 1}});
        assert_eq!(
            Path::parse("files[1].path").unwrap().resolve(&state),
            Some(&json!("b.rs"))
        );
        assert_eq!(
            Path::parse("files[-1].path").unwrap().resolve(&state),
            Some(&json!("b.rs"))
        );
        assert_eq!(
            Path::parse(r#"["weird key"].x"#).unwrap().resolve(&state),
            Some(&json!(1))
        );
        assert_eq!(
            Path::parse("files.0.path").unwrap().resolve(&state),
            Some(&json!("a.rs"))
        );
        assert_eq!(Path::parse("missing.x").unwrap().resolve(&state), None);
    }
}
