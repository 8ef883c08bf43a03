//! A cell's page: the HTML report's transcript viewer for one cell of a
//! run, with its session's lineage, and beside it the same cell of another
//! run when asked (`?base=RUN`).

use scaffold::_cargo_scaffold_support::eval::CellRecord;
use scaffold::_cargo_scaffold_support::report::html::CellPage;
use scaffold::store::Store;

use super::layout::{Built, NAV, Refusal, VIEWER_SCRIPT_PATH, esc, policy_meta, query};

/// The record of cell `name` (`{eval}::{variant}::{case}[::t{n}]`) of run
/// `run`, if it was recorded.
fn cell_record(store: &Store, run: &str, name: &str) -> Result<Option<CellRecord>, Refusal> {
    let eval = name.split("::").next().unwrap_or_default();
    let mut found =
        (store.cell_records(run, eval, vec![name.to_owned()])).map_err(Refusal::store)?;
    Ok(found.pop().flatten())
}

/// The page of cell `name` of run `run`, beside run `base`'s (`""`: alone).
pub fn render(store: &Store, run: &str, name: &str, base: &str) -> Built {
    let run = crate::store::eval_run(store, run).map_err(Refusal::not_found)?;
    let cell = cell_record(store, &run.id, name)?
        .ok_or_else(|| Refusal::not_found(format!("run {} has no cell {name}", run.id)))?;
    let (baseline, beside) = match base {
        "" => (None, String::new()),
        base => {
            let other = crate::store::eval_run(store, base).map_err(Refusal::not_found)?;
            let link = format!(
                "<a href=\"/runs/{}\">{}</a>",
                query(&other.id),
                esc(&other.id)
            );
            match cell_record(store, &other.id, name)? {
                Some(b) => (Some(b), format!(", beside the same cell of run {link}")),
                None => (
                    None,
                    format!("; run {link} has no such cell to show beside it"),
                ),
            }
        }
    };
    let back = format!(
        "{NAV}<p>Cell of run <a href=\"/runs/{}\">{}</a>{beside}</p>",
        query(&run.id),
        esc(&run.id)
    );
    let head = policy_meta();
    Ok(CellPage::new(store, name, &cell)
        .baseline(baseline.as_ref())
        .head(&head)
        .body(&back)
        .script_src(VIEWER_SCRIPT_PATH)
        .render())
}
