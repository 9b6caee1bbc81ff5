//! Issue 17 acceptance: block change tracking. archive-push keeps a summary of the blocks each
//! WAL segment touches; a level 1 reads only those blocks. It must restore the same relation
//! files as a scan-based level 1 of the same parent (byte for byte) and data equal to the
//! source, read little after a small change, and fall back to a scan, saying so, when a
//! summary is missing. The WAL decoder itself is checked against pg_waldump.

mod common;
mod flows;

use common::*;
use flows::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn conf() -> ClusterOpts {
    // Nothing may change pages between the tracked and the scan-based level 1 but the test.
    ClusterOpts {
        extra_conf: vec!["autovacuum = off".into()],
        ..Default::default()
    }
}

/// `args` for cluster `c` (the source, or a promoted copy of it) and the setup's repository.
fn args_for(setup: &Setup, c: &Cluster, args: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "--repo".into(),
        path_str(&setup.repo).into(),
        "--pgdata".into(),
        path_str(&c.pgdata).into(),
        "--target".into(),
        c.conninfo(),
    ];
    v.extend(args.iter().map(|s| s.to_string()));
    v
}

/// Backs up cluster `c` with extra environment; returns (stderr, its `list backup --json` row).
fn backup_of(
    setup: &Setup,
    c: &Cluster,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (String, serde_json::Value) {
    let mut a = vec!["backup", "database"];
    a.extend_from_slice(extra);
    let out = recman_env(args_for(setup, c, &a), env);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "backup {extra:?} failed:\n{err}");
    (err, setup.backups().last().unwrap().clone())
}

fn backup_env(setup: &Setup, extra: &[&str], env: &[(&str, &str)]) -> (String, serde_json::Value) {
    backup_of(setup, &setup.cluster, extra, env)
}

fn is_relation_file(name: &str) -> bool {
    let base = name.split('.').next().unwrap_or("");
    let num = base.split('_').next().unwrap_or("");
    !num.is_empty()
        && num.bytes().all(|b| b.is_ascii_digit())
        && name
            .split('.')
            .nth(1)
            .is_none_or(|s| s.bytes().all(|b| b.is_ascii_digit()))
}

/// Relation files under `roots` (relative path → where it is), leaving out unlogged
/// relations, which restore resets from their init fork.
fn relation_files(roots: &[PathBuf]) -> BTreeMap<String, PathBuf> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            if p.is_symlink() {
                continue;
            }
            if p.is_dir() {
                walk(root, &p, out);
            } else if is_relation_file(p.file_name().unwrap().to_str().unwrap()) {
                out.insert(rel, p);
            }
        }
    }
    let mut out = BTreeMap::new();
    for (i, r) in roots.iter().enumerate() {
        let mut m = BTreeMap::new();
        walk(r, r, &mut m);
        out.extend(m.into_iter().map(|(k, v)| (format!("{i}:{k}"), v)));
    }
    let unlogged: BTreeSet<String> = out
        .keys()
        .filter_map(|k| k.strip_suffix("_init").map(str::to_string))
        .collect();
    out.retain(|k, _| {
        let stem = k.split('.').next().unwrap();
        let stem = stem.split('_').next().unwrap();
        !unlogged.contains(stem)
    });
    out
}

/// The 8 KiB pages that differ between two files, read a MiB at a time (a relation file may
/// be a whole 1 GiB segment).
fn differing_pages(x: &Path, y: &Path) -> Vec<u64> {
    use std::io::Read;
    let (mut f, mut g) = (
        std::fs::File::open(x).unwrap(),
        std::fs::File::open(y).unwrap(),
    );
    let (mut a, mut b) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    let fill = |file: &mut std::fs::File, buf: &mut [u8]| {
        let mut n = 0;
        while n < buf.len() {
            match file.read(&mut buf[n..]).unwrap() {
                0 => break,
                k => n += k,
            }
        }
        n
    };
    let (mut pages, mut at) = (Vec::new(), 0u64);
    loop {
        let (n, m) = (fill(&mut f, &mut a), fill(&mut g, &mut b));
        if n == 0 && m == 0 {
            return pages;
        }
        if a[..n] != b[..m] {
            for i in 0..n.max(m).div_ceil(8192) {
                let r = i * 8192..(i + 1) * 8192;
                if a[..n].get(r.clone()) != b[..m].get(r) {
                    pages.push(at + i as u64);
                }
            }
        }
        at += (1 << 20) / 8192;
    }
}

