//! recman-page: facts about PostgreSQL (13 and later) data files.
//!
//! * Page checks: the data checksum (`pg_checksum_page`) and the page header
//!   checks of `PageIsVerifiedExtended`, for the default block size of 8 KiB.
//! * File classification: which files under a data directory are relation
//!   segment files (and so hold checksummed pages), and which files an online
//!   physical backup leaves out.
//!
//! The functions read page fields as little-endian. PostgreSQL writes them in
//! the byte order of the machine it runs on, so pages from big-endian servers
//! are not supported.

#![forbid(unsafe_code)]

use std::fmt;

/// PostgreSQL's block (page) size. Only the default of 8 KiB is supported.
pub const BLCKSZ: usize = 8192;

/// Blocks per relation segment file (1 GiB of 8 KiB blocks).
pub const RELSEG_SIZE: u32 = 131072;

/// Size of `PageHeaderData`.
pub const SIZE_OF_PAGE_HEADER: usize = 24;

/// `PD_VALID_FLAG_BITS`: the only flag bits a valid page may have set
/// (`PD_HAS_FREE_LINES | PD_PAGE_FULL | PD_ALL_VISIBLE`).
pub const PD_VALID_FLAG_BITS: u16 = 0x0007;

/// `PG_PAGE_LAYOUT_VERSION` used by PostgreSQL 8.3 and later.
pub const PG_PAGE_LAYOUT_VERSION: u8 = 4;

/// `MAXIMUM_ALIGNOF` on every platform PostgreSQL supports in practice.
const MAXALIGN: u16 = 8;

// ---------------------------------------------------------------------------
// Checksum (src/include/storage/checksum_impl.h)
// ---------------------------------------------------------------------------

/// Number of checksum lanes computed in parallel (`N_SUMS`).
const N_SUMS: usize = 32;

/// FNV-1a prime (`FNV_PRIME`).
const FNV_PRIME: u32 = 16_777_619;

/// Initial value of each lane (`checksumBaseOffsets`).
const CHECKSUM_BASE_OFFSETS: [u32; N_SUMS] = [
    0x5B1F36E9, 0xB8525960, 0x02AB50AA, 0x1DE66D2A, //
    0x79FF467A, 0x9BB9F8A3, 0x217E7CD2, 0x83E13D2C, //
    0xF8D4474F, 0xE39EB970, 0x42C6AE16, 0x993216FA, //
    0x7B093B5D, 0x98DAFF3C, 0xF718902A, 0x0B1C9CDB, //
    0xE58F764B, 0x187636BC, 0x5D7B3BB1, 0xE73DE7DE, //
    0x92BEC979, 0xCCA6C0B2, 0x304A0979, 0x85AA43D4, //
    0x783125BB, 0x6CA8EAA2, 0xE407EAC6, 0x4B5CFC3E, //
    0x9FBF8C76, 0x15CA20BE, 0xF2CA9FD3, 0x959BD756, //
];

/// One round of the checksum (`CHECKSUM_COMP`).
#[inline(always)]
fn checksum_comp(sum: u32, value: u32) -> u32 {
    let tmp = sum ^ value;
    tmp.wrapping_mul(FNV_PRIME) ^ (tmp >> 17)
}

/// Bytes per row of the 32-lane matrix.
const ROW: usize = N_SUMS * 4;

#[inline(always)]
fn mix_row(sums: &mut [u32; N_SUMS], row: &[u8]) {
    let row: &[u8; ROW] = row.try_into().expect("row of 128 bytes");
    for (j, sum) in sums.iter_mut().enumerate() {
        let v = u32::from_le_bytes([row[4 * j], row[4 * j + 1], row[4 * j + 2], row[4 * j + 3]]);
        *sum = checksum_comp(*sum, v);
    }
}

