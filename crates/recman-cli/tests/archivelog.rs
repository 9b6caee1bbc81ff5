//! Issue 5: BACKUP ARCHIVELOG and BACKUP DATABASE PLUS ARCHIVELOG. Archived WAL goes into
//! backup sets; restore never starts from one; once the archive's copies are deleted
//! (`--delete-input`, `delete archivelog all --backed-up N`), recovery reads the WAL from the
//! sets; the rebuilt catalog knows which sets hold which WAL.

mod common;
mod flows;

use common::*;
use flows::*;
use serde_json::Value;

fn wal(setup: &Setup) -> Vec<Value> {
    setup.archivelogs()
}

fn segments(setup: &Setup) -> Vec<Value> {
    wal(setup)
        .into_iter()
        .filter(|w| w["kind"] == "segment")
        .collect()
}

fn types(setup: &Setup) -> Vec<String> {
    setup
        .backups()
        .iter()
        .map(|b| b["type"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn archived_wal_in_backup_sets_serves_recovery() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(x int); insert into t select generate_series(1, 1000)");
    c.switch_wal_and_wait_archived();

    // PLUS ARCHIVELOG: WAL before, the database, WAL during.
    let out = setup.ok(&["backup", "database", "--plus-archivelog"]);
    assert_eq!(out.matches("archivelog backup").count(), 2, "{out}");
    assert_eq!(types(&setup)[..3], ["ARCHIVELOG", "FULL", "ARCHIVELOG"]);
    assert!(
        segments(&setup).iter().all(|w| w["backed_up"] == 1),
        "{:?}",
        wal(&setup)
    );
    // NOT BACKED UP 1 TIMES takes no segment again (only, maybe, the backup history file,
    // which PostgreSQL archives after the backup's last segment).
    setup.ok(&["backup", "archivelog", "all", "--not-backed-up", "1"]);
    assert!(segments(&setup).iter().all(|w| w["backed_up"] == 1));
    let out = setup.ok(&["backup", "archivelog", "all", "--not-backed-up", "1"]);
    assert!(out.contains("no archived logs to back up"), "{out}");
    let full_tag = setup.backups()[1]["tag"].as_str().unwrap().to_string();
    // An ARCHIVELOG backup is never a restore base, even by tag.
    let al_tag = setup.backups()[0]["tag"].as_str().unwrap().to_string();
    let (_t, scratch) = new_scratch_dir();
    let err = setup.err(&[
        "restore",
        "database",
        "--to",
        path_str(&scratch.join("x")),
        "--from-tag",
        &al_tag,
    ]);
    assert!(err.contains("no available backup has tag"), "{err}");

    // WAL after the backup, into a set, then out of the archive.
    c.psql("insert into t select generate_series(1, 1000)");
    let last = c.switch_wal_and_wait_archived();
    let out = setup.ok(&[
        "backup",
        "archivelog",
        "all",
        "--not-backed-up",
        "1",
        "--delete-input",
        "--compress",
        "lz4",
    ]);
    assert!(out.contains("deleted archived log (input)"), "{out}");
    // Only this run's input goes; what earlier backups hold stays until deleted.
    let left = segments(&setup);
    assert!(
        left.iter()
            .all(|w| w["name"] != last.as_str() && w["backed_up"] == 1),
        "{left:?}"
    );
    let newest = setup.backups().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = setup.ok(&["validate", "backup", &newest]);
    assert!(!out.to_lowercase().contains("corrupt block"), "{out}");

    // More WAL, backed up without deletion, then removed by `delete archivelog --backed-up`.
    c.psql("insert into t select generate_series(1, 500)");
    c.switch_wal_and_wait_archived();
    setup.ok(&["backup", "archivelog", "all", "--not-backed-up", "1"]);
    assert!(!segments(&setup).is_empty());
    let out = setup.ok(&[
        "delete",
        "archivelog",
        "all",
        "--backed-up",
        "1",
        "--noprompt",
    ]);
    assert!(out.contains("Deleted"), "{out}");
    assert!(segments(&setup).is_empty(), "{:?}", wal(&setup));

    // The configured deletion policy (RMAN's BACKED UP 1 TIMES) is what a plain `delete
    // archivelog all` applies: the segment a backup set holds goes, the newer one no backup
    // holds stays (without the policy neither would go: the full backup's recovery needs both).
    c.psql("create table before_the_archivelog_backup (x int)");
    let held = c.switch_wal_and_wait_archived();
    setup.ok(&["backup", "archivelog", "all", "--not-backed-up", "1"]);
    c.psql("create table after_the_archivelog_backup (x int)");
    let fresh = c.switch_wal_and_wait_archived();
    setup.ok(&[
        "configure",
        "archivelog-deletion-policy",
        "backed-up 1 times",
    ]);
    let out = setup.ok(&["delete", "archivelog", "all", "--noprompt"]);
    assert!(out.contains("Deleted") && out.contains(&held), "{out}");
    let left: Vec<Value> = segments(&setup);
    assert!(
        left.len() == 1 && left[0]["name"] == fresh.as_str(),
        "{left:?}"
    );
    setup.ok(&["configure", "archivelog-deletion-policy", "none"]);

    // The catalog rebuilt from the repository knows the same backups.
    let before = setup.ok(&["list", "backup", "--json"]);
    for f in ["catalog.db", "catalog.db-wal", "catalog.db-shm"] {
        let _ = std::fs::remove_file(setup.repo.join(f));
    }
    setup.ok(&["catalog", "start-with"]);
    assert_eq!(before, setup.ok(&["list", "backup", "--json"]));

    // Restore picks the full backup; recovery reads every segment after it from backup sets.
    c.stop();
    let (_keep, to) = setup.restore(&[]);
    let r = Cluster::from_restored(to);
    r.wait_recovery_done(std::time::Duration::from_secs(180));
    assert_eq!(r.psql("select count(*) from t"), "2500");
    r.stop();
    c.start();

    // Retention: with a second full, redundancy 1 obsoletes the first full and the WAL
    // backups that only it needed, and keeps the newest ones.
    setup.backup(&["--tag", "second"]);
    let out = setup.ok(&["report", "obsolete", "--redundancy", "1", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let obsolete: Vec<String> = v["backups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            b["id"]
                .as_str()
                .unwrap_or(b.as_str().unwrap_or(""))
                .to_string()
        })
        .collect();
    let all = setup.backups();
    let first_full = all.iter().find(|b| b["tag"] == full_tag.as_str()).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(obsolete.contains(&first_full), "{out}");
    assert!(
        obsolete.contains(&all[0]["id"].as_str().unwrap().to_string()),
        "{out}"
    );
}

/// Waits until the primary's one standby has replayed to at least `lsn` (its feedback says so).
fn wait_replayed(primary: &Cluster, lsn: &str) {
    for _ in 0..600 {
        let ok = primary.psql(&format!(
            "select coalesce(bool_and(replay_lsn >= '{lsn}'), false) from pg_stat_replication"
        ));
        if ok.trim() == "t" {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the standby did not report replaying to {lsn}");
}

#[test]
fn applied_on_all_standby_keeps_what_a_paused_standby_has_not_replayed() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(x int)");
    let (_standby_dir, standby) = make_standby(c);
    let start = c.psql("select pg_current_wal_lsn()");
    wait_replayed(c, start.trim());
    standby.psql("select pg_wal_replay_pause()");
    let paused_at = c.psql("select replay_lsn from pg_stat_replication");

    // Two segments the standby receives but does not replay, then a backup: no backup
    // needs anything archived before it.
    let mut unreplayed = Vec::new();
    for _ in 0..2 {
        c.psql("insert into t select generate_series(1, 1000)");
        unreplayed.push(c.switch_wal_and_wait_archived());
    }
    setup.backup(&[]);
    setup.ok(&[
        "run",
        "CONFIGURE ARCHIVELOG DELETION POLICY TO APPLIED ON ALL STANDBY;",
    ]);
    let out = setup.ok(&["delete", "archivelog", "all", "--noprompt"]);
    assert!(out.contains("1 standby(s) connected"), "{out}");
    for seg in &unreplayed {
        assert!(
            out.lines().any(|l| l.contains(seg.as_str())
                && l.contains("kept: not yet replayed by every standby")),
            "{seg} (standby paused at {paused_at}):\n{out}"
        );
    }
    let left: Vec<String> = segments(&setup)
        .iter()
        .map(|w| w["name"].as_str().unwrap().to_string())
        .collect();
    for seg in &unreplayed {
        assert!(left.contains(seg), "{seg} was deleted: {left:?}");
    }
    assert!(
        out.contains("Deleted"),
        "what the standby replayed goes: {out}"
    );

    // Replayed now: the same command removes them.
    standby.psql("select pg_wal_replay_resume()");
    let now = c.psql("select pg_current_wal_lsn()");
    wait_replayed(c, now.trim());
    let out = setup.ok(&["delete", "archivelog", "all", "--noprompt"]);
    let left: Vec<String> = segments(&setup)
        .iter()
        .map(|w| w["name"].as_str().unwrap().to_string())
        .collect();
    for seg in &unreplayed {
        assert!(
            !left.contains(seg),
            "{seg} stays after the standby replayed it:\n{out}"
        );
    }
}
