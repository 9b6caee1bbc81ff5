//! The checks against the configured targets and thresholds: drills older than the drill
//! interval, restores slower than the RTO target, replication slots retaining more WAL than
//! their limit, and a repository file system without room for the next full backup.

use super::finding::{CheckInputs, Checked, Finding, hours, stamp};
use super::kind::Kind;
use recman_catalog::{BackupRecord, BackupStatus};
use recman_engine::{Context, EngineError};
use std::path::Path;

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// No drill within the drill interval (none configured: no check).
pub(crate) fn drill_stale(
    ctx: &Context,
    i: &CheckInputs,
    out: &mut Checked,
) -> Result<(), EngineError> {
    out.ran.push(Kind::DrillStale);
    let Some(interval) = i.drill_interval else {
        return Ok(());
    };
    let db = &ctx.db.name;
    let message = match ctx.repo.catalog().drills(ctx.db.id)?.last() {
        None => format!(
            "database {db} has never had a restore drill, and the drill interval is {}",
            hours(interval)
        ),
        Some(d) if i.now - d.started_at > interval => format!(
            "the newest restore drill of database {db} (drill {}) started at {} ({} ago), longer ago than the drill interval of {}",
            d.id,
            stamp(d.started_at),
            hours(i.now - d.started_at),
            hours(interval)
        ),
        Some(_) => return Ok(()),
    };
    out.findings
        .push(Finding::new(Kind::DrillStale, "drill-interval", message));
    Ok(())
}

/// The last passed drill, or the predicted restore, slower than the RTO target.
pub(crate) fn rto(ctx: &Context, i: &CheckInputs, out: &mut Checked) -> Result<(), EngineError> {
    out.ran.push(Kind::RtoExceeded);
    let Some(target) = i.rto_target else {
        return Ok(());
    };
    let limit = target as f64 / 1e6;
    let db = &ctx.db.name;
    let drills = ctx.repo.catalog().drills(ctx.db.id)?;
    if let Some((d, took)) = crate::slo::last_passed_drill(&drills)
        && took > limit
    {
        out.findings.push(Finding::new(
            Kind::RtoExceeded,
            "drill",
            format!(
                "the last passed drill of database {db} (drill {}, {}) took {took:.1}s to restore and recover, over the RTO target of {limit:.0}s",
                d.id,
                stamp(d.started_at)
            ),
        ));
    }
    if let (Some(p), basis) = crate::slo::predicted_restore(ctx)
        && p > limit
    {
        out.findings.push(Finding::new(
            Kind::RtoExceeded,
            "predicted-restore",
            format!(
                "a restore of database {db} is predicted to take {p:.1}s ({basis}), over the RTO target of {limit:.0}s"
            ),
        ));
    }
    Ok(())
}

/// The slots' retained WAL: from the position the server writes at (replays at, on a
/// standby) back to each slot's restart_lsn.
const SLOTS: &str = "select slot_name, slot_type, active::text,
       pg_wal_lsn_diff(case when pg_is_in_recovery() then pg_last_wal_replay_lsn()
                            else pg_current_wal_lsn() end, restart_lsn)::bigint::text
  from pg_replication_slots
 where restart_lsn is not null
 order by slot_name";

/// Replication slots retaining more WAL than the limit. Needs the server; skipped, saying so,
/// when it does not answer, so a failure found before stays open.
pub(crate) fn slots(ctx: &Context, i: &CheckInputs, out: &mut Checked) {
    let rows = recman_pg::resolve_conninfo(ctx.conninfo.as_deref())
        .and_then(|t| recman_pg::Session::connect(&t))
        .and_then(|mut s| s.simple_query(SLOTS));
    let rows = match rows {
        Ok(r) => r,
        Err(e) => {
            out.skipped.push(format!(
                "replication slots were not checked: the database server did not answer ({e}); hint: pass --target with a connection string to the cluster"
            ));
            return;
        }
    };
    out.ran.push(Kind::SlotRetention);
    for r in rows {
        let col = |n: usize| r.get(n).cloned().flatten().unwrap_or_default();
        let retained: u64 = col(3).parse().unwrap_or(0);
        if retained <= i.slot_limit {
            continue;
        }
        let (name, kind, active) = (col(0), col(1), col(2));
        let state = if active == "true" {
            "active: its consumer is behind"
        } else {
            "inactive: no consumer is reading it"
        };
        out.findings.push(Finding::new(
            Kind::SlotRetention,
            name.clone(),
            format!(
                "replication slot {name} ({kind}, {state}) of database {} retains {} of wal, over the limit of {}; the primary keeps that wal in pg_wal until the slot moves on, and its disk fills",
                ctx.db.name,
                mib(retained),
                mib(i.slot_limit)
            ),
        ));
    }
}

