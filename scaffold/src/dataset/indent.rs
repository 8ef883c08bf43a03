//! A YAML line indented to no level of the lines above it, named and moved.
//!
//! The parser reports such a line in its own terms ("while parsing a block
//! collection, did not find expected '-' indicator", "mapping values are
//! not allowed in this context") and stops there. The levels a line can
//! line up with are those of the lines above it: the keys and the `-` of
//! the nearest line, then of each line less indented than the last, up to
//! the top. The nearest of the right kind (a key's for a key, a `-`'s for a
//! list item) is what the line was meant to line up with: the error says
//! so, and the file can be read again with the line moved there, so that
//! its other errors are found too.

/// What a level is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A mapping key, `name:`.
    Key,
    /// A list item's `-`.
    Dash,
}

/// A level a line can line up with.
#[derive(Debug, Clone, Copy)]
struct Level<'s> {
    /// Characters before it on its line.
    column: usize,
    kind: Kind,
    /// Its line, from 1.
    line: usize,
    /// The key (as written), or `-`.
    text: &'s str,
}

impl Level<'_> {
    /// "`name`", or "the `-`".
    fn name(&self) -> String {
        match self.kind {
            Kind::Key => format!("`{}`", self.text),
            Kind::Dash => "the `-`".into(),
        }
    }
}

/// A line to move, and the words of its error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Move {
    /// The line, from 1.
    pub(crate) line: usize,
    /// The spaces it is indented with.
    pub(crate) from: usize,
    /// The spaces it should be indented with.
    pub(crate) to: usize,
    pub(crate) message: String,
}

/// The levels a line begins: column, kind and text of each.
type Heads<'s> = Vec<(usize, Kind, &'s str)>;

/// The indentation (spaces) of a line and the levels it begins, or `None`
/// for a blank or comment line, or one indented with a tab.
fn levels_of(line: &str) -> Option<(usize, Heads<'_>)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let mut rest = &line[indent..];
    let trimmed = rest.trim_end();
    if trimmed.is_empty() || trimmed.starts_with('#') || rest.starts_with('\t') {
        return None;
    }
    let mut column = indent;
    let mut found = Vec::new();
    while rest.trim_end() == "-" || rest.starts_with("- ") {
        found.push((column, Kind::Dash, "-"));
        let after = rest[1..].trim_start_matches(' ');
        column += rest.len() - after.len();
        rest = after;
    }
    if let Some(key) = key_of(rest) {
        found.push((column, Kind::Key, key));
    }
    Some((indent, found))
}

/// The key that `text` begins with (`name: …`, `"a b": …`), as written.
fn key_of(text: &str) -> Option<&str> {
    let end = match text.chars().next()? {
        q @ ('"' | '\'') => {
            let mut escaped = false;
            let close = text[1..].char_indices().find(|&(_, c)| {
                let closes = c == q && !escaped;
                escaped = q == '"' && c == '\\' && !escaped;
                closes
            })?;
            1 + close.0 + 1
        }
        '[' | '{' | '#' | '&' | '*' | '!' | '|' | '>' | '?' | '%' | '@' | '`' => return None,
        _ => text
            .char_indices()
            .find(|&(i, c)| {
                c == ':' && text[i + 1..].chars().next().is_none_or(char::is_whitespace)
            })
            .map(|(i, _)| i)?,
    };
    let after = text[end..].strip_prefix(':')?;
    if !after.chars().next().is_none_or(char::is_whitespace) {
        return None;
    }
    let key = text[..end].trim_end();
    (!key.is_empty() && !key.contains(" #")).then_some(key)
}

/// "1 space", "3 spaces".
fn spaces(n: usize) -> String {
    format!("{n} space{}", if n == 1 { "" } else { "s" })
}

