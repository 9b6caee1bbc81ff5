//! The catalog: an SQLite file that indexes what the repository holds.
//!
//! The repository's manifests are the truth; the catalog answers LIST/REPORT/RESTORE planning
//! quickly. Every mutation is a single statement or one IMMEDIATE transaction, so a reader
//! never sees half of a change (safety invariant 5).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, Transaction, TransactionBehavior};

use crate::error::CatalogError;
use crate::records::DbRecord;
use crate::schema::{self, MigrateError, SCHEMA_VERSION};

/// How long a statement waits for another connection's write lock before failing. Backups hold
/// write transactions for milliseconds; a minute covers a slow disk with room to spare.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// A connection to one catalog file. Not `Sync`: one per thread.
pub struct Catalog {
    pub(crate) conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog").field("path", &self.path).finish()
    }
}

impl Catalog {
    /// Opens an existing catalog and migrates it to this build's schema.
    pub fn open(path: &Path) -> Result<Catalog, CatalogError> {
        if !path.exists() {
            return Err(CatalogError::CatalogMissing {
                path: path.to_path_buf(),
            });
        }
        Self::open_with(path, OpenFlags::default() & !OpenFlags::SQLITE_OPEN_CREATE)
    }

    /// Creates the catalog file if needed and brings it to this build's schema.
    pub fn create(path: &Path) -> Result<Catalog, CatalogError> {
        Self::open_with(path, OpenFlags::default())
    }

