//! BACKUP DATABASE / CONTROLFILE / ARCHIVELOG / BACKUPSET / RECOVERY AREA and SYNTHETIC FULL:
//! the commands that write backups, each run by the engine and reported as it finishes.

use crate::command::{BackupDatabase, Command};
use crate::env::Env;
use crate::error::{ExecError, env};
use crate::options;
use crate::outcome::{Executed, Outcome, Printer};
use recman_engine::{ArchivelogOptions, Context};
use std::time::Duration;

/// Runs `c` when it is one of this family's; any other command comes back as
/// [`Executed::FrontEnd`], for the next family to try.
pub(crate) fn run(c: Command, e: &dyn Env, p: &mut dyn Printer) -> Result<Executed, ExecError> {
    match c {
        Command::BackupDatabase(b) => backup_database(&b, e, p)?,
        Command::BackupControlfile { format } => {
            let ctx = env(e.context())?;
            let format = crate::options::piece_format(format.as_deref())?;
            let r = recman_engine::controlfile::backup_controlfile(
                &ctx.repo,
                &ctx.db.name,
                ctx.db.system_identifier,
                e.pgdata().as_deref(),
                format.as_ref(),
            )?;
            p.outcome(Outcome::ControlfileBackedUp(r));
        }
        Command::BackupArchivelog(a) => {
            let ctx = env(e.context())?;
            let (compression, filesperset) =
                env(e.resolve_archivelog(a.compress.as_deref(), a.filesperset))?;
            let opts = ArchivelogOptions {
                compression,
                tag: a.tag,
                not_backed_up: a.not_backed_up,
                delete_input: a.delete_input,
                filesperset,
                format: crate::options::piece_format(a.format.as_deref())?,
            };
            let r = recman_engine::backup_archivelog(&ctx.repo, &ctx.db, &opts, e.progress())?;
            p.outcome(Outcome::ArchivelogBackedUp(r));
        }
        Command::BackupBackupset { which, device_type } => {
            let ctx = env(e.context())?;
            let device = device_type.to_lowercase();
            let only = (!which.eq_ignore_ascii_case("all")).then_some(which.as_str());
            let report = recman_engine::backup_backupsets(&ctx, only, &device, e.progress())?;
            p.outcome(Outcome::Copied {
                report,
                device,
                with_wal: false,
            });
        }
        Command::BackupRecoveryArea { device_type } => {
            let ctx = env(e.context())?;
            let device = device_type.to_lowercase();
            let report = recman_engine::backup_recovery_area(&ctx, &device, e.progress())?;
            p.outcome(Outcome::Copied {
                report,
                device,
                with_wal: true,
            });
        }
        Command::SyntheticFull {
            from,
            tag,
            compress,
        } => {
            let ctx = env(e.context())?;
            let opts = recman_engine::SyntheticOptions {
                from,
                tag,
                compression: options::compression(&compress)?,
            };
            let b = recman_engine::synthetic_full(&ctx, &opts, e.progress())?;
            p.outcome(Outcome::SyntheticFull(b));
        }
        other => return Ok(Executed::FrontEnd(Box::new(other))),
    }
    Ok(Executed::Done)
}

/// BACKUP DATABASE, with PLUS ARCHIVELOG's steps around it: archive the current WAL and back
/// up the archived WAL not yet in a backup set, then the database, then the WAL generated
/// during it.
fn backup_database(b: &BackupDatabase, e: &dyn Env, p: &mut dyn Printer) -> Result<(), ExecError> {
    // Before the repository is opened: opening it is part of what the backup costs.
    let before = recman_catalog::meter::snapshot();
    let ctx = env(e.context())?;
    let mut made = None;
    let done = backup_steps(b, e, p, &ctx, &mut made);
    // What came after the backup (its copies, PLUS ARCHIVELOG) is part of its cost too.
    if let Some(id) = made
        && let Some(w) = crate::costs::record_backup(&ctx.repo, ctx.db.id, &id, &before)
    {
        e.progress().notice(&w);
    }
    done
}

