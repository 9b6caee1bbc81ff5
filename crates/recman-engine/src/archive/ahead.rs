//! archive-push ahead of PostgreSQL on a backlog, like pgBackRest's asynchronous push: when the
//! call for %p finds two batches of further segments marked ready, it starts one background
//! `recman archive-push-ahead`, which pushes every ready segment after %p, several at a time,
//! recording each in the catalog soon after its piece is durable, and makes their change-tracking
//! summaries after them (`summarize`), so the WAL itself reaches the repository first.
//! PostgreSQL's calls for those segments wait for the pusher's record instead of pushing, so
//! the archiver's one-call-at-a-time loop overlaps the pushes instead of waiting for each batch
//! in turn.
//!
//! The pusher's directory (`recman-push` in pg_wal, where PostgreSQL ignores what is not a WAL
//! file name) holds:
//!
//! ```text
//! .lock              flock(2) held by the one running pusher; holds the segment it pushes after
//! <segment>.failed   the pusher could not push it (the message); its own call pushes it
//! <segment>.read     the pushed file's identity and checksum (module `seen`), used once
//! push.log           what the last pushers wrote to standard error
//! ```
//!
//! A call that waits returns only when the catalog holds its segment with the local file's size
//! and checksum (the check every already-archived answer makes), so a segment is never
//! reported archived on the pusher's word alone. A call stops waiting and pushes itself when the
//! pusher ends, marks the segment failed, or has not recorded it within [`STALL_LIMIT`].

use super::batch::{Summaries, push_segments, ready_segments};
use super::{ArchivePushOutcome, PushOptions, check_archived, is_segment_name};
use super::{seen, summary};
use crate::error::EngineError;
use recman_catalog::{DbRecord, Repository, WalRecord};
use std::collections::HashSet;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The pusher's directory name next to %p (in pg_wal).
pub const PUSH_DIR_NAME: &str = "recman-push";
const LOCK_FILE: &str = ".lock";
const LOG_FILE: &str = "push.log";
/// A call waits this long at most for the pusher to record its segment, then pushes it itself
/// (a duplicate push stores the same piece again and records it again, which is harmless).
pub const STALL_LIMIT: Duration = Duration::from_secs(60);
/// How often a waiting call looks at the catalog.
const POLL: Duration = Duration::from_millis(5);
/// Segments the pusher takes from the ready list at once; it looks again when they are done.
const ROUND: usize = 64;
/// Segments the pusher records before it makes their change-tracking summaries: a backlog of up
/// to 4 GiB of 16 MiB segments reaches the repository without waiting for them, and a longer one
/// is summarized while PostgreSQL most likely still holds the segments (a checkpoint may recycle
/// one once it is archived; its summary then comes from the stored piece).
const SUMMARIES_EVERY: usize = 256;
/// Stored pieces the pusher records per catalog transaction: small, so a waiting call sees its
/// segment soon, large enough that the catalog's commits stay a small share of the work.
const COMMIT_EVERY: usize = 4;
/// A backlog this many batches long (ready after %p) goes to a pusher; a shorter one, a burst
/// of writes, drains in batches, which start no process.
const BATCHES_FOR_PUSHER: usize = 2;

/// The directory of one cluster's background pusher.
#[derive(Debug, Clone)]
pub struct PushSpool {
    dir: PathBuf,
}

/// The running pusher's hold on its directory; released when dropped or when the process dies.
#[derive(Debug)]
pub struct PushLock {
    _file: File,
    spool: PushSpool,
    /// pg_wal, where the segments and their archive_status are.
    wal_dir: PathBuf,
    after: String,
}

/// What one pusher did.
#[derive(Debug, Default)]
pub struct PushAheadReport {
    pub pushed: Vec<String>,
    pub failed: Vec<(String, EngineError)>,
}

/// What a call may do about a backlog: the pusher's directory and how to start one.
pub struct Ahead<'a> {
    pub spool: &'a PushSpool,
    /// The `recman archive-push-ahead` command for the segments after the named one;
    /// [`PushSpool::start`] starts it.
    pub command: &'a dyn Fn(&str) -> std::io::Result<Command>,
}

