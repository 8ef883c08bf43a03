//! `cargo scaffold report`: render stored results again.

use std::path::Path;

use scaffold::_cargo_scaffold_support::eval::{CompareOptions, Comparison, compare};
use scaffold::_cargo_scaffold_support::report::{self, Format};

use crate::cli::ReportArgs;
use crate::cmd::report_formats;
use crate::error::{CliError, CmdResult, Exit};
use crate::results::{self, Baseline, BaselineFor};

/// `cargo scaffold report`.
pub fn run(args: &ReportArgs) -> CmdResult {
    let formats = report_formats(&args.format, "--format")?;
    let loaded = results::load_source(&args.source)?;
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
    for item in &loaded {
        let results = &item.results;
        if let Some(why) = results.partial() {
            eprintln!("warning: eval `{}`: {why}", results.eval);
        }
        let comparison: Option<Comparison> = match &baseline {
            None => None,
            Some(b) => match b.for_eval(&results.eval)? {
                BaselineFor::Found(base) => {
                    Some(compare(&base.results, results, &CompareOptions::default()))
                }
                BaselineFor::Missing(why) => {
                    eprintln!("note: eval `{}` not compared: {why}", results.eval);
                    None
                }
            },
        };
        for &format in &formats {
            let text = report::render(format, results, comparison.as_ref());
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
    }
    Ok(Exit::Success)
}

fn write(dir: &Path, name: &str, text: &str) -> Result<(), CliError> {
    let path = dir.join(name);
    std::fs::write(&path, text)
        .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))?;
    eprintln!("  Report: {}", path.display());
    Ok(())
}