    fn open_with(path: &Path, flags: OpenFlags) -> Result<Catalog, CatalogError> {
        let sql = |context: &str| {
            let (path, context) = (path.to_path_buf(), context.to_string());
            move |source| CatalogError::Sqlite {
                path,
                context,
                source,
            }
        };
        let mut conn = Connection::open_with_flags(path, flags).map_err(sql("opening"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(sql("setting busy_timeout"))?;
        // WAL: readers never wait for the writer. synchronous=FULL: a committed AVAILABLE
        // must survive a power cut (safety invariant 1), NORMAL would not guarantee that.
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(sql("switching to WAL journal mode"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(CatalogError::Corrupt {
                path: path.to_path_buf(),
                detail: format!("journal mode stays {mode:?}, WAL is required"),
            });
        }
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .map_err(sql("setting pragmas"))?;
        match schema::migrate(&mut conn, now_micros()) {
            Ok(()) => {}
            Err(MigrateError::TooNew(found)) => {
                return Err(CatalogError::SchemaTooNew {
                    found,
                    supported: SCHEMA_VERSION,
                });
            }
            Err(MigrateError::Sql(ctx, e)) => return Err(sql(ctx)(e)),
        }
        Ok(Catalog {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The catalog file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Builds the error for a failed statement, naming what was being done.
    pub(crate) fn sql(
        &self,
        context: impl Into<String>,
    ) -> impl FnOnce(rusqlite::Error) -> CatalogError {
        let (path, context) = (self.path.clone(), context.into());
        move |source| CatalogError::Sqlite {
            path,
            context,
            source,
        }
    }

    pub(crate) fn corrupt(&self, detail: String) -> CatalogError {
        CatalogError::Corrupt {
            path: self.path.clone(),
            detail,
        }
    }

    /// Starts a write transaction that takes the write lock at once: a deferred one that reads
    /// first could fail with SQLITE_BUSY on upgrade without waiting for the busy timeout.
    pub(crate) fn write_tx(&self, context: &str) -> Result<Transaction<'_>, CatalogError> {
        Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(self.sql(format!("starting a transaction for {context}")))
    }

    pub fn schema_version(&self) -> Result<u32, CatalogError> {
        schema::current_version(&self.conn).map_err(self.sql("reading the schema version"))
    }

    /// A setting stored in the catalog (RMAN's CONFIGURE), if set.
    pub fn config(&self, name: &str) -> Result<Option<String>, CatalogError> {
        self.conn
            .query_row("SELECT value FROM config WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.sql(format!("reading setting {name}")))
    }

    /// Sets a catalog setting, replacing an earlier value.
    pub fn set_config(&self, name: &str, value: &str) -> Result<(), CatalogError> {
        self.conn
            .execute(
                "INSERT INTO config (name, value) VALUES (?1, ?2)
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                [name, value],
            )
            .map_err(self.sql(format!("writing setting {name}")))?;
        Ok(())
    }

    /// Removes a catalog setting; true if it was set.
    pub fn clear_config(&self, name: &str) -> Result<bool, CatalogError> {
        let n = self
            .conn
            .execute("DELETE FROM config WHERE name = ?1", [name])
            .map_err(self.sql(format!("clearing setting {name}")))?;
        Ok(n > 0)
    }

    /// Registers a cluster under `name` (RMAN's REGISTER DATABASE). One name maps to one
    /// system identifier; a cluster may be registered under several names.
    pub fn register_database(
        &self,
        name: &str,
        system_identifier: u64,
        pg_version: u32,
        pgdata: &str,
    ) -> Result<DbRecord, CatalogError> {
        let tx = self.write_tx("registering a database")?;
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
        tx.execute(
            "INSERT INTO database (name, system_identifier, pg_version, pgdata, registered_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            (
                name,
                system_identifier.to_string(),
                pg_version,
                pgdata,
                registered_at,
            ),
        )
        .map_err(self.sql(format!("registering database {name}")))?;
        let id = tx.last_insert_rowid();
        tx.commit()
            .map_err(self.sql(format!("committing the registration of {name}")))?;
        Ok(DbRecord {
            id,
            name: name.to_string(),
            system_identifier,
            pg_version,
            pgdata: pgdata.to_string(),
            registered_at,
        })
    }

    pub fn database(&self, name: &str) -> Result<Option<DbRecord>, CatalogError> {
        let mut v = self.query_databases("WHERE name = ?1", [name])?;
        Ok(v.pop())
    }

    pub fn database_by_id(&self, id: i64) -> Result<Option<DbRecord>, CatalogError> {
        let mut v = self.query_databases("WHERE id = ?1", [id])?;
        Ok(v.pop())
    }

    /// All registered databases, by name.
    pub fn databases(&self) -> Result<Vec<DbRecord>, CatalogError> {
        self.query_databases("", [])
    }

    pub fn databases_by_sysid(&self, sysid: u64) -> Result<Vec<DbRecord>, CatalogError> {
        self.query_databases("WHERE system_identifier = ?1", [sysid.to_string()])
    }

    fn query_databases(
        &self,
        filter: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<DbRecord>, CatalogError> {
        let sql = format!(
            "SELECT id, name, system_identifier, pg_version, pgdata, registered_at
             FROM database {filter} ORDER BY name"
        );
        let mut stmt = self
            .conn
            .prepare_cached(&sql)
            .map_err(self.sql("reading databases"))?;
        let rows = stmt
            .query_map(params, |r| Ok((db_row(r)?, r.get::<_, String>(2)?)))
            .map_err(self.sql("reading databases"))?;
        let mut out = Vec::new();
        for row in rows {
            let (mut db, sysid) = row.map_err(self.sql("reading databases"))?;
            db.system_identifier = sysid.parse().map_err(|_| {
                self.corrupt(format!(
                    "database {} has system identifier {sysid:?}, not a number",
                    db.name
                ))
            })?;
            out.push(db);
        }
        Ok(out)
    }
}

/// Maps a database row; the caller parses the system identifier (column 2).
fn db_row(r: &Row<'_>) -> rusqlite::Result<DbRecord> {
    Ok(DbRecord {
        id: r.get(0)?,
        name: r.get(1)?,
        system_identifier: 0,
        pg_version: r.get(3)?,
        pgdata: r.get(4)?,
        registered_at: r.get(5)?,
    })
}

pub(crate) fn now_micros() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// Converts a u64 for storage in SQLite's signed 64-bit integers.
pub(crate) fn to_i64(what: &'static str, value: u64) -> Result<i64, CatalogError> {
    i64::try_from(value).map_err(|_| CatalogError::OutOfRange { what, value })
}
