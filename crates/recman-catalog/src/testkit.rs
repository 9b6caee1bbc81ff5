//! Catalog records for unit tests of the crates above the catalog (feature `testkit`).

use crate::records::{BackupRecord, BackupStatus};

/// An available backup `id` of `kind` (FULL, LEVEL1, ...) of database 1, uncompressed, that
/// started at 0 and stopped at 1 (Unix microseconds); tests change what they look at.
pub fn backup(id: &str, kind: &str) -> BackupRecord {
    BackupRecord {
        id: id.into(),
        db_id: 1,
        tag: id.into(),
        backup_type: kind.into(),
        status: BackupStatus::Available,
        start_lsn: 0,
        stop_lsn: Some(1),
        timeline: 1,
        start_wal: "000000010000000000000001".into(),
        stop_wal: None,
        start_time: 0,
        stop_time: Some(1),
        stop_next_xid: None,
        db_bytes: 0,
        written_bytes: 0,
        file_count: 0,
        channels: 1,
        compression: "none".into(),
        filesperset: 1,
        maxopenfiles: 1,
        pid: 0,
        host: String::new(),
        error: None,
    }
}
