//! The CLI's outcome: an exit status, or an error that is one line with its fix.

use std::fmt;

/// How a command ended when it did not fail to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything passed: 0.
    Success,
    /// A run, gate or comparison failed: 1.
    Failed,
    /// The status of a child process (`run` passes cargo's through).
    Code(u8),
}

impl Exit {
    /// The process exit status.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Failed => 1,
            Exit::Code(c) => c,
        }
    }

    /// `Success` when `ok`, else `Failed`.
    pub fn from_ok(ok: bool) -> Exit {
        if ok { Exit::Success } else { Exit::Failed }
    }
}

/// A command that could not do its work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    message: String,
    code: u8,
}

impl CliError {
    /// Wrong input (a bad flag value, a missing or unreadable file): exit 2.
    pub fn input(message: impl Into<String>) -> CliError {
        CliError {
            message: message.into(),
            code: 2,
        }
    }

    /// Something failed while working (a child process that would not start, a
    /// file that could not be written): exit 1.
    pub fn failed(message: impl Into<String>) -> CliError {
        CliError {
            message: message.into(),
            code: 1,
        }
    }

    /// The process exit status.
    pub fn code(&self) -> u8 {
        self.code
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line: messages from the library may carry newlines.
        let mut first = true;
        for line in self
            .message
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            if !first {
                f.write_str(" ")?;
            }
            f.write_str(line)?;
            first = false;
        }
        Ok(())
    }
}

/// What a command returns.
pub type CmdResult = Result<Exit, CliError>;
