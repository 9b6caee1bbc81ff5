//! The checks: each looks at real state (the catalog, the repository's objects, the server's
//! pg_stat_archiver) and says what is wrong now. Recording what they find, and closing what
//! they no longer find, is the catalog's ([`recman_catalog::Catalog::record_failures`]).

pub use super::finding::{CheckInputs, Checked, Finding};
use super::finding::{hours, stamp};
use super::kind::Kind;
use recman_catalog::{BackupRecord, BackupStatus, MediaStatus};
use recman_engine::retention::{obsolete_in_catalog, wal_position};
use recman_engine::{Context, EngineError, RetentionPolicy, is_segment_name};
use std::collections::{HashMap, HashSet};

/// Runs every check on `ctx`'s database.
pub fn run_checks(ctx: &Context, inputs: &CheckInputs) -> Result<Checked, EngineError> {
    let mut out = Checked::default();
    let cat = ctx.repo.catalog();
    let backups = cat.backups(ctx.db.id)?;
    backup_checks(ctx, &backups, inputs, &mut out);
    let kept = kept_backups(ctx, &backups, inputs)?;
    wal_gap(ctx, &backups, &kept, &mut out)?;
    pieces(ctx, &backups, &kept, &mut out)?;
    corrupt_blocks(ctx, &mut out)?;
    drills(ctx, &mut out)?;
    super::targets::drill_stale(ctx, inputs, &mut out)?;
    super::targets::rto(ctx, inputs, &mut out)?;
    super::targets::space(ctx, &backups, inputs, &mut out);
    super::archiver::archiving(ctx, inputs, &mut out);
    super::targets::slots(ctx, inputs, &mut out);
    super::limits::lock_held(ctx, inputs, &mut out);
    super::limits::certificate_ends(inputs, &mut out);
    super::limits::overrun(ctx, &backups, inputs, &mut out);
    Ok(out)
}

/// The catalog-only checks of `kinds` (missing pieces, corrupt blocks, drills): what a
/// command that has just learned about them records at once, without a server or a listing.
pub fn run_catalog_checks(
    ctx: &Context,
    inputs: &CheckInputs,
    kinds: &[Kind],
) -> Result<Checked, EngineError> {
    let mut out = Checked::default();
    if kinds.contains(&Kind::PieceMissing) {
        let backups = ctx.repo.catalog().backups(ctx.db.id)?;
        let kept = kept_backups(ctx, &backups, inputs)?;
        pieces(ctx, &backups, &kept, &mut out)?;
    }
    if kinds.contains(&Kind::CorruptBlocks) {
        corrupt_blocks(ctx, &mut out)?;
    }
    if kinds.contains(&Kind::DrillFailed) {
        drills(ctx, &mut out)?;
        super::targets::drill_stale(ctx, inputs, &mut out)?;
    }
    Ok(out)
}

/// The database backups (not WAL backups) the retention policy in force keeps.
fn kept_backups<'a>(
    ctx: &Context,
    backups: &'a [BackupRecord],
    inputs: &CheckInputs,
) -> Result<Vec<&'a BackupRecord>, EngineError> {
    let (obs, _, _) = obsolete_in_catalog(
        &ctx.repo,
        ctx.db.id,
        inputs.policy,
        inputs.imported,
        inputs.now,
    )?;
    Ok(backups
        .iter()
        .filter(|b| obs.kept.contains(&b.id) && is_database_backup(b))
        .collect())
}

fn is_database_backup(b: &BackupRecord) -> bool {
    !b.backup_type
        .eq_ignore_ascii_case(recman_engine::ARCHIVELOG)
}

fn is_full(b: &BackupRecord) -> bool {
    matches!(b.backup_type.as_str(), "FULL" | "LEVEL0")
}

/// No backup, the retention policy not met, the RPO target missed.
fn backup_checks(ctx: &Context, backups: &[BackupRecord], i: &CheckInputs, out: &mut Checked) {
    out.ran
        .extend([Kind::NoBackup, Kind::RetentionUnmet, Kind::RpoExceeded]);
    let avail: Vec<&BackupRecord> = backups
        .iter()
        .filter(|b| b.status == BackupStatus::Available && is_database_backup(b))
        .collect();
    let db = &ctx.db.name;
    let Some(newest) = avail.iter().filter_map(|b| b.stop_time).max() else {
        out.findings.push(Finding::new(
            Kind::NoBackup,
            "database",
            format!(
                "database {db} has no AVAILABLE backup: it cannot be restored (LIST BACKUP shows what the catalog holds)"
            ),
        ));
        return;
    };
    let age = i.now - newest;
    match i.policy {
        RetentionPolicy::Redundancy(r) => {
            let fulls = avail.iter().filter(|b| is_full(b)).count();
            if fulls < r as usize {
                out.findings.push(Finding::new(
                    Kind::RetentionUnmet,
                    "redundancy",
                    format!(
                        "retention policy redundancy {r} needs {r} full backup(s) of database {db}; {fulls} AVAILABLE"
                    ),
                ));
            }
        }
        RetentionPolicy::RecoveryWindow { micros } if age > micros => {
            out.findings.push(Finding::new(
                Kind::RetentionUnmet,
                "recovery-window",
                format!(
                    "no backup of database {db} within the recovery window of {}: the newest finished at {} ({} ago)",
                    hours(micros),
                    stamp(newest),
                    hours(age)
                ),
            ));
        }
        _ => {}
    }
    if let Some(t) = i.rpo_target
        && age > t
    {
        out.findings.push(Finding::new(
            Kind::RpoExceeded,
            "rpo-target",
            format!(
                "the newest backup of database {db} finished at {} ({} ago), older than the RPO target of {}",
                stamp(newest),
                hours(age),
                hours(t)
            ),
        ));
    }
}

