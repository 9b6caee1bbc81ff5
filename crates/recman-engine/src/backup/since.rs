//! RMAN's NOT BACKED UP SINCE TIME: a backup that completes what an earlier one (a PARTIAL
//! backup cut short by its DURATION window, typically) already holds. PostgreSQL cannot
//! recover one file from its own start point as Oracle recovers a datafile from its checkpoint
//! SCN, so a file the earlier backup holds is not skipped outright: it is taken as a level 1
//! against that backup (only the pages changed since it started), and every other file whole.
//! Restore then reads the earlier backup and this one as a chain, as for any level 1.

use crate::context::Context;
use crate::error::EngineError;
use crate::incremental::{Increment, ParentChoice};
use crate::manifest_io::load_manifest;
use recman_catalog::BackupStatus;
use recman_format::manifest::EntryKind;
use recman_pg::Lsn;

/// The backup types a later backup can build on: every backup of data files.
const BASES: [&str; 4] = ["FULL", "LEVEL0", "LEVEL1", crate::backup_types::PARTIAL];

/// The newest backup of data files started at or after `since` (Unix microseconds) becomes the
/// parent; with none, the backup is a full one.
pub(super) fn choose(ctx: &Context, since: i64) -> Result<ParentChoice, EngineError> {
    let backups = ctx.repo.catalog().backups(ctx.db.id)?;
    let base = backups.iter().rev().find(|b| {
        b.status == BackupStatus::Available
            && b.start_time >= since
            && BASES.iter().any(|t| b.backup_type.eq_ignore_ascii_case(t))
    });
    let Some(b) = base else {
        return Ok((
            None,
            None,
            Some(
                "no backup of data files since that time: every file is backed up (a full backup)"
                    .into(),
            ),
        ));
    };
    let m = load_manifest(ctx, &b.id)?;
    let start: Lsn = m.start_lsn.parse()?;
    let known: std::collections::HashSet<String> = m
        .entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .map(|e| e.path.clone())
        .collect();
    let notice = format!(
        "{} file(s) are in backup {} ({}) taken since that time: only their pages changed since it started are backed up, every other file whole",
        known.len(),
        b.id,
        b.backup_type
    );
    Ok((
        Some(1),
        Some(Increment {
            parent_id: b.id.clone(),
            parent_start_lsn: start.0,
            known,
        }),
        Some(notice),
    ))
}

#[cfg(test)]
mod tests {
    use crate::retention::obsolete;
    use crate::retention_policy::{BackupFacts, RetentionPolicy, completing_counts_as_full};
    use recman_catalog::BackupRecord;

    fn rec(id: &str, kind: &str) -> BackupRecord {
        recman_catalog::testkit::backup(id, kind)
    }

    #[test]
    fn a_partial_and_its_completion_are_kept_as_one_base() {
        let records = [
            rec("P", super::super::PARTIAL),
            rec("C", "LEVEL1"),
            rec("D", "LEVEL1"),
        ];
        let mut facts: Vec<BackupFacts> = records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut f = BackupFacts::from_record(r);
                f.stop_time = Some(i as i64 + 1);
                f
            })
            .collect();
        facts[1].parent = Some("P".into());
        facts[2].parent = Some("C".into());
        completing_counts_as_full(&mut facts, &records);
        assert_eq!(
            facts.iter().map(|f| f.full).collect::<Vec<_>>(),
            [false, true, false]
        );
        let o = obsolete(&facts, &[], RetentionPolicy::Redundancy(1), 10);
        assert!(o.backups.is_empty(), "{o:?}");
    }
}
