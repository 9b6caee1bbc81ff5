//! Issue 7 acceptance: level 0 + differentials and level 0 + cumulative restore equal to the
//! source, with and without PITR; files copied whole, moved, truncated or dropped between
//! backups are never missed; a level 1 holds the changed pages and little else.

mod common;
mod flows;

use common::*;
use flows::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

fn bench(c: &Cluster, secs: u32) {
    let mut b = c.pgbench_background(secs, 2);
    assert!(b.wait().unwrap().success());
}

fn restore_compare(
    setup: &Setup,
    args: &[&str],
    expected: &BTreeMap<String, BTreeMap<String, String>>,
) {
    let (_k, to) = setup.restore(args);
    drop(start_and_compare(&to, expected));
}

#[test]
fn chains_of_differentials_and_a_cumulative_restore_equal() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(2);
    setup.backup(&["--incremental-level", "0", "--tag", "L0"]);
    bench(c, 3);
    setup.backup(&["--incremental-level", "1", "--tag", "D1"]);
    bench(c, 3);
    setup.backup(&[
        "--incremental-level",
        "1",
        "--tag",
        "D2",
        "--compress",
        "lz4",
    ]);
    c.switch_wal_and_wait_archived();
    let at_d2 = c.all_table_checksums();
    std::thread::sleep(Duration::from_millis(1100));
    let after_d2 = c.psql("select clock_timestamp()::text");
    std::thread::sleep(Duration::from_millis(1100));
    bench(c, 3);
    setup.backup(&["--incremental-level", "1", "--tag", "D3", "--channels", "2"]);
    bench(c, 2);
    setup.backup(&["--incremental-level", "1", "--cumulative", "--tag", "C1"]);
    c.switch_wal_and_wait_archived();
    let end = c.all_table_checksums();

    let list = setup.backups();
    let size = |tag: &str| {
        list.iter().find(|b| b["tag"] == tag).unwrap()["written_bytes"]
            .as_u64()
            .unwrap()
    };
    let typ = |tag: &str| {
        list.iter().find(|b| b["tag"] == tag).unwrap()["type"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(typ("L0"), "LEVEL0");
    let field = |tag: &str, k: &str| list.iter().find(|b| b["tag"] == tag).unwrap()[k].clone();
    assert_eq!(field("D1", "parent"), field("L0", "id"));
    assert_eq!(
        field("D2", "parent"),
        field("D1", "id"),
        "a differential builds on the last level 0 or 1"
    );
    assert_eq!(
        field("C1", "parent"),
        field("L0", "id"),
        "a cumulative builds on the last level 0"
    );
    assert_eq!(typ("D3"), "LEVEL1");
    // Random pgbench updates touch most pages of a small table; the exact size check is
    // a_level_one_holds_the_changed_pages.
    assert!(
        size("D1") < size("L0"),
        "a level 1 is not smaller than its level 0"
    );
    for tag in ["D1", "D2", "D3", "C1"] {
        setup.ok(&["validate", "backup", tag]);
    }
    // Level 0 + 3 differentials, and level 0 + cumulative, to the end of the WAL.
    restore_compare(&setup, &["--from-tag", "D3"], &end);
    restore_compare(&setup, &["--from-tag", "C1", "--channels", "2"], &end);
    // Point in time: between D2 and the next change, through the chain L0 + D1 + D2.
    restore_compare(&setup, &["--until-time", &after_d2], &at_d2);
}

#[test]
fn level_one_without_a_level_zero_becomes_level_zero() {
    let setup = Setup::new();
    setup.backup(&[]);
    let out = recman(setup.args(&[
        "backup",
        "database",
        "--incremental-level",
        "1",
        "--tag",
        "FIRST",
    ]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("taking a level 0 instead"), "{err}");
    assert_eq!(setup.backups().last().unwrap()["type"], "LEVEL0");
}

#[test]
fn file_copies_moves_truncates_and_drops_are_never_missed() {
    let setup = Setup::new();
    let c = &setup.cluster;
    let (_ts_tmp, ts_root) = new_scratch_dir();
    c.create_tablespace("ts1", &ts_root.join("ts1"));
    c.psql("create table moved as select g, md5(g::text) from generate_series(1, 20000) g");
    c.psql("create table truncated as select g from generate_series(1, 20000) g");
    c.psql("create table dropped as select g from generate_series(1, 20000) g");
    c.psql("create table template_data as select g, md5(g::text) from generate_series(1, 20000) g");
    c.psql("checkpoint");
    setup.backup(&["--incremental-level", "0"]);
    // Pages copied by these keep their old LSNs; only their new file names reveal them.
    // STRATEGY came in 15; before it every CREATE DATABASE copied files.
    let strategy = if server_major() >= 15 {
        " strategy file_copy"
    } else {
        ""
    };
    c.psql(&format!(
        "create database copied{strategy} template postgres"
    ));
    c.psql("alter table moved set tablespace ts1");
    c.psql("truncate truncated");
    c.psql("insert into truncated values (42)");
    c.psql("drop table dropped");
    setup.backup(&["--incremental-level", "1", "--tag", "AFTER"]);
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    assert!(expected.contains_key("copied"), "{expected:?}");
    // Restore, and check the data PostgreSQL sees before any WAL replay could repair it:
    // recovery ends right at the level 1's consistency point.
    let stop_lsn = setup.backups().last().unwrap()["stop_lsn"]
        .as_str()
        .unwrap()
        .to_string();
    // The tablespace is in use by the source: restore it elsewhere.
    let (_m, moved_to) = new_scratch_dir();
    let map = format!("ts1={}", moved_to.join("ts1").display());
    let (_k, to) = setup.restore(&[
        "--from-tag",
        "AFTER",
        "--until-lsn",
        &stop_lsn,
        "--tablespace-map",
        &map,
    ]);
    let r = Cluster::from_restored(to.clone());
    r.wait_recovery_done(Duration::from_secs(120));
    r.amcheck_all();
    assert_eq!(
        r.psql_db(
            "copied",
            "select count(*), md5(string_agg(md5, '' order by g)) from template_data"
        ),
        c.psql_db(
            "copied",
            "select count(*), md5(string_agg(md5, '' order by g)) from template_data"
        )
    );
    assert_eq!(r.psql("select count(*) from moved"), "20000");
    assert!(
        r.psql("select pg_relation_filepath('moved')")
            .starts_with("pg_tblspc/")
    );
    assert_eq!(
        r.psql("select string_agg(g::text, ',') from truncated"),
        "42"
    );
    assert_eq!(
        r.psql("select count(*) from pg_class where relname = 'dropped'"),
        "0"
    );
    drop(r);
    let (_m2, moved_again) = new_scratch_dir();
    let map = format!("ts1={}", moved_again.join("ts1").display());
    restore_compare(
        &setup,
        &["--from-tag", "AFTER", "--tablespace-map", &map],
        &expected,
    );
}

/// Relation pages of `new` that differ from `old` (or are new), and the bytes of non-relation
/// files: what a level 1 must carry.
fn changed_bytes(old: &Path, new: &Path) -> (u64, u64) {
    let (mut pages, mut other) = (0u64, 0u64);
    for rel in walk(new, new) {
        let n = std::fs::read(new.join(&rel)).unwrap_or_default();
        let is_rel = rel.starts_with("base/")
            && rel
                .rsplit('/')
                .next()
                .unwrap()
                .chars()
                .next()
                .unwrap()
                .is_ascii_digit();
        if !is_rel {
            other += n.len() as u64;
            continue;
        }
        let o = std::fs::read(old.join(&rel)).unwrap_or_default();
        for (i, p) in n.chunks(8192).enumerate() {
            if o.get(i * 8192..(i + 1) * 8192) != Some(p) {
                pages += 1;
            }
        }
    }
    (pages * 8192, other)
}

fn walk(root: &Path, dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let rel = p.strip_prefix(root).unwrap().display().to_string();
        if rel.starts_with("pg_wal")
            || rel.contains("pg_internal.init")
            || rel == "postmaster.pid"
            || rel.starts_with("pg_stat_tmp")
        {
            continue;
        }
        if p.is_dir() {
            out.extend(walk(root, &p))
        } else {
            out.push(rel)
        }
    }
    out
}

#[test]
fn a_level_one_holds_the_changed_pages() {
    let setup = Setup::with(ClusterOpts {
        extra_conf: vec!["autovacuum = off".into()],
        ..Default::default()
    });
    let c = &setup.cluster;
    c.pgbench_init(3);
    c.psql("checkpoint");
    setup.backup(&["--incremental-level", "0", "--tag", "BASE"]);
    let (_t, base_copy) = setup.restore(&["--from-tag", "BASE"]);
    // Change about a tenth of pgbench_accounts.
    c.psql("update pgbench_accounts set filler = md5(aid::text) where aid <= 30000");
    c.psql("checkpoint");
    setup.backup(&["--incremental-level", "1", "--tag", "TENTH"]);
    let (pages, other) = changed_bytes(&base_copy, &c.pgdata);
    let written = setup.backups().last().unwrap()["written_bytes"]
        .as_u64()
        .unwrap();
    let expected = pages + other;
    eprintln!(
        "changed pages {} KiB, other files {} KiB, level 1 wrote {} KiB",
        pages >> 10,
        other >> 10,
        written >> 10
    );
    assert!(
        pages > 1 << 20,
        "the update changed only {pages} bytes of pages"
    );
    let diff = (written as f64 - expected as f64).abs() / expected as f64;
    assert!(
        diff <= 0.10,
        "level 1 wrote {written} bytes; changed pages + other files = {expected} ({:.1}% off)",
        diff * 100.0
    );
}

#[test]
fn a_synthetic_full_restores_like_its_chain_and_is_a_parent() {
    let setup = Setup::new();
    let c = &setup.cluster;
    c.pgbench_init(2);
    setup.backup(&["--incremental-level", "0"]);
    bench(c, 2);
    setup.backup(&["--incremental-level", "1"]);
    bench(c, 2);
    setup.backup(&["--incremental-level", "1", "--tag", "TIP"]);
    setup.ok(&[
        "backup",
        "synthetic-full",
        "--from",
        "TIP",
        "--tag",
        "SYNTH",
    ]);
    let list = setup.backups();
    let synth = list.iter().find(|b| b["tag"] == "SYNTH").unwrap();
    let tip = list.iter().find(|b| b["tag"] == "TIP").unwrap();
    assert_eq!(synth["type"], "LEVEL0");
    assert_eq!(
        synth["stop_lsn"], tip["stop_lsn"],
        "a synthetic full stands for its chain's newest point"
    );
    setup.ok(&["validate", "backup", "SYNTH"]);
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    // The synthetic full alone and the chain it came from give the same data.
    let (_a, from_synth) = setup.restore(&["--from-tag", "SYNTH"]);
    let (_b, from_chain) = setup.restore(&["--from-tag", "TIP"]);
    let (s_files, c_files) = (
        walk(&from_synth, &from_synth),
        walk(&from_chain, &from_chain),
    );
    assert_eq!(s_files, c_files);
    for f in s_files
        .iter()
        .filter(|f| !f.ends_with("postgresql.auto.conf"))
    {
        assert!(
            std::fs::read(from_synth.join(f)).unwrap()
                == std::fs::read(from_chain.join(f)).unwrap(),
            "{f} differs"
        );
    }
    drop(start_and_compare(&from_synth, &expected));
    // A level 1 after it takes the synthetic full as its parent.
    bench(c, 2);
    let after = setup.backup(&["--incremental-level", "1", "--tag", "AFTER_SYNTH"]);
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            setup
                .repo
                .join("main/backup")
                .join(&after)
                .join("manifest.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        manifest["parent"], synth["id"],
        "the level 1 after a synthetic full must build on it"
    );
    c.switch_wal_and_wait_archived();
    let end = c.all_table_checksums();
    restore_compare(&setup, &["--from-tag", "AFTER_SYNTH"], &end);
}
