//! Finding a run's cells by their text and tags, in the database: the
//! full-text index `cell_text` (FTS5, see the schema's version 6) and the
//! sessions' tags, so that a viewer filters a run of any size without
//! reading its records back.

use rusqlite::{Connection, Params, params};

use super::Store;
use super::error::{Context, StoreError};

/// A cell of a run: its eval and its id (the test name).
pub type CellKey = (String, String);

/// `text` as an FTS5 query that finds the cells holding every word of it,
/// each word also as the start of a longer one. Each word is quoted, so no
/// text is FTS5 syntax; `None` when `text` has no word (letters or digits).
fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .map(|w| format!("\"{}\"*", w.replace('"', "\"\"")))
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// Whether `text` has a word to search for (see [`Store::search_cells`]).
pub fn has_words(text: &str) -> bool {
    fts_query(text).is_some()
}

/// The rows of `sql`'s first column, as strings.
pub(crate) fn strings(
    conn: &Connection,
    path: &str,
    sql: &str,
    params: impl Params,
    what: impl Fn() -> String,
) -> Result<Vec<String>, StoreError> {
    let mut st = conn.prepare_cached(sql).ctx(path, &what)?;
    let rows = st.query_map(params, |r| r.get(0)).ctx(path, &what)?;
    rows.map(|r| r.ctx(path, &what)).collect()
}

/// The rows of `sql` (eval, cell) for run `run` and `arg`.
fn cells(
    conn: &Connection,
    path: &str,
    sql: &str,
    run: &str,
    arg: &str,
    what: impl Fn() -> String,
) -> Result<Vec<CellKey>, StoreError> {
    let mut st = conn.prepare_cached(sql).ctx(path, &what)?;
    let rows = st
        .query_map(params![run, arg], |r| Ok((r.get(0)?, r.get(1)?)))
        .ctx(path, &what)?;
    rows.map(|r| r.ctx(path, &what)).collect()
}

/// Put the cells of session `id`, whose signals were deleted, back among
/// those waiting to be indexed, to be indexed from their rows (their
/// records' text alone, now); how many.
pub(crate) fn reindex_session_cells(
    conn: &Connection,
    path: &str,
    id: &str,
) -> Result<usize, StoreError> {
    let what = || format!("indexing again the cells of deleted session {id}");
    let mut st = conn
        .prepare_cached("SELECT rowid FROM cell_results WHERE session_id = ?1")
        .ctx(path, what)?;
    let rows: Vec<i64> = st
        .query_map([id], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .ctx(path, what)?;
    for rowid in &rows {
        for sql in [
            "DELETE FROM cell_text WHERE rowid = ?1",
            "INSERT OR REPLACE INTO cell_text_pending (rowid, body) VALUES (?1, NULL)",
        ] {
            conn.prepare_cached(sql)
                .and_then(|mut st| st.execute([rowid]))
                .ctx(path, what)?;
        }
    }
    Ok(rows.len())
}

impl Store {
    /// The cells of run `run_id` whose text holds every word of `text`, each
    /// word also as the start of a longer one (`fib seq` finds "fibonacci
    /// sequence"; the text is never read as FTS5 syntax): the strings of
    /// their case, input, output, error and assertions and of their
    /// sessions' signals as they were when the cell was recorded. Sorted
    /// by eval and cell; empty when `text` has no word ([`has_words`]).
    pub fn search_cells(&self, run_id: &str, text: &str) -> Result<Vec<CellKey>, StoreError> {
        let Some(query) = fts_query(text) else {
            return Ok(Vec::new());
        };
        self.flush_index()?;
        let run = run_id.to_owned();
        self.read(move |conn, path| {
            cells(
                conn,
                path,
                "SELECT c.eval, c.cell FROM cell_results c \
                 WHERE c.run_id = ?1 AND c.rowid IN \
                 (SELECT rowid FROM cell_text WHERE cell_text MATCH ?2) \
                 ORDER BY c.eval, c.cell",
                &run,
                &query,
                || format!("searching the cells of run {run} for {query}"),
            )
        })
    }

    /// The cells of run `run_id` whose session carries tag `tag`, sorted by
    /// eval and cell.
    pub fn cells_tagged(&self, run_id: &str, tag: &str) -> Result<Vec<CellKey>, StoreError> {
        let (run, tag) = (run_id.to_owned(), tag.to_owned());
        self.read(move |conn, path| {
            cells(
                conn,
                path,
                "SELECT c.eval, c.cell FROM cell_results c \
                 WHERE c.run_id = ?1 AND c.session_id IN \
                 (SELECT session_id FROM session_tags WHERE tag = ?2) \
                 ORDER BY c.eval, c.cell",
                &run,
                &tag,
                || format!("reading the cells of run {run} tagged {tag}"),
            )
        })
    }

    /// The tags of run `run_id`'s cells' sessions that name no scope
    /// (`case:…`, `dataset:…` and the like are left out), sorted.
    pub fn run_tags(&self, run_id: &str) -> Result<Vec<String>, StoreError> {
        let run = run_id.to_owned();
        self.read(move |conn, path| {
            strings(
                conn,
                path,
                "SELECT DISTINCT t.value FROM cell_results c \
                 JOIN sessions s ON s.id = c.session_id, json_each(s.tags) t \
                 WHERE c.run_id = ?1 AND instr(t.value, ':') = 0 ORDER BY t.value",
                [&run],
                || format!("reading the tags of run {run}"),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::fts_query;

    #[test]
    fn every_word_is_quoted_and_a_prefix() {
        assert_eq!(fts_query("fib seq").as_deref(), Some("\"fib\"* \"seq\"*"));
        assert_eq!(
            fts_query("say \"hi\" OR NEAR(").as_deref(),
            Some("\"say\"* \"\"\"hi\"\"\"* \"OR\"* \"NEAR(\"*")
        );
        assert_eq!(fts_query("  <> -- "), None);
    }
}
