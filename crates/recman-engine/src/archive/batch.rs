//! archive-push in batches, like pgBackRest's asynchronous push but without a daemon: the call
//! PostgreSQL makes for one segment (%p) also pushes the next segments PostgreSQL has marked
//! ready (`archive_status/<name>.ready`), several at a time on threads. PostgreSQL's own later
//! calls for those segments then find them archived and return at once (same size and
//! checksum: one read of the local file, no read of the stored copy).
//!
//! The threads read, compress and write their pieces (through the media driver, which is
//! `Sync`); the calling thread then records the finished pieces in the catalog, whose
//! connection is not shared between threads, in one transaction. `archive_status` is PostgreSQL's: nothing here writes it.

use super::check::check_wal_file;
use super::seen;
use super::{is_segment_name, store_wal};
use crate::error::EngineError;
use recman_catalog::{DbRecord, Media, Repository, WalRecord};
use recman_format::Compression;
use recman_format::seal::MacKey;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// Segments one archive-push call pushes by default, %p included: 256 MiB of 16 MiB segments,
/// which keeps each call short while a backlog drains 16 segments per call.
pub const DEFAULT_PUSH_BATCH: usize = 16;

/// How far past the batch the ready list is checked against the catalog, so a long backlog
/// already pushed costs a bounded number of lookups.
const LOOKUPS_PER_SLOT: usize = 4;

/// When a push builds each segment's change-tracking summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Summaries {
    /// Before the segment is stored, from the bytes in hand.
    First,
    /// Not at all: the caller builds them once the segments are recorded (the background
    /// pusher, after a backlog, so the WAL reaches the repository first).
    Later,
}

#[derive(Debug, Clone)]
pub struct PushOptions {
    pub compression: Compression,
    /// Segments per call, %p included; 1 pushes %p alone.
    pub batch: usize,
    /// Threads that read, compress and write pieces at once.
    pub parallel: usize,
}

impl PushOptions {
    /// The defaults: [`DEFAULT_PUSH_BATCH`] segments a call, [`default_parallel`] threads.
    pub fn new(compression: Compression) -> PushOptions {
        PushOptions {
            compression,
            batch: DEFAULT_PUSH_BATCH,
            parallel: default_parallel(),
        }
    }
}

/// One thread per core, and at least 4: a pushed segment spends much of its time waiting
/// for its fsyncs, so even a 2-core host pushes faster with 4 streams than with 2.
pub fn default_parallel() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .max(4)
}

