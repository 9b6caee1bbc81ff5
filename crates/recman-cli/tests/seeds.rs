//! Issue 23: the seeds' scripts run as written (paths and names adapted), and a restore from
//! what they wrote gives equal data. Seeds 000, 001 and 003 run in tests/script.rs.

mod common;
mod flows;

use flows::*;

fn golden(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../recman-lang/tests/golden/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Seed 004's daily script, night after night: the image copy rolled forward, a level 1 for
/// it, the archived WAL put into backup sets and removed from the archive (DELETE ALL
/// INPUT), retention. Recovery then reads the WAL from those sets.
#[test]
fn seed_004_daily_script_runs_as_written_and_restores() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(1);
    let daily = golden("seed004_daily.rcv");
    for night in 0..2 {
        c.psql(&format!(
            "create table night_{night} as select {night} as n"
        ));
        c.switch_wal_and_wait_archived();
        let out = setup.ok(&["run", &daily]);
        assert!(out.contains("archivelog backup"), "{out}");
        assert!(out.contains("deleted archived log (input)"), "{out}");
    }
    let list = setup.backups();
    assert_eq!(
        list.iter().filter(|b| b["type"] == "ARCHIVELOG").count(),
        2,
        "{list:?}"
    );
    // DELETE ALL INPUT: what the sets hold left the archive.
    let left: Vec<_> = setup
        .archivelogs()
        .into_iter()
        .filter(|w| w["kind"] == "segment" && w["backed_up"] == 0)
        .collect();
    assert!(left.is_empty(), "{left:?}");
    c.psql("create table after_night as select 1 as n");
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_keep, to) = setup.restore(&[]);
    drop(start_and_compare(&to, &expected));
}

/// `PLUS ARCHIVELOG` in the language does what `--plus-archivelog` does: archived WAL in
/// sets before and after the database.
#[test]
fn plus_archivelog_writes_archivelog_sets_around_the_database() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(x int); insert into t select generate_series(1, 1000)");
    c.switch_wal_and_wait_archived();
    let out = setup.ok(&["run", "BACKUP DATABASE PLUS ARCHIVELOG;"]);
    assert_eq!(out.matches("archivelog backup").count(), 2, "{out}");
    let types: Vec<String> = setup
        .backups()
        .iter()
        .map(|b| b["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(types[..3], ["ARCHIVELOG", "FULL", "ARCHIVELOG"]);
    // NOT BACKED UP 1 TIMES: nothing is backed up twice.
    c.psql("insert into t select generate_series(1, 10)");
    c.switch_wal_and_wait_archived();
    setup.ok(&[
        "run",
        "BACKUP ARCHIVELOG ALL NOT BACKED UP 1 TIMES TAG 'wal1';",
    ]);
    let out = setup.ok(&["run", "BACKUP ARCHIVELOG ALL NOT BACKED UP 1 TIMES;"]);
    assert!(out.contains("no archived logs to back up"), "{out}");
}
