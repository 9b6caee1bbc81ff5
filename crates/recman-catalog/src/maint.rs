//! Catalog maintenance: crosscheck statuses, deletions that survive a crash half-way, records
//! rebuilt from manifests, and which backup sets hold archived WAL.
//!
//! A deletion is two-phase so that the catalog never claims what the media lack: one
//! transaction marks the records EXPIRED and journals the deletion in `pending_delete`; the
//! caller then removes the media and calls [`Catalog::finish_delete`]. A process killed in
//! between leaves an EXPIRED record and a journal row that the next maintenance command
//! finishes ([`Catalog::pending_deletes`]).

use std::collections::HashMap;

use rusqlite::Row;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use crate::catalog::{Catalog, now_micros};
use crate::error::CatalogError;
use crate::records::{
    BackupRecord, BackupStatus, CorruptBlock, DeleteKind, MediaStatus, PendingDelete, PieceRecord,
    WalRecord,
};

impl ToSql for MediaStatus {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for MediaStatus {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        match value.as_str()? {
            "AVAILABLE" => Ok(MediaStatus::Available),
            "EXPIRED" => Ok(MediaStatus::Expired),
            other => Err(FromSqlError::Other(
                format!("unknown media status {other:?}").into(),
            )),
        }
    }
}

fn kind_str(k: DeleteKind) -> &'static str {
    match k {
        DeleteKind::Backup => "backup",
        DeleteKind::Wal => "wal",
    }
}

fn piece_row(r: &Row<'_>) -> rusqlite::Result<(PieceRecord, MediaStatus)> {
    Ok((
        PieceRecord {
            backup_id: r.get(0)?,
            set_no: r.get(1)?,
            piece_no: r.get(2)?,
            channel: r.get(3)?,
            path: r.get(4)?,
            size: r.get(5)?,
            crc32c: r.get(6)?,
            file_count: r.get(7)?,
            raw_bytes: r.get(8)?,
        },
        r.get(9)?,
    ))
}

