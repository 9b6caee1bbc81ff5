//! recman: a recovery manager for PostgreSQL.

mod catalog_cmds;
mod cli;
mod commands;
mod config;
mod device_cmds;
mod io_args;
mod list;
mod progress;
mod report_io;
mod report_schema;
mod script;

use clap::Parser;
use std::process::ExitCode;

/// archive-get's exit status for every failure other than "not in the archive". PostgreSQL
/// ends archive recovery when restore_command exits with 1 (the file is taken as not
/// archived) but aborts recovery with a FATAL error when it exits above 125 or is killed by a
/// signal; a damaged or unreachable archive must stop recovery, never shorten it.
const ARCHIVE_GET_FATAL: u8 = 255;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if is_archive_get_call() && e.use_stderr() => {
            // A restore_command with bad arguments must not look like the end of the archive.
            let _ = e.print();
            return ExitCode::from(ARCHIVE_GET_FATAL);
        }
        Err(e) => e.exit(),
    };
    let archive_get = matches!(cli.command, Some(cli::Command::ArchiveGet { .. }));
    if archive_get {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            default_hook(info);
            std::process::exit(ARCHIVE_GET_FATAL.into());
        }));
    }
    match commands::run(cli) {
        Ok(code) => code,
        Err(e) => {
            // One line per cause, outermost first: the hint stays with the message that has it.
            eprintln!("recman: error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            if archive_get {
                ExitCode::from(ARCHIVE_GET_FATAL)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// Whether the command line names the archive-get subcommand (looked at only when it does not
/// parse, so that restore_command's failures stay fatal).
fn is_archive_get_call() -> bool {
    std::env::args_os().skip(1).any(|a| a == "archive-get")
}
