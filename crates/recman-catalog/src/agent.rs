//! Where a registered cluster's database-host agent listens (`register database --agent`):
//! backups and `validate database` on the backup host read its data directory through it.

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::value::vals;

impl Catalog {
    /// Records (or replaces, or with None removes) the agent URL of database `db_id`.
    pub fn set_db_agent(&self, db_id: i64, url: Option<&str>) -> Result<(), CatalogError> {
        let ctx = "recording the database's agent";
        self.write_tx(ctx, || {
            self.exec(ctx, "DELETE FROM db_agent WHERE db_id = ?1", vals![db_id])?;
            if let Some(u) = url {
                self.exec(
                    ctx,
                    "INSERT INTO db_agent (db_id, url) VALUES (?1, ?2)",
                    vals![db_id, u],
                )?;
            }
            Ok(())
        })
    }

    /// The agent URL of database `db_id`, if it was registered with one.
    pub fn db_agent(&self, db_id: i64) -> Result<Option<String>, CatalogError> {
        self.query_opt(
            "reading the database's agent",
            "SELECT url FROM db_agent WHERE db_id = ?1",
            vals![db_id],
            |r| r.get_text(0),
        )
    }
}
