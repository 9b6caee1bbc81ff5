//! A script session and what every statement's lowering shares with it: the global settings
//! as CONNECT statements leave them, how one lowered command runs, and the notes and failure
//! wording of statements.

use crate::cli::Global;
use crate::dispatch::Execute;
use anyhow::{Result, bail};
use recman_lang::Stmt;
use std::process::ExitCode;

/// What running a statement asks of the caller.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Exit,
}

/// A script session: the global settings as CONNECT statements leave them.
pub(crate) struct Session {
    pub g: Global,
    /// How a lowered command runs: the dispatcher, handed down.
    pub execute: Execute,
}

/// How a failed statement is named: its number, line and first source line.
pub(crate) fn failed(n: usize, stmt: &Stmt, origin: &str) -> String {
    format!(
        "statement {n} of {origin} (line {}: {}) failed",
        stmt.line, stmt.first_line
    )
}

impl Session {
    /// Runs one lowered command through the same interpreter as the subcommands, after the
    /// checks the subcommand's options get on the command line.
    pub(crate) fn exec(&self, c: recman_command::Command) -> Result<()> {
        c.check()
            .map_err(|e| anyhow::anyhow!("{}", in_statement_words(&e)))?;
        let path = c.path().join(" ");
        let code = (self.execute)(&self.g, c).map_err(super::hints::in_language)?;
        if code != ExitCode::SUCCESS {
            bail!("recman {path} did not succeed");
        }
        Ok(())
    }
}

/// A note about how a statement was understood, on stderr so stdout stays the subcommands'.
pub(crate) fn note(g: &Global, s: &str) {
    if !g.quiet {
        eprintln!("recman: note: {}", crate::input::redact_secrets(s));
    }
}

/// A refused option value in the statement's words (`FILESPERSET 0`), not the subcommand's
/// (`--filesperset`): the caller names the statement and its line.
fn in_statement_words(e: &recman_command::CheckError) -> String {
    use recman_command::CheckError;
    match e {
        CheckError::Value { option, value, why } => {
            let clause = match *option {
                "filesperset" => "FILESPERSET",
                "maxopenfiles" => "MAXOPENFILES",
                "channels" => "the number of allocated channels",
                "section-size" => "SECTION SIZE",
                "maxcorrupt" => "SET MAXCORRUPT",
                "rate" => "RATE",
                "tag" | "from-tag" => "TAG",
                "redundancy" => "REDUNDANCY",
                "recovery-window" | "days" => "the number of days",
                "backed-up" => "BACKED UP n TIMES",
                "not-backed-up" => "NOT BACKED UP n TIMES",
                "format" => "FORMAT",
                "incremental-level" => "INCREMENTAL LEVEL",
                "which" => "the backup named",
                other => other,
            };
            format!(
                "{clause} {value:?} is refused: {why}; hint: docs/language.md and docs/commands.md give each clause's range"
            )
        }
        other => other.to_string(),
    }
}
