//! `cargo scaffold validate`: every error and warning of dataset files.

use scaffold::dataset;

use crate::cli::ValidateArgs;
use crate::error::{CmdResult, Exit};

/// The exit status when a file cannot be read (wrong input, as elsewhere).
const UNREADABLE: u8 = 2;

/// `n` things, the noun in the plural when it needs to be.
fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// `cargo scaffold validate`: the diagnostics on stdout as the library
/// writes them, file after file; unreadable files and a count on stderr.
pub fn run(args: &ValidateArgs) -> CmdResult {
    let (mut validated, mut failing, mut unreadable) = (0, 0, 0);
    let (mut errors, mut warnings) = (0, 0);
    for path in &args.files {
        match dataset::validate(path) {
            Ok(v) => {
                print!("{v}");
                validated += 1;
                let e = v.errors().count();
                errors += e;
                warnings += v.warnings().count();
                failing += usize::from(e > 0);
            }
            Err(e) => {
                eprintln!("error: {e}");
                unreadable += 1;
            }
        }
    }
    let with_errors = match failing {
        0 => String::new(),
        n => format!(" ({n} with errors)"),
    };
    eprintln!(
        "{validated} dataset(s) validated: {}, {}{with_errors}",
        count(errors, "error"),
        count(warnings, "warning"),
    );
    if unreadable > 0 {
        return Ok(Exit::Code(UNREADABLE));
    }
    Ok(Exit::from_ok(errors == 0))
}
