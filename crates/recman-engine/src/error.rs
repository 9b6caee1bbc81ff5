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
    /// SIGINT or SIGTERM asked the process to stop ([`crate::stop`]); `done` is what the
    /// command did about its unfinished work, added by the command that cleaned up.
    #[error("stopped by {signal}{done}")]
    Stopped { signal: &'static str, done: String },
    /// A write found the device full or the quota used up: an I/O error of the device, never
    /// damage of what it already holds.
    #[error(
        "no space left on the device for {path}: {source}{needed}; hint: free space there (or raise the quota) or write elsewhere, then run the command again"
    )]
    NoSpace {
        path: String,
        needed: String,
        source: std::io::Error,
    },
}

/// Whether an I/O error says the device is full or the quota is used up.
pub(crate) fn is_no_space(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

impl EngineError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        let path = path.into();
        if is_no_space(&source) {
            return EngineError::NoSpace {
                path: path.display().to_string(),
                needed: String::new(),
                source,
            };
        }
        EngineError::Io { op, path, source }
    }
    /// Whether this error only says that the work was cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, EngineError::Cancelled { .. })
    }
    pub(crate) fn piece(piece: impl Into<String>, source: FormatError) -> Self {
        // A write that found the device full is not damage: say so, with no hint to validate.
        if let FormatError::Io(e) = &source
            && is_no_space(e)
        {
            let FormatError::Io(e) = source else {
                unreachable!("matched above")
            };
            return EngineError::NoSpace {
                path: piece.into(),
                needed: String::new(),
                source: e,
            };
        }
        EngineError::Piece {
            piece: piece.into(),
            source,
        }
    }
}
