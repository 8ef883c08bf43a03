//! Small text helpers: percentages, durations, aligned columns (times are
//! `scaffold::_cargo_scaffold_support::util::rfc3339`).

/// `0.875` → `87.5%`.
pub fn pct(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}

/// A rate difference in percentage points: `-0.1` → `-10.0 pts`.
pub fn pts(delta: f64) -> String {
    format!("{:+.1} pts", delta * 100.0)
}

/// A duration in ms, short: `850ms`, `2.1s`, `3m05s`.
pub fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, ms % 60_000 / 1000)
    }
}

/// `s` cut to at most `max` characters, with `…` when cut.
pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// Rows as columns separated by two spaces, each padded to its widest cell
/// (the last column is not padded).
pub fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; n];
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 < row.len() {
                line.push_str(cell);
                let pad = widths[i] - cell.chars().count() + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            } else {
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_forms() {
        assert_eq!(pct(0.875), "87.5%");
        assert_eq!(pts(-0.1), "-10.0 pts");
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(2_140), "2.1s");
        assert_eq!(duration(185_000), "3m05s");
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abc", 4), "abc");
    }

    #[test]
    fn columns_align() {
        let rows = vec![
            vec!["ID".to_string(), "STATUS".to_string(), "X".to_string()],
            vec!["abcdef".to_string(), "ok".to_string(), "".to_string()],
        ];
        assert_eq!(columns(&rows), "ID      STATUS  X\nabcdef  ok\n");
    }
}
