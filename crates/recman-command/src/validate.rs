//! VALIDATE BACKUP and VALIDATE DATABASE: every block read and checked, nothing written; a
//! corrupt block fails the command once the printer has listed it.

use crate::command::{Command, IoOptions};
use crate::env::Env;
use crate::error::{ExecError, env};
use crate::options;
use crate::outcome::{Executed, Outcome, Printer};
use std::path::PathBuf;

/// Runs `c` when it is one of this family's; any other command comes back as
/// [`Executed::FrontEnd`], for the next family to try.
pub(crate) fn run(c: Command, e: &dyn Env, p: &mut dyn Printer) -> Result<Executed, ExecError> {
    match c {
        Command::ValidateBackup { which, channels } => {
            let ctx = env(e.context())?;
            let channels = options::validate_channels(channels);
            let r = recman_engine::validate_backup(&ctx, which.as_deref(), channels, e.progress())?;
            let (count, place) = (r.corrupt.blocks.len(), format!("backup {}", r.backup_id));
            p.outcome(Outcome::ValidatedBackup(r));
            if count > 0 {
                return Err(ExecError::Corrupt {
                    count,
                    place,
                    hint: "take a new backup and keep this one out of restores",
                });
            }
        }
        Command::ValidateDatabase {
            channels,
            maxopenfiles,
            io,
            check_logical,
        } => validate_database(channels, maxopenfiles, &io, check_logical, e, p)?,
        other => return Ok(Executed::FrontEnd(Box::new(other))),
    }
    Ok(Executed::Done)
}

/// VALIDATE DATABASE: the cluster's files, read here or through its agent.
fn validate_database(
    channels: Option<u32>,
    maxopenfiles: u32,
    io: &IoOptions,
    check_logical: bool,
    e: &dyn Env,
    p: &mut dyn Printer,
) -> Result<(), ExecError> {
    // A database registered with an agent is read through it (issue 19).
    let agent = match e.context() {
        Ok(ctx) => recman_engine::source::registered_agent(&ctx)?,
        Err(_) => None,
    };
    let pgdata = match &agent {
        Some(a) => PathBuf::from(a.describe()),
        None => e.pgdata().ok_or(ExecError::NeedsPgdata)?,
    };
    // Without --target, libpq's defaults apply when PGHOST says where the server is;
    // else the files are checked without asking the server.
    let conninfo = e
        .target()
        .or_else(|| std::env::var("PGHOST").ok().map(|_| String::new()));
    let local = recman_engine::source::LocalSource::new(&pgdata);
    let report = recman_engine::validate_source(
        agent.as_deref().unwrap_or(&local),
        conninfo.as_deref(),
        &io.settings(None)?,
        recman_engine::ValidateRead {
            channels: channels.unwrap_or(1),
            maxopenfiles,
        },
        check_logical,
        e.progress(),
    )?;
    crate::blocks::record_validation(e, &pgdata, &report);
    let count = report.corrupt.blocks.len();
    let place = pgdata.display().to_string();
    p.outcome(Outcome::ValidatedDatabase { pgdata, report });
    if count > 0 {
        return Err(ExecError::Corrupt {
            count,
            place,
            hint: "the files listed above need repair (restore, or REINDEX for an index)",
        });
    }
    Ok(())
}
