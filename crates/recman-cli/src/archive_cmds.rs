//! The WAL commands PostgreSQL calls: archive-push (archive_command), archive-get
//! (restore_command) with its read-ahead, and the background archive-prefetch.

use crate::cli::Global;
use crate::commands::open_repo;
use anyhow::Result;
use recman_catalog::Repository;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use recman_catalog::meter;

/// Adds this process's object-store requests since `before` to today's archiving costs of
/// `db`. WAL is archived or served whatever the bookkeeping does, so a failure is a warning.
pub(crate) fn record_costs(
    repo: &recman_catalog::Repository,
    db: &recman_catalog::DbRecord,
    before: &meter::Usage,
) {
    if let Some(w) = recman_command::costs::record_archiving(repo, db.id, before) {
        eprintln!("recman: warning: {w}");
    }
}

/// archive-push: %p and the next segments marked ready (or, on a backlog, %p while a background
/// pusher takes the rest); the rest are warnings, since PostgreSQL's own call for each will try
/// again.
pub fn push(g: &Global, p: recman_command::ArchivePush) -> Result<()> {
    if g.also_repo.is_empty() {
        return push_into(g, p).map(|_| ());
    }
    crate::repo_list::push_everywhere(g, p)
}

/// archive-push into the one repository `g` names; returns the database's name.
pub fn push_into(g: &Global, p: recman_command::ArchivePush) -> Result<String> {
    let before = meter::snapshot();
    let repo = crate::device_cmds::open_one(g)?;
    let pgdata = g.pgdata.clone().or_else(|| std::env::current_dir().ok());
    let db = recman_engine::resolve_database(&repo, g.db.as_deref(), pgdata.as_deref())?;
    let opts = p.options()?;
    let spool = recman_engine::PushSpool::default_for(&p.path)?;
    let command = |after: &str| {
        let mut cmd = background(g)?;
        cmd.arg("archive-push-ahead")
            .arg("--wal-dir")
            .arg(spool.wal_dir())
            .args(["--after", after, "--compress", &p.compress])
            .args(["--parallel", &opts.parallel.to_string()]);
        Ok(cmd)
    };
    let ahead = recman_engine::Ahead {
        spool: &spool,
        command: &command,
    };
    let r = recman_engine::archive_push(&repo, &db, &p.path, &opts, Some(&ahead));
    record_costs(&repo, &db, &before);
    let r = r?;
    for (name, e) in &r.failed {
        eprintln!(
            "recman: warning: could not archive {name} along with {}: {e}; PostgreSQL's own archive-push call for it will try again",
            p.path.display()
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
    Ok(db.name)
}

/// CATALOG ARCHIVELOG 'FILE': one WAL file put into the repository as archive-push does, with
/// the same checks (the registered cluster's WAL only, never over other content), but alone:
/// no batch and no background pusher. ADVISE FAILURE writes it to re-archive a gap's
/// segments from pg_wal.
pub fn catalog_archivelog(g: &Global, path: &std::path::Path) -> Result<()> {
    let before = meter::snapshot();
    let repo = open_repo(g)?;
    let db = recman_engine::resolve_database(&repo, g.db.as_deref(), g.pgdata.as_deref())?;
    let p = recman_command::ArchivePush {
        path: path.to_path_buf(),
        compress: recman_command::DEFAULT_WAL_COMPRESSION.into(),
        batch: 1,
        parallel: None,
        repo_host: None,
    };
    let r = recman_engine::archive_push(&repo, &db, path, &p.options()?, None);
    record_costs(&repo, &db, &before);
    let r = r?;
    let said = match r.outcome {
        recman_engine::ArchivePushOutcome::Archived { name, stored_size } => format!(
            "cataloged archived log {name} into repository {} ({} stored)",
            repo.location(),
            crate::list::size(stored_size)
        ),
        recman_engine::ArchivePushOutcome::AlreadyArchived { name } => format!(
            "archived log {name} is already in repository {} with the same content",
            repo.location()
        ),
    };
    if !g.quiet {
        println!("{said}");
    }
    Ok(())
}

pub fn get(g: &Global, a: recman_command::ArchiveGet) -> Result<ExitCode> {
    let got = archive_get(g, &a.name, &a.dest, a.prefetch as usize, a.spool);
    match got {
        Err(e) if a.with_recovery_target => {
            let name = &a.name;
            let e = crate::input::redact_secrets(&format!("{e:#}"));
            eprintln!(
                "recman: {name} cannot be delivered: {e}; answered as not archived, so recovery ends here; PostgreSQL stops with an error if it needed {name} before its recovery target"
            );
            Ok(ExitCode::FAILURE)
        }
        r => r,
    }
}

/// archive-prefetch: fills the spool unless another prefetcher holds its lock.
pub fn prefetch(g: &Global, p: recman_command::ArchivePrefetch) -> Result<ExitCode> {
    let recman_command::ArchivePrefetch {
        spool,
        after,
        count,
        parallel,
        spawned_at,
    } = p;
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
    let before = meter::snapshot();
    let repo = open_repo(g)?;
    let db = recman_engine::resolve_database(&repo, g.db.as_deref(), g.pgdata.as_deref())?;
    let parallel = parallel.unwrap_or_else(recman_engine::default_prefetch_parallel);
    let r = recman_engine::prefetch_into_spool(&repo, &db, &lock, &after, count, parallel, started);
    record_costs(&repo, &db, &before);
    let r = r?;
    for (name, e) in &r.failed {
        eprintln!(
            "recman: prefetch of wal segment {name} into {} failed: {e}; archive-get fetches it from the repository when PostgreSQL asks for it",
            spool.dir().display()
        );
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
        (_, Some(dir)) => Some(Spool::new(recman_command::options::absolute(
            &std::env::current_dir()?,
            &dir,
        ))),
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
    let (repo, db) = match get_along_list(g, name, dest)? {
        Got::Restored => return Ok(ExitCode::SUCCESS),
        Got::NotFound(repo, db) => (repo, db),
    };
    // Not archived yet, but the WAL receiver may hold it: a completed file not stored yet, or
    // the open segment, which ends recovery at the last WAL received.
    if let Some(size) = recman_engine::receive::serve_from_spool(&repo, &db, name, dest)? {
        if g.verbose {
            println!(
                "restored {name} ({size} bytes) from the wal receiver's spool in repository {}",
                repo.location()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!("recman: {name} is not in repository {}", repo.location());
    Ok(ExitCode::FAILURE)
}

enum Got {
    Restored,
    /// No repository holds the file: the first one that opened, for the receiver's spool.
    NotFound(Box<Repository>, recman_catalog::DbRecord),
}

/// archive-get along the repository list (just `--repo` without `--also-repo`): the first
/// that holds `name` delivers it. A repository that cannot be opened or read is skipped with
/// a warning, but when none delivered the file that is an error, not "not archived": recovery
/// must not end early because a repository was unreachable.
fn get_along_list(g: &Global, name: &str, dest: &Path) -> Result<Got> {
    let several = !g.also_repo.is_empty();
    let mut first = None;
    let mut failed: Vec<String> = Vec::new();
    for gi in crate::repo_list::each(g) {
        let before = meter::snapshot();
        let opened = crate::device_cmds::open_one(&gi).and_then(|repo| {
            let db = recman_engine::resolve_database(&repo, g.db.as_deref(), g.pgdata.as_deref())?;
            Ok((repo, db))
        });
        let (repo, db) = match opened {
            Ok(x) => x,
            Err(e) if several => {
                let why = format!("repository {}: {e:#}", crate::repo_list::spec(&gi));
                eprintln!("recman: warning: {why}; trying the next repository for {name}");
                failed.push(why);
                continue;
            }
            Err(e) => return Err(e),
        };
        let got = recman_engine::archive_get(&repo, &db, name, dest);
        record_costs(&repo, &db, &before);
        match got {
            Ok(recman_engine::ArchiveGetOutcome::Restored { .. }) => return Ok(Got::Restored),
            Ok(recman_engine::ArchiveGetOutcome::NotFound { .. }) => {}
            Err(e) if several => {
                let why = format!("repository {}: {e}", repo.location());
                eprintln!("recman: warning: {why}; trying the next repository for {name}");
                failed.push(why);
            }
            Err(e) => return Err(e.into()),
        }
        if first.is_none() {
            first = Some((repo, db));
        }
    }
    match (first, failed.is_empty()) {
        (Some((repo, db)), true) => Ok(Got::NotFound(Box::new(repo), db)),
        _ => anyhow::bail!(
            "{name} is in no repository that answered, and {} did not answer: {}; hint: make them reachable and let recovery ask again",
            failed.len(),
            failed.join("; ")
        ),
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
        let mut cmd = background(g)?;
        cmd.arg("archive-prefetch")
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

/// A `recman` command for a background helper (prefetcher, pusher): this call's repository,
/// catalog and database settings, quiet.
fn background(g: &Global) -> std::io::Result<std::process::Command> {
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
    for r in &g.also_repo {
        flag("--also-repo", r.as_os_str());
    }
    if let Some(t) = &g.repo_as_of {
        flag("--repo-as-of", t.as_ref());
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
    cmd.arg("--quiet");
    Ok(cmd)
}

/// archive-push-ahead: pushes the backlog after `--after` unless another pusher holds the lock.
/// What it could not push is left to PostgreSQL's own calls, which push it themselves.
pub fn push_ahead(g: &Global, p: recman_command::ArchivePushAhead) -> Result<ExitCode> {
    let opts = p.options()?;
    let spool = recman_engine::PushSpool::default_for(&p.wal_dir.join(&p.after))?;
    let Some(lock) = spool.try_lock(&p.after)? else {
        return Ok(ExitCode::SUCCESS); // another pusher is at work
    };
    let before = meter::snapshot();
    let repo = open_repo(g)?;
    let pgdata = g.pgdata.clone().or_else(|| std::env::current_dir().ok());
    let db = recman_engine::resolve_database(&repo, g.db.as_deref(), pgdata.as_deref())?;
    let r = recman_engine::push_ahead(&repo, &db, &lock, &opts);
    record_costs(&repo, &db, &before);
    let r = r?;
    for (name, e) in &r.failed {
        eprintln!(
            "recman: background push of wal segment {name} failed: {e}; PostgreSQL's own archive-push call for it pushes it"
        );
    }
    Ok(ExitCode::SUCCESS)
}
