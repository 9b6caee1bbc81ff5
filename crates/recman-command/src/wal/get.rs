//! archive-get (restore_command): the read-ahead spool, one repository's copy of a file, the
//! WAL receiver's spool; and archive-prefetch, the background prefetcher that fills the spool.

use super::{Helper, Mark, Warn, Which, database, record_costs};
use crate::command::ArchivePrefetch;
use crate::error::ExecError;
use recman_catalog::{DbRecord, Repository};
use recman_engine::{ArchiveGetOutcome, Spool, SpoolLock, Take};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// archive-get's read-ahead: the spool a background prefetcher fills with the segments after
/// the one PostgreSQL asks for. Read-ahead is a help, never a reason to fail: its errors are
/// warnings.
pub struct ReadAhead {
    spool: Option<Spool>,
    count: usize,
}

impl ReadAhead {
    /// `count` segments ahead (0: no read-ahead), in `spool` (absolute) or else the default
    /// spool beside `dest`.
    pub fn new(count: usize, spool: Option<PathBuf>, dest: &Path) -> Result<ReadAhead, ExecError> {
        let spool = match (count, spool) {
            (0, _) => None,
            (_, Some(dir)) => Some(Spool::new(dir)),
            (_, None) => Some(Spool::default_for(dest)?),
        };
        Ok(ReadAhead { spool, count })
    }

    /// Delivers `name` to `dest` from the spool when the prefetcher put it there (true), and
    /// makes sure one prefetcher is fetching the segments after it. A history file (the start
    /// or the end of recovery) empties the spool: nothing in it is needed any more.
    pub fn serve(&self, name: &str, dest: &Path, helper: Helper<'_>, warn: Warn<'_>) -> bool {
        let Some(sp) = &self.spool else {
            return false;
        };
        let mut warn_of =
            |e: &dyn std::fmt::Display| warn(&format!("warning: wal read-ahead: {e}"));
        if recman_engine::is_segment_name(name) {
            if let Err(e) = sp.prune_before(name) {
                warn_of(&e);
            }
            let served = match sp.take(name, dest) {
                Ok(Take::Served(_)) => true,
                Ok(Take::Missing) => false,
                Ok(Take::Rejected(why)) => {
                    warn_of(&format!(
                        "{why}; removed it, fetching {name} from the repository"
                    ));
                    false
                }
                Err(e) => {
                    warn_of(&e);
                    false
                }
            };
            if let Err(e) = start_prefetcher(helper, sp, name, self.count) {
                warn_of(&format!("cannot start the prefetcher: {e}"));
            }
            return served;
        }
        if name.ends_with(".history")
            && let Err(e) = sp.clear()
        {
            warn_of(&e);
        }
        false
    }
}

/// Starts `archive-prefetch` in the background for the `count` segments after `segment`,
/// unless one is running or enough of them are in the spool already.
fn start_prefetcher(
    helper: Helper<'_>,
    spool: &Spool,
    segment: &str,
    count: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    if !spool.wants_prefetcher(segment, count)? {
        return Ok(());
    }
    let mut cmd = helper()?;
    cmd.arg("archive-prefetch")
        .arg("--spool")
        .arg(spool.dir())
        .args(["--after", segment, "--count", &count.to_string()])
        .arg("--spawned-at")
        .arg(recman_engine::unix_nanos(SystemTime::now()).to_string());
    spool.start_prefetcher(cmd)?;
    Ok(())
}

/// Delivers `name` from `repo` to `dest`: true when it was there, false when not archived.
pub fn fetch(repo: &Repository, db: &DbRecord, name: &str, dest: &Path) -> Result<bool, ExecError> {
    Ok(match recman_engine::archive_get(repo, db, name, dest)? {
        ArchiveGetOutcome::Restored { .. } => true,
        ArchiveGetOutcome::NotFound { .. } => false,
    })
}