/// The segment size of the database's WAL, from the archived segments' sizes.
fn segment_size(sizes: impl Iterator<Item = u64>) -> u64 {
    sizes
        .filter(|s| s.is_power_of_two() && *s >= 1 << 20)
        .max()
        .unwrap_or(16 << 20)
}

fn segment_name(timeline: u32, pos: u64) -> String {
    format!("{timeline:08X}{:08X}{:08X}", pos >> 32, pos as u32)
}

/// The position after `pos` (log and segment in one number, see [`wal_position`]).
fn next_position(pos: u64, per_log: u64) -> u64 {
    if (pos & 0xFFFF_FFFF) + 1 >= per_log {
        ((pos >> 32) + 1) << 32
    } else {
        pos + 1
    }
}

/// Archived WAL missing between the start of the oldest kept backup and the newest archived
/// segment: a segment is there when its object is in the repository, an AVAILABLE backup of
/// archived WAL holds it, or a copy of it is recorded on another device. The repository's
/// objects are listed once; the catalog's word alone is not trusted.
fn wal_gap(
    ctx: &Context,
    backups: &[BackupRecord],
    kept: &[&BackupRecord],
    out: &mut Checked,
) -> Result<(), EngineError> {
    out.ran.push(Kind::WalGap);
    let base = match kept.iter().min_by_key(|b| wal_position(&b.start_wal)) {
        Some(b) => *b,
        None => match backups
            .iter()
            .filter(|b| b.status == BackupStatus::Available && is_database_backup(b))
            .min_by_key(|b| wal_position(&b.start_wal))
        {
            Some(b) => b,
            None => return Ok(()),
        },
    };
    let Some(floor) = wal_position(&base.start_wal) else {
        return Ok(());
    };
    let cat = ctx.repo.catalog();
    let wal = cat.wal_states(ctx.db.id)?;
    let prefix = format!("{}/wal/", ctx.db.name);
    let objects: HashSet<String> = ctx
        .repo
        .list_objects(&prefix)?
        .into_iter()
        .map(|o| o.name)
        .collect();
    let in_sets: HashMap<String, u32> = cat.wal_backup_counts(ctx.db.id)?;
    let segs: Vec<_> = wal
        .iter()
        .filter(|(w, _)| is_segment_name(&w.name))
        .collect();
    let per_log = 0x1_0000_0000 / segment_size(segs.iter().map(|(w, _)| w.size));
    let mut present: HashSet<u64> = HashSet::new();
    let mut newest = None;
    for (w, _) in &segs {
        let Some(p) = wal_position(&w.name) else {
            continue;
        };
        newest = newest.max(Some(p));
        if objects.contains(&w.path) || in_sets.contains_key(&w.name) {
            present.insert(p);
        }
    }
    for name in in_sets.keys().filter(|n| is_segment_name(n)) {
        if let Some(p) = wal_position(name) {
            present.insert(p);
            newest = newest.max(Some(p));
        }
    }
    let Some(newest) = newest else {
        return Ok(());
    };
    let timeline_at = |pos: u64| {
        segs.iter()
            .filter(|(w, _)| wal_position(&w.name).is_some_and(|p| p <= pos))
            .map(|(w, _)| w.timeline)
            .max()
            .unwrap_or(base.timeline)
    };
    let mut run: Vec<String> = Vec::new();
    let mut pos = floor;
    while pos <= newest {
        let name = segment_name(timeline_at(pos), pos);
        let copied = !present.contains(&pos) && has_copy(ctx, &name)?;
        if present.contains(&pos) || copied {
            gap_finding(ctx, base, &mut run, out);
        } else {
            run.push(name);
        }
        pos = next_position(pos, per_log);
    }
    gap_finding(ctx, base, &mut run, out);
    Ok(())
}

