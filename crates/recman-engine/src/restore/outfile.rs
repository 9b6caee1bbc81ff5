//! A restored file open for writing, one of two ways ([`WriteMode`]):
//! - **direct**: aligned writes (nearly all of a data file: its chunks start on page
//!   boundaries and hold whole pages) go out with O_DIRECT, from an aligned bounce buffer when
//!   the caller's is not aligned; the rest (a short file's tail, files of odd length) through
//!   the page cache. No page-cache pages are allocated and written back later, which on many
//!   disks costs the kernel more CPU than the copy (on one host of this machine class a
//!   buffered restore spent several seconds of kernel CPU per GB).
//! - **buffered**: every write through the page cache, and the file's writeback started at
//!   once for the range written (sync_file_range), so the disk works while the restore goes on
//!   and the writeback is done by this process (a cgroup's I/O limits hold it) rather than
//!   left for the kernel's flusher threads; a write then waits for the writeback of what was
//!   written [`BEHIND`] bytes before it, so dirty pages stay bounded. Where a disk's direct
//!   writes are slower than its buffered ones (some virtual and network disks), this is the
//!   faster way.
//!
//! A file opened for direct writes may take each write either way ([`OutFile::write_way`]):
//! an adaptive restore chooses turn by turn (`adapt.rs`).
//!
//! The two kinds of write never cover the same bytes of a file (each byte is written once, see
//! `chain.rs`), and an fsync, on either descriptor, makes both durable: it flushes the inode's
//! cached pages and the device's write cache. Which files are made durable when is the
//! destination's business (`dest.rs`): a restore on this host syncs them all, many at once,
//! before it reports done.

use crate::aligned::{ALIGN, AlignedBuf};
use crate::error::EngineError;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Bytes the bounce buffer holds: one write.
const BOUNCE: usize = 1 << 20;

/// How a restore writes its files' data: the way the chooser of `crate::adapt` names.
pub use crate::adapt::IoWay as WriteMode;

