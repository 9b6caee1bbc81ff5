//! The one error type of this crate. Every message is lowercase, names the object it is about
//! and, where the user can do something, ends with "; hint: ...".

use std::fmt;
use std::path::PathBuf;

/// Who holds the repository lock, as far as the lock file tells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockHolder {
    pub pid: Option<u32>,
    pub command: Option<String>,
    /// RFC 3339 time at which the holder took the lock.
    pub since: Option<String>,
}

impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The holder writes its details just after taking the lock, so a refusal that races
        // with it can find the file still empty.
        f.write_str(self.command.as_deref().unwrap_or("another recman command"))?;
        if let Some(pid) = self.pid {
            write!(f, " (pid {pid})")?;
        }
        if let Some(since) = &self.since {
            write!(f, " since {since}")?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error(
        "repository {} does not exist; hint: create it with `recman create catalog --repo {}`",
        path.display(), path.display()
    )]
    NotFound { path: PathBuf },

    #[error(
        "{} is not a recman repository; hint: create it with `recman create catalog --repo {}`",
        path.display(), path.display()
    )]
    NotARepository { path: PathBuf },

    #[error(
        "repository {} already exists; hint: use it as it is, or choose another directory",
        path.display()
    )]
    AlreadyExists { path: PathBuf },

    #[error(
        "{} is not empty and is not a recman repository; hint: choose a new or empty directory",
        path.display()
    )]
    NotEmpty { path: PathBuf },

    #[error(
        "{} is not a directory; hint: give the repository's directory with --repo",
        path.display()
    )]
    NotADirectory { path: PathBuf },

    #[error(
        "repository marker {} is damaged: {detail}; hint: it must hold {{\"format\":\"recman-repository\",\"version\":1,...}}",
        path.display()
    )]
    BadMarker { path: PathBuf, detail: String },

    #[error(
        "repository {} has format version {found}, this recman supports version {supported}; hint: upgrade recman",
        path.display()
    )]
    UnsupportedRepositoryVersion {
        path: PathBuf,
        found: u64,
        supported: u32,
    },

    #[error(
        "catalog {} is missing from the repository; hint: rebuild it from the repository's manifests with `recman catalog start-with`, or restore catalog.db from a copy",
        path.display()
    )]
    CatalogMissing { path: PathBuf },

    #[error(
        "catalog schema {found} is newer than this recman supports ({supported}); hint: upgrade recman"
    )]
    SchemaTooNew { found: u32, supported: u32 },

    #[error(
        "repository {} is busy: {holder}; hint: wait for it to finish, or check that process",
        path.display()
    )]
    Busy { path: PathBuf, holder: LockHolder },

    #[error("path {rel:?} is not inside the repository; hint: use a relative path without `..`")]
    BadPath { rel: String },

    #[error(
        "cache {} belongs to repository {owner}, not {location}; hint: give each remote repository its own --repo-cache directory",
        cache.display()
    )]
    CacheMismatch {
        cache: PathBuf,
        owner: String,
        location: String,
    },

    #[error(
        "repository {location} requires a MAC key for its manifests, and none was given; hint: pass the key the repository was created with by --mac-key-file FILE or --mac-key-command CMD (or RECMAN_MAC_KEY)"
    )]
    MacKeyMissing { location: String },

    #[error(
        "the MAC key given is not the key of repository {location}: its manifests are authenticated under key id {recorded}, the key given has id {given}; hint: wrong key file or key command? give the key the repository was created with"
    )]
    WrongMacKey {
        location: String,
        recorded: String,
        given: String,
    },

    #[error(
        "a MAC key (id {given}) was given, but the marker of repository {location} does not require manifest MACs; hint: if the repository was created with a MAC key, its marker was replaced (MACs stripped?) and its manifests must not be trusted; if it never had one, do not give a MAC key for it"
    )]
    MacNotRequired { location: String, given: String },

    #[error(
        "the MAC key given for repository {location} is not 64 hex digits; hint: make a key with `openssl rand -hex 32 > FILE` (mode 0600) and pass --mac-key-file FILE"
    )]
    BadMacKey { location: String },

    #[error(
        "{what} needs a disk repository, and {location} is remote; hint: keep image copies in a disk repository, or make a backup set instead"
    )]
    NeedsDisk { location: String, what: String },

    #[error(transparent)]
    Media(#[from] recman_media::MediaError),

    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "catalog {}: {context}: {source}; hint: {}",
        path.display(), sqlite_hint(path, source)
    )]
    Sqlite {
        path: PathBuf,
        context: String,
        #[source]
        source: rusqlite::Error,
    },

    #[error(
        "shared catalog {catalog}: {context}: {}; hint: {}",
        pg_detail(source),
        pg_hint(source)
    )]
    Postgres {
        catalog: String,
        context: String,
        #[source]
        source: postgres::Error,
    },

    #[error("shared catalog {catalog}: {error}")]
    SharedConnection {
        catalog: String,
        // Boxed: a connection error carries the server's words and SQLSTATE, and every
        // catalog result would otherwise be as large.
        error: Box<recman_pg::PgError>,
    },

    #[error(
        "database name {name:?} is already registered for system identifier {registered_sysid}, not {sysid}; hint: register this cluster under another name"
    )]
    NameTaken {
        name: String,
        registered_sysid: u64,
        sysid: u64,
    },

    #[error(
        "database {name:?} (system identifier {sysid}) is already registered; hint: nothing to do, it can be backed up"
    )]
    AlreadyRegistered { name: String, sysid: u64 },

    #[error("backup {id} is not in the catalog; hint: list the backups with `recman list backup`")]
    BackupNotFound { id: String },

    #[error(
        "{what} {value} does not fit the catalog's 63-bit integers; hint: this is a bug, please report it"
    )]
    OutOfRange { what: &'static str, value: u64 },

    #[error("catalog {}: {detail}; hint: {REBUILD_HINT}", path.display())]
    Corrupt { path: PathBuf, detail: String },

    #[error(
        "{what} is for a repository's own catalog, and {catalog} is a shared PostgreSQL catalog; hint: back that database up with pg_dump or recman on its own server"
    )]
    SharedCatalog { catalog: String, what: String },
}

