//! Runs one parsed command against the engine and prints its outcome.

use crate::cli::{Cli, Global};
use crate::progress::Bar;
use anyhow::{Result, anyhow, bail};
use recman_catalog::Repository;
use recman_command::Command;
use recman_engine::{Context, RecoveryTarget};
use std::path::{Path, PathBuf};
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
            let pgdata = g.pgdata.clone();
            let target = recman_pg::resolve_conninfo(g.target.as_deref())?;
            let mut session = recman_pg::Session::connect(&target)?;
            if let Some(p) = &pgdata {
                let facts = recman_pg::read_data_dir_facts(p)?;
                if facts.system_identifier != session.system_identifier {
                    bail!(
                        "data directory {} (system identifier {}) does not belong to the server at {} (system identifier {}); hint: point --pgdata and --target at the same cluster",
                        p.display(),
                        facts.system_identifier,
                        session.target(),
                        session.system_identifier
                    );
                }
            }
            let dir = pgdata
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| session.data_directory.clone());
            let _ = session.simple_query("select 1")?;
            let db = repo.catalog().register_database(
                &name,
                session.system_identifier,
                session.version_num,
                &dir,
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
            // flag > config file > catalog > built-in default
            let d = crate::catalog_cmds::backup_defaults(
                g,
                a.channels,
                a.filesperset,
                a.maxopenfiles,
                a.compress.as_deref(),
            )?;
            let choice = crate::device_cmds::backup_device(
                &ctx.repo,
                a.device_type.as_deref(),
                a.channels,
                d.channels,
                a.io.blksize.as_deref(),
            )?;
            let (device, channels) = (choice.device, choice.channels);
            let mut io = crate::io_args::settings(&a.io)?;
            if let Some(b) = &choice.blksize {
                // RMAN's PARMS 'BLKSIZE=n': each write to the device is one block of n bytes.
                io.blksize = b.parse()?;
            }
            let opts = recman_engine::BackupOptions {
                standby: a.standby.clone(),
                optimization: d.optimization && !a.force,
                device,
                channels,
                filesperset: d.filesperset,
                maxopenfiles: d.maxopenfiles,
                compression: d.compression,
                tag: a.tag.clone(),
                maxcorrupt: a.maxcorrupt,
                archive_timeout: Duration::from_secs(a.archive_timeout),
                io,
                section_size: a
                    .section_size
                    .as_deref()
                    .map(|v| {
                        recman_engine::io::parse_size(v).map_err(|e| anyhow!("--section-size: {e}"))
                    })
                    .transpose()?
                    .or(d.section_size),
                incremental_level: a.incremental_level,
                cumulative: a.cumulative,
                as_copy: a.as_copy,
                for_recover_of_copy: a.for_recover_of_copy,
            };
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
                compression: compress.parse().map_err(|e| anyhow!("--compress: {e}"))?,
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
            let until = match &until_time {
                Some(t) => match RecoveryTarget::parse_time(t)? {
                    RecoveryTarget::Time { micros, .. } => Some(micros),
                    _ => None,
                },
                None => None,
            };
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
            let target = if let Some(t) = &a.until_time {
                RecoveryTarget::parse_time(t)?
            } else if let Some(l) = &a.until_lsn {
                RecoveryTarget::parse_lsn(l)?
            } else if let Some(x) = &a.until_xid {
                RecoveryTarget::parse_xid(x)?
            } else {
                RecoveryTarget::Latest
            };
            let mut map = Vec::new();
            for m in &a.tablespace_map {
                let (old, new) = m.split_once('=').ok_or_else(|| anyhow!("--tablespace-map {m:?} is not OLD=NEW; hint: e.g. --tablespace-map /data/ts1=/restore/ts1"))?;
                map.push((old.to_string(), PathBuf::from(new)));
            }
            let to = absolute(&a.to)?;
            let opts = recman_engine::RestoreOptions {
                to,
                target,
                from_tag: a.from_tag,
                channels: a.channels,
                tablespace_map: map,
                timeline: a.timeline,
                preserve_archive_mode: a.archive_mode == "preserve",
                from_copy: a.from_copy,
                switch_to_copy: a.switch_to_copy,
                recman_exe: std::env::current_exe()?,
                restore_command_args: crate::device_cmds::passed_on_args(g, &ctx.repo)?,
            };
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
                &crate::io_args::settings(&io)?,
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
            let channels = channels.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
            });
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
        Command::ArchivePush(recman_command::ArchivePush {
            path,
            compress,
            batch,
            parallel,
        }) => {
            let repo = open_repo(g)?;
            let pgdata = g.pgdata.clone().or_else(|| std::env::current_dir().ok());
            let db = recman_engine::resolve_database(&repo, g.db.as_deref(), pgdata.as_deref())?;
            let mut opts = recman_engine::PushOptions::new(
                compress.parse().map_err(|e| anyhow!("--compress: {e}"))?,
            );
            opts.batch = batch as usize;
            if let Some(p) = parallel {
                opts.parallel = p as usize;
            }
            let r = recman_engine::archive_push_batch(&repo, &db, &path, &opts)?;
            for (name, e) in &r.failed {
                eprintln!(
                    "recman: warning: could not archive {name} along with {}: {e}; PostgreSQL's own archive-push call for it will try again",
                    path.display()
                );
            }
            if g.verbose {
                for o in std::iter::once(&r.outcome).chain(&r.extra) {
                    match o {
                        recman_engine::ArchivePushOutcome::Archived { name, stored_size } => {
                            println!(
                                "archived wal file {name} into repository {} ({} stored)",
                                repo.location(),
                                crate::list::size(*stored_size)
                            )
                        }
                        recman_engine::ArchivePushOutcome::AlreadyArchived { name } => println!(
                            "wal file {name} is already archived in repository {} with the same content",
                            repo.location()
                        ),
                    }
                }
            }
        }
        Command::ArchiveGet(recman_command::ArchiveGet {
            name,
            dest,
            prefetch,
            spool,
        }) => return archive_get(g, &name, &dest, prefetch as usize, spool),
        Command::ArchivePrefetch(recman_command::ArchivePrefetch {
            spool,
            after,
            count,
            parallel,
            spawned_at,
        }) => {
            let started = spawned_at
                .map(|n| std::time::UNIX_EPOCH + Duration::from_nanos(n))
                .unwrap_or_else(std::time::SystemTime::now);
            let spool = recman_engine::Spool::new(spool);
            // archive-get's probe of the lock may hold it for an instant: try a few times.
            let mut lock = None;
            for _ in 0..5 {
                lock = spool.try_lock()?;
                if lock.is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            let Some(lock) = lock else {
                return Ok(ExitCode::SUCCESS); // another prefetcher is at work
            };
            let repo = open_repo(g)?;
            let db = recman_engine::resolve_database(&repo, g.db.as_deref(), g.pgdata.as_deref())?;
            let parallel = parallel.unwrap_or_else(recman_engine::default_prefetch_parallel);
            let r = recman_engine::prefetch_into_spool(
                &repo, &db, &lock, &after, count, parallel, started,
            )?;
            for (name, e) in &r.failed {
                eprintln!(
                    "recman: prefetch of wal segment {name} into {} failed: {e}; archive-get fetches it from the repository when PostgreSQL asks for it",
                    spool.dir().display()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// archive-get: from the read-ahead spool when the prefetcher put %f there, else from the
/// repository; then makes sure one background prefetcher is fetching the segments after %f.
fn archive_get(
    g: &Global,
    name: &str,
    dest: &Path,
    prefetch: usize,
    spool: Option<PathBuf>,
) -> Result<ExitCode> {
    use recman_engine::{Spool, Take};
    let spool = match (prefetch, spool) {
        (0, _) => None,
        (_, Some(dir)) => Some(Spool::new(absolute(&dir)?)),
        (_, None) => Some(Spool::default_for(dest)?),
    };
    // Read-ahead is a help, never a reason to fail: its errors are warnings.
    let warn = |e: &dyn std::fmt::Display| eprintln!("recman: warning: wal read-ahead: {e}");
    let segment = recman_engine::is_segment_name(name);
    if let Some(sp) = &spool {
        if segment {
            if let Err(e) = sp.prune_before(name) {
                warn(&e);
            }
            match sp.take(name, dest) {
                Ok(Take::Served(_)) => {
                    start_prefetcher(g, sp, name, prefetch);
                    return Ok(ExitCode::SUCCESS);
                }
                Ok(Take::Missing) => {}
                Ok(Take::Rejected(why)) => warn(&format!(
                    "{why}; removed it, fetching {name} from the repository"
                )),
                Err(e) => warn(&e),
            }
            start_prefetcher(g, sp, name, prefetch);
        } else if name.ends_with(".history") {
            // The start or the end of recovery: nothing in the spool is needed any more.
            if let Err(e) = sp.clear() {
                warn(&e);
            }
        }
    }
    let repo = open_repo(g)?;
    let db = recman_engine::resolve_database(&repo, g.db.as_deref(), g.pgdata.as_deref())?;
    match recman_engine::archive_get(&repo, &db, name, dest)? {
        recman_engine::ArchiveGetOutcome::Restored { .. } => Ok(ExitCode::SUCCESS),
        recman_engine::ArchiveGetOutcome::NotFound { name } => {
            eprintln!("recman: {name} is not in repository {}", repo.location());
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Starts `recman archive-prefetch` in the background for the `count` segments after
/// `segment`, unless one is running or enough of them are in the spool already. It gets this
/// call's repository, catalog and database settings.
fn start_prefetcher(g: &Global, spool: &recman_engine::Spool, segment: &str, count: usize) {
    let start = || -> Result<()> {
        if !spool.wants_prefetcher(segment, count)? {
            return Ok(());
        }
        let mut cmd = std::process::Command::new(std::env::current_exe()?);
        let mut flag = |f: &str, v: &std::ffi::OsStr| {
            cmd.arg(f).arg(v);
        };
        if let Some(r) = &g.repo {
            flag("--repo", r.as_os_str());
        }
        if let Some(c) = &g.repo_cache {
            flag("--repo-cache", c.as_os_str());
        }
        if let Some(c) = &g.config {
            flag("--config", c.as_os_str());
        }
        if let Some(p) = &g.pgdata {
            flag("--pgdata", p.as_os_str());
        }
        if let Some(d) = &g.db {
            flag("--db", d.as_ref());
        }
        // A shared catalog's URL may hold a password: the environment, not the command line.
        if let Some(url) = &g.catalog {
            cmd.env("RECMAN_CATALOG", url);
        }
        cmd.arg("--quiet")
            .arg("archive-prefetch")
            .arg("--spool")
            .arg(spool.dir())
            .args(["--after", segment, "--count", &count.to_string()])
            .arg("--spawned-at")
            .arg(recman_engine::unix_nanos(std::time::SystemTime::now()).to_string());
        spool.start_prefetcher(cmd)?;
        Ok(())
    };
    if let Err(e) = start() {
        eprintln!("recman: warning: wal read-ahead: cannot start the prefetcher: {e}");
    }
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

fn absolute(p: &Path) -> Result<PathBuf> {
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()?.join(p)
    })
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