/// `pg_checksum_block`: the 32-bit checksum of a whole page, with the
/// `pd_checksum` field (bytes 8..10) taken as zero.
fn checksum_block(page: &[u8; BLCKSZ]) -> u32 {
    let mut sums = CHECKSUM_BASE_OFFSETS;

    // First row, with pd_checksum masked out. On a little-endian page the
    // third 32-bit word is pd_checksum (low half) | pd_flags (high half).
    let mut first = [0u8; ROW];
    first.copy_from_slice(&page[..ROW]);
    first[8] = 0;
    first[9] = 0;
    mix_row(&mut sums, &first);

    for row in page[ROW..].chunks_exact(ROW) {
        mix_row(&mut sums, row);
    }

    // Two rounds of zeroes for additional mixing, then xor-fold the lanes.
    let mut result = 0u32;
    for sum in sums.iter_mut() {
        *sum = checksum_comp(*sum, 0);
        *sum = checksum_comp(*sum, 0);
        result ^= *sum;
    }
    result
}

fn as_page(page: &[u8]) -> &[u8; BLCKSZ] {
    match page.try_into() {
        Ok(p) => p,
        Err(_) => panic!("a page must be exactly {BLCKSZ} bytes, got {}", page.len()),
    }
}

/// PostgreSQL's data checksum of one page (`pg_checksum_page`): the FNV-1a
/// based 32-lane algorithm of `checksum_impl.h`, the block number mixed in
/// and the result reduced to `1..=65535`. `pd_checksum` itself is treated as
/// zero while computing.
///
/// `blkno` is the block number within the relation fork (not within the
/// segment file): `RelFile::first_block() + block index in the file`.
///
/// # Panics
/// If `page.len() != BLCKSZ`.
pub fn checksum_page(page: &[u8], blkno: u32) -> u16 {
    let checksum = checksum_block(as_page(page)) ^ blkno;
    ((checksum % 65535) + 1) as u16
}

#[inline]
fn u16_at(page: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([page[off], page[off + 1]])
}

#[inline]
fn u32_at(page: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([page[off], page[off + 1], page[off + 2], page[off + 3]])
}

/// `pd_lsn` of a page: `xlogid << 32 | xrecoff` (two little-endian u32).
///
/// # Panics
/// If the slice is shorter than 8 bytes.
pub fn page_lsn(page: &[u8]) -> u64 {
    ((u32_at(page, 0) as u64) << 32) | u32_at(page, 4) as u64
}

/// The stored `pd_checksum` field.
///
/// # Panics
/// If the slice is shorter than 10 bytes.
pub fn page_checksum_field(page: &[u8]) -> u16 {
    u16_at(page, 8)
}

/// The fields of `PageHeaderData`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    pub lsn: u64,
    pub checksum: u16,
    pub flags: u16,
    pub lower: u16,
    pub upper: u16,
    pub special: u16,
    pub pagesize_version: u16,
    pub prune_xid: u32,
}

impl PageHeader {
    /// Parses the 24-byte header at the start of `page`.
    ///
    /// # Panics
    /// If the slice is shorter than [`SIZE_OF_PAGE_HEADER`].
    pub fn parse(page: &[u8]) -> PageHeader {
        PageHeader {
            lsn: page_lsn(page),
            checksum: u16_at(page, 8),
            flags: u16_at(page, 10),
            lower: u16_at(page, 12),
            upper: u16_at(page, 14),
            special: u16_at(page, 16),
            pagesize_version: u16_at(page, 18),
            prune_xid: u32_at(page, 20),
        }
    }

    /// `PageGetPageSize`.
    pub fn page_size(&self) -> usize {
        (self.pagesize_version & 0xFF00) as usize
    }

    /// `PageGetPageLayoutVersion`.
    pub fn layout_version(&self) -> u8 {
        (self.pagesize_version & 0x00FF) as u8
    }

    /// `PageIsNew`: the page was never initialised (`pd_upper == 0`).
    pub fn is_new(&self) -> bool {
        self.upper == 0
    }