/// Pushes `work` (segment names and local paths), `opts.parallel` at a time, and records the
/// stored pieces in the catalog in transactions of up to `commit_every` as they finish, so a
/// caller waiting for one segment sees it soon after its piece is durable. Returns each
/// item's outcome by its index in `work`, in the order they were recorded or failed.
/// `marks`: the directory where the items from the given index on leave their mark for their
/// own archive-push call (module `seen`). `summaries`: whether each segment's change-tracking
/// summary is made before it is stored, or left to the caller.
#[allow(clippy::too_many_arguments)]
pub(super) fn push_segments(
    repo: &Repository,
    db: &DbRecord,
    work: &[(String, PathBuf)],
    opts: &PushOptions,
    commit_every: usize,
    mac: Option<&MacKey>,
    marks: Option<(&Path, usize)>,
    summaries: Summaries,
) -> Vec<(usize, Result<WalRecord, EngineError>)> {
    let next = AtomicUsize::new(0);
    let media = repo.media().as_ref();
    let location = repo.location();
    let threads = opts.parallel.clamp(1, work.len().max(1));
    let mut out = Vec::with_capacity(work.len());
    let mut stored: Vec<(usize, WalRecord)> = Vec::new();
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel::<(usize, Result<WalRecord, EngineError>)>();
        for _ in 0..threads {
            let tx = tx.clone();
            let next = &next;
            s.spawn(move || {
                // One buffer per thread, reused for each segment it reads.
                let mut buf = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((name, path)) = work.get(i) else {
                        break;
                    };
                    let mark = marks.filter(|(_, from)| i >= *from).map(|(dir, _)| dir);
                    let r = push_one(
                        media, location, db, name, path, opts, mac, mark, summaries, &mut buf,
                    );
                    if tx.send((i, r)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (i, r) in rx {
            match r {
                Ok(rec) => stored.push((i, rec)),
                Err(e) => out.push((i, Err(e))),
            }
            if stored.len() >= commit_every.max(1) {
                record(repo, location, std::mem::take(&mut stored), &mut out);
            }
        }
    });
    record(repo, location, stored, &mut out);
    out
}

/// Reads, checks and stores one segment (and its change-tracking summary).
#[allow(clippy::too_many_arguments)]
fn push_one(
    media: &dyn Media,
    location: &str,
    db: &DbRecord,
    name: &str,
    path: &Path,
    opts: &PushOptions,
    mac: Option<&MacKey>,
    marks: Option<&Path>,
    summaries: Summaries,
    buf: &mut Vec<u8>,
) -> Result<WalRecord, EngineError> {
    let seen = seen::read_file(path, buf)?;
    check_wal_file(db, name, buf)?;
    // The summary first, from the bytes in hand: a call never records a segment without the
    // summary it could make of it (the background pusher makes them after a backlog's
    // segments, see `ahead::summarize`). A summary that cannot be made leaves a gap a level 1
    // scans around.
    if summaries == Summaries::First && is_segment_name(name) {
        let _ = super::summary::store_summary(media, location, db, name, buf, opts.compression);
    }
    let rec = store_wal(media, location, db, name, buf, opts.compression, mac)?;
    // Before the record, so the segment's call finds the mark as soon as it finds the record
    // (the mark vouches only for what was read; the record still decides).
    if let (Some(dir), Some(id)) = (marks, seen) {
        seen::mark(dir, name, &id, rec.crc32c);
    }
    Ok(rec)
}

/// Records stored pieces (each durable by now) in one catalog transaction; on failure each
/// becomes an error that says the piece is stored but not recorded.
fn record(
    repo: &Repository,
    location: &str,
    mut stored: Vec<(usize, WalRecord)>,
    out: &mut Vec<(usize, Result<WalRecord, EngineError>)>,
) {
    if stored.is_empty() {
        return;
    }
    stored.sort_by_key(|(i, _)| *i);
    let (order, recs): (Vec<usize>, Vec<WalRecord>) = stored.into_iter().unzip();
    match repo.catalog().add_wals(&recs) {
        Ok(()) => out.extend(order.into_iter().zip(recs.into_iter().map(Ok))),
        Err(e) => {
            let why = e.to_string();
            let kind = e.kind();
            for (i, rec) in order.into_iter().zip(recs) {
                let e = EngineError::Failed {
                    kind,
                    message: format!(
                        "wal file {} was stored in repository {location} but could not be recorded in its catalog: {why}; hint: PostgreSQL retries archive_command, which stores it again",
                        rec.name
                    ),
                };
                out.push((i, Err(e)));
            }
        }
    }
}

/// The oldest WAL segments PostgreSQL has marked ready in `dir` (pg_wal) after `after`, other
/// than those in `skip`, that the catalog does not hold yet, at most `limit`. Name order is WAL
/// order within a timeline, and a later timeline's segments sort after an earlier one's, as
/// PostgreSQL archives them. What cannot be read goes to `failed`, naming the object; it only
/// shortens the list.
pub(super) fn ready_segments(
    repo: &Repository,
    db: &DbRecord,
    dir: &Path,
    after: &str,
    limit: usize,
    skip: &HashSet<String>,
    failed: &mut Vec<(String, EngineError)>,
) -> Vec<(String, PathBuf)> {
    let status = dir.join("archive_status");
    let rd = match std::fs::read_dir(&status) {
        Ok(rd) => rd,
        // A file archived by hand from elsewhere: nothing else is ready there.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            let what = status.display().to_string();
            failed.push((what, EngineError::io("read directory", &status, e)));
            return Vec::new();
        }
    };
    let mut ready: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let f = e.file_name().to_string_lossy().into_owned();
            f.strip_suffix(".ready")
                .filter(|s| is_segment_name(s) && *s > after && !skip.contains(*s))
                .map(str::to_string)
        })
        .collect();
    ready.sort();
    let mut out = Vec::new();
    let cat = repo.catalog();
    for seg in ready.into_iter().take(limit * LOOKUPS_PER_SLOT) {
        if out.len() == limit {
            break;
        }
        // Recorded already (by an earlier batch): its own call checks it cheaply.
        match cat.wal(db.id, &seg) {
            Ok(Some(_)) => continue,
            Ok(None) => {}
            Err(e) => {
                failed.push((seg, e.into()));
                break;
            }
        }
        let p = dir.join(&seg);
        out.push((seg, p));
    }
    out
}
