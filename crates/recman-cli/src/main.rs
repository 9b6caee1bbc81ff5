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
mod restore_cmd;
mod script;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(code) => code,
        Err(e) => {
            // One line per cause, outermost first: the hint stays with the message that has it.
            eprintln!("recman: error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}
