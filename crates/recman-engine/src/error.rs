//! The engine's error type and the rules every error of recman follows.
//!
//! # Kinds
//! Every error has one [`ErrorKind`] ([`EngineError::kind`]; the catalog, media, PostgreSQL
//! and piece-format errors have a `kind()` of their own, which the engine passes through). The
//! kind is chosen by what happened, never by which command met it: one damaged chunk is
//! `Corrupt` in restore, validate, crosscheck and copy alike.
//! - `Corrupt`: something read back failed its check (piece, chunk, manifest, WAL file,
//!   catalog). Remedy: another copy or another backup. Never retried.
//! - `NotFound`: a named object is not there (backup, tag, image copy, piece on every copy,
//!   WAL segment, registered database, repository).
//! - `InvalidInput`: the request is wrong or does not fit the state it meets (an option or
//!   size, a target, a non-empty directory, a server of another cluster). Running it again
//!   unchanged fails again.
//! - `Busy`: another recman command holds the repository lock or the job.
//! - `Cancelled`: stopped because another worker of the same command failed; a worker pool
//!   reports the cause instead, so a user never sees it alone.
//! - `Deadline`: a backup's DURATION window ended first (without PARTIAL).
//! - `Stopped`: SIGINT/SIGTERM; `NoSpace`: a full device or quota; `Io`: any other local or
//!   server failure (permissions, a refused query).
//! - `Transient`: a network, object store, server or timeout that may answer later. The layer
//!   that talks to it retries (the S3 and plugin drivers with bounded back-off; PostgreSQL
//!   re-runs archive_command); the engine does not retry again, so a transient error that
//!   reaches the user has used its tries and asks for the command to be run again later.
//! - `Internal`: recman broke its own rules (a panicked worker): a bug to report.
//!
//! # Messages
//! Lowercase; they name the object and where it is (the piece and its repository, the path,
//! the backup id); they end with "; hint: ..." saying what to do when the user can do
//! something. A hint whose remedy each front end spells differently (a CLI flag, a language
//! clause) names it as an [`Action`] in an [`EngineError::Remedy`], which
//! [`EngineError::render`] spells for one front end. Secrets never appear. Code decides on the kind or the variant, never on the
//! text. See docs/errors.md.
//!
//! # Refusals
//! An `InvalidInput` error of a recurring sort is [`EngineError::Refused`] with a typed
//! [`Refusal`] ([`crate::refusal`]: one family per file, the values named as fields, the
//! message its `Display`), so a caller matches the variant. [`EngineError::Invalid`] with a
//! bare message is left for a refusal made at one site that no code needs to recognise.

use recman_catalog::CatalogError;
use recman_format::FormatError;
use recman_pg::PgError;
use std::path::PathBuf;

use crate::action::{Action, Hint, Remedy, Spell, Words};
use crate::refusal::{Backups, Cluster, Fleet, Import, Input, Refusal, Wal};
pub use recman_error::ErrorKind;

