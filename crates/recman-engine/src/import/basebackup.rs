//! pg_basebackup backups, read in place: a directory holding `backup_manifest` (and the
//! data directory's files, plain or in tar files).

use super::{ForeignEntry, ImportError, ImportOptions, ImportReport};
use crate::EngineError;
use recman_catalog::Repository;
use recman_format::manifest::BackupManifest;
use std::io::Read;
use std::path::Path;

/// Whether `dir` is a backup pg_basebackup wrote (it holds its `backup_manifest`).
pub fn is_backup_dir(dir: &Path) -> bool {
    dir.join("backup_manifest").is_file()
}

pub(crate) fn import(
    _repo: &Repository,
    opts: &ImportOptions,
) -> Result<ImportReport, EngineError> {
    Err(ImportError::Invalid(format!(
        "{} is a pg_basebackup backup, which this recman does not import yet; hint: restore it with PostgreSQL's own tools",
        opts.location.display()
    ))
    .into())
}

pub(crate) struct Opened {
    entries: Vec<ForeignEntry>,
}

impl Opened {
    pub(crate) fn open_chain(chain: &[BackupManifest]) -> Result<Opened, ImportError> {
        let _ = chain;
        Err(ImportError::Invalid(
            "pg_basebackup backups are not read by this recman yet".into(),
        ))
    }
}

impl super::Opened for Opened {
    fn describe(&self) -> String {
        "pg_basebackup backup".into()
    }
    fn entries(&self) -> &[ForeignEntry] {
        &self.entries
    }
    fn open(&self, _e: &ForeignEntry) -> Result<Box<dyn Read + Send + '_>, ImportError> {
        Err(ImportError::Invalid("not read yet".into()))
    }
}
