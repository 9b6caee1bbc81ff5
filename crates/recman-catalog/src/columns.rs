//! The columns a catalog really has, read from its engine: what the conformance suite holds
//! against the definitions in [`crate::tables`].

use crate::catalog::Catalog;
use crate::error::CatalogError;
use crate::value::vals;

impl Catalog {
    /// The columns `table` has in this catalog, in order, with whether each is NOT NULL: what
    /// the conformance suite compares across both engines.
    pub fn table_columns(&self, table: &str) -> Result<Vec<(String, bool)>, CatalogError> {
        let sql = if self.is_shared() {
            "SELECT column_name::text, CASE WHEN is_nullable = 'NO' THEN 1 ELSE 0 END
             FROM information_schema.columns
             WHERE table_schema = current_schema() AND table_name = ?1
             ORDER BY ordinal_position"
        } else {
            // A key column counts as NOT NULL, as PostgreSQL makes it (SQLite may not say so).
            "SELECT name, CASE WHEN \"notnull\" = 1 OR pk > 0 THEN 1 ELSE 0 END
             FROM pragma_table_info(?1) ORDER BY cid"
        };
        self.query(
            &format!("listing the columns of {table}"),
            sql,
            vals![table],
            |r| Ok((r.get_text(0)?, r.get_i64(1)? == 1)),
        )
    }
}
