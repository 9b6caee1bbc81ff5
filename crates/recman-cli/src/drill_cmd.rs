//! How drills and duplicates are printed, `list drill`, and the drill rule of
//! `report need-backup --drill-days`.

use crate::cli::Global;
use crate::display::size;
use recman_command::model::{DrillCheck, DrillRecord, DrillReport, DuplicateReport};

fn when(micros: i64) -> String {
    chrono::DateTime::from_timestamp_micros(micros)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

fn secs(ms: i64) -> String {
    format!("{:.1}s", ms as f64 / 1000.0)
}

/// The drill's outcome: printed even with --quiet when it failed (the checks say why).
pub(crate) fn print_drill(g: &Global, r: &DrillReport) {
    let d = &r.record;
    if g.quiet && r.passed() {
        return;
    }
    println!(
        "drill {} of backup {}: {}; RTO {} (restore {} + recovery {}), {} restored, {} of WAL replayed",
        d.status,
        d.backup_id.as_deref().unwrap_or("-"),
        d.target,
        secs(d.restore_ms + d.recovery_ms),
        secs(d.restore_ms),
        secs(d.recovery_ms),
        size(d.bytes_restored as u64),
        size(d.wal_bytes as u64)
    );
    for c in &r.checks {
        println!(
            "  check {}: {} ({})",
            c.name,
            if c.passed { "passed" } else { "FAILED" },
            c.detail
        );
    }
    match r.kept_port {
        Some(port) => println!(
            "kept: the instance runs in {} on port {port}; stop it with pg_ctl -D {} stop, then remove the directory",
            r.dir.display(),
            recman_command::pgdata_in(&r.dir).display()
        ),
        None if !r.passed() && r.dir.exists() => {
            println!("kept: {} (as --keep asks)", r.dir.display())
        }
        None => {}
    }
}

pub(crate) fn print_duplicate(g: &Global, r: &DuplicateReport) {
    if g.quiet {
        return;
    }
    let to = r.restore.to.display();
    println!(
        "duplicated backup {} (tag {}) to {to}: {} files, {} in {:.1}s; port {}",
        r.restore.backup_id,
        r.restore.tag,
        r.restore.files,
        size(r.restore.bytes),
        r.restore.elapsed.as_secs_f64(),
        r.port
    );
    if r.standby {
        println!(
            "a standby: it recovers from the archive through archive-get, then streams from the primary (standby.signal, primary_conninfo written)"
        );
    } else {
        println!(
            "a clone: it recovers to the end of the archived WAL and opens for writes on a new timeline"
        );
    }
    println!("start it with pg_ctl -D {to} start");
}

pub(crate) fn list_drill(recs: &[DrillRecord], json: bool) {
    if json {
        let v: Vec<serde_json::Value> = recs
            .iter()
            .map(|r| {
                let checks: Vec<DrillCheck> = serde_json::from_str(&r.checks).unwrap_or_default();
                serde_json::json!({
                    "id": r.id,
                    "started_at": r.started_at,
                    "status": r.status,
                    "backup_id": r.backup_id,
                    "target": r.target,
                    "restore_ms": r.restore_ms,
                    "recovery_ms": r.recovery_ms,
                    "rto_ms": r.restore_ms + r.recovery_ms,
                    "bytes_restored": r.bytes_restored,
                    "wal_bytes": r.wal_bytes,
                    "checks": checks,
                    "error": r.error,
                })
            })
            .collect();
        match serde_json::to_string_pretty(&v) {
            Ok(t) => println!("{t}"),
            Err(e) => eprintln!("recman: cannot print the drills as JSON: {e}"),
        }
        return;
    }
    if recs.is_empty() {
        println!("no drills; run `recman drill`");
        return;
    }
    println!("Key  Started             Status Backup               RTO      Restored  WAL");
    for r in recs {
        println!(
            "{:<4} {} {:<6} {:<20} {:<8} {:<9} {}",
            r.id,
            when(r.started_at),
            r.status,
            r.backup_id.as_deref().unwrap_or("-"),
            secs(r.restore_ms + r.recovery_ms),
            size(r.bytes_restored as u64),
            size(r.wal_bytes as u64)
        );
        if let Some(e) = &r.error {
            println!("     error: {e}");
        }
    }
}

// The decision is the command model's (REPORT NEED BACKUP --drill-days runs there).
#[cfg(test)]
use recman_command::drill_need;

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(status: &str, started_at: i64) -> DrillRecord {
        DrillRecord {
            id: 1,
            db_id: 1,
            started_at,
            status: status.into(),
            backup_id: None,
            target: String::new(),
            restore_ms: 1,
            recovery_ms: 1,
            bytes_restored: 0,
            wal_bytes: 0,
            checks: "[]".into(),
            error: None,
        }
    }

    #[test]
    fn only_a_recent_passed_drill_satisfies_drill_days() {
        let day = 86_400_000_000i64;
        let now = 100 * day;
        assert!(
            drill_need(&[], 7.0, now)
                .unwrap()
                .contains("none ever passed")
        );
        // A recent failure does not count; an old pass is reported with its age.
        let old = [rec("PASSED", now - 10 * day), rec("FAILED", now - day)];
        assert!(
            drill_need(&old, 7.0, now)
                .unwrap()
                .contains("10.0 days ago")
        );
        assert_eq!(drill_need(&old, 11.0, now), None);
        let recent = [rec("PASSED", now - day)];
        assert_eq!(drill_need(&recent, 7.0, now), None);
    }
}
