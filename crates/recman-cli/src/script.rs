//! The RMAN-style language: `recman run -f FILE`, `recman run 'TEXT'` and the `RECMAN>` prompt.
//! Statements are parsed by recman-lang and lowered straight into the command model
//! (`recman_command::Command`), the same values the subcommands are converted into; each is
//! checked against the options' documented ranges and run by `commands::execute`.

mod archivelog;
mod block;
mod blockrec;
mod change;
mod channel_agent;
mod configure;
#[cfg(test)]
mod doc_tables;
mod drill;
mod failure;
mod hints;
mod lower;
mod maint;
#[cfg(test)]
mod parity;
mod prompt;
mod refuse;
mod restore;
mod service;

use crate::cli::Global;
use anyhow::{Context, Result, bail};
use recman_lang::{Statement, Stmt, parse_script};
use std::path::PathBuf;
use std::process::ExitCode;

pub use prompt::interactive;

/// What running a statement asks of the caller.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Exit,
}

/// A script session: the global settings as CONNECT statements leave them.
pub(crate) struct Session {
    pub g: Global,
}

/// `recman run`: parses the whole script first (a syntax error runs nothing), then runs it,
/// stopping at the first failed statement as RMAN's batch mode does.
pub fn run(g: &Global, file: Option<PathBuf>, text: Option<String>) -> Result<ExitCode> {
    let (text, origin) = match (&file, &text) {
        (Some(f), None) if f.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                .context("cannot read the script from standard input")?;
            (s, "standard input".to_string())
        }
        (Some(f), None) => (
            std::fs::read_to_string(f).with_context(|| {
                format!(
                    "cannot read script {}; hint: check the path given to -f",
                    f.display()
                )
            })?,
            f.display().to_string(),
        ),
        (None, Some(t)) => (t.clone(), "the command line".to_string()),
        _ => bail!(
            "recman run needs a script; hint: recman run -f script.rcv, or recman run 'BACKUP DATABASE;'"
        ),
    };
    let script = parse_script(&text).map_err(|e| anyhow::anyhow!("in {origin}: {e}"))?;
    let mut session = Session { g: g.clone() };
    for (i, stmt) in script.statements.iter().enumerate() {
        match session
            .run_stmt(stmt)
            .with_context(|| failed(i + 1, stmt, &origin))?
        {
            Flow::Continue => {}
            Flow::Exit => break,
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How a failed statement is named: its number, line and first source line.
pub(crate) fn failed(n: usize, stmt: &Stmt, origin: &str) -> String {
    format!(
        "statement {n} of {origin} (line {}: {}) failed",
        stmt.line, stmt.first_line
    )
}

impl Session {
    /// Runs one top-level statement (a RUN block runs its body).
    pub(crate) fn run_stmt(&mut self, stmt: &Stmt) -> Result<Flow> {
        if self.g.verbose {
            eprintln!(
                "recman: running {}",
                crate::input::redact_secrets(&stmt.statement.to_string())
            );
        }
        match &stmt.statement {
            Statement::Run(body) => {
                let mut b = block::Block::new(body);
                for (i, s) in body.iter().enumerate() {
                    let flow = b.run(self, i, s).with_context(|| {
                        format!(
                            "RUN block at line {}: statement {} (line {}: {}) failed; the rest of the block was not run",
                            stmt.line,
                            i + 1,
                            s.line,
                            s.first_line
                        )
                    })?;
                    if flow == Flow::Exit {
                        return Ok(Flow::Exit);
                    }
                }
                Ok(Flow::Continue)
            }
            other => {
                let mut b = block::Block::top_level();
                b.run_statement(self, other)
            }
        }
    }

    /// Runs one lowered command through the same interpreter as the subcommands, after the
    /// checks the subcommand's options get on the command line.
    pub(crate) fn exec(&self, c: recman_command::Command) -> Result<()> {
        c.check()
            .map_err(|e| anyhow::anyhow!("{}", in_statement_words(&e)))?;
        let path = c.path().join(" ");
        let code = crate::commands::execute(&self.g, c).map_err(hints::in_language)?;
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
