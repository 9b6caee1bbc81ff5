//! Acceptance 2: point-in-time recovery to a time, an LSN and an xid between two markers
//! yields exactly the markers committed before the target.

mod common;
mod flows;

use common::*;
use flows::*;
use std::time::Duration;

fn restored_markers(setup: &Setup, target: &[&str]) -> String {
    let (_keep, to) = setup.restore(target);
    let c = Cluster::from_restored(to.clone());
    c.wait_recovery_done(Duration::from_secs(180));
    c.amcheck_all();
    c.psql("select string_agg(id::text, ',' order by id) from markers")
}

#[test]
fn recovery_to_time_lsn_and_xid() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table markers(id int primary key, at timestamptz default clock_timestamp())");
    c.psql("create table filler(x int)");
    setup.backup(&["--compress", "lz4"]);
    // Each step in its own transaction, with pauses so that times are distinct.
    c.psql("insert into markers(id) values (1)");
    std::thread::sleep(Duration::from_millis(1200));
    let time_1_2 = c.psql("select clock_timestamp()::text");
    let xid_1_2 = c.psql("insert into filler values (1) returning pg_current_xact_id()::text");
    std::thread::sleep(Duration::from_millis(1200));
    c.psql("insert into markers(id) values (2)");
    let lsn_2_3 = c.psql("select pg_current_wal_insert_lsn()::text");
    c.psql("insert into filler values (2)");
    std::thread::sleep(Duration::from_millis(1200));
    c.psql("insert into markers(id) values (3)");
    c.switch_wal_and_wait_archived();
    assert_eq!(
        c.psql("select string_agg(id::text, ',' order by id) from markers"),
        "1,2,3"
    );

    assert_eq!(restored_markers(&setup, &["--until-time", &time_1_2]), "1");
    assert_eq!(restored_markers(&setup, &["--until-lsn", &lsn_2_3]), "1,2");
    assert_eq!(restored_markers(&setup, &["--until-xid", &xid_1_2]), "1");
    assert_eq!(restored_markers(&setup, &[]), "1,2,3");

    // A target before every backup is refused before anything is written.
    let (_t, dir) = new_scratch_dir();
    let to = dir.join("too-early");
    let err = recman_err(setup.args(&[
        "restore",
        "database",
        "--to",
        path_str(&to),
        "--until-time",
        "2001-01-01 00:00:00+00",
    ]));
    assert!(
        err.contains("no backup is consistent before") && err.contains("hint"),
        "{err}"
    );
    assert!(!to.exists());
}
