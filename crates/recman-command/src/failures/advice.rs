//! ADVISE FAILURE: the repair options of each open failure, manual and automatic, and the
//! automatic ones written as one script in recman's language, which `recman run` (and REPAIR
//! FAILURE) runs as written. A repair recman cannot make safely has no automatic option; its
//! advice says why and what a person can do instead.

use super::finding::{Checked, Finding, stamp};
use super::kind::Kind;
use recman_catalog::FailureRecord;
use recman_engine::Context;
use std::path::{Path, PathBuf};

/// The advice for one open failure.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Advice {
    pub failure: FailureRecord,
    pub manual: Vec<String>,
    /// The statements of the automatic repair, or why there is none.
    pub automatic: Result<Vec<String>, String>,
}

/// A language string literal: it has no escapes, so a value holding `'` takes `"`.
fn quoted(v: &str) -> String {
    if v.contains('\'') {
        format!("\"{v}\"")
    } else {
        format!("'{v}'")
    }
}

/// The data directory whose pg_wal a gap's segments may still be in: --pgdata, else the one
/// registered, when it is a directory on this host.
fn local_pgdata(ctx: &Context) -> Option<PathBuf> {
    ctx.pgdata
        .clone()
        .or_else(|| Some(PathBuf::from(&ctx.db.pgdata)))
        .filter(|d| d.join("PG_VERSION").is_file())
}

