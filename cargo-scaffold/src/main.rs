//! `cargo scaffold`: run scaffold evals and work with their stored results
//! and sessions. Cargo runs it as `cargo-scaffold scaffold <args>`; it also
//! runs directly as `cargo-scaffold <args>`.

mod cli;
mod cmd;
mod error;
mod paths;
mod results;
mod store;
mod text;
mod view;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command, RunsCommand, SessionsCommand};
use crate::error::CmdResult;

fn main() -> ExitCode {
    let cli = Cli::parse_from(cargo_args(std::env::args_os()));
    match dispatch(cli.command) {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.code())
        }
    }
}

/// The arguments without the `scaffold` that cargo puts after the program
/// name when it runs a `cargo-scaffold` subcommand.
fn cargo_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    if args.get(1).is_some_and(|a| a == "scaffold") {
        args.remove(1);
    }
    args
}

fn dispatch(command: Command) -> CmdResult {
    match command {
        Command::Run(args) => cmd::run::run(&args),
        Command::Report(args) => cmd::report::run(&args),
        Command::Compare(args) => cmd::compare::run(&args),
        Command::Gate(args) => cmd::gate::run(&args),
        Command::Sessions(SessionsCommand::List(args)) => cmd::sessions::list(&args),
        Command::Sessions(SessionsCommand::Show(args)) => cmd::sessions::show(&args),
        Command::Sessions(SessionsCommand::Export(args)) => cmd::sessions::export(&args),
        Command::Sessions(SessionsCommand::Import(args)) => cmd::sessions::import(&args),
        Command::Runs(RunsCommand::List(args)) => cmd::runs::list(&args),
        Command::Fork(args) => cmd::fork::run(&args),
        Command::Score(args) => cmd::score::run(&args),
        Command::Merge(args) => cmd::merge::run(&args),
        Command::Plan(args) => cmd::plan::run(&args),
        Command::Validate(args) => cmd::validate::run(&args),
        Command::View(args) => view::run(&args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn args(list: &[&str]) -> Vec<OsString> {
        cargo_args(list.iter().map(OsString::from))
    }

    #[test]
    fn cargo_s_subcommand_name_is_dropped() {
        assert_eq!(
            args(&["cargo-scaffold", "scaffold", "gate"]),
            args(&["cargo-scaffold", "gate"])
        );
        assert_eq!(args(&["cargo-scaffold", "gate"]).len(), 2);
        assert_eq!(args(&["cargo-scaffold"]).len(), 1);
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_takes_harness_args_after_double_dash() {
        let cli = Cli::try_parse_from(args(&[
            "cargo-scaffold",
            "scaffold",
            "run",
            "--filter",
            "gpt-*,claude-*",
            "--resume",
            "--",
            "--exact",
            "x",
        ]))
        .unwrap();
        let Command::Run(run) = cli.command else {
            panic!("not run")
        };
        assert_eq!(run.filter, ["gpt-*", "claude-*"]);
        assert_eq!(run.resume.as_deref(), Some("1"));
        assert_eq!(run.harness_args, ["--exact", "x"]);
        assert_eq!(run.test_target, "evals");
    }
}
