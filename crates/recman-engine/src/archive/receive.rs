//! `recman receive`: WAL streamed into the repository as the primary writes it, for an RPO of
//! seconds (async) or zero (sync), instead of archive-push's segment or archive_timeout.
//!
//! A stream on a thread of its own ([`stream`]) speaks the replication protocol and writes a
//! spool directory recman owns: `<repo>/receive/<db>/` inside a disk repository, the same path
//! under the local cache of an object-store one (the layout is pg_receivewal's). There the
//! open segment is also uploaded as part objects every flush interval ([`parts`]), so the
//! bucket holds it when the receiver's host is lost too. A watcher loop here stores each
//! segment the stream completes (it renames `X.partial` to `X` once the segment is whole and
//! fsynced) as the same
//! archived-WAL object and catalog record archive-push writes, so the two may run together:
//! the same segment from both is one object, checked equal. Until it completes, the open
//! segment stays in the spool as `X.partial`, and archive-get serves it from there, padded,
//! so a restore after the loss of the primary reaches the last received commit.
//!
//! Restart without a gap comes from the replication slot and the spool: a stream resumes
//! at the start of the spool's newest segment (or at the slot's restart point when the spool
//! is empty), and the slot keeps the primary from removing WAL the spool has not made durable.
//! So the newest completed segment is left in the spool until a later one exists, which keeps
//! that resume point local.

mod parts;
mod stream;

use super::batch::{Summaries, push_segments};
use super::check::check_wal_file;
use super::{ArchivePushOutcome, PushOptions, check_archived, file_crc, is_segment_name};
use crate::error::EngineError;
use recman_catalog::{DbRecord, ReceivePosition, Repository};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The spool's directory under a disk repository's root, one subdirectory per database.
pub const RECEIVE_DIR: &str = "receive";
const LOCK_FILE: &str = "receive.lock";
/// The longest wait between streams when the connection keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A stream that ran this long before it failed was healthy: the next one starts quickly.
const HEALTHY_RUN: Duration = Duration::from_secs(30);
/// The watcher's longest sleep.
const TICK: Duration = Duration::from_millis(200);
/// How often a disk repository's watcher looks for completed segments to store.
const STORE_EVERY: Duration = Duration::from_millis(200);

/// How the receiver makes received WAL durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiveMode {
    /// Each batch of WAL fdatasynced and reported flushed at once, so a primary that names the receiver in synchronous_standby_names acknowledges a
    /// commit only once its WAL is durable in the spool.
    Sync,
    /// Written as received, fsynced by the watcher every flush interval.
    Async,
}

impl ReceiveMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ReceiveMode::Sync => "sync",
            ReceiveMode::Async => "async",
        }
    }
}

#[derive(Debug, Clone)]
pub struct ReceiveOptions {
    pub mode: ReceiveMode,
    /// The physical replication slot streamed from.
    pub slot: String,
    /// Create the slot when it is missing.
    pub create_slot: bool,
    /// How often the spool is made durable (async mode) and the position recorded.
    pub flush_interval: Duration,
    /// libpq conninfo of the primary; None: the PG* environment.
    pub conninfo: Option<String>,
    /// The name the primary sees (pg_stat_replication, synchronous_standby_names).
    pub application_name: String,
    pub push: PushOptions,
}

/// The spool of database `db`: in a disk repository, or in a remote one's local cache. An
/// encrypted repository refuses: the spool and the part objects hold WAL as PostgreSQL sends
/// it, in plain text.
pub fn spool_dir(repo: &Repository, db: &DbRecord) -> Result<PathBuf, EngineError> {
    if repo.is_encrypted() {
        return Err(crate::refusal::Wal::ReceiveEncrypted {
            repo: repo.location().to_string(),
        }
        .into());
    }
    Ok(repo.root().join(RECEIVE_DIR).join(&db.name))
}

/// What one pass of the watcher did.
#[derive(Debug, Default)]
pub struct StoreReport {
    pub stored: Vec<ArchivePushOutcome>,
    /// Files that could not be stored, left in the spool for the next pass.
    pub failed: Vec<(String, EngineError)>,
}

