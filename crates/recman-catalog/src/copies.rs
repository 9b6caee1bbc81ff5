//! Copies of repository objects on other devices: what `backup backupset` and `backup
//! recovery-area` made, and pieces written straight to a device by `--device-type`. Restore
//! reads them when the repository's own object is missing or damaged.

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::value::{DbRow, to_i64, vals};

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

fn row(r: &DbRow<'_>) -> Result<CopyRecord, CatalogError> {
    Ok(CopyRecord {
        object: r.get_text(0)?,
        device: r.get_text(1)?,
        name: r.get_text(2)?,
        size: r.get_u64(3)?,
        crc32c: r.get_u32(4)?,
        primary: r.get_i64(5)? != 0,
        created: r.get_i64(6)?,
    })
}

impl Catalog {
    /// Records a copy, replacing an older record of the same object on the same device.
    pub fn add_copy(&self, c: &CopyRecord) -> Result<(), CatalogError> {
        let ctx = format!("recording the copy of {} on {}", c.object, c.device);
        self.exec(
            &ctx,
            &format!(
                "INSERT INTO object_copy ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (object, device) DO UPDATE SET name = excluded.name,
                     size = excluded.size, crc32c = excluded.crc32c,
                     is_primary = excluded.is_primary, created = excluded.created"
            ),
            vals![
                &c.object,
                &c.device,
                &c.name,
                to_i64("copy size", c.size)?,
                c.crc32c,
                c.primary,
                c.created
            ],
        )?;
        Ok(())
    }

    /// The copies of one object, the one written directly first, then by device.
    pub fn copies_of(&self, object: &str) -> Result<Vec<CopyRecord>, CatalogError> {
        self.query(
            &format!("reading the copies of {object}"),
            &format!(
                "SELECT {COLUMNS} FROM object_copy WHERE object = ?1
                 ORDER BY is_primary DESC, device"
            ),
            vals![object],
            row,
        )
    }

    /// The copies of every object under the directory-like prefix `dir`.
    pub fn copies_under(&self, dir: &str) -> Result<Vec<CopyRecord>, CatalogError> {
        // A prefix test by substr, not LIKE: LIKE ignores case in SQLite and not in
        // PostgreSQL, and object names are case-sensitive.
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        let len = prefix.chars().count() as i64;
        self.query(
            &format!("reading the copies under {dir}"),
            &format!(
                "SELECT {COLUMNS} FROM object_copy WHERE substr(object, 1, ?2) = ?1
                 ORDER BY object, device"
            ),
            vals![&prefix, len],
            row,
        )
    }

    /// Forgets one copy; false when there was no record.
    pub fn remove_copy(&self, object: &str, device: &str) -> Result<bool, CatalogError> {
        let n = self.exec(
            &format!("forgetting the copy of {object} on {device}"),
            "DELETE FROM object_copy WHERE object = ?1 AND device = ?2",
            vals![object, device],
        )?;
        Ok(n > 0)
    }
}
