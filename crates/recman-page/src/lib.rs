//! recman-page: facts about PostgreSQL (13 and later) data files.
//!
//! * Page checks: the data checksum (`pg_checksum_page`) and the page header
//!   checks of `PageIsVerifiedExtended`, for the default block size of 8 KiB;
//!   with CHECK LOGICAL, the line pointers and items of heap and B-tree pages.
//! * File classification: which files under a data directory are relation
//!   segment files (and so hold checksummed pages), and which files an online
//!   physical backup leaves out.
//!
//! The functions read page fields as little-endian. PostgreSQL writes them in
//! the byte order of the machine it runs on, so pages from big-endian servers
//! are not supported.

#![forbid(unsafe_code)]

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

mod files;
mod logical;
mod page;

pub use files::*;
pub use logical::*;
pub use page::*;