/// The relation files (and 8 KiB pages) that differ between two restores.
fn differences(a: &BTreeMap<String, PathBuf>, b: &BTreeMap<String, PathBuf>) -> Vec<String> {
    let mut d = Vec::new();
    for k in a.keys().chain(b.keys()).collect::<BTreeSet<_>>() {
        match (a.get(k), b.get(k)) {
            (Some(x), Some(y)) => {
                let pages = differing_pages(x, y);
                if !pages.is_empty() {
                    let len = |p: &Path| std::fs::metadata(p).unwrap().len();
                    d.push(format!(
                        "{k} ({} vs {} bytes) pages {pages:?}",
                        len(x),
                        len(y)
                    ));
                }
            }
            _ => d.push(format!("{k} only in one")),
        }
    }
    d
}

/// Restores backup `tag` (no recovery run) with the tablespace mapped to a new place; returns
/// the roots holding relation files, and the guards keeping them.
fn restore_files(setup: &Setup, tag: &str, ts1: bool) -> (Vec<tempfile::TempDir>, Vec<PathBuf>) {
    let (m, ts) = new_scratch_dir();
    let map = format!("ts1={}", ts.join("ts1").display());
    let mut args = vec!["--from-tag", tag];
    if ts1 {
        args.extend(["--tablespace-map", map.as_str()]);
    }
    let (k, to) = setup.restore(&args);
    (
        vec![m, k],
        vec![to.join("base"), to.join("global"), ts.join("ts1")],
    )
}

/// What a restore must equal: pg_dumpall (where Debian's client can dump the server) and the
/// per-table checksums.
struct Expected {
    dump: Option<String>,
    sums: BTreeMap<String, BTreeMap<String, String>>,
}

fn expected_of(c: &Cluster) -> Expected {
    c.switch_wal_and_wait_archived();
    Expected {
        dump: c.dumpall(),
        sums: c.all_table_checksums(),
    }
}

/// Starts the restore in `to` and checks it against `e`: the same pg_dumpall, pg_amcheck
/// clean, the same table checksums.
fn start_and_check(to: &Path, e: &Expected) -> Cluster {
    let r = Cluster::from_restored(to.to_path_buf());
    r.wait_recovery_done(std::time::Duration::from_secs(180));
    if let Some(dump) = &e.dump {
        let got = r.dumpall().unwrap();
        let first = dump
            .lines()
            .zip(got.lines())
            .find(|(a, b)| a != b)
            .map(|(a, b)| format!("source: {a}\nrestore: {b}"));
        assert!(
            &got == dump,
            "pg_dumpall of the restore differs from the source's ({} vs {} lines); first difference:\n{}",
            dump.lines().count(),
            got.lines().count(),
            first.unwrap_or_default()
        );
    }
    r.amcheck_all();
    assert_eq!(
        r.all_table_checksums(),
        e.sums,
        "restored data differs from the source at the recovery point"
    );
    r
}

/// The workload of the acceptance: HOT and non-HOT updates, TRUNCATE, VACUUM FULL, CLUSTER,
/// CREATE INDEX CONCURRENTLY, CREATE DATABASE with both strategies, DROP DATABASE, ALTER
/// TABLE SET TABLESPACE, unlogged to logged. (A relation grown past a segment file: see
/// `a_relation_grown_past_its_first_segment_file_is_tracked`.)
fn workload(c: &Cluster) {
    let mut b = c.pgbench_background(3, 2);
    assert!(b.wait().unwrap().success());
    c.psql("update hot set v = v + 1 where k % 7 = 0");
    c.psql("update hot set k = k + 1000000 where k % 11 = 0");
    c.psql("truncate truncated");
    c.psql("insert into truncated select g from generate_series(1, 500) g");
    c.psql("vacuum full pgbench_branches");
    c.psql("cluster pgbench_tellers using pgbench_tellers_pkey");
    c.psql("create index concurrently accounts_balance on pgbench_accounts (abalance)");
    // STRATEGY came in 15; before it every CREATE DATABASE copied files.
    let (wal_log, file_copy) = if server_major() >= 15 {
        (" strategy wal_log", " strategy file_copy")
    } else {
        ("", "")
    };
    c.psql(&format!(
        "create database by_wal{wal_log} template template1"
    ));
    c.psql(&format!(
        "create database by_copy{file_copy} template template1"
    ));
    c.psql("drop database doomed");
    c.psql("alter table moved set tablespace ts1");
    c.psql("alter table was_unlogged set logged");
    c.psql_db(
        "by_copy",
        "create table t as select g from generate_series(1, 1000) g",
    );
    // Hint bits set now, not by the reads of the next backups.
    c.psql("vacuum");
    c.psql_db("by_copy", "vacuum");
    c.psql_db("by_wal", "vacuum");
    c.psql("checkpoint");
}

