//! Issue 7: backup optimization. With `configure backup-optimization on`, a full backup
//! leaves out the files identical to the last full backup's (a database nobody touched), names
//! that backup as its parent, restores equal to the source, and keeps the parent from
//! retention; `--force` writes everything.

mod common;
mod flows;

use flows::*;

#[test]
fn unchanged_files_are_not_written_again() {
    let setup = Setup::new();
    let c = &setup.cluster;
    // A frozen database (no writes after the first backup) beside a busy one.
    c.psql("create database frozen");
    c.psql_db(
        "frozen",
        "create table cold as select g, md5(g::text) from generate_series(1, 50000) g",
    );
    c.psql("create table hot(x int); insert into hot values (1)");
    c.psql("checkpoint");
    // Modification times have one-second resolution: let them fall before the backup.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let full = setup.backup(&[]);
    let first = setup.backups()[0]["written_bytes"].as_u64().unwrap();

    setup.ok(&["configure", "backup-optimization", "on"]);
    c.psql("insert into hot select generate_series(2, 1000)");
    c.psql("checkpoint");
    let out = setup.ok(&["backup", "database", "--tag", "OPT"]);
    assert!(out.contains("status AVAILABLE"), "{out}");
    let b = setup.backups();
    let opt = b.iter().find(|b| b["tag"] == "OPT").unwrap();
    assert_eq!(opt["parent"], full.as_str(), "{opt}");
    let written = opt["written_bytes"].as_u64().unwrap();
    assert!(
        written * 2 < first,
        "the optimized full wrote {written} bytes, the first full {first}"
    );
    eprintln!("optimized full wrote {written} bytes, the first full {first}");
    // It still describes the whole database: the left-out files count as backed up.
    let (db0, db1) = (
        b[0]["database_bytes"].as_u64().unwrap(),
        opt["database_bytes"].as_u64().unwrap(),
    );
    assert!(db1 >= db0, "database bytes {db1} < {db0}");

    // Retention keeps the parent the optimized backup needs, even at redundancy 1.
    let rep: serde_json::Value =
        serde_json::from_str(&setup.ok(&["report", "obsolete", "--redundancy", "1", "--json"]))
            .unwrap();
    assert!(
        !rep["backups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b == full.as_str())
            && rep["kept_backups"]
                .as_array()
                .unwrap()
                .iter()
                .any(|b| b == full.as_str()),
        "the parent must be kept: {rep}"
    );

    // Restore takes the unchanged files from the parent.
    c.psql("insert into hot values (1001)");
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_t, to) = setup.restore(&["--from-tag", "OPT"]);
    let r = start_and_compare(&to, &expected);
    assert_eq!(r.psql_db("frozen", "select count(*) from cold"), "50000");
    r.stop();

    // FORCE writes every file again, with no parent.
    setup.ok(&["backup", "database", "--force", "--tag", "FORCED"]);
    let forced = setup
        .backups()
        .into_iter()
        .find(|b| b["tag"] == "FORCED")
        .unwrap();
    assert!(forced["parent"].is_null(), "{forced}");
    assert!(forced["written_bytes"].as_u64().unwrap() * 2 > first);
}
