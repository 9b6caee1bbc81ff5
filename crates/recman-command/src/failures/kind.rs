//! The kinds of failure the checks find, with the priority each is given (docs/failures.md).

/// One kind of failure. The priority says how close the database is to being unrecoverable:
/// CRITICAL when a restore would fail or stop short now, HIGH when it will soon or a target is
/// missed, LOW when a safeguard is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// No AVAILABLE database backup at all.
    NoBackup,
    /// The retention policy's recovery window or redundancy is not met by the backups.
    RetentionUnmet,
    /// The newest backup is older than the configured RPO target.
    RpoExceeded,
    /// Archived WAL missing after the oldest backup retention keeps.
    WalGap,
    /// A piece a kept backup needs is missing or damaged (crosscheck found it EXPIRED).
    PieceMissing,
    /// PostgreSQL's archiver is failing (pg_stat_archiver).
    ArchivingFailed,
    /// Corrupt blocks recorded in the cluster by `validate database`.
    CorruptBlocks,
    /// The newest restore drill failed.
    DrillFailed,
    /// No drill within the configured drill interval.
    DrillStale,
    /// The last passed drill, or the predicted restore, takes longer than the RTO target.
    RtoExceeded,
    /// A replication slot of the cluster retains more WAL than the configured limit.
    SlotRetention,
    /// The repository's file system has less room than a threshold or the next full backup.
    RepositorySpace,
    /// A command has held the repository lock longer than the configured limit: it is stuck
    /// or far slower than planned, and every backup of the repository waits behind it.
    RepositoryLock,
    /// A certificate of the fleet transport (this host's or the CA) ends within the warning.
    CertificateExpiry,
    /// The next full backup is predicted to take longer than the configured backup window.
    BackupOverrun,
}

impl Kind {
    pub const ALL: [Kind; 15] = [
        Kind::NoBackup,
        Kind::RetentionUnmet,
        Kind::RpoExceeded,
        Kind::WalGap,
        Kind::PieceMissing,
        Kind::ArchivingFailed,
        Kind::CorruptBlocks,
        Kind::DrillFailed,
        Kind::DrillStale,
        Kind::RtoExceeded,
        Kind::SlotRetention,
        Kind::RepositorySpace,
        Kind::RepositoryLock,
        Kind::CertificateExpiry,
        Kind::BackupOverrun,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::NoBackup => "no-backup",
            Kind::RetentionUnmet => "retention-unmet",
            Kind::RpoExceeded => "rpo-exceeded",
            Kind::WalGap => "wal-gap",
            Kind::PieceMissing => "piece-missing",
            Kind::ArchivingFailed => "archiving-failed",
            Kind::CorruptBlocks => "corrupt-blocks",
            Kind::DrillFailed => "drill-failed",
            Kind::DrillStale => "drill-stale",
            Kind::RtoExceeded => "rto-exceeded",
            Kind::SlotRetention => "slot-retention",
            Kind::RepositorySpace => "repository-space",
            Kind::RepositoryLock => "repository-lock",
            Kind::CertificateExpiry => "certificate-expiry",
            Kind::BackupOverrun => "backup-overrun",
        }
    }

    pub fn priority(self) -> &'static str {
        match self {
            Kind::NoBackup | Kind::WalGap | Kind::PieceMissing => "CRITICAL",
            Kind::RetentionUnmet
            | Kind::RpoExceeded
            | Kind::ArchivingFailed
            | Kind::CorruptBlocks
            | Kind::RtoExceeded
            | Kind::SlotRetention
            | Kind::RepositorySpace
            | Kind::RepositoryLock
            | Kind::CertificateExpiry
            | Kind::BackupOverrun => "HIGH",
            Kind::DrillFailed | Kind::DrillStale => "LOW",
        }
    }

    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_and_has_a_priority() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.as_str()), Some(k));
            assert!(["CRITICAL", "HIGH", "LOW"].contains(&k.priority()));
        }
        assert_eq!(Kind::WalGap.priority(), "CRITICAL");
        assert_eq!(Kind::ArchivingFailed.priority(), "HIGH");
        assert_eq!(Kind::DrillFailed.priority(), "LOW");
    }
}
