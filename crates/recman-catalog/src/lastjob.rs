//! The newest job with I/O statistics, for `recman metrics`.

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::value::vals;

impl Catalog {
    /// The id and type ("backup", "restore", "validate", ...) of the job that recorded I/O
    /// statistics last, if any did.
    pub fn last_io_job(&self) -> Result<Option<(String, String)>, CatalogError> {
        let rows = self.query(
            "reading the last i/o job",
            "SELECT job_id, job_type FROM io_stat ORDER BY id DESC LIMIT 1",
            vals![],
            |r| Ok((r.get_text(0)?, r.get_text(1)?)),
        )?;
        Ok(rows.into_iter().next())
    }
}
