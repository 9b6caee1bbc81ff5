//! How much of a file the page cache holds, so that a backup can read each file the cheaper
//! way: through the cache when its pages are there (a memory copy, against a trip to the
//! device that a direct read makes every time), directly when they are not (no copy, no
//! eviction of the database's working set).
//!
//! mincore(2) over a read-only shared mapping answers without touching the pages. Linux
//! (5.2 and later) answers truthfully only to a process that owns the file or may write it —
//! the cluster's OS user, or root; to anyone else it reports every page resident, so such a
//! reader would read everything through the cache, as `--buffered-reads` does.

use std::fs::File;
use std::os::fd::AsRawFd;

const PAGE: u64 = 4096;

/// Resident bytes of `file` in `[start, end)` (clipped to the file's size) and the bytes that
/// range holds; None when the file cannot be mapped (a pipe, a file system without mmap).
pub fn resident(file: &File, start: u64, end: u64) -> Option<(u64, u64)> {
    let len = file.metadata().ok()?.len();
    let end = end.min(len);
    if start >= end {
        return Some((0, 0));
    }
    // mmap offsets must be page aligned; the rounding adds less than a page at the front.
    let from = start / PAGE * PAGE;
    let map_len = (end - from) as usize;
    let pages = map_len.div_ceil(PAGE as usize);
    let mut vec = vec![0u8; pages];
    // SAFETY: a shared read-only mapping of a file we hold open, of at most its length from
    // a page-aligned offset, unmapped before returning and never dereferenced; mincore writes
    // one byte per page of the mapping into `vec`, which has exactly that many.
    let ok = unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            map_len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            from as libc::off_t,
        );
        if p == libc::MAP_FAILED {
            return None;
        }
        let ok = libc::mincore(p, map_len, vec.as_mut_ptr()) == 0;
        libc::munmap(p, map_len);
        ok
    };
    if !ok {
        return None;
    }
    let resident = vec.iter().filter(|b| **b & 1 == 1).count() as u64 * PAGE;
    Some((resident.min(end - from), end - start))
}

/// Whether a read of `[start, end)` of `file` should go through the page cache: at least half
/// of it is there. Below that, the device reads dominate and a direct read wins; above, the
/// memory copies do and a buffered read wins (docs/io-engine.md has the figures).
pub fn mostly_cached(file: &File, start: u64, end: u64) -> bool {
    match resident(file, start, end) {
        Some((res, bytes)) => bytes > 0 && res * 2 >= bytes,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A file of `len` bytes just written through the page cache, in a directory on the
    /// build's disk, not /tmp, which may be a tmpfs: its pages are its storage and never leave
    /// the cache.
    fn written(len: usize) -> (tempfile::TempDir, std::path::PathBuf, File) {
        let dir =
            tempfile::tempdir_in(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target")).unwrap();
        let p = dir.path().join("f");
        let mut f = File::create(&p).unwrap();
        f.write_all(&vec![7u8; len]).unwrap();
        (dir, p, f)
    }

    #[test]
    fn a_file_just_written_is_resident_and_an_empty_range_holds_nothing() {
        let (_dir, p, _) = written(256 << 10);
        let f = File::open(&p).unwrap();
        let (res, bytes) = resident(&f, 0, u64::MAX).unwrap();
        assert_eq!(bytes, 256 << 10);
        assert_eq!(res, 256 << 10, "pages written through the cache stay there");
        assert!(mostly_cached(&f, 8192, 65536));
        assert_eq!(resident(&f, 1 << 20, 2 << 20), Some((0, 0)));
        assert!(!mostly_cached(&f, 1 << 20, 2 << 20));
    }

    #[test]
    fn pages_dropped_from_the_cache_are_not_resident() {
        let (_dir, p, _) = written(1 << 20);
        recman_testkit::fixtures::evict_file(&p);
        let f = File::open(&p).unwrap();
        let (res, bytes) = resident(&f, 0, u64::MAX).unwrap();
        assert_eq!(bytes, 1 << 20);
        assert!(
            res < bytes / 2,
            "synced pages dropped with DONTNEED: {res} of {bytes} resident"
        );
        assert!(!mostly_cached(&f, 0, u64::MAX));
    }
}
