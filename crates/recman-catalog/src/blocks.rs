//! Block media recovery's catalog: the corrupt blocks the last `validate database` found
//! (RMAN's V$DATABASE_BLOCK_CORRUPTION, what `recover corruption-list` repairs) and the
//! repairs `recover block` made.

use crate::catalog::{Catalog, now_micros};
use crate::error::CatalogError;
use crate::records::CorruptBlock;
use crate::value::{to_i64, vals};

/// One block `recover block` wrote back into the cluster.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BlockRepair {
    pub path: String,
    pub block: u32,
    /// The backup the block's image was restored from before WAL brought it forward.
    pub backup_id: String,
    /// The LSN on the page written back.
    pub page_lsn: u64,
    /// The cluster's checkpoint LSN the page was brought forward to.
    pub recovered_to_lsn: u64,
    /// Unix microseconds.
    pub repaired_at: i64,
}

impl Catalog {
    /// Replaces database `db_id`'s list of corrupt blocks with what a `validate database` of
    /// the whole cluster found (an empty list clears it).
    pub fn set_block_corruption(
        &self,
        db_id: i64,
        blocks: &[CorruptBlock],
    ) -> Result<(), CatalogError> {
        let ctx = "recording the corrupt blocks validate database found";
        let now = now_micros();
        self.write_tx(ctx, || {
            self.exec(
                ctx,
                "DELETE FROM block_corruption WHERE db_id = ?1",
                vals![db_id],
            )?;
            for b in blocks {
                self.exec(
                    ctx,
                    "INSERT INTO block_corruption (db_id, path, block, kind, relation, detail,
                         found_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (db_id, path, block) DO NOTHING",
                    vals![
                        db_id,
                        &b.path,
                        i64::from(b.block),
                        &b.kind,
                        &b.relation,
                        &b.detail,
                        now
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// The corrupt blocks recorded for database `db_id`, by file and block (`backup_id` is
    /// empty: they were found in the cluster, not in a backup).
    pub fn block_corruption(&self, db_id: i64) -> Result<Vec<CorruptBlock>, CatalogError> {
        self.query(
            "reading the recorded corrupt blocks",
            "SELECT path, block, kind, relation, detail FROM block_corruption
             WHERE db_id = ?1 ORDER BY path, block",
            vals![db_id],
            |r| {
                Ok(CorruptBlock {
                    backup_id: String::new(),
                    path: r.get_text(0)?,
                    block: r.get_u32(1)?,
                    kind: r.get_text(2)?,
                    relation: r.get_opt_text(3)?,
                    detail: r.get_text(4)?,
                })
            },
        )
    }

    /// Records a repaired block and takes it off the corruption list, in one transaction.
    pub fn record_block_repair(&self, db_id: i64, r: &BlockRepair) -> Result<(), CatalogError> {
        let ctx = format!("recording the repair of block {} of {}", r.block, r.path);
        self.write_tx(&ctx, || {
            self.exec(
                &ctx,
                "INSERT INTO block_repair (db_id, path, block, backup_id, page_lsn,
                     recovered_to_lsn, repaired_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                vals![
                    db_id,
                    &r.path,
                    i64::from(r.block),
                    &r.backup_id,
                    to_i64("lsn", r.page_lsn)?,
                    to_i64("lsn", r.recovered_to_lsn)?,
                    r.repaired_at
                ],
            )?;
            self.exec(
                &ctx,
                "DELETE FROM block_corruption WHERE db_id = ?1 AND path = ?2 AND block = ?3",
                vals![db_id, &r.path, i64::from(r.block)],
            )?;
            Ok(())
        })
    }

    /// The repairs made in database `db_id`, oldest first.
    pub fn block_repairs(&self, db_id: i64) -> Result<Vec<BlockRepair>, CatalogError> {
        self.query(
            "reading the block repairs",
            "SELECT path, block, backup_id, page_lsn, recovered_to_lsn, repaired_at
             FROM block_repair WHERE db_id = ?1 ORDER BY id",
            vals![db_id],
            |r| {
                Ok(BlockRepair {
                    path: r.get_text(0)?,
                    block: r.get_u32(1)?,
                    backup_id: r.get_text(2)?,
                    page_lsn: r.get_u64(3)?,
                    recovered_to_lsn: r.get_u64(4)?,
                    repaired_at: r.get_i64(5)?,
                })
            },
        )
    }
}
