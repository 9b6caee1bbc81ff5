//! The catalog's settings (RMAN's CONFIGURE): one row per name.

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::value::vals;

impl Catalog {
    /// A setting stored in the catalog (RMAN's CONFIGURE), if set.
    pub fn config(&self, name: &str) -> Result<Option<String>, CatalogError> {
        self.query_opt(
            &format!("reading setting {name}"),
            "SELECT value FROM config WHERE name = ?1",
            vals![name],
            |r| r.get_text(0),
        )
    }

    /// Sets a catalog setting, replacing an earlier value.
    pub fn set_config(&self, name: &str, value: &str) -> Result<(), CatalogError> {
        self.exec(
            &format!("writing setting {name}"),
            "INSERT INTO config (name, value) VALUES (?1, ?2)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            vals![name, value],
        )?;
        Ok(())
    }

    /// Removes a catalog setting; true if it was set.
    pub fn clear_config(&self, name: &str) -> Result<bool, CatalogError> {
        let n = self.exec(
            &format!("clearing setting {name}"),
            "DELETE FROM config WHERE name = ?1",
            vals![name],
        )?;
        Ok(n > 0)
    }
}
