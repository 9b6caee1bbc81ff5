//! Page validation on the read path: every page of a relation file is checked as it passes
//! through a channel. A page that fails is read again, because PostgreSQL may be writing it
//! at that very moment; only a page that still fails, and that is older than the backup
//! start, counts as corrupt.

use crate::read_at::ReadAt;
use recman_catalog::CorruptBlock;
use recman_page::{BLCKSZ, PageFault, RelFile};

const REREADS: usize = 3;

#[derive(Debug, Default, Clone)]
pub struct PageVerdicts {
    /// Pages that failed while being written by the server; WAL replay repairs them.
    pub volatile: Vec<u32>,
    pub corrupt: Vec<(u32, PageFault)>,
}

/// How to judge the pages of one relation file.
#[derive(Clone, Copy)]
pub struct PageRules<'a> {
    pub relfile: &'a RelFile,
    pub checksums: bool,
    /// Pages at or past this LSN are being rewritten by WAL replay anyway.
    pub start_lsn: Option<u64>,
    /// Blocks already known to be volatile or corrupt.
    pub skip: &'a [u32],
    /// CHECK LOGICAL: heap and B-tree pages of main forks are checked inside as well.
    pub logical: bool,
}

impl PageRules<'_> {
    fn verify(&self, page: &[u8], blkno: u32) -> Result<(), PageFault> {
        let logical = self.logical && self.relfile.fork == recman_page::Fork::Main;
        recman_page::verify_page_ext(page, blkno, self.checksums, logical)
    }
}

/// Checks the whole pages of `buf`, which holds the file's bytes at `file_offset`
/// (a multiple of BLCKSZ). With `file`, failing pages are re-read and a passing re-read
/// replaces the page in `buf`; without it (a backup being validated) no re-read is possible.
pub fn check_chunk(
    file: Option<&dyn ReadAt>,
    rules: &PageRules,
    file_offset: u64,
    buf: &mut [u8],
    out: &mut PageVerdicts,
) -> std::io::Result<()> {
    let PageRules {
        relfile,
        start_lsn,
        skip,
        ..
    } = *rules;
    let first = relfile.first_block() as u64 + file_offset / BLCKSZ as u64;
    for (i, page) in buf.chunks_exact_mut(BLCKSZ).enumerate() {
        let blkno = (first + i as u64) as u32;
        let Err(fault) = rules.verify(page, blkno) else {
            continue;
        };
        if skip.contains(&blkno) {
            continue;
        }
        let newer = |p: &[u8]| start_lsn.is_some_and(|s| recman_page::page_lsn(p) >= s);
        let mut is_volatile = newer(page);
        let mut last_fault = fault;
        let mut passed = false;
        if let Some(f) = file {
            // Aligned, because the file may be open with O_DIRECT.
            let mut again_buf = crate::aligned::AlignedBuf::new(BLCKSZ);
            let again = again_buf.as_mut_slice();
            let at = file_offset + (i * BLCKSZ) as u64;
            for _ in 0..REREADS {
                let n = read_full_at(f, again, at)?;
                if n < BLCKSZ {
                    // Truncated meanwhile (VACUUM): replay restores the right length.
                    is_volatile = true;
                    break;
                }
                match rules.verify(again, blkno) {
                    Ok(()) => {
                        page.copy_from_slice(again);
                        passed = true;
                        break;
                    }
                    Err(f2) => {
                        is_volatile |= newer(again) || *again != *page;
                        last_fault = f2;
                    }
                }
            }
        }
        if passed {
            continue;
        }
        if is_volatile && start_lsn.is_some() {
            out.volatile.push(blkno);
        } else {
            out.corrupt.push((blkno, last_fault));
        }
    }
    Ok(())
}

/// As [`check_chunk`] for pages read back from a piece (validation): nothing to re-read, so
/// nothing in `buf` changes; a failing page newer than the backup's start is volatile.
pub fn check_stored(rules: &PageRules, file_offset: u64, buf: &[u8], out: &mut PageVerdicts) {
    let first = rules.relfile.first_block() as u64 + file_offset / BLCKSZ as u64;
    for (i, page) in buf.chunks_exact(BLCKSZ).enumerate() {
        let blkno = (first + i as u64) as u32;
        let Err(fault) = rules.verify(page, blkno) else {
            continue;
        };
        if rules.skip.contains(&blkno) {
            continue;
        }
        match rules.start_lsn {
            Some(s) if recman_page::page_lsn(page) >= s => out.volatile.push(blkno),
            _ => out.corrupt.push((blkno, fault)),
        }
    }
}

/// pread until the buffer is full or end of file; returns the bytes read.
pub fn read_full_at(
    f: &(impl ReadAt + ?Sized),
    buf: &mut [u8],
    mut at: u64,
) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], at) {
            Ok(0) => break,
            Ok(n) => {
                done += n;
                at += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // Reads start on aligned offsets; an unaligned one follows a short read, which on
            // an O_DIRECT file means its end (the kernel refuses the unaligned request).
            Err(e)
                if e.raw_os_error() == Some(libc::EINVAL)
                    && !at.is_multiple_of(crate::aligned::ALIGN as u64) =>
            {
                break;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// A corrupt block as reports name it: its file, block, relation when known, and what failed.
pub(crate) fn describe_corrupt(c: &CorruptBlock) -> String {
    match &c.relation {
        Some(r) => format!(
            "file {} block {} (relation {}): {}",
            c.path, c.block, r, c.detail
        ),
        None => format!("file {} block {}: {}", c.path, c.block, c.detail),
    }
}
