//! Acceptance 1 and 3: online full backups while pgbench writes, across channels,
//! FILESPERSET, MAXOPENFILES and compression; restore and recover; data equal; tablespaces.

mod common;
mod flows;

use common::*;
use flows::*;

#[test]
fn matrix_of_channels_filesperset_maxopenfiles_and_compression() {
    let setup = Setup::new();
    setup.cluster.pgbench_init(3);
    let configs: [(&[&str], &[&str]); 4] = [
        (
            &[
                "--channels",
                "1",
                "--filesperset",
                "64",
                "--maxopenfiles",
                "8",
                "--compress",
                "none",
            ],
            &[],
        ),
        (
            &[
                "--channels",
                "3",
                "--filesperset",
                "4",
                "--maxopenfiles",
                "1",
                "--compress",
                "lz4",
            ],
            &["--channels", "3"],
        ),
        (
            &[
                "--channels",
                "3",
                "--filesperset",
                "1",
                "--maxopenfiles",
                "8",
                "--compress",
                "zstd",
            ],
            &["--channels", "2"],
        ),
        (
            &[
                "--channels",
                "1",
                "--filesperset",
                "4",
                "--maxopenfiles",
                "1",
                "--compress",
                "zstd:1",
            ],
            &[],
        ),
    ];
    for (b, r) in configs {
        backup_while_writing_then_restore(&setup, b, r);
    }
    let list = setup.backups();
    assert_eq!(list.len(), 4);
    assert_eq!(list[1]["channels"], 3);
    assert_eq!(list[2]["compression"], "zstd:3");
    // Compression does something on pgbench data.
    let none = list[0]["written_bytes"].as_u64().unwrap();
    let lz4 = list[1]["written_bytes"].as_u64().unwrap();
    assert!(lz4 * 2 < none, "lz4 wrote {lz4} bytes, uncompressed {none}");
}

#[test]
fn tablespace_outside_the_data_directory_restored_in_place_and_elsewhere() {
    let setup = Setup::new();
    let c = &setup.cluster;
    let (_ts_tmp, ts_root) = new_scratch_dir();
    let ts = ts_root.join("ts1");
    c.create_tablespace("ts1", &ts);
    c.psql("create table in_ts tablespace ts1 as select g as id, md5(g::text) as v from generate_series(1, 20000) g");
    c.psql("create index in_ts_idx on in_ts(id) tablespace ts1");
    setup.backup(&["--channels", "2"]);
    c.psql("insert into in_ts select g, 'after' from generate_series(20001, 20100) g");
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();

    // To a new location while the original is still in use.
    let (_new_tmp, new_root) = new_scratch_dir();
    let new_ts = new_root.join("ts1-restored");
    let (_keep, to) = setup.restore(&[
        "--tablespace-map",
        &format!("{}={}", ts.display(), new_ts.display()),
    ]);
    let link = std::fs::read_link(
        to.join("pg_tblspc")
            .read_dir()
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path(),
    )
    .unwrap();
    assert_eq!(link, new_ts);
    let r = start_and_compare(&to, &expected);
    assert_eq!(r.psql("select count(*) from in_ts"), "20100");
    assert!(
        r.psql("select pg_tablespace_location(oid) from pg_tablespace where spcname = 'ts1'")
            .contains("ts1-restored")
    );
    drop(r);

    // In place: refused while the location holds files, then done after it is cleared.
    let (_t2, d2) = new_scratch_dir();
    let err = recman_err(setup.args(&["restore", "database", "--to", path_str(&d2.join("again"))]));
    assert!(
        err.contains("tablespace location") && err.contains("not empty"),
        "{err}"
    );
    assert!(
        !d2.join("again").exists(),
        "a refused restore created its directory"
    );
    c.stop();
    std::fs::remove_dir_all(&ts).unwrap();
    let (_keep2, to2) = setup.restore(&[]);
    let r2 = start_and_compare(&to2, &expected);
    drop(r2);
}

/// The comparison every restore test ends with (`compare_contents`) catches each kind of
/// loss by itself, and says which: one relation file, one sequence value, one large object,
/// a materialized view's contents, a row of another database. Each is made in the restored
/// cluster, checked, and put back before the next.
#[test]
fn the_comparison_catches_each_kind_of_loss_and_names_it() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table kept as select g from generate_series(1, 10000) g");
    c.psql("create sequence s; select nextval('s') from generate_series(1, 5)");
    c.psql("select lo_from_bytea(4242, 'large object contents')");
    c.psql("create materialized view mv as select g from generate_series(1, 100) g");
    c.psql("create database other");
    c.psql_db(
        "other",
        "create table t as select g from generate_series(1, 10) g",
    );
    c.psql("checkpoint");
    let file = c.psql("select pg_relation_filepath('kept')");
    setup.backup(&["--tag", "FULL"]);
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    for (db, rel) in [
        ("postgres", "public.kept"),
        ("postgres", "public.s"),
        ("postgres", "public.mv"),
        ("postgres", "pg_largeobject"),
        ("other", "public.t"),
    ] {
        assert!(
            expected[db].contains_key(rel),
            "{rel} of {db} is not compared"
        );
    }
    let (_keep, to) = setup.restore(&["--from-tag", "FULL"]);
    let r = Cluster::from_restored(to.clone());
    r.wait_recovery_done(std::time::Duration::from_secs(180));
    compare_contents(&r, &expected);

    let fired = |what: &str| -> String {
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            compare_contents(&r, &expected)
        }));
        let payload = caught.expect_err(&format!("a restore with {what} passed the comparison"));
        payload
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| format!("{payload:?}"))
    };
    // The value the source logged (what the fingerprint holds), set back with nothing logged
    // ahead, gives the same fingerprint; one less must not.
    let seq = r.psql("select last_value + log_cnt from s");
    r.psql(&format!("select setval('s', {seq} - 1)"));
    let msg = fired("a sequence one value behind");
    assert!(
        msg.contains("relation public.s of database postgres"),
        "{msg}"
    );
    r.psql(&format!("select setval('s', {seq})"));

    r.psql("select lo_put(4242, 0, 'L')");
    let msg = fired("a large object changed");
    assert!(
        msg.contains("relation pg_largeobject of database postgres"),
        "{msg}"
    );
    r.psql("select lo_put(4242, 0, 'l')");

    r.psql("refresh materialized view mv with no data");
    let msg = fired("a materialized view emptied");
    assert!(
        msg.contains("relation public.mv of database postgres is missing"),
        "{msg}"
    );
    r.psql("refresh materialized view mv");

    r.psql_db("other", "delete from t where g = 7");
    let msg = fired("a row of another database lost");
    assert!(msg.contains("relation public.t of database other"), "{msg}");
    r.psql_db("other", "insert into t values (7)");
    compare_contents(&r, &expected);

    r.stop();
    std::fs::remove_file(to.join(&file)).unwrap();
    r.start();
    let msg = fired("a relation file missing");
    assert!(
        msg.contains("relation public.kept of database postgres cannot be read"),
        "{msg}"
    );
}
