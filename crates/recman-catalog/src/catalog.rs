//! The catalog: an index of what the repository holds, in an SQLite file inside the
//! repository (or its cache) or in a shared PostgreSQL database ([`Catalog::open_postgres`]).
//!
//! The repository's manifests are the truth; the catalog answers LIST/REPORT/RESTORE planning
//! quickly. Every mutation is a single statement or one write transaction, so a reader never
//! sees half of a change (safety invariant 5). Both engines run the same SQL through the layer
//! in [`crate::db`].

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::CatalogError;
use crate::pg::{self, OpenError, PgConn};
use crate::schema::{self, MigrateError, SCHEMA_VERSION};

/// How long a statement waits for another connection's write lock before failing. Backups hold
/// write transactions for milliseconds; a minute covers a slow disk with room to spare.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the `n`th wait for another writer of the catalog sleeps: 100 µs doubling to 3.2 ms,
/// then 3.2 ms each. Channels commit their statistics while the others run, and a commit
/// holds the lock for a millisecond or so; SQLite's own busy timeout sleeps 1, 2, 5, 10, 15 ms
/// ... and so overshoots a short wait by up to ten times.
fn busy_nap(n: i32) -> Duration {
    Duration::from_micros(100 << n.clamp(0, 5))
}

/// SQLite's busy handler: true to try again after a nap, false (SQLITE_BUSY) once the naps
/// add up to [`BUSY_TIMEOUT`].
fn wait_for_the_writer(n: i32) -> bool {
    if waited_before(n) >= BUSY_TIMEOUT {
        return false;
    }
    std::thread::sleep(busy_nap(n));
    true
}

/// The naps before the `n`th: 100 µs × (2^n − 1) while they double, then 3.2 ms each.
fn waited_before(n: i32) -> Duration {
    let n = n.max(0) as u64;
    Duration::from_micros(if n <= 6 {
        100 * ((1 << n) - 1)
    } else {
        6_300 + (n - 6) * 3_200
    })
}

/// Which engine holds the catalog, and the session on it.
pub(crate) enum Backend {
    Sqlite(Connection),
    Postgres(Box<RefCell<PgConn>>),
}

/// Where a catalog is, enough to open it again (another thread's connection).
#[derive(Clone, Debug)]
pub(crate) enum CatalogSpec {
    Sqlite(PathBuf),
    Postgres { url: String, location: String },
}

/// A connection to one repository's catalog. Not `Sync`: one per thread.
pub struct Catalog {
    pub(crate) backend: Backend,
    spec: CatalogSpec,
    /// What messages call the catalog: its file, or the server's URL (without password) and
    /// the repository.
    pub(crate) label: PathBuf,
    pub(crate) in_tx: Cell<bool>,
    /// PostgreSQL: the repository was new to the shared catalog when opened.
    fresh: bool,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog")
            .field("path", &self.label)
            .finish()
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
        // SQLite takes an empty file for an empty database and would migrate it into a fresh,
        // empty catalog: every backup's record quietly gone. Refuse it, and any SQLite file
        // that is not a recman catalog, so that the rebuild from the manifests is a choice.
        let len = std::fs::metadata(path)
            .map_err(|e| CatalogError::io("read", path, e))?
            .len();
        if len == 0 {
            return Err(CatalogError::Corrupt {
                path: path.to_path_buf(),
                detail: "the file is empty (0 bytes), so it holds no record of any backup".into(),
            });
        }
        Self::open_with(path, OpenFlags::default() & !OpenFlags::SQLITE_OPEN_CREATE)
    }

    /// Creates the catalog file if needed and brings it to this build's schema.
    pub fn create(path: &Path) -> Result<Catalog, CatalogError> {
        Self::open_with(path, OpenFlags::default())
    }

    /// Opens the catalog of repository `repository` (its directory or URL, as
    /// [`crate::Repository::location`] gives it) in the shared PostgreSQL catalog at `url`
    /// (`postgresql://...`), registering the repository and migrating its schema when needed.
    /// The catalog sees that repository's rows only.
    pub fn open_postgres(url: &str, repository: &str) -> Result<Catalog, CatalogError> {
        let label = PathBuf::from(format!("{} ({repository})", pg::redact(url)));
        let opened = match pg::open(url, repository, now_micros()) {
            Ok(o) => o,
            Err(OpenError::TooNew(found)) => {
                return Err(CatalogError::SchemaTooNew {
                    found,
                    supported: SCHEMA_VERSION,
                });
            }
            Err(OpenError::Conninfo(source)) => {
                return Err(CatalogError::SharedConnection {
                    catalog: label.display().to_string(),
                    error: Box::new(source),
                });
            }
            Err(OpenError::Sql(context, source)) => {
                return Err(CatalogError::Postgres {
                    catalog: label.display().to_string(),
                    context: context.to_string(),
                    source,
                });
            }
        };
        Ok(Catalog {
            backend: Backend::Postgres(Box::new(RefCell::new(opened.conn))),
            spec: CatalogSpec::Postgres {
                url: url.to_string(),
                location: repository.to_string(),
            },
            label,
            in_tx: Cell::new(false),
            fresh: opened.fresh,
        })
    }

    /// Opens the same catalog again, with a connection of its own.
    pub(crate) fn open_spec(spec: &CatalogSpec) -> Result<Catalog, CatalogError> {
        match spec {
            CatalogSpec::Sqlite(path) => Catalog::open(path),
            CatalogSpec::Postgres { url, location } => Catalog::open_postgres(url, location),
        }
    }

    pub(crate) fn spec(&self) -> &CatalogSpec {
        &self.spec
    }

    /// Whether this is a shared catalog that did not know the repository before this open.
    pub(crate) fn fresh(&self) -> bool {
        self.fresh
    }

    /// Whether the catalog is in a shared PostgreSQL database.
    pub fn is_shared(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
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
        make_private(path);
        conn.busy_handler(Some(wait_for_the_writer))
            .map_err(sql("setting the busy handler"))?;
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
        // SQLite gives its -wal and -shm files the database file's mode; these are the older
        // repositories' files, made before the catalog was private.
        for suffix in ["-wal", "-shm"] {
            let mut side = path.as_os_str().to_owned();
            side.push(suffix);
            make_private(Path::new(&side));
        }
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .map_err(sql("setting pragmas"))?;
        let creating = flags.contains(OpenFlags::SQLITE_OPEN_CREATE);
        if !creating
            && schema::current_version(&conn).map_err(sql("reading the schema version"))? == 0
        {
            return Err(CatalogError::Corrupt {
                path: path.to_path_buf(),
                detail:
                    "it is an SQLite database but not a recman catalog (no schema_version table)"
                        .into(),
            });
        }
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
            backend: Backend::Sqlite(conn),
            spec: CatalogSpec::Sqlite(path.to_path_buf()),
            label: path.to_path_buf(),
            in_tx: Cell::new(false),
            fresh: false,
        })
    }

    /// The catalog file; for a shared catalog, the server's URL (without password) and the
    /// repository, for messages.
    pub fn path(&self) -> &Path {
        &self.label
    }

    pub(crate) fn sqlite_err(&self, context: &str, source: rusqlite::Error) -> CatalogError {
        CatalogError::Sqlite {
            path: self.label.clone(),
            context: context.to_string(),
            source,
        }
    }

    pub(crate) fn pg_err(&self, context: &str, source: postgres::Error) -> CatalogError {
        CatalogError::Postgres {
            catalog: self.label.display().to_string(),
            context: context.to_string(),
            source,
        }
    }

    pub(crate) fn corrupt(&self, detail: String) -> CatalogError {
        CatalogError::Corrupt {
            path: self.label.clone(),
            detail,
        }
    }

    pub fn schema_version(&self) -> Result<u32, CatalogError> {
        let ctx = "reading the schema version";
        match &self.backend {
            Backend::Sqlite(conn) => {
                schema::current_version(conn).map_err(|e| self.sqlite_err(ctx, e))
            }
            Backend::Postgres(pg) => pg
                .borrow_mut()
                .schema_version()
                .map_err(|e| self.pg_err(ctx, e)),
        }
    }
}

