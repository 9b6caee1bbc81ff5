//! A consistent copy of the catalog as one file (RMAN's BACKUP CURRENT CONTROLFILE of the
//! recovery catalog): SQLite's VACUUM INTO reads in one transaction, so the copy is whole
//! even while other commands write.

use std::path::Path;

use crate::catalog::{Backend, Catalog};
use crate::error::CatalogError;

impl Catalog {
    /// Writes a consistent copy of this catalog to `dest` (which must not exist). A shared
    /// PostgreSQL catalog is backed up by that server's own tools.
    pub fn snapshot_into(&self, dest: &Path) -> Result<(), CatalogError> {
        match &self.backend {
            Backend::Sqlite(conn) => conn
                .execute("VACUUM INTO ?1", [dest.to_string_lossy().into_owned()])
                .map(|_| ())
                .map_err(|e| self.sqlite_err("copy the catalog (VACUUM INTO)", e)),
            Backend::Postgres(_) => Err(CatalogError::SharedCatalog {
                catalog: self.path().display().to_string(),
                what: "a copy of the catalog in a piece (BACKUP CURRENT CONTROLFILE)".into(),
            }),
        }
    }
}
