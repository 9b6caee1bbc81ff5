//! archive-get (restore_command) along the repository list, with its read-ahead spool, and
//! the background archive-prefetch that fills the spool.

use super::push::{background, warn, which};
use crate::cli::Global;
use anyhow::Result;
use recman_command::model::{DbRecord, Repository};
use recman_command::wal::{self, Mark};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    let Some(prefetch) = wal::Prefetch::lock(p)? else {
        return Ok(ExitCode::SUCCESS); // another prefetcher is at work
    };
    let repo = crate::open::open_repo(g)?;
    prefetch.run(&repo, which(g), &mut warn)?;
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
    let spool = match spool {
        Some(dir) if prefetch > 0 => Some(recman_command::options::absolute(
            &std::env::current_dir()?,
            &dir,
        )),
        spool => spool,
    };
    let read_ahead = wal::ReadAhead::new(prefetch, spool, dest)?;
    let helper = || background(g);
    if read_ahead.serve(name, dest, &helper, &mut warn) {
        return Ok(ExitCode::SUCCESS);
    }
    let (repo, db) = match get_along_list(g, name, dest)? {
        Got::Restored => return Ok(ExitCode::SUCCESS),
        Got::NotFound(repo, db) => (repo, db),
    };
    // Not archived yet, but the WAL receiver may hold it: a completed file not stored yet, or
    // the open segment, which ends recovery at the last WAL received.
    if let Some(size) = wal::from_receiver(&repo, &db, name, dest)? {
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
    NotFound(Box<Repository>, DbRecord),
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
        let mark = Mark::now();
        let opened = crate::open::open_one(&gi).and_then(|repo| {
            let db = wal::database(&repo, which(g))?;
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
        match wal::get_one(&repo, &db, name, dest, mark, &mut warn) {
            Ok(true) => return Ok(Got::Restored),
            Ok(false) => {}
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
