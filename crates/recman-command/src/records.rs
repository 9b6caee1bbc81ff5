//! CHANGE BACKUP, CREATE RESTORE POINT and REGISTER DATABASE: the commands that change what
//! the catalog records (a backup's keep and availability, a named position, a database)
//! without moving data.

use crate::command::{ChangeBackup, Command};
use crate::env::Env;
use crate::error::{ExecError, env};
use crate::options;
use crate::outcome::{Executed, Outcome, Printer};
use recman_engine::EngineError;

/// Runs `c` when it is one of this family's; any other command comes back as
/// [`Executed::FrontEnd`], for the next family to try.
pub(crate) fn run(c: Command, e: &dyn Env, p: &mut dyn Printer) -> Result<Executed, ExecError> {
    match c {
        Command::ChangeBackup(c) => change_backup(&c, e, p)?,
        Command::CreateRestorePoint { name } => {
            let ctx = env(e.context())?;
            let lsn = recman_engine::restore_point::create_restore_point(&ctx, &name)?;
            p.outcome(Outcome::RestorePointCreated {
                name,
                lsn: lsn.to_string(),
            });
        }
        Command::RegisterDatabase { name, agent } => {
            let repo = env(e.repository())?;
            let db = match agent {
                Some(url) => recman_engine::register_database_agent(
                    &repo,
                    &name,
                    e.target().as_deref(),
                    &url,
                    e.tls().as_ref(),
                )?,
                None => recman_engine::register_database(
                    &repo,
                    &name,
                    e.pgdata().as_deref(),
                    e.target().as_deref(),
                )?,
            };
            p.outcome(Outcome::Registered {
                db,
                repository: repo.location().to_string(),
            });
        }
        other => return Ok(Executed::FrontEnd(Box::new(other))),
    }
    Ok(Executed::Done)
}

/// CHANGE BACKUP: the keep and availability of every backup whose id or tag is `c.which`.
fn change_backup(c: &ChangeBackup, e: &dyn Env, p: &mut dyn Printer) -> Result<(), ExecError> {
    if !(c.keep_forever || c.keep_until.is_some() || c.nokeep || c.unavailable || c.available) {
        return Err(EngineError::Invalid(format!(
            "change backup {}: nothing to change; hint: add --keep-forever, --keep-until TIME, --nokeep, --unavailable or --available",
            c.which
        ))
        .into());
    }
    // Parsed before anything is looked up, so a bad time changes no backup.
    let keep_until = options::until_micros(c.keep_until.as_deref())?;
    let ctx = env(e.context())?;
    let ids: Vec<String> = ctx
        .repo
        .catalog()
        .backups(ctx.db.id)
        .map_err(EngineError::from)?
        .into_iter()
        .filter(|b| b.id == c.which || b.tag.eq_ignore_ascii_case(&c.which))
        .map(|b| b.id)
        .collect();
    if ids.is_empty() {
        return Err(EngineError::NotFound(format!(
            "no backup has id or tag {}; hint: `recman list backup` shows them",
            c.which
        ))
        .into());
    }
    for id in &ids {
        use recman_engine::keep;
        if c.keep_forever {
            keep::set_keep(&ctx.repo, id, None)?;
        }
        if keep_until.is_some() {
            keep::set_keep(&ctx.repo, id, keep_until)?;
        }
        if c.nokeep {
            keep::clear_keep(&ctx.repo, id)?;
        }
        if c.unavailable || c.available {
            keep::set_unavailable(&ctx.repo, id, c.unavailable)?;
        }
    }
    p.outcome(Outcome::BackupChanged { ids });
    Ok(())
}