fn prepare(c: &Cluster) {
    let (ts_tmp, ts_root) = new_scratch_dir();
    std::mem::forget(ts_tmp);
    c.create_tablespace("ts1", &ts_root.join("ts1"));
    c.pgbench_init(1);
    c.psql("create table hot (k int primary key, v int) with (fillfactor = 50)");
    c.psql("insert into hot select g, 0 from generate_series(1, 20000) g");
    c.psql("create table truncated as select g from generate_series(1, 20000) g");
    c.psql("create table moved as select g, md5(g::text) from generate_series(1, 20000) g");
    c.psql("create unlogged table was_unlogged as select g from generate_series(1, 5000) g");
    c.psql("create database doomed");
    c.psql("vacuum");
    c.psql("checkpoint");
}

/// Acceptance 1 of issue 17. A level 0, the workload, a tracked level 1; a copy restored from
/// that chain is promoted (timeline 2) and backed up on: a tracked level 1 whose range runs
/// from timeline 1 through the switch, which must restore the same relation files as a
/// scan-based level 1 of the same parent, and fail to once a block is dropped from its
/// summaries (the test of the test); then a tracked level 1 on timeline 2. Every chain
/// restores data equal to its source.
#[test]
fn a_tracked_chain_across_a_promotion_restores_the_files_of_a_scan_chain() {
    let setup = Setup::with(conf());
    let c = &setup.cluster;
    prepare(c);
    setup.backup(&["--incremental-level", "0", "--tag", "L0"]);
    workload(c);
    let (err, t1) = backup_env(
        &setup,
        &["--incremental-level", "1", "--cumulative", "--tag", "T1"],
        &[],
    );
    assert!(err.contains("change tracking: read"), "{err}");
    let expected = expected_of(c);
    assert!(expected.sums.contains_key("by_copy") && !expected.sums.contains_key("doomed"));
    c.stop();

    // The copy: restored from the tracked chain, archiving on into the repository.
    let (_m, ts) = new_scratch_dir();
    let map = format!("ts1={}", ts.join("ts1").display());
    let (_k, to) = setup.restore(&[
        "--from-tag",
        "T1",
        "--tablespace-map",
        &map,
        "--archive-mode",
        "preserve",
    ]);
    let copy = &start_and_check(&to, &expected);
    assert!(
        copy.psql("select pg_walfile_name(pg_current_wal_lsn())")
            .starts_with("00000002"),
        "the copy did not open on timeline 2"
    );
    let mut b = copy.pgbench_background(2, 2);
    assert!(b.wait().unwrap().success());
    copy.psql("update hot set v = v + 1 where k % 5 = 0");
    copy.psql("vacuum");
    copy.psql("checkpoint");

    // Level 1s of the copy on T1 (timeline 1): tracked, mutated, scan-based. Each is removed
    // once its files are restored, so that the next one has the same parent.
    let diff = ["--incremental-level", "1"];
    let (err, m2) = backup_of(
        &setup,
        copy,
        &[&diff[..], &["--tag", "M2"]].concat(),
        &[("RECMAN_FAULT_TRACKING_DROP", drop_spec(copy).as_str())],
    );
    assert!(err.contains("change tracking: read"), "{err}");
    let (_g1, mutated) = restore_files(&setup, "M2", true);
    setup.ok(&["delete", "backup", "M2", "--noprompt"]);
    let (err, s2) = backup_of(
        &setup,
        copy,
        &[&diff[..], &["--tag", "S2"]].concat(),
        &[("RECMAN_CHANGE_TRACKING", "off")],
    );
    assert!(err.contains("reads every relation file"), "{err}");
    let (_g2, scanned) = restore_files(&setup, "S2", true);
    setup.ok(&["delete", "backup", "S2", "--noprompt"]);
    let (err, t2) = backup_of(&setup, copy, &[&diff[..], &["--tag", "T2"]].concat(), &[]);
    assert!(err.contains("change tracking: read"), "{err}");
    for l1 in [&m2, &s2, &t2] {
        assert_eq!(l1["parent"], t1["id"], "{l1}");
        assert_eq!(l1["timeline"], 2, "{l1}");
    }
    assert!(t2["tracked_bytes"].as_u64().unwrap() > 0, "{t2}");
    assert_eq!(s2["tracked_bytes"].as_u64(), Some(0), "{s2}");
    assert!(
        t2["read_bytes"].as_u64().unwrap() < s2["read_bytes"].as_u64().unwrap(),
        "tracked {t2} scan {s2}"
    );
    let (_g3, tracked) = restore_files(&setup, "T2", true);
    let (a, b, m) = (
        relation_files(&tracked),
        relation_files(&scanned),
        relation_files(&mutated),
    );
    assert!(a.len() > 100, "{} relation files", a.len());
    let d = differences(&a, &b);
    assert!(
        d.is_empty(),
        "tracked and scan-based chains differ:\n{}",
        d.join("\n")
    );
    let node = copy.psql("select relfilenode from pg_class where relname = 'hot'");
    let d = differences(&m, &b);
    assert!(
        d.len() == 1 && d[0].contains(&format!("/{node} ")) && d[0].contains("pages [0]"),
        "the block dropped from the summaries must be the one difference: {d:?}"
    );
    drop((_g1, _g2, _g3));

    // Backing up on along timeline 2.
    let mut b = copy.pgbench_background(2, 2);
    assert!(b.wait().unwrap().success());
    let (err, t3) = backup_of(&setup, copy, &[&diff[..], &["--tag", "T3"]].concat(), &[]);
    assert!(err.contains("change tracking: read"), "{err}");
    assert_eq!(t3["parent"], t2["id"], "{t3}");
    let expected = expected_of(copy);
    let (_m3, ts3) = new_scratch_dir();
    let map = format!("ts1={}", ts3.join("ts1").display());
    let (_k3, to) = setup.restore(&["--from-tag", "T3", "--tablespace-map", &map]);
    drop(start_and_check(&to, &expected));
}

