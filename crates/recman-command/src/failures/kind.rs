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
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::NoBackup,
        Kind::RetentionUnmet,
        Kind::RpoExceeded,
        Kind::WalGap,
        Kind::PieceMissing,
        Kind::ArchivingFailed,
        Kind::CorruptBlocks,
        Kind::DrillFailed,
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
        }
    }

    pub fn priority(self) -> &'static str {
        match self {
            Kind::NoBackup | Kind::WalGap | Kind::PieceMissing => "CRITICAL",
            Kind::RetentionUnmet
            | Kind::RpoExceeded
            | Kind::ArchivingFailed
            | Kind::CorruptBlocks => "HIGH",
            Kind::DrillFailed => "LOW",
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