/// [`fetch`], its object-store requests since `mark` added to the archiving's costs.
pub fn get_one(
    repo: &Repository,
    db: &DbRecord,
    name: &str,
    dest: &Path,
    mark: Mark,
    warn: Warn<'_>,
) -> Result<bool, ExecError> {
    let got = fetch(repo, db, name, dest);
    record_costs(repo, db, &mark, warn);
    got
}

/// Not archived yet, but the WAL receiver may hold it: a completed file not stored yet, or the
/// open segment, which ends recovery at the last WAL received. The size delivered, if any.
pub fn from_receiver(
    repo: &Repository,
    db: &DbRecord,
    name: &str,
    dest: &Path,
) -> Result<Option<u64>, ExecError> {
    Ok(recman_engine::receive::serve_from_spool(
        repo, db, name, dest,
    )?)
}

/// archive-prefetch: holds the spool's lock from [`Prefetch::lock`] to the end of
/// [`Prefetch::run`].
pub struct Prefetch {
    lock: SpoolLock,
    after: String,
    count: usize,
    parallel: Option<usize>,
    started: SystemTime,
    mark: Mark,
}

impl Prefetch {
    /// Takes the spool's lock; None when another prefetcher holds it (it is at work).
    pub fn lock(p: ArchivePrefetch) -> Result<Option<Prefetch>, ExecError> {
        let ArchivePrefetch {
            spool,
            after,
            count,
            parallel,
            spawned_at,
        } = p;
        let started = spawned_at
            .map(|n| std::time::UNIX_EPOCH + Duration::from_nanos(n))
            .unwrap_or_else(SystemTime::now);
        let spool = Spool::new(spool);
        // archive-get's probe of the lock may hold it for an instant: try a few times.
        let mut lock = None;
        for _ in 0..5 {
            lock = spool.try_lock()?;
            if lock.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(lock.map(|lock| Prefetch {
            lock,
            after,
            count,
            parallel,
            started,
            mark: Mark::now(),
        }))
    }

    /// Fills the spool from `repo`. A segment it could not fetch is a warning: archive-get
    /// fetches it itself when PostgreSQL asks for it.
    pub fn run(self, repo: &Repository, which: Which<'_>, warn: Warn<'_>) -> Result<(), ExecError> {
        let db = database(repo, which)?;
        let parallel = self
            .parallel
            .unwrap_or_else(recman_engine::default_prefetch_parallel);
        let r = recman_engine::prefetch_into_spool(
            repo,
            &db,
            &self.lock,
            &self.after,
            self.count,
            parallel,
            self.started,
        );
        record_costs(repo, &db, &self.mark, warn);
        for (name, e) in &r?.failed {
            warn(&format!(
                "prefetch of wal segment {name} into {} failed: {e}; archive-get fetches it from the repository when PostgreSQL asks for it",
                self.lock.spool().dir().display()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_helper() -> std::io::Result<std::process::Command> {
        Err(std::io::Error::other("no recman here"))
    }

    #[test]
    fn read_ahead_off_serves_nothing_and_says_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let ra = ReadAhead::new(0, Some(dir.path().join("spool")), dir.path()).unwrap();
        let mut said = Vec::new();
        let name = "000000010000000000000003";
        let served = ra.serve(name, &dir.path().join(name), &no_helper, &mut |l: &str| {
            said.push(l.to_string())
        });
        assert!(!served);
        assert!(said.is_empty(), "{said:?}");
    }

    #[test]
    fn a_prefetcher_that_cannot_start_is_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let ra = ReadAhead::new(4, Some(dir.path().join("spool")), dir.path()).unwrap();
        let mut said = Vec::new();
        let name = "000000010000000000000003";
        let served = ra.serve(name, &dir.path().join(name), &no_helper, &mut |l: &str| {
            said.push(l.to_string())
        });
        assert!(!served);
        assert_eq!(
            said,
            ["warning: wal read-ahead: cannot start the prefetcher: no recman here"]
        );
    }
}
