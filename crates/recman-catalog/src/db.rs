//! The catalog's SQL layer: one small interface over SQLite and PostgreSQL, so every
//! [`Catalog`] method is written once.
//!
//! # Contract
//! - **SQL** is written once, in the dialect both engines accept: numbered placeholders
//!   `?1`..`?N` (rewritten to `$1`..`$N` for PostgreSQL), `INSERT ... ON CONFLICT (...) DO
//!   UPDATE / DO NOTHING` (never `INSERT OR REPLACE`), `RETURNING`, `COALESCE`, `CASE`, no
//!   `LIKE` (case rules differ), no `?N IS NULL` (PostgreSQL cannot type it). A `?` never
//!   appears inside a string literal.
//! - **Values** are [`Value`]s (in [`crate::value`]): integers are `i64` (SQLite INTEGER, PostgreSQL BIGINT; a
//!   parameter bound to an INT4 place, such as `substr`'s length, is narrowed), a `u64` goes
//!   through [`crate::value::to_i64`] first, text is TEXT, bytes are BLOB / BYTEA.
//! - **Rows** come back as [`DbRow`]s with typed getters; a value of the wrong type or out of
//!   range is [`CatalogError::Corrupt`], never a panic.
//! - **Statements** outside [`Catalog::write_tx`] commit on their own, one by one, as
//!   autocommitted single statements (each is atomic).
//! - **Write transactions**: [`Catalog::write_tx`] runs a closure in a transaction that
//!   excludes every other writer of the same catalog for its whole length: SQLite's `BEGIN
//!   IMMEDIATE` takes the file's write lock; PostgreSQL takes a transaction-scoped advisory
//!   lock keyed by the repository, so writers of one repository queue exactly as they do on
//!   SQLite while other repositories and readers go on. Ok commits, Err rolls back; a nested
//!   call joins the outer transaction.
//! - **Isolation between repositories** (PostgreSQL): each repository's tables live in a schema
//!   of their own, found through `search_path`, so no statement can see another repository's
//!   rows (see [`crate::pg`]).

use std::cell::Cell;

use crate::catalog::{Backend, Catalog};
use crate::error::CatalogError;
use crate::value::{DbRow, Value};

/// Resets the transaction flag however the closure ends.
struct TxFlag<'a>(&'a Cell<bool>);

impl Drop for TxFlag<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl Catalog {
    /// Runs one statement; returns the number of rows it changed.
    pub(crate) fn exec(
        &self,
        ctx: &str,
        sql: &str,
        params: &[Value],
    ) -> Result<usize, CatalogError> {
        match &self.backend {
            Backend::Sqlite(conn) => conn
                .prepare_cached(sql)
                .and_then(|mut s| s.execute(rusqlite::params_from_iter(params)))
                .map_err(|e| self.sqlite_err(ctx, e)),
            Backend::Postgres(pg) => {
                let n = pg
                    .borrow_mut()
                    .execute(sql, params)
                    .map_err(|e| self.pg_err(ctx, e))?;
                Ok(n as usize)
            }
        }
    }

