//! `recman receive`: WAL streamed into the repository as the primary writes it, for an RPO of
//! seconds (async) or zero (sync), instead of archive-push's segment or archive_timeout.
//!
//! PostgreSQL's own streaming client, pg_receivewal, does the protocol: it runs as a child
//! process writing into a spool directory recman owns: `<repo>/receive/<db>/` inside a disk
//! repository, the same path under the local cache of an object-store one. There the open
//! segment is also uploaded as part objects every flush interval ([`parts`]), so the bucket
//! holds it when the receiver's host is lost too. A watcher loop here stores each segment pg_receivewal
//! completes (it renames `X.partial` to `X` once the segment is whole and fsynced) as the same
//! archived-WAL object and catalog record archive-push writes, so the two may run together:
//! the same segment from both is one object, checked equal. Until it completes, the open
//! segment stays in the spool as `X.partial`, and archive-get serves it from there, padded,
//! so a restore after the loss of the primary reaches the last received commit.
//!
//! Restart without a gap comes from the replication slot and the spool: pg_receivewal resumes
//! at the start of the spool's newest segment (or at the slot's restart point when the spool
//! is empty), and the slot keeps the primary from removing WAL the spool has not made durable.
//! So the newest completed segment is left in the spool until a later one exists, which keeps
//! that resume point local.

mod parts;

use super::batch::push_segments;
use super::check::check_wal_file;
use super::{ArchivePushOutcome, PushOptions, check_archived, file_crc, is_segment_name};
use crate::EngineError;
use recman_catalog::{DbRecord, ReceivePosition, Repository};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The spool's directory under a disk repository's root, one subdirectory per database.
pub const RECEIVE_DIR: &str = "receive";
const LOCK_FILE: &str = "receive.lock";
const LOG_FILE: &str = "pg_receivewal.log";
/// The longest wait between restarts of a pg_receivewal that keeps exiting.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A child that ran this long before exiting was healthy: the next restart is quick again.
const HEALTHY_RUN: Duration = Duration::from_secs(30);
const TICK: Duration = Duration::from_millis(200);

