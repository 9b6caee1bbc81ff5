//! A restored file open for writing. Aligned writes (nearly all of a data file: its chunks
//! start on page boundaries and hold whole pages) go out with O_DIRECT from an aligned bounce
//! buffer; the rest (a short file's tail, files of odd length) through the page cache.
//!
//! Why: on this machine class a buffered write costs several seconds of kernel CPU per GB
//! (page-cache pages allocated afresh, then written back by the final fsync), which makes
//! restore kernel-bound; a direct write costs a copy into the bounce buffer. The two kinds of
//! write never cover the same bytes of a file (each byte is written once, see `chain.rs`), and
//! the fsync at the file's end, on either descriptor, makes both durable: it flushes the
//! inode's cached pages and the device's write cache.
//!
//! The writes of a restore channel go through a [`FileWriter`]: a writer thread with a few
//! aligned output buffers, so the channel decompresses and checks the next chunk while the
//! last one is written, and the OUTPUT statistics count what the channel really waited for.

use super::dest::DestFile;
use crate::EngineError;
use crate::io::{ALIGN, AlignedBuf, IoCounters};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bytes the bounce buffer holds: one write.
const BOUNCE: usize = 1 << 20;

pub(super) struct OutFile {
    buffered: File,
    /// The same file with O_DIRECT; None where the file system refuses it (tmpfs).
    direct: Option<File>,
    pub(super) path: PathBuf,
}

fn open(path: &Path, flags: i32) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(flags)
        .open(path)
}

impl OutFile {
    /// Opens (creating it when missing, never truncating: several pieces and several backups
    /// of a chain write one file) `path`.
    pub(super) fn open(path: PathBuf) -> Result<OutFile, EngineError> {
        let buffered = open(&path, 0).map_err(|e| EngineError::io("create", &path, e))?;
        let direct = match open(&path, libc::O_DIRECT) {
            Ok(f) => Some(f),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => None,
            Err(e) => return Err(EngineError::io("open", &path, e)),
        };
        Ok(OutFile {
            buffered,
            direct,
            path,
        })
    }

    /// Writes `data` at `offset`; `bounce` is the caller's aligned buffer, made on first use
    /// when `data` itself is not aligned in memory.
    pub(super) fn write_at(
        &self,
        data: &[u8],
        offset: u64,
        bounce: &mut Option<AlignedBuf>,
    ) -> Result<(), EngineError> {
        let aligned = offset.is_multiple_of(ALIGN as u64) && data.len().is_multiple_of(ALIGN);
        let r = match &self.direct {
            Some(d) if aligned && data.as_ptr().align_offset(ALIGN) == 0 => {
                d.write_all_at(data, offset)
            }
            Some(d) if aligned && !data.is_empty() => {
                let b = bounce.get_or_insert_with(|| AlignedBuf::new(BOUNCE));
                let mut at = offset;
                data.chunks(BOUNCE).try_for_each(|part| {
                    let buf = &mut b.as_mut_slice()[..part.len()];
                    buf.copy_from_slice(part);
                    d.write_all_at(buf, at)?;
                    at += part.len() as u64;
                    Ok(())
                })
            }
            _ => self.buffered.write_all_at(data, offset),
        };
        r.map_err(|e| EngineError::io("write", &self.path, e))
    }

    /// Makes everything written to the file durable.
    pub(super) fn sync(&self) -> Result<(), EngineError> {
        self.buffered
            .sync_all()
            .map_err(|e| EngineError::io("sync", &self.path, e))
    }
}

enum Job {
    Write {
        file: Arc<dyn DestFile>,
        offset: u64,
        buf: AlignedBuf,
        len: usize,
    },
    Sync(Arc<dyn DestFile>),
}

/// The write phase of one restore channel: writes and file syncs, in the order given, on a
/// writer thread. The first failure stops it; the channel sees it at its next call.
pub(super) struct FileWriter {
    full: Option<SyncSender<Job>>,
    free: Receiver<AlignedBuf>,
    thread: Option<JoinHandle<Result<Duration, EngineError>>>,
    /// One write per chunk part handed over; READY when a free buffer was there, SHORT when
    /// one was after a yield, LONG when the channel blocked for it.
    pub counters: IoCounters,
}

/// Output buffers per restore channel.
const OUTPUT_BUFFERS: usize = 4;
/// A buffer's size unless a chunk needs more.
const OUTPUT_BUFFER: usize = 1 << 20;

impl FileWriter {
    pub(super) fn new() -> FileWriter {
        let (full, jobs) = sync_channel::<Job>(OUTPUT_BUFFERS);
        let (free_tx, free) = sync_channel::<AlignedBuf>(OUTPUT_BUFFERS);
        for _ in 0..OUTPUT_BUFFERS {
            free_tx
                .send(AlignedBuf::new(OUTPUT_BUFFER))
                .expect("room for every buffer");
        }
        let thread = std::thread::spawn(move || write_loop(jobs, free_tx));
        FileWriter {
            full: Some(full),
            free,
            thread: Some(thread),
            counters: IoCounters::default(),
        }
    }

