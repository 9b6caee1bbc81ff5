//! recman: a recovery manager for PostgreSQL.

mod catalog_cmds;
mod cli;
mod commands;
mod config;
mod device_cmds;
mod input;
mod io_args;
mod list;
mod progress;
mod report_io;
mod report_schema;
mod script;

use clap::{CommandFactory, Parser};
use std::process::ExitCode;

fn main() -> ExitCode {
    input::unset_empty_env();
    if std::env::var_os("RECMAN_LIST_NUMERIC_OPTIONS").is_some() {
        input::list_numeric_options(&cli::Cli::command(), &mut Vec::new());
        return ExitCode::SUCCESS;
    }
    let cli = cli::Cli::parse();
    if let Some(t) = &cli.global.target {
        input::warn_password("--target", t);
    }
    if let Some(c) = &cli.global.catalog
        && std::env::args().any(|a| a == "--catalog" || a.starts_with("--catalog="))
    {
        input::warn_password("--catalog", c);
    }
    if let Some(cli::Command::Backup {
        what: cli::BackupWhat::Database(a),
    }) = &cli.command
        && let Some(s) = &a.standby
    {
        input::warn_password("--standby", s);
    }
    match commands::run(cli) {
        Ok(code) => code,
        Err(e) => {
            // One line per cause, outermost first: the hint stays with the message that has it.
            // Errors may quote what was typed (a script line, a lowered command): no password
            // leaves through them.
            eprintln!("recman: error: {}", input::redact_secrets(&e.to_string()));
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {}", input::redact_secrets(&cause.to_string()));
            }
            ExitCode::FAILURE
        }
    }
}
