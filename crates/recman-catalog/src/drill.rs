//! Restore drills (`recman drill`): each one's outcome, its measured RTO and its checks, so
//! that `list drill` shows them and `report need-backup --drill-days N` can ask for a recent
//! successful one.

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::value::vals;

/// One drill. Times are unix microseconds (`started_at`) and milliseconds (durations);
/// `checks` is a JSON list of `{name, passed, detail}`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DrillRecord {
    pub id: i64,
    pub db_id: i64,
    pub started_at: i64,
    /// PASSED or FAILED.
    pub status: String,
    pub backup_id: Option<String>,
    pub target: String,
    pub restore_ms: i64,
    pub recovery_ms: i64,
    pub bytes_restored: i64,
    pub wal_bytes: i64,
    pub checks: String,
    pub error: Option<String>,
}

impl Catalog {
    /// Records a drill (its `id` is ignored: the catalog assigns one).
    pub fn add_drill(&self, d: &DrillRecord) -> Result<(), CatalogError> {
        let ctx = "recording a drill";
        self.write_tx(ctx, || {
            self.exec(
                ctx,
                "INSERT INTO drill (db_id, started_at, status, backup_id, target, restore_ms,
                   recovery_ms, bytes_restored, wal_bytes, checks, error)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                vals![
                    d.db_id,
                    d.started_at,
                    d.status.as_str(),
                    d.backup_id.as_deref(),
                    d.target.as_str(),
                    d.restore_ms,
                    d.recovery_ms,
                    d.bytes_restored,
                    d.wal_bytes,
                    d.checks.as_str(),
                    d.error.as_deref()
                ],
            )
            .map(|_| ())
        })
    }

    /// The drills of database `db_id`, oldest first.
    pub fn drills(&self, db_id: i64) -> Result<Vec<DrillRecord>, CatalogError> {
        self.query(
            "reading drills",
            "SELECT id, db_id, started_at, status, backup_id, target, restore_ms, recovery_ms,
                    bytes_restored, wal_bytes, checks, error
             FROM drill WHERE db_id = ?1 ORDER BY id",
            vals![db_id],
            |r| {
                Ok(DrillRecord {
                    id: r.get_i64(0)?,
                    db_id: r.get_i64(1)?,
                    started_at: r.get_i64(2)?,
                    status: r.get_text(3)?,
                    backup_id: r.get_opt_text(4)?,
                    target: r.get_text(5)?,
                    restore_ms: r.get_i64(6)?,
                    recovery_ms: r.get_i64(7)?,
                    bytes_restored: r.get_i64(8)?,
                    wal_bytes: r.get_i64(9)?,
                    checks: r.get_text(10)?,
                    error: r.get_opt_text(11)?,
                })
            },
        )
    }
}
