//! recman-catalog: the repository on local disk and its catalog.
//!
//! A repository is a directory (see [`repo`] for the layout) holding backups, archived WAL,
//! the self-describing manifests that are the truth about them, and `catalog.db`, an SQLite
//! index of the same facts for fast LIST/REPORT/RESTORE planning (RMAN's recovery catalog).
//!
//! Concurrency: commands that mutate the repository in ways that must not overlap take
//! [`Repository::lock`]; the catalog itself is safe to use from several processes at once
//! (WAL journal, busy timeout, IMMEDIATE write transactions).

mod atomic;
mod backup;
mod catalog;
mod copies;
mod error;
mod iostat;
mod lock;
mod maint;
mod records;
pub mod repo;
mod schema;
mod wal;
mod walbackup;

pub use catalog::Catalog;
pub use copies::CopyRecord;
pub use error::{CatalogError, LockHolder};
pub use iostat::IoStatRow;
pub use lock::RepoLock;
pub use recman_media::{Media, MediaError, MediaReader, MediaWriter};
pub use records::{
    BackupRecord, BackupStatus, CorruptBlock, DbRecord, DeleteKind, MediaStatus, PendingDelete,
    PieceRecord, UnknownStatus, WalRecord,
};
pub use repo::{RepoHandle, Repository};
pub use schema::SCHEMA_VERSION;
