//! `cargo scaffold report`: render stored results again.

use std::path::Path;

use scaffold::_cargo_scaffold_support::eval::{CompareOptions, Comparison, EvalResults, compare};
use scaffold::_cargo_scaffold_support::report::html::{
    INDEX_FILE, IndexEntry, Page, TRANSCRIPTS_VAR, TranscriptSelection, Transcripts, render_index,
};
use scaffold::_cargo_scaffold_support::report::{self, Format};
use scaffold::store::Store;

use crate::cli::ReportArgs;
use crate::cmd::report_formats;
use crate::error::{CliError, CmdResult, Exit};
use crate::results::{self, Baseline, BaselineFor};

/// `cargo scaffold report`.
pub fn run(args: &ReportArgs) -> CmdResult {
    let formats = report_formats(&args.format, "--format")?;
    let selection = TranscriptSelection::from_env().map_err(|e| CliError::input(e.to_string()))?;
    let loaded = results::load_source(&args.source)?;
    let db = match formats.contains(&Format::Html) {
        true => sessions_db(args),
        false => None,
    };
    let baseline = args
        .baseline
        .as_deref()
        .map(|p| Baseline::open(p, "--baseline"))
        .transpose()?;
    if let Some(dir) = &args.output {
        if dir.exists() && !dir.is_dir() {
            return Err(CliError::input(format!(
                "--output {}: this is a file; give a directory for the reports",
                dir.display()
            )));
        }
        std::fs::create_dir_all(dir).map_err(|e| {
            CliError::input(format!("--output {}: cannot create it: {e}", dir.display()))
        })?;
    }
    let mut printed = false;
    // Written into a directory, the HTML pages get an index that links them
    // (and their other reports), and each page links back to it.
    let index = match (&args.output, formats.contains(&Format::Html)) {
        (Some(_), true) => Some(INDEX_FILE),
        _ => None,
    };
    let mut entries = Vec::new();
    for item in &loaded {
        let results = &item.results;
        if let Some(why) = results.partial() {
            eprintln!("warning: eval `{}`: {why}", results.eval);
        }
        let base: Option<EvalResults> = match &baseline {
            None => None,
            Some(b) => match b.for_eval(&results.eval)? {
                BaselineFor::Found(base) => Some(base.results.clone()),
                BaselineFor::Missing(why) => {
                    eprintln!("note: eval `{}` not compared: {why}", results.eval);
                    None
                }
            },
        };
        let comparison: Option<Comparison> = base
            .as_ref()
            .map(|b| compare(b, results, &CompareOptions::default()));
        for &format in &formats {
            let text = match (format, &db) {
                (Format::Html, db) => {
                    let transcripts = db.as_ref().map(|store| {
                        let t = Transcripts::new(store, selection);
                        match &base {
                            Some(b) => t.baseline(b),
                            None => t,
                        }
                    });
                    let mut page = Page::new(results).baseline(comparison.as_ref());
                    if let Some(t) = &transcripts {
                        page = page.transcripts(t);
                    }
                    if let Some(file) = index {
                        page = page.index(file);
                    }
                    page.render()
                }
                // Beside the HTML report, the failed cells link to their transcripts.
                (Format::Markdown, _)
                    if args.output.is_some() && formats.contains(&Format::Html) =>
                {
                    report::markdown::render_linked(
                        results,
                        comparison.as_ref(),
                        &format!("{}.{}", results.eval, Format::Html.extension()),
                    )
                }
                _ => report::render(format, results, comparison.as_ref()),
            };
            match (&args.output, format) {
                (Some(dir), f) if f != Format::Table => {
                    write(dir, &format!("{}.{}", results.eval, f.extension()), &text)?;
                }
                _ => {
                    if printed {
                        println!();
                    }
                    print!("{text}");
                    printed = true;
                }
            }
        }
        if let (Some(dir), Some(cmp)) = (&args.output, &comparison)
            && formats.contains(&Format::Json)
        {
            write(
                dir,
                &format!("{}.comparison.json", results.eval),
                &report::json::render_comparison(cmp),
            )?;
        }
        if index.is_some() {
            entries.push(IndexEntry::new(results, &formats));
        }
    }
    if let (Some(dir), Some(file)) = (&args.output, index) {
        write(dir, file, &render_index(None, &entries))?;
    }
    Ok(Exit::Success)
}

/// The session database the HTML report reads transcripts from: the run's
/// (`--run`), else the default one when it exists; none (a note) otherwise.
fn sessions_db(args: &ReportArgs) -> Option<Store> {
    let flag = args.source.database.as_deref();
    match crate::store::open(flag) {
        Ok(db) => Some(db.store),
        Err(e) => {
            eprintln!("note: the HTML report has no transcripts ({TRANSCRIPTS_VAR}): {e}");
            None
        }
    }
}

fn write(dir: &Path, name: &str, text: &str) -> Result<(), CliError> {
    let path = dir.join(name);
    std::fs::write(&path, text)
        .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
    eprintln!("  Report: {}", path.display());
    Ok(())
}
