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

/// A test of the tests: the restore comparison every acceptance test relies on notices a
/// restore that dropped one relation file (the mutant, applied to the restored directory).
#[test]
fn the_comparison_catches_a_restore_that_drops_a_file() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.psql("create table kept as select g from generate_series(1, 10000) g");
    c.psql("checkpoint");
    let file = c.psql("select pg_relation_filepath('kept')");
    setup.backup(&["--tag", "FULL"]);
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_keep, to) = setup.restore(&["--from-tag", "FULL"]);
    assert!(to.join(&file).is_file(), "{file} was not restored");
    std::fs::remove_file(to.join(&file)).unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drop(start_and_compare(&to, &expected));
    }));
    assert!(
        caught.is_err(),
        "a restore without {file} passed the comparison"
    );
}
