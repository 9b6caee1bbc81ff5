//! Proves the integration-test harness itself (tests/common) on real
//! PostgreSQL 15 clusters, without depending on what recman implements, so
//! that a failing recman test can be trusted to be recman's fault.

mod common;

use std::fs;
use std::process::Command;
use std::time::Duration;

use common::*;

#[test]
fn cluster_lifecycle_checksums_and_amcheck() {
    let c = Cluster::init_with(ClusterOpts::default());
    assert!(c.is_running());
    assert_eq!(
        c.conninfo(),
        format!(
            "host={} port={} user=postgres dbname=postgres",
            c.sockdir.display(),
            c.port
        )
    );
    assert_eq!(c.psql("show data_checksums"), "on");
    assert_eq!(c.psql("show archive_mode"), "off");
    assert_eq!(c.psql("show fsync"), "on");
    assert_eq!(c.psql("show wal_level"), "replica");

    c.pgbench_init(1);
    let first = c.table_checksums("postgres");
    assert!(!first.is_empty());
    assert!(
        first["public.pgbench_accounts"].starts_with("100000:"),
        "{first:?}"
    );
    assert_eq!(
        first["public.pgbench_branches"].split(':').next(),
        Some("1")
    );
    assert_eq!(first, c.table_checksums("postgres"), "checksums not stable");

    // A write must show up in the fingerprint, or it proves nothing.
    c.psql("update pgbench_accounts set abalance = abalance + 1 where aid = 1");
    let changed = c.table_checksums("postgres");
    assert_ne!(
        first["public.pgbench_accounts"],
        changed["public.pgbench_accounts"]
    );
    assert_eq!(
        first["public.pgbench_branches"],
        changed["public.pgbench_branches"]
    );

    c.amcheck("postgres");

    c.restart();
    assert_eq!(changed, c.table_checksums("postgres"));

    // Crash and recover: durability paths rely on this working.
    c.psql("insert into pgbench_history (tid, bid, aid, delta, mtime) values (1, 1, 1, 5, now())");
    let before_crash = c.table_checksums("postgres");
    c.stop_immediate();
    assert!(!c.is_running());
    c.start();
    assert_eq!(before_crash, c.table_checksums("postgres"));
    c.amcheck_all();

    assert!(
        matches!(c.try_psql("select * from no_such_table"), Err(e) if e.contains("no_such_table"))
    );
}

#[test]
fn tablespaces_and_multiple_databases() {
    let c = Cluster::init_with(ClusterOpts::default());
    let (_ts_tmp, ts_parent) = new_scratch_dir();
    let ts_dir = ts_parent.join("ts1");
    c.create_tablespace("ts1", &ts_dir);
    c.psql("create database other");
    c.psql_db(
        "other",
        "create schema s; \
         create table s.t (id int primary key, v text) tablespace ts1; \
         insert into s.t select g, repeat('x', g % 50) from generate_series(1, 1000) g; \
         create unlogged table s.u (id int); insert into s.u values (1);",
    );
    let sums = c.all_table_checksums();
    // postgres holds no relation of its own: only the large-object entry, empty.
    assert_eq!(
        sums["postgres"].keys().collect::<Vec<_>>(),
        ["pg_largeobject"],
        "{sums:?}"
    );
    assert_eq!(sums["postgres"]["pg_largeobject"], "0:-");
    assert!(sums.contains_key("template1"), "{sums:?}");
    let other = &sums["other"];
    assert!(other["s.t"].starts_with("1000:"), "{other:?}");
    assert!(!other.contains_key("s.u"), "unlogged tables are left out");
    assert!(
        fs::read_dir(&ts_dir).unwrap().next().is_some(),
        "tablespace dir stayed empty"
    );
    c.amcheck("other");
}

#[test]
fn pgbench_background_writes() {
    let c = Cluster::init_with(ClusterOpts::default());
    c.pgbench_init(1);
    let before = c.psql("select count(*) from pgbench_history");
    let mut bench = c.pgbench_background(2, 2);
    let status = bench.wait().unwrap();
    assert!(status.success(), "pgbench failed; see {}", c.dir.display());
    let after = c.psql("select count(*) from pgbench_history");
    assert!(
        after.parse::<u64>().unwrap() > before.parse::<u64>().unwrap(),
        "{before} -> {after}"
    );
}

#[test]
fn wal_archiving_wait_with_plain_cp() {
    // archive_command is overridden with cp so this works before recman does.
    let (_arch_tmp, arch) = new_scratch_dir();
    let c = Cluster::init_with(ClusterOpts {
        extra_conf: vec![
            "archive_mode = on".into(),
            format!(
                "archive_command = 'test ! -f {0}/%f && cp %p {0}/%f'",
                arch.display()
            ),
        ],
        ..Default::default()
    });
    c.psql("create table t as select generate_series(1, 10000) g");
    let seg = c.switch_wal_and_wait_archived();
    assert!(arch.join(&seg).is_file(), "{seg} not in {}", arch.display());
    // Again with nothing written in between: must not hang.
    c.switch_wal_and_wait_archived();
}

#[test]
fn adopted_data_dir_gets_its_own_port_and_socket() {
    let src = Cluster::init_with(ClusterOpts::default());
    src.pgbench_init(1);
    let (_scratch_tmp, scratch) = new_scratch_dir();
    let copy = scratch.join("restored");
    // pg_basebackup stands in for `recman restore` here.
    let mut cmd = Command::new(pg_bin("pg_basebackup"));
    cmd.arg("-D")
        .arg(&copy)
        .args(["-X", "stream", "-c", "fast", "-d", &src.conninfo()]);
    run_as_cluster_user_ok(&mut cmd);
    let restored = Cluster::from_restored(copy.clone());
    restored.wait_recovery_done(Duration::from_secs(120));
    assert_ne!(restored.port, src.port);
    assert_eq!(
        restored.psql("show port"),
        restored.port.to_string(),
        "port override on the pg_ctl command line did not win"
    );
    assert_eq!(
        src.table_checksums("postgres"),
        restored.table_checksums("postgres")
    );
    restored.amcheck("postgres");
    restored.stop();
    drop(restored);
    assert!(
        copy.join("PG_VERSION").is_file(),
        "adopted pgdata was removed"
    );
}

#[test]
fn recman_binary_is_executable_by_cluster_user() {
    let out = recman(["--help"]);
    assert!(out.status.success(), "{out:?}");
    assert!(recman_bin().is_absolute());
}
