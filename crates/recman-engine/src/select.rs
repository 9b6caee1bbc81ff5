//! Which backup a restore starts from: the newest AVAILABLE one that is consistent before the
//! recovery target (RMAN's "least media recovery" rule).

use crate::error::EngineError;
use crate::recovery_target::RecoveryTarget;
use crate::util::rfc3339;
use recman_catalog::{BackupRecord, BackupStatus};
use recman_pg::Lsn;

pub fn select_backup<'a>(
    backups: &'a [BackupRecord],
    target: &RecoveryTarget,
    from_tag: Option<&str>,
) -> Result<&'a BackupRecord, EngineError> {
    let tag = from_tag.map(str::to_uppercase);
    let usable: Vec<&BackupRecord> = backups
        .iter()
        .filter(|b| b.status == BackupStatus::Available)
        // A backup of archived WAL holds no data files: never a base to restore from.
        .filter(|b| {
            !b.backup_type
                .eq_ignore_ascii_case(crate::backup_types::ARCHIVELOG)
        })
        // A backup cut short by its DURATION window lacks files: only a later backup that
        // completes it (its child) is a base.
        .filter(|b| {
            !b.backup_type
                .eq_ignore_ascii_case(crate::backup_types::PARTIAL)
        })
        .filter(|b| tag.as_ref().is_none_or(|t| &b.tag == t))
        .collect();
    if usable.is_empty() {
        return Err(EngineError::NotFound(match &tag {
            Some(t) => format!(
                "no available backup has tag {t}; hint: `recman list backup` shows the tags"
            ),
            None => {
                "no available backup to restore from; hint: take one with `recman backup database`"
                    .into()
            }
        }));
    }
    let fits = |b: &BackupRecord| match target {
        RecoveryTarget::Latest => true,
        RecoveryTarget::Time { micros, .. } => b.stop_time.is_some_and(|t| t <= *micros),
        RecoveryTarget::Lsn(l) | RecoveryTarget::Name { lsn: l, .. } => {
            b.stop_lsn.is_some_and(|s| s <= l.0)
        }
        RecoveryTarget::Xid(x) => b.stop_next_xid.is_some_and(|n| n <= *x),
    };
    let best = usable
        .iter()
        .filter(|b| fits(b))
        .max_by_key(|b| (b.stop_time, b.stop_lsn));
    best.copied().ok_or_else(|| {
        let oldest = usable.iter().min_by_key(|b| b.stop_time).expect("non-empty");
        EngineError::NotFound(format!(
            "no backup is consistent before {target}: the oldest available backup {} ends at {} (lsn {}, next xid {}); hint: choose a later target, or restore without one",
            oldest.id,
            rfc3339(oldest.stop_time.unwrap_or_default()),
            Lsn(oldest.stop_lsn.unwrap_or_default()),
            oldest.stop_next_xid.unwrap_or_default()
        ))
    })
}
