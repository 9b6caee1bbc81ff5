//! The error a failed backup (database, archivelog, synthetic full) ends with: the cause, and
//! what the failure left, so that a stopped or out-of-space backup says what was kept.

use crate::error::EngineError;
use recman_catalog::BackupRecord;

/// What a failed backup left, said with the error that stopped it: its row is FAILED, its
/// pieces are gone, and what the repository held before is as it was.
pub(crate) fn explain_failed(e: EngineError, rec: &BackupRecord, dir: &str) -> EngineError {
    let kept = format!(
        "backup {} is recorded FAILED and its pieces under {dir} were removed; earlier backups and archived WAL are kept as they were",
        rec.id
    );
    match e {
        EngineError::Stopped { signal, .. } => EngineError::Stopped {
            signal,
            done: format!(": {kept}"),
        },
        EngineError::NoSpace { path, source, .. } => EngineError::NoSpace {
            path,
            needed: if rec.db_bytes > 0 {
                format!(
                    " (the backup reads {} bytes of data files; {kept})",
                    rec.db_bytes
                )
            } else {
                format!(" ({kept})")
            },
            source,
        },
        other => other,
    }
}