    /// The header checks; `Err` carries the first failing rule.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.flags & !PD_VALID_FLAG_BITS != 0 {
            return Err("invalid flag bits in pd_flags");
        }
        if self.lower > self.upper {
            return Err("pd_lower > pd_upper");
        }
        if self.upper > self.special {
            return Err("pd_upper > pd_special");
        }
        if self.special as usize > BLCKSZ {
            return Err("pd_special beyond the end of the page");
        }
        if self.special & (MAXALIGN - 1) != 0 {
            return Err("pd_special not MAXALIGNed");
        }
        if self.page_size() != BLCKSZ {
            return Err("page size field is not 8192");
        }
        if self.layout_version() != PG_PAGE_LAYOUT_VERSION {
            return Err("page layout version is not 4");
        }
        Ok(())
    }
}

/// Why a page failed [`verify_page`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageFault {
    /// The header is sane but the stored checksum is not the computed one.
    /// Also reported when both the header and the checksum are wrong.
    #[error("checksum mismatch: stored {stored:#06x}, computed {computed:#06x}")]
    Checksum { stored: u16, computed: u16 },
    /// The header breaks a sanity rule (checksums disabled, or the checksum
    /// happens to match).
    #[error("invalid page header: {reason}")]
    Header { reason: &'static str },
    /// `pd_upper == 0` (a new, never initialised page) but the page is not
    /// all zeros.
    #[error("page header marks a new page (pd_upper = 0) but the page is not all zeros")]
    NotAllZero,
}

impl PageFault {
    /// The corruption type in the vocabulary of RMAN's
    /// `V$DATABASE_BLOCK_CORRUPTION.CORRUPTION_TYPE`:
    ///
    /// | fault        | kind         | meaning |
    /// |--------------|--------------|---------|
    /// | `Checksum`   | `"CHECKSUM"` | the stored checksum is not the computed one |
    /// | `Header`     | `"CORRUPT"`  | the page header is not sane |
    /// | `NotAllZero` | `"ALL ZERO"` | the header is zeroed like a never-used page (`pd_upper = 0`) but the rest of the page holds data, i.e. a block whose header was lost |
    pub fn kind(&self) -> &'static str {
        match self {
            PageFault::Checksum { .. } => "CHECKSUM",
            PageFault::Header { .. } => "CORRUPT",
            PageFault::NotAllZero => "ALL ZERO",
        }
    }
}

