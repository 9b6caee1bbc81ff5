//! One page: PostgreSQL's data checksum and the header sanity rules of PageIsVerified.

use crate::layout::*;

/// Number of checksum lanes computed in parallel (`N_SUMS`).
pub(crate) const N_SUMS: usize = 32;

/// FNV-1a prime (`FNV_PRIME`).
pub(crate) const FNV_PRIME: u32 = 16_777_619;

/// Initial value of each lane (`checksumBaseOffsets`).
pub(crate) const CHECKSUM_BASE_OFFSETS: [u32; N_SUMS] = [
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
pub(crate) fn checksum_comp(sum: u32, value: u32) -> u32 {
    let tmp = sum ^ value;
    tmp.wrapping_mul(FNV_PRIME) ^ (tmp >> 17)
}

/// Bytes per row of the 32-lane matrix.
pub(crate) const ROW: usize = N_SUMS * 4;

#[inline(always)]
pub(crate) fn mix_row(sums: &mut [u32; N_SUMS], row: &[u8]) {
    let row: &[u8; ROW] = row.try_into().expect("row of 128 bytes");
    for (j, sum) in sums.iter_mut().enumerate() {
        let v = u32::from_le_bytes([row[4 * j], row[4 * j + 1], row[4 * j + 2], row[4 * j + 3]]);
        *sum = checksum_comp(*sum, v);
    }
}

/// `pg_checksum_block`: the 32-bit checksum of a whole page, with the
/// `pd_checksum` field (bytes 8..10) taken as zero.
pub(crate) fn checksum_block(page: &[u8; BLCKSZ]) -> u32 {
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

pub(crate) fn as_page(page: &[u8]) -> &[u8; BLCKSZ] {
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
pub(crate) fn u16_at(page: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([page[off], page[off + 1]])
}

#[inline]
pub(crate) fn u32_at(page: &[u8], off: usize) -> u32 {
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
    /// The checksum and header pass but the items inside do not ([`crate::check_logical`]).
    #[error("logical corruption: line pointer {item}: {reason}")]
    Logical { item: u16, reason: &'static str },
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
    /// | `Logical`    | `"LOGICAL"`  | CHECK LOGICAL: the line pointers or items of a heap or B-tree page are inconsistent |
    pub fn kind(&self) -> &'static str {
        match self {
            PageFault::Checksum { .. } => "CHECKSUM",
            PageFault::Header { .. } => "CORRUPT",
            PageFault::NotAllZero => "ALL ZERO",
            PageFault::Logical { .. } => "LOGICAL",
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

/// [`verify_page`], then with `logical` (CHECK LOGICAL) [`crate::check_logical`] on a page
/// that passed.
pub fn verify_page_ext(
    page: &[u8],
    blkno: u32,
    checksums_enabled: bool,
    logical: bool,
) -> Result<(), PageFault> {
    verify_page(page, blkno, checksums_enabled)?;
    if logical {
        crate::logical::check_logical(page)
            .map_err(|(item, reason)| PageFault::Logical { item, reason })?;
    }
    Ok(())
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
