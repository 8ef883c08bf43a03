//! Reading a session's signals from their blocks (`signal_blocks`, schema
//! version 7): each row holds the signals of a run of appends as a JSON array,
//! each signal as [`Signal`] serializes it, in index order.

use rusqlite::{Connection, params};

use super::error::{Context, StoreError, to_i64};
use crate::signal::Signal;

/// The blocks of session `?1` that hold indices in `[?2, ?3]`, in index
/// order: from the one that holds `?2` (the last to start at or before it;
/// blocks do not overlap), so that a late range reads its own blocks, not
/// every block before it.
pub(crate) const BLOCKS_SQL: &str = "SELECT signals FROM signal_blocks \
     WHERE session_id = ?1 AND first_idx <= ?3 AND last_idx >= ?2 \
       AND first_idx >= coalesce((SELECT max(first_idx) FROM signal_blocks \
                                  WHERE session_id = ?1 AND first_idx <= ?2), 0) \
     ORDER BY first_idx";

/// The signals of session `id` with `from <= index <= to` (indices beyond
/// `i64::MAX` mean the end), in index order.
pub(crate) fn signals_in(
    conn: &Connection,
    path: &str,
    id: &str,
    (from, to): (u64, u64),
) -> Result<Vec<Signal>, StoreError> {
    let what = || format!("reading the signals of session {id} in [{from}, {to}]");
    let first = to_i64(path, "signal index", from).unwrap_or(i64::MAX);
    let last = to_i64(path, "signal index", to).unwrap_or(i64::MAX);
    let mut st = conn.prepare_cached(BLOCKS_SQL).ctx(path, what)?;
    let mut rows = st.query(params![id, first, last]).ctx(path, what)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx(path, what)? {
        let block = row
            .get_ref(0)
            .and_then(|v| Ok(v.as_str()?))
            .ctx(path, what)?;
        let signals: Vec<Signal> = serde_json::from_str(block).ctx(path, || {
            format!("parsing a block of signals of session {id}")
        })?;
        out.extend(
            signals
                .into_iter()
                .filter(|s| (from..=to).contains(&s.index)),
        );
    }
    Ok(out)
}