/// Free bytes for an unprivileged writer on the file system holding `path`.
fn free_bytes(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `c` is a valid NUL-terminated path and `st` a zeroed statvfs the call fills.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// The repository's file system (a repository on this host's disk) with less free space than
/// the configured minimum, or than the newest full backup wrote: the next one would not fit.
pub(crate) fn space(ctx: &Context, backups: &[BackupRecord], i: &CheckInputs, out: &mut Checked) {
    let Some(root) = &i.repo_root else {
        return;
    };
    let free = match free_bytes(root) {
        Ok(f) => f,
        Err(e) => {
            out.skipped.push(format!(
                "the repository's free space was not checked: statvfs of {} failed ({e}); hint: check that the directory exists and is readable",
                root.display()
            ));
            return;
        }
    };
    out.ran.push(Kind::RepositorySpace);
    let full = backups
        .iter()
        .filter(|b| {
            b.status == BackupStatus::Available
                && matches!(b.backup_type.as_str(), "FULL" | "LEVEL0")
        })
        .max_by_key(|b| b.stop_time)
        .map(|b| b.written_bytes);
    let mut wants = Vec::new();
    if let Some(min) = i.repo_min_free.filter(|m| free < *m) {
        wants.push(format!("the configured minimum of {}", mib(min)));
    }
    if let Some(f) = full.filter(|f| free < *f) {
        wants.push(format!("the {} the newest full backup wrote", mib(f)));
    }
    if wants.is_empty() {
        return;
    }
    out.findings.push(Finding::new(
        Kind::RepositorySpace,
        "repository",
        format!(
            "the file system of repository {} has {} free, less than {}: the next backup of database {} may fail for want of space",
            root.display(),
            mib(free),
            wants.join(" and "),
            ctx.db.name
        ),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use recman_catalog::{DrillRecord, Repository};

    const HOUR: i64 = 3_600_000_000;

    fn context(dir: &Path) -> Context {
        let repo = Repository::create(&dir.join("repo")).unwrap();
        let db = repo
            .catalog()
            .register_database("main", 7, 150000, "/nonexistent")
            .unwrap();
        Context {
            repo,
            db,
            pgdata: None,
            conninfo: Some("host=/nonexistent port=1".into()),
            tls: None,
        }
    }

    fn inputs(now: i64) -> CheckInputs {
        CheckInputs::plain(now)
    }

    fn drill(ctx: &Context, started_at: i64, status: &str, restore_ms: i64) {
        ctx.repo
            .catalog()
            .add_drill(&DrillRecord {
                id: 0,
                db_id: ctx.db.id,
                started_at,
                status: status.into(),
                backup_id: None,
                target: "latest".into(),
                restore_ms,
                recovery_ms: 1000,
                bytes_restored: 1,
                wal_bytes: 1,
                checks: "[]".into(),
                error: None,
            })
            .unwrap();
    }

    fn found(f: impl Fn(&mut Checked)) -> Vec<(Kind, String)> {
        let mut out = Checked::default();
        f(&mut out);
        out.findings
            .into_iter()
            .map(|f| (f.kind, f.object))
            .collect()
    }

    #[test]
    fn a_drill_interval_asks_for_a_drill_and_a_slow_one_misses_the_rto() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = context(dir.path());
        let now = 100 * HOUR;
        let every_day = CheckInputs {
            drill_interval: Some(24 * HOUR),
            rto_target: Some(HOUR),
            ..inputs(now)
        };
        let stale = |i: &CheckInputs| found(|o| drill_stale(&ctx, i, o).unwrap());
        assert!(stale(&inputs(now)).is_empty(), "no interval, no check");
        let want = vec![(Kind::DrillStale, "drill-interval".to_string())];
        assert_eq!(stale(&every_day), want, "never drilled");
        drill(&ctx, now - 25 * HOUR, "PASSED", 1000);
        assert_eq!(stale(&every_day), want, "drilled too long ago");
        drill(&ctx, now - HOUR, "FAILED", 1000);
        assert!(stale(&every_day).is_empty());

        // The newest passed drill is measured, not the newest; no backup: no prediction.
        let slow = |i: &CheckInputs| found(|o| rto(&ctx, i, o).unwrap());
        assert!(slow(&every_day).is_empty());
        drill(&ctx, now - HOUR / 2, "PASSED", 2 * 3_600_000);
        assert_eq!(slow(&every_day), [(Kind::RtoExceeded, "drill".to_string())]);
        assert!(slow(&inputs(now)).is_empty(), "no target, no check");
    }

    #[test]
    fn the_repository_file_system_is_held_to_the_minimum_and_the_full_backup() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = context(dir.path());
        let full = BackupRecord {
            db_id: ctx.db.id,
            written_bytes: 1 << 20,
            ..recman_catalog::testkit::backup("b1", "FULL")
        };
        let on_disk = CheckInputs {
            repo_root: Some(dir.path().to_path_buf()),
            ..inputs(0)
        };
        let space_of = |i: &CheckInputs, b: &[BackupRecord]| found(|o| space(&ctx, b, i, o));
        assert!(space_of(&on_disk, std::slice::from_ref(&full)).is_empty());
        let huge = BackupRecord {
            written_bytes: u64::MAX,
            ..full.clone()
        };
        let want = vec![(Kind::RepositorySpace, "repository".to_string())];
        assert_eq!(space_of(&on_disk, &[huge]), want);
        let demanding = CheckInputs {
            repo_min_free: Some(u64::MAX),
            ..on_disk.clone()
        };
        assert_eq!(space_of(&demanding, &[]), want);
        assert!(
            space_of(&inputs(0), &[]).is_empty(),
            "not on this host's disk"
        );
    }
}
