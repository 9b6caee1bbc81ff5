use std::path::PathBuf;

/// Errors from talking to PostgreSQL or reading a data directory. Messages name the server or
/// the path, and say what to check.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    #[error(
        "invalid connection string {conninfo:?}: {reason}; hint: use key=value pairs such as \"host=/var/run/postgresql port=5432 user=postgres\" or a postgresql:// URL"
    )]
    BadConninfo { conninfo: String, reason: String },
    #[error(
        "cannot connect to PostgreSQL at {target}: {reason}; hint: {}",
        connect_hint(sqlstate.as_deref(), *cause)
    )]
    Connect {
        target: String,
        reason: String,
        /// The server's SQLSTATE when it answered and refused (None: no answer, or the client
        /// gave up before asking).
        sqlstate: Option<String>,
        /// What the client itself saw, where the server gave no SQLSTATE to say it.
        cause: ConnectCause,
    },
    #[error(
        "refusing to connect to PostgreSQL at {target}: {setting} (from {origin}) asks for GSSAPI encryption, which recman does not have; hint: recman never falls back to plaintext when encryption is asked for: use TLS instead (sslmode=verify-full with sslrootcert), or connect through the local socket (host=/var/run/postgresql)"
    )]
    EncryptionUnavailable {
        target: String,
        setting: String,
        origin: String,
    },
    #[error(
        "cannot set up TLS for PostgreSQL at {target}: {what} {}: {reason}; hint: sslrootcert names a PEM file of the CAs that sign the server's certificate, sslcert/sslkey the client's PEM certificate and key (defaults in ~/.postgresql/); or set sslmode=require to encrypt without checking the certificate", path.display()
    )]
    TlsSetup {
        target: String,
        what: String,
        path: PathBuf,
        reason: String,
    },
    #[error(
        "connection service {name:?} is not defined: {reason}; hint: define it in ~/.pg_service.conf (or the file PGSERVICEFILE names, or PGSYSCONFDIR/pg_service.conf), or fix PGSERVICE / service="
    )]
    Service { name: String, reason: String },
    #[error(
        "service file {}, line {line}: {reason}; hint: lines are key=value libpq connection settings under a [service] header", path.display()
    )]
    ServiceFile {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    #[error("query failed on {target} ({what}): {reason}")]
    Query {
        target: String,
        what: String,
        reason: String,
        /// The server's SQLSTATE, when the server raised the error.
        sqlstate: Option<String>,
    },
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is not a PostgreSQL data directory: {reason}; hint: point --pgdata at the directory holding PG_VERSION and global/pg_control"
    )]
    NotDataDir { path: PathBuf, reason: String },
    #[error(
        "PostgreSQL {version} at {at} is not supported; hint: {}",
        crate::version::supported_hint()
    )]
    Unsupported { version: String, at: String },
    #[error("invalid LSN {text:?}; hint: write it as PostgreSQL does, e.g. 0/3000028")]
    BadLsn { text: String },
    /// A failure of a session a database-host agent holds (the agent's message, its kind).
    #[error("{message}")]
    Remote {
        kind: recman_error::ErrorKind,
        message: String,
    },
}

/// Why a connection failed, as far as the client can tell apart: the server's own refusals
/// carry a SQLSTATE; the client's refusals (no password to send, a certificate that does not
/// verify) are named where they happen, so that neither the kind nor the hint is ever read
/// back out of a message's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectCause {
    /// The server refused (its SQLSTATE says why) or did not answer.
    Server,
    /// The server's certificate was refused by the checks sslmode asks for.
    TlsCertificate,
    /// TLS could not be set up or its handshake failed for another reason.
    Tls,
    /// The server asked for a password and none was given.
    NoPassword,
}