/// What to do about a damaged piece.
fn piece_hint() -> Hint {
    Hint::new()
        .text("run `recman validate backup` to check the other backups, then ")
        .act(Action::RestoreFromTag)
}

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
        "backup piece {piece} is damaged: {source}; hint: {}",
        piece_hint().render(&Words)
    )]
    Piece { piece: String, source: FormatError },
    /// As `Piece`, for a chunk whose record names the file it belongs to.
    #[error(
        "backup piece {piece} is damaged in file {file}: {source}; hint: {}",
        piece_hint().render(&Words)
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
    /// A refused request of a recurring sort ([`ErrorKind::InvalidInput`]): typed, so code
    /// can tell which one it met without reading the text ([`crate::refusal`]).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// A one-off refused request ([`ErrorKind::InvalidInput`]) that no code needs to
    /// recognise; the text carries its own hint. A refusal that recurs is a [`Refusal`].
    #[error("{0}")]
    Invalid(String),
    /// A named object that is not there ([`ErrorKind::NotFound`]).
    #[error("{0}")]
    NotFound(String),
    /// Data read back that failed its check ([`ErrorKind::Corrupt`]).
    #[error("{0}")]
    Corrupt(String),
    /// Another command holds what this one needs ([`ErrorKind::Busy`]).
    #[error("{0}")]
    Busy(String),
    /// A server, network or timeout that may answer later ([`ErrorKind::Transient`]).
    #[error("{0}")]
    Transient(String),
    /// A broken rule of recman's own ([`ErrorKind::Internal`]).
    #[error("{0}")]
    Internal(String),
    /// An error whose hint names actions each front end spells its own way
    /// ([`EngineError::render`]).
    #[error("{0}")]
    Remedy(Box<Remedy>),
    /// A message that wraps a cause and keeps the cause's kind.
    #[error("{message}")]
    Failed { kind: ErrorKind, message: String },
    /// Work stopped because another worker of the same command failed; never the cause of a
    /// failure, so a pool reports the error that made it cancel instead (see
    /// [`crate::pipeline::pool`]).
    #[error("{what} cancelled because another worker failed")]
    Cancelled { what: &'static str },
    /// SIGINT or SIGTERM asked the process to stop ([`crate::stop`]); `done` is what the
    /// command did about its unfinished work, added by the command that cleaned up.
    #[error("stopped by {signal}{done}")]
    Stopped { signal: &'static str, done: String },
    /// A backup's DURATION window ended before the backup did, and PARTIAL was not given.
    #[error(
        "backup {backup_id} did not finish within DURATION {window}; hint: add --partial (PARTIAL) to keep the files finished in the window, give a longer window, or ask `recman advise --window {window}` what would fit"
    )]
    Deadline { backup_id: String, window: String },
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

/// Each family of refusals is an engine error as it is, so a site writes
/// `Err(Input::Size { .. }.into())`.
macro_rules! refusal_into_engine_error {
    ($($family:ident),*) => {$(
        impl From<$family> for EngineError {
            fn from(r: $family) -> Self {
                EngineError::Refused(Refusal::$family(r))
            }
        }
    )*};
}
refusal_into_engine_error!(Cluster, Wal, Input, Backups, Fleet, Import);

/// A piece error's kind: a media error carried inside an I/O error (a piece read from S3)
/// keeps its own kind.
fn format_kind(e: &FormatError) -> ErrorKind {
    match e {
        FormatError::Io(io) => media_or_io_kind(io),
        e => e.kind(),
    }
}

