//! Issue 7 acceptance 4: the seeds' rolling image copy. Each simulated day runs RMAN's script
//! (RECOVER COPY ... UNTIL TIME 'SYSDATE - 1'; BACKUP INCREMENTAL LEVEL 1 FOR RECOVER OF COPY),
//! then a workload; after five days the copy restores to a day ago and to now.

mod common;
mod flows;

use flows::*;
use std::time::Duration;

#[test]
fn rolling_copy_over_five_simulated_days() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(1);
    let mut days: Vec<(String, _)> = Vec::new();
    for day in 0..5 {
        let mut recover = vec!["recover", "copy", "--tag", "ROLL"];
        if let Some((ago, _)) = days.last() {
            recover.extend(["--until-time", ago.as_str()]);
        }
        setup.ok(&recover);
        setup.ok(&[
            "backup",
            "database",
            "--incremental-level",
            "1",
            "--for-recover-of-copy",
            "--tag",
            "ROLL",
        ]);
        let mut b = c.pgbench_background(2, 2);
        assert!(b.wait().unwrap().success());
        c.psql(&format!("create table day_{day} as select {day} as d"));
        c.switch_wal_and_wait_archived();
        let sums = c.all_table_checksums();
        std::thread::sleep(Duration::from_millis(1100));
        days.push((c.psql("select clock_timestamp()::text"), sums));
        std::thread::sleep(Duration::from_millis(1100));
    }
    let list = setup.backups();
    assert_eq!(
        list.iter().filter(|b| b["type"] == "LEVEL1").count(),
        4,
        "day 1 makes the copy, days 2-5 take level 1s"
    );
    // The copy lags a day: restore to a day ago, copying its files.
    let (ago, ago_sums) = &days[3];
    let (_a, to) = setup.restore(&["--from-copy", "ROLL", "--until-time", ago]);
    drop(start_and_compare(&to, ago_sums));
    // And to now, with WAL, switching to the copy (no file is copied).
    let (_b, to) = setup.restore(&["--from-copy", "ROLL", "--switch-to-copy"]);
    drop(start_and_compare(&to, &days[4].1));
    assert!(
        !setup.repo.join("main/copy/ROLL").exists(),
        "a switched-to copy is used up"
    );
}

#[test]
fn the_seeds_rolling_copy_script_runs_as_written() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(1);
    // As the warehouse of the seeds ran it every night.
    let script = "RUN {\n  RECOVER COPY OF DATABASE WITH TAG 'incr_update' UNTIL TIME 'SYSDATE-1';\n  BACKUP INCREMENTAL LEVEL 1 FOR RECOVER OF COPY WITH TAG 'incr_update' DATABASE;\n}\n";
    for _night in 0..3 {
        setup.ok(&["run", script]);
        let mut b = c.pgbench_background(1, 1);
        assert!(b.wait().unwrap().success());
    }
    let list = setup.backups();
    assert_eq!(
        list.iter().filter(|b| b["tag"] == "INCR_UPDATE").count(),
        3,
        "{list:?}"
    );
    assert!(setup.repo.join("main/copy/INCR_UPDATE/copy.json").exists());
    // A day has not passed: no level 1 is old enough to apply yet. Without UNTIL the newest
    // applies, and alone brings the copy up to date: both level 1s were taken against the copy
    // as it was (it was never rolled forward), so the newer holds every change.
    let newest = list
        .iter()
        .rev()
        .find(|b| b["tag"] == "INCR_UPDATE")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = setup.ok(&["run", "RECOVER COPY OF DATABASE WITH TAG 'incr_update';"]);
    assert!(
        out.contains("rolled forward with 1 level 1") && out.contains(&newest),
        "{out}"
    );
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_t, to) = setup.restore(&["--from-copy", "INCR_UPDATE"]);
    drop(start_and_compare(&to, &expected));
}