/// A refused password needs another fix than a server that is not there.
fn connect_hint(sqlstate: Option<&str>, cause: ConnectCause) -> &'static str {
    if cause == ConnectCause::TlsCertificate {
        "sslrootcert must hold the CA that signed the server's certificate (ssl_cert_file on the server), and with sslmode=verify-full the certificate must name the host in --target; sslmode=verify-ca skips the name check"
    } else if cause == ConnectCause::Tls {
        "check the server's ssl settings (ssl=on, ssl_cert_file, ssl_key_file), pg_hba.conf's hostssl lines, and sslcert/sslkey when the server asks for a client certificate"
    } else if refused_login(sqlstate, cause) {
        "give the password in ~/.pgpass (or the file PGPASSFILE names, mode 0600) or PGPASSWORD, and check the pg_hba.conf line that applies"
    } else if sqlstate == Some(INVALID_CATALOG_NAME) {
        "the database in --target (dbname=) does not exist on that server: name one that does"
    } else {
        "check that the server is running and that --target (or PGHOST/PGPORT/PGUSER, PGSERVICE) points at it"
    }
}

/// SQLSTATE 3D000: the database named does not exist.
const INVALID_CATALOG_NAME: &str = "3D000";

/// The server refused the login itself (SQLSTATE class 28: a wrong password, a pg_hba.conf
/// reject), or the client had no password to send when the server asked for one.
fn refused_login(sqlstate: Option<&str>, cause: ConnectCause) -> bool {
    cause == ConnectCause::NoPassword || sqlstate.is_some_and(|code| code.starts_with("28"))
}

impl PgError {
    /// A failed query, with the server's SQLSTATE when it raised the error.
    pub(crate) fn query(target: &str, what: &str, e: &postgres::Error) -> Self {
        PgError::Query {
            target: target.to_string(),
            what: what.to_string(),
            reason: error_text(e),
            sqlstate: sqlstate(e),
        }
    }

    /// The server's SQLSTATE of this error, if the server raised it.
    pub fn sqlstate(&self) -> Option<&str> {
        match self {
            PgError::Connect { sqlstate, .. } | PgError::Query { sqlstate, .. } => {
                sqlstate.as_deref()
            }
            _ => None,
        }
    }
}

/// The server's own message when there is one: postgres::Error's Display hides it.
pub(crate) fn error_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(inner) = src {
                s = format!("{s}: {inner}");
                src = inner.source();
            }
            s
        }
    }
}

/// The SQLSTATE of a server-raised error.
pub(crate) fn sqlstate(e: &postgres::Error) -> Option<String> {
    e.code().map(|c| c.code().to_string())
}

/// A query error's kind by its SQLSTATE: what may pass if tried again (a server shutting
/// down or out of connections, a lost connection, a deadlock) is Transient; a missing
/// privilege is the user's to grant; anything else the server refused is Io.
fn query_kind(sqlstate: Option<&str>) -> recman_error::ErrorKind {
    use recman_error::ErrorKind as K;
    match sqlstate {
        Some(c) if c.starts_with("08") || c.starts_with("53") || c.starts_with("57P") => {
            K::Transient
        }
        Some("40001" | "40P01") => K::Transient,
        Some("42501") => K::InvalidInput,
        _ => K::Io,
    }
}

impl PgError {
    /// The error's kind (see recman-error): what the user gave is InvalidInput, a server that
    /// did not answer is Transient, a refused query is Io.
    pub fn kind(&self) -> recman_error::ErrorKind {
        use recman_error::ErrorKind as K;
        match self {
            PgError::BadConninfo { .. }
            | PgError::EncryptionUnavailable { .. }
            | PgError::TlsSetup { .. }
            | PgError::Service { .. }
            | PgError::ServiceFile { .. }
            | PgError::NotDataDir { .. }
            | PgError::Unsupported { .. }
            | PgError::BadLsn { .. } => K::InvalidInput,
            // A refused login or a database that is not there stays so; a server that is
            // down, starting or full may come back.
            PgError::Connect {
                sqlstate, cause, ..
            } if refused_login(sqlstate.as_deref(), *cause)
                || sqlstate.as_deref() == Some(INVALID_CATALOG_NAME)
                || *cause == ConnectCause::TlsCertificate =>
            {
                K::InvalidInput
            }
            PgError::Connect { .. } => K::Transient,
            PgError::Query { sqlstate, .. } => query_kind(sqlstate.as_deref()),
            PgError::Io { source, .. } => K::of_io(source),
            PgError::Remote { kind, .. } => *kind,
        }
    }
}

