//! The `RECMAN>` prompt: line editing and history (rustyline), statements over several lines
//! until `;`, errors reported without leaving the prompt.

use super::session::{Flow, Session, failed};
use super::statement::run_stmt;
use crate::cli::Global;
use crate::dispatch::Execute;
use anyhow::Result;
use clap::CommandFactory;
use recman_lang::{is_complete, parse_script};
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

/// Where history is kept: RECMAN_HISTORY, else ~/.recman_history.
fn history_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RECMAN_HISTORY") {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".recman_history"))
}

/// `recman` without a command: the prompt on a terminal, the usage otherwise.
pub fn interactive(g: &Global, execute: Execute) -> Result<ExitCode> {
    if !std::io::stdin().is_terminal() {
        let mut cmd = crate::cli::Cli::command();
        eprintln!("{}", cmd.render_usage());
        eprintln!(
            "recman: no command given; hint: recman --help lists the commands; on a terminal `recman` opens the RECMAN> prompt"
        );
        return Ok(ExitCode::from(2));
    }
    let mut rl = DefaultEditor::new()?;
    let history = history_path();
    if let Some(h) = &history {
        // A missing history file is the first session, not an error.
        let _ = rl.load_history(h);
    }
    println!(
        "recman {}: RMAN-style statements end with ';'. HELP lists them, EXIT leaves.",
        env!("CARGO_PKG_VERSION")
    );
    let mut session = Session {
        g: g.clone(),
        execute,
    };
    let mut buf = String::new();
    loop {
        let prompt = if buf.is_empty() { "RECMAN> " } else { "2> " };
        match rl.readline(prompt) {
            Ok(line) => {
                if !buf.is_empty() {
                    buf.push('\n');
                }
                buf.push_str(&line);
                if buf.trim().is_empty() {
                    buf.clear();
                    continue;
                }
                if !is_complete(&buf) {
                    continue;
                }
                // The history file outlives the session: a CONNECT with a password is kept
                // out of it, redacted.
                let _ = rl.add_history_entry(crate::input::redact_secrets(&buf).as_str());
                let text = std::mem::take(&mut buf);
                if run_text(&mut session, &text) == Flow::Exit {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => {
                buf.clear();
                println!("(statement discarded)");
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(h) = &history
        && let Err(e) = rl.save_history(h)
    {
        eprintln!(
            "recman: warning: cannot save history to {}: {e}",
            h.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Parses and runs what was typed; errors are printed and the prompt goes on.
fn run_text(session: &mut Session, text: &str) -> Flow {
    let script = match parse_script(text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("recman: error: {e}");
            return Flow::Continue;
        }
    };
    for (i, stmt) in script.statements.iter().enumerate() {
        match run_stmt(session, stmt) {
            Ok(Flow::Exit) => return Flow::Exit,
            Ok(Flow::Continue) => {}
            Err(e) => {
                eprintln!("recman: error: {}", failed(i + 1, stmt, "the prompt"));
                for cause in e.chain() {
                    eprintln!("  caused by: {cause}");
                }
                return Flow::Continue;
            }
        }
    }
    Flow::Continue
}