/// How the receiver makes received WAL durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiveMode {
    /// pg_receivewal --synchronous: fsync after each write and report the flush position at
    /// once, so a primary that names the receiver in synchronous_standby_names acknowledges a
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
    /// Async mode: how often the spool is fsynced and pg_receivewal reports its position.
    pub flush_interval: Duration,
    /// Where pg_receivewal is; None: next to the server's other programs.
    pub pg_bindir: Option<PathBuf>,
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
        return Err(EngineError::Invalid(format!(
            "cannot receive wal into repository {}: it is encrypted, and the receiver's spool would hold the open segment in plain text; hint: keep archive-push for an encrypted repository, or receive into a plain one",
            repo.location()
        )));
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
        for (i, r) in push_segments(repo, db, &work, push, work.len(), mac.as_deref(), None) {
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
    // The newest segment (complete or partial) stays: pg_receivewal resumes from it.
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
    // A segment file pg_receivewal created but wrote nothing into yet (zero-filled ahead of
    // the stream) holds no WAL: that is "not received", which recovery takes as the end of
    // the archive, not a damaged file that stops it.
    if data.get(..2).is_none_or(|magic| magic == [0, 0]) {
        return Ok(None);
    }
    if is_segment_name(name) {
        // The long page header gives the segment size; pg_receivewal preallocates the file
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

/// Runs the receiver until SIGINT or SIGTERM (the stop flag): starts pg_receivewal, restarts
/// it with backoff when it exits, stores completed segments, records the position. Exits with
/// the child killed and every completed segment stored.
pub fn receive(
    repo: &Repository,
    db: &DbRecord,
    opts: &ReceiveOptions,
    log: &mut dyn ReceiveLog,
) -> Result<(), EngineError> {
    let dir = spool_dir(repo, db)?;
    crate::util::create_private_dir(&dir, "create receive spool")?;
    let lock = crate::util::open_lock_file(&dir.join(LOCK_FILE), "open receive lock")?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(EngineError::Busy(format!(
                "another recman receive is running for database {:?} (it holds {}); hint: one receiver per database; stop the other one first",
                db.name,
                dir.join(LOCK_FILE).display()
            )));
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(EngineError::io("lock receive spool", &dir, e));
        }
    }
    let mut primary = Primary::connect(opts, db)?;
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
    let bin = find_receivewal(opts.pg_bindir.as_deref(), primary.major)?;
    if opts.create_slot {
        create_slot(&bin, opts)?;
    }
    let mut child: Option<(Child, Instant)> = None;
    let mut backoff = Duration::from_secs(1);
    let mut next_start = Instant::now();
    let mut next_flush = Instant::now();
    let mut done = HashSet::new();
    // A file that cannot be stored is tried on every pass; its error is said once a minute.
    let mut said: std::collections::HashMap<String, Instant> = Default::default();
    let result = loop {
        if crate::stop::requested().is_some() {
            break Ok(());
        }
        if let Some((c, started)) = &mut child {
            match c.try_wait() {
                Ok(Some(status)) => {
                    backoff = if started.elapsed() >= HEALTHY_RUN {
                        Duration::from_secs(1)
                    } else {
                        (backoff * 2).min(MAX_BACKOFF)
                    };
                    log.note(&format!(
                        "pg_receivewal exited ({status}); restarting it in {}s; its log is {}",
                        backoff.as_secs(),
                        dir.join(LOG_FILE).display()
                    ));
                    next_start = Instant::now() + backoff;
                    child = None;
                }
                Ok(None) => {}
                Err(e) => break Err(EngineError::io("wait for pg_receivewal", &bin, e)),
            }
        }
        if child.is_none() && Instant::now() >= next_start {
            // Another process streaming from the slot (an orphaned pg_receivewal of a receiver
            // killed where setpriv is missing) may be writing into the spool: leave the spool
            // alone and wait for it to go.
            let slot_active = primary
                .row(&format!(
                    "SELECT active::text FROM pg_replication_slots WHERE slot_name = '{}'",
                    opts.slot.replace('\'', "''")
                ))
                .ok()
                .and_then(|r| r.into_iter().next().flatten());
            if slot_active.as_deref() == Some("true") {
                backoff = (backoff * 2).min(MAX_BACKOFF);
                log.note(&format!(
                    "replication slot {:?} is in use by another process; trying again in {}s",
                    opts.slot,
                    backoff.as_secs()
                ));
                next_start = Instant::now() + backoff;
            } else {
                if slot_active.is_some()
                    && let Err(e) = drop_unwritten_partials(&dir, log)
                {
                    log.note(&format!("{e}"));
                }
                match start_child(&bin, &dir, opts) {
                    Ok(c) => child = Some((c, Instant::now())),
                    Err(e) => {
                        log.note(&format!("{e}"));
                        next_start = Instant::now() + backoff;
                    }
                }
            }
        }
        // Each flush interval the position is read first: then what it names is made durable
        // (fsynced, completed segments stored, the open one uploaded) before it is recorded.
        // Both positions are read before the fsync and the upload below, which then cover
        // what they name.
        let position = (Instant::now() >= next_flush).then(|| {
            next_flush = Instant::now() + opts.flush_interval;
            (read_position(&mut primary, opts), spool_position(&dir))
        });
        let mut synced = true;
        if position.is_some()
            && opts.mode == ReceiveMode::Async
            && let Err(e) = fsync_partials(&dir)
        {
            log.note(&format!("{e}"));
            synced = false;
        }
        let stored_all =
            match store_completed(repo, db, &dir, &opts.push, &mut done, parts.as_mut()) {
                Ok(r) => {
                    for o in &r.stored {
                        if let ArchivePushOutcome::Archived { name, .. } = o {
                            log.note(&format!("stored wal file {name}"));
                        }
                    }
                    for (name, e) in &r.failed {
                        if said
                            .get(name)
                            .is_none_or(|t| t.elapsed() >= Duration::from_secs(60))
                        {
                            said.insert(name.clone(), Instant::now());
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
        if let Some((reported, spool)) = position
            && synced
        {
            let reported = reported.unwrap_or_else(|e| {
                log.note(&format!(
                    "cannot read the receiver's position from the primary: {e}"
                ));
                None
            });
            let uploaded = match parts.as_mut() {
                Some(p) => partials(&dir)
                    .and_then(|open| p.upload(repo, db, &open))
                    .map(|_| true),
                None => Ok(false),
            };
            let recorded = match uploaded {
                Ok(uploaded) if stored_all || !uploaded => {
                    match Position::merge(reported, spool, opts.mode, uploaded) {
                        Some(at) => record_position(repo, db, opts, at, uploaded),
                        None => Ok(()),
                    }
                }
                Ok(_) => Ok(()),
                Err(e) => Err(e),
            };
            if let Err(e) = recorded {
                log.note(&format!("cannot record the receiver's position: {e}"));
            }
        }
        std::thread::sleep(TICK);
    };
    if let Some((mut c, _)) = child {
        let _ = c.kill();
        let _ = c.wait();
    }
    // What the child wrote is in the page cache: make it durable before saying we stopped.
    let _ = fsync_partials(&dir);
    if let Some(p) = parts.as_mut()
        && let Err(e) = partials(&dir).and_then(|open| p.upload(repo, db, &open))
    {
        log.note(&format!("cannot upload the open segment: {e}"));
    }
    store_completed(repo, db, &dir, &opts.push, &mut done, parts.as_mut())?;
    result
}

/// The primary, reconnected when the connection breaks.
struct Primary {
    target: recman_pg::ConnTarget,
    session: Option<recman_pg::Session>,
    major: u32,
}

impl Primary {
    fn connect(opts: &ReceiveOptions, db: &DbRecord) -> Result<Primary, EngineError> {
        let target = recman_pg::resolve_conninfo(opts.conninfo.as_deref())?;
        let session = recman_pg::Session::connect(&target)?;
        if session.system_identifier != db.system_identifier {
            return Err(EngineError::Invalid(format!(
                "the server at {} has system identifier {}, not database {:?}'s {}; nothing was received; hint: --target must name the registered cluster's primary",
                session.target(),
                session.system_identifier,
                db.name,
                db.system_identifier
            )));
        }
        let major = session.version_num / 10_000;
        Ok(Primary {
            target,
            session: Some(session),
            major,
        })
    }

    /// One row of SQL, reconnecting once when the connection was lost.
    fn row(&mut self, sql: &str) -> Result<Vec<Option<String>>, EngineError> {
        if self.session.is_none() {
            self.session = Some(recman_pg::Session::connect(&self.target)?);
        }
        let s = self.session.as_mut().expect("connected above");
        match s.simple_query(sql) {
            Ok(rows) => Ok(rows.into_iter().next().unwrap_or_default()),
            Err(e) => {
                self.session = None;
                Err(e.into())
            }
        }
    }
}

/// What pg_stat_replication says of the receiver: its write and flush positions and the
/// timeline. None when it is not streaming at the moment.
struct Position {
    write: u64,
    flush: u64,
    timeline: u32,
}

impl Position {
    /// What the primary reported, raised to what the spool shows written, where that is
    /// durable by the time it is recorded: in async mode (the fsync follows) and in an object
    /// store (the upload follows). In sync mode on disk the primary's flush position is
    /// current already, and without it nothing is recorded.
    fn merge(
        reported: Option<Position>,
        spool: Option<(u32, u64)>,
        mode: ReceiveMode,
        uploaded: bool,
    ) -> Option<Position> {
        let spool = spool.filter(|_| mode == ReceiveMode::Async || uploaded);
        match (reported, spool) {
            (Some(p), Some((tli, lsn))) if lsn > p.write => Some(Position {
                write: lsn,
                timeline: tli.max(p.timeline),
                ..p
            }),
            (Some(p), _) => Some(p),
            (None, Some((tli, lsn))) => Some(Position {
                write: lsn,
                flush: lsn,
                timeline: tli,
            }),
            (None, None) => None,
        }
    }
}

/// The position the spool itself shows written: the start of the last page pg_receivewal
/// wrote into the newest open segment (every byte before it is written; the page itself may
/// be part-way). pg_receivewal reports its own position once a second at most, so this is
/// the fresher of the two between reports.
fn spool_position(dir: &Path) -> Option<(u32, u64)> {
    use std::os::unix::fs::FileExt;
    let newest = partials(dir).ok()?.into_iter().max()?;
    let name = newest.file_name()?.to_string_lossy().into_owned();
    let seg_name = segment_of(&name);
    if !is_segment_name(seg_name) {
        return None;
    }
    let hex = |r: std::ops::Range<usize>| u64::from_str_radix(&seg_name[r], 16).ok();
    let (tli, log, seg) = (hex(0..8)?, hex(8..16)?, hex(16..24)?);
    let file = std::fs::File::open(&newest).ok()?;
    let (page, end) = parts::written_extent(&file).ok()??;
    let mut size = [0u8; 4];
    file.read_exact_at(&mut size, 32).ok()?;
    let seg_size = u64::from(u32::from_le_bytes(size));
    Some((tli as u32, (log << 32) + seg * seg_size + end - page))
}

fn read_position(
    primary: &mut Primary,
    opts: &ReceiveOptions,
) -> Result<Option<Position>, EngineError> {
    let app = opts.application_name.replace('\'', "''");
    // The timeline comes from pg_control, not pg_walfile_name, which a standby (a receiver
    // may stream from one) refuses during recovery.
    let row = primary.row(&format!(
        "SELECT write_lsn::text, flush_lsn::text,
                (SELECT lpad(to_hex(timeline_id), 8, '0') FROM pg_control_checkpoint())
         FROM pg_stat_replication WHERE application_name = '{app}' AND state = 'streaming'
         ORDER BY flush_lsn DESC NULLS LAST LIMIT 1"
    ))?;
    let lsn = |i: usize| {
        row.get(i)
            .cloned()
            .flatten()
            .and_then(|t| t.parse::<recman_pg::Lsn>().ok())
            .map(|l| l.0)
    };
    let (Some(write), Some(flush)) = (lsn(0), lsn(1)) else {
        return Ok(None);
    };
    let timeline = row
        .get(2)
        .cloned()
        .flatten()
        .and_then(|t| u32::from_str_radix(&t, 16).ok())
        .unwrap_or(0);
    Ok(Some(Position {
        write,
        flush,
        timeline,
    }))
}

/// Records where the receiver is, once what `at` names is durable: in sync mode the flush
/// position pg_receivewal reported; in async mode its write position, which the fsync after
/// reading it covers. With an object store (`uploaded`), the write position in either mode:
/// the open segment was uploaded after the position was read, so the bucket holds it.
fn record_position(
    repo: &Repository,
    db: &DbRecord,
    opts: &ReceiveOptions,
    at: Position,
    uploaded: bool,
) -> Result<(), EngineError> {
    let flushed = match opts.mode {
        ReceiveMode::Sync if !uploaded => at.flush,
        _ => at.write.max(at.flush),
    };
    repo.catalog().set_receive_position(&ReceivePosition {
        db_id: db.id,
        timeline: at.timeline,
        received_lsn: at.write.max(at.flush),
        flushed_lsn: flushed,
        updated_at: crate::util::now_micros(),
        mode: opts.mode.as_str().to_string(),
        slot: opts.slot.clone(),
    })?;
    Ok(())
}

/// Removes `.partial` files that hold nothing but zeros. pg_receivewal zero-fills a new
/// segment file to its full size before it writes WAL into it; killed in between (SIGKILL, a
/// full disk) it leaves a short file of zeros, which it then refuses to resume from ("should
/// be 0 or 16777216 bytes"). Such a file holds no WAL, so removing it loses nothing; a file
/// with any WAL in it is left alone.
fn drop_unwritten_partials(dir: &Path, log: &mut dyn ReceiveLog) -> Result<(), EngineError> {
    for p in partials(dir)? {
        let data = std::fs::read(&p).map_err(|e| EngineError::io("read receive spool", &p, e))?;
        if data.iter().all(|&b| b == 0) {
            std::fs::remove_file(&p).map_err(|e| EngineError::io("remove from spool", &p, e))?;
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            log.note(&format!(
                "removed {name} from the spool: pg_receivewal was stopped while preparing it, before any wal was written into it"
            ));
        }
    }
    Ok(())
}

/// fsyncs every `.partial` file of the spool and the directory itself.
fn fsync_partials(dir: &Path) -> Result<(), EngineError> {
    for p in partials(dir)? {
        match std::fs::File::open(&p).and_then(|f| f.sync_all()) {
            Ok(()) => {}
            // Completed and renamed meanwhile: pg_receivewal fsynced it first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(EngineError::io("fsync receive spool", &p, e)),
        }
    }
    recman_media::disk::sync_dir(dir).map_err(|e| EngineError::io("fsync receive spool", dir, e))
}

/// The spool's open segments: the `.partial` files pg_receivewal is writing or left.
fn partials(dir: &Path) -> Result<Vec<PathBuf>, EngineError> {
    let rd = std::fs::read_dir(dir).map_err(|e| EngineError::io("read receive spool", dir, e))?;
    Ok(rd
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".partial"))
        .map(|e| e.path())
        .collect())
}

/// pg_receivewal: in `bindir`, else next to the server's programs (Debian's layout), else on
/// PATH.
fn find_receivewal(bindir: Option<&Path>, major: u32) -> Result<PathBuf, EngineError> {
    const BIN: &str = "pg_receivewal";
    if let Some(d) = bindir {
        let p = d.join(BIN);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(EngineError::NotFound(format!(
                "{} does not exist; hint: --pg-bindir names the directory of the PostgreSQL {major} programs (pg_ctl, pg_receivewal)",
                p.display()
            )))
        };
    }
    let mut tried = vec![PathBuf::from(format!("/usr/lib/postgresql/{major}/bin"))];
    tried.extend(
        std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths),
    );
    tried
        .iter()
        .map(|d| d.join(BIN))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            EngineError::NotFound(format!(
                "pg_receivewal was found neither in /usr/lib/postgresql/{major}/bin nor on PATH; hint: install PostgreSQL {major}'s client programs or give --pg-bindir"
            ))
        })
}