impl PushSpool {
    /// The pusher's directory for WAL file `path` (%p): `recman-push` in its directory, made
    /// absolute (PostgreSQL passes %p relative to the data directory).
    pub fn default_for(path: &Path) -> Result<PushSpool, EngineError> {
        let abs = std::path::absolute(path).map_err(|e| EngineError::io("resolve", path, e))?;
        let dir = abs.parent().unwrap_or(Path::new("/")).join(PUSH_DIR_NAME);
        Ok(PushSpool { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// pg_wal: the directory the pusher's directory is in.
    pub fn wal_dir(&self) -> &Path {
        self.dir.parent().unwrap_or(Path::new("/"))
    }

    pub(super) fn create_dir(&self) -> Result<(), EngineError> {
        crate::util::create_private_dir(&self.dir, "create push directory")
    }

    fn open_lock_file(&self) -> Result<File, EngineError> {
        crate::util::open_lock_file(&self.dir.join(LOCK_FILE), "open push lock")
    }

    /// Takes the pusher's lock for pushing the ready segments after `after`; None while another
    /// pusher holds it. A call probing the lock holds it for an instant, so this tries a few
    /// times. Clears the failure marks of earlier pushers: this one tries those segments again.
    pub fn try_lock(&self, after: &str) -> Result<Option<PushLock>, EngineError> {
        if !is_segment_name(after) {
            return Err(crate::refusal::Wal::NotSegment {
                name: after.to_string(),
                for_: crate::refusal::SegmentUse::PushAhead,
            }
            .into());
        }
        self.create_dir()?;
        for attempt in 0..5 {
            let mut file = self.open_lock_file()?;
            match file.try_lock() {
                Ok(()) => {
                    let p = self.dir.join(LOCK_FILE);
                    let mark = (|| -> std::io::Result<()> {
                        file.set_len(0)?;
                        file.rewind()?;
                        file.write_all(after.as_bytes())
                    })();
                    mark.map_err(|e| EngineError::io("write push lock", p, e))?;
                    self.clear_failures()?;
                    seen::forget_gone(&self.dir, self.wal_dir());
                    return Ok(Some(PushLock {
                        _file: file,
                        spool: self.clone(),
                        wal_dir: self.wal_dir().to_path_buf(),
                        after: after.to_string(),
                    }));
                }
                Err(std::fs::TryLockError::WouldBlock) if attempt < 4 => {
                    std::thread::sleep(Duration::from_millis(2))
                }
                Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(EngineError::io("lock", self.dir.join(LOCK_FILE), e));
                }
            }
        }
        Ok(None)
    }

    /// The segment the running pusher pushes after; None when no pusher runs.
    fn running_after(&self) -> Result<Option<String>, EngineError> {
        if !self.dir.exists() {
            return Ok(None);
        }
        let mut file = self.open_lock_file()?;
        match file.try_lock() {
            Ok(()) => Ok(None),
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut s = String::new();
                // A pusher between taking the lock and marking it: it covers nothing yet.
                let _ = file.read_to_string(&mut s);
                Ok(Some(s.trim().to_string()).filter(|s| is_segment_name(s)))
            }
            Err(std::fs::TryLockError::Error(e)) => {
                Err(EngineError::io("lock", self.dir.join(LOCK_FILE), e))
            }
        }
    }

    fn failure_path(&self, segment: &str) -> PathBuf {
        self.dir.join(format!("{segment}.failed"))
    }

    fn mark_failed(&self, segment: &str, e: &EngineError) {
        // Best effort: without the mark the segment's call waits for the pusher's end instead.
        let _ = std::fs::write(self.failure_path(segment), e.to_string());
    }

    fn clear_failures(&self) -> Result<(), EngineError> {
        let rd = std::fs::read_dir(&self.dir)
            .map_err(|e| EngineError::io("read push directory", &self.dir, e))?;
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().ends_with(".failed") {
                let _ = std::fs::remove_file(e.path());
            }
        }
        Ok(())
    }