fn media_or_io_kind(e: &std::io::Error) -> ErrorKind {
    // A read through an agent keeps the kind it had on the wire.
    if let Some(r) = recman_remote::from_io(e) {
        return r.kind();
    }
    match recman_media::MediaError::from_io(e) {
        Some(m) => m.kind(),
        None => ErrorKind::of_io(e),
    }
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
    /// What kind of failure this is; the rules are on this module.
    pub fn kind(&self) -> ErrorKind {
        match self {
            EngineError::Catalog(e) => e.kind(),
            EngineError::Media(e) => e.kind(),
            EngineError::Pg(e) => e.kind(),
            EngineError::Piece { source, .. } | EngineError::PieceFile { source, .. } => {
                format_kind(source)
            }
            EngineError::Io { source, .. } => media_or_io_kind(source),
            EngineError::Refused(_) | EngineError::Invalid(_) => ErrorKind::InvalidInput,
            EngineError::NotFound(_) => ErrorKind::NotFound,
            EngineError::Corrupt(_) => ErrorKind::Corrupt,
            EngineError::Busy(_) => ErrorKind::Busy,
            EngineError::Transient(_) => ErrorKind::Transient,
            EngineError::Internal(_) => ErrorKind::Internal,
            EngineError::Failed { kind, .. } => *kind,
            EngineError::Remedy(r) => r.kind,
            EngineError::Cancelled { .. } => ErrorKind::Cancelled,
            EngineError::Stopped { .. } => ErrorKind::Stopped,
            EngineError::Deadline { .. } => ErrorKind::Deadline,
            EngineError::NoSpace { .. } => ErrorKind::NoSpace,
        }
    }

    /// An error of `kind` whose hint names actions.
    pub fn remedy(kind: ErrorKind, message: String, hint: Hint) -> Self {
        EngineError::Remedy(Box::new(Remedy {
            kind,
            message,
            hint,
        }))
    }

    /// The message with its actions named the way `spell` names them (the CLI's flags, the
    /// language's clauses); `to_string()` is the same in the engine's own words.
    pub fn render(&self, spell: &dyn Spell) -> String {
        match self {
            EngineError::Remedy(r) => r.render(spell),
            EngineError::Piece { piece, source } => format!(
                "backup piece {piece} is damaged: {source}; hint: {}",
                piece_hint().render(spell)
            ),
            EngineError::PieceFile {
                piece,
                file,
                source,
            } => format!(
                "backup piece {piece} is damaged in file {file}: {source}; hint: {}",
                piece_hint().render(spell)
            ),
            e => e.to_string(),
        }
    }

    /// The actions the error's hint names.
    pub fn actions(&self) -> Vec<Action> {
        match self {
            EngineError::Remedy(r) => r.hint.actions().collect(),
            EngineError::Piece { .. } | EngineError::PieceFile { .. } => {
                piece_hint().actions().collect()
            }
            _ => Vec::new(),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use recman_media::{ErrorClass, MediaError};

    #[test]
    fn piece_damage_is_corrupt_and_a_device_failure_inside_it_keeps_its_kind() {
        let damaged = EngineError::piece(
            "backups/B1/set-1.piece",
            FormatError::ChunkChecksum {
                chunk_no: 3,
                piece_offset: 4096,
            },
        );
        assert_eq!(damaged.kind(), ErrorKind::Corrupt);
        let truncated = EngineError::piece(
            "p",
            FormatError::Io(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)),
        );
        assert_eq!(truncated.kind(), ErrorKind::Corrupt);
        // An S3 read that timed out mid-piece reaches the engine as the reader's io::Error.
        let timeout = MediaError::new(ErrorClass::Transient, "s3://b", "p", "read", "t".into());
        let e = EngineError::piece("p", FormatError::Io(timeout.into_io()));
        assert_eq!(e.kind(), ErrorKind::Transient);
        let full = EngineError::piece(
            "p",
            FormatError::Io(std::io::Error::from_raw_os_error(libc::ENOSPC)),
        );
        assert_eq!(full.kind(), ErrorKind::NoSpace);
        assert!(matches!(full, EngineError::NoSpace { .. }));
    }

    #[test]
    fn each_variant_has_the_kind_the_rules_give_it() {
        assert_eq!(
            EngineError::Invalid("x".into()).kind(),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            EngineError::NotFound("x".into()).kind(),
            ErrorKind::NotFound
        );
        assert_eq!(
            EngineError::Transient("x".into()).kind(),
            ErrorKind::Transient
        );
        assert_eq!(
            EngineError::Internal("x".into()).kind(),
            ErrorKind::Internal
        );
        assert_eq!(
            EngineError::Cancelled { what: "backup" }.kind(),
            ErrorKind::Cancelled
        );
        let io = EngineError::io(
            "open",
            "/x",
            std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        assert_eq!(io.kind(), ErrorKind::Io);
        let gone = EngineError::io(
            "open",
            "/x",
            std::io::Error::from(std::io::ErrorKind::NotFound),
        );
        assert_eq!(gone.kind(), ErrorKind::NotFound);
        let busy = EngineError::Catalog(CatalogError::Busy {
            path: "/r".into(),
            holder: Default::default(),
        });
        assert_eq!(busy.kind(), ErrorKind::Busy);
        let pg = EngineError::Pg(PgError::BadLsn { text: "x".into() });
        assert_eq!(pg.kind(), ErrorKind::InvalidInput);
    }
}
