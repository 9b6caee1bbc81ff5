//! Catalog maintenance: crosscheck statuses, deletions that survive a crash half-way, records
//! rebuilt from manifests, and which backup sets hold archived WAL.
//!
//! A deletion is two-phase so that the catalog never claims what the media lack: one
//! transaction marks the records EXPIRED and journals the deletion in `pending_delete`; the
//! caller then removes the media and calls [`Catalog::finish_delete`]. A process killed in
//! between leaves an EXPIRED record and a journal row that the next maintenance command
//! finishes ([`Catalog::pending_deletes`]).

use std::collections::HashMap;

use crate::catalog::{Catalog, now_micros};
use crate::error::CatalogError;
use crate::records::{
    BackupRecord, BackupStatus, CorruptBlock, DeleteKind, MediaStatus, PendingDelete, PieceRecord,
    WalRecord,
};
use crate::value::{DbRow, vals};

fn media_status(r: &DbRow<'_>, i: usize) -> Result<MediaStatus, CatalogError> {
    match r.get_text(i)?.as_str() {
        "AVAILABLE" => Ok(MediaStatus::Available),
        "EXPIRED" => Ok(MediaStatus::Expired),
        other => Err(CatalogError::Corrupt {
            path: r.catalog.to_path_buf(),
            detail: format!("unknown media status {other:?}"),
        }),
    }
}

fn kind_str(k: DeleteKind) -> &'static str {
    match k {
        DeleteKind::Backup => "backup",
        DeleteKind::Wal => "wal",
    }
}

fn pending_row(r: &DbRow<'_>) -> Result<PendingDelete, CatalogError> {
    Ok(PendingDelete {
        kind: if r.get_text(0)? == "backup" {
            DeleteKind::Backup
        } else {
            DeleteKind::Wal
        },
        db_id: r.get_i64(1)?,
        key: r.get_text(2)?,
        path: r.get_text(3)?,
    })
}

impl Catalog {
    /// Every catalog setting, by name.
    pub fn config_all(&self) -> Result<Vec<(String, String)>, CatalogError> {
        self.query(
            "reading settings",
            "SELECT name, value FROM config ORDER BY name",
            vals![],
            |r| Ok((r.get_text(0)?, r.get_text(1)?)),
        )
    }

    /// The pieces of a backup with their media status, by set then piece number.
    pub fn piece_states(
        &self,
        backup_id: &str,
    ) -> Result<Vec<(PieceRecord, MediaStatus)>, CatalogError> {
        self.query(
            &format!("reading the pieces of backup {backup_id}"),
            "SELECT backup_id, set_no, piece_no, channel, path, size, crc32c, file_count,
                 raw_bytes, status
             FROM piece WHERE backup_id = ?1 ORDER BY set_no, piece_no",
            vals![backup_id],
            |r| Ok((crate::backup::piece_row(r)?, media_status(r, 9)?)),
        )
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
        self.write_tx(&ctx, || {
            for (set_no, piece_no, st) in found {
                self.exec(
                    &ctx,
                    "UPDATE piece SET status = ?4 WHERE backup_id = ?1 AND set_no = ?2
                         AND piece_no = ?3",
                    vals![backup_id, set_no, piece_no, st.as_str()],
                )?;
            }
            self.query_opt(
                &ctx,
                "UPDATE backup SET status = CASE
                     WHEN status NOT IN ('AVAILABLE', 'EXPIRED') THEN status
                     WHEN EXISTS (SELECT 1 FROM piece p WHERE p.backup_id = backup.id
                                  AND p.status = 'EXPIRED') THEN 'EXPIRED'
                     WHEN EXISTS (SELECT 1 FROM pending_delete d WHERE d.kind = 'backup'
                                  AND d.key = backup.id) THEN 'EXPIRED'
                     ELSE 'AVAILABLE' END
                 WHERE id = ?1 RETURNING status",
                vals![backup_id],
                |r| r.get_parsed::<BackupStatus>(0),
            )?
            .ok_or_else(|| CatalogError::BackupNotFound {
                id: backup_id.to_string(),
            })
        })
    }

    /// The archived WAL of a database with media status, by name.
    pub fn wal_states(&self, db_id: i64) -> Result<Vec<(WalRecord, MediaStatus)>, CatalogError> {
        self.query(
            "listing archived wal",
            "SELECT db_id, name, timeline, path, size, stored_size, crc32c, archived_at, status
             FROM wal WHERE db_id = ?1 ORDER BY name",
            vals![db_id],
            |r| Ok((crate::wal::wal_row(r)?, media_status(r, 8)?)),
        )
    }

