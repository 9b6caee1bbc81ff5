//! Where `recman receive` has got to for each database: the last WAL position it received
//! and the last it made durable in the repository's spool, with the time it saw them. The RPO
//! report and the metrics read it; nothing else depends on it.

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::value::vals;

/// One database's receiver position. LSNs are byte positions in the WAL stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivePosition {
    pub db_id: i64,
    pub timeline: u32,
    pub received_lsn: u64,
    pub flushed_lsn: u64,
    /// Unix microseconds of the last update.
    pub updated_at: i64,
    /// `sync` or `async`.
    pub mode: String,
    pub slot: String,
}

impl Catalog {
    /// Records the receiver's position for `p.db_id`, replacing the earlier one.
    pub fn set_receive_position(&self, p: &ReceivePosition) -> Result<(), CatalogError> {
        let ctx = "recording the wal receiver's position";
        self.write_tx(ctx, || {
            self.exec(
                ctx,
                "DELETE FROM wal_receive WHERE db_id = ?1",
                vals![p.db_id],
            )?;
            self.exec(
                ctx,
                "INSERT INTO wal_receive (db_id, timeline, received_lsn, flushed_lsn, updated_at, mode, slot)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                vals![
                    p.db_id,
                    i64::from(p.timeline),
                    p.received_lsn as i64,
                    p.flushed_lsn as i64,
                    p.updated_at,
                    p.mode.as_str(),
                    p.slot.as_str()
                ],
            )?;
            Ok(())
        })
    }

    /// The receiver's last recorded position for database `db_id`, if one ever ran.
    pub fn receive_position(&self, db_id: i64) -> Result<Option<ReceivePosition>, CatalogError> {
        self.query_opt(
            "reading the wal receiver's position",
            "SELECT db_id, timeline, received_lsn, flushed_lsn, updated_at, mode, slot
             FROM wal_receive WHERE db_id = ?1",
            vals![db_id],
            |r| {
                Ok(ReceivePosition {
                    db_id: r.get_i64(0)?,
                    timeline: r.get_u32(1)?,
                    received_lsn: r.get_u64(2)?,
                    flushed_lsn: r.get_u64(3)?,
                    updated_at: r.get_i64(4)?,
                    mode: r.get_text(5)?,
                    slot: r.get_text(6)?,
                })
            },
        )
    }
}