/// The move of line `line` (from 1) of `text`, when it begins with a key or
/// a `-` that lines up with no level of its kind above it, and some level
/// of that kind is there to line up with.
pub(crate) fn misplaced(text: &str, line: usize) -> Option<Move> {
    let lines: Vec<&str> = text.lines().collect();
    let (indent, heads) = levels_of(lines.get(line.checked_sub(1)?)?)?;
    let &(_, kind, head) = heads.first()?;
    let mut levels: Vec<Level<'_>> = Vec::new();
    let mut bound = usize::MAX;
    for (i, above) in lines[..line - 1].iter().enumerate().rev() {
        let Some((at, found)) = levels_of(above) else {
            continue;
        };
        if at >= bound {
            continue;
        }
        for (column, kind, text) in found {
            // The nearest line's level of a column is the one to name.
            if !levels.iter().any(|l| l.column == column && l.kind == kind) {
                levels.push(Level {
                    column,
                    kind,
                    line: i + 1,
                    text,
                });
            }
        }
        bound = at;
        if bound == 0 {
            break;
        }
    }
    if levels.iter().any(|l| l.column == indent && l.kind == kind) {
        return None;
    }
    // The nearest level of its kind; of two as near, the deeper.
    let target = levels
        .iter()
        .filter(|l| l.kind == kind)
        .min_by_key(|l| (l.column.abs_diff(indent), std::cmp::Reverse(l.column)))?;
    let beside = match levels.iter().find(|l| l.column == indent) {
        Some(l) => format!("{} on line {}", l.name(), l.line),
        None => "nothing above it".into(),
    };
    Some(Move {
        line,
        from: indent,
        to: target.column,
        message: format!(
            "`{head}` is indented {}, in line with {beside}: expected {}, to line up with {} on \
             line {}",
            spaces(indent),
            target.column,
            target.name(),
            target.line
        ),
    })
}

/// `text` with the move made: to the line alone, or to it and the lines
/// under it (those more indented, up to the first that is not), which move
/// with it. The second value is the last line moved.
pub(crate) fn apply(text: &str, m: &Move, with_block: bool) -> (String, usize) {
    let mut out = String::with_capacity(text.len() + m.to);
    let mut last = m.line;
    let mut in_block = true;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let n = i + 1;
        let moves = if n == m.line {
            true
        } else if n > m.line && with_block && in_block {
            match levels_of(line.trim_end_matches(['\n', '\r'])) {
                // Blank and comment lines neither move nor end the block.
                None => false,
                Some((indent, _)) if indent > m.from => true,
                Some(_) => {
                    in_block = false;
                    false
                }
            }
        } else {
            false
        };
        if !moves {
            out.push_str(line);
            continue;
        }
        last = n;
        if m.to >= m.from {
            out.extend(std::iter::repeat_n(' ', m.to - m.from));
            out.push_str(line);
        } else {
            let indent = line.len() - line.trim_start_matches(' ').len();
            out.push_str(&line[(m.from - m.to).min(indent)..]);
        }
    }
    (out, last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_dashes() {
        assert_eq!(levels_of("  - id: a").map(|l| l.1.len()), Some(2));
        assert_eq!(key_of("name: x"), Some("name"));
        assert_eq!(key_of("\"a: b\": x"), Some("\"a: b\""));
        assert_eq!(key_of("url: http://x"), Some("url"));
        assert_eq!(key_of("http://x"), None);
        assert_eq!(key_of("[a]: b"), None);
        assert_eq!(levels_of("   # note"), None);
        assert_eq!(levels_of(""), None);
    }

    #[test]
    fn a_move_and_its_block() {
        let text = "a:\n  - b: 1\n   c:\n      d: 2\n  - e: 3\n";
        let m = misplaced(text, 3).expect("misplaced");
        assert_eq!((m.from, m.to), (3, 4));
        assert_eq!(
            apply(text, &m, true),
            (
                "a:\n  - b: 1\n    c:\n       d: 2\n  - e: 3\n".to_string(),
                4
            )
        );
        assert_eq!(
            apply(text, &m, false),
            (
                "a:\n  - b: 1\n    c:\n      d: 2\n  - e: 3\n".to_string(),
                3
            )
        );
        // In line with a level of its kind: not this kind of error.
        assert_eq!(misplaced(text, 5), None);
    }
}
