//! Globs over colon-separated signal names.
//!
//! A signal name is a colon path (`agent:activated`, `state:plan:changed`).
//! A glob is matched against it segment by segment:
//!
//! | glob | matches |
//! |---|---|
//! | `agent:activated` | exactly that name |
//! | `agent:*` | `agent:` and one more segment (`agent:activated`, not `agent:a:b`) |
//! | `state:*:changed` | `state:plan:changed`, `state:x:changed` |
//! | `tool:**` | `tool`, `tool:call`, `tool:a:b:c` (`**` is any number of segments, zero included) |
//! | `**` | every name |
//! | `review*` | a one-segment name starting with `review` (`*` inside a segment never crosses a `:`) |
//!
//! `globset` treats only `/` as a separator, so `agent:*` would also match
//! `agent:x:y` there; this module does its own matching.

use std::fmt;

/// Why a string is not a valid glob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlobError {
    /// The pattern is empty.
    #[error("empty pattern")]
    Empty,
    /// `**` appears inside a segment together with other characters.
    #[error("`**` must be a whole segment (as in `tool:**`), found `{segment}`")]
    DoubleStarInSegment {
        /// The offending segment.
        segment: String,
    },
}

/// One segment of a compiled glob.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// Matches exactly this text.
    Literal(String),
    /// `*` inside a segment: the literal pieces between the stars.
    /// `["re", ""]` is `re*`; a lone `*` is `["", ""]`.
    Wild(Vec<String>),
    /// `**`: zero or more whole segments.
    Any,
}

/// A compiled glob over colon-separated names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    source: String,
    segments: Vec<Segment>,
    literal: bool,
}

impl Glob {
    /// Compile `pattern`.
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        if pattern.is_empty() {
            return Err(GlobError::Empty);
        }
        let mut segments = Vec::new();
        for seg in pattern.split(':') {
            if seg == "**" {
                // Consecutive `**` mean the same as one.
                if segments.last() != Some(&Segment::Any) {
                    segments.push(Segment::Any);
                }
            } else if seg.contains("**") {
                return Err(GlobError::DoubleStarInSegment {
                    segment: seg.to_string(),
                });
            } else if seg.contains('*') {
                segments.push(Segment::Wild(seg.split('*').map(str::to_string).collect()));
            } else {
                segments.push(Segment::Literal(seg.to_string()));
            }
        }
        let literal = segments.iter().all(|s| matches!(s, Segment::Literal(_)));
        Ok(Glob {
            source: pattern.to_string(),
            segments,
            literal,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern has no wildcard (it matches one name only).
    pub fn is_literal(&self) -> bool {
        self.literal
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        if self.literal {
            return name == self.source;
        }
        // Segments of the name, without allocating for the common short case.
        let mut buf: [&str; 8] = [""; 8];
        let mut vec = Vec::new();
        let parts: &[&str] = {
            let mut n = 0;
            let mut overflow = false;
            for part in name.split(':') {
                if n < buf.len() {
                    buf[n] = part;
                    n += 1;
                } else {
                    overflow = true;
                    break;
                }
            }
            if overflow {
                vec.extend(name.split(':'));
                &vec
            } else {
                &buf[..n]
            }
        };
        match_segments(&self.segments, parts)
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl std::str::FromStr for Glob {
    type Err = GlobError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Glob::new(s)
    }
}

/// Classic wildcard matching with one kind of multi-element star (`**`),
/// backtracking only to the last `**` seen: O(pattern × name) at worst.
fn match_segments(pattern: &[Segment], name: &[&str]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(Segment::Any) => {
                star = Some((p, n));
                p += 1;
            }
            Some(seg) if segment_matches(seg, name[n]) => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|s| *s == Segment::Any)
}

fn segment_matches(seg: &Segment, text: &str) -> bool {
    match seg {
        Segment::Literal(l) => l == text,
        Segment::Any => true,
        Segment::Wild(pieces) => wild_matches(pieces, text),
    }
}

/// `pieces` are the literal parts between `*`s; the text must start with the
/// first, end with the last and hold the others in order between.
fn wild_matches(pieces: &[String], text: &str) -> bool {
    let (first, rest) = match pieces.split_first() {
        Some(x) => x,
        None => return text.is_empty(),
    };
    let Some(mut remaining) = text.strip_prefix(first.as_str()) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return remaining.is_empty();
    };
    for piece in middle {
        match remaining.find(piece.as_str()) {
            Some(at) => remaining = &remaining[at + piece.len()..],
            None => return false,
        }
    }
    remaining.len() >= last.len() && remaining.ends_with(last.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, n: &str) -> bool {
        Glob::new(p).unwrap().matches(n)
    }

    #[test]
    fn segments() {
        assert!(m("agent:*", "agent:activated"));
        assert!(!m("agent:*", "agent"));
        assert!(!m("agent:*", "agent:a:b"));
        assert!(m("state:*:changed", "state:plan:changed"));
        assert!(!m("state:*:changed", "state:a:b:changed"));
        assert!(m("state:**:changed", "state:a:b:changed"));
        assert!(m("state:**:changed", "state:changed"));
        assert!(m("tool:**", "tool"));
        assert!(m("tool:**", "tool:call"));
        assert!(!m("tool:**", "tools:call"));
        assert!(m("**", "anything:at:all"));
        assert!(m("**:end", "harness:end"));
        assert!(m("review*", "review"));
        assert!(m("review*", "reviewed"));
        assert!(!m("review*", "review:complete"));
        assert!(m("*:complete", "review:complete"));
        assert!(m("a*b*c", "aXXbYYc"));
        assert!(!m("a*b*c", "aXXbYY"));
        assert!(!m("ab*ba", "aba"));
        assert!(m("ab*ba", "abba"));
        assert!(m("**:**:x", "x"));
    }

    #[test]
    fn errors() {
        assert_eq!(Glob::new(""), Err(GlobError::Empty));
        assert!(matches!(
            Glob::new("tool:a**"),
            Err(GlobError::DoubleStarInSegment { .. })
        ));
    }
}

/// The examples that were this module's doctests (its items are
/// internal now, out of doctests' reach).
#[cfg(test)]
mod examples {
    #[test]
    fn a_star_matches_one_segment_and_a_double_star_any_number() {
        use crate::assert::Glob;
        let g = Glob::new("agent:*").unwrap();
        assert!(g.matches("agent:activated"));
        assert!(!g.matches("agent:x:y"));
        assert!(Glob::new("tool:**").unwrap().matches("tool"));
        assert!(Glob::new("tool:**").unwrap().matches("tool:call:nested"));
    }
}
