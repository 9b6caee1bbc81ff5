//! archive-get with read-ahead, like pgBackRest's asynchronous archive-get but without a
//! daemon. PostgreSQL calls restore_command once per segment and waits for each; recman's
//! call serves the segment from a spool directory when a background prefetcher put it there,
//! and makes sure one prefetcher is fetching the next segments while PostgreSQL replays.
//!
//! The spool (default `<dir of %p>/recman-prefetch`, i.e. inside pg_wal, where PostgreSQL
//! ignores what is not a WAL file name) holds:
//!
//! ```text
//! <segment>.<size>-<crc32c>.wal   a fetched segment, verified against the repository's
//!                                 recorded size and checksum before it got this name
//! <segment>.<pid>.tmp             being written by prefetcher <pid>
//! .lock                           flock(2) held by the one running prefetcher
//! .stop                           asks prefetchers started before the time it holds to
//!                                 empty the spool and end
//! prefetch.log                    what prefetchers could not fetch (stderr of the last ones)
//! ```
//!
//! Only files named like the first line are served, and only after their size and checksum
//! (from the name, i.e. from the repository) match again, so a damaged or truncated file is
//! never handed to PostgreSQL; a file of another timeline has another name and is never
//! served for this one. A prefetcher fetches the next N segments of the requested one's
//! timeline that the catalog lists (so segment size and gaps need no arithmetic), several at a
//! time, and ends; ready files of positions before the requested one are removed by later
//! calls, and a history-file request (the start and the end of recovery) empties the spool.

use crate::archive::{is_segment_name, read_wal_into, write_aside};
use crate::error::EngineError;
use recman_catalog::{DbRecord, Repository, WalRecord};
use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// Segments kept fetched ahead of PostgreSQL by default: 256 MiB of 16 MiB segments, enough
/// to hide the repository's latency from replay while bounding the space taken in pg_wal.
pub const DEFAULT_PREFETCH: usize = 16;

/// The spool's directory name next to %p (in pg_wal).
pub const SPOOL_DIR_NAME: &str = "recman-prefetch";

const LOCK_FILE: &str = ".lock";
const STOP_FILE: &str = ".stop";
const LOG_FILE: &str = "prefetch.log";
/// How long a call waits for a segment the running prefetcher is writing, before it fetches
/// the segment itself.
const IN_FLIGHT_WAIT: Duration = Duration::from_secs(10);

/// Prefetch threads by default: one per core but one, which stays with PostgreSQL's replay
/// (the startup process is what recovery waits for), at least 1 and at most 8.
pub fn default_prefetch_parallel() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .saturating_sub(1)
        .clamp(1, 8)
}

/// A spool file, by what its name says.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Ready {
        segment: String,
        size: u64,
        crc: u32,
    },
    Tmp {
        segment: String,
    },
    Other,
}

fn parse_entry(file: &str) -> Entry {
    let Some((segment, rest)) = file.split_once('.') else {
        return Entry::Other;
    };
    if !is_segment_name(segment) {
        return Entry::Other;
    }
    if let Some(pid) = rest.strip_suffix(".tmp")
        && pid.bytes().all(|b| b.is_ascii_digit())
    {
        return Entry::Tmp {
            segment: segment.to_string(),
        };
    }
    let ready = rest.strip_suffix(".wal").and_then(|v| {
        let (size, crc) = v.split_once('-')?;
        Some((size.parse().ok()?, u32::from_str_radix(crc, 16).ok()?))
    });
    match ready {
        Some((size, crc)) => Entry::Ready {
            segment: segment.to_string(),
            size,
            crc,
        },
        None => Entry::Other,
    }
}

fn ready_name(segment: &str, size: u64, crc: u32) -> String {
    format!("{segment}.{size}-{crc:08x}.wal")
}

/// The position of a segment in WAL (log and segment number), without its timeline.
fn position(segment: &str) -> &str {
    &segment[8..]
}

/// What [`Spool::take`] found for the requested segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Take {
    /// Moved into the destination; its size.
    Served(u64),
    /// Not in the spool (nor being written there).
    Missing,
    /// A file for it failed the check and was removed; why.
    Rejected(String),
}

/// The read-ahead directory of one cluster's archive-get calls.
#[derive(Debug, Clone)]
pub struct Spool {
    dir: PathBuf,
}

