//! Escaping text for XML, HTML and Markdown tables.

/// Whether `c` may appear in an XML 1.0 document.
fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r')
        || ('\u{20}'..='\u{D7FF}').contains(&c)
        || ('\u{E000}'..='\u{FFFD}').contains(&c)
        || c >= '\u{10000}'
}

/// Text for XML or HTML content and attribute values: `& < > " '`
/// escaped, characters XML cannot hold (most control characters) replaced
/// by `\u{FFFD}`.
pub fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if xml_char(c) => out.push(c),
            _ => out.push('\u{FFFD}'),
        }
    }
    out
}

/// A relative file path as a link's target: every byte but ASCII letters,
/// digits, `-._~` and `/` percent-encoded, so that the link names that
/// file (no `:` of a scheme, no `?` or `#`, no space, no parenthesis or
/// pipe to end a Markdown link or table cell).
pub(crate) fn url_path(path: &str) -> String {
    percent_encode(path, b"-._~/")
}

/// `s` as one path segment or query value of a URL: every byte but ASCII
/// letters, digits and `-._~` percent-encoded.
pub fn url_component(s: &str) -> String {
    percent_encode(s, b"-._~")
}

fn percent_encode(s: &str, kept: &[u8]) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || kept.contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Text for a Markdown table cell: one line, pipes and HTML escaped.
pub(crate) fn md_cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out.trim().to_string()
}

/// A Markdown code span of `s` on one line, with a backtick fence longer
/// than any run of backticks inside.
pub(crate) fn md_code(s: &str) -> String {
    code_span(s, false)
}

/// [`md_code`] for a table cell: pipes escaped too (GitHub splits table
/// cells before it parses code spans, and unescapes `\|` inside them).
pub(crate) fn md_code_cell(s: &str) -> String {
    code_span(s, true)
}

fn code_span(s: &str, in_table: bool) -> String {
    let mut text: String = s
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .filter(|c| !c.is_control())
        .collect();
    if in_table {
        text = text.replace('|', "\\|");
    }
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if text.starts_with('`') || text.ends_with('`') {
        format!("{fence} {text} {fence}")
    } else {
        format!("{fence}{text}{fence}")
    }
}

/// Text for inline Markdown (outside tables): HTML escaped, newlines kept.
pub(crate) fn md_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_escapes_and_drops_control_characters() {
        assert_eq!(
            xml("a<b & \"c\" 'd'>"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;"
        );
        assert_eq!(xml("bell\u{7}\ttab"), "bell\u{FFFD}\ttab");
    }

    #[test]
    fn md_code_spans() {
        assert_eq!(md_code("a|b"), "`a|b`");
        assert_eq!(md_code_cell("a|b"), "`a\\|b`");
        assert_eq!(md_code("x `y` z"), "``x `y` z``");
        assert_eq!(md_code("`q"), "`` `q ``");
        assert_eq!(md_code("<b>"), "`<b>`");
    }

    #[test]
    fn md_cells_stay_on_one_line() {
        assert_eq!(md_cell(" a|b\nc <x> "), "a\\|b c &lt;x&gt;");
    }
}
