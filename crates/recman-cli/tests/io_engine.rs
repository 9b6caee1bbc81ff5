//! Issue 3 acceptance: every I/O mode, buffer setting and multiplexing level restores
//! byte-identical files; io_uring is really used, and refused io_uring falls back with a notice.

mod common;
mod flows;

use common::*;
use flows::*;
use std::path::Path;
use std::sync::Mutex;

/// The fallback test turns io_uring off machine-wide; no other test of this file may run then.
static SERIAL: Mutex<()> = Mutex::new(());

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

fn io_rows(setup: &Setup, id: &str) -> Vec<serde_json::Value> {
    let out = setup.ok(&["report", "io", id, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["rows"].as_array().unwrap().clone()
}

#[test]
fn every_mode_and_buffer_setting_restores_identical_files() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = Setup::with(ClusterOpts {
        extra_conf: vec!["autovacuum = off".into()],
        ..Default::default()
    });
    let c = &setup.cluster;
    c.pgbench_init(2);
    c.psql("checkpoint");
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

/// Sets kernel.io_uring_disabled for the test's duration (1: refused to unprivileged users, as
/// recman runs as postgres here), restoring the old value on drop.
struct UringDisabled(String);

impl UringDisabled {
    fn set() -> Option<UringDisabled> {
        let path = "/proc/sys/kernel/io_uring_disabled";
        let old = std::fs::read_to_string(path).ok()?;
        std::fs::write(path, "1").ok()?;
        Some(UringDisabled(old))
    }
}

impl Drop for UringDisabled {
    fn drop(&mut self) {
        let _ = std::fs::write("/proc/sys/kernel/io_uring_disabled", self.0.trim());
    }
}

#[test]
fn refused_io_uring_falls_back_with_a_notice() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = Setup::new();
    let Some(_guard) = UringDisabled::set() else {
        eprintln!("skipped: kernel.io_uring_disabled is not writable here");
        return;
    };
    let out = recman(setup.args(&["backup", "database", "--io", "auto", "--tag", "FALLBACK"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("io_uring is not available") && err.contains("helper i/o threads"),
        "{err}"
    );
    let rows = io_rows(&setup, "FALLBACK");
    assert!(rows.iter().all(|r| r["io_mode"] == "threads"), "{rows:?}");
    let err = setup.err(&["backup", "database", "--io", "uring", "--tag", "FORCED"]);
    assert!(
        err.contains("i/o mode uring") && err.contains("--io"),
        "{err}"
    );
}
