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

use crate::EngineError;
use crate::io::{ALIGN, AlignedBuf};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Bytes the bounce buffer holds: one write.
const BOUNCE: usize = 1 << 20;

pub(super) struct OutFile {
    buffered: File,
    /// The same file with O_DIRECT; None where the file system refuses it (tmpfs).
    direct: Option<File>,
    /// CRC-32C of what the current piece gave this file so far.
    pub(super) crc: u32,
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
            crc: 0,
            path,
        })
    }

    /// Writes `data` at `offset`; `bounce` is the caller's aligned buffer, made on first use.
    pub(super) fn write_at(
        &self,
        data: &[u8],
        offset: u64,
        bounce: &mut Option<AlignedBuf>,
    ) -> Result<(), EngineError> {
        let aligned = offset.is_multiple_of(ALIGN as u64) && data.len().is_multiple_of(ALIGN);
        let r = match &self.direct {
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
