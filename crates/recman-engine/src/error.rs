use recman_catalog::CatalogError;
use recman_format::FormatError;
use recman_pg::PgError;
use std::path::PathBuf;

/// Everything that can stop an engine operation. Messages are lowercase, name the object
/// (path, piece, backup, block) and end with a hint when the user can do something about it.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),

    #[error(transparent)]
    Media(#[from] recman_media::MediaError),
    #[error(transparent)]
    Pg(#[from] PgError),
    #[error(
        "backup piece {piece} is damaged: {source}; hint: run `recman validate backup` to check the other backups and restore from an intact one with --from-tag"
    )]
    Piece { piece: String, source: FormatError },
    /// As `Piece`, for a chunk whose record names the file it belongs to.
    #[error(
        "backup piece {piece} is damaged in file {file}: {source}; hint: run `recman validate backup` to check the other backups and restore from an intact one with --from-tag"
    )]
    PieceFile {
        piece: String,
        file: String,
        source: FormatError,
    },
    #[error("cannot {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// A refused request; the text carries its own hint.
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Corrupt(String),
    #[error("{0}")]
    Wal(String),
    /// Work stopped because another worker of the same command failed; never the cause of a
    /// failure, so a pool reports the error that made it cancel instead (see
    /// [`crate::pipeline::pool`]).
    #[error("{what} cancelled because another worker failed")]
    Cancelled { what: &'static str },
}

impl EngineError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EngineError::Io {
            op,
            path: path.into(),
            source,
        }
    }
    /// Whether this error only says that the work was cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, EngineError::Cancelled { .. })
    }
    pub(crate) fn piece(piece: impl Into<String>, source: FormatError) -> Self {
        EngineError::Piece {
            piece: piece.into(),
            source,
        }
    }
}
