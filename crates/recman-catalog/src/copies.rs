//! Copies of repository objects on other devices: what `backup backupset` and `backup
//! recovery-area` made, and pieces written straight to a device by `--device-type`. Restore
//! reads them when the repository's own object is missing or damaged.

use rusqlite::params;

use crate::catalog::Catalog;
use crate::error::CatalogError;

/// One copy of a repository object.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CopyRecord {
    /// The object's name in the repository.
    pub object: String,
    /// The device type holding the copy (disk, s3, sbt).
    pub device: String,
    /// The copy's name on that device.
    pub name: String,
    pub size: u64,
    pub crc32c: u32,
    /// Written to the device directly: the repository never held the object.
    pub primary: bool,
    pub created: i64,
}

const COLUMNS: &str = "object, device, name, size, crc32c, is_primary, created";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CopyRecord> {
    Ok(CopyRecord {
        object: r.get(0)?,
        device: r.get(1)?,
        name: r.get(2)?,
        size: r.get(3)?,
        crc32c: r.get(4)?,
        primary: r.get::<_, i64>(5)? != 0,
        created: r.get(6)?,
    })
}

impl Catalog {
    /// Records a copy, replacing an older record of the same object on the same device.
    pub fn add_copy(&self, c: &CopyRecord) -> Result<(), CatalogError> {
        let ctx = format!("recording the copy of {} on {}", c.object, c.device);
        self.conn
            .execute(
                &format!("INSERT OR REPLACE INTO object_copy ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
                params![c.object, c.device, c.name, c.size, c.crc32c, c.primary as i64, c.created],
            )
            .map_err(self.sql(ctx.as_str()))?;
        Ok(())
    }

    /// The copies of one object, the one written directly first, then by device.
    pub fn copies_of(&self, object: &str) -> Result<Vec<CopyRecord>, CatalogError> {
        let ctx = format!("reading the copies of {object}");
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM object_copy WHERE object = ?1 ORDER BY is_primary DESC, device"
            ))
            .map_err(self.sql(ctx.as_str()))?;
        let rows = stmt
            .query_map([object], row)
            .map_err(self.sql(ctx.as_str()))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.sql(ctx))
    }

    /// The copies of every object under the directory-like prefix `dir`.
    pub fn copies_under(&self, dir: &str) -> Result<Vec<CopyRecord>, CatalogError> {
        let ctx = format!("reading the copies under {dir}");
        let pattern = format!(
            "{}/%",
            dir.trim_end_matches('/')
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM object_copy WHERE object LIKE ?1 ESCAPE '\\' ORDER BY object, device"
            ))
            .map_err(self.sql(ctx.as_str()))?;
        let rows = stmt
            .query_map([pattern], row)
            .map_err(self.sql(ctx.as_str()))?;
        rows.collect::<rusqlite::Result<Vec<_>>>()
            .map_err(self.sql(ctx))
    }

    /// Forgets one copy; false when there was no record.
    pub fn remove_copy(&self, object: &str, device: &str) -> Result<bool, CatalogError> {
        let ctx = format!("forgetting the copy of {object} on {device}");
        let n = self
            .conn
            .execute(
                "DELETE FROM object_copy WHERE object = ?1 AND device = ?2",
                params![object, device],
            )
            .map_err(self.sql(ctx.as_str()))?;
        Ok(n > 0)
    }
}
