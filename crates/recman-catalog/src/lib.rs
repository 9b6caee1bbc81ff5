//! recman-catalog: the repository on local disk and its catalog.
//!
//! A repository is a directory (see [`repo`] for the layout) holding backups, archived WAL,
//! the self-describing manifests that are the truth about them, and `catalog.db`, an SQLite
//! index of the same facts for fast LIST/REPORT/RESTORE planning (RMAN's recovery catalog).
//! The catalog may instead live in a shared PostgreSQL database holding the catalogs of many
//! repositories ([`Catalog::open_postgres`], [`Repository::open_with_catalog`]); both engines
//! run the same SQL and pass the same conformance suite (`tests/conformance.rs`).
//!
//! Concurrency: commands that mutate the repository in ways that must not overlap take
//! [`Repository::lock`]; the catalog itself is safe to use from several processes at once
//! (SQLite: WAL journal, busy timeout, IMMEDIATE write transactions; PostgreSQL: a writer lock
//! per repository, see the `db` module).

mod agent;
mod atomic;
mod backup;
mod blocks;
mod calibration;
mod catalog;
mod columns;
mod config;
mod copies;
mod costs;
mod database;
mod db;
mod drill;
mod error;
mod failure;
mod foreign;
mod iostat;
mod lastjob;
pub mod layout;
mod lock;
mod maint;
mod pg;
mod pgschema;
mod reads;
mod receive;
mod records;
pub mod repo;
mod samples;
mod schema;
mod snapshot;
pub mod tables;
#[cfg(feature = "testkit")]
pub mod testkit;
mod value;
mod wal;
mod walbackup;

pub use blocks::BlockRepair;
pub use calibration::CalibrationRecord;
pub use catalog::Catalog;
pub use copies::CopyRecord;
pub use costs::{CostRecord, CostScope};
pub use drill::DrillRecord;
pub use error::{CatalogError, LockHolder};
pub use failure::{FailureChanges, FailureRecord, FoundFailure};
pub use foreign::{ForeignArchive, ForeignBackupRecord, ForeignWalRecord};
pub use iostat::IoStatRow;
pub use lock::RepoLock;
pub use reads::BackupRead;
pub use receive::ReceivePosition;
pub use recman_media::meter;
pub use recman_media::{LockMode, Media, MediaError, MediaReader, MediaWriter, Retention, crypt};
pub use records::{
    BackupRecord, BackupStatus, CorruptBlock, DbRecord, DeleteKind, MediaStatus, PendingDelete,
    PieceRecord, UnknownStatus, WalRecord,
};
pub use repo::{RepoHandle, Repository};
pub use samples::{IoSample, TuningEvent};
pub use schema::SCHEMA_VERSION;
