//! `cargo scaffold merge`: shard results into one run.

use crate::cli::MergeArgs;
use crate::cmd::not_yet;
use crate::error::CmdResult;

/// `cargo scaffold merge`.
pub fn run(args: &MergeArgs) -> CmdResult {
    let _ = args;
    Err(not_yet("merge", "EvalResults::merge"))
}
