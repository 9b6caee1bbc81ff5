//! archive-push's calls (%p alone, or with a batch of ready segments): above both the batch
//! push (batch.rs) and the background pusher (ahead.rs), which each call may leave the backlog to,
//! so that the pusher and the batch share the push of ready segments without importing each other.

use crate::archive::ahead::{Ahead, forget_failure, leave_to_pusher};
use crate::archive::batch::{PushOptions, Summaries, push_segments, ready_segments};
use crate::archive::seen;
use crate::archive::{ArchivePushOutcome, check_archived, wal_file_name};
use crate::error::EngineError;
use recman_catalog::{DbRecord, Repository};
use std::collections::HashSet;
use std::path::Path;

#[derive(Debug)]
pub struct PushBatchReport {
    /// What happened to %p.
    pub outcome: ArchivePushOutcome,
    /// The further ready segments this call archived.
    pub extra: Vec<ArchivePushOutcome>,
    /// Further segments (or the ready list itself) this call could not archive; each is left
    /// for PostgreSQL's own call for it.
    pub failed: Vec<(String, EngineError)>,
}

/// Archives WAL file `path` (%p), and with `opts.batch` > 1 also the oldest further WAL
/// segments PostgreSQL has marked ready in `<dir of path>/archive_status`, up to `opts.batch`
/// in all, `opts.parallel` at a time. Succeeds only when %p is durably stored and recorded;
/// a failure on another segment is reported in [`PushBatchReport::failed`], never as the
/// call's error. When %p is already archived (an earlier batch took it), returns at once.
pub fn archive_push_batch(
    repo: &Repository,
    db: &DbRecord,
    path: &Path,
    opts: &PushOptions,
) -> Result<PushBatchReport, EngineError> {
    archive_push(repo, db, path, opts, None)
}

/// [`archive_push_batch`], which on a backlog leaves the segments after %p to a background
/// pusher when `ahead` allows (module `ahead`): a call whose segment the running pusher covers
/// waits for its record, and a call that finds a full batch ready starts a pusher for the
/// segments after %p and pushes %p alone.
pub fn archive_push(
    repo: &Repository,
    db: &DbRecord,
    path: &Path,
    opts: &PushOptions,
    ahead: Option<&Ahead<'_>>,
) -> Result<PushBatchReport, EngineError> {
    let name = wal_file_name(path)?;
    let answer = |outcome| PushBatchReport {
        outcome,
        extra: Vec::new(),
        failed: Vec::new(),
    };
    // WalRecord along by an earlier call: its mark, or else one pass over the local file.
    let spool = ahead.map(|a| a.spool.dir());
    if let Some(done) = check_archived(repo, db, &name, || seen::content(spool, &name, path))? {
        return Ok(answer(done));
    }
    let mut alone = false;
    if let Some(a) = ahead
        && let Some(done) = leave_to_pusher(repo, db, path, &name, opts, a, &mut alone)?
    {
        return Ok(answer(done));
    }
    let mut failed = Vec::new();
    let mut work = vec![(name.clone(), path.to_path_buf())];
    if opts.batch > 1 && !alone {
        // The oldest ready ones other than %p, earlier ones included (PostgreSQL asks for
        // those first anyway).
        let dir = path.parent().unwrap_or(Path::new("."));
        let skip = HashSet::from([name.clone()]);
        work.extend(ready_segments(
            repo,
            db,
            dir,
            "",
            opts.batch - 1,
            &skip,
            &mut failed,
        ));
    }
    let mut outcome = None;
    let mut extra = Vec::new();
    // Every segment stored carries its MAC when the repository requires them: without the
    // key nothing is stored, and PostgreSQL keeps the segment until a call has it.
    let mac = repo.mac_key()?;
    // One catalog transaction for the batch: one commit and fsync instead of one per segment.
    // The further segments leave marks for their own calls, in the pusher's directory.
    let marks = ahead
        .filter(|a| work.len() > 1 && a.spool.create_dir().is_ok())
        .map(|a| (a.spool.dir(), 1));
    for (i, r) in push_segments(
        repo,
        db,
        &work,
        opts,
        work.len(),
        mac.as_deref(),
        marks,
        Summaries::First,
    ) {
        match r {
            Ok(rec) if i == 0 => {
                outcome = Some(Ok(ArchivePushOutcome::Archived {
                    name: rec.name,
                    stored_size: rec.stored_size,
                }))
            }
            Ok(rec) => extra.push(ArchivePushOutcome::Archived {
                name: rec.name,
                stored_size: rec.stored_size,
            }),
            Err(e) if i == 0 => outcome = Some(Err(e)),
            Err(e) => failed.push((work[i].0.clone(), e)),
        }
    }
    let outcome = outcome.unwrap_or_else(|| {
        Err(EngineError::Internal(format!(
            "wal file {name} was not archived into repository {}: its worker thread ended early; hint: run archive-push for it again",
            repo.location()
        )))
    })?;
    if let Some(a) = ahead {
        forget_failure(a, &name);
    }
    Ok(PushBatchReport {
        outcome,
        extra,
        failed,
    })
}
