//! The registered clusters (RMAN's REGISTER DATABASE): a name, its system identifier, its
//! major and data directory.

use crate::catalog::{Catalog, now_micros};
use crate::error::CatalogError;
use crate::records::DbRecord;
use crate::value::{Value, vals};

impl Catalog {
    /// Registers a cluster under `name` (RMAN's REGISTER DATABASE). One name maps to one
    /// system identifier; a cluster may be registered under several names.
    pub fn register_database(
        &self,
        name: &str,
        system_identifier: u64,
        pg_version: u32,
        pgdata: &str,
    ) -> Result<DbRecord, CatalogError> {
        self.write_tx("registering a database", || {
            if let Some(existing) = self.database(name)? {
                return Err(if existing.system_identifier == system_identifier {
                    CatalogError::AlreadyRegistered {
                        name: name.to_string(),
                        sysid: system_identifier,
                    }
                } else {
                    CatalogError::NameTaken {
                        name: name.to_string(),
                        registered_sysid: existing.system_identifier,
                        sysid: system_identifier,
                    }
                });
            }
            let registered_at = now_micros();
            let id = self
                .query_opt(
                    &format!("registering database {name}"),
                    "INSERT INTO database (name, system_identifier, pg_version, pgdata,
                         registered_at)
                     VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
                    vals![
                        name,
                        system_identifier.to_string(),
                        pg_version,
                        pgdata,
                        registered_at
                    ],
                    |r| r.get_i64(0),
                )?
                .ok_or_else(|| self.corrupt(format!("registering {name} returned no id")))?;
            Ok(DbRecord {
                id,
                name: name.to_string(),
                system_identifier,
                pg_version,
                pgdata: pgdata.to_string(),
                registered_at,
            })
        })
    }

    pub fn database(&self, name: &str) -> Result<Option<DbRecord>, CatalogError> {
        let mut v = self.query_databases("WHERE name = ?1", vals![name])?;
        Ok(v.pop())
    }

    pub fn database_by_id(&self, id: i64) -> Result<Option<DbRecord>, CatalogError> {
        let mut v = self.query_databases("WHERE id = ?1", vals![id])?;
        Ok(v.pop())
    }

    /// All registered databases, by name.
    pub fn databases(&self) -> Result<Vec<DbRecord>, CatalogError> {
        self.query_databases("", vals![])
    }

    pub fn databases_by_sysid(&self, sysid: u64) -> Result<Vec<DbRecord>, CatalogError> {
        self.query_databases("WHERE system_identifier = ?1", vals![sysid.to_string()])
    }

    fn query_databases(
        &self,
        filter: &str,
        params: &[Value],
    ) -> Result<Vec<DbRecord>, CatalogError> {
        let sql = format!(
            "SELECT id, name, system_identifier, pg_version, pgdata, registered_at
             FROM database {filter} ORDER BY name"
        );
        self.query("reading databases", &sql, params, |r| {
            let name = r.get_text(1)?;
            let sysid = r.get_text(2)?;
            let system_identifier = sysid.parse().map_err(|_| {
                self.corrupt(format!(
                    "database {name} has system identifier {sysid:?}, not a number"
                ))
            })?;
            Ok(DbRecord {
                id: r.get_i64(0)?,
                name,
                system_identifier,
                pg_version: r.get_u32(3)?,
                pgdata: r.get_text(4)?,
                registered_at: r.get_i64(5)?,
            })
        })
    }
}