    /// Records what a crosscheck found for archived WAL files, in one transaction. A file with
    /// a deletion in progress stays EXPIRED.
    pub fn set_wal_statuses(
        &self,
        db_id: i64,
        found: &[(String, MediaStatus)],
    ) -> Result<(), CatalogError> {
        let ctx = "recording the crosscheck of archived wal";
        self.write_tx(ctx, || {
            for (name, st) in found {
                self.exec(
                    ctx,
                    "UPDATE wal SET status = CASE WHEN EXISTS (SELECT 1 FROM pending_delete d
                             WHERE d.kind = 'wal' AND d.db_id = wal.db_id AND d.key = wal.name)
                         THEN 'EXPIRED' ELSE ?3 END
                     WHERE db_id = ?1 AND name = ?2",
                    vals![db_id, name, st.as_str()],
                )?;
            }
            Ok(())
        })
    }

    /// Phase one of a deletion: in one transaction, every item's record leaves the AVAILABLE
    /// listings (status EXPIRED) and a journal row says what is to be removed.
    pub fn begin_delete(&self, items: &[PendingDelete]) -> Result<(), CatalogError> {
        let now = now_micros();
        self.write_tx("recording deletions", || {
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
                self.exec(
                    &format!("marking {} for deletion", it.key),
                    sql,
                    vals![it.db_id, &it.key],
                )?;
                self.exec(
                    &format!("journalling the deletion of {}", it.key),
                    "INSERT INTO pending_delete (kind, db_id, key, path, since)
                     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
                    vals![kind_str(it.kind), it.db_id, &it.key, &it.path, now],
                )?;
            }
            Ok(())
        })
    }

    /// Deletions begun and not finished, oldest first; all databases when `db_id` is None.
    pub fn pending_deletes(&self, db_id: Option<i64>) -> Result<Vec<PendingDelete>, CatalogError> {
        let ctx = "reading deletions in progress";
        let cols = "SELECT kind, db_id, key, path FROM pending_delete";
        match db_id {
            Some(id) => self.query(
                ctx,
                &format!("{cols} WHERE db_id = ?1 ORDER BY since, kind, key"),
                vals![id],
                pending_row,
            ),
            None => self.query(
                ctx,
                &format!("{cols} ORDER BY since, kind, key"),
                vals![],
                pending_row,
            ),
        }
    }

    /// Phase two of a deletion, once the media are gone: the record and its journal row go in
    /// one transaction.
    pub fn finish_delete(&self, it: &PendingDelete) -> Result<(), CatalogError> {
        let ctx = format!("removing the record of {}", it.key);
        self.write_tx(&ctx, || {
            let sql = match it.kind {
                DeleteKind::Backup => "DELETE FROM backup WHERE db_id = ?1 AND id = ?2",
                DeleteKind::Wal => "DELETE FROM wal WHERE db_id = ?1 AND name = ?2",
            };
            self.exec(&ctx, sql, vals![it.db_id, &it.key])?;
            self.exec(
                &ctx,
                "DELETE FROM pending_delete WHERE kind = ?1 AND db_id = ?2 AND key = ?3",
                vals![kind_str(it.kind), it.db_id, &it.key],
            )?;
            Ok(())
        })
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
        self.write_tx(ctx, || {
            let mut n = (0, 0);
            for id in backups {
                n.0 += self.exec(
                    ctx,
                    "DELETE FROM backup WHERE db_id = ?1 AND id = ?2 AND status = 'EXPIRED'",
                    vals![db_id, id],
                )?;
            }
            for name in wal {
                n.1 += self.exec(
                    ctx,
                    "DELETE FROM wal WHERE db_id = ?1 AND name = ?2 AND status = 'EXPIRED'",
                    vals![db_id, name],
                )?;
            }
            Ok(n)
        })
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
        self.write_tx(&ctx, || {
            crate::backup::insert_backup_row(self, b, &ctx)?;
            crate::backup::insert_pieces(self, b, pieces, corrupt)
        })
    }

    /// Records that backup set `set_no` of `backup_id` holds these archived WAL files.
    pub fn add_backup_wal(
        &self,
        backup_id: &str,
        db_id: i64,
        names: &[(String, u32)],
    ) -> Result<(), CatalogError> {
        let ctx = format!("recording the wal held by backup {backup_id}");
        self.write_tx(&ctx, || self.insert_held(backup_id, db_id, names, &ctx))
    }

    /// For each archived WAL file of a database, in how many AVAILABLE backups it is held.
    pub fn wal_backup_counts(&self, db_id: i64) -> Result<HashMap<String, u32>, CatalogError> {
        let rows = self.query(
            "counting backups of archived wal",
            "SELECT w.name, COUNT(*) FROM backup_wal w JOIN backup b ON b.id = w.backup_id
             WHERE w.db_id = ?1 AND b.status = 'AVAILABLE' GROUP BY w.name",
            vals![db_id],
            |r| Ok((r.get_text(0)?, r.get_u32(1)?)),
        )?;
        Ok(rows.into_iter().collect())
    }

    /// The archived WAL files a backup holds, by name.
    pub fn backup_wal(&self, backup_id: &str) -> Result<Vec<(String, u32)>, CatalogError> {
        self.query(
            &format!("reading the wal held by backup {backup_id}"),
            "SELECT name, set_no FROM backup_wal WHERE backup_id = ?1 ORDER BY name",
            vals![backup_id],
            |r| Ok((r.get_text(0)?, r.get_u32(1)?)),
        )
    }
}