#[cfg(test)]
mod kind_tests {
    use super::*;
    use recman_error::ErrorKind;

    #[test]
    fn pg_errors_say_whether_the_user_or_the_server_is_at_fault() {
        let bad = PgError::BadLsn { text: "x".into() };
        assert_eq!(bad.kind(), ErrorKind::InvalidInput);
        let connect = |reason: &str, sqlstate: Option<&str>| PgError::Connect {
            target: "/tmp:5432".into(),
            reason: reason.into(),
            sqlstate: sqlstate.map(str::to_string),
            cause: ConnectCause::Server,
        };
        let down = connect("connection refused", None);
        assert_eq!(down.kind(), ErrorKind::Transient);
        // The server's word decides, not the message's: a server that is down is down even
        // when the message names the password file the password came from.
        let noted = connect(
            "connection refused (the password came from /home/u/.pgpass)",
            None,
        );
        assert_eq!(noted.kind(), ErrorKind::Transient);
        assert!(!noted.to_string().contains("~/.pgpass (or"), "{noted}");
        let pw = connect(
            "password authentication failed for user \"u\"",
            Some("28P01"),
        );
        assert_eq!(pw.kind(), ErrorKind::InvalidInput);
        assert!(pw.to_string().contains("~/.pgpass"), "{pw}");
        let hba = connect("no pg_hba.conf entry for host", Some("28000"));
        assert_eq!(hba.kind(), ErrorKind::InvalidInput);
        let no_db = connect("database \"nope\" does not exist", Some("3D000"));
        assert_eq!(no_db.kind(), ErrorKind::InvalidInput);
        assert!(no_db.to_string().contains("does not exist on that server"));
        let starting = connect("the database system is starting up", Some("57P03"));
        assert_eq!(starting.kind(), ErrorKind::Transient);
        let no_password = PgError::Connect {
            target: "/tmp:5432".into(),
            reason: "password missing".into(),
            sqlstate: None,
            cause: ConnectCause::NoPassword,
        };
        assert_eq!(no_password.kind(), ErrorKind::InvalidInput);
        assert!(
            no_password.to_string().contains("~/.pgpass"),
            "{no_password}"
        );
        // A certificate the checks refused is the user's to fix; the words do not decide it.
        let cert = |cause| PgError::Connect {
            target: "db:5432".into(),
            reason: "handshake failed".into(),
            sqlstate: None,
            cause,
        };
        assert_eq!(
            cert(ConnectCause::TlsCertificate).kind(),
            ErrorKind::InvalidInput
        );
        assert!(
            cert(ConnectCause::TlsCertificate)
                .to_string()
                .contains("sslrootcert must hold")
        );
        assert_eq!(cert(ConnectCause::Tls).kind(), ErrorKind::Transient);
        assert_eq!(
            connect("the server's TLS certificate for x was refused", None).kind(),
            ErrorKind::Transient
        );
    }

    #[test]
    fn a_query_error_takes_its_kind_from_its_sqlstate() {
        let q = |sqlstate: Option<&str>| PgError::Query {
            target: "t".into(),
            what: "w".into(),
            reason: "r".into(),
            sqlstate: sqlstate.map(str::to_string),
        };
        assert_eq!(q(Some("57P01")).kind(), ErrorKind::Transient);
        assert_eq!(q(Some("40P01")).kind(), ErrorKind::Transient);
        assert_eq!(q(Some("42501")).kind(), ErrorKind::InvalidInput);
        assert_eq!(q(Some("22P02")).kind(), ErrorKind::Io);
        assert_eq!(q(None).kind(), ErrorKind::Io);
        assert_eq!(q(Some("42501")).sqlstate(), Some("42501"));
    }
}
