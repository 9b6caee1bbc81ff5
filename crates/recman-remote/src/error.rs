//! The transport's errors, and how a remote error's kind crosses the wire.

use recman_error::ErrorKind;

/// What a call or a server set-up can fail with. Each maps to one [`ErrorKind`]; an error
/// raised by the remote service keeps the kind it had there.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The peer would not talk to us: it refused our certificate (another CA, expired) or
    /// our certificate's CN is not on its allow-list. Retrying unchanged fails again.
    #[error("{0}")]
    Refused(String),
    /// We would not talk to the peer: its certificate does not check against our CA.
    #[error("{0}")]
    Untrusted(String),
    /// A TLS file (certificate, key, CA) could not be read or used.
    #[error("{0}")]
    Files(String),
    /// The URL or an option is wrong.
    #[error("{0}")]
    Invalid(String),
    /// The network: connect failed, the connection dropped, the stream ended without its
    /// status. Retried by the client for idempotent calls before it reaches the caller.
    #[error("{0}")]
    Network(String),
    /// A call's deadline passed.
    #[error("{0}")]
    Deadline(String),
    /// The remote service failed the call; `kind` is the kind it had on the remote side.
    #[error("{message}")]
    Remote { kind: ErrorKind, message: String },
    /// A local read of the request body or a local write failed.
    #[error("{0}")]
    Io(String),
}

impl RemoteError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            RemoteError::Refused(_) | RemoteError::Untrusted(_) => ErrorKind::InvalidInput,
            RemoteError::Files(_) | RemoteError::Invalid(_) => ErrorKind::InvalidInput,
            RemoteError::Network(_) | RemoteError::Deadline(_) => ErrorKind::Transient,
            RemoteError::Remote { kind, .. } => *kind,
            RemoteError::Io(_) => ErrorKind::Io,
        }
    }

    /// Whether a call that failed so may be sent again (the request may not have run, or
    /// running it twice is harmless for an idempotent method).
    pub fn is_retryable(&self) -> bool {
        matches!(self, RemoteError::Network(_))
            || matches!(
                self,
                RemoteError::Remote {
                    kind: ErrorKind::Transient,
                    ..
                }
            )
    }
}

/// An error a [`crate::Service`] returns: its kind and message travel to the client.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ServiceError {
    pub kind: ErrorKind,
    pub message: String,
}

impl ServiceError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ServiceError {
        ServiceError {
            kind,
            message: message.into(),
        }
    }
    pub fn invalid(message: impl Into<String>) -> ServiceError {
        ServiceError::new(ErrorKind::InvalidInput, message)
    }
    pub fn not_found(message: impl Into<String>) -> ServiceError {
        ServiceError::new(ErrorKind::NotFound, message)
    }
    /// A local I/O error, with its kind from what the system said.
    pub fn io(what: &str, e: &std::io::Error) -> ServiceError {
        ServiceError::new(ErrorKind::of_io(e), format!("{what}: {e}"))
    }
}

impl From<RemoteError> for ServiceError {
    fn from(e: RemoteError) -> ServiceError {
        ServiceError::new(e.kind(), e.to_string())
    }
}

const KINDS: [ErrorKind; 11] = [
    ErrorKind::Corrupt,
    ErrorKind::NotFound,
    ErrorKind::InvalidInput,
    ErrorKind::Busy,
    ErrorKind::Cancelled,
    ErrorKind::Stopped,
    ErrorKind::Deadline,
    ErrorKind::Transient,
    ErrorKind::NoSpace,
    ErrorKind::Io,
    ErrorKind::Internal,
];

/// The kind named by its wire word; an unknown word (a newer peer) reads as internal.
pub(crate) fn kind_from_str(s: &str) -> ErrorKind {
    KINDS
        .into_iter()
        .find(|k| k.as_str() == s)
        .unwrap_or(ErrorKind::Internal)
}

/// A message as an HTTP header value: visible ASCII, the rest percent-encoded.
pub(crate) fn encode_header(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if (0x20..0x7f).contains(&b) && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub(crate) fn decode_header(s: &[u8]) -> String {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let hex = s
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        if s[i] == b'%'
            && let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The transport error inside an `io::Error` from a [`crate::Response`] or
/// [`crate::Call::body`] read.
pub fn from_io(e: &std::io::Error) -> Option<&RemoteError> {
    e.get_ref()?.downcast_ref::<RemoteError>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_kinds_survive_the_headers() {
        let m = "file «base/1/2» 100% torn\nline";
        assert_eq!(decode_header(encode_header(m).as_bytes()), m);
        for k in KINDS {
            assert_eq!(kind_from_str(k.as_str()), k);
        }
    }
}
