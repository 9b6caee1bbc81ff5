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
        connect_hint(reason)
    )]
    Connect { target: String, reason: String },
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

/// A refused password needs another fix than a server that is not there.
fn connect_hint(reason: &str) -> &'static str {
    if reason.contains("TLS certificate") {
        "sslrootcert must hold the CA that signed the server's certificate (ssl_cert_file on the server), and with sslmode=verify-full the certificate must name the host in --target; sslmode=verify-ca skips the name check"
    } else if reason.contains("TLS") || reason.contains("tls") {
        "check the server's ssl settings (ssl=on, ssl_cert_file, ssl_key_file), pg_hba.conf's hostssl lines, and sslcert/sslkey when the server asks for a client certificate"
    } else if reason.contains("password") {
        "give the password in ~/.pgpass (or the file PGPASSFILE names, mode 0600) or PGPASSWORD, and check the pg_hba.conf line that applies"
    } else {
        "check that the server is running and that --target (or PGHOST/PGPORT/PGUSER, PGSERVICE) points at it"
    }
}

impl PgError {
    pub(crate) fn query(target: &str, what: &str, e: impl std::fmt::Display) -> Self {
        PgError::Query {
            target: target.to_string(),
            what: what.to_string(),
            reason: e.to_string(),
        }
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
            // A refused password stays refused; a server that is down may come back.
            PgError::Connect { reason, .. }
                if reason.contains("password") || reason.contains("TLS certificate") =>
            {
                K::InvalidInput
            }
            PgError::Connect { .. } => K::Transient,
            PgError::Query { .. } => K::Io,
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
        let down = PgError::Connect {
            target: "/tmp:5432".into(),
            reason: "connection refused".into(),
        };
        assert_eq!(down.kind(), ErrorKind::Transient);
        let pw = PgError::Connect {
            target: "/tmp:5432".into(),
            reason: "password authentication failed".into(),
        };
        assert_eq!(pw.kind(), ErrorKind::InvalidInput);
    }
}
