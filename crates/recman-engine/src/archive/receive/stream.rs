//! The receiver's stream: one physical replication connection writing the spool in the layout
//! the rest of the receiver reads (and pg_receivewal writes): `X.partial` while segment `X`
//! is open, sized to the segment and written in place; renamed to `X` once whole and
//! fsynced; a history file for each timeline after the first.
//!
//! It runs on a thread of its own and shares where it is through [`Progress`]. In sync mode
//! each batch of WAL is fdatasynced and reported flushed before the next read, so a primary
//! that names the receiver in synchronous_standby_names acknowledges a commit only once its
//! WAL is durable in the spool. In async mode the stream reads what has queued in the socket
//! every few milliseconds and writes it in batches; the watcher fsyncs the spool every flush
//! interval and records the position, which the stream then reports as flushed.

use super::{ReceiveMode, is_segment_name, segment_of};
use crate::error::EngineError;
use recman_pg::{ConnTarget, CopyMessage, ReplicationConn, WalName};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The longest one read waits, so that a stop is seen within it.
const READ_WAIT: Duration = Duration::from_millis(100);
/// Async mode: a read that brought less than this means the primary is not streaming at full
/// speed, so the stream lets WAL queue in the socket for [`ASYNC_PAUSE`] before the next one.
const QUIET_READ: usize = 64 * 1024;
const ASYNC_PAUSE: Duration = Duration::from_millis(20);
/// Async mode: WAL held in memory is written into the spool at least this often...
const WRITE_EVERY: Duration = Duration::from_millis(100);
/// ... or once this much is held.
const WRITE_AT: usize = 1 << 20;

/// Where the stream is, shared with the watcher.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct Progress {
    /// Written into the spool (in sync mode also fdatasynced) up to here.
    pub written: u64,
    /// Durable up to here, as the watcher (async) or the stream (sync) made it.
    pub flushed: u64,
    pub timeline: u32,
}

/// What the stream and the watcher share.
#[derive(Default)]
pub(super) struct Shared {
    pub progress: Mutex<Progress>,
    /// Set by the watcher when the receiver stops.
    pub quit: AtomicBool,
}

impl Shared {
    pub fn get(&self) -> Progress {
        *self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut Progress)) {
        f(&mut self.progress.lock().unwrap_or_else(|p| p.into_inner()));
    }

    /// The watcher made the spool durable up to `lsn`.
    pub fn flushed_to(&self, lsn: u64) {
        self.update(|p| p.flushed = p.flushed.max(lsn));
    }

    fn stopping(&self) -> bool {
        self.quit.load(Ordering::Relaxed) || crate::stop::requested().is_some()
    }
}

/// What a stream needs, fixed for the receiver's life.
#[derive(Clone)]
pub(super) struct StreamSpec {
    pub dir: PathBuf,
    pub target: ConnTarget,
    pub slot: String,
    pub application_name: String,
    pub mode: ReceiveMode,
    pub segment_size: u64,
    pub system_identifier: u64,
    /// How often the position is reported to the primary at least.
    pub status_every: Duration,
}