fn has_copy(ctx: &Context, name: &str) -> Result<bool, EngineError> {
    let rel = recman_catalog::layout::wal_object(&ctx.db.name, name);
    Ok(!ctx.repo.catalog().copies_of(&rel)?.is_empty())
}

/// Ends a run of missing segments: one failure per contiguous run, named by its first.
fn gap_finding(ctx: &Context, base: &BackupRecord, run: &mut Vec<String>, out: &mut Checked) {
    if run.is_empty() {
        return;
    }
    let segments = std::mem::take(run);
    let (first, last) = (&segments[0], &segments[segments.len() - 1]);
    let mut f = Finding::new(
        Kind::WalGap,
        first.clone(),
        format!(
            "archived wal of database {} has a gap after backup {} (the oldest the retention policy keeps): segment(s) {first} to {last} ({}) are in no archive object, archivelog backup or copy; recovery from that backup stops before them",
            ctx.db.name,
            base.id,
            segments.len()
        ),
    );
    f.segments = segments;
    out.findings.push(f);
}

/// Pieces a crosscheck found missing or damaged, of backups not older than the oldest one the
/// retention policy keeps (an older one is no longer counted on, so its loss is no failure).
fn pieces(
    ctx: &Context,
    backups: &[BackupRecord],
    kept: &[&BackupRecord],
    out: &mut Checked,
) -> Result<(), EngineError> {
    out.ran.push(Kind::PieceMissing);
    let oldest_kept = kept.iter().filter_map(|b| b.stop_time).min();
    for b in backups {
        if !matches!(b.status, BackupStatus::Available | BackupStatus::Expired) {
            continue;
        }
        if let (Some(k), Some(t)) = (oldest_kept, b.stop_time)
            && t < k
        {
            continue;
        }
        for (p, st) in ctx.repo.catalog().piece_states(&b.id)? {
            if st == MediaStatus::Expired {
                out.findings.push(Finding::new(
                    Kind::PieceMissing,
                    p.path.clone(),
                    format!(
                        "piece {} of backup {} (tag {}) is missing or damaged: the last crosscheck found it EXPIRED, so the backup cannot be restored",
                        p.path, b.id, b.tag
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Corrupt blocks the last `validate database` recorded, one failure per file.
fn corrupt_blocks(ctx: &Context, out: &mut Checked) -> Result<(), EngineError> {
    out.ran.push(Kind::CorruptBlocks);
    let mut by_file: Vec<(String, Vec<u32>, Option<String>)> = Vec::new();
    for b in ctx.repo.catalog().block_corruption(ctx.db.id)? {
        match by_file.iter_mut().find(|(p, _, _)| *p == b.path) {
            Some((_, blocks, _)) => blocks.push(b.block),
            None => by_file.push((b.path, vec![b.block], b.relation)),
        }
    }
    for (path, blocks, relation) in by_file {
        let list: Vec<String> = blocks.iter().map(u32::to_string).collect();
        out.findings.push(Finding::new(
            Kind::CorruptBlocks,
            path.clone(),
            format!(
                "{} corrupt block(s) recorded in {path}{} by validate database: block(s) {}",
                blocks.len(),
                relation
                    .map(|r| format!(" (relation {r})"))
                    .unwrap_or_default(),
                list.join(", ")
            ),
        ));
    }
    Ok(())
}

/// The newest restore drill failed.
fn drills(ctx: &Context, out: &mut Checked) -> Result<(), EngineError> {
    out.ran.push(Kind::DrillFailed);
    if let Some(d) = ctx.repo.catalog().drills(ctx.db.id)?.last()
        && d.status == "FAILED"
    {
        out.findings.push(Finding::new(
            Kind::DrillFailed,
            "drill",
            format!(
                "the newest restore drill of database {} (drill {}, {}) failed: {}",
                ctx.db.name,
                d.id,
                stamp(d.started_at),
                d.error.as_deref().unwrap_or("no reason recorded")
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use recman_catalog::{Repository, WalRecord};

    /// A repository with one full backup from segment 0/FE (16 MiB segments) and archived
    /// segments 0/FE to 1/02, of which `lost` have no object.
    fn repo_with_wal(dir: &std::path::Path, lost: &[&str]) -> Context {
        let repo = Repository::create(&dir.join("repo")).unwrap();
        let db = repo
            .catalog()
            .register_database("main", 7, 150000, "/nonexistent")
            .unwrap();
        let b = BackupRecord {
            db_id: db.id,
            start_wal: "0000000100000000000000FE".into(),
            stop_time: Some(1_000_000),
            ..recman_catalog::testkit::backup("b1", "FULL")
        };
        repo.catalog().insert_backup(&b).unwrap();
        let names = [
            "0000000100000000000000FE",
            "0000000100000000000000FF",
            "000000010000000100000000",
            "000000010000000100000001",
            "000000010000000100000002",
        ];
        for n in names {
            let path = recman_catalog::layout::wal_object("main", n);
            if !lost.contains(&n) {
                repo.write_atomic(&path, b"wal").unwrap();
            }
            repo.catalog()
                .add_wal(&WalRecord {
                    db_id: db.id,
                    name: n.into(),
                    timeline: 1,
                    path,
                    size: 16 << 20,
                    stored_size: 3,
                    crc32c: 0,
                    archived_at: 1,
                })
                .unwrap();
        }
        Context {
            repo,
            db,
            pgdata: None,
            // Nothing listens there: the archiving check is skipped, saying so.
            conninfo: Some("host=/nonexistent port=1".into()),
            tls: None,
        }
    }

    fn inputs() -> CheckInputs {
        CheckInputs::plain(2_000_000)
    }

    #[test]
    fn a_gap_is_the_objects_missing_after_the_kept_backup_across_a_log_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = repo_with_wal(
            dir.path(),
            &["0000000100000000000000FF", "000000010000000100000000"],
        );
        let c = run_checks(&ctx, &inputs()).unwrap();
        let gaps: Vec<&Finding> = c
            .findings
            .iter()
            .filter(|f| f.kind == Kind::WalGap)
            .collect();
        assert_eq!(gaps.len(), 1, "{:?}", c.findings);
        assert_eq!(gaps[0].object, "0000000100000000000000FF");
        assert_eq!(
            gaps[0].segments,
            ["0000000100000000000000FF", "000000010000000100000000"]
        );
        assert!(c.ran.contains(&Kind::WalGap) && !c.ran.contains(&Kind::ArchivingFailed));
        assert!(!c.server_up && c.skipped[0].contains("archiving was not checked"));
        assert!(
            c.findings.iter().all(|f| f.kind == Kind::WalGap),
            "{:?}",
            c.findings
        );

        let dir = tempfile::tempdir().unwrap();
        let whole = run_checks(&repo_with_wal(dir.path(), &[]), &inputs()).unwrap();
        assert!(whole.findings.is_empty(), "{:?}", whole.findings);
        let stale = CheckInputs {
            rpo_target: Some(500_000),
            ..inputs()
        };
        let dir = tempfile::tempdir().unwrap();
        let late = run_checks(&repo_with_wal(dir.path(), &[]), &stale).unwrap();
        let kinds: Vec<Kind> = late.findings.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, [Kind::RpoExceeded]);
    }

    #[test]
    fn backups_are_held_to_the_policy_and_an_expired_piece_of_a_kept_backup_is_critical() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = repo_with_wal(dir.path(), &[]);
        let kinds = |policy, ctx: &Context| -> Vec<(Kind, String)> {
            let i = CheckInputs { policy, ..inputs() };
            let c = run_checks(ctx, &i).unwrap();
            c.findings.into_iter().map(|f| (f.kind, f.object)).collect()
        };
        assert_eq!(
            kinds(RetentionPolicy::Redundancy(2), &ctx),
            [(Kind::RetentionUnmet, "redundancy".to_string())]
        );
        let window = RetentionPolicy::RecoveryWindow { micros: 500_000 };
        assert_eq!(
            kinds(window, &ctx),
            [(Kind::RetentionUnmet, "recovery-window".to_string())]
        );
        let piece = recman_catalog::PieceRecord {
            backup_id: "b1".into(),
            set_no: 1,
            piece_no: 1,
            channel: 1,
            path: "main/backup/b1/s00001_p001.rmp".into(),
            size: 1,
            crc32c: 0,
            file_count: 1,
            raw_bytes: 1,
        };
        let cat = ctx.repo.catalog();
        let b = cat.backup("b1").unwrap().unwrap();
        cat.complete_backup(&b, std::slice::from_ref(&piece), &[])
            .unwrap();
        cat.set_piece_statuses("b1", &[(1, 1, MediaStatus::Expired)])
            .unwrap();
        // The only backup is EXPIRED now: nothing restorable, and the piece named.
        assert_eq!(
            kinds(RetentionPolicy::Redundancy(1), &ctx),
            [
                (Kind::NoBackup, "database".to_string()),
                (Kind::PieceMissing, piece.path.clone())
            ]
        );
    }

    #[test]
    fn positions_step_over_the_end_of_a_log() {
        let per_log = 0x1_0000_0000 / (16 << 20);
        assert_eq!(next_position(0x0000_0001_0000_00FE, per_log), 0x1_0000_00FF);
        assert_eq!(next_position(0x0000_0001_0000_00FF, per_log), 0x2_0000_0000);
        assert_eq!(segment_name(1, 0x2_0000_0003), "000000010000000200000003");
        assert_eq!(segment_size([16u64 << 20, 4096].into_iter()), 16 << 20);
        assert_eq!(segment_size(std::iter::empty()), 16 << 20);
    }
}