pub(super) struct OutFile {
    buffered: File,
    /// The same file with O_DIRECT; None in buffered mode and where the file system refuses
    /// it (tmpfs).
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
    /// of a chain write one file) `path`; `direct` asks for direct writes where they can be.
    pub(super) fn open(path: PathBuf, direct: bool) -> Result<OutFile, EngineError> {
        let buffered = open(&path, 0).map_err(|e| EngineError::io("create", &path, e))?;
        let direct = if !direct {
            None
        } else {
            match open(&path, libc::O_DIRECT) {
                Ok(f) => Some(f),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => None,
                Err(e) => return Err(EngineError::io("open", &path, e)),
            }
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
        self.write_way(data, offset, bounce, WriteMode::Direct)
            .map(|_| ())
    }

    /// Writes `data` at `offset` the way `way` says where the file and the write allow it
    /// (direct writes need the direct descriptor and aligned bytes); the way it went.
    pub(super) fn write_way(
        &self,
        data: &[u8],
        offset: u64,
        bounce: &mut Option<AlignedBuf>,
        way: WriteMode,
    ) -> Result<WriteMode, EngineError> {
        let aligned = offset.is_multiple_of(ALIGN as u64) && data.len().is_multiple_of(ALIGN);
        let direct = self
            .direct
            .as_ref()
            .filter(|_| way == WriteMode::Direct && aligned && !data.is_empty());
        let r = match direct {
            Some(d) if data.as_ptr().align_offset(ALIGN) == 0 => d.write_all_at(data, offset),
            Some(d) => {
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
            // A direct file's odd bytes (a short file's tail) go through the page cache and
            // are left to the file's sync: too few to be worth a writeback of their own.
            None if self.direct.is_some() && way == WriteMode::Direct => {
                self.buffered.write_all_at(data, offset)
            }
            None => self
                .buffered
                .write_all_at(data, offset)
                .and_then(|()| start_writeback(&self.buffered, offset, data.len()))
                .and_then(|()| wait_behind(&self.buffered, offset, data.len())),
        };
        r.map_err(|e| EngineError::io("write", &self.path, e))?;
        Ok(if direct.is_some() {
            WriteMode::Direct
        } else {
            WriteMode::Buffered
        })
    }

    /// Makes everything written to the file durable.
    pub(super) fn sync(&self) -> Result<(), EngineError> {
        self.buffered
            .sync_all()
            .map_err(|e| EngineError::io("sync", &self.path, e))
    }

    /// A second descriptor of the file, to sync it later.
    pub(super) fn handle(&self) -> Result<File, EngineError> {
        self.buffered
            .try_clone()
            .map_err(|e| EngineError::io("open", &self.path, e))
    }
}

/// Starts the writeback of `len` bytes at `offset` without waiting for it. Not a durability
/// step (the file's fsync is): a file system that does not support it is not an error.
fn start_writeback(f: &File, offset: u64, len: usize) -> std::io::Result<()> {
    sync_range(f, offset, len, libc::SYNC_FILE_RANGE_WRITE)
}

/// Bytes of a file a buffered write may leave behind it still being written back: its writer
/// waits for the writeback of what it wrote this far back. The dirty pages of a restore stay
/// bounded (a restore of tens of gigabytes otherwise fills the page cache and leaves most of
/// its writing to the final fsyncs), and a buffered write's time is what the disk takes, which
/// the adaptive choice of the way to write compares (`adapt.rs`).
const BEHIND: u64 = 16 << 20;

/// Waits until the writeback of the `len` bytes [`BEHIND`] before `offset` is done (started by
/// an earlier [`start_writeback`]). Not a durability step either.
fn wait_behind(f: &File, offset: u64, len: usize) -> std::io::Result<()> {
    let Some(at) = offset.checked_sub(BEHIND) else {
        return Ok(());
    };
    sync_range(
        f,
        at,
        len,
        libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER,
    )
}

/// sync_file_range(2) of `len` bytes at `offset` with `flags`; a file system (or file) that
/// does not support it is not an error, since neither caller is a durability step.
fn sync_range(f: &File, offset: u64, len: usize, flags: libc::c_uint) -> std::io::Result<()> {
    // SAFETY: sync_file_range reads only its integer arguments and the descriptor, which `f`
    // keeps open for the call.
    let rc = unsafe {
        libc::sync_file_range(
            f.as_raw_fd(),
            offset as libc::off64_t,
            len as libc::off64_t,
            flags,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOSYS | libc::EINVAL | libc::ESPIPE | libc::EOPNOTSUPP) => Ok(()),
        _ => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_unaligned_writes_land_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let out = OutFile::open(p.clone(), true).unwrap();
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

    #[test]
    fn writes_that_alternate_ways_past_the_writeback_window_land_in_place() {
        // An adaptive restore sends one file's writes both ways; a file longer than the window
        // makes buffered writes wait for the writeback behind them.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let out = OutFile::open(p.clone(), true).unwrap();
        let mut bounce = None;
        let chunk = 1usize << 20;
        let n = (BEHIND as usize / chunk) * 2 + 3;
        let mut ways = Vec::new();
        for i in 0..n {
            let data = vec![(i % 251) as u8; chunk];
            let way = if i % 3 == 0 {
                WriteMode::Buffered
            } else {
                WriteMode::Direct
            };
            ways.push(
                out.write_way(&data, (i * chunk) as u64, &mut bounce, way)
                    .unwrap(),
            );
        }
        // Where the file system takes direct writes, each went the way asked.
        if out.direct.is_some() {
            assert!(
                ways.iter()
                    .enumerate()
                    .all(|(i, w)| (*w == WriteMode::Buffered) == (i % 3 == 0))
            );
        }
        out.sync().unwrap();
        let back = std::fs::read(&p).unwrap();
        assert_eq!(back.len(), n * chunk);
        for (i, c) in back.chunks(chunk).enumerate() {
            assert!(c.iter().all(|&b| b == (i % 251) as u8), "chunk {i}");
        }
    }
}
