//! The archived WAL of each database.

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::records::WalRecord;
use crate::value::{DbRow, to_i64, vals};

const WAL_COLS: &str = "db_id, name, timeline, path, size, stored_size, crc32c, archived_at";

pub(crate) fn wal_row(r: &DbRow<'_>) -> Result<WalRecord, CatalogError> {
    Ok(WalRecord {
        db_id: r.get_i64(0)?,
        name: r.get_text(1)?,
        timeline: r.get_u32(2)?,
        path: r.get_text(3)?,
        size: r.get_u64(4)?,
        stored_size: r.get_u64(5)?,
        crc32c: r.get_u32(6)?,
        archived_at: r.get_i64(7)?,
    })
}

impl Catalog {
    /// Records an archived WAL file, replacing an earlier record of the same name: PostgreSQL
    /// may archive a segment again after a crash, and the latest copy is the one on disk.
    pub fn add_wal(&self, w: &WalRecord) -> Result<(), CatalogError> {
        let ctx = format!("recording archived wal {}", w.name);
        let size = to_i64("wal size", w.size)?;
        let stored = to_i64("stored wal size", w.stored_size)?;
        // One transaction with the journal row below: a crash between the two must not leave
        // an AVAILABLE record whose file a pending deletion would still remove.
        self.write_tx(&ctx, || {
            self.exec(
                &ctx,
                &format!(
                    "INSERT INTO wal ({WAL_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                     ON CONFLICT (db_id, name) DO UPDATE SET timeline = excluded.timeline,
                         path = excluded.path, size = excluded.size,
                         stored_size = excluded.stored_size, crc32c = excluded.crc32c,
                         archived_at = excluded.archived_at, status = 'AVAILABLE'"
                ),
                vals![
                    w.db_id,
                    &w.name,
                    w.timeline,
                    &w.path,
                    size,
                    stored,
                    w.crc32c,
                    w.archived_at
                ],
            )?;
            // The file was archived again after a deletion began: the new copy is not to go.
            self.exec(
                &ctx,
                "DELETE FROM pending_delete WHERE kind = 'wal' AND db_id = ?1 AND key = ?2",
                vals![w.db_id, &w.name],
            )?;
            Ok(())
        })
    }

    /// Records several archived WAL files in one transaction (one commit, one fsync of the
    /// catalog, for a batch of segments archive-push stored together); all or none.
    pub fn add_wals(&self, ws: &[WalRecord]) -> Result<(), CatalogError> {
        let ctx = format!("recording {} archived wal files", ws.len());
        self.write_tx(&ctx, || ws.iter().try_for_each(|w| self.add_wal(w)))
    }

    pub fn wal(&self, db_id: i64, name: &str) -> Result<Option<WalRecord>, CatalogError> {
        self.query_opt(
            &format!("reading archived wal {name}"),
            &format!("SELECT {WAL_COLS} FROM wal WHERE db_id = ?1 AND name = ?2"),
            vals![db_id, name],
            wal_row,
        )
    }

    /// The archived WAL of a database by name, which is timeline then position; a timeline's
    /// history file sorts before its segments.
    pub fn wal_list(&self, db_id: i64) -> Result<Vec<WalRecord>, CatalogError> {
        self.query(
            "listing archived wal",
            &format!("SELECT {WAL_COLS} FROM wal WHERE db_id = ?1 ORDER BY name"),
            vals![db_id],
            wal_row,
        )
    }
}