    /// Queues `data` to be written to `file` at `offset`.
    pub(super) fn write(
        &mut self,
        file: &Arc<dyn DestFile>,
        offset: u64,
        data: &[u8],
    ) -> Result<(), EngineError> {
        let t = Instant::now();
        let mut buf = match self.free.try_recv() {
            Ok(b) => {
                self.counters.record_ready();
                b
            }
            Err(TryRecvError::Empty) => {
                std::thread::yield_now();
                match self.free.try_recv() {
                    Ok(b) => {
                        self.counters.record_short(t);
                        b
                    }
                    Err(TryRecvError::Empty) => {
                        let b = self.free.recv().map_err(|_| self.stopped())?;
                        self.counters.record_long(t);
                        b
                    }
                    Err(TryRecvError::Disconnected) => return Err(self.stopped()),
                }
            }
            Err(TryRecvError::Disconnected) => return Err(self.stopped()),
        };
        if buf.capacity() < data.len() {
            buf = AlignedBuf::new(data.len());
        }
        buf.as_mut_slice()[..data.len()].copy_from_slice(data);
        self.counters.io_count += 1;
        self.counters.bytes += data.len() as u64;
        self.send(Job::Write {
            file: Arc::clone(file),
            offset,
            buf,
            len: data.len(),
        })
    }

    /// Queues a sync of `file`: after the writes queued before it.
    pub(super) fn sync(&mut self, file: &Arc<dyn DestFile>) -> Result<(), EngineError> {
        self.send(Job::Sync(Arc::clone(file)))
    }

    fn send(&mut self, job: Job) -> Result<(), EngineError> {
        let tx = self.full.as_ref().expect("open until finish");
        tx.send(job).map_err(|_| self.stopped())
    }

    /// The writer thread's error, once it has stopped.
    fn stopped(&mut self) -> EngineError {
        match self.thread.take().map(|h| h.join()) {
            Some(Ok(Err(e))) => e,
            _ => EngineError::Internal(
                "the restore writer thread stopped; hint: this is a bug, report it".into(),
            ),
        }
    }

    /// Waits for every queued write and sync; returns the statistics of the writes.
    pub(super) fn finish(mut self) -> Result<IoCounters, EngineError> {
        self.full.take();
        let io_time = match self.thread.take().map(|h| h.join()) {
            Some(Ok(r)) => r?,
            _ => {
                return Err(EngineError::Internal(
                    "the restore writer thread panicked; hint: this is a bug, report it".into(),
                ));
            }
        };
        self.counters.io_time = io_time;
        Ok(std::mem::take(&mut self.counters))
    }
}

impl Drop for FileWriter {
    fn drop(&mut self) {
        // A channel that fails still waits for its writer, so no write lands after the
        // command has reported.
        self.full.take();
        if let Some(h) = self.thread.take() {
            let _ = h.join();
        }
    }
}

fn write_loop(jobs: Receiver<Job>, free: SyncSender<AlignedBuf>) -> Result<Duration, EngineError> {
    let mut io_time = Duration::ZERO;
    let mut bounce = None;
    for job in jobs {
        let t = Instant::now();
        match job {
            Job::Write {
                file,
                offset,
                buf,
                len,
            } => {
                file.write_at(&buf.as_slice()[..len], offset, &mut bounce)?;
                io_time += t.elapsed();
                // The channel may have stopped taking buffers back.
                let _ = free.try_send(buf);
            }
            Job::Sync(file) => {
                file.sync()?;
                io_time += t.elapsed();
            }
        }
    }
    Ok(io_time)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_unaligned_writes_land_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let out = OutFile::open(p.clone()).unwrap();
        let mut bounce = None;
        let a: Vec<u8> = (0..(3 << 20) / 2).map(|i| (i % 253) as u8).collect();
        // Aligned, larger than the bounce buffer; then an odd tail after it; then a hole
        // filled last, as a chain's older backup fills what newer ones left.
        out.write_at(&a, 8192, &mut bounce).unwrap();
        let tail = b"odd length tail";
        let end = 8192 + a.len() as u64;
        out.write_at(tail, end, &mut bounce).unwrap();
        out.write_at(&[7u8; 8192], 0, &mut bounce).unwrap();
        out.sync().unwrap();
        let back = std::fs::read(&p).unwrap();
        assert_eq!(back.len() as u64, end + tail.len() as u64);
        assert!(back[..8192].iter().all(|&b| b == 7));
        assert!(back[8192..end as usize] == a[..]);
        assert_eq!(&back[end as usize..], tail);
    }
}
