//! Issue 6: channels connected to a streaming standby read its data directory while the
//! backup starts and stops on the primary (the seeds' RAC-instance channels). Proof that the
//! relation files came from the standby: a page damaged only in the primary's file fails a
//! backup of the primary, but not one read from the standby, whose restore equals the source.

mod common;
mod flows;

use flows::*;

#[test]
fn channels_connected_to_a_standby_read_its_files() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(2);
    c.psql("create table marker(x int); insert into marker select generate_series(1, 100)");
    c.psql("checkpoint");
    let (_keep, standby) = make_standby(c);
    assert_eq!(standby.psql("select pg_is_in_recovery()"), "t");

    // Damage the marker table's first page in the primary's file only. The page stays clean
    // in the primary's buffers, so queries (and the source checksums below) still see it whole.
    let rel = c.psql("select pg_relation_filepath('marker')");
    let file = c.pgdata.join(&rel);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[8000] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();

    let err = setup.err(&["backup", "database"]);
    assert!(err.contains(&rel) && err.contains("block 0"), "{err}");

    // Through the standby: nothing corrupt, and the restore equals the source.
    let out = setup.ok(&[
        "backup",
        "database",
        "--channels",
        "2",
        "--standby",
        &standby.conninfo(),
    ]);
    assert!(out.contains("status AVAILABLE"), "{out}");
    c.psql("insert into marker values (101)");
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_t, to) = setup.restore(&[]);
    let r = start_and_compare(&to, &expected);
    assert_eq!(r.psql("select count(*) from marker"), "101");
    r.stop();

    // The seeds' form: channels connected to the standby in a RUN block.
    let script = format!(
        "RUN {{ ALLOCATE CHANNEL c1 DEVICE TYPE DISK CONNECT '{cs}'; ALLOCATE CHANNEL c2 DEVICE TYPE DISK CONNECT '{cs}'; BACKUP DATABASE TAG 'FROM_STANDBY'; }}",
        cs = standby.conninfo()
    );
    setup.ok(&["run", &script]);
    assert!(
        setup.backups().iter().any(|b| b["tag"] == "FROM_STANDBY"
            && b["status"] == "AVAILABLE"
            && b["channels"] == 2)
    );

    // A primary given as a standby is refused, naming it.
    let err = setup.err(&["backup", "database", "--standby", &c.conninfo()]);
    assert!(
        err.contains("not a standby") || err.contains("not in recovery"),
        "{err}"
    );
    standby.stop();
}