/// The connection string pg_receivewal gets: the target's, with the application name.
fn conninfo_with_app(opts: &ReceiveOptions) -> String {
    let base = opts.conninfo.clone().unwrap_or_default();
    let app = &opts.application_name;
    if base.starts_with("postgres://") || base.starts_with("postgresql://") {
        let sep = if base.contains('?') { '&' } else { '?' };
        format!("{base}{sep}application_name={app}")
    } else {
        format!("{base} application_name={app}")
    }
}

fn create_slot(bin: &Path, opts: &ReceiveOptions) -> Result<(), EngineError> {
    let out = Command::new(bin)
        .args(["--create-slot", "--if-not-exists", "--slot", &opts.slot])
        .arg("--dbname")
        .arg(conninfo_with_app(opts))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| EngineError::io("run pg_receivewal --create-slot", bin, e))?;
    if out.status.success() {
        return Ok(());
    }
    Err(EngineError::Failed {
        kind: recman_error::ErrorKind::Transient,
        message: format!(
            "cannot create replication slot {:?} with {}: {}; hint: the role needs the REPLICATION attribute and max_replication_slots a free slot",
            opts.slot,
            bin.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    })
}

/// Starts pg_receivewal into `dir`. Through `setpriv --pdeathsig KILL` when the host has it,
/// so a recman killed with SIGKILL takes the child with it and the next receiver does not find
/// the slot held by an orphan.
fn start_child(bin: &Path, dir: &Path, opts: &ReceiveOptions) -> Result<Child, EngineError> {
    let setpriv = Path::new("/usr/bin/setpriv");
    let mut cmd = if setpriv.is_file() {
        let mut c = Command::new(setpriv);
        c.args(["--pdeathsig", "KILL"]).arg(bin);
        c
    } else {
        Command::new(bin)
    };
    cmd.arg("--directory")
        .arg(dir)
        .args(["--slot", &opts.slot, "--no-loop", "--verbose"])
        .arg("--dbname")
        .arg(conninfo_with_app(opts));
    match opts.mode {
        ReceiveMode::Sync => {
            cmd.arg("--synchronous");
        }
        ReceiveMode::Async => {
            let secs = opts.flush_interval.as_secs().max(1);
            cmd.args(["--status-interval", &secs.to_string()]);
        }
    }
    let log_path = dir.join(LOG_FILE);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| EngineError::io("open pg_receivewal log", &log_path, e))?;
    if log.metadata().map(|m| m.len() > 1 << 20).unwrap_or(false) {
        let _ = log.set_len(0);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log));
    cmd.spawn()
        .map_err(|e| EngineError::io("start pg_receivewal", bin, e))
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

    struct Quiet(Vec<String>);
    impl ReceiveLog for Quiet {
        fn note(&mut self, line: &str) {
            self.0.push(line.to_string());
        }
    }

    fn opts(conninfo: Option<&str>) -> ReceiveOptions {
        ReceiveOptions {
            mode: ReceiveMode::Sync,
            slot: "s".into(),
            create_slot: false,
            flush_interval: Duration::from_secs(1),
            pg_bindir: None,
            conninfo: conninfo.map(str::to_string),
            application_name: "recman_main".into(),
            push: PushOptions::new(recman_format::Compression::None),
        }
    }

    #[test]
    fn application_name_joins_either_conninfo_form() {
        assert_eq!(
            conninfo_with_app(&opts(Some("host=/tmp port=5432"))),
            "host=/tmp port=5432 application_name=recman_main"
        );
        assert_eq!(
            conninfo_with_app(&opts(Some("postgresql://u@h/db"))),
            "postgresql://u@h/db?application_name=recman_main"
        );
        assert_eq!(
            conninfo_with_app(&opts(Some("postgresql://u@h/db?sslmode=require"))),
            "postgresql://u@h/db?sslmode=require&application_name=recman_main"
        );
        assert_eq!(
            conninfo_with_app(&opts(None)),
            " application_name=recman_main"
        );
    }

    #[test]
    fn only_segments_and_history_files_are_stored() {
        assert!(is_stored_kind("000000010000000000000003"));
        assert!(is_stored_kind("00000002.history"));
        assert!(!is_stored_kind("000000010000000000000003.partial"));
        assert!(!is_stored_kind("pg_receivewal.log"));
        assert!(!is_stored_kind("receive.lock"));
        assert_eq!(
            segment_of("000000010000000000000003.partial"),
            "000000010000000000000003"
        );
    }

    #[test]
    fn the_spool_position_is_the_start_of_the_last_written_page_and_raises_async_only() {
        let dir = tempfile::tempdir().unwrap();
        let (page, seg) = (8192usize, 16usize << 20);
        let mut d = vec![0u8; seg];
        for i in 0..3 {
            d[i * page] = 0x10;
            d[i * page + 1] = 0xD1;
        }
        d[32..36].copy_from_slice(&(seg as u32).to_le_bytes());
        d[36..40].copy_from_slice(&(page as u32).to_le_bytes());
        std::fs::write(dir.path().join("000000010000000200000003.partial"), &d).unwrap();
        std::fs::write(dir.path().join("000000010000000200000002"), b"done").unwrap();
        let at = (2u64 << 32) + 3 * seg as u64 + 2 * page as u64;
        assert_eq!(spool_position(dir.path()), Some((1, at)));

        let reported = Position {
            write: at - 100,
            flush: at - 200,
            timeline: 1,
        };
        let merged = |mode, uploaded| {
            let p = Position { ..reported };
            Position::merge(Some(p), Some((1, at)), mode, uploaded).map(|p| p.write)
        };
        assert_eq!(merged(ReceiveMode::Async, false), Some(at));
        assert_eq!(merged(ReceiveMode::Sync, true), Some(at));
        assert_eq!(merged(ReceiveMode::Sync, false), Some(at - 100));
        assert!(Position::merge(None, Some((1, at)), ReceiveMode::Sync, false).is_none());
    }

    #[test]
    fn a_partial_of_zeros_is_removed_and_one_with_wal_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let zeros = dir.path().join("000000010000000000000003.partial");
        std::fs::write(&zeros, vec![0u8; 5 << 20]).unwrap();
        let mut written = vec![0u8; 1 << 20];
        written[0] = 0x10;
        let kept = dir.path().join("000000010000000000000004.partial");
        std::fs::write(&kept, &written).unwrap();
        let mut log = Quiet(Vec::new());
        drop_unwritten_partials(dir.path(), &mut log).unwrap();
        assert!(!zeros.exists(), "{:?}", log.0);
        assert!(kept.exists());
        assert_eq!(log.0.len(), 1, "{:?}", log.0);
    }
}
