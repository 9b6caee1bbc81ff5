//! Runs one parsed command against the engine and prints its outcome.

use crate::cli::{Cli, Global};
use crate::progress::Bar;
use anyhow::{Result, anyhow, bail};
use recman_catalog::Repository;
use recman_command::Command;
use recman_engine::Context;
use std::process::ExitCode;
use std::time::Duration;

pub fn run(cli: Cli) -> Result<ExitCode> {
    let g = crate::config::merge(cli.global)?;
    let Some(command) = cli.command else {
        return crate::script::interactive(&g);
    };
    execute(&g, command.into())
}

/// Executes one command value. The subcommands and the RMAN-style language both end here, so
/// a statement in a script behaves and prints exactly as its subcommand does.
pub fn execute(g: &Global, command: Command) -> Result<ExitCode> {
    let bar = Bar::new(g.quiet, g.verbose);
    let say = |s: &str| {
        if !g.quiet {
            println!("{s}");
        }
    };
    match command {
        Command::CreateCatalog => {
            let r = crate::device_cmds::create_repo(g)?;
            say(&format!(
                "created repository and catalog at {}",
                r.location()
            ));
        }
        Command::RegisterDatabase { name } => {
            let repo = open_repo(g)?;
            let db = recman_engine::register_database(
                &repo,
                &name,
                g.pgdata.as_deref(),
                g.target.as_deref(),
            )?;
            say(&format!(
                "registered database {} (system identifier {}, PostgreSQL {}, data directory {}) in repository {}",
                db.name,
                db.system_identifier,
                db.pg_version,
                db.pgdata,
                repo.location()
            ));
        }
        Command::BackupDatabase(a) => {
            let ctx = context(g)?;
            let plus = a
                .plus_archivelog
                .then(|| (a.compress.clone(), a.tag.clone()));
            if let Some((c, t)) = &plus {
                let wait = Duration::from_secs(a.archive_timeout);
                crate::catalog_cmds::plus_archivelog_before(
                    g,
                    &ctx,
                    c.as_deref(),
                    t.clone(),
                    wait,
                    &bar,
                )?;
            }
            let opts = a.options(&crate::catalog_cmds::resolve_backup(g, &ctx.repo, &a)?)?;
            let r = recman_engine::backup_database(&ctx, &opts, &bar)?;
            for c in &r.corrupt {
                eprintln!(
                    "recman: warning: corrupt block accepted (--maxcorrupt {}): file {} block {}{}: {}",
                    opts.maxcorrupt,
                    c.path,
                    c.block,
                    c.relation
                        .as_ref()
                        .map(|r| format!(" (relation {r})"))
                        .unwrap_or_default(),
                    c.detail
                );
            }
            let b = &r.record;
            say(&format!(
                "backup {} tag {} completed: {} files, {} sets, {} read, {} written, {:.1}s, total {:.1} MB/s, sustained {:.1} MB/s, status {}",
                b.id,
                b.tag,
                b.file_count,
                r.sets,
                crate::list::size(b.db_bytes),
                crate::list::size(b.written_bytes),
                r.elapsed.as_secs_f64(),
                r.total_rate / 1e6,
                r.sustained_rate / 1e6,
                b.status.as_str()
            ));
            if let Some((c, t)) = plus {
                crate::catalog_cmds::plus_archivelog_after(g, &ctx, c.as_deref(), t, &bar)?;
            }
        }
        Command::SyntheticFull {
            from,
            tag,
            compress,
        } => {
            let ctx = context(g)?;
            let opts = recman_engine::SyntheticOptions {
                from,
                tag,
                compression: recman_command::options::compression(&compress)?,
            };
            let b = recman_engine::synthetic_full(&ctx, &opts, &bar)?;
            say(&format!(
                "synthetic full backup {} tag {} completed: {} written, stands for {} (lsn {})",
                b.id,
                b.tag,
                crate::list::size(b.written_bytes),
                b.stop_time
                    .and_then(chrono::DateTime::from_timestamp_micros)
                    .map(|t| t.to_rfc3339())
                    .unwrap_or_default(),
                recman_pg::Lsn(b.stop_lsn.unwrap_or(0))
            ));
        }
        Command::BackupArchivelog(a) => crate::catalog_cmds::backup_archivelog(g, a, &bar)?,
        Command::BackupBackupset { which, device_type } => {
            crate::device_cmds::second_tier(g, Some(&which), &device_type, &bar)?
        }
        Command::BackupRecoveryArea { device_type } => {
            crate::device_cmds::second_tier(g, None, &device_type, &bar)?
        }
        Command::RecoverCopy { tag, until_time } => {
            let ctx = context(g)?;
            let until = recman_command::options::until_micros(until_time.as_deref())?;
            let applied = recman_engine::copy::recover_copy(&ctx, &tag, until, &bar)?;
            if applied.is_empty() {
                say(&format!(
                    "image copy {} is up to date: no level 1 to apply",
                    tag.to_uppercase()
                ));
            } else {
                say(&format!(
                    "image copy {} rolled forward with {} level 1 backup(s): {}",
                    tag.to_uppercase(),
                    applied.len(),
                    applied.join(", ")
                ));
            }
        }
        Command::RestoreDatabase(a) => {
            let ctx = context(g)?;
            let opts = a.options(
                &std::env::current_dir()?,
                std::env::current_exe()?,
                crate::device_cmds::passed_on_args(g, &ctx.repo)?,
            )?;
            let r = recman_engine::restore_database(&ctx, &opts, &bar)?;
            say(&format!(
                "restored backup {} (tag {}) to {}: {} files, {} in {:.1}s",
                r.backup_id,
                r.tag,
                r.to.display(),
                r.files,
                crate::list::size(r.bytes),
                r.elapsed.as_secs_f64()
            ));
            say(&format!(
                "recovery target: {}; settings written to postgresql.auto.conf:",
                opts.target
            ));
            for s in &r.recovery_settings {
                say(&format!("  {s}"));
            }
            say("start PostgreSQL on it to recover and open it (pg_ctl -D DIR start)");
        }
        Command::ValidateDatabase { maxopenfiles, io } => {
            let pgdata = g.pgdata.clone().ok_or_else(|| {
                anyhow!("validate database needs --pgdata DIR (or RECMAN_PGDATA)")
            })?;
            let conninfo = g
                .target
                .clone()
                .or_else(|| std::env::var("PGHOST").ok().map(|_| String::new()));
            let r = recman_engine::validate_database(
                &pgdata,
                conninfo.as_deref(),
                &io.settings(None)?,
                maxopenfiles,
                &bar,
            )?;
            if let Some(a) = &r.io {
                say(&format!(
                    "read {} in {:.2}s ({:.1} MB/s, i/o mode {}, {} reads: {} ready, {} short waits, {} long waits)",
                    crate::list::size(a.bytes),
                    (a.close_time - a.open_time) as f64 / 1e6,
                    a.effective_bytes_per_second().unwrap_or(0) as f64 / 1e6,
                    a.io_mode,
                    a.io_count,
                    a.ready,
                    a.short_waits,
                    a.long_waits
                ));
            }
            say(&format!(
                "validated {}: {} files ({} relation files, {} pages, {}), data checksums {}",
                pgdata.display(),
                r.files,
                r.relation_files,
                r.pages,
                crate::list::size(r.bytes),
                if r.checksums_enabled { "on" } else { "off" }
            ));
            report_corrupt(
                &r.corrupt,
                &format!(
                    "{}; hint: the files listed above need repair (restore, or REINDEX for an index)",
                    pgdata.display()
                ),
            )?;
            say("no corrupt blocks found");
        }
        Command::ValidateBackup { which, channels } => {
            let ctx = context(g)?;
            let channels = recman_command::options::validate_channels(channels);
            let r = recman_engine::validate_backup(&ctx, which.as_deref(), channels, &bar)?;
            say(&format!(
                "validated backup {} (tag {}): {} pieces, {} files, {} pages, {}, {} wal segments",
                r.backup_id,
                r.tag,
                r.pieces,
                r.files,
                r.pages,
                crate::list::size(r.bytes),
                r.wal_segments
            ));
            report_corrupt(
                &r.corrupt,
                &format!(
                    "backup {}; hint: take a new backup and keep this one out of restores",
                    r.backup_id
                ),
            )?;
            say("backup is intact");
        }
        Command::ListBackup {
            json,
            summary,
            by_file,
        } => {
            let ctx = context(g)?;
            crate::list::list_backup_as(&ctx, json, summary, by_file)?;
        }
        Command::ListArchivelog { json } => crate::list::list_archivelog(&context(g)?, json)?,
        Command::ListIncarnation { json } => crate::list::list_incarnation(&context(g)?, json)?,
        Command::ListCopy { json } => crate::list::list_copy(&context(g)?, json)?,
        Command::Configure(what) => crate::catalog_cmds::configure(g, what)?,
        Command::Show(what) => crate::catalog_cmds::show(g, what)?,
        Command::Report(what) => crate::catalog_cmds::report(g, what)?,
        Command::Delete(what) => crate::catalog_cmds::delete(g, what)?,
        Command::Crosscheck(what) => crate::catalog_cmds::crosscheck(g, what)?,
        Command::Catalog(what) => crate::catalog_cmds::catalog(g, what)?,
        Command::Run { file, text } => return crate::script::run(g, file, text),
        Command::ArchivePush(p) => crate::archive_cmds::push(g, p)?,
        Command::ArchiveGet(a) => return crate::archive_cmds::get(g, a),
        Command::ArchivePrefetch(p) => return crate::archive_cmds::prefetch(g, p),
    }
    Ok(ExitCode::SUCCESS)
}

/// Lists each corrupt block on stderr, then fails naming where they were found.
fn report_corrupt(c: &recman_engine::CorruptReport, where_: &str) -> Result<()> {
    if c.blocks.is_empty() {
        return Ok(());
    }
    for l in c.lines() {
        eprintln!("recman: corrupt block: {l}");
    }
    bail!("{} corrupt block(s) found in {where_}", c.blocks.len())
}

pub(crate) fn open_repo(g: &Global) -> Result<Repository> {
    crate::device_cmds::open_repo(g)
}

pub(crate) fn context(g: &Global) -> Result<Context> {
    let repo = open_repo(g)?;
    let db = recman_engine::resolve_database(&repo, g.db.as_deref(), g.pgdata.as_deref())?;
    Ok(Context {
        repo,
        db,
        pgdata: g.pgdata.clone(),
        conninfo: g.target.clone(),
    })
}
