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

mod files;
mod layout;
mod logical;
mod page;

pub use files::*;
pub use layout::*;
pub use logical::*;
pub use page::*;
