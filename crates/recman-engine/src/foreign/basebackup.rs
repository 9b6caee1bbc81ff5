//! pg_basebackup backups, read in place: a directory holding `backup_manifest` and the data
//! directory's files, plain or in tar files (compressed by the client or the server). Each
//! file is checked against the manifest's checksum as it is read. The WAL pg_basebackup
//! copied (`-X stream` or `fetch`, the default) is restored with the files, so that such a
//! backup becomes consistent without any archive.
//!
//! PostgreSQL 17's incremental backups are imported on top of the backup they build on
//! (imported before them), and combined with it at restore ([`incremental`]); like
//! pg_combinebackup, recman reads them in plain format only.

mod entries;
mod import;
pub mod incremental;
pub mod manifest;
mod opened;
mod store;
mod tar;

pub(crate) use import::import;
pub(crate) use opened::Opened;