/// The running prefetcher's hold on a spool; released when dropped (or when the process dies).
#[derive(Debug)]
pub struct SpoolLock {
    _file: File,
    spool: Spool,
}

impl SpoolLock {
    pub fn spool(&self) -> &Spool {
        &self.spool
    }
}

impl Spool {
    pub fn new(dir: impl Into<PathBuf>) -> Spool {
        Spool { dir: dir.into() }
    }

    /// The default spool for destination `dest` (%p): `recman-prefetch` in its directory, made
    /// absolute (PostgreSQL passes %p relative to the data directory).
    pub fn default_for(dest: &Path) -> Result<Spool, EngineError> {
        let abs = std::path::absolute(dest).map_err(|e| EngineError::io("resolve", dest, e))?;
        let dir = abs.parent().unwrap_or(Path::new("/")).join(SPOOL_DIR_NAME);
        Ok(Spool::new(dir))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn entries(&self) -> Result<Vec<(String, Entry)>, EngineError> {
        let rd = match std::fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(EngineError::io("read spool directory", &self.dir, e)),
        };
        let mut out = Vec::new();
        for e in rd {
            let e = e.map_err(|e| EngineError::io("read spool directory", &self.dir, e))?;
            let f = e.file_name().to_string_lossy().into_owned();
            let entry = parse_entry(&f);
            out.push((f, entry));
        }
        Ok(out)
    }