/// True if every byte of `page` is zero.
pub fn is_all_zero(page: &[u8]) -> bool {
    // Word-wise comparison; the compiler vectorises this.
    let mut chunks = page.chunks_exact(8);
    let words_zero = chunks
        .by_ref()
        .all(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")) == 0);
    words_zero && chunks.remainder().iter().all(|&b| b == 0)
}

/// Checks one page by the rules of PostgreSQL's `PageIsVerifiedExtended`:
///
/// * a new page (`pd_upper == 0`) is valid only if it is all zeros, else
///   [`PageFault::NotAllZero`];
/// * otherwise, when `checksums_enabled`, `pd_checksum` must equal
///   [`checksum_page`] (`blkno` is the block number within the relation
///   fork), else [`PageFault::Checksum`];
/// * and the header must be sane, else [`PageFault::Header`]: no flag bits
///   outside `PD_VALID_FLAG_BITS`, `pd_lower <= pd_upper <= pd_special <=
///   BLCKSZ`, `pd_special` MAXALIGNed (8), page size field 8192 and layout
///   version 4. (`PageIsVerifiedExtended` does not look at the size and
///   version field; every initialised page that PostgreSQL 8.3 or later
///   writes with 8 KiB blocks has it set to `0x2004`.)
///
/// When both the checksum and the header are wrong, the checksum fault is
/// returned (it carries the two values). A slice that is not `BLCKSZ` long
/// gives a `Header` fault.
///
/// Pages being written while an online backup reads them can be torn; a
/// caller should re-read a failing page, and pages whose LSN is newer than
/// the backup's start LSN are restored from WAL anyway.
pub fn verify_page(page: &[u8], blkno: u32, checksums_enabled: bool) -> Result<(), PageFault> {
    if page.len() != BLCKSZ {
        return Err(PageFault::Header {
            reason: "short page (not 8192 bytes)",
        });
    }
    let hdr = PageHeader::parse(page);
    if hdr.is_new() {
        return if is_all_zero(page) {
            Ok(())
        } else {
            Err(PageFault::NotAllZero)
        };
    }
    if checksums_enabled {
        let computed = checksum_page(page, blkno);
        if computed != hdr.checksum {
            return Err(PageFault::Checksum {
                stored: hdr.checksum,
                computed,
            });
        }
    }
    hdr.check().map_err(|reason| PageFault::Header { reason })
}

/// Verifies every page of `buf` (a whole number of pages), the first one
/// being block `first_blkno`. Returns the faulty pages as
/// `(blkno, fault)`; the vector does not allocate when all pages are good.
/// A trailing partial page is reported as a `Header` fault.
pub fn verify_pages(
    buf: &[u8],
    first_blkno: u32,
    checksums_enabled: bool,
) -> Vec<(u32, PageFault)> {
    let mut faults = Vec::new();
    for (i, page) in buf.chunks(BLCKSZ).enumerate() {
        let blkno = first_blkno.wrapping_add(i as u32);
        if let Err(f) = verify_page(page, blkno, checksums_enabled) {
            faults.push((blkno, f));
        }
    }
    faults
}

// ---------------------------------------------------------------------------
// Relation files
// ---------------------------------------------------------------------------

/// A relation fork.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fork {
    Main,
    Fsm,
    Vm,
    Init,
}

impl Fork {
    /// The file name suffix: `""`, `"_fsm"`, `"_vm"`, `"_init"`.
    pub fn suffix(self) -> &'static str {
        match self {
            Fork::Main => "",
            Fork::Fsm => "_fsm",
            Fork::Vm => "_vm",
            Fork::Init => "_init",
        }
    }

    /// The fork name as PostgreSQL spells it: `main`, `fsm`, `vm`, `init`.
    pub fn name(self) -> &'static str {
        match self {
            Fork::Main => "main",
            Fork::Fsm => "fsm",
            Fork::Vm => "vm",
            Fork::Init => "init",
        }
    }
}

/// One segment file of one fork of a relation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RelFile {
    /// `None`: pg_default (`base/`) or pg_global (`global/`).
    pub tablespace_oid: Option<u32>,
    /// `None`: a shared relation under `global/`.
    pub db_oid: Option<u32>,
    pub relfilenode: u32,
    pub fork: Fork,
    pub segno: u32,
}

impl RelFile {
    /// Block number (within the fork) of the first block of this segment
    /// file: `segno * RELSEG_SIZE`.
    pub fn first_block(&self) -> u32 {
        self.segno.wrapping_mul(RELSEG_SIZE)
    }

    /// `(tablespace_oid, db_oid, relfilenode)`: identifies the relation
    /// regardless of fork and segment.
    pub fn rel_key(&self) -> (Option<u32>, Option<u32>, u32) {
        (self.tablespace_oid, self.db_oid, self.relfilenode)
    }

    /// The file name inside its database directory, e.g. `16384_vm.1`.
    pub fn file_name(&self) -> String {
        if self.segno == 0 {
            format!("{}{}", self.relfilenode, self.fork.suffix())
        } else {
            format!("{}{}.{}", self.relfilenode, self.fork.suffix(), self.segno)
        }
    }
}

/// Parses a decimal OID as PostgreSQL prints it: digits only, no leading
/// zeros, not zero, fits in u32.
fn parse_oid(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.starts_with('0') {
        return None;
    }
    s.parse().ok()
}