/// What to do about a damaged catalog: the manifests in the repository are the truth, and
/// `catalog start-with` rebuilds the catalog from them, keeping the damaged file aside.
const REBUILD_HINT: &str = "the catalog is damaged; rebuild it from the repository's manifests with `recman catalog start-with` (the damaged file is kept as catalog.db.damaged-<time>), or restore catalog.db from a copy";

impl CatalogError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        CatalogError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

/// What the user can do about a failed catalog statement, by SQLite's error class.
fn sqlite_hint(path: &std::path::Path, e: &rusqlite::Error) -> String {
    use rusqlite::ErrorCode as C;
    let code = match e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.code),
        _ => None,
    };
    match code {
        Some(C::DatabaseBusy | C::DatabaseLocked) => {
            "another process kept the catalog locked too long; retry, or look for a stuck recman"
                .to_string()
        }
        Some(C::ConstraintViolation) => {
            "the record conflicts with one already in the catalog; this is a bug, please report it"
                .to_string()
        }
        Some(C::ReadOnly | C::CannotOpen | C::PermissionDenied) => {
            "check that the repository's files are writable by this user".to_string()
        }
        Some(C::DiskFull) => "free space on the repository's file system".to_string(),
        Some(C::DatabaseCorrupt | C::NotADatabase) => REBUILD_HINT.to_string(),
        // A full file system shows up as an I/O error too when SQLite grows its shared-memory
        // or journal files, not only as "disk is full".
        Some(C::SystemIoFailure) => format!(
            "if the repository's file system has no space left, free space there; otherwise check that the file is readable, writable and intact (`sqlite3 {} 'pragma integrity_check'`)",
            path.display()
        ),
        _ => format!(
            "check that the file is readable, writable and intact (`sqlite3 {} 'pragma integrity_check'`)",
            path.display()
        ),
    }
}

/// The server's message when there is one (postgres::Error's Display says only "db error").
fn pg_detail(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => e.to_string(),
    }
}

/// What the user can do about a failed statement on the shared catalog, by SQLSTATE class.
fn pg_hint(e: &postgres::Error) -> &'static str {
    let Some(code) = e.code() else {
        return "check that the catalog server is running and that --catalog names it rightly \
                (postgresql://USER@HOST:PORT/DATABASE)";
    };
    match &code.code()[..2] {
        "08" => "the connection to the catalog server failed; check that it is running",
        "28" => "the catalog server refused the login; check the user and password in --catalog",
        "23" => {
            "the record conflicts with one already in the catalog; this is a bug, please report it"
        }
        "42" if code.code() == "42501" => {
            "the catalog's user lacks privileges; it needs CREATE on the catalog database"
        }
        "3D" => "the catalog database does not exist; create it first (createdb)",
        "53" => "the catalog server is out of resources (disk, memory or connections)",
        _ => "check the catalog server's log for the statement that failed",
    }
}