/// Stores every completed segment and history file in `dir` that is not stored yet (`done`
/// remembers those handled by earlier passes), and removes stored segments from the spool but
/// the newest one, and their part objects from the bucket (`parts`, remote repositories).
fn store_completed(
    repo: &Repository,
    db: &DbRecord,
    dir: &Path,
    push: &PushOptions,
    done: &mut HashSet<String>,
    parts: Option<&mut parts::PartStore>,
) -> Result<StoreReport, EngineError> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| EngineError::io("read receive spool", dir, e))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut report = StoreReport::default();
    let mut work = Vec::new();
    for name in names.iter().filter(|n| is_stored_kind(n)) {
        if done.contains(name) {
            continue;
        }
        let path = dir.join(name);
        match check_archived(repo, db, name, || file_crc(&path)) {
            Ok(Some(same)) => {
                done.insert(name.clone());
                report.stored.push(same);
            }
            Ok(None) => work.push((name.clone(), path)),
            Err(e) => report.failed.push((name.clone(), e)),
        }
    }
    if !work.is_empty() {
        // Segments stored from the spool carry their MAC like archive-push's when the
        // repository requires them.
        let mac = repo.mac_key()?;
        for (i, r) in push_segments(
            repo,
            db,
            &work,
            push,
            work.len(),
            mac.as_deref(),
            None,
            Summaries::First,
        ) {
            match r {
                Ok(rec) => {
                    done.insert(rec.name.clone());
                    report.stored.push(ArchivePushOutcome::Archived {
                        name: rec.name,
                        stored_size: rec.stored_size,
                    });
                }
                Err(e) => report.failed.push((work[i].0.clone(), e)),
            }
        }
    }
    if let Some(parts) = parts {
        for name in done
            .iter()
            .filter(|n| parts.holds(n))
            .cloned()
            .collect::<Vec<_>>()
        {
            report.failed.extend(parts.forget(repo, &name));
        }
    }
    // The newest segment (complete or partial) stays: the stream resumes from it.
    let newest = names
        .iter()
        .filter(|n| is_segment_name(segment_of(n)))
        .max_by(|a, b| segment_of(a).cmp(segment_of(b)));
    for name in names.iter().filter(|n| is_segment_name(n)) {
        if done.contains(name) && Some(name) != newest {
            let p = dir.join(name);
            std::fs::remove_file(&p).map_err(|e| EngineError::io("remove from spool", &p, e))?;
            done.remove(name);
        }
    }
    Ok(report)
}

