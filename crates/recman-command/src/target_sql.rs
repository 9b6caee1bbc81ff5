//! What the language asks of the target server itself, outside any backup: SQL '…' and the
//! question whether a channel's CONNECT reaches the same server as the target.

use recman_pg::{PgError, Session, redact_conninfo, resolve_conninfo};

/// Why SQL '…' or a CONNECT comparison failed.
#[derive(Debug, thiserror::Error)]
pub enum TargetSqlError {
    #[error(transparent)]
    Pg(Box<PgError>),
    /// The server's error is part of the message, not a cause below it: it is what the
    /// statement said, and printing it twice would repeat it.
    #[error("SQL '{text}' failed on the target: {cause}")]
    Failed { text: String, cause: Box<PgError> },
    #[error("cannot resolve CONNECT '{conninfo}'")]
    Resolve {
        /// Redacted: no password reaches a message.
        conninfo: String,
        #[source]
        source: Box<PgError>,
    },
}

impl From<PgError> for TargetSqlError {
    fn from(e: PgError) -> Self {
        TargetSqlError::Pg(Box::new(e))
    }
}

/// Runs `text` on the target `conninfo` names (None: the environment's) and returns its rows,
/// NULL as an empty column.
pub fn run(conninfo: Option<&str>, text: &str) -> Result<Vec<Vec<String>>, TargetSqlError> {
    let target = resolve_conninfo(conninfo)?;
    let mut session = Session::connect(&target)?;
    let rows = session
        .simple_query(text)
        .map_err(|source| TargetSqlError::Failed {
            text: text.to_string(),
            cause: Box::new(source),
        })?;
    Ok(rows
        .into_iter()
        .map(|r| r.into_iter().map(|c| c.unwrap_or_default()).collect())
        .collect())
}

/// Whether conninfo `other` reaches the same server (hosts and ports) as the target `target`.
pub fn same_server(target: Option<&str>, other: &str) -> Result<bool, TargetSqlError> {
    let key = |c: Option<&str>| -> Result<String, TargetSqlError> {
        let t = resolve_conninfo(c).map_err(|source| TargetSqlError::Resolve {
            conninfo: redact_conninfo(c.unwrap_or("")),
            source: Box::new(source),
        })?;
        Ok(format!(
            "{:?} {:?}",
            t.config.get_hosts(),
            t.config.get_ports()
        ))
    };
    Ok(key(target)? == key(Some(other))?)
}