fn gap(ctx: &Context, f: Option<&Finding>) -> Result<Vec<String>, String> {
    let Some(f) = f.filter(|f| !f.segments.is_empty()) else {
        return Err("the gap was not found again by this check; hint: run recman check".into());
    };
    let Some(pgdata) = local_pgdata(ctx) else {
        return Err(format!(
            "the cluster's data directory is not on this host, so recman cannot look for segment {} in its pg_wal; hint: run ADVISE FAILURE on the database host with --pgdata",
            f.segments[0]
        ));
    };
    let wal = pgdata.join("pg_wal");
    let gone: Vec<&String> = f
        .segments
        .iter()
        .filter(|s| !wal.join(s.as_str()).is_file())
        .collect();
    if let Some(first) = gone.first() {
        return Err(format!(
            "segment {first}{} is gone from {} too, and recman cannot re-archive WAL that exists nowhere; hint: BACKUP DATABASE gives a backup after the gap to recover from (points in time before the gap stay unreachable past it)",
            if gone.len() > 1 {
                format!(" and {} more", gone.len() - 1)
            } else {
                String::new()
            },
            wal.display()
        ));
    }
    Ok(f.segments
        .iter()
        .map(|s| format!("CATALOG ARCHIVELOG {};", quoted(&path_str(&wal.join(s)))))
        .collect())
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The repair options of one open failure; `finding` is what this check found of it.
pub fn advise_one(
    ctx: &Context,
    checked: &Checked,
    failure: &FailureRecord,
    finding: Option<&Finding>,
) -> Advice {
    let backup = || -> Result<Vec<String>, String> { Ok(vec!["BACKUP DATABASE;".to_string()]) };
    let (manual, automatic): (Vec<String>, Result<Vec<String>, String>) =
        match Kind::parse(&failure.kind) {
            Some(Kind::NoBackup | Kind::RetentionUnmet | Kind::RpoExceeded) => (
                vec![
                    "take a backup now: BACKUP DATABASE;".into(),
                    "schedule backups often enough for the retention policy and the RPO target (SHOW ALL shows both)".into(),
                ],
                backup(),
            ),
            Some(Kind::WalGap) => (
                vec![
                    "if the segments are in another copy of the archive, put them back with recman archive-push FILE (or CATALOG ARCHIVELOG 'FILE';)".into(),
                    "else take a new backup (BACKUP DATABASE;): recovery from it starts after the gap".into(),
                ],
                gap(ctx, finding),
            ),
            Some(Kind::PieceMissing) => (
                vec![
                    "if the piece is only out of reach (a mount, a bucket), bring it back and run CROSSCHECK BACKUP;".into(),
                    "once a new backup exists, DELETE EXPIRED BACKUP; forgets the damaged one".into(),
                ],
                backup(),
            ),
            Some(Kind::ArchivingFailed) => (
                vec![
                    "read the server log for archive_command's error and fix its cause (the command, the repository's space or permissions)".into(),
                    "then SQL 'select pg_switch_wal()'; and recman check: the failure closes once a segment is archived".into(),
                ],
                Err("recman does not change archive_command or its destination: the cause is outside the repository; hint: fix it by hand (see the manual options)".into()),
            ),
            Some(Kind::CorruptBlocks) if checked.server_up => (
                vec!["stop the cluster (pg_ctl stop), then RECOVER CORRUPTION LIST;".into()],
                Err("RECOVER CORRUPTION LIST writes into the data directory, and the cluster is running; hint: stop it with pg_ctl stop -m fast, then REPAIR FAILURE".into()),
            ),
            Some(Kind::CorruptBlocks) => (
                vec!["or restore the database from a backup and recover it".into()],
                Ok(vec!["RECOVER CORRUPTION LIST;".into()]),
            ),
            Some(Kind::DrillFailed) => (
                vec!["read the drill's error (recman list drill) and fix its cause, then DRILL;".into()],
                Ok(vec!["DRILL;".into()]),
            ),
            Some(Kind::DrillStale) => (
                vec!["schedule recman drill more often than the drill interval (SHOW ALL shows it)".into()],
                Ok(vec!["DRILL;".into()]),
            ),
            Some(Kind::RtoExceeded) => (
                vec![
                    "make restores faster: more channels (CONFIGURE DEVICE TYPE DISK PARALLELISM n), faster repository storage, recman advise for the read and write settings".into(),
                    "then DRILL; measures again: the failure closes when the drill and the prediction are within the target".into(),
                    "or revise the target if the business can accept it: CONFIGURE RTO TARGET TO '...';".into(),
                ],
                Err("recman cannot make a restore faster by itself: the time is the storage's and the cluster's; hint: see the manual options, then DRILL; to measure again".into()),
            ),
            Some(Kind::SlotRetention) => (
                vec![
                    "if the slot's consumer (a standby, recman receive, a logical subscriber) is gone for good, drop it: SQL \"select pg_drop_replication_slot('NAME')\";".into(),
                    "else start or repair the consumer so that it reads the WAL and the slot moves on".into(),
                    "or raise the limit if the primary's disk has room: CONFIGURE SLOT RETENTION LIMIT TO '...';".into(),
                ],
                Err(format!(
                    "recman does not drop replication slot {}: its consumer may still need the wal it holds; hint: drop it by hand once you know the consumer is gone",
                    failure.object
                )),
            ),
            Some(Kind::RepositorySpace) => (
                vec![
                    "REPORT OBSOLETE; shows what the retention policy no longer needs, DELETE OBSOLETE; removes it; DELETE EXPIRED BACKUP; forgets damaged ones".into(),
                    "or grow the repository's file system, or move other files off it".into(),
                ],
                Err("recman deletes no backup to make room on its own; hint: REPORT OBSOLETE; then DELETE OBSOLETE; (see the manual options)".into()),
            ),
            Some(Kind::RepositoryLock) => (
                vec![
                    "find the holder the failure names (its pid and command): if it is making no progress, stop it (kill PID); the kernel releases the lock with the process".into(),
                    "if it is a long backup that is still working, make it faster (recman advise) or raise the limit: CONFIGURE REPOSITORY LOCK LIMIT TO '...';".into(),
                ],
                Err("recman stops no other command on its own: the holder may be a backup still doing its work; hint: check the process the failure names, then stop it by hand if it is stuck".into()),
            ),
            Some(Kind::CertificateExpiry) => (
                vec![
                    format!(
                        "issue a new certificate from the fleet's CA in place of {}, then restart each recman server that uses it",
                        failure.object
                    ),
                    "recman check closes the failure once the file holds a certificate that ends after the warning (CONFIGURE CERTIFICATE EXPIRY WARNING TO '...'; sets it)".into(),
                ],
                Err("recman does not sign certificates: the fleet's CA key is kept away from it; hint: issue the new certificate with the CA's own tools".into()),
            ),
            Some(Kind::BackupOverrun) => (
                vec![
                    "make the backup faster: recman advise names the channels, multiplexing and buffers for this host; --tune auto adapts them while a backup runs".into(),
                    "or back up less each night: incremental backups (BACKUP INCREMENTAL LEVEL 1 DATABASE;) or CONFIGURE INCREMENTAL FOREVER".into(),
                    "or widen the window if the business allows: CONFIGURE BACKUP WINDOW TO '...';".into(),
                ],
                Err("a faster backup needs a choice of devices and channels only the DBA can make; hint: run recman advise and follow the manual options".into()),
            ),
            None => (
                Vec::new(),
                Err(format!(
                    "failure kind {} is unknown to this recman; hint: upgrade recman",
                    failure.kind
                )),
            ),
        };
    Advice {
        failure: failure.clone(),
        manual,
        automatic,
    }
}

/// The automatic repairs as one script: re-archived WAL first (a backup after it can use it),
/// block repair before a backup copies the blocks, one BACKUP DATABASE for all the failures
/// that ask for one, a drill last to test the result.
pub fn script(db: &str, advice: &[Advice], now: i64) -> Option<String> {
    let order = |s: &str| match s.split_whitespace().next().unwrap_or("") {
        "CATALOG" => 0,
        "RECOVER" => 1,
        "BACKUP" => 2,
        _ => 3,
    };
    let mut statements: Vec<&String> = Vec::new();
    let mut text = format!(
        "# recman repair script for database {db}, advised at {}\n# run it with: recman run -f THIS_FILE (REPAIR FAILURE runs it and checks again)\n",
        stamp(now)
    );
    for a in advice {
        if let Ok(st) = &a.automatic {
            text.push_str(&format!(
                "# failure {} ({}, {}): {}\n",
                a.failure.id, a.failure.priority, a.failure.kind, a.failure.object
            ));
            for s in st {
                if !statements.contains(&s) {
                    statements.push(s);
                }
            }
        }
    }
    if statements.is_empty() {
        return None;
    }
    statements.sort_by_key(|s| order(s));
    for s in statements {
        text.push_str(s);
        text.push('\n');
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn advice(id: i64, kind: &str, st: &[&str]) -> Advice {
        Advice {
            failure: FailureRecord {
                id,
                db_id: 1,
                kind: kind.into(),
                object: "o".into(),
                priority: "HIGH".into(),
                status: "OPEN".into(),
                message: String::new(),
                first_seen: 0,
                last_seen: 0,
                closed_at: None,
            },
            manual: Vec::new(),
            automatic: Ok(st.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn one_backup_for_all_and_wal_before_it() {
        let a = [
            advice(1, "no-backup", &["BACKUP DATABASE;"]),
            advice(2, "wal-gap", &["CATALOG ARCHIVELOG '/pg/pg_wal/X';"]),
            advice(3, "rpo-exceeded", &["BACKUP DATABASE;"]),
        ];
        let s = script("main", &a, 0).unwrap();
        let body: Vec<&str> = s.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            body,
            ["CATALOG ARCHIVELOG '/pg/pg_wal/X';", "BACKUP DATABASE;"]
        );
        let refused = Advice {
            automatic: Err("no".into()),
            ..advice(4, "archiving-failed", &[])
        };
        assert!(script("main", &[refused], 0).is_none());
    }
}
