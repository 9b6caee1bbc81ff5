//! The archived WAL of each database.

use rusqlite::{OptionalExtension, Row};

use crate::catalog::{Catalog, to_i64};
use crate::error::CatalogError;
use crate::records::WalRecord;

const WAL_COLS: &str = "db_id, name, timeline, path, size, stored_size, crc32c, archived_at";

pub(crate) fn wal_row(r: &Row<'_>) -> rusqlite::Result<WalRecord> {
    Ok(WalRecord {
        db_id: r.get(0)?,
        name: r.get(1)?,
        timeline: r.get(2)?,
        path: r.get(3)?,
        size: r.get(4)?,
        stored_size: r.get(5)?,
        crc32c: r.get(6)?,
        archived_at: r.get(7)?,
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
        let tx = self.write_tx(&ctx)?;
        tx.prepare_cached(&format!(
            "INSERT INTO wal ({WAL_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (db_id, name) DO UPDATE SET timeline = excluded.timeline,
                     path = excluded.path, size = excluded.size,
                     stored_size = excluded.stored_size, crc32c = excluded.crc32c,
                     archived_at = excluded.archived_at, status = 'AVAILABLE'"
        ))
        .and_then(|mut s| {
            s.execute((
                w.db_id,
                &w.name,
                w.timeline,
                &w.path,
                size,
                stored,
                w.crc32c,
                w.archived_at,
            ))
        })
        .map_err(self.sql(ctx.as_str()))?;
        // The file was archived again after a deletion began: the new copy is not to go.
        tx.execute(
            "DELETE FROM pending_delete WHERE kind = 'wal' AND db_id = ?1 AND key = ?2",
            (w.db_id, &w.name),
        )
        .map_err(self.sql(ctx.as_str()))?;
        tx.commit().map_err(self.sql(ctx))?;
        Ok(())
    }

    pub fn wal(&self, db_id: i64, name: &str) -> Result<Option<WalRecord>, CatalogError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT {WAL_COLS} FROM wal WHERE db_id = ?1 AND name = ?2"
            ))
            .and_then(|mut s| s.query_row((db_id, name), wal_row).optional())
            .map_err(self.sql(format!("reading archived wal {name}")))
    }

    /// The archived WAL of a database by name, which is timeline then position; a timeline's
    /// history file sorts before its segments.
    pub fn wal_list(&self, db_id: i64) -> Result<Vec<WalRecord>, CatalogError> {
        let ctx = "listing archived wal";
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {WAL_COLS} FROM wal WHERE db_id = ?1 ORDER BY name"
            ))
            .map_err(self.sql(ctx))?;
        let rows = stmt.query_map([db_id], wal_row).map_err(self.sql(ctx))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.sql(ctx))
    }
}
