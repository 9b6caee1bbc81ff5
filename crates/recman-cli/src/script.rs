//! The RMAN-style language: `recman run -f FILE`, `recman run 'TEXT'` and the `RECMAN>` prompt.
//! Statements are parsed by recman-lang and lowered straight into the command model
//! (`recman_command::Command`), the same values the subcommands are converted into; each is
//! checked against the options' documented ranges and run by the dispatcher, which hands itself down (`crate::dispatch`).

mod archivelog;
mod block;
mod blockrec;
mod change;
mod channel_agent;
mod channels;
mod configure;
mod device;
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
mod session;
mod statement;

use crate::cli::Global;
use crate::dispatch::Execute;
use anyhow::{Context, Result, bail};
use recman_lang::parse_script;
use session::{Flow, Session, failed};
use std::path::PathBuf;
use std::process::ExitCode;

pub use prompt::interactive;

/// `recman run`: parses the whole script first (a syntax error runs nothing), then runs it,
/// stopping at the first failed statement as RMAN's batch mode does.
pub fn run(
    g: &Global,
    file: Option<PathBuf>,
    text: Option<String>,
    execute: Execute,
) -> Result<ExitCode> {
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
    let mut session = Session {
        g: g.clone(),
        execute,
    };
    for (i, stmt) in script.statements.iter().enumerate() {
        match statement::run_stmt(&mut session, stmt)
            .with_context(|| failed(i + 1, stmt, &origin))?
        {
            Flow::Continue => {}
            Flow::Exit => break,
        }
    }
    Ok(ExitCode::SUCCESS)
}
