//! archive-get (restore_command) along the repository list, with its read-ahead spool, and
//! the background archive-prefetch that fills the spool.

use super::push::{background, record_costs};
use crate::cli::Global;
use anyhow::Result;
use recman_catalog::Repository;
use recman_catalog::meter;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

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
    let repo = crate::open::open_repo(g)?;
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
        let opened = crate::open::open_one(&gi).and_then(|repo| {
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
