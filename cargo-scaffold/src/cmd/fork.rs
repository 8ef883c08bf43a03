//! `cargo scaffold fork`: run the suite's variants from a point of a stored
//! session (the harness's `SCAFFOLD_FORK_FROM` / `SCAFFOLD_FORK_AT`).

use crate::cli::ForkArgs;
use crate::cmd::not_yet;
use crate::error::CmdResult;

/// The parent session.
pub const FORK_FROM_ENV: &str = "SCAFFOLD_FORK_FROM";
/// The fork point.
pub const FORK_AT_ENV: &str = "SCAFFOLD_FORK_AT";

/// `cargo scaffold fork`.
pub fn run(args: &ForkArgs) -> CmdResult {
    let _ = (args, FORK_FROM_ENV, FORK_AT_ENV);
    Err(not_yet(
        "fork",
        "forking in the eval harness (SCAFFOLD_FORK_FROM, SCAFFOLD_FORK_AT) and scaffold::session::ForkPoint",
    ))
}