pub(crate) fn now_micros() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// Makes the catalog file at `path` readable by its owner only (it describes every backup and
/// where it lives). Best effort: a catalog owned by another user (a read-only open by an
/// operator) keeps its mode, and a missing side file is no error.
fn make_private(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(m) = std::fs::metadata(path)
        && m.permissions().mode() & 0o777 != recman_media::modes::PRIVATE_MODE
    {
        let _ = recman_media::modes::set_path_mode(path, recman_media::modes::PRIVATE_MODE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busy_naps_add_up_to_the_timeout_and_stay_short() {
        let mut sum = Duration::ZERO;
        for n in 0..40 {
            assert_eq!(waited_before(n), sum, "the wait before nap {n}");
            assert!(busy_nap(n) <= Duration::from_micros(3_200));
            sum += busy_nap(n);
        }
        // It gives up after about BUSY_TIMEOUT of naps, not sooner and not much later.
        let last = (0..i32::MAX)
            .find(|&n| waited_before(n) >= BUSY_TIMEOUT)
            .expect("the handler gives up");
        assert!(waited_before(last - 1) < BUSY_TIMEOUT);
        assert!(waited_before(last) < BUSY_TIMEOUT + Duration::from_millis(4));
    }

    fn synchronous(cat: &Catalog) -> i64 {
        match &cat.backend {
            Backend::Sqlite(conn) => conn
                .query_row("PRAGMA synchronous", [], |r| r.get(0))
                .expect("reading PRAGMA synchronous"),
            Backend::Postgres(_) => unreachable!("an SQLite catalog"),
        }
    }

    #[test]
    fn a_record_commits_without_waiting_and_the_next_commit_is_durable_again() {
        let dir = tempfile::tempdir().unwrap();
        let cat = Catalog::create(&dir.path().join("catalog.db")).unwrap();
        const FULL: i64 = 2;
        const NORMAL: i64 = 1;
        assert_eq!(synchronous(&cat), FULL);
        let inside = cat.record_tx("a test", || Ok(synchronous(&cat))).unwrap();
        assert_eq!(inside, NORMAL);
        assert_eq!(synchronous(&cat), FULL, "after a record");
        let failed: Result<(), _> =
            cat.record_tx("a test", || Err(cat.corrupt("on purpose".into())));
        assert!(failed.is_err());
        assert_eq!(synchronous(&cat), FULL, "after a record that failed");
    }
}
