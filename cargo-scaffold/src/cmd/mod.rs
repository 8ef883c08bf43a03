//! One module per subcommand.

pub mod compare;
pub mod fork;
pub mod gate;
pub mod merge;
pub mod plan;
pub mod report;
pub mod run;
pub mod runs;
pub mod score;
pub mod sessions;
pub mod validate;

use scaffold::_cargo_scaffold_support::report::Format;

use crate::error::CliError;

/// A `--format` list of report formats, through the library's parser.
pub fn report_formats(list: &str, flag: &str) -> Result<Vec<Format>, CliError> {
    let formats = Format::parse_list(list).map_err(|e| CliError::input(format!("{flag}: {e}")))?;
    if formats.is_empty() {
        return Err(CliError::input(format!(
            "{flag}: no format given (use e.g. {flag} table,json)"
        )));
    }
    Ok(formats)
}
