//! Fixture builders: data that looks like what recman reads and writes, made without a
//! server. Relation files of valid PostgreSQL pages (with data checksums), piece headers for a
//! set of files, and bytes that do not compress.

use recman_format::{Compression, PieceHeader, SetFile};

/// PostgreSQL's block size.
pub const BLCKSZ: usize = 8192;

/// Deterministic, poorly compressible bytes.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    recman_media::conformance::pattern(len, seed)
}

/// A relation file of `blocks` initialised heap pages, each with its data checksum set as
/// PostgreSQL computes it (page checks pass), LSN `lsn` and contents varied by `seed`.
pub fn relation_file(blocks: u32, lsn: u64, seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(blocks as usize * BLCKSZ);
    for blkno in 0..blocks {
        out.extend_from_slice(&heap_page(blkno, lsn, seed));
    }
    out
}

/// One heap page: header (pd_lower 24 + one line pointer, pd_upper at the tuple, special at
/// the end), a tuple of pattern bytes, and the checksum for block `blkno`.
pub fn heap_page(blkno: u32, lsn: u64, seed: u64) -> Vec<u8> {
    let mut p = vec![0u8; BLCKSZ];
    let tuple = 64usize;
    let upper = (BLCKSZ - tuple) as u16;
    p[0..4].copy_from_slice(&((lsn >> 32) as u32).to_le_bytes());
    p[4..8].copy_from_slice(&(lsn as u32).to_le_bytes());
    p[12..14].copy_from_slice(&28u16.to_le_bytes()); // pd_lower: header + one item id
    p[14..16].copy_from_slice(&upper.to_le_bytes()); // pd_upper
    p[16..18].copy_from_slice(&(BLCKSZ as u16).to_le_bytes()); // pd_special
    p[18..20].copy_from_slice(&(BLCKSZ as u16 | 4).to_le_bytes()); // size | layout 4
    // line pointer 1: offset upper, LP_NORMAL, length tuple
    let lp: u32 = u32::from(upper) | (1 << 15) | ((tuple as u32) << 17);
    p[24..28].copy_from_slice(&lp.to_le_bytes());
    let body = pattern(tuple, seed ^ u64::from(blkno));
    p[upper as usize..].copy_from_slice(&body);
    let sum = recman_page::checksum_page(&p, blkno);
    p[8..10].copy_from_slice(&sum.to_le_bytes());
    p
}

/// A piece header for a set of `files` (slot = position), uncompressed unless `compression`.
pub fn piece_header(
    backup_id: &str,
    set_no: u32,
    files: &[&str],
    compression: Compression,
) -> PieceHeader {
    PieceHeader {
        backup_id: backup_id.to_string(),
        db_name: "main".to_string(),
        system_identifier: 7_000_000_000_000_000_001,
        set_no,
        piece_no: 1,
        compression,
        created_unix: 1_767_225_600,
        mac: None,
        files: files
            .iter()
            .enumerate()
            .map(|(i, p)| SetFile {
                index: i as u32,
                path: p.to_string(),
            })
            .collect(),
    }
}

/// Damages a file on disk: inverts the byte at `offset` and syncs it, as a flipped bit on
/// the device would leave it.
pub fn flip(path: &std::path::Path, offset: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {} to damage it: {e}", path.display()));
    let mut b = [0u8; 1];
    f.read_at(&mut b, offset).unwrap();
    b[0] ^= 0xff;
    f.write_at(&b, offset).unwrap();
    f.sync_all().unwrap();
}

/// Writes back and drops from the page cache every file under `dir` (a cold database, as a
/// backup of a large cluster meets it): a backup then reads them from the device, where a
/// blkio throttle acts, instead of from memory. Clean pages only leave the cache, hence the
/// fsync first.
pub fn evict_from_page_cache(dir: &std::path::Path) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
        let p = e.unwrap().path();
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue; // removed meanwhile (the server's temporary files)
        };
        if m.is_dir() {
            evict_from_page_cache(&p);
        } else if m.is_file() && p.exists() {
            evict_file(&p);
        }
    }
}

/// [`evict_from_page_cache`] for one file.
pub fn evict_file(path: &std::path::Path) {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    f.sync_all()
        .unwrap_or_else(|e| panic!("fsync {}: {e}", path.display()));
    // SAFETY: fadvise on a descriptor we hold; it only drops clean cached pages.
    let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0, "posix_fadvise on {}", path.display());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relation_pages_pass_postgres_page_checks() {
        let f = relation_file(3, 0x1_0000_0028, 5);
        for (blkno, page) in f.chunks(BLCKSZ).enumerate() {
            recman_page::verify_page(page, blkno as u32, true)
                .unwrap_or_else(|e| panic!("block {blkno}: {e:?}"));
        }
        let mut bad = f.clone();
        bad[BLCKSZ + 4000] ^= 1;
        assert!(recman_page::verify_page(&bad[BLCKSZ..2 * BLCKSZ], 1, true).is_err());
    }
}
