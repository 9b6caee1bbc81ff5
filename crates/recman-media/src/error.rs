//! The media error: what failed, where, whether retrying could help, and a hint.

use std::fmt;
use std::io;

/// Whether an error can go away by itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    /// The object does not exist.
    NotFound,
    /// A network reset, a timeout, a 5xx, a busy drive: retrying later may succeed.
    Transient,
    /// Bad credentials, a missing bucket, a full medium, an invalid name: retrying will not help.
    Permanent,
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorClass::NotFound => "not found",
            ErrorClass::Transient => "transient",
            ErrorClass::Permanent => "permanent",
        })
    }
}

/// An error from a media driver. The message is lowercase, names the device and the object,
/// and never contains a secret. The details are boxed: errors are rare, results are not.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{}", detail)]
pub struct MediaError {
    pub class: ErrorClass,
    detail: Box<Detail>,
}

#[derive(Clone, Debug)]
struct Detail {
    /// The driver's description of the device ("s3://bucket/prefix").
    device: String,
    /// The object name, or "" for the device as a whole.
    object: String,
    /// What was being done ("create", "read", "commit").
    op: String,
    message: String,
    hint: Option<String>,
    /// The finer kind when the class alone does not say it (a full device is Permanent and
    /// NoSpace); `None` takes the class's kind.
    kind: Option<recman_error::ErrorKind>,
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.device)?;
        if !self.object.is_empty() {
            write!(f, " {} {}", self.op, self.object)?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "; hint: {h}")?;
        }
        Ok(())
    }
}

impl MediaError {
    pub fn new(class: ErrorClass, device: &str, object: &str, op: &str, message: String) -> Self {
        MediaError {
            class,
            detail: Box::new(Detail {
                device: device.to_string(),
                object: object.to_string(),
                op: op.to_string(),
                message,
                hint: None,
                kind: None,
            }),
        }
    }

    pub fn not_found(device: &str, object: &str) -> Self {
        MediaError::new(
            ErrorClass::NotFound,
            device,
            object,
            "open",
            "no such object".to_string(),
        )
        .with_hint("run `recman crosscheck` to mark missing pieces, or restore from another copy")
    }

    pub fn permanent(device: &str, object: &str, message: &str) -> Self {
        MediaError::new(
            ErrorClass::Permanent,
            device,
            object,
            "use",
            message.to_string(),
        )
    }

    /// Classifies an I/O error from a local file system: missing files are NotFound, a
    /// full disk or a permission problem is permanent, interruptions are transient.
    pub fn io(device: &str, object: &str, op: &str, e: io::Error) -> Self {
        if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<MediaError>()) {
            return inner.clone();
        }
        let class = match e.kind() {
            io::ErrorKind::NotFound => ErrorClass::NotFound,
            io::ErrorKind::Interrupted
            | io::ErrorKind::TimedOut
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::WouldBlock => ErrorClass::Transient,
            _ => ErrorClass::Permanent,
        };
        let hint = match e.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => {
                Some("free space on the device (or raise the quota) or move the repository")
            }
            Some(libc::EACCES) | Some(libc::EPERM) => {
                Some("check the owner and permissions of the repository directory")
            }
            _ => None,
        };
        // A full device or quota says so in words a user searches for, not only errno's text.
        let message = match e.raw_os_error() {
            Some(libc::ENOSPC) => format!("no space left on the device ({e})"),
            Some(libc::EDQUOT) => format!("no space left within the disk quota ({e})"),
            _ => e.to_string(),
        };
        let mut err = MediaError::new(class, device, object, op, message);
        err.detail.hint = hint.map(str::to_string);
        err.detail.kind = Some(recman_error::ErrorKind::of_io(&e));
        err
    }

    pub fn with_hint(mut self, hint: &str) -> Self {
        self.detail.hint = Some(hint.to_string());
        self
    }

    pub fn with_op(mut self, op: &str) -> Self {
        self.detail.op = op.to_string();
        self
    }

    /// Appends to the message (e.g. how many tries were made).
    pub fn with_note(mut self, note: &str) -> Self {
        self.detail.message = format!("{} ({note})", self.detail.message);
        self
    }

    pub fn device(&self) -> &str {
        &self.detail.device
    }

    pub fn object(&self) -> &str {
        &self.detail.object
    }

    pub fn message(&self) -> &str {
        &self.detail.message
    }

    pub fn hint(&self) -> Option<&str> {
        self.detail.hint.as_deref()
    }

    /// Wraps the error in an `io::Error` for `Read`/`Write` implementations; [`MediaError::io`]
    /// unwraps it again, so the class and hint survive the trip through std's traits.
    pub fn into_io(self) -> io::Error {
        let kind = match self.class {
            ErrorClass::NotFound => io::ErrorKind::NotFound,
            ErrorClass::Transient => io::ErrorKind::TimedOut,
            ErrorClass::Permanent => io::ErrorKind::Other,
        };
        io::Error::new(kind, self)
    }

    /// Recovers a media error carried inside an `io::Error`, if there is one.
    pub fn from_io(e: &io::Error) -> Option<MediaError> {
        e.get_ref()
            .and_then(|i| i.downcast_ref::<MediaError>())
            .cloned()
    }

    /// Says what kind of failure this is when the class is too coarse (e.g. a driver that
    /// found the object damaged, or a refused credential).
    pub fn with_kind(mut self, kind: recman_error::ErrorKind) -> Self {
        self.detail.kind = Some(kind);
        self
    }

    /// The error's kind: NotFound and Transient as their class says, a permanent failure as
    /// the driver refined it, else Io.
    pub fn kind(&self) -> recman_error::ErrorKind {
        use recman_error::ErrorKind as K;
        match (self.detail.kind, self.class) {
            // A class set after the fact (a retry loop giving up) wins over a stale kind.
            (_, ErrorClass::NotFound) => K::NotFound,
            (_, ErrorClass::Transient) => K::Transient,
            (Some(k), ErrorClass::Permanent) if k != K::NotFound && k != K::Transient => k,
            _ => K::Io,
        }
    }

    pub fn is_not_found(&self) -> bool {
        self.class == ErrorClass::NotFound
    }
}

#[cfg(test)]
mod kind_tests {
    use super::*;
    use recman_error::ErrorKind;

    #[test]
    fn media_errors_have_the_kind_their_cause_says() {
        assert_eq!(
            MediaError::not_found("disk:/r", "a").kind(),
            ErrorKind::NotFound
        );
        let full = MediaError::io(
            "disk:/r",
            "a",
            "write",
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        assert_eq!(full.kind(), ErrorKind::NoSpace);
        let reset = MediaError::new(ErrorClass::Transient, "s3://b", "a", "get", "reset".into());
        assert_eq!(reset.kind(), ErrorKind::Transient);
        let denied = MediaError::io(
            "disk:/r",
            "a",
            "open",
            io::Error::from_raw_os_error(libc::EACCES),
        );
        assert_eq!(denied.kind(), ErrorKind::Io);
        // The kind survives the trip through an io::Error.
        assert_eq!(
            MediaError::io("x", "y", "read", full.into_io()).kind(),
            ErrorKind::NoSpace
        );
    }
}
