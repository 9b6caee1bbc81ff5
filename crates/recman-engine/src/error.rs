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
}

impl EngineError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        EngineError::Io {
            op,
            path: path.into(),
            source,
        }
    }
    pub(crate) fn piece(piece: impl Into<String>, source: FormatError) -> Self {
        EngineError::Piece {
            piece: piece.into(),
            source,
        }
    }
}
