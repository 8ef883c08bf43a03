//! What a YAML file's aliases expand to, counted before the file is read.
//!
//! serde-saphyr expands an alias (`*name`) by replaying the events of its
//! anchor (`&name`), so a "billion laughs" is only refused once the values
//! it has built pass the node budget: millions of values, seconds and
//! hundreds of megabytes later. This walk over the parser's events builds
//! nothing: it keeps the number of values of each anchor and adds it at each
//! alias, so the alias that breaks the budget is found at the speed of
//! parsing, in memory of the order of the number of anchors.

use serde_saphyr::granit_parser::{Event, Options, Parser, Span};

use super::node::{MAX_DEPTH, Pos};

/// What a file may hold, aliases expanded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Values (scalars, lists, mappings) in the file.
    pub(crate) values: usize,
    /// Values held by anchors: the reader keeps a copy of each anchor's
    /// values to replay, one more for each anchor it is inside.
    pub(crate) held: usize,
}

/// A limit passed, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Excess {
    /// More than [`Limits::values`] values once the first `aliases`
    /// aliases are expanded (the last of them is where it happened).
    Values { aliases: usize },
    /// Anchors hold more than [`Limits::held`] values.
    Held,
}

/// An anchored list or mapping still open.
struct Frame {
    anchor: usize,
    depth: usize,
    values_before: usize,
}

fn pos(span: &Span) -> Pos {
    let m = span.start;
    Pos::new(
        u32::try_from(m.line()).unwrap_or(u32::MAX),
        u32::try_from(m.col().saturating_add(1)).unwrap_or(u32::MAX),
    )
}

/// The first place where `src`'s aliases take it past `limits`, counting as
/// serde-saphyr's budget does (a scalar, a list or a mapping is one value;
/// an alias is its anchor's values again). `None` when the file stays
/// within them, and also when it has a syntax error or nests deeper than
/// [`MAX_DEPTH`] before that: the reader reports those.
pub(crate) fn excess(src: &str, options: Options, limits: Limits) -> Option<(Pos, Excess)> {
    // Values of each anchor, by the parser's anchor id (dense, from 1);
    // 0 while its list or mapping is still open.
    let mut sizes: Vec<usize> = Vec::new();
    let mut frames: Vec<Frame> = Vec::new();
    let (mut depth, mut values, mut held, mut aliases) = (0usize, 0usize, 0usize, 0usize);
    for item in Parser::new_from_str_with_options(src, options) {
        let Ok((event, span)) = item else {
            return None;
        };
        let (added, anchored) = match event {
            Event::Scalar(_, _, anchor, _) => {
                if anchor != 0 {
                    set(&mut sizes, anchor, 1);
                }
                (1, anchor != 0)
            }
            Event::SequenceStart(_, anchor, _) | Event::MappingStart(_, anchor, _) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return None;
                }
                if anchor != 0 {
                    set(&mut sizes, anchor, 0);
                    frames.push(Frame {
                        anchor,
                        depth,
                        values_before: values,
                    });
                }
                (1, false)
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if frames.last().is_some_and(|f| f.depth == depth)
                    && let Some(f) = frames.pop()
                {
                    set(&mut sizes, f.anchor, values - f.values_before);
                }
                depth = depth.saturating_sub(1);
                continue;
            }
            Event::Alias(anchor) => {
                aliases += 1;
                // An anchor still open (a recursive alias) or unknown is
                // replayed as one placeholder, or refused by the reader.
                let size = sizes.get(anchor).copied().filter(|&n| n > 0);
                (size.unwrap_or(1), false)
            }
            _ => continue,
        };
        values = values.saturating_add(added);
        // The reader copies each value into every anchor open around it,
        // and an anchored scalar or collection into its own.
        held = held
            .saturating_add(added.saturating_mul(frames.len()))
            .saturating_add(usize::from(anchored));
        if values > limits.values {
            return Some((pos(&span), Excess::Values { aliases }));
        }
        if held > limits.held {
            return Some((pos(&span), Excess::Held));
        }
    }
    None
}

fn set(sizes: &mut Vec<usize>, anchor: usize, size: usize) {
    if sizes.len() <= anchor {
        sizes.resize(anchor + 1, 0);
    }
    sizes[anchor] = size;
}
