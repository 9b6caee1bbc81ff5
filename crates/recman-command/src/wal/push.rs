//! archive-push into one repository (with its batch and background pusher), the file alone
//! (another repository of the list, a debt paid), CATALOG ARCHIVELOG's single file and the
//! background pusher itself.

use super::{Helper, Mark, Warn, Which, database, database_here, record_costs};
use crate::command::{ArchivePush, ArchivePushAhead};
use crate::error::ExecError;
use recman_catalog::Repository;
use recman_engine::{Ahead, ArchivePushOutcome, PushLock, PushOptions, PushSpool};
use std::path::Path;

/// What an archive-push stored.
#[derive(Debug)]
pub struct Pushed {
    /// The database's name.
    pub db: String,
    /// %p's outcome first, then each further segment of the batch.
    pub stored: Vec<ArchivePushOutcome>,
}

/// archive-push of %p into `repo`, with the next segments marked ready; on a backlog, %p alone
/// while a background pusher (`helper`'s `archive-push-ahead`) takes the rest. A further
/// segment that fails is a warning, since PostgreSQL's own call for it will try again.
pub fn push(
    repo: &Repository,
    which: Which<'_>,
    p: &ArchivePush,
    mark: Mark,
    helper: Helper<'_>,
    warn: Warn<'_>,
) -> Result<Pushed, ExecError> {
    let db = database_here(repo, which)?;
    let opts = p.options()?;
    let spool = PushSpool::default_for(&p.path)?;
    let command = |after: &str| {
        let mut cmd = helper()?;
        cmd.arg("archive-push-ahead")
            .arg("--wal-dir")
            .arg(spool.wal_dir())
            .args(["--after", after, "--compress", &p.compress])
            .args(["--parallel", &opts.parallel.to_string()]);
        Ok(cmd)
    };
    let ahead = Ahead {
        spool: &spool,
        command: &command,
    };
    let r = recman_engine::archive_push(repo, &db, &p.path, &opts, Some(&ahead));
    record_costs(repo, &db, &mark, warn);
    let r = r?;
    for (name, e) in &r.failed {
        warn(&format!(
            "warning: could not archive {name} along with {}: {e}; PostgreSQL's own archive-push call for it will try again",
            p.path.display()
        ));
    }
    let mut stored = vec![r.outcome];
    stored.extend(r.extra);
    Ok(Pushed {
        db: db.name,
        stored,
    })
}

/// archive-push of %p alone: no batch, no background pusher (a repository of the list other
/// than the first, or a file it is owed). Returns the database's name.
pub fn push_alone(
    repo: &Repository,
    which: Which<'_>,
    p: &ArchivePush,
    mark: Mark,
    warn: Warn<'_>,
) -> Result<String, ExecError> {
    let db = database_here(repo, which)?;
    one_file(repo, &db, p, mark, warn)?;
    Ok(db.name)
}

/// CATALOG ARCHIVELOG 'FILE': one WAL file put into the repository as archive-push does, with
/// the same checks (the registered cluster's WAL only, never over other content), but alone.
pub fn catalog_archivelog(
    repo: &Repository,
    which: Which<'_>,
    path: &Path,
    mark: Mark,
    warn: Warn<'_>,
) -> Result<ArchivePushOutcome, ExecError> {
    let db = database(repo, which)?;
    let p = ArchivePush {
        path: path.to_path_buf(),
        compress: crate::command::DEFAULT_WAL_COMPRESSION.into(),
        batch: 1,
        parallel: None,
        repo_host: None,
    };
    one_file(repo, &db, &p, mark, warn)
}

/// `p`'s file alone into `repo` for `db` (no batch, no background pusher), its requests added
/// to the archiving costs whatever the push did.
fn one_file(
    repo: &Repository,
    db: &recman_catalog::DbRecord,
    p: &ArchivePush,
    mark: Mark,
    warn: Warn<'_>,
) -> Result<ArchivePushOutcome, ExecError> {
    let r = recman_engine::archive_push(repo, db, &p.path, &p.options()?, None);
    record_costs(repo, db, &mark, warn);
    Ok(r?.outcome)
}

/// archive-push-ahead, the background pusher: holds the pusher's lock from [`PushAhead::lock`]
/// to the end of [`PushAhead::run`].
pub struct PushAhead {
    lock: PushLock,
    opts: PushOptions,
    mark: Mark,
}

impl PushAhead {
    /// Takes the pusher's lock for the backlog after `p.after`; None when another pusher
    /// holds it (it is at work, this one has nothing to do).
    pub fn lock(p: &ArchivePushAhead) -> Result<Option<PushAhead>, ExecError> {
        let opts = p.options()?;
        let spool = PushSpool::default_for(&p.wal_dir.join(&p.after))?;
        let Some(lock) = spool.try_lock(&p.after)? else {
            return Ok(None);
        };
        Ok(Some(PushAhead {
            lock,
            opts,
            mark: Mark::now(),
        }))
    }

    /// Pushes the backlog into `repo`. What it could not push is a warning: PostgreSQL's own
    /// calls push it themselves.
    pub fn run(self, repo: &Repository, which: Which<'_>, warn: Warn<'_>) -> Result<(), ExecError> {
        let db = database_here(repo, which)?;
        let r = recman_engine::push_ahead(repo, &db, &self.lock, &self.opts);
        record_costs(repo, &db, &self.mark, warn);
        for (name, e) in &r?.failed {
            warn(&format!(
                "background push of wal segment {name} failed: {e}; PostgreSQL's own archive-push call for it pushes it"
            ));
        }
        Ok(())
    }
}
