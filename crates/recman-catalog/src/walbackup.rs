//! Backup sets of archived WAL (RMAN's archived-log backup sets): which sets hold which WAL
//! files, recorded together with the backup so that a set is never listed as holding WAL
//! before its pieces are complete.

use rusqlite::Connection;

use crate::backup::{UPDATE_BACKUP, insert_backup_on, insert_pieces_on, write_backup};
use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::records::{BackupRecord, PieceRecord};

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
        let tx = self.write_tx(&ctx)?;
        let n = write_backup(self, &tx, UPDATE_BACKUP, b, &ctx)?;
        if n == 0 {
            return Err(CatalogError::BackupNotFound { id: b.id.clone() });
        }
        insert_pieces_on(self, &tx, b, pieces, &[], &ctx)?;
        self.insert_held(&tx, b, wal, &ctx)?;
        tx.commit().map_err(self.sql(ctx))
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
        let tx = self.write_tx(&ctx)?;
        insert_backup_on(self, &tx, b, &ctx)?;
        insert_pieces_on(self, &tx, b, pieces, &[], &ctx)?;
        self.insert_held(&tx, b, wal, &ctx)?;
        tx.commit().map_err(self.sql(ctx))
    }

    fn insert_held(
        &self,
        tx: &Connection,
        b: &BackupRecord,
        wal: &[(String, u32)],
        ctx: &str,
    ) -> Result<(), CatalogError> {
        let mut ins = tx
            .prepare_cached(
                "INSERT INTO backup_wal (backup_id, db_id, name, set_no) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT DO NOTHING",
            )
            .map_err(self.sql(ctx))?;
        for (name, set_no) in wal {
            ins.execute((&b.id, b.db_id, name, set_no))
                .map_err(self.sql(ctx))?;
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
        let ctx = format!("finding the backups that hold wal {name}");
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT w.backup_id, w.set_no FROM backup_wal w JOIN backup b ON b.id = w.backup_id
                 WHERE w.db_id = ?1 AND w.name = ?2 AND b.status = 'AVAILABLE'
                 ORDER BY b.start_time DESC, b.id DESC",
            )
            .map_err(self.sql(ctx.as_str()))?;
        let rows = stmt
            .query_map((db_id, name), |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(self.sql(ctx.as_str()))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.sql(ctx))
    }
}