/// BACKUP DATABASE's steps; `made` gets the backup's id as soon as it exists.
fn backup_steps(
    b: &BackupDatabase,
    e: &dyn Env,
    p: &mut dyn Printer,
    ctx: &Context,
    made: &mut Option<String>,
) -> Result<(), ExecError> {
    let plus = |p: &mut dyn Printer| -> Result<(), ExecError> {
        let (compression, filesperset) = env(e.resolve_archivelog(b.compress.as_deref(), None))?;
        let opts = ArchivelogOptions {
            compression,
            tag: b.tag.clone(),
            not_backed_up: Some(1),
            delete_input: false,
            filesperset,
            format: crate::options::piece_format(b.format.as_deref())?,
        };
        let r = recman_engine::backup_archivelog(&ctx.repo, &ctx.db, &opts, e.progress())?;
        p.outcome(Outcome::ArchivelogBackedUp(r));
        Ok(())
    };
    if b.plus_archivelog {
        let upto = recman_engine::archive_current(
            &ctx.repo,
            &ctx.db,
            ctx.conninfo.as_deref(),
            Duration::from_secs(b.archive_timeout),
        )?;
        p.outcome(Outcome::ArchivedCurrent { upto });
        plus(p)?;
    }
    // Parsed before the backup runs, so a bad time costs nothing.
    let keep_until = options::until_micros(b.keep_until.as_deref())?;
    // COPIES: the BACKUP's own, else `configure backup-copies`.
    let configured = match b.copies {
        Some(_) => None,
        None => ctx
            .repo
            .catalog()
            .config("backup_copies")
            .map_err(recman_engine::EngineError::from)?
            .and_then(|v| v.parse().ok()),
    };
    let duplex = BackupDatabase {
        copies: b.copies.or(configured),
        ..b.clone()
    }
    .duplex_targets()?;
    let mut opts = b.options(&env(e.resolve_backup(&ctx.repo, b))?)?;
    crate::tuning_start::start_from_advice(ctx, b, &mut opts, e.progress())?;
    // Incremental forever: a backup that names no level is a level 1.
    let forever = recman_engine::forever::policy(ctx)?
        .filter(|_| opts.incremental_level.is_none() && !opts.as_copy && !opts.for_recover_of_copy);
    if forever.is_some() {
        e.progress()
            .notice("incremental forever: taking a level 1 (configure incremental-forever)");
        opts.incremental_level = Some(1);
    }
    let report = recman_engine::backup_database(ctx, &opts, e.progress())?;
    *made = Some(report.record.id.clone());
    let level1 = report.record.backup_type == "LEVEL1";
    if b.keep_forever || keep_until.is_some() {
        recman_engine::keep::set_keep(&ctx.repo, &report.record.id, keep_until)?;
    }
    for d in recman_engine::duplex::duplex_backup(ctx, &report.record.id, &duplex, e.progress())? {
        e.progress().notice(&format!(
            "copy {} of backup {}: {} piece(s), {} bytes written to {}",
            d.copy, report.record.id, d.pieces, d.bytes, d.device
        ));
    }
    p.outcome(Outcome::BackedUp {
        report,
        maxcorrupt: opts.maxcorrupt,
    });
    if let Some(pol) = forever
        && level1
        && recman_engine::forever::synthetic_due(ctx, pol)?
    {
        e.progress().notice(&format!(
            "incremental forever: the newest level 0 is {} day(s) old or more: building a synthetic full from the chain",
            pol.synthetic_every_days
        ));
        let sopts = recman_engine::SyntheticOptions {
            from: None,
            tag: None,
            compression: opts.compression,
        };
        let s = recman_engine::synthetic_full(ctx, &sopts, e.progress())?;
        p.outcome(Outcome::SyntheticFull(s));
    }
    if b.plus_archivelog {
        // The database backup waited for its last segment to be archived.
        plus(p)?;
    }
    Ok(())
}
