//! recman: a recovery manager for PostgreSQL.

mod archive_cmds;
mod catalog_cmds;
mod cli;
mod commands;
mod config;
mod convert;
mod device_cmds;
mod dispatch;
mod display;
mod drill_args;
mod drill_cmd;
mod failure_cmd;
mod failure_repair;
mod fleet_args;
mod fleet_client;
mod fleet_page;
mod front;
mod input;
mod io_args;
mod key_cmds;
mod list;
mod metrics;
mod metrics_http;
mod open;
mod progress;
mod progress_json;
mod receive_cmd;
mod repo_host;
mod repo_ledger;
mod repo_list;
mod repo_list_cmds;
mod report_costs;
mod report_io;
mod report_plot;
mod report_schema;
mod restore_agent;
mod restore_cmd;
mod script;
mod server_cmd;
mod shell_docs;
mod table_args;
mod tune_cmds;
mod window_args;

use clap::{CommandFactory, Parser};
use std::process::ExitCode;

/// archive-get's exit status for every failure other than "not in the archive". PostgreSQL
/// ends archive recovery when restore_command exits with 1 (the file is taken as not
/// archived) but aborts recovery with a FATAL error when it exits above 125 or is killed by a
/// signal; a damaged or unreachable archive must stop recovery, never shorten it.
const ARCHIVE_GET_FATAL: u8 = 255;

fn main() -> ExitCode {
    input::unset_empty_env();
    if recman_command::signals::test_build()
        && std::env::var_os("RECMAN_LIST_NUMERIC_OPTIONS").is_some()
    {
        input::list_numeric_options(&cli::Cli::command(), &mut Vec::new());
        return ExitCode::SUCCESS;
    }
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if is_archive_get_call() && e.use_stderr() => {
            // A restore_command with bad arguments must not look like the end of the archive.
            let _ = e.print();
            return ExitCode::from(ARCHIVE_GET_FATAL);
        }
        Err(e) => e.exit(),
    };
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
    let archive_get = matches!(cli.command, Some(cli::Command::ArchiveGet { .. }));
    if archive_get {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            default_hook(info);
            std::process::exit(ARCHIVE_GET_FATAL.into());
        }));
    }
    if matches!(
        cli.command,
        Some(
            cli::Command::Backup { .. }
                | cli::Command::Restore { .. }
                | cli::Command::Validate { .. }
                | cli::Command::Delete { .. }
                | cli::Command::Receive { .. }
        )
    ) {
        install_stop_handlers();
    }
    match commands::run(cli) {
        Ok(code) => code,
        Err(e) => {
            // One line per cause, outermost first: the hint stays with the message that has it.
            // Errors may quote what was typed (a script line, a lowered command): no password
            // leaves through them.
            // The engine's hints say what to do; the command line names its flag for it.
            let text = |c: &(dyn std::error::Error + 'static)| {
                recman_command::spelling::spelled(c, &recman_command::spelling::CliFlags)
                    .unwrap_or_else(|| c.to_string())
            };
            eprintln!(
                "recman: error: {}",
                input::redact_secrets(&text(e.as_ref()))
            );
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {}", input::redact_secrets(&text(cause)));
            }
            if archive_get {
                ExitCode::from(ARCHIVE_GET_FATAL)
            } else if let Some(signal) = stopped_by(&e) {
                // The shell's convention for a command ended by a signal.
                ExitCode::from(128 + signal as u8)
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

/// SIGINT and SIGTERM ask the engine to stop (it cleans up what it began and the command
/// fails with what it kept); a second one ends the process at once. Only for the commands
/// whose work checks the flag and cleans up after it: archive-push and archive-get stay atomic
/// per file and die as before, `recover copy` (which changes an image copy in place) is not
/// stopped half-way by the flag, and scripts and the interactive shell (which may run it)
/// keep the default.
fn install_stop_handlers() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    let stop = recman_command::signals::stop_flag();
    let second = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registered in this order: the exit looks at `second` before the first signal sets it.
        let installed =
            signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, second.clone())
                .and_then(|_| signal_hook::flag::register(sig, second.clone()))
                .and_then(|_| signal_hook::flag::register_usize(sig, stop.clone(), sig as usize));
        if let Err(e) = installed {
            eprintln!(
                "recman: warning: cannot handle signal {sig} ({e}); a signal ends the process without cleaning up"
            );
        }
    }
}

/// The signal that stopped the command, if a stop ended it.
fn stopped_by(e: &anyhow::Error) -> Option<i32> {
    e.chain()
        .find_map(recman_command::signals::stop_signal)
        .map(|signal| match signal {
            "SIGINT" => signal_hook::consts::SIGINT,
            _ => signal_hook::consts::SIGTERM,
        })
}