    /// Starts `cmd` (a `recman ... archive-push-ahead` command) in the background, its standard
    /// error into the directory's log (`util::spawn_logged`), and returns once it holds the
    /// lock (or after a second).
    pub fn start(&self, cmd: Command) -> Result<(), EngineError> {
        self.create_dir()?;
        crate::util::spawn_logged(
            cmd,
            &self.dir.join(LOG_FILE),
            ("open push log", "start pusher"),
        )?;
        let until = Instant::now() + Duration::from_secs(1);
        while self.running_after()?.is_none() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    }

    /// Waits while the running pusher covers `name` (a later segment than it started after,
    /// not marked failed) until the catalog holds it; Some(the already-archived answer) then,
    /// None when this call has to push it itself.
    fn wait_for(
        &self,
        repo: &Repository,
        db: &DbRecord,
        name: &str,
        path: &Path,
    ) -> Result<Option<ArchivePushOutcome>, EngineError> {
        let since = Instant::now();
        loop {
            let Some(after) = self.running_after()? else {
                // Ended: it may have recorded the segment on its way out.
                return check_archived(repo, db, name, || {
                    seen::content(Some(&self.dir), name, path)
                });
            };
            if name <= after.as_str() || self.failure_path(name).exists() {
                return Ok(None);
            }
            if let Some(done) = check_archived(repo, db, name, || {
                seen::content(Some(&self.dir), name, path)
            })? {
                return Ok(Some(done));
            }
            if since.elapsed() > STALL_LIMIT {
                return Ok(None);
            }
            std::thread::sleep(POLL);
        }
    }
}

/// Whether to leave the segments after `name` to a background pusher: one is running (then
/// wait for it, returning its answer), or [`BATCHES_FOR_PUSHER`] batches of them are ready
/// (then start one).
/// Some(answer) when the pusher archived `name`; None when this call pushes `name` alone
/// (`*alone` set) or as the first of a batch (a short backlog, or no pusher could start).
pub(super) fn leave_to_pusher(
    repo: &Repository,
    db: &DbRecord,
    path: &Path,
    name: &str,
    opts: &PushOptions,
    ahead: &Ahead<'_>,
    alone: &mut bool,
) -> Result<Option<ArchivePushOutcome>, EngineError> {
    // History, backup-history and partial files are never the pusher's: their calls push them.
    if !is_segment_name(name) {
        *alone = ahead.spool.running_after()?.is_some();
        return Ok(None);
    }
    if let Some(done) = ahead.spool.wait_for(repo, db, name, path)? {
        return Ok(Some(done));
    }
    if ahead.spool.running_after()?.is_some() {
        // Not the pusher's to push (before it, or failed in it): this one alone, leaving the
        // rest to the pusher.
        *alone = true;
        return Ok(None);
    }
    if opts.batch <= 1 {
        return Ok(None);
    }
    let mut failed = Vec::new();
    let backlog = ready_segments(
        repo,
        db,
        ahead.spool.wal_dir(),
        name,
        opts.batch * BATCHES_FOR_PUSHER,
        &HashSet::new(),
        &mut failed,
    );
    if backlog.len() >= opts.batch * BATCHES_FOR_PUSHER {
        let started = (ahead.command)(name)
            .map_err(|e| EngineError::io("start pusher", "recman", e))
            .and_then(|cmd| ahead.spool.start(cmd));
        match started {
            Ok(()) => *alone = true,
            Err(e) => eprintln!(
                "recman: warning: cannot start the background pusher for the wal after {name}: {e}; this call pushes a batch itself"
            ),
        }
    }
    Ok(None)
}

