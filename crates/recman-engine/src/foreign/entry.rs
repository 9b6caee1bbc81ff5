//! The entry of `catalog import`: which importer the location calls for. Above both the
//! pgBackRest recording (`record.rs`) and the pg_basebackup importer, which both lean on
//! `record.rs`'s shared steps.

use super::basebackup;
use super::record::{ImportOptions, ImportReport, import_pgbackrest, pgbackrest_location};
use crate::error::EngineError;
use recman_catalog::Repository;

/// Imports everything at `opts.location` not imported yet. Call under the repository lock.
pub fn import(repo: &Repository, opts: &ImportOptions) -> Result<ImportReport, EngineError> {
    match pgbackrest_location(opts)? {
        Some(l) => import_pgbackrest(repo, opts, &l),
        None => basebackup::import(repo, opts),
    }
}