    /// Runs a query and maps every row with `f`, in order.
    pub(crate) fn query<T>(
        &self,
        ctx: &str,
        sql: &str,
        params: &[Value],
        mut f: impl FnMut(&DbRow<'_>) -> Result<T, CatalogError>,
    ) -> Result<Vec<T>, CatalogError> {
        let rows = match &self.backend {
            Backend::Sqlite(conn) => {
                sqlite_rows(conn, sql, params).map_err(|e| self.sqlite_err(ctx, e))?
            }
            Backend::Postgres(pg) => pg
                .borrow_mut()
                .query(sql, params)
                .map_err(|e| self.pg_err(ctx, e))?,
        };
        rows.into_iter()
            .map(|values| {
                f(&DbRow {
                    values,
                    catalog: &self.label,
                })
            })
            .collect()
    }

    /// The first row of a query, if any.
    pub(crate) fn query_opt<T>(
        &self,
        ctx: &str,
        sql: &str,
        params: &[Value],
        f: impl FnMut(&DbRow<'_>) -> Result<T, CatalogError>,
    ) -> Result<Option<T>, CatalogError> {
        Ok(self.query(ctx, sql, params, f)?.into_iter().next())
    }

    /// Runs `f` in a write transaction (see the module's contract).
    pub(crate) fn write_tx<T>(
        &self,
        ctx: &str,
        f: impl FnOnce() -> Result<T, CatalogError>,
    ) -> Result<T, CatalogError> {
        if self.in_tx.get() {
            return f();
        }
        let begin = format!("starting a transaction for {ctx}");
        match &self.backend {
            // IMMEDIATE: a deferred transaction that reads first could fail with SQLITE_BUSY
            // on upgrade without waiting for the busy timeout.
            Backend::Sqlite(conn) => conn
                .execute_batch("BEGIN IMMEDIATE")
                .map_err(|e| self.sqlite_err(&begin, e))?,
            Backend::Postgres(pg) => pg
                .borrow_mut()
                .begin_write()
                .map_err(|e| self.pg_err(&begin, e))?,
        }
        let result = {
            self.in_tx.set(true);
            let _flag = TxFlag(&self.in_tx);
            f()
        };
        let end = |sql: &str| match &self.backend {
            Backend::Sqlite(conn) => conn.execute_batch(sql).map_err(|e| self.sqlite_err(ctx, e)),
            Backend::Postgres(pg) => pg.borrow_mut().batch(sql).map_err(|e| self.pg_err(ctx, e)),
        };
        match result {
            Ok(v) => match end("COMMIT") {
                Ok(()) => Ok(v),
                Err(e) => {
                    let _ = end("ROLLBACK");
                    Err(e)
                }
            },
            Err(e) => {
                let _ = end("ROLLBACK");
                Err(e)
            }
        }
    }

    /// As [`Catalog::write_tx`], for rows that are a record of a job rather than a promise
    /// about data (I/O statistics, samples, tuning events): the commit does not wait for the
    /// disk. Nothing a restore relies on is written this way, and the next durable commit of
    /// the same catalog (a backup's AVAILABLE, for one) makes these rows durable too, since
    /// SQLite's WAL and PostgreSQL's WAL are each flushed in order. A power cut can lose at
    /// most the last such rows. Inside another transaction it just joins it.
    pub(crate) fn record_tx<T>(
        &self,
        ctx: &str,
        f: impl FnOnce() -> Result<T, CatalogError>,
    ) -> Result<T, CatalogError> {
        if self.in_tx.get() {
            return f();
        }
        match &self.backend {
            Backend::Sqlite(conn) => {
                // A per-connection setting, changed only between transactions; it is set
                // back whatever the closure returned, so later commits stay durable.
                conn.execute_batch("PRAGMA synchronous = NORMAL")
                    .map_err(|e| self.sqlite_err(ctx, e))?;
                let result = self.write_tx(ctx, f);
                let back = conn
                    .execute_batch("PRAGMA synchronous = FULL")
                    .map_err(|e| self.sqlite_err(ctx, e));
                let v = result?;
                back?;
                Ok(v)
            }
            Backend::Postgres(_) => self.write_tx(ctx, || {
                self.exec(ctx, "SET LOCAL synchronous_commit = off", &[])?;
                f()
            }),
        }
    }
}

fn sqlite_rows(
    conn: &rusqlite::Connection,
    sql: &str,
    params: &[Value],
) -> rusqlite::Result<Vec<Vec<Value>>> {
    use rusqlite::types::ValueRef;
    let mut stmt = conn.prepare_cached(sql)?;
    let n = stmt.column_count();
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let mut v = Vec::with_capacity(n);
        for i in 0..n {
            v.push(match r.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(x) => Value::I64(x),
                ValueRef::Real(x) => Value::F64(x),
                ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Value::Blob(b.to_vec()),
            });
        }
        out.push(v);
    }
    Ok(out)
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::I64(v) => ValueRef::Integer(*v),
            Value::F64(v) => ValueRef::Real(*v),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
            Value::Blob(b) => ValueRef::Blob(b),
        }))
    }
}
