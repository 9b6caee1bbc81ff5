//! Issue 5, acceptance 4: deleting catalog.db and running `catalog start-with` yields the same
//! `list backup --json` as before; the rebuilt catalog restores.

mod common;
mod flows;

use common::*;
use flows::*;

#[test]
fn lost_catalog_is_rebuilt_from_the_repository() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table t(x int); insert into t select generate_series(1, 1000)");
    setup.backup(&["--compress", "lz4"]);
    c.psql("insert into t select generate_series(1, 1000)");
    setup.backup(&["--tag", "second"]);
    c.switch_wal_and_wait_archived();
    let before = setup.ok(&["list", "backup", "--json"]);
    let wal_before: serde_json::Value =
        serde_json::from_str(&setup.ok(&["list", "archivelog", "--json"])).unwrap();

    // Other commands refuse a missing catalog; only start-with recreates it.
    c.stop();
    for f in ["catalog.db", "catalog.db-wal", "catalog.db-shm"] {
        let _ = std::fs::remove_file(setup.repo.join(f));
    }
    let err = setup.err(&["list", "backup"]);
    assert!(err.contains("catalog") && err.contains("hint"), "{err}");
    let out = setup.ok(&["catalog", "start-with"]);
    assert!(out.contains("cataloged 2 backup(s)"), "{out}");
    let after = setup.ok(&["list", "backup", "--json"]);
    assert_eq!(
        before, after,
        "list backup --json differs after the rebuild"
    );
    let wal_after: serde_json::Value =
        serde_json::from_str(&setup.ok(&["list", "archivelog", "--json"])).unwrap();
    let names = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|w| w["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&wal_before), names(&wal_after));

    // Running it again finds everything known; a damaged catalog is moved aside.
    let out = setup.ok(&["catalog", "start-with"]);
    assert!(out.contains("cataloged 0 backup(s)"), "{out}");
    std::fs::write(
        setup.repo.join("catalog.db"),
        b"this is not sqlite, not at all....",
    )
    .unwrap();
    for f in ["catalog.db-wal", "catalog.db-shm"] {
        let _ = std::fs::remove_file(setup.repo.join(f));
    }
    setup.ok(&["catalog", "start-with"]);
    assert_eq!(before, setup.ok(&["list", "backup", "--json"]));

    // The rebuilt catalog is enough to restore the newest backup.
    let expected_rows = "2000";
    c.start();
    let (_keep, to) = setup.restore(&[]);
    let r = Cluster::from_restored(to);
    r.wait_recovery_done(std::time::Duration::from_secs(180));
    assert_eq!(r.psql("select count(*) from t"), expected_rows);
}