    fn remove(&self, file: &str) -> Result<(), EngineError> {
        let p = self.dir.join(file);
        match std::fs::remove_file(&p) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(EngineError::io("remove spool file", p, e)),
        }
    }

    /// Removes fetched segments PostgreSQL has moved past: those at positions before
    /// `segment`'s, of any timeline. Returns how many.
    pub fn prune_before(&self, segment: &str) -> Result<usize, EngineError> {
        if !is_segment_name(segment) {
            return Ok(0);
        }
        let mut n = 0;
        for (f, e) in self.entries()? {
            if let Entry::Ready { segment: s, .. } = e
                && position(&s) < position(segment)
            {
                self.remove(&f)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Fetched segments of `segment`'s timeline after it: how far the spool is ahead.
    pub fn ahead(&self, segment: &str) -> Result<usize, EngineError> {
        if !is_segment_name(segment) {
            return Ok(0);
        }
        Ok(self
            .entries()?
            .into_iter()
            .filter(|(_, e)| {
                matches!(e, Entry::Ready { segment: s, .. }
                    if s[..8] == segment[..8] && position(s) > position(segment))
            })
            .count())
    }

    /// Moves `segment` from the spool into `dest` if a fetched file for it is there and still
    /// matches the size and checksum it was fetched with. When the running prefetcher is
    /// writing it, waits for it (up to a few seconds). A file that fails the check is removed.
    pub fn take(&self, segment: &str, dest: &Path) -> Result<Take, EngineError> {
        if !is_segment_name(segment) {
            return Ok(Take::Missing);
        }
        let deadline = Instant::now() + IN_FLIGHT_WAIT;
        loop {
            let entries = self.entries()?;
            let ready = entries.iter().find_map(|(f, e)| match e {
                Entry::Ready {
                    segment: s,
                    size,
                    crc,
                } if s == segment => Some((f.clone(), *size, *crc)),
                _ => None,
            });
            if let Some((file, size, crc)) = ready {
                return self.serve(&file, size, crc, dest);
            }
            let in_flight = entries
                .iter()
                .any(|(_, e)| matches!(e, Entry::Tmp { segment: s } if s == segment));
            if !in_flight || Instant::now() >= deadline || !self.prefetcher_running()? {
                return Ok(Take::Missing);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn serve(&self, file: &str, size: u64, crc: u32, dest: &Path) -> Result<Take, EngineError> {
        let path = self.dir.join(file);
        let (got, sum) = match crate::util::file_size_crc(&path) {
            Ok(v) => v,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Take::Missing),
            Err(e) => return Err(EngineError::io("read spool file", path, e)),
        };
        if got != size || sum != crc {
            self.remove(file)?;
            return Ok(Take::Rejected(format!(
                "spool file {} holds {got} bytes with crc {sum:08x}, not the {size} bytes with crc {crc:08x} fetched from the repository",
                path.display()
            )));
        }
        match std::fs::rename(&path, dest) {
            Ok(()) => Ok(Take::Served(size)),
            // A spool on another file system (--spool): copy, still written aside.
            Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
                let data = std::fs::read(&path)
                    .map_err(|e| EngineError::io("read spool file", &path, e))?;
                if data.len() as u64 != size || crc32c::crc32c(&data) != crc {
                    self.remove(file)?;
                    return Ok(Take::Rejected(format!(
                        "spool file {} changed while it was served",
                        path.display()
                    )));
                }
                write_aside(dest, &data)?;
                self.remove(file)?;
                Ok(Take::Served(size))
            }
            Err(e) => Err(EngineError::io("move spool file into place", dest, e)),
        }
    }

    fn open_lock_file(&self) -> Result<File, EngineError> {
        crate::util::open_lock_file(&self.dir.join(LOCK_FILE), "open spool lock")
    }

    /// Creates the spool directory, private like the pg_wal it sits in.
    fn create_dir(&self) -> Result<(), EngineError> {
        crate::util::create_private_dir(&self.dir, "create spool directory")
    }

    /// Takes the prefetcher's lock without waiting; None while another prefetcher holds it.
    /// Creates the spool directory when it is missing.
    pub fn try_lock(&self) -> Result<Option<SpoolLock>, EngineError> {
        self.create_dir()?;
        let file = self.open_lock_file()?;
        match file.try_lock() {
            Ok(()) => Ok(Some(SpoolLock {
                _file: file,
                spool: self.clone(),
            })),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(EngineError::io("lock", self.dir.join(LOCK_FILE), e))
            }
        }
    }

    /// Whether a prefetcher holds the spool's lock now.
    pub fn prefetcher_running(&self) -> Result<bool, EngineError> {
        if !self.dir.exists() {
            return Ok(false);
        }
        Ok(self.try_lock()?.is_none())
    }

    /// Whether `segment`'s call should start a prefetcher keeping `count` segments ahead:
    /// none is running and fewer than half of them are fetched already (so each prefetcher
    /// fetches at least half a window at once).
    pub fn wants_prefetcher(&self, segment: &str, count: usize) -> Result<bool, EngineError> {
        if count == 0 || !is_segment_name(segment) {
            return Ok(false);
        }
        if self.ahead(segment)? >= count.div_ceil(2) {
            return Ok(false);
        }
        Ok(!self.prefetcher_running()?)
    }

    /// Starts `cmd` (a `recman ... archive-prefetch` command) in the background, its standard
    /// error into the spool's log (`util::spawn_logged`), and returns without waiting for it.
    pub fn start_prefetcher(&self, cmd: Command) -> Result<(), EngineError> {
        self.create_dir()?;
        crate::util::spawn_logged(
            cmd,
            &self.dir.join(LOG_FILE),
            ("open prefetch log", "start prefetcher"),
        )
    }

    /// Empties the spool of fetched and partly fetched segments (at a history-file request:
    /// the start of recovery and the end of it). Prefetchers started before now, running or
    /// still starting, are asked to stop and empty it themselves. The directory, its lock
    /// file, log and stop request stay.
    pub fn clear(&self) -> Result<(), EngineError> {
        if !self.dir.exists() {
            return Ok(());
        }
        let p = self.dir.join(STOP_FILE);
        std::fs::write(&p, unix_nanos(SystemTime::now()).to_string())
            .map_err(|e| EngineError::io("write", p, e))?;
        match self.try_lock()? {
            Some(_lock) => self.remove_segments(true),
            None => self.remove_segments(false),
        }
    }

    fn remove_segments(&self, tmp_too: bool) -> Result<(), EngineError> {
        for (f, e) in self.entries()? {
            match e {
                Entry::Ready { .. } => self.remove(&f)?,
                Entry::Tmp { .. } if tmp_too => self.remove(&f)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// Whether a stop was requested after a prefetcher was started at `started`.
    fn stop_requested(&self, started: SystemTime) -> bool {
        std::fs::read_to_string(self.dir.join(STOP_FILE))
            .ok()
            .and_then(|s| s.trim().parse::<u128>().ok())
            .is_some_and(|at| at >= unix_nanos(started))
    }
}

/// Nanoseconds since the Unix epoch, for the stop request's time.
pub fn unix_nanos(t: SystemTime) -> u128 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

#[derive(Debug, Default)]
pub struct PrefetchReport {
    /// Segments fetched into the spool.
    pub fetched: Vec<String>,
    /// Segments of the window that were in the spool already.
    pub present: usize,
    /// Segments that could not be fetched; archive-get fetches each itself when asked.
    pub failed: Vec<(String, EngineError)>,
    /// Stopped by a `.stop` request, the spool emptied.
    pub stopped: bool,
}

/// The prefetcher's work, under its lock: fetches the next `count` archived segments after
/// `after` on its timeline, as the catalog lists them, into the spool, `parallel` at a time.
/// Each is read from the repository (or a backup set holding it), checked against the
/// catalog's size and checksum, written under a temporary name and renamed into its ready
/// name. Stops early, emptying the spool, when a stop was requested after `started` (when
/// archive-get started this prefetcher).
pub fn prefetch_into_spool(
    repo: &Repository,
    db: &DbRecord,
    lock: &SpoolLock,
    after: &str,
    count: usize,
    parallel: usize,
    started: SystemTime,
) -> Result<PrefetchReport, EngineError> {
    let spool = lock.spool();
    if !is_segment_name(after) {
        return Err(crate::refusal::Wal::NotSegment {
            name: after.to_string(),
            for_: crate::refusal::SegmentUse::Prefetch,
        }
        .into());
    }
    let mut report = PrefetchReport::default();
    if spool.stop_requested(started) {
        spool.remove_segments(true)?;
        report.stopped = true;
        return Ok(report);
    }
    // Debris of a killed prefetcher (we hold the lock, so nobody writes these).
    let mut present = HashSet::new();
    for (f, e) in spool.entries()? {
        match e {
            Entry::Tmp { .. } => spool.remove(&f)?,
            Entry::Ready { segment, .. } => {
                present.insert(segment);
            }
            Entry::Other => {}
        }
    }
    let timeline = &after[..8];
    let window: Vec<WalRecord> = repo
        .catalog()
        .wal_list(db.id)?
        .into_iter()
        .filter(|w| is_segment_name(&w.name) && &w.name[..8] == timeline && w.name.as_str() > after)
        .take(count)
        .collect();
    let todo: Vec<&WalRecord> = window
        .iter()
        .filter(|w| !present.contains(&w.name))
        .collect();
    report.present = window.len() - todo.len();
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    let handle = repo.handle();
    let threads = parallel.clamp(1, todo.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            let (todo, next, results, handle) = (&todo, &next, &results, &handle);
            s.spawn(move || {
                // Each thread has its own catalog connection, for WAL kept in backup sets.
                let repo = match handle.open() {
                    Ok(r) => r,
                    Err(e) => {
                        if let Ok(mut r) = results.lock() {
                            r.push((String::from("(catalog)"), Err(e.into())));
                        }
                        return;
                    }
                };
                // One buffer per thread for all its segments.
                let mut buf = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(w) = todo.get(i) else { break };
                    if spool.stop_requested(started) {
                        break;
                    }
                    let r = fetch_one(&repo, db, spool, w, started, &mut buf);
                    if let Ok(mut res) = results.lock() {
                        res.push((w.name.clone(), r));
                    }
                }
            });
        }
    });
    for (name, r) in results.into_inner().unwrap_or_default() {
        match r {
            Ok(true) => report.fetched.push(name),
            Ok(false) => {}
            Err(e) => report.failed.push((name, e)),
        }
    }
    report.fetched.sort();
    // Checked once more before the lock goes, so a stop request that came while the last
    // segments were renamed still empties the spool.
    if spool.stop_requested(started) {
        spool.remove_segments(true)?;
        report.stopped = true;
    }
    Ok(report)
}

/// Fetches one segment into the spool; false when a stop request came first.
fn fetch_one(
    repo: &Repository,
    db: &DbRecord,
    spool: &Spool,
    w: &WalRecord,
    started: SystemTime,
    data: &mut Vec<u8>,
) -> Result<bool, EngineError> {
    let name = &w.name;
    let crc = read_wal_into(repo, db, name, data)?.ok_or_else(|| {
        EngineError::NotFound(format!(
            "archived wal segment {name} is listed in the catalog of repository {} but neither the archive nor a backup set holds it; hint: run `recman crosscheck archivelog all`",
            repo.location()
        ))
    })?;
    if data.len() as u64 != w.size || crc != w.crc32c {
        return Err(EngineError::Corrupt(format!(
            "archived wal segment {name} in repository {} holds {} bytes with crc {crc:08x}, but the catalog recorded {} bytes with crc {:08x}; hint: run `recman crosscheck archivelog all` and archive the segment again if the server still has it",
            repo.location(),
            data.len(),
            w.size,
            w.crc32c
        )));
    }
    let tmp = spool.dir.join(format!("{name}.{}.tmp", std::process::id()));
    let done = spool.dir.join(ready_name(name, w.size, crc));
    let write = || -> std::io::Result<bool> {
        crate::util::write_private(&tmp, data)?;
        if spool.stop_requested(started) {
            std::fs::remove_file(&tmp)?;
            return Ok(false);
        }
        std::fs::rename(&tmp, &done)?;
        Ok(true)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        EngineError::io("write spool file", &done, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEG: &str = "000000010000000000000003";

    #[test]
    fn names_parse() {
        assert_eq!(
            parse_entry(&ready_name(SEG, 16 << 20, 0xdead_beef)),
            Entry::Ready {
                segment: SEG.into(),
                size: 16 << 20,
                crc: 0xdead_beef
            }
        );
        assert_eq!(
            parse_entry(&format!("{SEG}.1234.tmp")),
            Entry::Tmp {
                segment: SEG.into()
            }
        );
        // A bare segment name (not the prefetcher's) is never served.
        for other in [
            SEG,
            "00000002.history",
            ".lock",
            "prefetch.log",
            &format!("{SEG}.x-1.wal"),
            &format!("{SEG}.12-zz.wal"),
            &format!("{SEG}.12.tmp.wal"),
            "0000000100000000000000zz.1-1.wal",
        ] {
            assert_eq!(parse_entry(other), Entry::Other, "{other}");
        }
    }

    #[test]
    fn serves_verified_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool"));
        std::fs::create_dir(spool.dir()).unwrap();
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let crc = crc32c::crc32c(&data);
        let dest = dir.path().join("RECOVERYXLOG");
        let put = |bytes: &[u8]| {
            std::fs::write(
                spool.dir().join(ready_name(SEG, data.len() as u64, crc)),
                bytes,
            )
            .unwrap()
        };
        // Truncated, then damaged: rejected and removed, nothing written to dest.
        put(&data[..5000]);
        assert!(matches!(spool.take(SEG, &dest).unwrap(), Take::Rejected(_)));
        let mut bad = data.clone();
        bad[777] ^= 1;
        put(&bad);
        assert!(matches!(spool.take(SEG, &dest).unwrap(), Take::Rejected(_)));
        assert!(!dest.exists());
        assert_eq!(spool.take(SEG, &dest).unwrap(), Take::Missing);
        // Another timeline's segment at the same position is not this one.
        let other_tl = format!("00000002{}", &SEG[8..]);
        put(&data);
        assert_eq!(spool.take(&other_tl, &dest).unwrap(), Take::Missing);
        assert_eq!(spool.ahead(&other_tl).unwrap(), 0);
        assert_eq!(spool.ahead("000000010000000000000002").unwrap(), 1);
        assert_eq!(
            spool.take(SEG, &dest).unwrap(),
            Take::Served(data.len() as u64)
        );
        assert_eq!(std::fs::read(&dest).unwrap(), data);
        // Positions before the requested one go; the same position of any timeline stays.
        put(&data);
        assert_eq!(spool.prune_before(&other_tl).unwrap(), 0);
        assert_eq!(spool.prune_before("000000010000000000000004").unwrap(), 1);
    }

    #[test]
    fn one_lock_holder() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path().join("spool"));
        assert!(!spool.prefetcher_running().unwrap());
        let started = SystemTime::now();
        let held = spool.try_lock().unwrap().expect("free");
        assert!(spool.try_lock().unwrap().is_none());
        assert!(spool.prefetcher_running().unwrap());
        assert!(!spool.stop_requested(started));
        // A clear while it runs (or starts) asks it to stop; one started later is not asked.
        spool.clear().unwrap();
        assert!(spool.stop_requested(started));
        assert!(!spool.stop_requested(SystemTime::now()));
        drop(held);
        assert!(!spool.prefetcher_running().unwrap());
    }
}