/// The pusher's work, under its lock: pushes every segment marked ready after the lock's
/// segment that the catalog does not hold, `opts.parallel` at a time, looking at the ready list
/// again after each round, until none is left. A segment that fails is marked for its own
/// call and not tried again by this pusher.
pub fn push_ahead(
    repo: &Repository,
    db: &DbRecord,
    lock: &PushLock,
    opts: &PushOptions,
) -> Result<PushAheadReport, EngineError> {
    let mut report = PushAheadReport::default();
    let mut skip = HashSet::new();
    let mac = repo.mac_key()?;
    let mut pushed = Vec::new();
    let ended = loop {
        let mut failed = Vec::new();
        let work = ready_segments(
            repo,
            db,
            &lock.wal_dir,
            &lock.after,
            ROUND,
            &skip,
            &mut failed,
        );
        if let Some((what, e)) = failed.into_iter().next() {
            // The ready list or the catalog cannot be read: each call pushes its own.
            break Err(EngineError::Failed {
                kind: e.kind(),
                message: format!("the background pusher stopped at {what}: {e}"),
            });
        }
        if work.is_empty() {
            break Ok(());
        }
        for (i, r) in push_segments(
            repo,
            db,
            &work,
            opts,
            COMMIT_EVERY,
            mac.as_deref(),
            Some((lock.spool.dir(), 0)),
            Summaries::Later,
        ) {
            let name = work[i].0.clone();
            skip.insert(name.clone());
            match r {
                Ok(rec) => {
                    report.pushed.push(name);
                    pushed.push((rec, work[i].1.clone()));
                }
                Err(e) => {
                    lock.spool.mark_failed(&name, &e);
                    report.failed.push((name, e));
                }
            }
        }
        if pushed.len() >= SUMMARIES_EVERY {
            summarize(repo, db, opts, &std::mem::take(&mut pushed));
        }
    };
    summarize(repo, db, opts, &pushed);
    ended.map(|()| report)
}

/// Builds and stores the change-tracking summaries of segments the pusher recorded (every
/// [`SUMMARIES_EVERY`], and the rest once the backlog is in): the WAL reaches the repository
/// first, and the summaries follow within the same run. Each is built from what was archived:
/// the local file while it still has the record's size and checksum (most often from the page
/// cache), `opts.parallel` at a time, else the archived copies as archive-get reads them
/// (PostgreSQL may have recycled the file at a checkpoint meanwhile). A summary that cannot be
/// built or stored leaves a gap a level 1 scans around, as an unreadable one does.
fn summarize(
    repo: &Repository,
    db: &DbRecord,
    opts: &PushOptions,
    pushed: &[(WalRecord, PathBuf)],
) {
    let segments: Vec<_> = pushed
        .iter()
        .filter(|(r, _)| is_segment_name(&r.name))
        .collect();
    let (media, location) = (repo.media().as_ref(), repo.location());
    let store = |name: &str, bytes: &[u8]| {
        let _ = summary::store_summary(media, location, db, name, bytes, opts.compression);
    };
    let recycled = crate::fault::wal_recycled();
    let next = AtomicUsize::new(0);
    let gone: Vec<&WalRecord> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..opts.parallel.clamp(1, segments.len().max(1)))
            .map(|_| {
                s.spawn(|| {
                    let (mut buf, mut gone) = (Vec::new(), Vec::new());
                    while let Some((rec, path)) = segments.get(next.fetch_add(1, Ordering::Relaxed))
                    {
                        let same = !recycled
                            && seen::read_file(path, &mut buf).is_ok()
                            && buf.len() as u64 == rec.size
                            && recman_format::crc32c(&buf) == rec.crc32c;
                        if same {
                            store(&rec.name, &buf);
                        } else {
                            gone.push(rec);
                        }
                    }
                    gone
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    // On this thread: reading the archived copies looks up the catalog, whose connection is
    // not shared between threads.
    let mut buf = Vec::new();
    for rec in gone {
        if let Ok(Some(_)) = super::read::read_wal_into(repo, db, &rec.name, &mut buf) {
            store(&rec.name, &buf);
        }
    }
}

/// Removes `name`'s failure mark once its own call archived it.
pub(super) fn forget_failure(ahead: &Ahead<'_>, name: &str) {
    let _ = std::fs::remove_file(ahead.spool.failure_path(name));
}