impl Catalog {
    /// Every catalog setting, by name.
    pub fn config_all(&self) -> Result<Vec<(String, String)>, CatalogError> {
        let ctx = "reading settings";
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name, value FROM config ORDER BY name")
            .map_err(self.sql(ctx))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(self.sql(ctx))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.sql(ctx))
    }

    /// The pieces of a backup with their media status, by set then piece number.
    pub fn piece_states(
        &self,
        backup_id: &str,
    ) -> Result<Vec<(PieceRecord, MediaStatus)>, CatalogError> {
        let ctx = format!("reading the pieces of backup {backup_id}");
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT backup_id, set_no, piece_no, channel, path, size, crc32c, file_count,
                     raw_bytes, status
                 FROM piece WHERE backup_id = ?1 ORDER BY set_no, piece_no",
            )
            .map_err(self.sql(ctx.as_str()))?;
        let rows = stmt
            .query_map([backup_id], piece_row)
            .map_err(self.sql(ctx.as_str()))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.sql(ctx))
    }

    /// Records what a crosscheck found for some pieces of one backup and derives the backup's
    /// status in the same transaction: EXPIRED while any piece is, AVAILABLE once all are
    /// found again. RUNNING and FAILED backups keep their status. Returns the backup's status.
    pub fn set_piece_statuses(
        &self,
        backup_id: &str,
        found: &[(u32, u32, MediaStatus)],
    ) -> Result<BackupStatus, CatalogError> {
        let ctx = format!("recording the crosscheck of backup {backup_id}");
        let tx = self.write_tx(&ctx)?;
        for (set_no, piece_no, st) in found {
            tx.execute(
                "UPDATE piece SET status = ?4 WHERE backup_id = ?1 AND set_no = ?2
                     AND piece_no = ?3",
                (backup_id, set_no, piece_no, st),
            )
            .map_err(self.sql(ctx.as_str()))?;
        }
        let status: BackupStatus = tx
            .query_row(
                "UPDATE backup SET status = CASE
                     WHEN status NOT IN ('AVAILABLE', 'EXPIRED') THEN status
                     WHEN EXISTS (SELECT 1 FROM piece p WHERE p.backup_id = backup.id
                                  AND p.status = 'EXPIRED') THEN 'EXPIRED'
                     WHEN EXISTS (SELECT 1 FROM pending_delete d WHERE d.kind = 'backup'
                                  AND d.key = backup.id) THEN 'EXPIRED'
                     ELSE 'AVAILABLE' END
                 WHERE id = ?1 RETURNING status",
                [backup_id],
                |r| r.get(0),
            )
            .map_err(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => CatalogError::BackupNotFound {
                    id: backup_id.to_string(),
                },
                e => self.sql(ctx.clone())(e),
            })?;
        tx.commit().map_err(self.sql(ctx))?;
        Ok(status)
    }

    /// The archived WAL of a database with media status, by name.
    pub fn wal_states(&self, db_id: i64) -> Result<Vec<(WalRecord, MediaStatus)>, CatalogError> {
        let ctx = "listing archived wal";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT db_id, name, timeline, path, size, stored_size, crc32c, archived_at, status
                 FROM wal WHERE db_id = ?1 ORDER BY name",
            )
            .map_err(self.sql(ctx))?;
        let rows = stmt
            .query_map([db_id], |r| Ok((crate::wal::wal_row(r)?, r.get(8)?)))
            .map_err(self.sql(ctx))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.sql(ctx))
    }

    /// Records what a crosscheck found for archived WAL files, in one transaction. A file with
    /// a deletion in progress stays EXPIRED.
    pub fn set_wal_statuses(
        &self,
        db_id: i64,
        found: &[(String, MediaStatus)],
    ) -> Result<(), CatalogError> {
        let ctx = "recording the crosscheck of archived wal";
        let tx = self.write_tx(ctx)?;
        for (name, st) in found {
            tx.execute(
                "UPDATE wal SET status = CASE WHEN EXISTS (SELECT 1 FROM pending_delete d
                         WHERE d.kind = 'wal' AND d.db_id = wal.db_id AND d.key = wal.name)
                     THEN 'EXPIRED' ELSE ?3 END
                 WHERE db_id = ?1 AND name = ?2",
                (db_id, name, st),
            )
            .map_err(self.sql(ctx))?;
        }
        tx.commit().map_err(self.sql(ctx))
    }

    /// Phase one of a deletion: in one transaction, every item's record leaves the AVAILABLE
    /// listings (status EXPIRED) and a journal row says what is to be removed.
    pub fn begin_delete(&self, items: &[PendingDelete]) -> Result<(), CatalogError> {
        let ctx = "recording deletions";
        let tx = self.write_tx(ctx)?;
        let now = now_micros();
        for it in items {
            let sql = match it.kind {
                DeleteKind::Backup => {
                    "UPDATE backup SET status = 'EXPIRED' WHERE db_id = ?1 AND id = ?2
                         AND status <> 'RUNNING'"
                }
                DeleteKind::Wal => {
                    "UPDATE wal SET status = 'EXPIRED' WHERE db_id = ?1 AND name = ?2"
                }
            };
            tx.execute(sql, (it.db_id, &it.key))
                .map_err(self.sql(format!("marking {} for deletion", it.key)))?;
            tx.execute(
                "INSERT INTO pending_delete (kind, db_id, key, path, since)
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
                (kind_str(it.kind), it.db_id, &it.key, &it.path, now),
            )
            .map_err(self.sql(format!("journalling the deletion of {}", it.key)))?;
        }
        tx.commit().map_err(self.sql(ctx))
    }

    /// Deletions begun and not finished, oldest first; all databases when `db_id` is None.
    pub fn pending_deletes(&self, db_id: Option<i64>) -> Result<Vec<PendingDelete>, CatalogError> {
        let ctx = "reading deletions in progress";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT kind, db_id, key, path FROM pending_delete
                 WHERE ?1 IS NULL OR db_id = ?1 ORDER BY since, kind, key",
            )
            .map_err(self.sql(ctx))?;
        let rows = stmt
            .query_map([db_id], |r| {
                let kind: String = r.get(0)?;
                Ok(PendingDelete {
                    kind: if kind == "backup" {
                        DeleteKind::Backup
                    } else {
                        DeleteKind::Wal
                    },
                    db_id: r.get(1)?,
                    key: r.get(2)?,
                    path: r.get(3)?,
                })
            })
            .map_err(self.sql(ctx))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.sql(ctx))
    }

    /// Phase two of a deletion, once the media are gone: the record and its journal row go in
    /// one transaction.
    pub fn finish_delete(&self, it: &PendingDelete) -> Result<(), CatalogError> {
        let ctx = format!("removing the record of {}", it.key);
        let tx = self.write_tx(&ctx)?;
        match it.kind {
            DeleteKind::Backup => tx.execute(
                "DELETE FROM backup WHERE db_id = ?1 AND id = ?2",
                (it.db_id, &it.key),
            ),
            DeleteKind::Wal => tx.execute(
                "DELETE FROM wal WHERE db_id = ?1 AND name = ?2",
                (it.db_id, &it.key),
            ),
        }
        .map_err(self.sql(ctx.as_str()))?;
        tx.execute(
            "DELETE FROM pending_delete WHERE kind = ?1 AND db_id = ?2 AND key = ?3",
            (kind_str(it.kind), it.db_id, &it.key),
        )
        .map_err(self.sql(ctx.as_str()))?;
        tx.commit().map_err(self.sql(ctx))
    }

    /// Removes the records of backups and WAL whose media are already gone (DELETE EXPIRED):
    /// only EXPIRED ones, never an AVAILABLE record. Returns how many of each went.
    pub fn delete_expired_records(
        &self,
        db_id: i64,
        backups: &[String],
        wal: &[String],
    ) -> Result<(usize, usize), CatalogError> {
        let ctx = "deleting expired records";
        let tx = self.write_tx(ctx)?;
        let mut n = (0, 0);
        for id in backups {
            n.0 += tx
                .execute(
                    "DELETE FROM backup WHERE db_id = ?1 AND id = ?2 AND status = 'EXPIRED'",
                    (db_id, id),
                )
                .map_err(self.sql(ctx))?;
        }
        for name in wal {
            n.1 += tx
                .execute(
                    "DELETE FROM wal WHERE db_id = ?1 AND name = ?2 AND status = 'EXPIRED'",
                    (db_id, name),
                )
                .map_err(self.sql(ctx))?;
        }
        tx.commit().map_err(self.sql(ctx))?;
        Ok(n)
    }

    /// Records a complete backup with its pieces and corrupt blocks in one transaction (the
    /// catalog rebuilt from a manifest). Refuses a backup id already present.
    pub fn record_backup(
        &self,
        b: &BackupRecord,
        pieces: &[PieceRecord],
        corrupt: &[CorruptBlock],
    ) -> Result<(), CatalogError> {
        let ctx = format!("recording backup {}", b.id);
        let tx = self.write_tx(&ctx)?;
        crate::backup::insert_backup_on(self, &tx, b, &ctx)?;
        crate::backup::insert_pieces_on(self, &tx, b, pieces, corrupt, &ctx)?;
        tx.commit().map_err(self.sql(ctx))
    }

    /// Records that backup set `set_no` of `backup_id` holds these archived WAL files.
    pub fn add_backup_wal(
        &self,
        backup_id: &str,
        db_id: i64,
        names: &[(String, u32)],
    ) -> Result<(), CatalogError> {
        let ctx = format!("recording the wal held by backup {backup_id}");
        let tx = self.write_tx(&ctx)?;
        for (name, set_no) in names {
            tx.execute(
                "INSERT INTO backup_wal (backup_id, db_id, name, set_no) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT DO NOTHING",
                (backup_id, db_id, name, set_no),
            )
            .map_err(self.sql(ctx.as_str()))?;
        }
        tx.commit().map_err(self.sql(ctx))
    }

    /// For each archived WAL file of a database, in how many AVAILABLE backups it is held.
    pub fn wal_backup_counts(&self, db_id: i64) -> Result<HashMap<String, u32>, CatalogError> {
        let ctx = "counting backups of archived wal";
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT w.name, COUNT(*) FROM backup_wal w JOIN backup b ON b.id = w.backup_id
                 WHERE w.db_id = ?1 AND b.status = 'AVAILABLE' GROUP BY w.name",
            )
            .map_err(self.sql(ctx))?;
        let rows = stmt
            .query_map([db_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(self.sql(ctx))?;
        rows.collect::<rusqlite::Result<HashMap<_, _>>>()
            .map_err(self.sql(ctx))
    }

    /// The archived WAL files a backup holds, by name.
    pub fn backup_wal(&self, backup_id: &str) -> Result<Vec<(String, u32)>, CatalogError> {
        let ctx = format!("reading the wal held by backup {backup_id}");
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT name, set_no FROM backup_wal WHERE backup_id = ?1 ORDER BY name",
            )
            .map_err(self.sql(ctx.as_str()))?;
        let rows = stmt
            .query_map([backup_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(self.sql(ctx.as_str()))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.sql(ctx))
    }
}