impl CatalogError {
    /// The error's kind (see recman-error and docs/errors.md).
    pub fn kind(&self) -> recman_error::ErrorKind {
        use recman_error::ErrorKind as K;
        match self {
            CatalogError::NotFound { .. }
            | CatalogError::CatalogMissing { .. }
            | CatalogError::BackupNotFound { .. } => K::NotFound,
            CatalogError::NotARepository { .. }
            | CatalogError::AlreadyExists { .. }
            | CatalogError::NotEmpty { .. }
            | CatalogError::NotADirectory { .. }
            | CatalogError::UnsupportedRepositoryVersion { .. }
            | CatalogError::SchemaTooNew { .. }
            | CatalogError::BadPath { .. }
            | CatalogError::CacheMismatch { .. }
            | CatalogError::NeedsDisk { .. }
            | CatalogError::MacKeyMissing { .. }
            | CatalogError::WrongMacKey { .. }
            | CatalogError::MacNotRequired { .. }
            | CatalogError::BadMacKey { .. }
            | CatalogError::SharedCatalog { .. }
            | CatalogError::NameTaken { .. }
            | CatalogError::AlreadyRegistered { .. } => K::InvalidInput,
            CatalogError::BadMarker { .. } | CatalogError::Corrupt { .. } => K::Corrupt,
            CatalogError::Busy { .. } => K::Busy,
            CatalogError::OutOfRange { .. } => K::Internal,
            CatalogError::Media(e) => e.kind(),
            CatalogError::Io { source, .. } => K::of_io(source),
            CatalogError::Sqlite { source, .. } => sqlite_kind(source),
            CatalogError::Postgres { source, .. } => pg_kind(source),
            CatalogError::SharedConnection { error, .. } => error.kind(),
        }
    }
}

fn sqlite_kind(e: &rusqlite::Error) -> recman_error::ErrorKind {
    use recman_error::ErrorKind as K;
    use rusqlite::ErrorCode as C;
    match e {
        rusqlite::Error::SqliteFailure(f, _) => match f.code {
            C::DatabaseBusy | C::DatabaseLocked => K::Busy,
            C::DiskFull => K::NoSpace,
            C::DatabaseCorrupt | C::NotADatabase => K::Corrupt,
            C::ConstraintViolation => K::Internal,
            _ => K::Io,
        },
        _ => K::Io,
    }
}

/// By SQLSTATE class, as pg_hint words it.
fn pg_kind(e: &postgres::Error) -> recman_error::ErrorKind {
    use recman_error::ErrorKind as K;
    let Some(code) = e.code() else {
        return K::Transient; // no server answer: the connection broke or never came
    };
    match (&code.code()[..2], code.code()) {
        (_, "55P03") => K::Busy, // lock_not_available
        ("08" | "53" | "40" | "57", _) => K::Transient,
        ("28" | "42", _) => K::InvalidInput,
        ("3D", _) => K::NotFound,
        ("23", _) => K::Internal,
        _ => K::Io,
    }
}

#[cfg(test)]
mod kind_tests {
    use super::*;
    use recman_error::ErrorKind;

    #[test]
    fn catalog_errors_are_classified() {
        let busy = CatalogError::Busy {
            path: "/r".into(),
            holder: LockHolder::default(),
        };
        assert_eq!(busy.kind(), ErrorKind::Busy);
        let gone = CatalogError::BackupNotFound { id: "B1".into() };
        assert_eq!(gone.kind(), ErrorKind::NotFound);
        let bad = CatalogError::Corrupt {
            path: "/r/catalog.db".into(),
            detail: "x".into(),
        };
        assert_eq!(bad.kind(), ErrorKind::Corrupt);
        let locked = CatalogError::Sqlite {
            path: "/r/catalog.db".into(),
            context: "insert".into(),
            source: rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                None,
            ),
        };
        assert_eq!(locked.kind(), ErrorKind::Busy);
        let media = CatalogError::Media(recman_media::MediaError::not_found("disk:/r", "x"));
        assert_eq!(media.kind(), ErrorKind::NotFound);
    }
}
