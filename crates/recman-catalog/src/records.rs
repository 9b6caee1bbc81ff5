//! The rows of the catalog as Rust values.

use std::fmt;
use std::str::FromStr;

/// A registered PostgreSQL cluster (RMAN's REGISTER DATABASE).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DbRecord {
    pub id: i64,
    pub name: String,
    pub system_identifier: u64,
    /// server_version_num, e.g. 150004.
    pub pg_version: u32,
    pub pgdata: String,
    /// Unix microseconds.
    pub registered_at: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum BackupStatus {
    Running,
    Available,
    Failed,
    Expired,
}

impl BackupStatus {
    pub const ALL: [BackupStatus; 4] = [
        BackupStatus::Running,
        BackupStatus::Available,
        BackupStatus::Failed,
        BackupStatus::Expired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BackupStatus::Running => "RUNNING",
            BackupStatus::Available => "AVAILABLE",
            BackupStatus::Failed => "FAILED",
            BackupStatus::Expired => "EXPIRED",
        }
    }
}

impl fmt::Display for BackupStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error of parsing a [`BackupStatus`]; carries the rejected text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown backup status {0:?}; hint: one of RUNNING, AVAILABLE, FAILED, EXPIRED")]
pub struct UnknownStatus(pub String);

impl FromStr for BackupStatus {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BackupStatus::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownStatus(s.to_string()))
    }
}

/// One backup (RMAN's backup set group for one BACKUP DATABASE run).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BackupRecord {
    pub id: String,
    pub db_id: i64,
    /// Stored uppercase: tags are case-insensitive.
    pub tag: String,
    /// "FULL" for now.
    pub backup_type: String,
    pub status: BackupStatus,
    pub start_lsn: u64,
    pub stop_lsn: Option<u64>,
    pub timeline: u32,
    pub start_wal: String,
    pub stop_wal: Option<String>,
    /// Unix microseconds.
    pub start_time: i64,
    pub stop_time: Option<i64>,
    pub stop_next_xid: Option<u64>,
    pub db_bytes: u64,
    pub written_bytes: u64,
    pub file_count: u64,
    pub channels: u32,
    pub compression: String,
    pub filesperset: u32,
    pub maxopenfiles: u32,
    pub pid: u32,
    pub host: String,
    pub error: Option<String>,
}

/// One physical piece of a backup set.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PieceRecord {
    pub backup_id: String,
    pub set_no: u32,
    pub piece_no: u32,
    pub channel: u32,
    /// Relative to the repository root.
    pub path: String,
    pub size: u64,
    pub crc32c: u32,
    pub file_count: u32,
    pub raw_bytes: u64,
}

/// A block found corrupt while backing up (RMAN's V$BACKUP_CORRUPTION).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CorruptBlock {
    pub backup_id: String,
    pub path: String,
    pub block: u32,
    pub kind: String,
    pub relation: Option<String>,
    pub detail: String,
}

/// One archived WAL segment or timeline history file.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct WalRecord {
    pub db_id: i64,
    /// e.g. 000000010000000000000003 or 00000002.history
    pub name: String,
    pub timeline: u32,
    /// Relative to the repository root.
    pub path: String,
    /// Size of the original file.
    pub size: u64,
    /// Size as stored (after compression).
    pub stored_size: u64,
    /// Of the original content.
    pub crc32c: u32,
    /// Unix microseconds.
    pub archived_at: i64,
}

/// Whether a piece or an archived WAL file was found intact on its media by the last
/// crosscheck (RMAN's AVAILABLE / EXPIRED of a backup piece or archived log).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum MediaStatus {
    Available,
    Expired,
}

impl MediaStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MediaStatus::Available => "AVAILABLE",
            MediaStatus::Expired => "EXPIRED",
        }
    }
}

impl fmt::Display for MediaStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a deletion in progress removes: a whole backup (its directory) or one archived WAL file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeleteKind {
    Backup,
    Wal,
}

/// A deletion recorded before its media are removed: the record is already out of every
/// AVAILABLE listing, and whoever finds the row finishes the job (media, then record).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PendingDelete {
    pub kind: DeleteKind,
    pub db_id: i64,
    /// Backup id or WAL file name.
    pub key: String,
    /// Relative to the repository root: the backup's directory or the WAL file.
    pub path: String,
}