/// Streams until a stop (Ok) or until the connection fails (Err: the watcher starts another
/// stream after a pause). What was received is in the spool either way.
pub(super) fn run(spec: &StreamSpec, shared: &Shared) -> Result<(), EngineError> {
    let mut conn = ReplicationConn::connect(&spec.target, &spec.application_name)?;
    let id = conn.identify_system()?;
    if id.system_identifier != spec.system_identifier {
        return Err(EngineError::Failed {
            kind: recman_error::ErrorKind::InvalidInput,
            message: format!(
                "the server at {:?} streams system {} but the database's is {}; nothing was received; hint: the receiver's conninfo must name the registered cluster's primary",
                spec.target, id.system_identifier, spec.system_identifier
            ),
        });
    }
    let seg = spec.segment_size;
    let (mut tli, mut start) = match streaming_start(&spec.dir, seg)? {
        Some(p) => p,
        // An empty spool: the slot's restart point, where the server can say (15 and later),
        // else the server's current position.
        None => {
            let restart = conn.slot_restart(&spec.slot)?;
            (id.timeline, restart.unwrap_or(id.position))
        }
    };
    let mut w = Writer::new(&spec.dir, seg);
    loop {
        // Always from the start of a segment, as a resumed segment is written again whole.
        start -= start % seg;
        if tli > 1 {
            ensure_history(&mut conn, &spec.dir, tli)?;
        }
        conn.start_replication(&spec.slot, start, tli)?;
        shared.update(|p| p.timeline = tli);
        let ended = stream_timeline(&mut conn, spec, shared, &mut w, tli);
        // Whatever ended the stream, what was received goes into the spool.
        let kept = w.close_partial();
        let timeline_done = ended?;
        kept?;
        if !timeline_done {
            conn.close();
            return Ok(());
        }
        match conn.end_timeline()? {
            Some((next, pos)) => {
                tli = next;
                start = pos;
            }
            None => {
                return Err(EngineError::Failed {
                    kind: recman_error::ErrorKind::Transient,
                    message: format!(
                        "the server at {:?} ended the stream of timeline {tli} without naming the next one; hint: it is shutting down; the receiver connects again",
                        spec.target
                    ),
                });
            }
        }
    }
}

/// Streams one timeline. Returns true when the server ended it (a promotion), false on a
/// stop.
fn stream_timeline(
    conn: &mut ReplicationConn,
    spec: &StreamSpec,
    shared: &Shared,
    w: &mut Writer,
    tli: u32,
) -> Result<bool, EngineError> {
    let mut last_status: Option<Instant> = None;
    let mut last_write = Instant::now();
    loop {
        if shared.stopping() {
            w.write_pending()?;
            let p = shared.get();
            let _ = conn.send_status(w.written_end, p.flushed, crate::util::now_micros());
            return Ok(false);
        }
        let n = conn.fill(READ_WAIT)?;
        let mut reply = false;
        let mut got = false;
        while let Some(m) = conn.next_copy()? {
            match m {
                CopyMessage::Data { start, data } => {
                    w.put(tli, start, &data)?;
                    got = true;
                }
                CopyMessage::Keepalive { reply: r, .. } => reply |= r,
                CopyMessage::Done => return Ok(true),
            }
        }
        let now = Instant::now();
        let status_due = last_status.is_none_or(|t| now.duration_since(t) >= spec.status_every);
        match spec.mode {
            ReceiveMode::Sync => {
                if got {
                    w.write_pending()?;
                    w.sync()?;
                    let end = w.written_end;
                    // A resumed segment is written again from its start: never back.
                    shared.update(|p| {
                        p.written = p.written.max(end);
                        p.flushed = p.flushed.max(end);
                    });
                }
                if got || reply || status_due {
                    conn.send_status(w.written_end, w.written_end, crate::util::now_micros())?;
                    last_status = Some(now);
                }
            }
            ReceiveMode::Async => {
                if w.pending.len() >= WRITE_AT || now.duration_since(last_write) >= WRITE_EVERY {
                    w.write_pending()?;
                    last_write = now;
                    let end = w.written_end;
                    shared.update(|p| p.written = p.written.max(end));
                }
                if reply || status_due {
                    let p = shared.get();
                    conn.send_status(w.written_end, p.flushed, crate::util::now_micros())?;
                    last_status = Some(now);
                }
                if n < QUIET_READ {
                    std::thread::sleep(ASYNC_PAUSE);
                }
            }
        }
    }
}

