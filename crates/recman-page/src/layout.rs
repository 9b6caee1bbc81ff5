//! The page geometry and header constants that every check reads.

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
pub(crate) const MAXALIGN: u16 = 8;
