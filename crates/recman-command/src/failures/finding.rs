//! What the checks are measured against and what they find: the words every check, the
//! advice and the failure commands share.

use super::kind::Kind;
use recman_catalog::FoundFailure;
use recman_engine::RetentionPolicy;

/// What the checks are measured against.
#[derive(Clone, Debug)]
pub struct CheckInputs {
    pub policy: RetentionPolicy,
    pub imported: recman_engine::Imported,
    /// The RPO target in microseconds; None: not configured.
    pub rpo_target: Option<i64>,
    /// The RTO target in microseconds; None: not configured.
    pub rto_target: Option<i64>,
    /// The drill interval in microseconds; None: drills are not asked for.
    pub drill_interval: Option<i64>,
    /// Bytes of WAL a replication slot may retain.
    pub slot_limit: u64,
    /// Free bytes the repository's file system must keep; None: only room for a full backup.
    pub repo_min_free: Option<u64>,
    /// The repository's directory when it is on this host's disk (else no space check).
    pub repo_root: Option<std::path::PathBuf>,
    /// How long a command may hold the repository lock, microseconds.
    pub lock_limit: i64,
    /// The fleet's certificate files (this host's and the CA) to watch; empty: no fleet.
    pub certificates: Vec<std::path::PathBuf>,
    /// How long before a certificate's end it is a failure, microseconds.
    pub certificate_warning: i64,
    /// The backup window in microseconds; None: not configured.
    pub backup_window: Option<i64>,
    /// Unix microseconds.
    pub now: i64,
}

#[cfg(test)]
impl CheckInputs {
    /// Redundancy 1, no targets, the default limits: what the unit tests start from.
    pub(crate) fn plain(now: i64) -> CheckInputs {
        CheckInputs {
            policy: recman_engine::RetentionPolicy::Redundancy(1),
            imported: recman_engine::Imported::Kept,
            rpo_target: None,
            rto_target: None,
            drill_interval: None,
            slot_limit: 1 << 30,
            repo_min_free: None,
            repo_root: None,
            lock_limit: 24 * 3_600_000_000,
            certificates: Vec::new(),
            certificate_warning: 30 * 24 * 3_600_000_000,
            backup_window: None,
            now,
        }
    }
}

/// One failure found, with what its repair needs to know.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub kind: Kind,
    pub object: String,
    pub message: String,
    /// The WAL segments a gap lacks (empty for other kinds).
    pub segments: Vec<String>,
}

impl Finding {
    pub(crate) fn new(kind: Kind, object: impl Into<String>, message: String) -> Finding {
        Finding {
            kind,
            object: object.into(),
            message,
            segments: Vec::new(),
        }
    }

    pub fn found(&self) -> FoundFailure {
        FoundFailure {
            kind: self.kind.as_str().into(),
            object: self.object.clone(),
            priority: self.kind.priority().into(),
            message: self.message.clone(),
        }
    }
}

/// What one run of the checks found.
#[derive(Clone, Debug, Default)]
pub struct Checked {
    pub findings: Vec<Finding>,
    /// The kinds that were checked: an open failure of one of them that is not found again
    /// is closed.
    pub ran: Vec<Kind>,
    /// Checks that could not run, each saying why.
    pub skipped: Vec<String>,
    /// Whether the server answered (the archiver check could run): block repair needs it
    /// stopped.
    pub server_up: bool,
}

/// Local time of unix microseconds, for messages.
pub(crate) fn stamp(micros: i64) -> String {
    chrono::DateTime::from_timestamp_micros(micros)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|| micros.to_string())
}

/// Hours, as messages give ages.
pub(crate) fn hours(micros: i64) -> String {
    format!("{:.2} hours", micros as f64 / 3_600e6)
}