/// Where to resume from the spool: after its newest complete segment, or at the start of its
/// newest open one (written again whole). None when it holds no segment.
fn streaming_start(dir: &Path, seg: u64) -> Result<Option<(u32, u64)>, EngineError> {
    let per_log = 0x1_0000_0000 / seg;
    let mut best: Option<(u64, u32, bool)> = None;
    for e in std::fs::read_dir(dir).map_err(|e| EngineError::io("read receive spool", dir, e))? {
        let Ok(e) = e else { continue };
        let name = e.file_name().to_string_lossy().into_owned();
        let base = segment_of(&name);
        if !is_segment_name(base) {
            continue;
        }
        let hex = |r: std::ops::Range<usize>| u64::from_str_radix(&base[r], 16).unwrap_or(0);
        let (tli, segno) = (hex(0..8) as u32, hex(8..16) * per_log + hex(16..24));
        let complete = base.len() == name.len();
        if best.is_none_or(|(s, t, _)| (segno, tli) > (s, t)) {
            best = Some((segno, tli, complete));
        }
    }
    Ok(best.map(|(segno, tli, complete)| (tli, (segno + u64::from(complete)) * seg)))
}

/// Writes timeline `tli`'s history file into the spool when it is not there.
fn ensure_history(conn: &mut ReplicationConn, dir: &Path, tli: u32) -> Result<(), EngineError> {
    let name = format!("{tli:08X}.history");
    if dir.join(&name).exists() {
        return Ok(());
    }
    let (_, content) = conn.timeline_history(tli)?;
    let tmp = dir.join(format!("{name}.tmp"));
    std::fs::write(&tmp, &content)
        .and_then(|_| File::open(&tmp)?.sync_all())
        .and_then(|_| std::fs::rename(&tmp, dir.join(&name)))
        .map_err(|e| EngineError::io("write timeline history into the spool", &tmp, e))?;
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), EngineError> {
    recman_media::disk::sync_dir(dir).map_err(|e| EngineError::io("fsync receive spool", dir, e))
}

/// The open segment file and the WAL received but not yet written into it.
struct Writer {
    dir: PathBuf,
    seg: u64,
    open: Option<OpenSegment>,
    pending: Vec<u8>,
    /// The position of `pending`'s first byte.
    pending_at: u64,
    /// Written into the spool up to here.
    written_end: u64,
}

struct OpenSegment {
    segno: u64,
    tli: u32,
    name: String,
    file: File,
}

impl Writer {
    fn new(dir: &Path, seg: u64) -> Writer {
        Writer {
            dir: dir.to_path_buf(),
            seg,
            open: None,
            pending: Vec::with_capacity(WRITE_AT),
            pending_at: 0,
            written_end: 0,
        }
    }

    fn put(&mut self, tli: u32, mut pos: u64, mut rest: &[u8]) -> Result<(), EngineError> {
        while !rest.is_empty() {
            let segno = pos / self.seg;
            let same = self
                .open
                .as_ref()
                .is_some_and(|o| o.segno == segno && o.tli == tli);
            if !same || self.pending_at + self.pending.len() as u64 != pos {
                self.write_pending()?;
            }
            if !same {
                if let Some(o) = self.open.take() {
                    o.file
                        .sync_all()
                        .map_err(|e| EngineError::io("fsync receive spool", self.path(&o), e))?;
                }
                self.open = Some(self.create(tli, segno)?);
            }
            if self.pending.is_empty() {
                self.pending_at = pos;
            }
            let room = (segno + 1) * self.seg - pos;
            let take = room.min(rest.len() as u64) as usize;
            self.pending.extend_from_slice(&rest[..take]);
            pos += take as u64;
            rest = &rest[take..];
            if pos.is_multiple_of(self.seg) {
                self.write_pending()?;
                self.complete()?;
            }
        }
        Ok(())
    }

    fn path(&self, o: &OpenSegment) -> PathBuf {
        self.dir.join(format!("{}.partial", o.name))
    }