/// The mutation: block 0 of table hot's main fork, which the copy's workload changed.
fn drop_spec(c: &Cluster) -> String {
    let node = c.psql("select relfilenode from pg_class where relname = 'hot'");
    format!("{node}:0")
}

/// A relation grown past its first 1 GiB segment file within a level 1's range. PostgreSQL
/// extends a relation by zero pages that no WAL record names (only a page's first use is
/// logged); the test makes such an extension cheaply, by extending the file with the server
/// down (as a crash right after an extension leaves it), then fills the last block of the
/// first file and goes on into a second. The tracked level 1 reads little of the 1 GiB, and
/// its chain restores both files as the source has them, byte for byte.
#[test]
fn a_relation_grown_past_its_first_segment_file_is_tracked() {
    let setup = Setup::with(conf());
    let c = &setup.cluster;
    c.psql("create table big (g int, pad text)");
    c.psql("insert into big select g, repeat('x', 500) from generate_series(1, 100) g");
    setup.backup(&["--incremental-level", "0", "--tag", "L0"]);
    let rel = c.psql("select pg_relation_filepath('big')");
    let first = c.pgdata.join(&rel);
    c.stop();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&first)
        .unwrap();
    f.set_len(1 << 30).unwrap();
    drop(f);
    c.start();
    c.psql("insert into big select g, repeat('y', 500) from generate_series(101, 1100) g");
    c.psql("update big set pad = 'z' where g % 10 = 0");
    let second = PathBuf::from(format!("{}.1", first.display()));
    assert!(second.exists(), "{} was not made", second.display());
    let (err, t1) = backup_env(&setup, &["--incremental-level", "1", "--tag", "T1"], &[]);
    assert!(err.contains("change tracking: read"), "{err}");
    let (read, db) = (
        t1["read_bytes"].as_u64().unwrap(),
        t1["database_bytes"].as_u64().unwrap(),
    );
    assert!(db > 1 << 30 && read * 100 < db, "read {read} of {db} bytes");
    let (_g, roots) = restore_files(&setup, "T1", false);
    let to = roots[0].parent().unwrap();
    for (i, src) in [&first, &second].into_iter().enumerate() {
        let got = to.join(format!("{rel}{}", if i == 0 { "" } else { ".1" }));
        let d = differing_pages(src, &got);
        assert!(d.is_empty(), "{} differs in pages {d:?}", got.display());
    }
}

