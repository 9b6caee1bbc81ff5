//! The kinds every recman error falls into, shared by the media, PostgreSQL, catalog and
//! engine crates so that one piece of damage, one missing object or one held lock is the same
//! kind whichever command meets it. The rules for choosing a kind are written in
//! `docs/errors.md` and on the engine's error module.

use std::fmt;

/// What went wrong, in the terms a caller decides on: report, retry, or try something else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Something read back failed its check: a piece, a manifest, a WAL file, the catalog.
    /// Never retried; the remedy is another copy or another backup.
    Corrupt,
    /// A named object does not exist: a backup, a tag, a piece, a WAL segment, a repository,
    /// a registered database.
    NotFound,
    /// The request itself is wrong or does not fit the state it meets: an option, a size, a
    /// target, a directory that is not empty. Running it again unchanged fails again.
    InvalidInput,
    /// Another recman command holds what this one needs (a lock, a job).
    Busy,
    /// Work stopped because another worker of the same command failed; never the cause.
    Cancelled,
    /// SIGINT or SIGTERM stopped the command.
    Stopped,
    /// A DURATION window ended before the work did (without PARTIAL). Not damage and not a
    /// wrong request: the same backup in a longer window, or faster, succeeds.
    Deadline,
    /// A network, object store, server or timeout that may answer if asked again later; the
    /// layer that talks to it retries first, so one reaching the user has used its tries.
    Transient,
    /// The device is full or the quota is used up.
    NoSpace,
    /// Any other local I/O failure (permissions, a vanished mount).
    Io,
    /// recman broke its own rules (a panicked thread, an impossible state): a bug.
    Internal,
}

impl ErrorKind {
    /// The lowercase word shown in JSON output and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::NotFound => "not-found",
            ErrorKind::InvalidInput => "invalid-input",
            ErrorKind::Busy => "busy",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Stopped => "stopped",
            ErrorKind::Deadline => "deadline",
            ErrorKind::Transient => "transient",
            ErrorKind::NoSpace => "no-space",
            ErrorKind::Io => "io",
            ErrorKind::Internal => "internal",
        }
    }

    /// Whether running the same command again later, unchanged, may succeed.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::Transient | ErrorKind::Busy | ErrorKind::Stopped
        )
    }

    /// The kind of a local I/O error, by what the operating system said.
    pub fn of_io(e: &std::io::Error) -> ErrorKind {
        use std::io::ErrorKind as K;
        match e.raw_os_error() {
            Some(28) | Some(122) => return ErrorKind::NoSpace, // ENOSPC, EDQUOT on Linux
            _ => {}
        }
        match e.kind() {
            K::NotFound => ErrorKind::NotFound,
            K::Interrupted
            | K::TimedOut
            | K::ConnectionReset
            | K::ConnectionAborted
            | K::ConnectionRefused
            | K::WouldBlock => ErrorKind::Transient,
            K::InvalidData | K::UnexpectedEof => ErrorKind::Corrupt,
            _ => ErrorKind::Io,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[test]
    fn io_errors_are_classified_by_what_the_system_said() {
        assert_eq!(
            ErrorKind::of_io(&io::Error::from_raw_os_error(28)),
            ErrorKind::NoSpace
        );
        assert_eq!(
            ErrorKind::of_io(&io::Error::from(io::ErrorKind::NotFound)),
            ErrorKind::NotFound
        );
        assert_eq!(
            ErrorKind::of_io(&io::Error::from(io::ErrorKind::TimedOut)),
            ErrorKind::Transient
        );
        assert_eq!(
            ErrorKind::of_io(&io::Error::from(io::ErrorKind::PermissionDenied)),
            ErrorKind::Io
        );
        assert!(ErrorKind::Transient.is_retryable());
        assert!(!ErrorKind::Corrupt.is_retryable());
    }
}
