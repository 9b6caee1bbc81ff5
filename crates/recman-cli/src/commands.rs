//! Dispatches one command to the shared executor (`recman_command::execute`), whose outcomes
//! `front.rs` prints; what it hands back is the front end's own: REPORT IO's plot files, RUN,
//! completions, the man page and the WAL commands PostgreSQL calls. This is the top of the
//! binary: it imports every command's module, and the modules that must run a whole command
//! again (a script, REPAIR FAILURE, the repository list) are handed `execute` instead of
//! importing it (`dispatch.rs`).

use crate::cli::{Cli, Global};
use crate::progress::Bar;
use anyhow::{Result, bail};
use recman_command::{Command, Executed};
use std::process::ExitCode;

pub fn run(cli: Cli) -> Result<ExitCode> {
    let g = crate::config::merge(cli.global)?;
    crate::key_cmds::set_sources(&g);
    let Some(command) = cli.command else {
        return crate::script::interactive(&g, execute);
    };
    let command: Command = command.into();
    if let Some(code) = crate::fleet_client::intercept(&g, &command)? {
        return Ok(code);
    }
    execute(&g, command)
}

/// Executes one command value. The subcommands and the RMAN-style language both end here, so
/// a statement in a script behaves and prints exactly as its subcommand does.
pub fn execute(g: &Global, command: Command) -> Result<ExitCode> {
    if !g.also_repo.is_empty()
        && let Some(done) = crate::repo_list_cmds::execute_listed(g, &command, execute)
    {
        return done;
    }
    crate::catalog_cmds::immutable::refuse_writes(g.repo_as_of.as_deref(), &command)?;
    let bar = Bar::with_mode(g.quiet, g.verbose, g.progress);
    let env = crate::front::CliEnv { g, bar: &bar };
    let mut printer = crate::front::CliPrinter { g };
    let command = match recman_command::execute(command, &env, &mut printer)? {
        Executed::Done => return Ok(ExitCode::SUCCESS),
        Executed::FrontEnd(c) => *c,
    };
    match command {
        Command::Report(what) => report(g, what)?,
        Command::Run { file, text } => return crate::script::run(g, file, text, execute),
        Command::Server { listen, allow, .. } => crate::server_cmd::serve(g, &listen, &allow)?,
        Command::Completions { shell } => crate::shell_docs::completions(&shell)?,
        Command::Man => crate::shell_docs::man()?,
        Command::ArchivePush(p) => crate::archive_cmds::push(g, p)?,
        Command::ArchiveGet(a) => return crate::archive_cmds::get(g, a),
        Command::ArchivePrefetch(p) => return crate::archive_cmds::prefetch(g, p),
        Command::ArchivePushAhead(p) => return crate::archive_cmds::push_ahead(g, p),
        Command::Receive(r) => crate::receive_cmd::receive(g, r)?,
        Command::Failure(recman_command::FailureWhat::Repair { preview, script }) => {
            crate::failure_repair::repair(g, preview, script, execute)?
        }
        c @ (Command::RegisterDatabase { .. }
        | Command::CreateRestorePoint { .. }
        | Command::ChangeBackup(_)
        | Command::BackupDatabase(_)
        | Command::BackupArchivelog(_)
        | Command::BackupBackupset { .. }
        | Command::BackupRecoveryArea { .. }
        | Command::SyntheticFull { .. }
        | Command::RestoreDatabase(_)
        | Command::Drill(_)
        | Command::DuplicateDatabase(_)
        | Command::BackupControlfile { .. }
        | Command::RestoreControlfile { .. }
        | Command::ValidateBackup { .. }
        | Command::ValidateDatabase { .. }
        | Command::RecoverCopy { .. }
        | Command::RecoverTable(_)
        | Command::RecoverBlock { .. }
        | Command::Configure(_)
        | Command::Show(_)
        | Command::Delete(_)
        | Command::Crosscheck(_)
        | Command::Catalog(_)
        | Command::CreateCatalog { .. }
        | Command::Key(_)
        | Command::ListBackup { .. }
        | Command::ListArchivelog { .. }
        | Command::ListIncarnation { .. }
        | Command::ListCopy { .. }
        | Command::Calibrate { .. }
        | Command::Advise { .. }
        | Command::ListCalibration { .. }
        | Command::ListDrill { .. }
        | Command::Metrics
        | Command::Check { .. }
        | Command::Failure(_)) => bail!(
            "internal: recman {} is run by the shared executor, not by the CLI",
            c.path().join(" ")
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// REPORT IO, which the CLI finishes itself: it writes the plot and page files first.
fn report(g: &Global, what: recman_command::ReportWhat) -> Result<()> {
    use recman_command::ReportWhat;
    match what {
        ReportWhat::Io {
            which,
            json,
            all,
            plot,
            html,
        } => {
            let ctx = crate::open::context(g)?;
            let files = crate::report_plot::Files {
                plot: plot.as_deref(),
                html: html.as_deref(),
            };
            crate::report_io::report_io(&ctx, which.as_deref(), json, all, files)
        }
        ReportWhat::Rpo { json } => crate::receive_cmd::report_rpo(g, json),
        ReportWhat::Repositories { json } => crate::repo_list_cmds::report(g, json),
        ReportWhat::Fleet { html } => crate::fleet_page::write(g, &html),
        what => bail!("internal: report {what:?} is run by the shared executor, not by the CLI"),
    }
}