/// Parses `<relfilenode>[_fsm|_vm|_init][.<segno>]`.
fn parse_rel_file_name(name: &str) -> Option<(u32, Fork, u32)> {
    let (base, segno) = match name.split_once('.') {
        Some((base, seg)) => (base, parse_oid(seg)?),
        None => (name, 0),
    };
    let (node, fork) = match base.split_once('_') {
        Some((node, "fsm")) => (node, Fork::Fsm),
        Some((node, "vm")) => (node, Fork::Vm),
        Some((node, "init")) => (node, Fork::Init),
        Some(_) => return None,
        None => (base, Fork::Main),
    };
    Some((parse_oid(node)?, fork, segno))
}

/// Path components, ignoring empty and `.` components.
fn components(rel_path: &str) -> Vec<&str> {
    rel_path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect()
}

/// Classifies a path relative to the data directory (with `/` separators):
///
/// * `base/<db>/<relfilenode>[_fsm|_vm|_init][.<segno>]`
/// * `global/<relfilenode>...` (shared relations)
/// * `pg_tblspc/<tsoid>/<PG_xx_catver>/<db>/<relfilenode>...`
///
/// Returns `None` for everything else, e.g. `pg_filenode.map`,
/// `PG_VERSION`, `pg_internal.init`, temporary relations `t<N>_<relfilenode>`
/// and `pgsql_tmp` files. OIDs must be printed the way PostgreSQL prints
/// them (no leading zeros); segment 0 has no `.0` suffix.
pub fn classify(rel_path: &str) -> Option<RelFile> {
    let c = components(rel_path);
    let (tablespace_oid, db_oid, name) = match c.as_slice() {
        ["base", db, name] => (None, Some(parse_oid(db)?), *name),
        ["global", name] => (None, None, *name),
        ["pg_tblspc", ts, ver, db, name] if ver.starts_with("PG_") => {
            (Some(parse_oid(ts)?), Some(parse_oid(db)?), *name)
        }
        _ => return None,
    };
    let (relfilenode, fork, segno) = parse_rel_file_name(name)?;
    Some(RelFile {
        tablespace_oid,
        db_oid,
        relfilenode,
        fork,
        segno,
    })
}

/// True if `name` is a temporary relation file name:
/// `t<backend>_<relfilenode>[_fork][.<segno>]` (`looks_like_temp_rel_name`).
pub fn is_temp_rel_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('t') else {
        return false;
    };
    let Some((backend, rel)) = rest.split_once('_') else {
        return false;
    };
    !backend.is_empty()
        && backend.bytes().all(|b| b.is_ascii_digit())
        && parse_rel_file_name(rel).is_some()
}

/// What an online backup does with a path it leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exclusion {
    /// Leave the file or directory (and everything under it) out.
    Skip,
    /// Back up the directory itself, empty (restore recreates it).
    KeepDirEmpty,
}

/// Top-level directories whose contents are left out; the directories
/// themselves are kept, empty (pg_basebackup does the same, even when they
/// are symbolic links).
const EMPTY_DIRS: &[&str] = &[
    "pg_wal",
    "pg_dynshmem",
    "pg_notify",
    "pg_serial",
    "pg_snapshots",
    "pg_stat_tmp",
    "pg_subtrans",
    "pg_replslot",
];

/// Subdirectories of `pg_wal` that are kept, empty.
const WAL_KEEP_DIRS: &[&str] = &["archive_status", "summaries"];

/// File names left out in any directory.
const SKIP_FILES: &[&str] = &[
    "postmaster.pid",
    "postmaster.opts",
    "backup_label",
    "tablespace_map",
    "backup_label.old",
    "tablespace_map.old",
    "backup_manifest",
    "postgresql.auto.conf.tmp",
    "current_logfiles.tmp",
];

