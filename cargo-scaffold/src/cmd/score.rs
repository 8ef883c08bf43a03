//! `cargo scaffold score`: a dataset's assertions over stored sessions.

use crate::cli::ScoreArgs;
use crate::cmd::not_yet;
use crate::error::CmdResult;

/// `cargo scaffold score`.
pub fn run(args: &ScoreArgs) -> CmdResult {
    let _ = args;
    Err(not_yet("score", "scaffold::session::score"))
}
