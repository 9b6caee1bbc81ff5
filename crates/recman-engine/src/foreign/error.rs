//! The errors of reading another tool's backups: what was read, where, and what to do.

use crate::error::EngineError;
use crate::refusal::{Import, Refusal};
use std::path::PathBuf;

/// Why a foreign backup or WAL archive could not be read. Messages are lowercase, name the
/// file and the origin, and end with a hint when the user can act.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The origin's data failed the origin's own check (a checksum, a size, a decryption).
    #[error("{0}")]
    Corrupt(String),
    /// The location is not what recman can import, or uses what recman does not read yet.
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error("{0}")]
    NotFound(String),
}

impl ImportError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> ImportError {
        let path = path.into();
        // A check that failed inside a reader (checksum, decryption) keeps its own words.
        if source.kind() == std::io::ErrorKind::InvalidData {
            return ImportError::Corrupt(format!("{}: {source}", path.display()));
        }
        ImportError::Io { path, source }
    }
}

impl From<Import> for ImportError {
    fn from(r: Import) -> Self {
        ImportError::Refused(Refusal::Import(r))
    }
}

impl From<ImportError> for EngineError {
    fn from(e: ImportError) -> Self {
        match e {
            ImportError::Io { path, source } => EngineError::Io {
                op: "read",
                path,
                source,
            },
            ImportError::Corrupt(m) => EngineError::Corrupt(m),
            ImportError::Refused(r) => EngineError::Refused(r),
            ImportError::NotFound(m) => EngineError::NotFound(m),
        }
    }
}