/// True if the directory components `dirs` are a database directory:
/// `base/<db>` or `pg_tblspc/<ts>/<PG_...>/<db>`.
fn is_db_dir(dirs: &[&str]) -> bool {
    match dirs {
        ["base", db] => parse_oid(db).is_some(),
        ["pg_tblspc", ts, ver, db] => {
            parse_oid(ts).is_some() && ver.starts_with("PG_") && parse_oid(db).is_some()
        }
        _ => false,
    }
}

/// What an online physical backup leaves out, following pg_basebackup:
///
/// * the contents of `pg_wal`, `pg_dynshmem`, `pg_notify`, `pg_serial`,
///   `pg_snapshots`, `pg_stat_tmp`, `pg_subtrans` and `pg_replslot`: the
///   directories themselves give [`Exclusion::KeepDirEmpty`] (whatever
///   `is_dir` says, as they may be symbolic links), anything under them
///   [`Exclusion::Skip`]; `pg_wal/archive_status` (and PostgreSQL 17's
///   `pg_wal/summaries`) are kept as empty directories too;
/// * in any directory, files named `postmaster.pid`, `postmaster.opts`,
///   `backup_label`, `tablespace_map` (the backup writes its own),
///   `backup_label.old`, `tablespace_map.old`, `backup_manifest`,
///   `postgresql.auto.conf.tmp`, `current_logfiles.tmp`, and names starting
///   with `pg_internal.init` (the relcache init file and its temporary
///   copies);
/// * anything (file or directory, any depth) whose name starts with
///   `pgsql_tmp`, and anything under such a directory;
/// * temporary relation files `t<N>_<relfilenode>[_fork][.<segno>]` in a
///   database directory.
///
/// `rel_path` is relative to the data directory with `/` separators.
/// Returns `None` for paths the backup keeps. pg_basebackup also leaves out
/// the non-init forks of unlogged relations; that needs the directory
/// listing (an `_init` fork beside them) and is the caller's job.
pub fn exclusion(rel_path: &str, is_dir: bool) -> Option<Exclusion> {
    let c = components(rel_path);
    let (&name, dirs) = c.split_last()?;

    if c.iter().any(|p| p.starts_with("pgsql_tmp")) {
        return Some(Exclusion::Skip);
    }

    let top = c[0];
    if EMPTY_DIRS.contains(&top) {
        return match c.len() {
            1 => Some(Exclusion::KeepDirEmpty),
            2 if top == "pg_wal" && WAL_KEEP_DIRS.contains(&name) && is_dir => {
                Some(Exclusion::KeepDirEmpty)
            }
            _ => Some(Exclusion::Skip),
        };
    }

    if is_dir {
        return None;
    }
    if SKIP_FILES.contains(&name) || name.starts_with("pg_internal.init") {
        return Some(Exclusion::Skip);
    }
    if is_temp_rel_name(name) && is_db_dir(dirs) {
        return Some(Exclusion::Skip);
    }
    None
}

impl fmt::Display for Fork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_parse_offsets() {
        let mut p = vec![0u8; BLCKSZ];
        p[0..4].copy_from_slice(&1u32.to_le_bytes());
        p[4..8].copy_from_slice(&0x2000_0028u32.to_le_bytes());
        p[8..10].copy_from_slice(&0xbeefu16.to_le_bytes());
        p[12..14].copy_from_slice(&28u16.to_le_bytes());
        p[14..16].copy_from_slice(&8000u16.to_le_bytes());
        p[16..18].copy_from_slice(&8192u16.to_le_bytes());
        p[18..20].copy_from_slice(&0x2004u16.to_le_bytes());
        let h = PageHeader::parse(&p);
        assert_eq!(h.lsn, 0x1_2000_0028);
        assert_eq!(page_lsn(&p), 0x1_2000_0028);
        assert_eq!(page_checksum_field(&p), 0xbeef);
        assert_eq!(h.page_size(), 8192);
        assert_eq!(h.layout_version(), 4);
        assert_eq!(h.check(), Ok(()));
    }
}
