//! What each backup read from the cluster: all bytes, and the part read through change
//! tracking (its own table, so the backup record keeps its shape).

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::value::{to_i64, vals};

/// Bytes a backup read from the cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BackupRead {
    pub read_bytes: u64,
    /// Of which read block by block through change tracking.
    pub tracked_bytes: u64,
    /// Relation files read through change tracking.
    pub tracked_files: u64,
}

impl Catalog {
    pub fn set_backup_read(
        &self,
        backup_id: &str,
        read_bytes: u64,
        tracked_bytes: u64,
        tracked_files: u64,
    ) -> Result<(), CatalogError> {
        self.exec(
            &format!("recording what backup {backup_id} read"),
            "INSERT INTO backup_read (backup_id, read_bytes, tracked_bytes, tracked_files)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (backup_id) DO UPDATE SET read_bytes = excluded.read_bytes,
                 tracked_bytes = excluded.tracked_bytes, tracked_files = excluded.tracked_files",
            vals![
                backup_id,
                to_i64("read size", read_bytes)?,
                to_i64("read size", tracked_bytes)?,
                to_i64("file count", tracked_files)?
            ],
        )?;
        Ok(())
    }

    /// What backup `backup_id` read; None for backups that did not read a cluster (synthetic
    /// fulls, archivelog sets) or were taken before recman recorded it.
    pub fn backup_read(&self, backup_id: &str) -> Result<Option<BackupRead>, CatalogError> {
        self.query_opt(
            &format!("reading what backup {backup_id} read"),
            "SELECT read_bytes, tracked_bytes, tracked_files FROM backup_read WHERE backup_id = ?1",
            vals![backup_id],
            |r| {
                Ok(BackupRead {
                    read_bytes: r.get_u64(0)?,
                    tracked_bytes: r.get_u64(1)?,
                    tracked_files: r.get_u64(2)?,
                })
            },
        )
    }
}