/// Acceptances 2 and 3: about 3 % of the pages changed, a level 1 reads at most 10 % of the
/// database; a summary missing (as after an archive-push without tracking, or a deletion) or
/// damaged makes the next level 1 scan, say so, and restore equal.
#[test]
fn a_small_change_reads_little_and_a_gap_falls_back_to_a_scan() {
    let setup = Setup::with(conf());
    let c = &setup.cluster;
    c.pgbench_init(5);
    c.psql("vacuum");
    c.psql("checkpoint");
    setup.backup(&["--incremental-level", "0", "--tag", "L0"]);
    // About 3 % of the accounts table's pages.
    c.psql("update pgbench_accounts set abalance = abalance + 1 where aid <= 15000");
    let (err, t1) = backup_env(&setup, &["--incremental-level", "1", "--tag", "T1"], &[]);
    let (read, db) = (
        t1["read_bytes"].as_u64().unwrap(),
        t1["database_bytes"].as_u64().unwrap(),
    );
    eprintln!("tracked level 1: read {read} of {db} bytes\n{err}");
    assert!(read * 10 <= db, "read {read} of {db} bytes:\n{err}");

    // A gap: one summary of the next range removed.
    c.psql("update pgbench_accounts set abalance = abalance + 1 where aid > 490000");
    let seg = c.switch_wal_and_wait_archived();
    let group = &seg[..16];
    let summary = setup.repo.join(format!("main/wal/{group}/{seg}.rmb"));
    std::fs::remove_file(&summary).unwrap_or_else(|e| panic!("remove {}: {e}", summary.display()));
    let (err, t2) = backup_env(&setup, &["--incremental-level", "1", "--tag", "T2"], &[]);
    assert!(
        err.contains(&format!("WAL segment {seg} has no summary"))
            && err.contains("reads every relation file"),
        "{err}"
    );
    assert_eq!(t2["tracked_bytes"].as_u64(), Some(0));

    // A damaged summary: one byte of it changed.
    c.psql("update pgbench_accounts set abalance = abalance + 1 where aid % 1000 = 0");
    let seg = c.switch_wal_and_wait_archived();
    let summary = setup
        .repo
        .join(format!("main/wal/{}/{seg}.rmb", &seg[..16]));
    let mut bytes = std::fs::read(&summary).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&summary, bytes).unwrap();
    let (err, t3) = backup_env(&setup, &["--incremental-level", "1", "--tag", "T3"], &[]);
    assert!(
        err.contains(&format!("{seg}.rmb")) && err.contains("reads every relation file"),
        "{err}"
    );
    assert_eq!(t3["tracked_bytes"].as_u64(), Some(0));
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_k, to) = setup.restore(&["--from-tag", "T3"]);
    drop(start_and_compare(&to, &expected));
}