fn is_stored_kind(name: &str) -> bool {
    is_segment_name(name)
        || name
            .strip_suffix(".history")
            .is_some_and(|t| t.len() == 8 && t.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The segment name of a spool file: `X` for `X` and `X.partial`.
fn segment_of(name: &str) -> &str {
    name.strip_suffix(".partial").unwrap_or(name)
}

/// archive-get's last resort for a file the archive does not hold: the receiver's spool, then
/// (an object-store repository) the open segment's part objects. A completed file not stored
/// yet is served as it is; the open segment (`X.partial`) is served padded with zeros to the
/// segment size, which recovery reads up to the end of valid WAL and then ends. Returns the
/// size written to `dest`, or None when neither has such a file.
pub fn serve_from_spool(
    repo: &Repository,
    db: &DbRecord,
    name: &str,
    dest: &Path,
) -> Result<Option<u64>, EngineError> {
    if repo.is_encrypted() || !is_stored_kind(name) {
        return Ok(None);
    }
    let dir = spool_dir(repo, db)?;
    let read = |p: &Path| match std::fs::read(p) {
        Ok(d) => Ok(Some(d)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(EngineError::io("read receive spool", p, e)),
    };
    let mut data = match read(&dir.join(name))? {
        Some(d) => d,
        None if is_segment_name(name) => match read(&dir.join(format!("{name}.partial")))? {
            Some(d) => d,
            None if repo.is_remote() => match parts::assemble(repo, db, name)? {
                Some(d) => d,
                None => return Ok(None),
            },
            None => return Ok(None),
        },
        None => return Ok(None),
    };
    // A segment file the stream created but wrote nothing into yet (zero-filled ahead of
    // the stream) holds no WAL: that is "not received", which recovery takes as the end of
    // the archive, not a damaged file that stops it.
    if data.get(..2).is_none_or(|magic| magic == [0, 0]) {
        return Ok(None);
    }
    if is_segment_name(name) {
        // The long page header gives the segment size; the stream sizes the file
        // to it already, but a compressed or truncated spool file may be shorter.
        if let Some(b) = data.get(32..36) {
            let seg = u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize;
            if seg.is_power_of_two() && data.len() < seg && seg <= 1 << 30 {
                data.resize(seg, 0);
            }
        }
    }
    check_wal_file(db, name, &data)?;
    super::write_aside(dest, &data)?;
    Ok(Some(data.len() as u64))
}

/// What the receiver tells its caller while it runs.
pub trait ReceiveLog {
    fn note(&mut self, line: &str);
}

/// Runs the receiver until SIGINT or SIGTERM (the stop flag): streams on a thread of its own
/// ([`stream`]), starts the stream again with backoff when the connection fails, makes the
/// spool durable and records the position every flush interval, stores completed segments.
/// Exits with the stream stopped and every completed segment stored.
pub fn receive(
    repo: &Repository,
    db: &DbRecord,
    opts: &ReceiveOptions,
    log: &mut dyn ReceiveLog,
) -> Result<(), EngineError> {
    let dir = spool_dir(repo, db)?;
    let _lock = lock_spool(&dir, db)?;
    let target = recman_pg::resolve_conninfo(opts.conninfo.as_deref())?;
    let segment_size = probe(&target, opts, db)?;
    let mut parts = match repo.is_remote() {
        true => Some(parts::PartStore::load(repo, db)?),
        false => None,
    };
    if let Some(p) = parts.as_mut() {
        for (key, e) in p.forget_stored(repo, db)? {
            log.note(&format!(
                "cannot remove received part {key}, left in place: {e}"
            ));
        }
    }
    let spec = stream::StreamSpec {
        dir: dir.clone(),
        target,
        slot: opts.slot.clone(),
        application_name: opts.application_name.clone(),
        mode: opts.mode,
        segment_size,
        system_identifier: db.system_identifier,
        status_every: opts.flush_interval.max(Duration::from_millis(100)),
    };
    let mut streamer = Streamer::new(spec);
    let shared = streamer.shared.clone();
    let mut next_flush = Instant::now();
    let mut next_store = Instant::now();
    let mut store = Storer::default();
    let result = loop {
        if crate::stop::requested().is_some() {
            break Ok(());
        }
        if let Err(e) = streamer.tend(log) {
            break Err(e);
        }
        // On an object store a completed segment's tail is only in the spool until it is
        // stored, so a position past it is recorded only after the store; on disk the spool
        // holds it durably, and the record does not wait for a store.
        // The position is read before that store, which then covers every segment completed
        // up to it.
        let remote = parts.is_some();
        let at = (Instant::now() >= next_flush).then(|| {
            next_flush = Instant::now() + opts.flush_interval;
            shared.get()
        });
        if remote {
            store.pass(repo, db, &dir, &opts.push, parts.as_mut(), log);
        }
        if let Some(at) = at {
            let stored_all = store.all_ok;
            flush_and_record(
                repo,
                db,
                opts,
                &dir,
                at,
                &shared,
                parts.as_mut(),
                stored_all,
                log,
            );
        }
        if !remote && Instant::now() >= next_store {
            next_store = Instant::now() + STORE_EVERY;
            store.pass(repo, db, &dir, &opts.push, None, log);
        }
        let wait = next_flush.saturating_duration_since(Instant::now());
        std::thread::sleep(wait.clamp(Duration::from_millis(10), TICK));
    };
    streamer.stop(log);
    // The stream wrote what it had into the page cache: make it durable before saying we
    // stopped.
    let _ = fsync_partials(&dir);
    if let Some(p) = parts.as_mut()
        && let Err(e) = partials(&dir).and_then(|open| p.upload(repo, db, &open))
    {
        log.note(&format!("cannot upload the open segment: {e}"));
    }
    store_completed(repo, db, &dir, &opts.push, &mut store.done, parts.as_mut())?;
    result
}

/// Takes the spool's lock: one receiver per database.
fn lock_spool(dir: &Path, db: &DbRecord) -> Result<std::fs::File, EngineError> {
    crate::util::create_private_dir(dir, "create receive spool")?;
    let lock = crate::util::open_lock_file(&dir.join(LOCK_FILE), "open receive lock")?;
    match lock.try_lock() {
        Ok(()) => Ok(lock),
        Err(std::fs::TryLockError::WouldBlock) => Err(EngineError::Busy(format!(
            "another recman receive is running for database {:?} (it holds {}); hint: one receiver per database; stop the other one first",
            db.name,
            dir.join(LOCK_FILE).display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => Err(EngineError::io("lock receive spool", dir, e)),
    }
}

/// The stream's thread, started again with backoff while it keeps ending.
struct Streamer {
    spec: stream::StreamSpec,
    shared: Arc<stream::Shared>,
    running: Option<(JoinHandle<Result<(), EngineError>>, Instant)>,
    backoff: Duration,
    next_start: Instant,
}

impl Streamer {
    fn new(spec: stream::StreamSpec) -> Streamer {
        Streamer {
            spec,
            shared: Arc::default(),
            running: None,
            backoff: Duration::from_secs(1),
            next_start: Instant::now(),
        }
    }

    /// Says why a stream that ended ended, and starts the next one when it is due. Fails only
    /// when no thread can be started.
    fn tend(&mut self, log: &mut dyn ReceiveLog) -> Result<(), EngineError> {
        if self.running.as_ref().is_some_and(|(h, _)| h.is_finished()) {
            let (h, started) = self.running.take().expect("checked above");
            let why = match h.join() {
                Ok(Ok(())) => "it stopped".to_string(),
                Ok(Err(e)) => e.to_string(),
                Err(_) => "its thread panicked".to_string(),
            };
            self.backoff = if started.elapsed() >= HEALTHY_RUN {
                Duration::from_secs(1)
            } else {
                (self.backoff * 2).min(MAX_BACKOFF)
            };
            log.note(&format!(
                "the stream from the primary ended ({why}); streaming again in {}s",
                self.backoff.as_secs()
            ));
            self.next_start = Instant::now() + self.backoff;
        }
        if self.running.is_none() && Instant::now() >= self.next_start {
            let (s, sh) = (self.spec.clone(), self.shared.clone());
            let h = std::thread::Builder::new()
                .name("recman-receive-stream".into())
                .spawn(move || stream::run(&s, &sh))
                .map_err(|e| EngineError::io("start the receive stream", &self.spec.dir, e))?;
            self.running = Some((h, Instant::now()));
        }
        Ok(())
    }

    /// Stops the stream; it writes what it holds into the spool first.
    fn stop(self, log: &mut dyn ReceiveLog) {
        self.shared.quit.store(true, Ordering::Relaxed);
        if let Some((h, _)) = self.running {
            match h.join() {
                Ok(Err(e)) => log.note(&format!("the stream from the primary ended: {e}")),
                Err(_) => log.note("the receive stream's thread panicked"),
                Ok(Ok(())) => {}
            }
        }
    }
}

/// Every flush interval: what the stream's position `at` (read first) names is made durable
/// (fsynced in async mode; the open segment uploaded on an object store), then it is recorded
/// in the catalog and reported to the primary as flushed.
#[allow(clippy::too_many_arguments)]
fn flush_and_record(
    repo: &Repository,
    db: &DbRecord,
    opts: &ReceiveOptions,
    dir: &Path,
    at: stream::Progress,
    shared: &stream::Shared,
    parts: Option<&mut parts::PartStore>,
    stored_all: bool,
    log: &mut dyn ReceiveLog,
) {
    if at.written == 0 {
        return;
    }
    if opts.mode == ReceiveMode::Async
        && let Err(e) = fsync_partials(dir)
    {
        log.note(&format!("{e}"));
        return;
    }
    let uploaded = match parts {
        Some(p) => match partials(dir).and_then(|open| p.upload(repo, db, &open)) {
            Ok(_) => true,
            Err(e) => {
                log.note(&format!("cannot record the receiver's position: {e}"));
                return;
            }
        },
        None => false,
    };
    if uploaded && !stored_all {
        return;
    }
    match record_position(repo, db, opts, at, uploaded) {
        Ok(flushed) => shared.flushed_to(flushed),
        Err(e) => log.note(&format!("cannot record the receiver's position: {e}")),
    }
}

/// Stores completed segments, remembering what it stored and saying each failure once a
/// minute.
#[derive(Default)]
struct Storer {
    done: HashSet<String>,
    said: std::collections::HashMap<String, Instant>,
    /// Whether the last pass stored every completed file.
    all_ok: bool,
}

impl Storer {
    fn pass(
        &mut self,
        repo: &Repository,
        db: &DbRecord,
        dir: &Path,
        push: &PushOptions,
        parts: Option<&mut parts::PartStore>,
        log: &mut dyn ReceiveLog,
    ) {
        self.all_ok = match store_completed(repo, db, dir, push, &mut self.done, parts) {
            Ok(r) => {
                for o in &r.stored {
                    if let ArchivePushOutcome::Archived { name, .. } = o {
                        log.note(&format!("stored wal file {name}"));
                    }
                }
                for (name, e) in &r.failed {
                    if self
                        .said
                        .get(name)
                        .is_none_or(|t| t.elapsed() >= Duration::from_secs(60))
                    {
                        self.said.insert(name.clone(), Instant::now());
                        log.note(&format!("could not store {name}, left in the spool: {e}"));
                    }
                }
                r.failed.is_empty()
            }
            Err(e) => {
                log.note(&format!("{e}"));
                false
            }
        };
    }
}

/// The first connection, before any stream: the server must be the database's, its segment
/// size is learnt, and the slot is created when asked. Its failure fails the command (no
/// retry): a wrong server or a refused login at start is a setting to fix, not a network cut.
fn probe(
    target: &recman_pg::ConnTarget,
    opts: &ReceiveOptions,
    db: &DbRecord,
) -> Result<u64, EngineError> {
    let mut conn = recman_pg::ReplicationConn::connect(target, &opts.application_name)?;
    let id = conn.identify_system()?;
    if id.system_identifier != db.system_identifier {
        return Err(crate::refusal::Cluster::ReceiveFromOtherDatabase {
            target: format!("{target:?}"),
            sysid: id.system_identifier,
            db: db.name.clone(),
            db_sysid: db.system_identifier,
        }
        .into());
    }
    let segment_size = conn.segment_size()?;
    if opts.create_slot {
        conn.create_physical_slot(&opts.slot)
            .map_err(|e| EngineError::Failed {
                kind: recman_error::ErrorKind::Transient,
                message: format!(
                    "cannot create replication slot {:?}: {e}; hint: the role needs the REPLICATION attribute and max_replication_slots a free slot",
                    opts.slot
                ),
            })?;
    }
    conn.close();
    Ok(segment_size)
}

/// Records where the receiver is, once what `at` names is durable: in sync mode the stream
/// fdatasynced it before saying so; in async mode the fsync after reading it covers it; with
/// an object store (`uploaded`) the open segment was uploaded after it was read. Returns the
/// position recorded as flushed.
fn record_position(
    repo: &Repository,
    db: &DbRecord,
    opts: &ReceiveOptions,
    at: stream::Progress,
    uploaded: bool,
) -> Result<u64, EngineError> {
    let flushed = match opts.mode {
        ReceiveMode::Sync if !uploaded => at.flushed,
        _ => at.written,
    };
    repo.catalog().set_receive_position(&ReceivePosition {
        db_id: db.id,
        timeline: at.timeline,
        received_lsn: at.written,
        flushed_lsn: flushed,
        updated_at: crate::util::now_micros(),
        mode: opts.mode.as_str().to_string(),
        slot: opts.slot.clone(),
    })?;
    Ok(flushed)
}

/// fsyncs every `.partial` file of the spool and the directory itself.
fn fsync_partials(dir: &Path) -> Result<(), EngineError> {
    for p in partials(dir)? {
        match std::fs::File::open(&p).and_then(|f| f.sync_all()) {
            Ok(()) => {}
            // Completed and renamed meanwhile: the stream fsynced it first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(EngineError::io("fsync receive spool", &p, e)),
        }
    }
    recman_media::disk::sync_dir(dir).map_err(|e| EngineError::io("fsync receive spool", dir, e))
}

/// The spool's open segments: the `.partial` files the stream is writing or left.
fn partials(dir: &Path) -> Result<Vec<PathBuf>, EngineError> {
    let rd = std::fs::read_dir(dir).map_err(|e| EngineError::io("read receive spool", dir, e))?;
    Ok(rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".partial"))
        .map(|e| e.path())
        .collect())
}

/// One database's exposure, for `report rpo`.
#[derive(Debug, Clone, PartialEq)]
pub struct RpoRow {
    pub db: String,
    /// The receiver's last record, None when no receiver ever ran for the database.
    pub position: Option<ReceivePosition>,
    /// The primary's current WAL position, when it was reachable.
    pub current_lsn: Option<u64>,
    /// WAL written on the primary but not durable in the repository, when the primary was
    /// reachable.
    pub exposure_bytes: Option<u64>,
    /// Seconds since the receiver last recorded its position.
    pub age_seconds: Option<f64>,
}

/// The receiver's exposure for each database of the repository (or the one `only` names).
/// The primary at `conninfo` is asked for its current position when its system identifier is
/// the database's; an unreachable primary leaves only the age.
pub fn rpo(
    repo: &Repository,
    only: Option<&str>,
    conninfo: Option<&str>,
    now_micros: i64,
) -> Result<Vec<RpoRow>, EngineError> {
    let cat = repo.catalog();
    let primary = recman_pg::resolve_conninfo(conninfo)
        .ok()
        .and_then(|t| recman_pg::Session::connect(&t).ok());
    let mut primary = primary;
    let mut rows = Vec::new();
    for db in cat.databases()? {
        if only.is_some_and(|n| n != db.name) {
            continue;
        }
        let position = cat.receive_position(db.id)?;
        let current_lsn = match &mut primary {
            Some(s) if s.system_identifier == db.system_identifier => s
                .simple_query("SELECT pg_current_wal_lsn()::text")
                .ok()
                .and_then(|r| r.into_iter().next())
                .and_then(|r| r.into_iter().next().flatten())
                .and_then(|t| t.parse::<recman_pg::Lsn>().ok())
                .map(|l| l.0),
            _ => None,
        };
        let exposure_bytes = match (&position, current_lsn) {
            (Some(p), Some(cur)) => Some(cur.saturating_sub(p.flushed_lsn)),
            _ => None,
        };
        let age_seconds = position
            .as_ref()
            .map(|p| (now_micros - p.updated_at).max(0) as f64 / 1e6);
        rows.push(RpoRow {
            db: db.name.clone(),
            position,
            current_lsn,
            exposure_bytes,
            age_seconds,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_segments_and_history_files_are_stored() {
        assert!(is_stored_kind("000000010000000000000003"));
        assert!(is_stored_kind("00000002.history"));
        assert!(!is_stored_kind("000000010000000000000003.partial"));
        assert!(!is_stored_kind("receive.log"));
        assert!(!is_stored_kind("receive.lock"));
        assert_eq!(
            segment_of("000000010000000000000003.partial"),
            "000000010000000000000003"
        );
    }
}