    /// Opens (or creates, sized to the segment and durable in the directory) the spool file
    /// of segment `segno`.
    fn create(&self, tli: u32, segno: u64) -> Result<OpenSegment, EngineError> {
        let name = WalName {
            timeline: tli,
            segno,
            seg_size: self.seg,
        }
        .to_string();
        let path = self.dir.join(format!("{name}.partial"));
        let err = |e| EngineError::io("open segment in the receive spool", &path, e);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(err)?;
        if file.metadata().map_err(err)?.len() != self.seg {
            file.set_len(self.seg).map_err(err)?;
            file.sync_all().map_err(err)?;
            sync_dir(&self.dir)?;
        }
        Ok(OpenSegment {
            segno,
            tli,
            name,
            file,
        })
    }

    fn write_pending(&mut self) -> Result<(), EngineError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let o = self.open.as_ref().expect("pending WAL has an open segment");
        o.file
            .write_all_at(&self.pending, self.pending_at % self.seg)
            .map_err(|e| EngineError::io("write into the receive spool", self.path(o), e))?;
        self.written_end = self.pending_at + self.pending.len() as u64;
        self.pending_at = self.written_end;
        self.pending.clear();
        Ok(())
    }

    fn sync(&self) -> Result<(), EngineError> {
        match &self.open {
            Some(o) => o
                .file
                .sync_data()
                .map_err(|e| EngineError::io("fsync receive spool", self.path(o), e)),
            None => Ok(()),
        }
    }

    /// The open segment is whole: fsynced, then renamed to its own name.
    fn complete(&mut self) -> Result<(), EngineError> {
        let Some(o) = self.open.take() else {
            return Ok(());
        };
        let from = self.path(&o);
        o.file
            .sync_all()
            .map_err(|e| EngineError::io("fsync receive spool", &from, e))?;
        std::fs::rename(&from, self.dir.join(&o.name))
            .map_err(|e| EngineError::io("complete segment in the receive spool", &from, e))?;
        sync_dir(&self.dir)
    }

    /// The stream ended mid-segment: what was received is written and fsynced, and the file
    /// keeps its `.partial` name (the next stream resumes there, or, after a promotion, the
    /// old timeline's file stays partial as on the promoted server).
    fn close_partial(&mut self) -> Result<(), EngineError> {
        self.write_pending()?;
        match self.open.take() {
            Some(o) => o
                .file
                .sync_all()
                .map_err(|e| EngineError::io("fsync receive spool", self.path(&o), e)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resumes_after_the_newest_complete_segment_or_at_the_newest_open_one() {
        let d = tempfile::tempdir().unwrap();
        let seg = 16u64 << 20;
        assert_eq!(streaming_start(d.path(), seg).unwrap(), None);
        std::fs::write(d.path().join("000000010000000000000003"), b"").unwrap();
        std::fs::write(d.path().join("00000001.history"), b"").unwrap();
        assert_eq!(streaming_start(d.path(), seg).unwrap(), Some((1, 4 * seg)));
        std::fs::write(d.path().join("000000020000000100000004.partial"), b"").unwrap();
        assert_eq!(
            streaming_start(d.path(), seg).unwrap(),
            Some((2, (256 + 4) * seg))
        );
    }

    #[test]
    fn wal_crossing_a_segment_end_completes_the_segment_and_opens_the_next() {
        let d = tempfile::tempdir().unwrap();
        let seg = 1u64 << 20;
        let mut w = Writer::new(d.path(), seg);
        w.put(1, seg - 3, b"abcdef").unwrap();
        w.write_pending().unwrap();
        let first = std::fs::read(d.path().join("000000010000000000000000")).unwrap();
        assert_eq!(first.len() as u64, seg);
        assert_eq!(&first[first.len() - 3..], b"abc");
        let open = std::fs::read(d.path().join("000000010000000000000001.partial")).unwrap();
        assert_eq!(&open[..3], b"def");
        assert_eq!(w.written_end, seg + 3);
        w.close_partial().unwrap();
        assert!(d.path().join("000000010000000000000001.partial").exists());
    }
}