/// The block references recman decodes from a real segment are pg_waldump's, record for
/// record, for the records that start in it.
#[test]
fn decoded_blocks_match_pg_waldump() {
    let c = Cluster::init_with(conf());
    c.pgbench_init(1);
    let mut b = c.pgbench_background(2, 2);
    assert!(b.wait().unwrap().success());
    c.psql("create database x template template1");
    c.psql("truncate pgbench_history");
    c.psql("vacuum full pgbench_tellers");
    let name = c.psql("select pg_walfile_name(pg_current_wal_lsn())");
    c.psql("select pg_switch_wal()");
    let wal = c.pgdata.join("pg_wal");
    let data = std::fs::read(wal.join(&name)).unwrap();
    let log = u64::from_str_radix(&name[8..16], 16).unwrap();
    let segno = u64::from_str_radix(&name[16..24], 16).unwrap();
    let seg_lsn = (log << 32) + segno * data.len() as u64;
    let mut mine = Vec::new();
    let mut special = 0;
    let cov = recman_pg::walrecord::decode_segment(&data, seg_lsn, &mut |ch| match ch {
        recman_pg::walrecord::Change::Block(b) => mine.push(format!(
            "{}/{}/{} {} {}",
            b.rel.spc, b.rel.db, b.rel.rel, b.fork, b.block
        )),
        recman_pg::walrecord::Change::Unknown { .. } => panic!("unknown record {ch:?}"),
        _ => special += 1,
    })
    .unwrap();
    assert!(cov.whole, "{cov:?}");
    if server_major() != 15 {
        // Debian's pg_waldump reads only its own major's WAL; the decoding above ran.
        recman_media::testkit::skipped_part(
            "pg_waldump",
            &format!(
                "the comparison with pg_waldump needs PostgreSQL 15's WAL, this is {}; recman's \
                 own decoding was checked",
                server_major()
            ),
        );
        return;
    }
    let out = Command::new(pg_bin("pg_waldump"))
        .arg("-p")
        .arg(&wal)
        .arg("-s")
        .arg(format!("{:X}/{:X}", seg_lsn >> 32, seg_lsn as u32))
        .arg("-e")
        .arg(format!(
            "{:X}/{:X}",
            (seg_lsn + data.len() as u64) >> 32,
            (seg_lsn + data.len() as u64) as u32
        ))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut theirs = Vec::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        while let Some(w) = words.next() {
            if w == "blkref" {
                // "blkref #0: rel 1663/5/16384 [fork vm] blk 3[,]"
                let rest: Vec<&str> = words.clone().take(7).collect();
                let rel = rest[2];
                let (fork, blk) = if rest[3] == "fork" {
                    let f = match rest[4] {
                        "fsm" => 1,
                        "vm" => 2,
                        "init" => 3,
                        _ => 0,
                    };
                    (f, rest[6])
                } else {
                    (0, rest[4])
                };
                theirs.push(format!("{rel} {fork} {}", blk.trim_end_matches(',')));
            }
        }
    }
    mine.sort();
    theirs.sort();
    assert!(mine.len() > 1000, "{} block references", mine.len());
    assert_eq!(
        mine, theirs,
        "decoded block references differ from pg_waldump's"
    );
    assert!(special > 0, "no create/truncate/database record decoded");
}

/// `configure incremental-forever synthetic-full-every N days`: a backup naming no level is a
/// level 1, and once the newest level 0 is N days old a synthetic full follows it; the next
/// level 1 builds on the synthetic full, and the chain restores equal.
#[test]
fn incremental_forever_takes_level_ones_and_synthetic_fulls() {
    let setup = Setup::with(conf());
    let c = &setup.cluster;
    c.pgbench_init(1);
    let err = setup.err(&["configure", "incremental-forever", "weekly"]);
    assert!(err.contains("synthetic-full-every"), "{err}");
    // About a second, so the test sees a synthetic full become due.
    setup.ok(&[
        "configure",
        "incremental-forever",
        "synthetic-full-every",
        "0.00001",
        "days",
    ]);
    assert!(
        setup
            .ok(&["show", "all"])
            .contains("incremental-forever synthetic-full-every 0.00001 days")
    );
    setup.backup(&[]);
    let mut b = c.pgbench_background(2, 2);
    assert!(b.wait().unwrap().success());
    std::thread::sleep(std::time::Duration::from_millis(1200));
    setup.backup(&[]);
    let list = setup.backups();
    let types: Vec<&str> = list.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["LEVEL0", "LEVEL1", "LEVEL0"], "{list:?}");
    assert!(
        list[1]["tracked_bytes"].as_u64().unwrap() > 0,
        "{}",
        list[1]
    );
    let synthetic = list[2]["id"].as_str().unwrap().to_string();
    let mut b = c.pgbench_background(2, 2);
    assert!(b.wait().unwrap().success());
    setup.ok(&[
        "configure",
        "incremental-forever",
        "synthetic-full-every",
        "7",
        "days",
    ]);
    setup.backup(&["--tag", "LAST"]);
    let last = setup.backups().last().unwrap().clone();
    assert_eq!(last["type"], "LEVEL1");
    assert_eq!(last["parent"].as_str(), Some(synthetic.as_str()));
    assert_eq!(setup.backups().len(), 4, "no synthetic full before 7 days");
    c.switch_wal_and_wait_archived();
    let expected = c.all_table_checksums();
    let (_k, to) = setup.restore(&["--from-tag", "LAST"]);
    drop(start_and_compare(&to, &expected));
}
