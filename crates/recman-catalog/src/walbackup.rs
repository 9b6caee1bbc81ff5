//! Backup sets of archived WAL (RMAN's archived-log backup sets): which sets hold which WAL
//! files, recorded together with the backup so that a set is never listed as holding WAL
//! before its pieces are complete.

use crate::backup::{UPDATE_BACKUP, insert_backup_row, insert_pieces, write_backup};
use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::records::{BackupRecord, PieceRecord};
use crate::value::vals;

impl Catalog {
    /// Completes an ARCHIVELOG backup: its final row, its pieces and the WAL each of its sets
    /// holds, in one transaction, so the backup becomes AVAILABLE with all of them or none.
    pub fn complete_wal_backup(
        &self,
        b: &BackupRecord,
        pieces: &[PieceRecord],
        wal: &[(String, u32)],
    ) -> Result<(), CatalogError> {
        let ctx = format!("completing archivelog backup {}", b.id);
        self.write_tx(&ctx, || {
            let n = write_backup(self, UPDATE_BACKUP, b, &ctx)?;
            if n == 0 {
                return Err(CatalogError::BackupNotFound { id: b.id.clone() });
            }
            insert_pieces(self, b, pieces, &[])?;
            self.insert_held(&b.id, b.db_id, wal, &ctx)
        })
    }

    /// Records a complete ARCHIVELOG backup found in the repository (CATALOG START WITH):
    /// row, pieces and held WAL in one transaction. Refuses a backup id already present.
    pub fn record_wal_backup(
        &self,
        b: &BackupRecord,
        pieces: &[PieceRecord],
        wal: &[(String, u32)],
    ) -> Result<(), CatalogError> {
        let ctx = format!("recording archivelog backup {}", b.id);
        self.write_tx(&ctx, || {
            insert_backup_row(self, b, &ctx)?;
            insert_pieces(self, b, pieces, &[])?;
            self.insert_held(&b.id, b.db_id, wal, &ctx)
        })
    }

    /// Records which WAL files sets of `backup_id` hold (inside the caller's transaction);
    /// a pair already recorded is kept.
    pub(crate) fn insert_held(
        &self,
        backup_id: &str,
        db_id: i64,
        wal: &[(String, u32)],
        ctx: &str,
    ) -> Result<(), CatalogError> {
        for (name, set_no) in wal {
            self.exec(
                ctx,
                "INSERT INTO backup_wal (backup_id, db_id, name, set_no) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT DO NOTHING",
                vals![backup_id, db_id, name, set_no],
            )?;
        }
        Ok(())
    }

    /// The AVAILABLE backups whose sets hold archived WAL file `name`, newest first, with the
    /// set that holds it: where archive-get looks once the file has left the archive.
    pub fn wal_backup_sources(
        &self,
        db_id: i64,
        name: &str,
    ) -> Result<Vec<(String, u32)>, CatalogError> {
        self.query(
            &format!("finding the backups that hold wal {name}"),
            "SELECT w.backup_id, w.set_no FROM backup_wal w JOIN backup b ON b.id = w.backup_id
             WHERE w.db_id = ?1 AND w.name = ?2 AND b.status = 'AVAILABLE'
             ORDER BY b.start_time DESC, b.id DESC",
            vals![db_id, name],
            |r| Ok((r.get_text(0)?, r.get_u32(1)?)),
        )
    }
}
