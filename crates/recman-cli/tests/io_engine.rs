//! Issue 3 acceptance: every I/O mode, buffer setting and multiplexing level restores
//! byte-identical files; io_uring is really used, and refused io_uring falls back with a notice.
//! The refusal is the test build's fault switch RECMAN_FAULT_URING_REFUSED (recman-engine's
//! `fault-injection` feature), so it is tested on every kernel without a system-wide knob.

mod common;
mod flows;

use common::*;
use flows::*;
use recman_media::testkit::missing_prerequisite;
use std::path::Path;

/// Whether this kernel gives the test process a ring; a failing test otherwise, unless
/// RECMAN_TEST_SKIP names io_uring.
fn uring_available() -> bool {
    match recman_engine::io::probe_uring() {
        Ok(()) => true,
        Err(e) => {
            missing_prerequisite("io_uring", &format!("this kernel refuses io_uring ({e})"));
            false
        }
    }
}

/// Relation files under base/ of a data directory, with their contents.
fn relation_files(pgdata: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for db in std::fs::read_dir(pgdata.join("base")).unwrap() {
        let db = db.unwrap().path();
        for f in std::fs::read_dir(&db).unwrap() {
            let p = f.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name.chars().next().is_some_and(|c| c.is_ascii_digit()) && p.is_file() {
                let rel = p.strip_prefix(pgdata).unwrap().display().to_string();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// A cluster with pgbench data at `scale`, checkpointed, autovacuum off (nothing changes the
/// files between the backups a test compares).
fn pgbench_setup(scale: u32) -> Setup {
    let setup = Setup::with(ClusterOpts {
        extra_conf: vec!["autovacuum = off".into()],
        ..Default::default()
    });
    setup.cluster.pgbench_init(scale);
    setup.cluster.psql("checkpoint");
    setup
}

fn io_rows(setup: &Setup, id: &str) -> Vec<serde_json::Value> {
    let out = setup.ok(&["report", "io", id, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["rows"].as_array().unwrap().clone()
}

#[test]
fn every_mode_and_buffer_setting_restores_identical_files() {
    if !uring_available() {
        return;
    }
    let setup = pgbench_setup(2);
    let c = &setup.cluster;
    let source = relation_files(&c.pgdata);
    assert!(source.len() > 50);
    let matrix: &[&[&str]] = &[
        &["--io", "sync", "--compress", "none", "--maxopenfiles", "1"],
        &[
            "--io",
            "sync",
            "--compress",
            "zstd",
            "--maxopenfiles",
            "8",
            "--input-buffer-size",
            "64K",
        ],
        &[
            "--io",
            "threads",
            "--io-slaves",
            "2",
            "--compress",
            "none",
            "--maxopenfiles",
            "8",
        ],
        &[
            "--io",
            "threads",
            "--compress",
            "lz4",
            "--maxopenfiles",
            "16",
            "--blksize",
            "256K",
            "--output-buffers",
            "2",
        ],
        &[
            "--io",
            "uring",
            "--compress",
            "none",
            "--maxopenfiles",
            "4",
            "--input-buffers",
            "2",
        ],
        &[
            "--io",
            "uring",
            "--compress",
            "zstd:1",
            "--maxopenfiles",
            "16",
            "--channels",
            "2",
            "--input-buffer-size",
            "256K",
        ],
    ];
    for args in matrix {
        let id = setup.backup(args);
        let mode = args[1];
        let rows = io_rows(&setup, &id);
        assert!(
            rows.iter().all(|r| r["io_mode"] == mode),
            "{args:?}: {rows:?}"
        );
        for kind in ["INPUT", "OUTPUT", "AGGREGATE"] {
            assert!(
                rows.iter().any(|r| r["kind"] == kind),
                "{args:?}: no {kind} row"
            );
        }
        let ring: u64 = rows
            .iter()
            .filter_map(|r| r["ring_submissions"].as_u64())
            .sum();
        if mode == "uring" {
            assert!(ring > 0, "uring mode made no ring submissions");
        } else {
            assert_eq!(ring, 0);
        }
        let (_keep, to) = setup.restore(&[
            "--from-tag",
            setup.backups().last().unwrap()["tag"].as_str().unwrap(),
        ]);
        // The restore is a job of the backup too, with its own statistics.
        let r: serde_json::Value =
            serde_json::from_str(&setup.ok(&["report", "io", &id, "--json"])).unwrap();
        assert!(
            r["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|j| j["job_type"] == "RESTORE"),
            "{}",
            r["jobs"]
        );
        let restore_in: u64 = r["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["job_type"] == "RESTORE" && x["kind"] == "INPUT")
            .map(|x| x["bytes"].as_u64().unwrap())
            .sum();
        assert!(restore_in > 0, "restore recorded no piece reads");
        let restored = relation_files(&to);
        assert_eq!(restored.len(), source.len(), "{args:?}");
        for ((a, da), (b, db)) in source.iter().zip(&restored) {
            assert_eq!(a, b);
            assert!(da == db, "{args:?}: {a} differs after restore");
        }
    }
}

#[test]
fn refused_io_uring_falls_back_with_a_notice() {
    let setup = pgbench_setup(1);
    let c = &setup.cluster;
    let source = relation_files(&c.pgdata);
    assert!(source.len() > 50);
    let refused = [("RECMAN_FAULT_URING_REFUSED", "1")];
    let out = recman_env(
        setup.args(&["backup", "database", "--io", "auto", "--tag", "FALLBACK"]),
        &refused,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("io_uring is not available")
            && err.contains("Operation not permitted")
            && err.contains("helper i/o threads"),
        "{err}"
    );
    let rows = io_rows(&setup, "FALLBACK");
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["io_mode"] == "threads"), "{rows:?}");
    let ring: u64 = rows
        .iter()
        .filter_map(|r| r["ring_submissions"].as_u64())
        .sum();
    assert_eq!(ring, 0, "{rows:?}");
    // The backup made by the fallback engine is good: it restores every relation file intact.
    let (_keep, to) = setup.restore(&["--from-tag", "FALLBACK"]);
    let restored = relation_files(&to);
    assert_eq!(restored.len(), source.len());
    for ((a, da), (b, db)) in source.iter().zip(&restored) {
        assert_eq!(a, b);
        assert!(da == db, "{a} differs after restore");
    }
    // An explicit --io uring has nothing to fall back to.
    let out = recman_env(
        setup.args(&["backup", "database", "--io", "uring", "--tag", "FORCED"]),
        &refused,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("i/o mode uring") && err.contains("--io"),
        "{err}"
    );
    // The switch, not this machine, made the difference: without it `auto` takes the ring
    // (where the kernel has one; the fallback above is what this test is for either way).
    match recman_engine::io::probe_uring() {
        Ok(_) => {
            setup.ok(&["backup", "database", "--io", "auto", "--tag", "RING"]);
            let rows = io_rows(&setup, "RING");
            assert!(rows.iter().all(|r| r["io_mode"] == "uring"), "{rows:?}");
        }
        Err(e) => recman_media::testkit::skipped_part(
            "io_uring",
            &format!("this kernel refuses io_uring ({e}): `auto` taking the ring is not checked"),
        ),
    }
}

/// How many bytes of `rel` (relative to the data directory) are in the page cache, and its
/// size; reads nothing of it.
fn cached(pgdata: &Path, rel: &str) -> (u64, u64) {
    let f = std::fs::File::open(pgdata.join(rel)).unwrap();
    recman_engine::io::residency::resident(&f, 0, u64::MAX).unwrap()
}

/// The read mode of the INPUT row of `rel` in a backup's statistics.
fn read_mode_of(setup: &Setup, id: &str, rel: &str) -> String {
    let rows = io_rows(setup, id);
    let row = rows
        .iter()
        .find(|r| r["kind"] == "INPUT" && r["filename"] == rel)
        .unwrap_or_else(|| panic!("no INPUT row for {rel}: {rows:?}"));
    row["read_mode"].as_str().unwrap().to_string()
}

/// The default reads a file through the page cache when its pages are there and directly when
/// they are not; `--direct-reads` and `--buffered-reads` fix one way for every file. The
/// cache's state comes from the kernel itself: reading a file fills it, fadvise empties it.
#[test]
fn each_file_is_read_through_the_page_cache_only_when_it_is_cached() {
    let setup = pgbench_setup(2);
    let c = &setup.cluster;
    // pgbench_accounts, the largest relation file: the one whose read mode is watched.
    let big = relation_files(&c.pgdata)
        .into_iter()
        .max_by_key(|(_, d)| d.len())
        .unwrap()
        .0;
    let path = c.pgdata.join(&big);

    // relation_files read every file just now: nearly all of it is cached (a busy host may
    // already have reclaimed a few pages; the engine's rule is "at least half").
    let (res, bytes) = cached(&c.pgdata, &big);
    assert!(
        bytes > 16 << 20 && res * 10 >= bytes * 9,
        "{big}: {res} of {bytes} cached"
    );
    let id = setup.backup(&["--compress", "none"]);
    assert_eq!(read_mode_of(&setup, &id, &big), "buffered");
    let text = setup.ok(&["report", "io", &id]);
    assert!(
        text.contains("through the page cache") && text.contains(" buffered "),
        "{text}"
    );
    let id = setup.backup(&["--compress", "none", "--direct-reads"]);
    assert_eq!(read_mode_of(&setup, &id, &big), "direct");

    common::fixtures::evict_file(&path);
    let (res, _) = cached(&c.pgdata, &big);
    assert!(
        res * 4 < bytes,
        "{big} is still cached after fadvise ({res} of {bytes}); a file system that keeps \
         its pages in memory (tmpfs) cannot run this test"
    );
    let id = setup.backup(&["--compress", "none"]);
    assert_eq!(read_mode_of(&setup, &id, &big), "direct");
    // A direct read does not bring the file into the cache.
    let (res, _) = cached(&c.pgdata, &big);
    assert!(res * 4 < bytes, "{big}: {res} cached after a direct read");
    let id = setup.backup(&["--compress", "none", "--buffered-reads"]);
    assert_eq!(read_mode_of(&setup, &id, &big), "buffered");

    let (_keep, to) = setup.restore(&[]);
    assert!(
        std::fs::read(&path).unwrap() == std::fs::read(to.join(&big)).unwrap(),
        "{big} differs after restore"
    );
}

/// A backup of files the page cache does not hold reads them both ways in turns, directly and
/// through the page cache, switching the files open at each turn, and goes on the way its
/// channels waited less for (the engine's `adapt.rs`): `-v` gives each way's share, and every
/// file restores byte for byte whichever way its bytes were read.
#[test]
fn uncached_files_are_read_both_ways_in_turns_and_restore_identical() {
    // pgbench at scale 10: about 150 MB, more than the 48 MiB each way is given first.
    let setup = pgbench_setup(10);
    let c = &setup.cluster;
    let files = relation_files(&c.pgdata);
    for (rel, _) in &files {
        common::fixtures::evict_file(&c.pgdata.join(rel));
    }
    let out = recman_cmd(setup.args(&["backup", "database", "--compress", "none", "-v"]))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "backup failed:\n{err}");
    let line = err
        .lines()
        .find(|l| l.contains("adaptive reads of uncached files"))
        .unwrap_or_else(|| panic!("-v gives no account of the adaptive reads:\n{err}"));
    let mib = |after: &str| -> u64 {
        let i = line
            .find(after)
            .unwrap_or_else(|| panic!("no {after:?} in {line}"))
            + after.len();
        line[i..].split(' ').next().unwrap().parse().unwrap()
    };
    assert!(
        mib("(direct ") >= 48 && mib("; buffered ") >= 48,
        "each way should have read its first 48 MiB: {line}"
    );
    let (_keep, to) = setup.restore(&[]);
    for (rel, bytes) in &files {
        assert!(
            std::fs::read(to.join(rel)).unwrap() == *bytes,
            "{rel} differs after restore"
        );
    }
}
